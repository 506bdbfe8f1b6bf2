#!/usr/bin/python3
"""h5fs-ls against h5py's view of the same files: for every dataset of
files written with libver earliest and latest, --json -R must give h5py's
shape, maximum shape, dtype (via the NumPy type string), chunk shape,
layout, filter pipeline (ids in order; compression names as h5py calls
them), allocated size (get_storage_size), logical size and their ratio,
and the chunk index type libhdf5 picks for that layout and libver.  The
text listing must name every dataset with its shape.  Then, through a real
mount, each dataset's user.h5.layout xattr must name the same layout and
chunk index as h5fs-ls (one vocabulary: btree1, single, farray, earray,
btree2, ...)."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

fails = []
# filter id -> the name h5fs-ls prints
FILTER_NAMES = {1: "deflate", 2: "shuffle", 3: "fletcher32", 4: "szip", 5: "nbit", 6: "scaleoffset",
                32000: "lzf"}
# h5py's ds.compression -> filter name
H5PY_COMPRESSION = {"gzip": "deflate", "lzf": "lzf", "szip": "szip"}


def make(path, libver):
    rng = np.random.default_rng(7)
    kw = {"track_times": False}
    with h5py.File(path, "w", libver=libver) as f:
        f.create_dataset("contig_f8", data=rng.standard_normal(100), **kw)
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        dcpl.set_obj_track_times(False)
        sid = h5py.h5s.create_simple((10,))
        h5py.h5d.create(f.id, b"compact_i2", h5py.h5t.py_create(np.dtype("<i2")), sid, dcpl=dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, np.arange(10, dtype="<i2"))
        g = f.create_group("grp")
        g.create_dataset("gzip_shuffle_i4", data=np.arange(50000, dtype="<i4").reshape(1000, 50),
                         chunks=(100, 50), compression="gzip", compression_opts=4, shuffle=True,
                         maxshape=(None, 50), **kw)
        g.create_dataset("lzf_f4", data=np.linspace(0, 1, 5000, dtype="<f4"), chunks=(500,),
                         compression="lzf", **kw)
        g.create_dataset("fletcher_gzip_be", data=np.arange(4000, dtype=">i8"), chunks=(1000,),
                         compression="gzip", fletcher32=True, **kw)
        g.create_dataset("scaleoffset_i4", data=np.arange(3000, dtype="<i4") % 100, chunks=(300,),
                         scaleoffset=0, **kw)
        g.create_dataset("fixed_chunks_u1", data=np.arange(4096, dtype="u1").reshape(64, 64),
                         chunks=(16, 16), **kw)
        g.create_dataset("single_chunk", data=np.ones((20, 20), "<f8"), chunks=(20, 20), **kw)
        g.create_dataset("two_unlimited", data=np.ones((30, 30), "<u2"), chunks=(8, 8),
                         maxshape=(None, None), **kw)
        g.create_dataset("sparse", shape=(1000,), dtype="<f8", chunks=(100,), fillvalue=-1.0, **kw)
        g["sparse"][0:100] = 5.0
        g.create_dataset("strings", data=np.array([b"alpha", b"beta", b"gamma"], dtype="S10"), **kw)
        g.create_dataset("compound", data=np.zeros(7, dtype=[("a", "<i4"), ("b", "<f8")]), **kw)
        g.create_dataset("bools", data=np.array([True, False, True]), **kw)
        g.create_dataset("scalar", data=np.float32(3.5), **kw)
        g.create_dataset("empty", shape=(0,), dtype="<i8", **kw)
        if h5py.h5z.filter_avail(h5py.h5z.FILTER_SZIP):
            try:
                g.create_dataset("szip_i4", data=np.arange(2000, dtype="<i4"), chunks=(200,),
                                 compression="szip", **kw)
            except Exception as e:  # encoder may be missing even if decoding works
                print("note: no szip dataset (%s)" % e)


def expected_index(ds, libver):
    """The chunk index libhdf5 uses (H5Dchunk.c / H5Dlayout.c rules)."""
    if libver == "earliest":
        return "btree1"
    unlimited = sum(1 for m in ds.maxshape if m is None)
    if unlimited > 1:
        return "btree2"
    if unlimited == 1:
        return "earray"
    if tuple(ds.chunks) == tuple(ds.shape):
        return "single"
    return "farray"


def h5py_datasets(path):
    out = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            out["/" + name] = obj
    f = h5py.File(path, "r")
    f.visititems(visit)
    return f, out


def check_file(path, libver):
    r = subprocess.run([T.H5FS_LS, "-R", "--json", path], capture_output=True, timeout=60)
    if r.returncode != 0:
        fails.append("%s: h5fs-ls exit %d: %s" % (libver, r.returncode, r.stderr[:300]))
    try:
        doc = json.loads(r.stdout.decode("utf-8"))
    except ValueError as e:
        fails.append("%s: invalid JSON: %s" % (libver, e))
        return {}
    entries = {e["path"]: e for e in doc["entries"]}
    f, dsets = h5py_datasets(path)
    n = 0
    try:
        for p, ds in sorted(dsets.items()):
            e = entries.get(p)
            where = "%s %s" % (libver, p)
            if not e or e.get("kind") != "dataset":
                fails.append("%s: not listed as a dataset (%r)" % (where, e))
                continue
            bad = []
            shape = list(ds.shape) if ds.shape is not None else None
            if e["shape"] != shape:
                bad.append("shape %r, h5py %r" % (e["shape"], shape))
            if ds.maxshape is not None and tuple(ds.maxshape) != tuple(ds.shape):
                if e.get("maxshape") != list(ds.maxshape):
                    bad.append("maxshape %r, h5py %r" % (e.get("maxshape"), list(ds.maxshape)))
            elif "maxshape" in e:
                bad.append("maxshape %r listed, h5py has none" % e["maxshape"])
            try:
                if ds.dtype.names:
                    # structured: the type string is only the record size
                    if e["dtype"]["numpy"] != "|V%d" % ds.dtype.itemsize or e["dtype"]["class"] != "compound":
                        bad.append("dtype %r, h5py compound of %d bytes" % (e["dtype"], ds.dtype.itemsize))
                elif np.dtype(e["dtype"]["numpy"]) != ds.dtype:
                    bad.append("dtype %r, h5py %r" % (e["dtype"]["numpy"], ds.dtype.str))
            except (KeyError, TypeError) as ex:
                bad.append("dtype %r: %s" % (e.get("dtype"), ex))
            if e["dtype"]["size"] != ds.dtype.itemsize:
                bad.append("dtype size %r, h5py %d" % (e["dtype"]["size"], ds.dtype.itemsize))
            lay = T.layout_name(ds)
            if e["layout"] != lay:
                bad.append("layout %r, h5py %r" % (e["layout"], lay))
            if ds.chunks:
                if e.get("chunk") != list(ds.chunks):
                    bad.append("chunk %r, h5py %r" % (e.get("chunk"), list(ds.chunks)))
                want = expected_index(ds, libver)
                if e.get("index") != want:
                    bad.append("chunk index %r, expected %r" % (e.get("index"), want))
            elif "chunk" in e:
                bad.append("chunk %r listed for a %s dataset" % (e["chunk"], lay))
            dcpl = ds.id.get_create_plist()
            ids = [dcpl.get_filter(i)[0] for i in range(dcpl.get_nfilters())]
            got_ids = [x["id"] for x in e["filters"]]
            if got_ids != ids:
                bad.append("filters %r, h5py %r" % (got_ids, ids))
            names = {x["name"] for x in e["filters"]}
            for fid in ids:
                if fid in FILTER_NAMES and FILTER_NAMES[fid] not in names:
                    bad.append("filter %d not named %s" % (fid, FILTER_NAMES[fid]))
            if ds.compression and H5PY_COMPRESSION.get(ds.compression) not in names:
                bad.append("compression %s not among %s" % (ds.compression, sorted(names)))
            if ds.shuffle != ("shuffle" in names) or ds.fletcher32 != ("fletcher32" in names) \
                    or bool(ds.scaleoffset is not None) != ("scaleoffset" in names):
                bad.append("shuffle/fletcher32/scaleoffset flags differ from %s" % sorted(names))
            alloc = ds.id.get_storage_size()
            logical = (int(np.prod(ds.shape)) if ds.shape else 1) * ds.dtype.itemsize
            if e["allocated_size"] != alloc:
                bad.append("allocated %r, h5py storage size %d" % (e["allocated_size"], alloc))
            if e["logical_size"] != logical:
                bad.append("logical %r, expected %d" % (e["logical_size"], logical))
            want_ratio = round(logical / alloc, 3) if alloc and logical else None
            if want_ratio is None:
                if e["compression_ratio"] is not None:
                    bad.append("ratio %r, expected null" % e["compression_ratio"])
            elif e["compression_ratio"] is None or abs(e["compression_ratio"] - want_ratio) > 0.0015:
                bad.append("ratio %r, expected %.3f" % (e["compression_ratio"], want_ratio))
            if bad:
                fails.append("%s: %s" % (where, "; ".join(bad)))
            n += 1
        # the text listing: one line per dataset with its shape
        r = subprocess.run([T.H5FS_LS, "-R", path], capture_output=True, timeout=60)
        lines = {ln.split()[0]: ln for ln in r.stdout.decode("utf-8", "replace").splitlines() if ln.strip()}
        for p, ds in dsets.items():
            ln = lines.get(p)
            shape = "scalar" if ds.shape == () else "[" + ",".join(str(d) for d in ds.shape) + "]"
            if not ln or " dataset " not in ln or (" %s " % shape) not in ln + " ":
                fails.append("%s %s: text line %r lacks shape %s" % (libver, p, ln, shape))
            elif ds.chunks and ds.compression and "ratio=" not in ln:
                fails.append("%s %s: text line lacks ratio: %r" % (libver, p, ln))
        # PATH: one dataset, and a group without -R
        r = subprocess.run([T.H5FS_LS, "--json", path, "/grp/lzf_f4"], capture_output=True, timeout=60)
        one = json.loads(r.stdout.decode())["entries"]
        if [x["path"] for x in one] != ["/grp/lzf_f4"]:
            fails.append("%s: h5fs-ls FILE /grp/lzf_f4 lists %r" % (libver, [x["path"] for x in one]))
        r = subprocess.run([T.H5FS_LS, "--json", path, "/"], capture_output=True, timeout=60)
        top = sorted(x["path"] for x in json.loads(r.stdout.decode())["entries"])
        if top != sorted("/" + k for k in f.keys()):
            fails.append("%s: h5fs-ls FILE / lists %r, h5py %r" % (libver, top, sorted(f.keys())))
    finally:
        f.close()
    print("%s: %d datasets compared" % (libver, n))
    return entries


def check_vocabulary(path, libver, entries, wd):
    """user.h5.layout through a mount == h5fs-ls's layout[:index]."""
    mnt = os.path.join(wd, "mnt_%s" % libver)
    n = 0
    with T.Mount(path, mnt) as m:
        for p, e in sorted(entries.items()):
            if e.get("kind") != "dataset" or e.get("external_files"):
                continue
            want = e["layout"] + (":" + e["index"] if "index" in e else "")
            try:
                got = os.getxattr(mnt + p, "user.h5.layout").decode()
            except OSError as ex:
                fails.append("%s %s: user.h5.layout: %s" % (libver, p, ex))
                continue
            if got != want:
                fails.append("%s %s: user.h5.layout %r, h5fs-ls says %r" % (libver, p, got, want))
            n += 1
        if not m.alive():
            fails.append("%s: daemon died: %s" % (libver, m.output()[-2000:]))
    if n == 0:
        fails.append("%s: no dataset's layout compared with its xattr" % libver)
    print("%s: %d layout xattrs agree with h5fs-ls" % (libver, n))


def main():
    if not os.path.exists(T.H5FS_LS):
        T.skip("%s not built" % T.H5FS_LS)
    T.require_fuse()
    wd = T.workdir("ls")
    for libver in ("earliest", "latest"):
        p = os.path.join(wd, "ls_%s.h5" % libver)
        make(p, libver)
        entries = check_file(p, libver)
        if entries:
            check_vocabulary(p, libver, entries, wd)
    for x in fails:
        print("FAIL " + x)
    if not fails:
        shutil.rmtree(wd, ignore_errors=True)
    else:
        print("files kept in %s" % wd)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
