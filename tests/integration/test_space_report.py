#!/usr/bin/python3
"""h5fs-ls --space: where a file's bytes go, and the unreferenced bytes
(space freed by changes, never reused by libhdf5 nor by a read-write
mount; h5repack reclaims it).

(a) Fresh files h5py writes (earliest and latest formats: groups, a
    symbol-table group of many links, dense attributes, compact,
    contiguous and chunked datasets on every index h5py makes with gzip,
    vlen strings and sequences, region references, a maxshape=(None,)
    dataset), each made twice. With free space persisted
    (fs_strategy="fsm", fs_persist=True) libhdf5 lists every byte it
    freed or left unused in its free-space managers, so the unreferenced
    bytes must equal that list's total exactly (h5stat -S says the same
    total). With the default strategy the same free space is not recorded
    anywhere; it is what libhdf5 leaves: the unused tails of its 2048-byte
    metadata and small-data aggregator blocks, and blocks it replaced while
    writing (a symbol table's local heap data segment that grew, object
    headers that grew): the report must show a small amount, below
    4 KiB per aggregator block the file spans.
(b) h5py deletes an 80000-byte dataset: the unreferenced bytes grow by at
    least 80000, and by exactly as much as h5stat's "Unaccounted space"
    (both count the dataset's data and object header, nothing else moves).
(c) Through a read-write mount: a longer value of an attribute of dense
    storage (setxattr: the store is written anew), bytes overwritten in a
    gzip chunk (pwrite: the chunk is encoded into new space), rm of a
    dataset: each time the unreferenced bytes grow, for the chunk by at
    least its old stored size; h5repack's copy has nearly none.
(d) Every corpus file h5fs-ls -R lists cleanly gets a report: no error,
    used + unreferenced == the end of allocation, and the free space
    libhdf5's managers list is part of the unreferenced bytes.
"""
import json
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

CORPUS = os.environ.get("H5FS_CORPUS", "/work/shared/corpus/hdf5-testfiles")


def space(path):
    r = subprocess.run([T.H5FS_LS, "--space", "--json", path], capture_output=True, timeout=300)
    if r.returncode != 0:
        T.fail("h5fs-ls --space %s: exit %d: %s" % (path, r.returncode, r.stderr.decode().strip()))
        return None
    d = json.loads(r.stdout)
    if d["used"] + d["unreferenced"] != d["allocated"]:
        T.fail("%s: used %d + unreferenced %d != allocated %d" % (path, d["used"], d["unreferenced"],
                                                                   d["allocated"]))
    return d


def h5stat(path):
    """h5stat -S: (unaccounted, tracked free) bytes."""
    out = subprocess.run(["h5stat", "-S", path], capture_output=True, text=True, timeout=120).stdout
    un = tr = None
    for ln in out.splitlines():
        if "Unaccounted space:" in ln:
            un = int(ln.split(":")[1].split()[0])
        elif "tracked free space:" in ln:
            tr = int(ln.split(":")[1].split()[0].split("/")[0])
    return un, tr


