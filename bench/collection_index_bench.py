#!/usr/bin/python3
"""The persistent collection index (issue 25 item 4): a remount of an
unchanged collection against an h5py loop. Run by hand (never in CI):

    /usr/bin/python3 bench/collection_index_bench.py --h5fs ./h5fs \\
        [--dir /var/tmp/h5fs-cidx] [--folders 100] [--per 100] [--repeat 3] \\
        [--refresh 0] [--scale]

--refresh is the mounts' -o refresh: 0 (the default) a frozen read-only
mount, N > 0 a live one (`-o ro` alone is refresh=1), whose indexed
members are also stat'ed at most once per interval while used.

The collection: FOLDERS x PER small HDF5 files (tests/integration/
make_index_collection.py's members: 2 groups, 3 datasets, a soft link,
8 attributes each; 100 distinct files written by h5py, copied for the
rest with distinct mtimes), plus a notes.txt per folder.

Each round, in this order:
- h5py: a Python loop opening every file with h5py and visiting every
  object and attribute (names and values);
- noindex: the same cold walk with -o noindex (what recording costs);
- cold: a mount with a fresh index (-o index=NEW: every member opened,
  walked and recorded) + `find MNT` + `getfattr -R -d MNT`;
- warm: a remount on that index: `find MNT` alone, then (another
  remount) `find MNT` + `getfattr -R -d MNT`, each from the mount's start
  (the daemon's start included) to the tool's end.
- floor: bench/tree_floor.c, a FUSE file system answering the same tree
  (names, modes, sizes, xattrs, dumped once from a walk of the h5fs
  mount) from memory with the same loop and timeouts: `find` and `find +
  getfattr -R -d` from its start, as for the warm remount. h5fs / floor is
  what h5fs costs beyond the FUSE round trips themselves, which a loaded
  machine slows for both alike.
The file pages are in the page cache for all (warm page cache; the
index is what is cold or warm). Targets: warm find <= 1 s; h5py / warm
(find + getfattr) >= 20x. Ranges over --repeat rounds.

--scale (issue 64 item 4, collections at scale) measures instead, on a
collection of both file formats (members alternately libver "earliest"
and "latest", DIR/coll-both), each against an h5py loop of the same run:
- index build: a mount with a fresh index + `find MNT` (every member
  opened, walked and recorded) to the unmount's end, against h5py's full
  loop (every object and attribute: what a record holds); the daemon's
  RSS (VmRSS, VmHWM) after the find;
- remount on that index: the daemon's start to the mount, then `find MNT`
  (no member opened), against h5py opening every file and visiting its
  names; the daemon's RSS after it;
- h5fs-find TOP --index IDX -type f -attr units=counts: the first run
  (its catalog read from every file, on every core) and the second (from
  the index alone), against h5py looking for the same datasets (the
  match counts must agree)."""
import argparse
import os
import shutil
import stat
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import benchlib as B  # noqa: E402
from benchlib import say  # noqa: E402


def Mount(args, opts, cmd=None):
    """h5fs -o OPTS on the collection (or `cmd`, a floor) at DIR/mnt."""
    mnt = os.path.join(args.dir, "mnt")
    cmd = cmd or [args.h5fs, "-f", "-o", opts, args.top, mnt]
    return B.Mount(cmd, mnt, os.path.join(args.dir, "h5fs.log"))


def generate(args):
    import make_index_collection as g
    stamp = os.path.join(args.top, ".done-%d-%d" % (args.folders, args.per))
    both = args.scale     # --scale: both file formats, alternately
    if os.path.exists(stamp):
        return
    shutil.rmtree(args.top, ignore_errors=True)
    tmpl = os.path.join(args.dir, "templates-both" if both else "templates")
    os.makedirs(tmpl, exist_ok=True)
    say("writing %d x %d files under %s ..." % (args.folders, args.per, args.top))
    for j in range(min(100, args.per)):
        g.member(os.path.join(tmpl, "t%03d.h5" % j), 7000 + j,
                 libver="latest" if both and j % 2 else "earliest")
    for i in range(args.folders):
        d = os.path.join(args.top, "f%03d" % i)
        os.makedirs(d)
        for j in range(args.per):
            p = os.path.join(d, "m%03d.h5" % j)
            shutil.copyfile(os.path.join(tmpl, "t%03d.h5" % (j % 100)), p)
            t = 1700000000000000000 + i * 100000 + j
            os.utime(p, ns=(t, t))
        with open(os.path.join(d, "notes.txt"), "w") as fh:
            fh.write("folder %d\n" % i)
    open(stamp, "w").close()


