#!/usr/bin/python3
"""Walks of files of many objects (issue 64): the daemon's memory and the
time of find and du against h5py's visititems + get_storage_size in the
same run. Run by hand (never in CI):

    cc -O2 -o /tmp/make_many bench/make_many.c $(pkg-config --cflags --libs hdf5)
    sudo /usr/bin/python3 bench/scale_bench.py --h5fs ./h5fs[,/tmp/h5fs.old] --gen /tmp/make_many \\
        [--dir /work/scale] [--n 100000,1000000] [--formats default,latest] \\
        [--cache-mb 64] [--opts cache_size=64] [--walks 3] [--keep] [--no-h5py] [--flat] \\
        [--floor /tmp/tree_floor [--floor-rounds 3] [--floor-only]]
    cc -O2 -o /tmp/tree_floor bench/tree_floor.c bench/floor_common.c $(pkg-config --cflags --libs fuse3)

Files: make_many's (N one-element int32 datasets in groups of 1,000),
in h5py's default format and libver latest, written to --dir (on a disk:
1 M objects are ~370 MB) and removed after unless --keep.

For each file, in this order:
- h5py.File opened and closed, page cache dropped (against the mount);
- h5py: page cache dropped, h5py.File, visititems over every object
  calling .id.get_storage_size() of each dataset (what du -s needs);
- h5fs: page cache dropped, mounted -o ro (plus -o cache_mb when given;
  the time until the mount appears), page cache dropped,
  `find MNT` (cold: nothing read yet), `find MNT` again (warm: the
  kernel's dentries), `du -s MNT` (a stat of every object), then --walks
  more rounds of find + du, then `getfattr -R -d` of the first group
  (1,000 objects) against h5py reading every attribute of that group's
  objects; the daemon's VmRSS after each step and its VmHWM (peak) at
  the end, from /proc/PID/status.
Several --h5fs binaries (comma-separated: the new one and an old one)
are measured one after the other on the same file, after one h5py pass.
--no-h5py skips h5py's walk (10 M objects: its pass takes some 100
minutes; its open and one group's attributes stay) and its listing of
--flat.
--floor TREE_FLOOR (bench/tree_floor.c, built as its header says): the
FUSE floor for find, run before the files: for each N, --floor-rounds
fresh `tree_floor --synth N` mounts (make_many's tree shape, answered from
memory as h5fs answers a single FILE's -o ro mount: READDIRPLUS, 3600 s
timeouts), page cache dropped, `find MNT` timed with its user+sys CPU and
the floor daemon's; --floor-only stops there (no file, h5py or h5fs).
The same CPU pair is printed for h5fs's find cold, and the load average
beside each.
--tagged MAKE_TAGGED (bench/make_tagged.c): format "tagged" in
--formats is a file written by h5fs's own engine as a mount's mkdir and
touch write it (h5py's default format, empty growable datasets, each
object with h5fs's birth tag, so the mount keeps a tag per object it
shows: issue 82 item 3's "a file h5fs wrote").
--flat: files of one group of N links (make_many -f) instead, where
`ls -l` of the group (a LOOKUP, or READDIRPLUS entry, and the GETXATTRs
ls sends per name) is timed against h5py's listing of the group with
each dataset's get_storage_size.
"bytes/object" is (RSS after du - RSS after find) / objects: what a name
the kernel keeps costs (find already filled the kind map and the cache). Without root
the "cold" numbers are warm (a warning says so)."""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from benchlib import Mount, drop_caches, say  # noqa: E402


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def proc_cpu(pid):
    """user + system CPU seconds of a running process"""
    with open("/proc/%d/stat" % pid) as f:
        fld = f.read().rsplit(")", 1)[1].split()
    return (int(fld[11]) + int(fld[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime, r.ru_stime


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def timed_cpu(cmd, pid):
    """timed(cmd), plus its CPU ("user+sys (user, sys)") and the daemon
    pid's user+sys"""
    (u0, s0), d0 = children_cpu(), proc_cpu(pid)
    t, out = timed(cmd)
    (u1, s1), d1 = children_cpu(), proc_cpu(pid)
    return t, out, "%.2f s (user %.2f, sys %.2f)" % (u1 - u0 + s1 - s0, u1 - u0, s1 - s0), d1 - d0


def run_floor(a, n):
    groups = (n + 999) // 1000
    for r in range(a.floor_rounds):
        mnt = tempfile.mkdtemp(prefix="tree-floor-", dir="/tmp")
        log = os.path.join(a.dir, "scale_bench.log")
        with Mount([a.floor, "--synth", str(n), mnt], mnt, log) as m:
            drop_caches()
            ld = load()
            t, out, cpu_find, cpu_daemon = timed_cpu(["find", mnt], m.proc.pid)
        os.rmdir(mnt)
        if out.count(b"\n") - 1 != n + groups:
            raise SystemExit("floor: find listed %d objects, not %d" % (out.count(b"\n") - 1, n + groups))
        say("floor, %s objects, round %d: find cold %.2f s; CPU find %s, floor daemon %.2f s; load %s" %
            (format(n, ","), r + 1, t, cpu_find, cpu_daemon, ld))


def timed(cmd):
    t = time.monotonic()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
    return time.monotonic() - t, out


def h5py_walk(path):
    import h5py
    total = [0, 0]

    def visit(_name, obj):
        total[0] += 1
        if isinstance(obj, h5py.Dataset):
            total[1] += obj.id.get_storage_size()

    t = time.monotonic()
    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return time.monotonic() - t, total[0], total[1]


def h5py_open(path):
    """h5py's side of the mount: the file opened (cold) and closed"""
    import h5py
    t = time.monotonic()
    with h5py.File(path, "r") as f:
        f.id.get_filesize()
    return time.monotonic() - t


def h5py_attrs(path, group):
    """Every attribute of every object of one group, as getfattr -R -d
    shows them (h5py: names and values)."""
    import h5py
    t = time.monotonic()
    k = 0
    with h5py.File(path, "r") as f:
        g = f[group]
        for name in g:
            for an, av in g[name].attrs.items():
                k += 1
    return time.monotonic() - t, k


def h5py_list(path):
    """The flat file's group listed, with each dataset's storage size (what
    ls -l shows: name, size, blocks)."""
    import h5py
    t = time.monotonic()
    k = 0
    with h5py.File(path, "r") as f:
        for name in f:
            f[name].id.get_storage_size()
            k += 1
    return time.monotonic() - t, k


def run_flat(a, path, n, fmt):
    drop_caches()
    py_t, py_n = (0.0, n) if a.no_h5py else h5py_list(path)
    for h5fs in a.h5fs.split(","):
        mnt = tempfile.mkdtemp(prefix="h5fs-scale-", dir="/tmp")
        log = os.path.join(a.dir, "scale_bench.log")
        cmd = [h5fs, "-f", "-o", "ro" + (",cache_mb=%d" % a.cache_mb if a.cache_mb else "") +
               ("," + a.opts if a.opts else ""), path, mnt]
        with Mount(cmd, mnt, log) as m:
            pid = m.proc.pid
            drop_caches()
            t, out = timed(["ls", "-l", mnt])
            rss = status_kb(pid, "VmRSS")
            t2, _ = timed(["ls", "-l", mnt])
            hwm = status_kb(pid, "VmHWM")
        os.rmdir(mnt)
        lines = out.count(b"\n") - 1
        if lines != py_n:
            raise SystemExit("ls -l listed %d names, h5py %d" % (lines, py_n))
        say("%s links in one group, %s format, %s:" % (format(n, ","), fmt, h5fs))
        say("  h5py list + get_storage_size %.2f s; h5fs ls -l cold %.2f s (h5py/h5fs %.1fx), again %.2f s; "
            "daemon RSS after %.0f MB, peak %.0f MB" %
            (py_t, t, py_t / t if py_t else 0, t2, rss / 1024, hwm / 1024))


def run_file(a, path, n, fmt):
    cold = drop_caches()
    if not cold:
        say("warning: not root, the page cache is not dropped: 'cold' is warm")
    a.py_open = h5py_open(path)
    drop_caches()
    py_t, py_objs, py_bytes = (0.0, None, None) if a.no_h5py else h5py_walk(path)
    drop_caches()
    pya_t, pya_n = h5py_attrs(path, "g000000")
    for h5fs in a.h5fs.split(","):
        run_mount(a, path, n, fmt, h5fs, py_t, py_objs, py_bytes, pya_t, pya_n)


def run_mount(a, path, n, fmt, h5fs, py_t, py_objs, py_bytes, pya_t, pya_n):
    mnt = tempfile.mkdtemp(prefix="h5fs-scale-", dir="/tmp")
    log = os.path.join(a.dir, "scale_bench.log")
    cmd = [h5fs, "-f", "-o", "ro" + (",cache_mb=%d" % a.cache_mb if a.cache_mb else "") +
           ("," + a.opts if a.opts else ""), path, mnt]
    res = {}
    drop_caches()       # a cold mount, as h5py's cold open
    t0 = time.monotonic()
    with Mount(cmd, mnt, log) as m:
        res["mount"] = time.monotonic() - t0
        pid = m.proc.pid
        res["rss0"] = status_kb(pid, "VmRSS")
        drop_caches()
        res["load"] = load()
        res["find_cold"], out, res["cpu_find"], res["cpu_daemon"] = timed_cpu(["find", mnt], pid)
        res["objs"] = out.count(b"\n") - 1
        res["rss_find"] = status_kb(pid, "VmRSS")
        res["find_warm"], _ = timed(["find", mnt])
        res["du"], out = timed(["du", "-s", "-B1", mnt])
        res["du_bytes"] = int(out.split()[0])
        res["rss_du"] = status_kb(pid, "VmRSS")
        walks = []
        for _ in range(a.walks):
            timed(["find", mnt])
            timed(["du", "-s", mnt])
            walks.append(status_kb(pid, "VmRSS"))
        res["walks"] = walks
        res["gf"], out = timed(["getfattr", "-R", "-d", "-m", "-", os.path.join(mnt, "g000000")])
        res["gf_attrs"] = sum(1 for ln in out.splitlines() if b"=" in ln)
        res["rss_gf"] = status_kb(pid, "VmRSS")
        res["hwm"] = status_kb(pid, "VmHWM")
    os.rmdir(mnt)
    if py_objs is not None and res["objs"] != py_objs:
        raise SystemExit("find listed %d objects, h5py visited %d" % (res["objs"], py_objs))
    py_t = py_t or float("nan")
    # what the names du looked up cost (find listed every object already:
    # the kind map and the cache are in rss_find)
    per = (res["rss_du"] - res["rss_find"]) * 1024.0 / n
    say("%s objects, %s format, %s -o ro%s%s:" % (format(n, ","), fmt, h5fs,
                                                 ",cache_mb=%d" % a.cache_mb if a.cache_mb else "",
                                                 "," + a.opts if a.opts else ""))
    say("  h5py visititems+get_storage_size %.2f s (%s objects, %s bytes stored)" % (py_t, py_objs, py_bytes))
    say("  h5py.File open, cold: %.3f s" % a.py_open)
    say("  h5fs mount %.2f s, find cold %.2f s (h5py/h5fs %.1fx), warm %.2f s, du -s %.2f s (h5py/h5fs %.1fx, %d bytes)" %
        (res["mount"], res["find_cold"], py_t / res["find_cold"], res["find_warm"], res["du"], py_t / res["du"],
         res["du_bytes"]))
    say("  find cold CPU: find %s, daemon %.2f s; load %s" % (res["cpu_find"], res["cpu_daemon"], res["load"]))
    say("  daemon RSS: mount %.0f MB, after find %.0f MB, after du %.0f MB (+%.0f bytes/object), "
        "after %d more find+du rounds %s MB, peak %.0f MB" %
        (res["rss0"] / 1024, res["rss_find"] / 1024, res["rss_du"] / 1024, per, a.walks,
         "/".join("%.0f" % (w / 1024) for w in res["walks"]), res["hwm"] / 1024))
    say("  getfattr -R -d of g000000 (1,000 objects): %.2f s, %d values (h5py: %.2f s, %s attributes), "
        "daemon RSS after %.0f MB" % (res["gf"], res["gf_attrs"], pya_t, pya_n, res["rss_gf"] / 1024))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--h5fs", default="./h5fs", help="binaries, comma-separated (one h5py pass for all)")
    ap.add_argument("--gen", default="/tmp/make_many", help="make_many, built from bench/make_many.c")
    ap.add_argument("--dir", default="/var/tmp/h5fs-scale", help="where the files go (a disk, not tmpfs)")
    ap.add_argument("--n", default="100000,1000000", help="objects per file, comma-separated")
    ap.add_argument("--formats", default="default,latest")
    ap.add_argument("--cache-mb", type=int, default=0, help="-o cache_mb (0: the default)")
    ap.add_argument("--opts", default="", help="more -o options (cache_size=64 for a daemon before cache_mb)")
    ap.add_argument("--walks", type=int, default=3, help="more find + du rounds (RSS flat?)")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    ap.add_argument("--no-h5py", action="store_true", help="no h5py pass (10 M objects)")
    ap.add_argument("--tagged", default="/tmp/make_tagged",
                    help="make_tagged (bench/make_tagged.c), for --formats tagged")
    ap.add_argument("--flat", action="store_true", help="one group of N links: ls -l of it")
    ap.add_argument("--floor", help="tree_floor (bench/tree_floor.c): find on its --synth N tree first")
    ap.add_argument("--floor-rounds", type=int, default=3, help="fresh floor mounts per N")
    ap.add_argument("--floor-only", action="store_true", help="only the floor (no file, h5py or h5fs)")
    a = ap.parse_args()
    a.h5fs = ",".join(os.path.abspath(x) for x in a.h5fs.split(","))
    os.makedirs(a.dir, exist_ok=True)
    for n in [int(x) for x in a.n.split(",")]:
        if a.floor:
            run_floor(a, n)
        if a.floor_only:
            continue
        for fmt in a.formats.split(","):
            path = os.path.join(a.dir, "many_%d_%s%s.h5" % (n, fmt, "_flat" if a.flat else ""))
            if not os.path.exists(path):
                t = time.monotonic()
                if fmt == "tagged":
                    import h5py
                    h5py.File(path, "w").close()
                    subprocess.run([a.tagged, path, str(n)], check=True)
                else:
                    subprocess.run([a.gen] + (["-l"] if fmt == "latest" else []) + (["-f"] if a.flat else []) +
                                   [path, str(n)], check=True)
                say("wrote %s (%.0f MB) in %.1f s" % (path, os.path.getsize(path) / 1e6, time.monotonic() - t))
            try:
                (run_flat if a.flat else run_file)(a, path, n, fmt)
            finally:
                if not a.keep:
                    os.unlink(path)


if __name__ == "__main__":
    main()
