#!/usr/bin/python3
"""`h5fs-ls --refs` as a new user meets it (issue 33, item 8): references
of an h5py file (make_refs_fixtures.py) read through fsspec's
ReferenceFileSystem and zarr (Debian python3-fsspec, python3-zarr) give
what h5py gives:

- a float64 attribute [-3.0, 3.0] reads as floats (json floats, zarr's
  attrs floats), not integers;
- a relative soft link to a dataset is an array like an absolute one
  (also a relative link to a relative link);
- soft links that lead to no dataset (a link to a link to nothing, a
  relative target that libhdf5 reads from the link's group, dangling
  links, a loop) are not arrays, each with a "not followed" line;
- compounds with padding (kerchunk's form: unnamed |V fields), opaque
  (|V), null-terminated and space-padded fixed strings (|S, the bytes
  h5py returns, also as a compound field, chunked and compressed) are
  written and read equal to h5py;
- exit status 0; every stderr line names FILE;
- a file with a corrupt chunk index: exit 1, and the error line names
  FILE and the object;
- xarray (issue 63 item 2): the references of the h5py and netCDF-4
  fixtures (make_refs_fixtures.make_xr, make_write_fixtures,
  make_dense_fixtures, make_vlen_fixtures, a netCDF-4 series file, an
  xarray-written file) open in xarray equal to xr.open_dataset of the
  file (netCDF-C's reading): netCDF-C's phony_dim_N dimensions where
  there are no scales, scalars, integers kept (no Zarr fill_value where
  no _FillValue is set, unwritten chunks inline), a _FillValue masked, a
  netCDF dimension without a variable left out; dtypes equal too; a
  variable the references cannot hold is one h5fs-ls reports skipped.
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
try:
    import fsspec  # noqa: E402
    import numpy as np  # noqa: E402
    import zarr  # noqa: E402
except ImportError as e:
    T.skip("fsspec/zarr missing (Debian python3-fsspec python3-zarr python3-numcodecs): %s" % e)
import h5py  # noqa: E402
import make_refs_fixtures  # noqa: E402
import test_refs as R  # noqa: E402  (Store, equal_arrays)

fail = T.fail
WAIT = 60

ARRAYS = ["g/d", "g/rel", "abs", "chain_rel", "e", "padded", "padded_chunked", "nested_padded", "opaque",
          "opaque_chunked", "nullterm", "nullterm_chunked", "spacepad", "spacepad_big", "cmp_str"]
NOT_ARRAYS = ["g/rel_e", "via_rel_e", "dangling", "chain_dangling", "loop_a", "loop_b"]


def refs(path):
    p = subprocess.run([T.H5FS_LS, "--refs", path], capture_output=True, timeout=WAIT)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def xarray_equal(wd):
    """Every fixture's references against xr.open_dataset(FILE)."""
    try:
        import xarray as xr
        import netCDF4  # noqa: F401
    except ImportError as e:
        print("xarray or netCDF4 missing (Debian python3-xarray python3-netcdf4): xarray part skipped: %s" % e)
        return
    import make_concat_fixtures
    import make_dense_fixtures
    import make_vlen_fixtures
    import make_write_fixtures
    files = make_refs_fixtures.make_xr(wd)
    for name, mod in (("write", make_write_fixtures), ("dense", make_dense_fixtures),
                      ("vlen", make_vlen_fixtures)):
        d = os.path.join(wd, name)
        os.makedirs(d)
        mod.make(d)
        # (netCDF-C 4.9 crashes on vlen.h5's h5py variable-length types)
        files += sorted(os.path.join(d, n) for n in os.listdir(d) if n.endswith((".h5", ".nc")) and n != "vlen.h5")
    files += make_concat_fixtures.nc_series(os.path.join(wd, "series"), nfiles=1)
    files += make_concat_fixtures.xr_days(os.path.join(wd, "days"), ndays=1)
    n = 0
    for path in files:
        try:
            want = xr.open_dataset(path).load()
        except Exception as e:
            print("--   %s: netCDF-C does not open it (%s)" % (os.path.relpath(path, wd), str(e)[:80]))
            continue
        rc, out, err = refs(path)
        j = os.path.join(wd, "xr%d.json" % n)
        n += 1
        with open(j, "wb") as fh:
            fh.write(out)
        store = zarr.storage.KVStore(fsspec.filesystem("reference", fo=j).get_mapper(""))
        try:
            got = xr.open_dataset(store, engine="zarr", consolidated=False).load()
        except Exception as e:
            fail("%s: xarray cannot open its references: %r" % (path, e))
            continue
        for v in list(want.variables):
            if v not in got.variables and re.search(r"^h5fs-ls: %s: /%s: dataset skipped: " % (
                    re.escape(path), re.escape(v)), err, re.M):
                want = want.drop_vars(v)
        try:
            xr.testing.assert_equal(got, want)
            bad = [v for v in want.variables if got[v].dtype != want[v].dtype]
            if bad:
                fail("%s: dtypes differ: %s" % (path, ", ".join("%s %s vs %s" % (v, got[v].dtype, want[v].dtype)
                                                                for v in bad)))
            else:
                print("ok   %s: xarray reads the references as the file (%d variables)" % (
                    os.path.relpath(path, wd), len(want.variables)))
        except AssertionError as e:
            fail("%s: xarray reads the references otherwise than the file: %s" % (path, str(e)[:1500]))
            continue
        saved(wd, path, got, want, n)