def fill(f, latest):
    """Every structure the walker follows, deterministically."""
    g = f.create_group("g")
    g.create_dataset("a", data=np.arange(1000, dtype="<f8"), track_times=False)
    g.create_dataset("b", data=np.arange(10000, dtype="<f8"), track_times=False)   # 80000 bytes: (b)
    d = f.create_group("dense")
    for i in range(12):                                  # past 8: dense in the latest format
        d.attrs["attr%02d" % i] = np.arange(i + 1, dtype="<i4")
    d.attrs["note"] = "short"
    f.attrs["title"] = "space report"
    f.create_dataset("vstr", data=np.array(["a", "bb", "ccc" * 50], dtype=object), dtype=h5py.string_dtype(),
                     track_times=False)
    vl = f.create_dataset("vseq", (3,), dtype=h5py.vlen_dtype(np.int32), track_times=False)
    for i in range(3):
        vl[i] = np.arange(i * 5 + 1, dtype=np.int32)
    rr = f.create_dataset("regref", (2,), dtype=h5py.regionref_dtype, track_times=False)
    rr[0] = g["a"].regionref[10:20]
    rr[1] = g["a"].regionref[100:200]
    data = np.arange(1000, dtype="<i4") // 7
    f.create_dataset("c_single", data=data, chunks=(1000,), compression="gzip", track_times=False)
    f.create_dataset("c_fixed", data=data, chunks=(100,), compression="gzip", track_times=False)
    f.create_dataset("c_grow", data=data, chunks=(100,), maxshape=(None,), compression="gzip",
                     track_times=False)                  # earray (latest), btree1 (earliest)
    f.create_dataset("c_2d", data=np.arange(10000, dtype="<i4").reshape(100, 100) // 3, chunks=(10, 10),
                     maxshape=(None, None), compression="gzip", track_times=False)   # btree2 (latest)
    f.create_dataset("grow", data=np.arange(500, dtype="<i2"), maxshape=(None,), chunks=(64,),
                     track_times=False)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((50,))
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)      # implicit index (latest)
    h5py.h5d.create(f.id, b"c_early", h5py.h5t.NATIVE_INT32, h5py.h5s.create_simple((400,)), dcpl=dcpl)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    h5py.h5d.create(f.id, b"compact", h5py.h5t.NATIVE_INT16, h5py.h5s.create_simple((8,)), dcpl=dcpl)
    for i in range(40):                                  # a symbol table / dense links past its first heap
        f.create_group("many/g%02d_%s" % (i, "x" * 20))
    f["many_again"] = g["a"]                             # one object reached twice


def fresh(work):
    made = {}
    for lv in ("earliest", "latest"):
        for fs in ("default", "persist"):
            p = os.path.join(work, "fresh_%s_%s.h5" % (lv, fs))
            kw = dict(fs_strategy="fsm", fs_persist=True) if fs == "persist" else {}
            with h5py.File(p, "w", libver=lv, **kw) as f:
                fill(f, lv == "latest")
            made[(lv, fs)] = p
    return made


def check_fresh(made):
    for (lv, fs), p in sorted(made.items()):
        d = space(p)
        if d is None:
            continue
        if d["objects"] < 50:
            T.fail("%s: only %d objects walked" % (p, d["objects"]))
        if d["past_eoa"]:
            T.fail("%s: %d bytes of structures past the end of allocation" % (p, d["past_eoa"]))
        _, tracked = h5stat(p)
        if fs == "persist":
            if d["unreferenced"] != d["tracked_free"] or tracked != d["tracked_free"]:
                T.fail("%s: unreferenced %d, free space in libhdf5's managers %d (h5stat: %s)" % (
                    p, d["unreferenced"], d["tracked_free"], tracked))
        else:
            blocks = d["allocated"] // 2048 + 1
            if d["tracked_free"] or d["unreferenced"] > 4096 * blocks:
                T.fail("%s: %d unreferenced bytes in a fresh file" % (p, d["unreferenced"]))
        print("fresh %s %s: allocated %d, metadata %d, raw %d, unreferenced %d" % (
            lv, fs, d["allocated"], d["metadata"], d["raw"], d["unreferenced"]))


def check_h5py_delete(made):
    for lv in ("earliest", "latest"):
        p = made[(lv, "default")].replace(".h5", "-del.h5")
        shutil.copy(made[(lv, "default")], p)
        before, (un0, _) = space(p), h5stat(p)
        with h5py.File(p, "r+") as f:
            del f["g/b"]
        after, (un1, _) = space(p), h5stat(p)
        if before is None or after is None:
            continue
        grew = after["unreferenced"] - before["unreferenced"]
        if grew < 80000:
            T.fail("%s: del of an 80000-byte dataset: unreferenced grew by %d" % (p, grew))
        if un0 is not None and un1 is not None and un1 - un0 != grew:
            T.fail("%s: unreferenced grew by %d, h5stat's unaccounted by %d" % (p, grew, un1 - un0))
        print("h5py del %s: unreferenced %d -> %d (h5stat unaccounted %s -> %s)" % (
            lv, before["unreferenced"], after["unreferenced"], un0, un1))


def mounted_change(path, mnt, what, fn):
    """fn(mnt) on a read-write mount; the report after unmounting."""
    with T.Mount(path, mnt) as m, m.watchdog(60):
        fn(mnt)
    d = space(path)
    print("mount %s: unreferenced %s" % (what, d and d["unreferenced"]))
    return d