def h5py_loop(top):
    import h5py
    n = 0

    def visit(name, obj):
        nonlocal n
        for k, v in obj.attrs.items():
            n += 1

    for d, _dirs, files in os.walk(top):
        for fn in files:
            if not fn.endswith(".h5"):
                continue
            with h5py.File(os.path.join(d, fn), "r") as f:
                for k, v in f.attrs.items():
                    n += 1
                f.visititems(visit)
    return n


def timed(cmd):
    t = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=3600)
    return time.monotonic() - t


def dump_tree(args, opts):
    """The tree the floor serves: a walk of the h5fs mount, parents first."""
    if os.path.exists(args.dump):
        return
    m = Mount(args, opts)
    try:
        with open(args.dump + ".tmp", "w") as out:
            for d, dirs, files in os.walk(m.mnt):
                for n in dirs + files:
                    p = os.path.join(d, n)
                    st = os.lstat(p)
                    tgt = os.readlink(p).encode().hex() if stat.S_ISLNK(st.st_mode) else ""
                    xs = [] if tgt else [x.encode().hex() + "=" + os.getxattr(p, x, follow_symlinks=False).hex()
                                         for x in os.listxattr(p, follow_symlinks=False)]
                    out.write("%s\t%o\t%d\t%d\t%s\t%s\n" % (os.path.relpath(p, m.mnt), st.st_mode, st.st_size,
                                                           st.st_nlink, tgt, ",".join(xs)))
    finally:
        m.close()
    os.rename(args.dump + ".tmp", args.dump)


def walk(args, opts, cmd=None, xattrs=True, unmount=False):
    """`find MNT` (and `getfattr -R -d MNT`) on a fresh mount: seconds from
    the daemon's start to the walk's end (to the unmount's end with
    unmount)."""
    t = time.monotonic()
    with Mount(args, opts, cmd) as m:
        timed(["find", m.mnt])
        if xattrs:
            timed(["getfattr", "-R", "-d", m.mnt])
        secs = time.monotonic() - t
    return time.monotonic() - t if unmount else secs


def round_(args, k):
    out = {}
    t = time.monotonic()
    h5py_loop(args.top)
    out["h5py"] = time.monotonic() - t

    # what recording costs a cold walk: the same walk without an index
    out["cold_noindex"] = walk(args, "ro,refresh=%d,noindex" % args.refresh, unmount=True)

    index = os.path.join(args.dir, "index-%d.sqlite" % k)
    for side in ("", "-wal", "-shm", ".bad"):
        if os.path.exists(index + side):
            os.unlink(index + side)
    opts = "ro,refresh=%d,index=%s" % (args.refresh, index)
    out["cold"] = walk(args, opts, unmount=True)
    out["warm_find"] = walk(args, opts, xattrs=False)
    out["warm_all"] = walk(args, opts)
    out["index_mib"] = os.path.getsize(index) / 1048576.0

    dump_tree(args, opts)
    floor = [args.floor, args.dump, os.path.join(args.dir, "mnt")]
    out["floor_find"] = walk(args, None, floor, xattrs=False)
    out["floor_all"] = walk(args, None, floor)
    return out

# ---- --scale: collections at scale (issue 64 item 4) -----------------------------


def rss_mb(pid):
    """The daemon's (VmRSS, VmHWM) in MB."""
    got = {}
    with open("/proc/%d/status" % pid) as fh:
        for ln in fh:
            k, _, v = ln.partition(":")
            if k in ("VmRSS", "VmHWM"):
                got[k] = int(v.split()[0]) / 1024.0
    return got.get("VmRSS", 0.0), got.get("VmHWM", 0.0)


def h5py_files(top):
    for d, _dirs, files in os.walk(top):
        for fn in sorted(files):
            if fn.endswith(".h5"):
                yield os.path.join(d, fn)


def h5py_names(top):
    """What `find` shows of the HDF5 files: every name, nothing read."""
    import h5py
    names = []
    for p in h5py_files(top):
        with h5py.File(p, "r") as f:
            f.visit(names.append)
    return len(names)


