#!/usr/bin/python3
"""Issue 25's S3-prefix benchmark, run by hand (not in make check):

    /usr/bin/python3 bench/s3_prefix_bench.py [--objects 2000] [--folders 20] [--repeat 3]
                                              [--refresh 600]

--objects small HDF5 files (three datasets, two attributes, a group each,
h5py) uploaded to s3rver on 127.0.0.1 twice: all in one folder
(bench/flat/) and spread over --folders folders (bench/tree/fNN/). For
each layout and each of --repeat runs, on a fresh mount (cold: nothing
cached by h5fs; the kernel's caches are the fresh mount's too):

- `ls -l` of every folder (names, kinds and sizes; members not entered):
  the requests s3rver logged (list requests per folder must be
  ceil(objects in it / 1000); GETs must be 0: a listing opens no member)
  and the seconds;
- `find MNT` + `getfattr -R -d MNT` (every member opened: find enters
  each member's directory): list requests, GETs, seconds;
- `h5fs-ls -R s3://...` (no mount): the same counts and seconds;
- with an index (-o index=, issue 25 item 4) when this h5fs has one: a
  second mount on it, GETs (must be 0). Without, the line says so.

Prints every run and the range over runs. Run from the build directory
(./h5fs, ./h5fs-ls); needs s3rver (npm), botocore, h5py, getfattr.
"""
import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import h5fs_testlib as T  # noqa: E402
import test_s3rver as S  # noqa: E402
import test_s3_prefix as P  # noqa: E402
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def make_small(path, i):
    with h5py.File(path, "w") as f:
        f.attrs["index"] = i
        f["a"] = np.arange(100, dtype="<i4") + i
        g = f.create_group("g")
        g.attrs["units"] = "counts"
        g["b"] = np.full((16, 16), i, dtype="<f8")
        g.create_dataset("c", data=np.arange(4096, dtype="<i2"), chunks=(512,), compression="gzip")


def upload(port, wd, n, folders):
    """{prefix: objects directly in it} of both layouts."""
    src = os.path.join(wd, "src")
    os.makedirs(src, exist_ok=True)
    counts = {"bench/flat/": 0}
    for i in range(n):
        p = os.path.join(src, "m%05d.h5" % i)
        make_small(p, i)
        S.put(port, "bench/flat/m%05d.h5" % i, p)
        d = "bench/tree/f%02d/" % (i % folders)
        S.put(port, d + "m%05d.h5" % i, p)
        counts["bench/flat/"] += 1
        counts[d] = counts.get(d, 0) + 1
        os.unlink(p)
    counts["bench/tree/"] = 0   # folders only
    return counts


def requests(wd, before):
    lines = P.settled_log(wd, before)
    lists = [ln for ln in lines if "list-type=2" in ln]
    return lines, lists, P.object_gets(lines)


def per_folder(lists, counts, root):
    bad = []
    for d, n in counts.items():
        if not d.startswith(root):
            continue
        got = len(P.list_requests(lists, d))
        want = max(1, math.ceil(n / 1000))
        if got != want:
            bad.append("%s: %d list requests, want %d" % (d, got, want))
    return bad


def run(cmd, timeout=1800):
    t = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=timeout)
    return time.monotonic() - t, r.returncode, r.stderr.decode("utf-8", "replace")


def find_getfattr(url, mnt, opts):
    """Seconds of `find MNT` and of `getfattr -R -d MNT` on a fresh mount
    with -o opts."""
    with T.Mount(url, mnt, ["-o", opts]) as m, m.watchdog(1800):
        s1, _, _ = run(["find", mnt])
        s2, _, _ = run(["getfattr", "-R", "-d", mnt])
    return s1, s2


def ls_folders(mnt):
    """ls -l of the top and of every folder in it (not of members, which
    are directories too: they are told by their suffix)."""
    t = time.monotonic()
    todo = [mnt]
    while todo:
        d = todo.pop()
        for e in os.scandir(d):
            st = e.stat(follow_symlinks=False)
            if e.is_dir(follow_symlinks=False) and not re.search(r"\.(h5|hdf5|he5|nc|nc4|nwb|h5ad)$", e.name, re.I):
                todo.append(e.path)
            del st
    return time.monotonic() - t


