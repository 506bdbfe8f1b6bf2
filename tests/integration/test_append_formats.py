#!/usr/bin/python3
"""Appending to the files people have (issue 13): netCDF-4 record variables
and PyTables EArrays and Tables, all indexed by v1 B-trees, through a real
mount and `cat >>`.

netCDF-4: a record variable `temp(time, x)` (shuffle+deflate) and the
coordinate variable `time(time)`, which is the dimension scale of the
unlimited dimension.  netCDF-C takes an unlimited dimension's length as the
largest extent of the variables that use it, so appending to `temp` alone
grows `time` (its values past its own extent read as the fill value);
appending to both keeps the coordinate complete.  Checked with
netCDF4-python (dimension length, every value, fill where expected) and
`ncdump` (exit 0, "UNLIMITED ; // (N currently)", the values).

PyTables: an EArray (shuffle+zlib+fletcher32) and a Table (compound rows).
PyTables takes a Table's row count from the dataspace (Table.nrows), not
from its NROWS attribute, which it rewrites itself when it next writes the
table: h5fs leaves NROWS as it was (doc/APPEND.md).  Checked with `tables`:
nrows and every row; then PyTables appends more and h5fs reads it back.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import numpy as np  # noqa: E402

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg, flush=True)


def cat_append(src_dir, target, data):
    src = os.path.join(src_dir, "rows.bin")
    with open(src, "wb") as fh:
        fh.write(data)
    r = subprocess.run(["/bin/bash", "-c", 'cat "$0" >> "$1"', src, target], capture_output=True, timeout=60)
    if r.returncode != 0:
        fail("cat >> %s: %s" % (target, r.stderr.decode().strip()))


def test_netcdf(work):
    try:
        import netCDF4
    except ImportError:
        print("netCDF4-python missing: netCDF-4 part skipped")
        return False
    path = os.path.join(work, "rec.nc")
    mnt = os.path.join(work, "mnt-nc")
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("x", 3)
        t = ds.createVariable("time", "f8", ("time",))
        v = ds.createVariable("temp", "f4", ("time", "x"), zlib=True, shuffle=True, chunksizes=(2, 3))
        t[0:4] = np.arange(4.0)
        v[0:4, :] = np.arange(12, dtype="f4").reshape(4, 3)
    temp = np.arange(12, dtype="<f4").reshape(4, 3)
    with T.Mount(path, mnt) as m, m.watchdog(120):
        # 1: the record variable alone grows by 3 records
        more = np.arange(100, 109, dtype="<f4").reshape(3, 3)
        cat_append(work, os.path.join(mnt, "temp"), more.tobytes())
        temp = np.concatenate([temp, more])
    with netCDF4.Dataset(path) as ds:
        if len(ds.dimensions["time"]) != 7:
            fail("netCDF-4: time has %d records after appending to temp, expected 7" % len(ds.dimensions["time"]))
        if not np.array_equal(ds["temp"][:].data, temp):
            fail("netCDF-4: temp values differ")
        tm = ds["time"][:]
        if not np.array_equal(tm[:4].data, np.arange(4.0)) or not tm.mask[4:].all():
            fail("netCDF-4: time should read 0..3 then fill: %r" % (tm,))
    with T.Mount(path, mnt) as m, m.watchdog(120):
        # 2: the coordinate catches up, then both grow by 1000 records
        cat_append(work, os.path.join(mnt, "time"), np.arange(4.0, 1007.0).astype("<f8").tobytes())
        more = np.arange(3000, dtype="<f4").reshape(1000, 3)
        cat_append(work, os.path.join(mnt, "temp"), more.tobytes())
        temp = np.concatenate([temp, more])
    with netCDF4.Dataset(path) as ds:
        n = len(ds.dimensions["time"])
        if n != 1007 or not ds.dimensions["time"].isunlimited():
            fail("netCDF-4: time has %d records, expected 1007 (unlimited)" % n)
        if not np.array_equal(ds["time"][:].data, np.arange(1007.0)):
            fail("netCDF-4: time values differ")
        if not np.array_equal(ds["temp"][:].data, temp):
            fail("netCDF-4: temp values differ after the second append")
    if T.shutil.which("ncdump"):
        r = subprocess.run(["ncdump", path], capture_output=True, timeout=120)
        out = r.stdout.decode()
        if r.returncode != 0:
            fail("ncdump exit %d: %s" % (r.returncode, r.stderr.decode()[-300:]))
        elif not re.search(r"time = UNLIMITED ; // \(1007 currently\)", out):
            fail("ncdump does not show 1007 records: %s" % out[:300])
        elif "1006 ;" not in out or "2997, 2998, 2999 ;" not in out:
            fail("ncdump does not show the last values")
    else:
        print("ncdump missing: ncdump check skipped")
    print("netCDF-4: 1007 records in time and temp")
    return True


def test_tables(work):
    try:
        import tables
    except ImportError:
        print("PyTables missing: PyTables part skipped")
        return False
    path = os.path.join(work, "pt.h5")
    mnt = os.path.join(work, "mnt-pt")
    rec = np.dtype([("t", "<f8"), ("v", "<i2")])

    class R(tables.IsDescription):
        t = tables.Float64Col(pos=0)
        v = tables.Int16Col(pos=1)

    with tables.open_file(path, "w") as f:
        a = f.create_earray("/", "ea", tables.Float64Atom(), shape=(0, 2), chunkshape=(4, 2),
                            filters=tables.Filters(5, "zlib", shuffle=True, fletcher32=True))
        a.append(np.arange(10.0).reshape(5, 2))
        t = f.create_table("/", "tab", R, chunkshape=(8,))
        t.append([(1.0, 1), (2.0, 2)])
    ea = np.arange(10.0).reshape(5, 2)
    tab = np.array([(1.0, 1), (2.0, 2)], rec)
    with T.Mount(path, mnt) as m, m.watchdog(120):
        more = np.arange(10.0, 4010.0).reshape(2000, 2)
        cat_append(work, os.path.join(mnt, "ea"), more.astype("<f8").tobytes())
        ea = np.concatenate([ea, more])
        rows = np.array([(i * 0.25, i % 3000) for i in range(3, 1500)], rec)
        cat_append(work, os.path.join(mnt, "tab"), rows.tobytes())
        tab = np.concatenate([tab, rows])
    with tables.open_file(path) as f:
        if f.root.ea.nrows != len(ea) or not np.array_equal(f.root.ea[:], ea):
            fail("PyTables: EArray has %d rows (expected %d) or values differ" % (f.root.ea.nrows, len(ea)))
        if f.root.tab.nrows != len(tab) or not np.array_equal(f.root.tab[:], tab):
            fail("PyTables: Table has %d rows (expected %d) or values differ" % (f.root.tab.nrows, len(tab)))
    # PyTables appends after h5fs (and rewrites NROWS), h5fs reads it all
    with tables.open_file(path, "a") as f:
        f.root.ea.append(np.array([[-1.0, -2.0]]))
        f.root.tab.append([(-1.0, -1)])
    ea = np.concatenate([ea, [[-1.0, -2.0]]])
    tab = np.concatenate([tab, np.array([(-1.0, -1)], rec)])
    with tables.open_file(path) as f:
        if int(f.root.tab.attrs.NROWS) != len(tab):
            fail("PyTables: NROWS %d after its own append, expected %d" % (f.root.tab.attrs.NROWS, len(tab)))
    with T.Mount(path, mnt) as m, m.watchdog(120):
        with open(os.path.join(mnt, "ea"), "rb") as fh:
            if fh.read() != ea.astype("<f8").tobytes():
                fail("PyTables: h5fs reads the EArray wrong after PyTables appended")
        with open(os.path.join(mnt, "tab"), "rb") as fh:
            if fh.read() != tab.tobytes():
                fail("PyTables: h5fs reads the Table wrong after PyTables appended")
    print("PyTables: EArray %d rows, Table %d rows" % (len(ea), len(tab)))
    return True


def main():
    work = T.workdir("append-formats")
    ran = [test_netcdf(work), test_tables(work)]
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    if not any(ran):
        T.skip("neither netCDF4-python nor PyTables installed")
    print("PASS")


if __name__ == "__main__":
    main()
