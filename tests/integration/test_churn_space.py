#!/usr/bin/python3
"""Space under churn (issue 53 item 5): freed chunks, datasets and emptied
indexes are reused, so FILE stays near its live data.

  rewrite  cp over a gzip and a plain growable dataset, a pwrite inside,
           truncate to 0 and back up: 60 cycles (before: +90 KB a cycle;
           an emptied dataset's chunks were never freed and appended
           chunks never took freed space)
  files    64 KiB files made and removed in a group, and np.save'd
           arrays removed: 120 cycles (before: 20 MB for 7 live files; a
           removed dataset's storage was never freed)
  open     a file unlinked while a descriptor has it open reads its own
           bytes while 20 new files are written and fsync'd (its space is
           freed only once the kernel forgets it), and FILE takes that
           space after the close
  late     in a file of its own: names and attributes added to a group
           after a large file (its local heap grows, its nodes or dense
           stores placed at the end) and removed with the file: at
           unmount the group's blocks move down and FILE ends where it
           did before (before: a symbol table's grown heap at the end
           kept FILE at the large file's size). (String values kept
           from then on are test_attr_crash's MOVE_DOWN_COLL_OPS: here,
           under ASan, 1 CI run of 3 ended at 8.4 MB, cause not found.)
  neighbours  (issue 81) 1,500 mkdir+rmdir of unique names in a group while
           d0-d7 are made and removed in turn beside them, in a file of
           its own: the group moves between compact and dense storage
           again and again; FILE and its header stay small during the
           churn (before: every move kept the header's emptied
           continuation chunk, megabytes of NIL messages, FILE 13 MB and
           3.4-7 MB on disk after the unmount of 3,000) and at unmount
Each on h5py's default format and libver="latest"; h5py reads every
dataset afterwards and h5dump -H (when installed) the whole file.
"""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def rewrite(mnt, h5):
    rng = np.random.default_rng(53)
    for i in range(60):
        data = rng.integers(0, 1000, 8192).astype("<i8").tobytes()
        for ds in ("d", "c"):
            with open(os.path.join(mnt, ds), "wb") as fh:
                fh.write(data)
        fd = os.open(os.path.join(mnt, "c"), os.O_WRONLY)
        os.pwrite(fd, b"\1" * 3000, 5000)
        os.close(fd)
        os.truncate(os.path.join(mnt, "d"), 0)
        os.truncate(os.path.join(mnt, "d"), 8192 * 8)
    return data


def files(mnt):
    data = os.urandom(65536)
    for i in range(120):
        with open(os.path.join(mnt, "g", "f%d" % (i % 7)), "wb") as fh:
            fh.write(data)
        if i % 3 == 2:
            for k in range(7):
                try:
                    os.unlink(os.path.join(mnt, "g", "f%d" % k))
                except FileNotFoundError:
                    pass
        if i % 30 == 0:
            np.save(os.path.join(mnt, "g", "arr.npy"), np.arange(10000))
            os.unlink(os.path.join(mnt, "g", "arr"))
    return data


def held_open(mnt, tag):
    a = os.urandom(200000)
    with open(os.path.join(mnt, "h", "a"), "wb") as fh:
        fh.write(a)
    fd = os.open(os.path.join(mnt, "h", "a"), os.O_RDONLY)
    os.unlink(os.path.join(mnt, "h", "a"))
    for i in range(20):
        with open(os.path.join(mnt, "h", "b%d" % i), "wb") as fh:
            fh.write(os.urandom(200000))
        dfd = os.open(os.path.join(mnt, "h"), os.O_RDONLY)
        os.fsync(dfd)
        os.close(dfd)
    got = os.pread(fd, len(a) + 1, 0)
    os.close(fd)
    if got != a:
        T.fail("%s open: an unlinked file held open read other bytes after its space could be reused" % tag)


def late(work, libver, tag):
    h5 = os.path.join(work, "late_%s.h5" % libver)
    mnt = os.path.join(work, "mnt")
    with h5py.File(h5, "w", libver=libver) as f:
        f.create_group("k")
    s0 = os.path.getsize(h5)
    k = os.path.join(mnt, "k")
    with T.Mount(h5, mnt) as m, m.watchdog(120):
        for i in range(6):
            os.mkdir(os.path.join(k, "early_%02d" % i))
        for i in range(10):
            os.setxattr(k, "user.early%d" % i, b"value %d" % i)
        with open(os.path.join(k, "big"), "wb") as fh:
            fh.write(os.urandom(8 << 20))
        os.sync()
        for i in range(40):
            os.mkdir(os.path.join(k, "late_name_that_needs_room_in_the_heap_%02d" % i))
        for i in range(10):
            os.setxattr(k, "user.late%d" % i, b"a longer value for attribute number %d" % i)
        os.sync()
        os.unlink(os.path.join(k, "big"))
        for i in range(40):
            os.rmdir(os.path.join(k, "late_name_that_needs_room_in_the_heap_%02d" % i))
        for i in range(10):
            os.removexattr(k, "user.late%d" % i)
    if m.returncode:
        T.fail("%s late: unmount exits %s: %s" % (tag, m.returncode, m.output()[-300:]))
    s1 = os.path.getsize(h5)
    print("%s late: FILE %d bytes, %d after the large file came and went" % (tag, s0, s1))
    if s1 > s0 + (64 << 10):
        T.fail("%s late: FILE %d bytes at unmount, %d before the large file came and went" % (tag, s1, s0))
    with h5py.File(h5, "r") as f:
        if sorted(f["k"]) != ["early_%02d" % i for i in range(6)]:
            T.fail("%s late: /k holds %s" % (tag, sorted(f["k"])))
        if sorted(f["k"].attrs) != sorted("early%d" % i for i in range(10)):
            T.fail("%s late: /k has the attributes %s" % (tag, sorted(f["k"].attrs)))