def saved(wd, path, got, want, n):
    """Issue 72 item 1: what xarray opens from the references saves with
    to_netcdf (netCDF-C's own attributes are not among them) and reads
    back as the file, attributes included."""
    import xarray as xr
    o = os.path.join(wd, "saved%d.nc" % n)
    if not R.nc4_file(path):
        # issue 83 item 6: a file that is not netCDF-4 keeps its bools in
        # the references (JSON true/false, as kerchunk writes them), which
        # netCDF has no type for: saved as a user saves kerchunk's, without
        # them (netCDF-C's reading of the file has none either)
        got = got.copy()
        for obj in [got] + [got[v] for v in got.variables]:
            for k in [k for k, v in obj.attrs.items() if isinstance(v, (bool, np.bool_))]:
                del obj.attrs[k]
    try:
        got.to_netcdf(o)
        back = xr.open_dataset(o).load()
    except Exception as e:
        fail("%s: xarray cannot save what it reads from the references: %r" % (path, e))
        return
    try:
        xr.testing.assert_equal(back, want)
        for v in want.variables:
            hidden = set(back[v].attrs) & {"CLASS", "NAME", "_Netcdf4Coordinates", "_Netcdf4Dimid"}
            if hidden:
                fail("%s: %s: netCDF-C's attributes %s reach the saved file" % (path, v, sorted(hidden)))
            for k, val in want[v].attrs.items():
                if k not in back[v].attrs or not np.array_equal(np.asarray(back[v].attrs[k]), np.asarray(val)):
                    fail("%s: %s: attribute %s: saved %r, file %r" % (path, v, k, back[v].attrs.get(k), val))
        print("ok   %s: saved with to_netcdf, reads back as the file" % os.path.relpath(path, wd))
    except AssertionError as e:
        fail("%s: the saved copy reads otherwise than the file: %s" % (path, str(e)[:1500]))


def sparse_and_links(wd):
    """Issue 72 item 1: a 1%-written dataset's references are under 2x
    those of a dataset holding only its written chunk (the fill of its
    unwritten ones is not inlined: --fill=exact inlines it, reading back
    exact); two links to one dataset, and a run on a subtree, give one set
    of dimension names."""
    p = os.path.join(wd, "sparse.h5")
    with h5py.File(p, "w") as f:
        s = f.create_dataset("s", shape=(1000000,), chunks=(10000,), dtype="f4")
        s[0:10000] = np.arange(1, 10001, dtype="f4")
        f["w"] = np.arange(1, 10001, dtype="f4")
        f["a"] = np.arange(12.0).reshape(3, 4)
        g = f.create_group("g")
        g["b"] = np.zeros(5)
        g["link"] = f["a"]
    rc, out, err = refs(p)
    keys = json.loads(out)["refs"]

    def size(name):
        return sum(len(json.dumps({k: v})) for k, v in keys.items() if k.startswith(name + "/"))
    if rc != 0 or size("w") == 0 or size("s") >= 2 * size("w"):
        fail("sparse: exit %d, its references %d bytes, a dataset of its written chunk %d" % (
            rc, size("s"), size("w")))
    else:
        print("ok   1%%-written dataset: references %d bytes, its written chunk's dataset %d" % (size("s"), size("w")))
    rc, out, err = refs_opt(p, "--fill=exact")
    g = zarr.open_group(zarr.storage.KVStore(R.Store(fsspec.filesystem("reference", fo=json.loads(out))
                                                     .get_mapper(""))), mode="r")
    with h5py.File(p, "r") as f:
        if rc != 0 or not np.array_equal(g["s"][...], f["s"][...]):
            fail("--fill=exact: exit %d, the sparse dataset does not read as h5py" % rc)
        else:
            print("ok   --fill=exact: the sparse dataset reads as h5py (%d bytes)" % len(out))

    def dims(*path):
        rc, out, err = refs_opt(p, *path)
        return {k[:-len(".zattrs")]: json.loads(v).get("_ARRAY_DIMENSIONS")
                for k, v in json.loads(out)["refs"].items() if k.endswith(".zattrs")}
    whole, sub, one = dims(), dims("/g"), dims("/g/link")
    if whole.get("a/") != whole.get("g/link/") or sub.get("link/") != whole["a/"] or \
            sub.get("b/") != whole.get("g/b/") or one.get("") != whole["a/"] or not whole["a/"]:
        fail("dimension names differ by path: whole %r, /g %r, /g/link %r" % (whole, sub, one))
    else:
        print("ok   one dataset, one set of dimension names: %r by every path and run" % (whole["a/"],))