def check_mount(work):
    p = os.path.join(work, "mounted.h5")
    with h5py.File(p, "w", libver="latest") as f:
        fill(f, True)
    with h5py.File(p, "r") as f:
        info = f["c_fixed"].id.get_chunk_info_by_coord((0,))
        chunk0 = info.size
    mnt = os.path.join(work, "mnt")
    d0 = space(p)

    def setattr_longer(m):
        os.setxattr(os.path.join(m, "dense"), "user.note", ("a much longer note " * 20).encode())

    def pwrite_chunk(m):
        fd = os.open(os.path.join(m, "c_fixed"), os.O_WRONLY)
        try:
            os.pwrite(fd, b"\x01\x02\x03\x04", 0)
            os.fsync(fd)
        finally:
            os.close(fd)

    def rm_dataset(m):
        os.unlink(os.path.join(m, "g", "b"))

    d1 = mounted_change(p, mnt, "setxattr", setattr_longer)
    d2 = mounted_change(p, mnt, "pwrite", pwrite_chunk)
    d3 = mounted_change(p, mnt, "rm", rm_dataset)
    if None in (d0, d1, d2, d3):
        return
    with h5py.File(p, "r") as f:
        if f["dense"].attrs["note"] != "a much longer note " * 20:
            T.fail("the attribute was not replaced")
        if f["c_fixed"][0] != 0x04030201 or "b" in f["g"]:
            T.fail("the chunk write or the rm did not happen")
    if d1["unreferenced"] <= d0["unreferenced"]:
        T.fail("setxattr of dense storage: unreferenced %d -> %d" % (d0["unreferenced"], d1["unreferenced"]))
    if d2["unreferenced"] < d1["unreferenced"] + chunk0:
        T.fail("pwrite into a gzip chunk of %d stored bytes: unreferenced %d -> %d" % (
            chunk0, d1["unreferenced"], d2["unreferenced"]))
    if d3["unreferenced"] < d2["unreferenced"] + 80000:
        T.fail("rm of an 80000-byte dataset: unreferenced %d -> %d" % (d2["unreferenced"], d3["unreferenced"]))
    if shutil.which("h5repack"):
        q = os.path.join(work, "repacked.h5")
        subprocess.run(["h5repack", p, q], check=True, timeout=120)
        r = space(q)
        if r and r["unreferenced"] > 8192:
            T.fail("h5repack's copy still has %d unreferenced bytes" % r["unreferenced"])
        print("h5repack: unreferenced %d -> %s" % (d3["unreferenced"], r and r["unreferenced"]))


def hdf5_signature(path):
    try:
        with open(path, "rb") as fh:
            for off in (0, 512, 1024, 2048, 4096):
                fh.seek(off)
                if fh.read(8) == b"\x89HDF\r\n\x1a\n":
                    return True
    except OSError:
        pass
    return False


def check_corpus():
    if not os.path.isdir(CORPUS):
        print("no corpus at %s: (d) skipped" % CORPUS)
        return
    paths = []
    for top, dirs, files in os.walk(CORPUS):
        dirs.sort()
        paths.extend(os.path.join(top, name) for name in sorted(files) if hdf5_signature(os.path.join(top, name)))
    paths = T.corpus_sample(paths)
    n = 0
    for p in paths:
        r = subprocess.run([T.H5FS_LS, "-R", p], capture_output=True, timeout=120)
        if r.returncode != 0:
            continue        # not listed cleanly: not required to report
        d = space(p)
        if d and d["tracked_free"] > d["unreferenced"]:
            T.fail("%s: libhdf5's managers list %d free bytes, only %d unreferenced" % (
                p, d["tracked_free"], d["unreferenced"]))
        n += 1
    # (344 of the 415 files listed when this was written)
    if n < len(paths) // 4:
        T.fail("only %d of %d corpus files listed" % (n, len(paths)))
    print("corpus: %d files reported" % n)


def main():
    if not shutil.which("h5stat"):
        T.skip("no h5stat")
    work = T.workdir("space")
    made = fresh(work)
    check_fresh(made)
    check_h5py_delete(made)
    check_mount(work)
    check_corpus()
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
