#!/usr/bin/python3
"""mkdir, setfattr and rmdir through a read-write h5fs mount (issue 70
item 3), one call at a time from this process, against h5py's in-process
loop doing the same changes in the same run (create_group, attrs[...] =,
del). Run by hand, never in CI; see bench/README.md ("meta_ops").

    bench/meta_ops_bench.py [--h5fs PATH] [--base OLD_H5FS] [-n N]
                            [--rounds R] [--load CPUS] [--dir DIR]
                            [--format default|latest]

Each round, per binary (--h5fs, and --base when given: main's binary for
a before/after in the same run) and h5py, sides alternated: a fresh copy
of the fixture (an empty group g), a fresh mount (default options: a live
read-write mount), N mkdir g/dNNNNN, N setxattr user.aNNNNN on g, N rmdir
g/dNNNNN; every call timed alone (time.perf_counter around os.mkdir etc.),
printed as median, p90 and mean per call in ms (the mean counts the
calls that waited for a batch's commit), with h5py's per-call median and
the ratio h5fs/h5py. The unmount is not timed (it makes the changes
durable, as the h5py side's close does not fsync). After each round both
files are compared with h5py (g's attributes and members) and a mismatch
stops the run.

--load CPUS runs `stress-ng --cpu CPUS` for the length of the run (the
issue's "load of 8 on 2 cores"); it is stopped by PID at the end.
"""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib as B  # noqa: E402

OPS = ("mkdir", "setfattr", "rmdir")


def fixture(path, fmt):
    import h5py
    with h5py.File(path, "w", libver="latest" if fmt == "latest" else "earliest") as f:
        f.create_group("g")


def stats(ts):
    ts = sorted(ts)
    return statistics.median(ts) * 1e3, ts[int(len(ts) * 0.9)] * 1e3, sum(ts)


def run_h5fs(h5fs, path, mnt, log, n):
    with B.Mount([h5fs, "-f", path, mnt], mnt, log):
        g = os.path.join(mnt, "g")
        os.stat(g)      # the lookup of g itself is not the ops' cost
        return {
            "mkdir": B.time_each(lambda i: os.mkdir(os.path.join(g, "d%05d" % i)), n),
            "setfattr": B.time_each(lambda i: os.setxattr(g, "user.a%05d" % i, b"value %d" % i), n),
            "rmdir": B.time_each(lambda i: os.rmdir(os.path.join(g, "d%05d" % i)), n),
        }


def run_h5py(path, n):
    import h5py
    with h5py.File(path, "r+") as f:
        g = f["g"]

        def setattr_(i):
            g.attrs["a%05d" % i] = b"value %d" % i

        return {
            "mkdir": B.time_each(lambda i: g.create_group("d%05d" % i), n),
            "setfattr": B.time_each(setattr_, n),
            "rmdir": B.time_each(lambda i: g.__delitem__("d%05d" % i), n),
        }


def check(a, b, n):
    import h5py
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        ga, gb = fa["g"], fb["g"]
        if sorted(ga.keys()) or sorted(gb.keys()):
            raise SystemExit("members left after rmdir: %d / %d" % (len(ga), len(gb)))
        def val(v):     # h5fs stores a string, h5py's side bytes
            return v.encode() if isinstance(v, str) else bytes(v)
        aa = {k: val(ga.attrs[k]) for k in ga.attrs}
        ab = {k: val(gb.attrs[k]) for k in gb.attrs}
        if aa != ab or len(aa) != n:
            raise SystemExit("attributes differ (%d / %d)" % (len(aa), len(ab)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5fs", default=os.path.join(HERE, "..", "h5fs"))
    ap.add_argument("--base", help="an older h5fs binary measured in the same rounds")
    ap.add_argument("--dir", default="/tmp/h5fs-meta-bench")
    ap.add_argument("-n", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--load", type=int, default=0, help="stress-ng --cpu LOAD during the run")
    ap.add_argument("--format", default="default", choices=("default", "latest"))
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    base = os.path.join(a.dir, "fixture.h5")
    fixture(base, a.format)
    mnt = os.path.join(a.dir, "mnt")
    log = os.path.join(a.dir, "h5fs.log")
    sides = [("cur", a.h5fs)] + ([("base", a.base)] if a.base else [])
    stress = None
    if a.load:
        if not shutil.which("stress-ng"):
            raise SystemExit("stress-ng not found")
        stress = subprocess.Popen(["stress-ng", "--cpu", str(a.load), "--timeout", "3600"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2)
    B.say("n=%d format=%s load=%d; load average before: %s" % (a.n, a.format, a.load, os.getloadavg()))
    allres = {}
    try:
        for r in range(a.rounds):
            order = [s for s in sides] + [("h5py", None)]
            if r % 2:
                order.reverse()
            pyfile = os.path.join(a.dir, "py.h5")
            for name, binary in order:
                if name == "h5py":
                    shutil.copy(base, pyfile)
                    res = run_h5py(pyfile, a.n)
                else:
                    p = os.path.join(a.dir, "side-" + name + ".h5")
                    shutil.copy(base, p)
                    res = run_h5fs(binary, p, mnt, log, a.n)
                allres.setdefault(name, []).append(res)
            for name, _ in sides:
                check(os.path.join(a.dir, "side-" + name + ".h5"), pyfile, a.n)
            py = allres["h5py"][-1]
            for name, _ in sides:
                res = allres[name][-1]
                B.say("round %d %-4s " % (r, name) + "  ".join(
                    "%s %.3f ms (p90 %.3f, mean %.3f), %.2fx h5py" % (
                        op, stats(res[op])[0], stats(res[op])[1], stats(res[op])[2] / a.n * 1e3,
                        stats(res[op])[0] / stats(py[op])[0])
                    for op in OPS))
            B.say("round %d h5py " % r + "  ".join(
                "%s %.3f ms (p90 %.3f, mean %.3f)" % (op, stats(py[op])[0], stats(py[op])[1],
                                                      stats(py[op])[2] / a.n * 1e3) for op in OPS))
    finally:
        if stress:
            stress.send_signal(signal.SIGINT)
            try:
                stress.wait(10)
            except subprocess.TimeoutExpired:
                stress.kill()
                stress.wait(10)
    B.say("load average after: %s" % (os.getloadavg(),))
    for name in [s[0] for s in sides] + ["h5py"]:
        for op in OPS:
            meds = [stats(x[op])[0] for x in allres[name]]
            # the mean counts the calls that waited for a commit, which
            # the median hides (issue 70: "35 ms a pair" was a mean)
            means = [stats(x[op])[2] / a.n * 1e3 for x in allres[name]]
            B.say("%-4s %-8s median per call %.3f ms [%.3f-%.3f], mean %.3f ms [%.3f-%.3f] over %d rounds" % (
                name, op, statistics.median(meds), min(meds), max(meds),
                statistics.median(means), min(means), max(means), len(meds)))


if __name__ == "__main__":
    main()
