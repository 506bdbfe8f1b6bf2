#!/usr/bin/python3
"""`getfattr -R -d` over the datasets of one HDF5 file: h5fs against a FUSE
floor, and h5py's visititems reading every attribute (issue 25). Run by
hand, never in CI; see bench/README.md ("xattr walk").

    bench/xattr_bench.py [--h5fs PATH] [--dir DIR] [--datasets N]
                         [--rounds R] [--opts O,...] [--perf] [--regen] [--no-h5py]

The fixture (bench/xattr_fixture.py, deterministic) is written once into
DIR. The floor (bench/fuse_xattr_floor.c, compiled here) serves the same
tree from memory: its dump is taken by walking an h5fs mount of the fixture
once (os.walk, lstat, listxattr, getxattr), so every name, stat field and
xattr is what h5fs shows, and the first round checks that `getfattr -R -d`
prints the same text on both mounts.

Each round, in alternating order: h5fs, the floor and h5py, each "cold"
(page cache, dentries and inodes dropped - needs root - then a fresh mount
or a fresh h5py.File) and then "warm" (the same walk again on the same
mount or File). Printed: wall seconds per round, the medians and ranges,
the daemons' CPU seconds, the ratio h5fs/floor within each round, and the
load average before and after.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MOUNT_WAIT = 60.0
UNMOUNT_WAIT = 30.0
TARGET = 1.5


def say(msg=""):
    print(msg, flush=True)


def drop_caches(state):
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:
        if not state.get("warned"):
            say("  WARNING: cannot drop caches (%s): 'cold' numbers are warm" % e)
            state["warned"] = True


def is_mounted(mnt):
    mnt = os.path.realpath(mnt)
    with open("/proc/mounts") as f:
        return any(len(l.split()) > 1 and l.split()[1] == mnt for l in f)


class Daemon:
    """A FUSE daemon in the foreground, unmounted and waited for on exit."""

    def __init__(self, cmd, mnt, log):
        os.makedirs(mnt, exist_ok=True)
        if is_mounted(mnt):
            subprocess.call(["fusermount3", "-u", mnt])
        self.mnt = mnt
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        self.perf = None
        deadline = time.monotonic() + MOUNT_WAIT
        while not is_mounted(mnt):
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %d before mounting (see %s)" % (cmd[0], self.proc.returncode, log))
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError("no mount within %.0f s: %s" % (MOUNT_WAIT, " ".join(cmd)))
            time.sleep(0.02)

    def cpu(self):
        try:
            with open("/proc/%d/stat" % self.proc.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    def perf_start(self, out):
        self.perf = subprocess.Popen(["perf", "record", "-g", "-q", "-o", out, "-p", str(self.proc.pid)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)

    def close(self):
        if self.perf:
            self.perf.send_signal(2)
            try:
                self.perf.wait(30)
            except subprocess.TimeoutExpired:
                self.perf.kill()
                self.perf.wait()
            self.perf = None
        if self.proc is None:
            return
        if is_mounted(self.mnt):
            subprocess.call(["fusermount3", "-u", self.mnt])
        try:
            self.proc.wait(UNMOUNT_WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            subprocess.call(["fusermount3", "-u", "-z", self.mnt])
        self.proc = None
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def h5fs_cmd(args, fixture, mnt):
    cmd = [args.h5fs, "-f"]
    for o in args.opts:
        cmd += ["-o", o]
    return cmd + [fixture, mnt]


def write_dump(mnt, out):
    """The tree under mnt as fuse_xattr_floor.c reads it."""
    index = {"": 1}
    n = 1
    nfiles = 0
    with open(out + ".tmp", "w") as f:
        def entry(rel, parent, name):
            nonlocal n
            p = os.path.join(mnt, rel) if rel else mnt
            st = os.lstat(p)
            kind = "d" if os.path.isdir(p) and not os.path.islink(p) else "l" if os.path.islink(p) else "f"
            target = os.readlink(p).encode().hex() if kind == "l" else "-"
            f.write("E %d %s %o %d %d %s %s\n" % (parent, kind, st.st_mode, st.st_size, st.st_nlink,
                                                  name.encode().hex() or "-", target))
            if kind != "l":
                for x in os.listxattr(p, follow_symlinks=False):
                    f.write("X %s %s\n" % (x.encode().hex(),
                                           os.getxattr(p, x, follow_symlinks=False).hex() or "-"))
            return kind

        entry("", 0, "")
        for dirpath, dirnames, filenames in os.walk(mnt):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, mnt)
            rel_dir = "" if rel_dir == "." else rel_dir
            for name in sorted(dirnames + filenames):
                rel = os.path.join(rel_dir, name)
                n += 1
                index[rel] = n
                if entry(rel, index[rel_dir], name) != "d":
                    nfiles += 1
    os.rename(out + ".tmp", out)
    return n, nfiles


def getfattr(mnt, capture=False):
    """Wall seconds of `getfattr -R -d .` in mnt (and its output)."""
    t = time.monotonic()
    r = subprocess.run(["getfattr", "-R", "-d", "."], cwd=mnt, check=True,
                       stdout=subprocess.PIPE if capture else subprocess.DEVNULL)
    return time.monotonic() - t, r.stdout


H5PY_WALK = r"""
import sys, time, h5py
t = time.monotonic()
n = 0
with h5py.File(sys.argv[1], "r") as f:
    def visit(name, obj):
        global n
        for k in obj.attrs:
            obj.attrs[k]
            n += 1
    for k in f.attrs:
        f.attrs[k]
    f.visititems(visit)