def h5py_query(top):
    """h5fs-find's -type f -attr units=counts: datasets whose attribute
    units reads "counts"."""
    import h5py
    n = 0

    def visit(name, obj):
        nonlocal n
        if isinstance(obj, h5py.Dataset) and "units" in obj.attrs:
            v = obj.attrs["units"]
            if (v.decode() if isinstance(v, bytes) else str(v)) == "counts":
                n += 1

    for p in h5py_files(top):
        with h5py.File(p, "r") as f:
            f.visititems(visit)
    return n


def scale_round(args, k):
    out = {}
    for key, fn in (("h5py_all", h5py_loop), ("h5py_names", h5py_names), ("h5py_query", h5py_query)):
        t = time.monotonic()
        out[key + "_n"] = fn(args.top)
        out[key] = time.monotonic() - t

    index = os.path.join(args.dir, "scale-%d.sqlite" % k)
    for side in ("", "-wal", "-shm", ".bad"):
        if os.path.exists(index + side):
            os.unlink(index + side)
    opts = "ro,refresh=0,index=%s" % index
    # the index built by a mount's first walk
    t = time.monotonic()
    with Mount(args, opts) as m:
        out["build_mount"] = time.monotonic() - t
        timed(["find", m.mnt])
        out["build_find"] = time.monotonic() - t
        out["build_rss"], out["build_hwm"] = rss_mb(m.proc.pid)
    out["build"] = time.monotonic() - t
    out["index_mib"] = os.path.getsize(index) / 1048576.0
    # a remount on it: the mount, then find (no member opened)
    t = time.monotonic()
    with Mount(args, opts) as m:
        out["remount"] = time.monotonic() - t
        timed(["find", m.mnt])
        out["remount_find"] = time.monotonic() - t
        out["remount_rss"], out["remount_hwm"] = rss_mb(m.proc.pid)
    # h5fs-find: its catalog made on the first run, answered from it on the second
    cmd = [args.h5fs_find, args.top, "--index", index, "-type", "f", "-attr", "units=counts"]
    for key in ("hf_cold", "hf_warm"):
        t = time.monotonic()
        r = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=3600)
        out[key] = time.monotonic() - t
        out[key + "_n"] = len(r.stdout.splitlines())
    if out["hf_cold_n"] != out["h5py_query_n"] or out["hf_warm_n"] != out["h5py_query_n"]:
        raise SystemExit("h5fs-find found %d and %d datasets, h5py %d" % (out["hf_cold_n"], out["hf_warm_n"],
                                                                          out["h5py_query_n"]))
    out["index_mib_find"] = os.path.getsize(index) / 1048576.0
    for side in ("", "-wal", "-shm"):
        if os.path.exists(index + side):
            os.unlink(index + side)
    return out


