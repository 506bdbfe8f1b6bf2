#!/usr/bin/python3
"""Shared object header messages (SOHM) through a real mount.

h5py cannot write a shared-message table, so gen_sohm.c is built here
against libhdf5-dev (test-only: h5fs never links libhdf5) and writes three
files in the spirit of libhdf5's test/tsohm.c: one index for every type in
list form, the same pushed into v2 B-tree form, and three indexes with
different type masks and list/B-tree thresholds. Datatypes, dataspaces,
fill values, filter pipelines and attributes are shared; some datasets
stay unwritten (fill values). Every name, size, inode, xattr and byte must
equal what h5py reads (h5fs_testlib.compare). Exits 77 without a C
compiler or libhdf5-dev."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()


def build(wd):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        T.skip("no C compiler")
    r = subprocess.run(["pkg-config", "--cflags", "--libs", "hdf5-serial"], capture_output=True, text=True)
    flags = r.stdout.split() if r.returncode == 0 else None
    if flags is None:
        r = subprocess.run(["pkg-config", "--cflags", "--libs", "hdf5"], capture_output=True, text=True)
        flags = r.stdout.split() if r.returncode == 0 else None
    if flags is None:
        T.skip("libhdf5-dev not found by pkg-config (hdf5-serial / hdf5)")
    exe = os.path.join(wd, "gen_sohm")
    src = os.path.join(T.SRCDIR, "tests", "integration", "gen_sohm.c")
    r = subprocess.run([cc, "-O1", "-o", exe, src] + flags, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        print(r.stderr)
        raise SystemExit("gen_sohm.c does not build")
    return exe


def main():
    wd = T.workdir("sohm")
    exe = build(wd)
    mnt = os.path.join(wd, "mnt")
    failed = 0
    for mode in ("list", "btree", "multi"):
        path = os.path.join(wd, mode + ".h5")
        subprocess.run([exe, path, mode], check=True, timeout=120)
        expected, root_addr = T.h5py_tree(path)
        rep = T.Report(mode + ".h5")
        with T.Mount(path, mnt, opts=("-o", "ro")) as m, m.watchdog(120):
            T.compare(expected, root_addr, mnt, rep, windows=50)
            if not m.alive():
                rep.bad("the daemon died")
        if rep.failed() or rep.fail or rep.chunked_fail:
            failed += 1
            rep.show(limit=10)
        else:
            print("ok   %s.h5 (%d datasets, %d chunked)" % (mode, rep.compared, rep.chunked_ok))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
