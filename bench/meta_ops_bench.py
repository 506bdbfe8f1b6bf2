#!/usr/bin/python3
"""Metadata calls through a read-write h5fs mount (issue 70 item 3, issue
82 item 2), one call at a time from this process, against h5py's
in-process loop doing the same changes and against a FUSE floor
(bench/fuse_meta_floor.c: the same calls answered from memory, one round
trip each) in the same run. Run by hand, never in CI; see bench/README.md
("meta_ops").

    bench/meta_ops_bench.py [--h5fs PATH] [--base OLD_H5FS] [-n N]
                            [--rounds R] [--load CPUS] [--dir DIR]
                            [--format default|latest] [--root N] [--no-floor]
                            [--ops mkdir,setfattr,...]

The calls, in this order, N each in the group g: mkdir g/dNNNNN,
setxattr user.aNNNNN on g, rmdir g/dNNNNN, create g/fNNNNN (open
O_CREAT|O_WRONLY and close: an empty file, h5fs's growable uint8
dataset), utime g/fNNNNN (os.utime with explicit times), rename
g/fNNNNN -> g/rNNNNN, link g/rNNNNN -> g/lNNNNN (a hard link), unlink
g/lNNNNN. h5py's side: create_group, attrs[...] =, del, create_dataset
((0,), maxshape None, uint8), - (no h5py call sets an object's times),
move, g[new] = g[old], del.

Each round, per binary (--h5fs, and --base when given: main's binary for
a before/after in the same run), the floor and h5py, sides alternated: a
fresh copy of the fixture (an empty group g), a fresh mount (default
options: a live read-write mount), the calls above; every call timed
alone (time.perf_counter around os.mkdir etc.), printed as median, p90,
p99 and mean per call in ms (the mean counts the calls that waited for a
batch's commit), with the ratio to h5py's and the floor's medians. The unmount is not timed (it makes the changes
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

OPS = ("mkdir", "setfattr", "rmdir", "create", "utime", "rename", "link", "unlink")


def fixture(path, fmt, root=0):
    import h5py
    import numpy as np
    with h5py.File(path, "w", libver="latest" if fmt == "latest" else "earliest") as f:
        f.create_group("g")
        # (--root: datasets beside g, which own_detect's walk of the
        # root's first objects passes over, src/common/owner.c)
        for i in range(root):
            f["r%04d" % i] = np.zeros(4, dtype="<i4")


def stats(ts):
    """median, p90, sum (s), p99 of the per-call times, in ms but the sum"""
    ts = sorted(ts)
    return (statistics.median(ts) * 1e3, ts[int(len(ts) * 0.9)] * 1e3, sum(ts),
            ts[min(len(ts) - 1, int(len(ts) * 0.99))] * 1e3)


def build_floor(d):
    out = os.path.join(d, "fuse_meta_floor")
    subprocess.run("cc -O2 -o %s %s %s $(pkg-config --cflags --libs fuse3)" % (
        out, os.path.join(HERE, "fuse_meta_floor.c"), os.path.join(HERE, "floor_common.c")),
        shell=True, check=True)
    return out


def calls(g, ops, n):
    """the timed calls through a mount whose group g is at path g"""
    j = os.path.join

    def create(i):
        os.close(os.open(j(g, "f%05d" % i), os.O_CREAT | os.O_WRONLY, 0o644))

    t = 1700000000.0
    fns = {
        "mkdir": lambda i: os.mkdir(j(g, "d%05d" % i)),
        "setfattr": lambda i: os.setxattr(g, "user.a%05d" % i, b"value %d" % i),
        "rmdir": lambda i: os.rmdir(j(g, "d%05d" % i)),
        "create": create,
        "utime": lambda i: os.utime(j(g, "f%05d" % i), (t + i, t + i)),
        "rename": lambda i: os.rename(j(g, "f%05d" % i), j(g, "r%05d" % i)),
        "link": lambda i: os.link(j(g, "r%05d" % i), j(g, "l%05d" % i)),
        "unlink": lambda i: os.unlink(j(g, "l%05d" % i)),
    }
    return {op: B.time_each(fns[op], n) for op in OPS if op in ops}


def run_h5fs(h5fs, path, mnt, log, n, ops):
    with B.Mount([h5fs, "-f", path, mnt], mnt, log):
        g = os.path.join(mnt, "g")
        os.stat(g)      # the lookup of g itself is not the ops' cost
        return calls(g, ops, n)


def run_floor(floor, mnt, log, n, ops):
    with B.Mount([floor, mnt], mnt, log):
        g = os.path.join(mnt, "g")
        os.stat(g)
        return calls(g, ops, n)


def run_h5py(path, n, ops):
    import h5py
    with h5py.File(path, "r+") as f:
        g = f["g"]

        def setattr_(i):
            g.attrs["a%05d" % i] = b"value %d" % i

        def link(i):
            g["l%05d" % i] = g["r%05d" % i]

        fns = {
            "mkdir": lambda i: g.create_group("d%05d" % i),
            "setfattr": setattr_,
            "rmdir": lambda i: g.__delitem__("d%05d" % i),
            "create": lambda i: g.create_dataset("f%05d" % i, shape=(0,), maxshape=(None,), dtype="u1"),
            "rename": lambda i: g.move("f%05d" % i, "r%05d" % i),
            "link": link,
            "unlink": lambda i: g.__delitem__("l%05d" % i),
        }
        return {op: B.time_each(fns[op], n) for op in OPS if op in ops and op in fns}


def check(a, b, n, ops):
    import h5py
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        ga, gb = fa["g"], fb["g"]
        if sorted(ga.keys()) != sorted(gb.keys()):
            raise SystemExit("members differ: %d / %d" % (len(ga), len(gb)))
        if "setfattr" not in ops:
            return
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
    ap.add_argument("--root", type=int, default=0, help="datasets in the root beside g (none)")
    ap.add_argument("--no-floor", action="store_true", help="skip bench/fuse_meta_floor.c")
    ap.add_argument("--ops", default=",".join(OPS),
                    help="comma-separated subset (the later calls need the names the earlier made)")
    a = ap.parse_args()
    ops = a.ops.split(",")
    for op in ops:
        if op not in OPS:
            raise SystemExit("unknown op %s" % op)
    os.makedirs(a.dir, exist_ok=True)
    base = os.path.join(a.dir, "fixture.h5")
    fixture(base, a.format, a.root)
    mnt = os.path.join(a.dir, "mnt")
    log = os.path.join(a.dir, "h5fs.log")
    sides = [("cur", a.h5fs)] + ([("base", a.base)] if a.base else [])
    floor = None if a.no_floor else build_floor(a.dir)
    stress = None
    if a.load:
        if not shutil.which("stress-ng"):
            raise SystemExit("stress-ng not found")
        stress = subprocess.Popen(["stress-ng", "--cpu", str(a.load), "--timeout", "3600"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2)
    B.say("n=%d format=%s load=%d ops=%s; load average before: %s" % (
        a.n, a.format, a.load, ",".join(ops), os.getloadavg()))
    allres = {}
    names = [s[0] for s in sides] + (["floor"] if floor else []) + ["h5py"]

    def fmt(res, ref, op):
        st = stats(res[op])
        out = "%s %.3f (p90 %.3f p99 %.3f mean %.3f)" % (op, st[0], st[1], st[3], st[2] / a.n * 1e3)
        for rn in ("floor", "h5py"):
            if rn in ref and op in ref[rn]:
                out += " %.2fx %s" % (st[0] / stats(ref[rn][op])[0], rn)
        return out

    try:
        for r in range(a.rounds):
            order = list(sides) + ([("floor", floor)] if floor else []) + [("h5py", None)]
            if r % 2:
                order.reverse()
            pyfile = os.path.join(a.dir, "py.h5")
            for name, binary in order:
                if name == "h5py":
                    shutil.copy(base, pyfile)
                    res = run_h5py(pyfile, a.n, ops)
                elif name == "floor":
                    res = run_floor(binary, mnt, log, a.n, ops)
                else:
                    p = os.path.join(a.dir, "side-" + name + ".h5")
                    shutil.copy(base, p)
                    res = run_h5fs(binary, p, mnt, log, a.n, ops)
                allres.setdefault(name, []).append(res)
            for name, _ in sides:
                check(os.path.join(a.dir, "side-" + name + ".h5"), pyfile, a.n, ops)
            ref = {rn: allres[rn][-1] for rn in ("floor", "h5py") if rn in allres}
            for name in names:
                res = allres[name][-1]
                B.say("round %d %-5s ms/call: " % (r, name) + "  ".join(
                    fmt(res, ref if name not in ("floor", "h5py") else {}, op) for op in OPS if op in res))
    finally:
        if stress:
            stress.send_signal(signal.SIGINT)
            try:
                stress.wait(10)
            except subprocess.TimeoutExpired:
                stress.kill()
                stress.wait(10)
    B.say("load average after: %s" % (os.getloadavg(),))
    for name in names:
        for op in OPS:
            if op not in allres[name][0]:
                continue
            meds = [stats(x[op])[0] for x in allres[name]]
            p99s = [stats(x[op])[3] for x in allres[name]]
            # the mean counts the calls that waited for a commit, which
            # the median hides (issue 70: "35 ms a pair" was a mean)
            means = [stats(x[op])[2] / a.n * 1e3 for x in allres[name]]
            line = "%-5s %-8s median %.3f ms [%.3f-%.3f], p99 %.3f [%.3f-%.3f], mean %.3f [%.3f-%.3f]" % (
                name, op, statistics.median(meds), min(meds), max(meds), statistics.median(p99s),
                min(p99s), max(p99s), statistics.median(means), min(means), max(means))
            if floor and name not in ("floor", "h5py"):
                fl = [stats(x[op])[0] for x in allres["floor"]]
                line += ", floor+%.3f ms" % (statistics.median(meds) - statistics.median(fl))
            B.say(line + " over %d rounds" % len(meds))


if __name__ == "__main__":
    main()