def rng(v):
    return "%.2f-%.2f s" % (min(v), max(v)) if v else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=2000)
    ap.add_argument("--folders", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--refresh", type=int, default=600,
                    help="-o refresh= of the mounts: how long a listing is kept (h5fs default 1 s: "
                    "a walk longer than that lists a folder again when the kernel asks again)")
    a = ap.parse_args()
    if not shutil.which("getfattr"):
        sys.exit("getfattr not installed (package attr)")
    wd = tempfile.mkdtemp(prefix="h5fs_s3_prefix_bench_")
    os.environ.update({"AWS_ACCESS_KEY_ID": S.KEY, "AWS_SECRET_ACCESS_KEY": S.SECRET, "HOME": wd,
                       "NODE_OPTIONS": "--openssl-legacy-provider"})
    proc, port = S.start_s3rver(wd)
    o = "s3_endpoint=http://127.0.0.1:%d,s3_path_style" % port
    mo = o + ",ro,refresh=%d" % a.refresh
    has_index = "index=" in subprocess.run([T.H5FS, "--help"], capture_output=True, text=True).stdout
    mnt = os.path.join(wd, "mnt")
    os.makedirs(mnt)
    failures = []
    try:
        t = time.monotonic()
        counts = upload(port, wd, a.objects, a.folders)
        print("uploaded 2 x %d objects in %.0f s (s3rver %s)" % (a.objects, time.monotonic() - t,
                                                                  S.S3RVER))
        for layout in ("flat", "tree"):
            root = "bench/%s/" % layout
            url = "s3://bucket/" + root
            res = {"find": [], "walk": [], "ls": [], "reindex": []}
            for rep in range(a.repeat):
                # every folder listed, every entry stat'ed, no member
                # entered: listings only, no GET
                before = len(P.settled_log(wd, 0))
                t0 = time.monotonic()
                with T.Mount(url, mnt, ["-o", mo]) as m, m.watchdog(1800):
                    tm = time.monotonic() - t0
                    secs = tm + ls_folders(mnt)
                lines, lists, gets = requests(wd, before)
                bad = per_folder(lists, counts, root) + (["%d GETs" % len(gets)] if gets else [])
                res["find"].append(secs)
                print("%s run %d: mount + ls -l of every folder: %.2f s (mount %.2f), %d list requests, %d GETs%s" % (
                    layout, rep, secs, tm, len(lists), len(gets), " BAD: " + "; ".join(bad) if bad else ""))
                failures += bad
                # everything: every member opened, every xattr read
                before = len(P.settled_log(wd, 0))
                idx = os.path.join(wd, "index-%s.sqlite" % layout)
                extra = ",index=" + idx if has_index else ""
                s1, s2 = find_getfattr(url, mnt, mo + extra)
                lines, lists, gets = requests(wd, before)
                res["walk"].append(s1 + s2)
                print("%s run %d: mount + find + getfattr -R -d: %.2f s (find %.2f), %d list requests, "
                      "%d GETs (%d members)" % (layout, rep, s1 + s2, s1, len(lists), len(gets), a.objects))
                bad = per_folder(lists, counts, root)
                failures += bad
                if has_index:
                    before = len(P.settled_log(wd, 0))
                    s3, s4 = find_getfattr(url, mnt, mo + extra)
                    lines, lists, gets = requests(wd, before)
                    res["reindex"].append(s3 + s4)
                    print("%s run %d: indexed remount + find + getfattr: %.2f s, %d list requests, %d GETs%s"
                          % (layout, rep, s3 + s4, len(lists), len(gets), " BAD" if gets else ""))
                    if gets:
                        failures.append("%s: %d GETs on an indexed remount" % (layout, len(gets)))
                # h5fs-ls -R: the same walk without a mount
                before = len(P.settled_log(wd, 0))
                secs, rc, err = run([T.H5FS_LS, "-R", "-o", o, url])
                lines, lists, gets = requests(wd, before)
                res["ls"].append(secs)
                print("%s run %d: h5fs-ls -R: %.2f s, exit %d, %d list requests, %d GETs" % (
                    layout, rep, secs, rc, len(lists), len(gets)))
                failures += per_folder(lists, counts, root)
            print("%s: ls -l of the folders %s; find + getfattr %s; h5fs-ls -R %s; indexed remount %s" % (
                layout, rng(res["find"]), rng(res["walk"]), rng(res["ls"]),
                rng(res["reindex"]) if has_index else "n/a (this h5fs has no -o index)"))
    finally:
        T.stop_process(proc)
        shutil.rmtree(wd, ignore_errors=True)
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
