#!/usr/bin/python3
"""Freed space goes back to the host and is found again by the next mount
(issue 69 items 1-2; doc/DESIGN.md "Free space" 5, write/space_punch.c).

FILE on a tmpfs of its own (mounted here), on h5py's default format and
libver="latest":
- same mount: a 24 MiB file and a 1 MiB file written through the mount,
  the large one removed and the group fsync'd: FILE's disk usage
  (st_blocks) is within 2 MiB of its live data (was 25 MiB: the removed
  file's chunks kept their blocks), and so after `h5fs -u`;
- next mount: a new 24 MiB file fits in the space the removal freed
  (FILE's length grows by at most 1 MiB: the free markers were found; was
  +24 MiB), and its disk usage stays within 2 MiB of its live data;
- a kill -9 after the removal was durable and its space given back:
  h5py reads FILE, and the next mount finds the freed space and reuses
  it (FILE's length grows by at most 1 MiB for 8 MiB);
- a hole is not free space: an h5py dataset of zeros made a hole by
  `cp --sparse=always` (as libhdf5's unwritten storage is one) keeps its
  bytes while a new file is written through the mount, and the dataset
  after it too.
- a full disk (issue 69 item 5): `cp -r` of 300 files of 16-32 KiB onto
  a 4 MiB tmpfs fails part way ("error writing"); no empty name is left
  behind (was: about half the refused files, their creates kept), and
  every name left holds its source's bytes.
h5py reads every byte after each unmount; h5dump -H opens FILE.
Needs root (mount -t tmpfs)."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

BIG = 24 << 20
SMALL = 1 << 20
SLACK = 2 << 20


used = T.disk_used
fsync_dir = T.fsync_dir


def payload(seed, n):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def put(path, data):
    with open(path, "wb") as fh:
        fh.write(data)


def h5dump_ok(h5, tag):
    if shutil.which("h5dump"):
        r = subprocess.run(["h5dump", "-H", h5], capture_output=True, timeout=60)
        if r.returncode != 0:
            T.fail("%s: h5dump -H exits %d: %s" % (tag, r.returncode, r.stderr[-300:]))


def check_files(h5, want, tag):
    with h5py.File(h5, "r") as f:
        got = sorted(f["g"])
        if got != sorted(want):
            T.fail("%s: /g holds %s, expected %s" % (tag, got, sorted(want)))
        for name, data in want.items():
            b = f["g/" + name][()].tobytes()
            if b != data:
                T.fail("%s: /g/%s differs from what was written (%s)" % (tag, name, T.first_diff(b, data)))
    h5dump_ok(h5, tag)


def within(h5, live, tag, when):
    u = used(h5)
    print("%s %s: FILE %d bytes long, %d on disk, %d live" % (tag, when, os.path.getsize(h5), u, live))
    if u > live + SLACK:
        T.fail("%s %s: FILE takes %d bytes on disk for %d of live data" % (tag, when, u, live))


def removed(disk, libver):
    tag = "libver=%s" % libver
    h5 = os.path.join(disk, "r_%s.h5" % libver)
    mnt = os.path.join(disk, "..", "mnt_" + libver)
    with h5py.File(h5, "w", libver=libver) as f:
        f.create_group("g")
    big, small, big2 = payload(1, BIG), payload(2, SMALL), payload(3, BIG)
    with T.Mount(h5, mnt, opts=["-o", "rw"]) as m, m.watchdog(120):
        put(os.path.join(mnt, "g", "big"), big)
        put(os.path.join(mnt, "g", "small"), small)
        fsync_dir(os.path.join(mnt, "g"))
        if used(h5) < BIG:
            T.fail("%s: FILE takes %d bytes on disk with %d written" % (tag, used(h5), BIG))
        os.unlink(os.path.join(mnt, "g", "big"))
        fsync_dir(os.path.join(mnt, "g"))
        within(h5, SMALL, tag, "after rm, mounted")
    if m.returncode:
        T.fail("%s: unmount exits %s: %s" % (tag, m.returncode, m.output()[-300:]))
    within(h5, SMALL, tag, "after rm and h5fs -u")
    check_files(h5, {"small": small}, tag + " after rm")
    length = os.path.getsize(h5)
    T.write_through(h5, mnt, {"big2": big2}, tag + " next mount")
    grew = os.path.getsize(h5) - length
    print("%s next mount: FILE grew by %d bytes for a %d-byte file" % (tag, grew, BIG))
    if grew > SMALL:
        T.fail("%s: the next mount's %d-byte file grew FILE by %d bytes: the space the last mount "
               "freed was not found" % (tag, BIG, grew))
    within(h5, SMALL + BIG, tag, "next mount, after h5fs -u")
    check_files(h5, {"small": small, "big2": big2}, tag + " next mount")


def killed(disk, libver):
    tag = "libver=%s kill -9" % libver
    h5 = os.path.join(disk, "k_%s.h5" % libver)
    mnt = os.path.join(disk, "..", "mnt_" + libver)
    with h5py.File(h5, "w", libver=libver) as f:
        f.create_group("g")
    big, small, again = payload(6, 8 << 20), payload(7, SMALL), payload(8, 8 << 20)
    m = T.Mount(h5, mnt, opts=["-o", "rw"])
    m.start()
    try:
        with m.watchdog(120):
            put(os.path.join(mnt, "g", "big"), big)
            put(os.path.join(mnt, "g", "small"), small)
            fsync_dir(os.path.join(mnt, "g"))
            os.unlink(os.path.join(mnt, "g", "big"))
            fsync_dir(os.path.join(mnt, "g"))
            if used(h5) > SMALL + SLACK:
                T.fail("%s: FILE takes %d bytes on disk after the rm" % (tag, used(h5)))
    finally:
        m.kill()
        m.stop()
    check_files(h5, {"small": small}, tag + " after the kill")
    length = os.path.getsize(h5)
    T.write_through(h5, mnt, {"again": again}, tag)
    grew = os.path.getsize(h5) - length
    print("%s: the next mount's 8 MiB grew FILE by %d bytes" % (tag, grew))
    if grew > SMALL:
        T.fail("%s: the next mount's 8 MiB grew FILE by %d bytes: the freed space was not found" % (tag, grew))
    check_files(h5, {"small": small, "again": again}, tag + " next mount")


def holes(disk, libver):
    """Holes that are live data (no marker) are never taken."""
    tag = "libver=%s holes" % libver
    src = os.path.join(disk, "h_src_%s.h5" % libver)
    h5 = os.path.join(disk, "h_%s.h5" % libver)
    mnt = os.path.join(disk, "..", "mnt_" + libver)
    after = payload(4, 256 << 10)
    with h5py.File(src, "w", libver=libver) as f:
        f.create_group("g")
        f.create_dataset("zeros", data=np.zeros(4 << 20, dtype=np.uint8))
        f.create_dataset("after", data=np.frombuffer(after, dtype=np.uint8))
    subprocess.run(["cp", "--sparse=always", src, h5], check=True, timeout=60)
    os.unlink(src)
    if used(h5) > os.path.getsize(h5) - (2 << 20):
        T.skip("cp --sparse=always made no hole on this file system")
    new = payload(5, 4 << 20)
    T.write_through(h5, mnt, {"new": new}, tag)
    with h5py.File(h5, "r") as f:
        if f["zeros"][()].any():
            T.fail("%s: the dataset of zeros (a hole) was written into" % tag)
        if f["after"][()].tobytes() != after:
            T.fail("%s: the dataset after the hole changed" % tag)
    check_files(h5, {"new": new}, tag)


def nospace(work):
    tag = "full disk"
    src = os.path.join(work, "src")
    os.makedirs(src)
    want = {}
    for i in range(300):
        want["f%03d" % i] = payload(100 + i, (16 << 10) + (i * 53) % (16 << 10))
        put(os.path.join(src, "f%03d" % i), want["f%03d" % i])
    with T.small_disk(os.path.join(work, "small"), "4m") as disk:
        h5 = os.path.join(disk, "n.h5")
        mnt = os.path.join(work, "mnt_nospace")
        with h5py.File(h5, "w") as f:
            f.create_group("g")
        with T.Mount(h5, mnt, opts=["-o", "rw", "-o", "min_free=256k"]) as m, m.watchdog(120):
            r = subprocess.run(["cp", "-r", src, os.path.join(mnt, "g")], capture_output=True, timeout=120)
            if r.returncode == 0:
                T.fail("%s: cp -r of %d bytes onto a 4 MiB disk succeeded" % (tag, sum(map(len, want.values()))))
            d = os.path.join(mnt, "g", "src")
            names = sorted(os.listdir(d))
            empty = [n for n in names if os.path.getsize(os.path.join(d, n)) == 0]
            print("%s: cp exits %d, %d names left, %d empty" % (tag, r.returncode, len(names), len(empty)))
            if empty:
                T.fail("%s: %d empty names left after cp -r failed for space: %s" % (tag, len(empty), empty[:5]))
        if m.returncode:
            T.fail("%s: unmount exits %s: %s" % (tag, m.returncode, m.output()[-300:]))
        with h5py.File(h5, "r") as f:
            for n in f["g/src"]:
                if f["g/src/" + n][()].tobytes() != want.get(n):
                    T.fail("%s: /g/src/%s does not hold its source's bytes" % (tag, n))
        h5dump_ok(h5, tag)


def main():
    work = T.workdir("space_return")
    disk = os.path.join(work, "disk")
    with T.small_disk(disk, "160m"):
        for libver in ("earliest", "latest"):
            removed(disk, libver)
            killed(disk, libver)
            holes(disk, libver)
    nospace(work)
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(T.finish())


if __name__ == "__main__":
    main()