def neighbours(work, libver, tag):
    h5 = os.path.join(work, "nb_%s.h5" % libver)
    mnt = os.path.join(work, "mnt")
    with h5py.File(h5, "w", libver=libver) as f:
        f.create_group("g")
    g = os.path.join(mnt, "g")
    live = set()
    peak = 0
    with T.Mount(h5, mnt) as m, m.watchdog(300):
        for i in range(1500):
            os.mkdir(os.path.join(g, "n%d" % i))
            d = "d%d" % (i % 8)
            if d in live:
                os.rmdir(os.path.join(g, d))
                live.discard(d)
            else:
                os.mkdir(os.path.join(g, d))
                live.add(d)
            os.rmdir(os.path.join(g, "n%d" % i))
            if i % 250 == 249:
                peak = max(peak, os.path.getsize(h5))
        for d in sorted(live):
            os.rmdir(os.path.join(g, d))
    if m.returncode:
        T.fail("%s neighbours: unmount exits %s: %s" % (tag, m.returncode, m.output()[-300:]))
    st = os.stat(h5)
    print("%s neighbours: FILE at most %d bytes during the churn, %d (%d on disk) at unmount"
          % (tag, peak, st.st_size, st.st_blocks * 512))
    if peak > 2 << 20 or st.st_blocks * 512 > 2 << 20:
        T.fail("%s neighbours: FILE %d bytes during the churn, %d on disk after it (an empty group)"
               % (tag, peak, st.st_blocks * 512))
    with h5py.File(h5, "r") as f:
        if list(f["g"]):
            T.fail("%s neighbours: /g holds %s" % (tag, sorted(f["g"])))
        hdr = h5py.h5o.get_info(f["g"].id).hdr.space.total
        if hdr > 64 << 10:
            T.fail("%s neighbours: /g's header is %d bytes" % (tag, hdr))
    r = subprocess.run(["h5dump", "-H", h5], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=120)
    if r.returncode:
        T.fail("%s neighbours: h5dump -H: %s" % (tag, r.stderr.decode()[-300:]))


def main():
    work = T.workdir("churn_space")
    for libver in ("earliest", "latest"):
        neighbours(work, libver, "libver=%s" % libver)
    for libver in ("earliest", "latest"):
        tag = "libver=%s" % libver
        h5 = os.path.join(work, "c_%s.h5" % libver)
        mnt = os.path.join(work, "mnt")
        os.makedirs(mnt, exist_ok=True)
        with h5py.File(h5, "w", libver=libver) as f:
            f.create_dataset("d", data=np.arange(8192, dtype="<i8"), chunks=(1024,), maxshape=(None,),
                             compression="gzip")
            f.create_dataset("c", data=np.arange(8192, dtype="<i8"), chunks=(1024,), maxshape=(None,))
            f.create_group("g")
            f.create_group("h")
        s0 = os.path.getsize(h5)
        m = T.Mount(h5, mnt)
        m.start()
        try:
            last = rewrite(mnt, h5)
            s1 = os.path.getsize(h5)
            fdata = files(mnt)
            s2 = os.path.getsize(h5)
            held_open(mnt, tag)
        finally:
            m.stop()
        if m.returncode:
            T.fail("%s: unmount exits %s: %s" % (tag, m.returncode, m.output()[-300:]))
        s3 = os.path.getsize(h5)
        print("%s: FILE %d -> %d after rewrites, %d after files, %d at unmount" % (tag, s0, s1, s2, s3))
        # live: two 64 KiB datasets; then 7 files of 64 KiB; then 30 of 200 KB
        if s1 - s0 > 1 << 20:
            T.fail("%s rewrite: FILE grew by %d bytes over 60 cycles (live data 128 KiB)" % (tag, s1 - s0))
        if s2 - s1 > 2 << 20:
            T.fail("%s files: FILE grew by %d bytes over 120 cycles (at most 7 files of 64 KiB live)"
                   % (tag, s2 - s1))
        if s3 > s2 + 20 * 200000 + (2 << 20):
            T.fail("%s open: FILE %d bytes, more than the 20 files and a little" % (tag, s3))
        with h5py.File(h5, "r") as f:
            if f["d"].shape != (8192,) or f["d"][:].any():
                T.fail("%s: /d is not 8192 rows of fill after the last truncate up" % tag)
            got = f["c"][()].tobytes()
            exp = bytearray(last)
            exp[5000:8000] = b"\1" * 3000
            if got != bytes(exp):
                T.fail("%s: /c does not hold the last cp and pwrite" % tag)
            for k in f["g"]:
                if f["g"][k][()].tobytes() != fdata:
                    T.fail("%s: /g/%s reads other bytes" % (tag, k))
            if len(f["h"]) != 20:
                T.fail("%s: /h holds %d files, 20 written" % (tag, len(f["h"])))
        late(work, libver, tag)
        if shutil.which("h5dump"):
            r = subprocess.run(["h5dump", "-H", h5], capture_output=True, timeout=60)
            if r.returncode:
                T.fail("%s: h5dump -H fails: %s" % (tag, r.stderr.decode()[-300:]))
    sys.exit(T.finish())


if __name__ == "__main__":
    main()