def refs_opt(path, *opts):
    p = subprocess.run([T.H5FS_LS, "--refs", path, *opts] if opts and opts[0].startswith("/") else
                       [T.H5FS_LS, "--refs", *opts, path], capture_output=True, timeout=WAIT)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def main():
    wd = T.workdir("refs_first")
    sparse_and_links(wd)
    h5 = os.path.join(wd, "run.h5")
    make_refs_fixtures.make(h5)
    rc, out, err = refs(h5)
    print(err, end="")
    if rc != 0:
        fail("exit %d: %s" % (rc, err[-400:]))
    for line in err.splitlines():
        if not line.startswith("h5fs-ls: %s: " % h5):
            fail("a line without FILE: %r" % line)
    doc = json.loads(out)
    keys = doc["refs"]

    # attributes: floats stay floats in the JSON text and in zarr
    za = json.loads(keys[".zattrs"])
    if '"range": [-3.0, 3.0]' not in keys[".zattrs"]:
        fail("range written as %r" % keys[".zattrs"])
    fs = fsspec.filesystem("reference", fo=doc)
    g = zarr.open_group(zarr.storage.KVStore(R.Store(fs.get_mapper(""))), mode="r")
    for name, want in (("range", [-3.0, 3.0]), ("scalar", 2.0), ("f4", [1.0, 2.5]), ("i", [1, 2])):
        got = g.attrs[name]
        kinds = [type(x) for x in (got if isinstance(got, list) else [got])]
        wkinds = [type(x) for x in (want if isinstance(want, list) else [want])]
        if got != want or kinds != wkinds or za[name] != want:
            fail("attribute %s: zarr reads %r (%s), h5py %r" % (name, got, kinds, want))

    with h5py.File(h5, "r") as f:
        for name in ARRAYS:
            if name + "/.zarray" not in keys:
                fail("/%s not written (%s)" % (name, "; ".join(
                    ln for ln in err.splitlines() if "/%s:" % name in ln)))
                continue
            want = f[name][()]
            got = g[name][...]
            if not R.equal_arrays(got, want):
                fail("/%s: zarr %r %s != h5py %r %s" % (name, got.dtype, got[:3], want.dtype, want[:3]))
            else:
                print("ok   /%s: zarr reads %s %s as h5py" % (name, got.dtype.str if not got.dtype.names
                                                              else "compound", got.shape))
        for name in NOT_ARRAYS:
            if any(k.startswith(name + "/") for k in keys):
                fail("/%s written, but it leads to no dataset" % name)
            if not re.search(r"^h5fs-ls: %s: /%s: soft link to \S+ not followed" % (re.escape(h5), name), err, re.M):
                fail("/%s: no 'not followed' line" % name)
        # as libhdf5 reads them: h5py agrees that these are nothing
        for name in NOT_ARRAYS:
            try:
                f[name]
                fail("/%s: h5py opens it (the fixture is wrong)" % name)
            except (KeyError, RuntimeError, OSError):
                pass

    # a corrupt chunk index (the v1 B-tree of /padded_chunked): an error
    # naming FILE and the object, exit 1, the other datasets written
    data = bytearray(open(h5, "rb").read())
    with h5py.File(h5, "r") as f:
        plist = f["padded_chunked"].id.get_create_plist()
        assert plist.get_layout() == h5py.h5d.CHUNKED
        first = f["padded_chunked"].id.get_chunk_info(0).byte_offset
    # its v1 B-tree node (III.A.1): chunk type 1, and the first child
    # (after a 24-byte header and a key of 4 + 4 + 2 * 8 bytes) is the chunk
    at = -1
    for m in re.finditer(b"TREE", data):
        i = m.start()
        if data[i + 4] == 1 and int.from_bytes(data[i + 48:i + 56], "little") == first:
            at = i
    if at < 0:
        fail("the fixture's chunk B-tree was not found")
        return T.finish()
    bad = os.path.join(wd, "corrupt.h5")
    data[at:at + 4] = b"XXXX"
    open(bad, "wb").write(bytes(data))
    rc, out, err = refs(bad)
    lines = [ln for ln in err.splitlines() if "padded_chunked" in ln]
    if rc != 1 or len(lines) != 1 or not lines[0].startswith("h5fs-ls: %s: /padded_chunked: " % bad) or \
            "skipped" in lines[0]:
        fail("corrupt chunk index: exit %d, lines %r" % (rc, lines))
    else:
        print("ok   corrupt chunk index: %s" % lines[0])
    if "g/d/.zarray" not in json.loads(out)["refs"]:
        fail("corrupt chunk index: the other datasets are not written")
    xarray_equal(wd)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