print(time.monotonic() - t, n)
"""


def h5py_walk(fixture, times):
    """visititems reading every attribute, `times` times in one process
    (the first cold when the caches were dropped): wall seconds of each."""
    out = []
    for _ in range(times):
        r = subprocess.run([sys.executable, "-c", H5PY_WALK, fixture], check=True, stdout=subprocess.PIPE, text=True)
        out.append(float(r.stdout.split()[0]))
    return out


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def med_range(v):
    v = [x for x in v if x == x]    # no NaN (a side left out)
    if not v:
        return "-"
    return "median %.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--h5fs", default=os.path.join(HERE, "..", "h5fs"))
    ap.add_argument("--dir", default="/var/tmp/h5fs-xattr-bench")
    ap.add_argument("--datasets", type=int, default=50000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--opts", default="", help="h5fs -o options, comma-separated (the floor's timeout follows refresh=)")
    ap.add_argument("--perf", action="store_true", help="perf record the h5fs daemon's cold walk of round 1")
    ap.add_argument("--regen", action="store_true")
    ap.add_argument("--no-h5py", action="store_true", help="leave out the h5py walk (h5fs against the floor only)")
    args = ap.parse_args()
    args.opts = [o for o in args.opts.split(",") if o]
    os.makedirs(args.dir, exist_ok=True)
    state = {}
    mnt = os.path.join(args.dir, "mnt")
    log = os.path.join(args.dir, "daemons.log")

    floor = os.path.join(args.dir, "fuse_xattr_floor")
    cflags = subprocess.run(["pkg-config", "--cflags", "--libs", "fuse3"], check=True, stdout=subprocess.PIPE,
                            text=True).stdout.split()
    subprocess.run(["cc", "-O2", "-o", floor, os.path.join(HERE, "fuse_xattr_floor.c"),
                    os.path.join(HERE, "floor_common.c")] + cflags, check=True)

    fixture = os.path.join(args.dir, "x%d.h5" % args.datasets)
    if args.regen or not os.path.exists(fixture):
        say("writing %s ..." % fixture)
        subprocess.run([sys.executable, os.path.join(HERE, "xattr_fixture.py"), fixture + ".tmp",
                        str(args.datasets)], check=True)
        os.rename(fixture + ".tmp", fixture)
    dump = fixture + ".dump"
    if args.regen or not os.path.exists(dump) or os.path.getmtime(dump) < os.path.getmtime(fixture):
        with Daemon(h5fs_cmd(args, fixture, mnt), mnt, log):
            nodes, nfiles = write_dump(mnt, dump)
        say("dump of the h5fs mount: %d entries, %d non-directories" % (nodes, nfiles))
    timeout = "1"
    for o in args.opts:
        if o.startswith("refresh="):
            timeout = o.split("=", 1)[1] if o != "refresh=0" else "3600"
    floor_cmd = [floor, dump, mnt, timeout]

    say("xattr walk: %s (%d datasets), h5fs %s, %d rounds, load %s"
        % (fixture, args.datasets, " ".join("-o " + o for o in args.opts) or "(defaults)", args.rounds, loadavg()))
    res = {k: [] for k in ("h5fs cold", "h5fs warm", "floor cold", "floor warm", "h5py cold", "h5py warm",
                           "h5fs cpu cold", "h5fs cpu warm", "floor cpu cold", "floor cpu warm",
                           "ratio cold", "ratio warm")}
    texts = {}
    for rnd in range(args.rounds):
        order = ["h5fs", "floor"] + ([] if args.no_h5py else ["h5py"])
        if rnd % 2:
            order.reverse()
        row = {"h5py cold": float("nan"), "h5py warm": float("nan")}
        for side in order:
            if side == "h5py":
                drop_caches(state)
                cold, warm = h5py_walk(fixture, 2)
                row["h5py cold"], row["h5py warm"] = cold, warm
                continue
            cmd = h5fs_cmd(args, fixture, mnt) if side == "h5fs" else floor_cmd
            drop_caches(state)
            with Daemon(cmd, mnt, log) as d:
                if args.perf and side == "h5fs" and rnd == 0:
                    d.perf_start(os.path.join(args.dir, "perf-xattr.data"))
                c0 = d.cpu()
                row[side + " cold"], text = getfattr(mnt, capture=rnd == 0)
                c1 = d.cpu()
                row[side + " warm"], _ = getfattr(mnt)
                c2 = d.cpu()
                row[side + " cpu cold"], row[side + " cpu warm"] = c1 - c0, c2 - c1
                if rnd == 0:
                    texts[side] = text
        row["ratio cold"] = row["h5fs cold"] / row["floor cold"]
        row["ratio warm"] = row["h5fs warm"] / row["floor warm"]
        for k, v in row.items():
            res[k].append(v)
        py = "" if args.no_h5py else ", h5py %.2f / %.2f s" % (row["h5py cold"], row["h5py warm"])
        say("  round %d (%s): h5fs %.2f / %.2f s, floor %.2f / %.2f s%s (cold / warm); "
            "h5fs/floor %.2fx / %.2fx; daemon CPU h5fs %.1f / %.1f s, floor %.1f / %.1f s; load %s"
            % (rnd + 1, ",".join(order), row["h5fs cold"], row["h5fs warm"], row["floor cold"], row["floor warm"],
               py, row["ratio cold"], row["ratio warm"], row["h5fs cpu cold"],
               row["h5fs cpu warm"], row["floor cpu cold"], row["floor cpu warm"], loadavg()))
        if rnd == 0:
            same = texts.get("h5fs") == texts.get("floor")
            say("  getfattr -R -d output: h5fs %d bytes, floor %d bytes: %s"
                % (len(texts.get("h5fs", b"")), len(texts.get("floor", b"")), "identical" if same else "DIFFERENT"))
            if not same:
                return 1
    say("results (seconds; median and range over %d rounds):" % args.rounds)
    for k in ("h5fs cold", "h5fs warm", "floor cold", "floor warm", "h5py cold", "h5py warm",
              "h5fs cpu cold", "h5fs cpu warm", "floor cpu cold", "floor cpu warm"):
        say("  %-16s %s" % (k, med_range(res[k])))
    for k in ("ratio cold", "ratio warm"):
        m = statistics.median(res[k])
        say("  %-16s %s  target <= %.1fx: %s" % ("h5fs/floor " + k.split()[1], med_range(res[k]), TARGET,
                                                  "MET" if m <= TARGET else "MISSED"))
    say("load after: %s" % loadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main())