def scale_main(args):
    rows = []
    for k in range(args.repeat):
        r = scale_round(args, k)
        rows.append(r)
        say("round %d: h5py all %.2f s, names %.2f s, query %.2f s (%d datasets); build (mount+find) %.2f s "
            "(mount %.3f), RSS %.0f MB (peak %.0f), index %.1f MiB; remount %.3f s, +find %.2f s, RSS %.0f MB "
            "(peak %.0f); h5fs-find cold %.2f s, warm %.2f s (index %.1f MiB)" % (
                k + 1, r["h5py_all"], r["h5py_names"], r["h5py_query"], r["h5py_query_n"], r["build"],
                r["build_mount"], r["build_rss"], r["build_hwm"], r["index_mib"], r["remount"], r["remount_find"],
                r["remount_rss"], r["remount_hwm"], r["hf_cold"], r["hf_warm"], r["index_mib_find"]))

    def rng(f, fmt="%.2f"):
        v = [f(r) for r in rows]
        return (fmt + "-" + fmt) % (min(v), max(v))

    say()
    say("%d files (both formats) in %d folders, %d rounds (page cache warm):" % (
        args.folders * args.per, args.folders, args.repeat))
    say("  index build, mount + find:   %s s; h5py full loop %s s: h5py/h5fs %s x" % (
        rng(lambda r: r["build"]), rng(lambda r: r["h5py_all"]), rng(lambda r: r["h5py_all"] / r["build"])))
    say("  daemon after it: RSS %s MB, peak %s MB; index %s MiB" % (
        rng(lambda r: r["build_rss"], "%.0f"), rng(lambda r: r["build_hwm"], "%.0f"),
        rng(lambda r: r["index_mib"], "%.1f")))
    say("  remount (to the mount):      %s s" % rng(lambda r: r["remount"], "%.3f"))
    say("  remount + find:              %s s; h5py names loop %s s: h5py/h5fs %s x" % (
        rng(lambda r: r["remount_find"]), rng(lambda r: r["h5py_names"]),
        rng(lambda r: r["h5py_names"] / r["remount_find"], "%.1f")))
    say("  daemon after it: RSS %s MB, peak %s MB" % (rng(lambda r: r["remount_rss"], "%.0f"),
                                                      rng(lambda r: r["remount_hwm"], "%.0f")))
    say("  h5fs-find -type f -attr units=counts: first %s s, again %s s; h5py query loop %s s: "
        "h5py/h5fs-find %s x first, %s x again" % (
            rng(lambda r: r["hf_cold"]), rng(lambda r: r["hf_warm"]), rng(lambda r: r["h5py_query"]),
            rng(lambda r: r["h5py_query"] / r["hf_cold"], "%.1f"), rng(lambda r: r["h5py_query"] / r["hf_warm"], "%.1f")))
    say("  load average at the end: %s" % open("/proc/loadavg").read().split()[:3])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--h5fs", required=True)
    ap.add_argument("--dir", default="/var/tmp/h5fs-cidx")
    ap.add_argument("--folders", type=int, default=100)
    ap.add_argument("--per", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--refresh", type=int, default=0)
    ap.add_argument("--scale", action="store_true", help="issue 64 item 4's measures (above)")
    ap.add_argument("--h5fs-find", help="default: beside --h5fs")
    args = ap.parse_args()
    args.h5fs = os.path.abspath(args.h5fs)
    args.h5fs_find = os.path.abspath(args.h5fs_find or os.path.join(os.path.dirname(args.h5fs), "h5fs-find"))
    args.top = os.path.join(args.dir, "coll-both" if args.scale else "coll")
    args.dump = os.path.join(args.dir, "tree-%d-%d.dump" % (args.folders, args.per))
    args.floor = os.path.join(args.dir, "tree_floor")
    os.makedirs(args.dir, exist_ok=True)
    generate(args)
    if args.scale:
        return scale_main(args)
    subprocess.run("cc -O2 -o %s %s %s $(pkg-config --cflags --libs fuse3)" % (
        args.floor, os.path.join(HERE, "tree_floor.c"), os.path.join(HERE, "floor_common.c")), shell=True, check=True)
    rows = []
    for k in range(args.repeat):
        r = round_(args, k)
        r["ratio"] = r["h5py"] / r["warm_all"]
        r["cold_ratio"] = r["h5py"] / r["cold"]
        r["record_cost"] = r["cold"] / r["cold_noindex"]
        r["find_floor"] = r["warm_find"] / r["floor_find"]
        r["all_floor"] = r["warm_all"] / r["floor_all"]
        rows.append(r)
        say("round %d: h5py %.2f s, noindex cold %.2f s, cold mount+find+getfattr %.2f s (%.1fx), warm find %.3f s, "
            "warm find+getfattr %.3f s (%.1fx h5py), index %.1f MiB; floor find %.3f s, "
            "find+getfattr %.3f s" % (
                k + 1, r["h5py"], r["cold_noindex"], r["cold"], r["cold_ratio"], r["warm_find"], r["warm_all"], r["ratio"],
                r["index_mib"], r["floor_find"], r["floor_all"]))

    def rng(key, fmt="%.3f"):
        v = [r[key] for r in rows]
        return (fmt + "-" + fmt) % (min(v), max(v))

    say()
    say("%d files in %d folders, %d rounds (page cache warm):" % (args.folders * args.per, args.folders,
                                                                  args.repeat))
    say("  h5py loop:                          %s s" % rng("h5py", "%.2f"))
    say("  cold mount + find + getfattr -R -d: %s s  (h5py/cold %s x); with -o noindex %s s" % (
        rng("cold", "%.2f"), rng("cold_ratio", "%.1f"), rng("cold_noindex", "%.2f")))
    say("  indexed remount + find:             %s s  (target <= 1 s)" % rng("warm_find"))
    say("  indexed remount + find + getfattr:  %s s  (h5py/warm %s x, target >= 20x)" % (
        rng("warm_all"), rng("ratio", "%.1f")))
    say("  FUSE floor: find %s s, find + getfattr %s s; h5fs/floor: find %s x, find + getfattr %s x" % (
        rng("floor_find"), rng("floor_all"), rng("find_floor", "%.2f"), rng("all_floor", "%.2f")))
    say("  load average at the end: %s" % open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
