#!/usr/bin/python3
"""Rows in as text (issue 83 item 4; doc/h5fs.1 VIEWS "NAME.csv"): the
.csv view of a dataset that grows takes rows appended as the view prints
them, through a real read-write mount with -o views:

- `echo 1.5,2 >> m.csv` (bash), printf of several lines, Python's csv
  module (CRLF line ends, quoted cells) on a 2-D float dataset (h5py,
  extensible array), a 1-D int16 one (h5py default, v1 B-tree) and a
  compound table (int32, S8 with a comma and a quote, float32, h5py bool)
  - and a PyTables Table when PyTables is there; h5py reads the rows;
- `cat a.csv` of the view appended back (the header of a table skipped):
  the rows twice, byte for byte;
- records cut across write() calls (os.write pieces) and a last one
  without its line end at close;
- a line that does not parse (a cell too many or too few, not a number,
  out of the type's range, a string too long) refuses the whole write
  with EINVAL and appends nothing, also the good lines before it in that
  write; the log names the line and cell;
- O_TRUNC (cp rows.csv m.csv) replaces the rows; a refused one puts the
  old rows back;
- refused opens: a fixed-size dataset (EPERM), O_RDWR (EPERM), a
  read-only mount (EROFS);
- a new name x.csv (no dataset x) is a new file: its bytes, byte for
  byte (a uint8 dataset), as any copied file;
- rows answered before close are in FILE after a kill -9 right after.
"""
import csv
import errno
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

fail = T.fail
TDT = np.dtype([("id", "<i4"), ("name", "S8"), ("x", "<f4"), ("ok", "?")])


def make(path):
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("m", data=np.array([[1.5, 2.0], [3.0, 4.0]]), maxshape=(None, 2), chunks=(4, 2))
        f.create_dataset("fixed", data=np.arange(3.0))
        f.create_dataset("t", data=np.array([(1, b"a,b", 0.5, True), (2, b'q"x', 1.25, False)], dtype=TDT),
                         maxshape=(None,), chunks=(4,))
    with h5py.File(path, "a", libver="earliest") as f:
        f.create_dataset("v", data=np.arange(3, dtype="<i2"), maxshape=(None,), chunks=(8,))


def rows(path, name):
    """(retried while the daemon holds FILE's lock for a commit)"""
    for i in range(100):
        try:
            with h5py.File(path, "r") as f:
                return f[name][()]
        except OSError:
            if i == 99:
                raise
            time.sleep(0.05)


def sh(cmd):
    return subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=30)


def append_text(p, data, pieces=None):
    """os.write of data (bytes) to p opened O_APPEND, in pieces: the
    errno of the first refused write or of close, or 0."""
    fd = os.open(p, os.O_WRONLY | os.O_APPEND)
    try:
        for piece in pieces or [data]:
            os.write(fd, piece)
    except OSError as e:
        os.close(fd)
        return e.errno
    try:
        os.close(fd)
    except OSError as e:
        return e.errno
    return 0


def check_rows(h5, name, want, tag):
    got = rows(h5, name)
    if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
        fail("%s: %s is %r, expected %r" % (tag, name, got, want))
        return False
    print("ok   %s" % tag)
    return True


def main():
    wd = T.workdir("csv_in")
    h5 = os.path.join(wd, "t.h5")
    mnt = os.path.join(wd, "mnt")
    log = os.path.join(wd, "h5fs.log")
    make(h5)
    m0 = rows(h5, "m")
    t0 = rows(h5, "t")
    v0 = rows(h5, "v")
    with T.Mount(h5, mnt, ["-o", "rw,views,logfile=" + log]) as mo:
        with mo.watchdog(60):
            M, V, TT = (os.path.join(mnt, n + ".csv") for n in ("m", "v", "t"))
            # 1. the shell's echo and printf
            r = sh("echo 1.5,2 >> %s && printf '5,6\\n7,8.25\\n' >> %s" % (M, M))
            if r.returncode:
                fail("echo/printf >> m.csv: exit %d %s" % (r.returncode, r.stderr))
            want_m = np.vstack([m0, [[1.5, 2], [5, 6], [7, 8.25]]])
            check_rows(h5, "m", want_m, "echo 1.5,2 >> m.csv and printf of two lines: the rows appended")
            if open(M).read() != "1.5,2.0\n3.0,4.0\n1.5,2.0\n5.0,6.0\n7.0,8.25\n":
                fail("m.csv after appends: %r" % open(M).read())

            # 2. Python's csv module: CRLF and quoted cells, a table
            with open(TT, "a", newline="") as fh:
                w = csv.writer(fh)
                w.writerow([3, "x, y", 2.5, "FALSE"])
                w.writerow([4, 'say "hi"', -1e-3, "TRUE"])
                w.writerow([5, "", 3, 1])
            # (S8 holds 8 bytes: 'say "hi"' is 8 and fits exactly)
            extra = np.array([(3, b"x, y", 2.5, False), (4, b'say "hi"', -1e-3, True), (5, b"", 3, True)], TDT)
            want_t = np.concatenate([t0, extra])
            check_rows(h5, "t", want_t, "csv.writer rows (CRLF, quoted commas and quotes, bools) into a table")

            # 3. cat of the view appended back: the rows twice (header skipped)
            t_text = open(TT, "rb").read()
            for name, want in (("t", want_t), ("m", want_m), ("v", v0)):
                text = open(os.path.join(mnt, name + ".csv"), "rb").read()
                back = os.path.join(wd, name + ".csv")
                open(back, "wb").write(text)
                r = sh("cat %s >> %s" % (back, os.path.join(mnt, name + ".csv")))
                want2 = np.concatenate([want, want])
                if r.returncode:
                    fail("cat %s.csv back: exit %d %s" % (name, r.returncode, r.stderr))
                check_rows(h5, name, want2, "cat %s.csv >> %s.csv: every row again, equal" % (name, name))
                if name == "t":
                    want_t = want2
                elif name == "m":
                    want_m = want2
                else:
                    v0 = want2
            if open(TT, "rb").read() != t_text + t_text.split(b"\n", 1)[1]:
                fail("t.csv after the round trip is not the header and the rows twice")

            # 4. records cut across writes, and a last one without its end
            e = append_text(M, None, [b"11,1", b"2\n13", b",14\n1", b"5,16"])
            want_m = np.vstack([want_m, [[11, 12], [13, 14], [15, 16]]])
            if e:
                fail("pieces across writes: errno %d" % e)
            check_rows(h5, "m", want_m, "records cut across write() calls, the last one ended by close")

            # 5. refused lines: EINVAL, nothing of the write appended
            for data, tag in ((b"1,2,3\n", "a cell too many"), (b"1\n", "a cell too few"),
                              (b"20,21\nx,2\n", "not a number (after a good line)"),
                              (b"1e400,1\n", "out of float64's range"), (b"\n", "an empty line")):
                e = append_text(M, data)
                if e != errno.EINVAL:
                    fail("%s: errno %r, expected EINVAL" % (tag, e))
            check_rows(h5, "m", want_m, "m.csv: lines that do not parse refused (EINVAL), nothing appended")
            for data, tag in ((b"70000\n", "int16 out of range"), (b"-1.5\n", "not an integer"),
                              (b"1\n2\n40000\n", "the third line out of range")):
                if append_text(V, data) != errno.EINVAL:
                    fail("v.csv %s: not EINVAL" % tag)
            if append_text(TT, b'9,"toolong!!",1,TRUE\n') != errno.EINVAL:
                fail("t.csv: a string longer than S8 not refused")
            if append_text(TT, b"9,a,1,MAYBE\n") != errno.EINVAL:
                fail("t.csv: a bool that is neither TRUE nor FALSE not refused")
            if append_text(M, b"1,") != errno.EINVAL:
                fail("a last line without its end that does not parse: close not EINVAL")
            check_rows(h5, "v", v0, "v.csv: out of range and non-integers refused")
            check_rows(h5, "t", want_t, "t.csv: a string too long and a bad bool refused")
            logged = [ln for ln in open(log).read().splitlines() if ".csv: EINVAL" in ln]
            if not any("line 2, cell 1" in ln and '"x" is not a number' in ln for ln in logged):
                fail("the log does not name the line and cell: %r" % logged[-5:])
            else:
                print("ok   the reason logged: %s" % [ln for ln in logged if "line 2, cell 1" in ln][0][20:])

            # 6. O_TRUNC replaces the rows; refused, they are put back
            open(os.path.join(wd, "new.csv"), "w").write("100,200\n300,400\n")
            r = sh("cp %s %s" % (os.path.join(wd, "new.csv"), M))
            if r.returncode:
                fail("cp new.csv m.csv: %s" % r.stderr)
            want_m = np.array([[100.0, 200], [300, 400]])
            check_rows(h5, "m", want_m, "cp rows.csv m.csv: the rows replaced")
            r = sh("printf 'bad\\n' > %s" % M)
            if r.returncode == 0:
                fail("printf bad > m.csv succeeded")
            T.wait_until(lambda: rows(h5, "m").shape == (2, 2), 5)
            check_rows(h5, "m", want_m, "a refused > m.csv puts the old rows back")

            # 7. refused opens
            T.expect_err("fixed.csv opened to append", lambda: open(os.path.join(mnt, "fixed.csv"), "a"),
                         (errno.EPERM,))
            T.expect_err("m.csv opened O_RDWR", lambda: open(M, "r+"), (errno.EPERM,))
            T.expect_err("m.csv opened O_WRONLY without O_APPEND or O_TRUNC",
                         lambda: os.close(os.open(M, os.O_WRONLY)), (errno.EPERM,))

            # 8. a new name: bytes, as any copied file
            src = os.path.join(wd, "data.csv")
            open(src, "w").write("a,b\n1,2\n")
            r = sh("cp %s %s/" % (src, mnt))
            if r.returncode or open(os.path.join(mnt, "data.csv"), "rb").read() != open(src, "rb").read() or \
                    os.getxattr(os.path.join(mnt, "data.csv"), "user.h5.dtype") != b"|u1":
                fail("cp data.csv into the mount: not its bytes as a uint8 dataset")
            else:
                print("ok   cp data.csv (a new name) keeps its bytes")

            # 9. answered rows survive a kill -9 right after
            r = sh("echo 42,43 >> %s" % M)
            if r.returncode:
                fail("echo 42,43 >> m.csv: %s" % r.stderr)
            os.kill(mo.proc.pid, signal.SIGKILL)
            mo.proc.wait()
    want_m = np.vstack([want_m, [[42, 43]]])
    check_rows(h5, "m", want_m, "echo 42,43 >> m.csv, then kill -9: the row is in FILE")

    # 10. a read-only mount
    with T.Mount(h5, mnt, ["-o", "ro,views"]):
        T.expect_err("m.csv on a read-only mount", lambda: open(os.path.join(mnt, "m.csv"), "a"), (errno.EROFS,))
    pytables(wd)
    return T.finish()


def pytables(wd):
    """A PyTables Table (what PyTables writes: a v1 B-tree, a compound of
    its columns, its CLASS attributes) grown through its .csv view."""
    try:
        import tables
    except ImportError:
        print("SKIP PyTables: python3-tables missing")
        return
    h5 = os.path.join(wd, "pt.h5")
    mnt = os.path.join(wd, "mnt")

    class Row(tables.IsDescription):
        a = tables.Int32Col(pos=0)
        b = tables.Float64Col(pos=1)
        c = tables.StringCol(6, pos=2)

    with tables.open_file(h5, "w") as f:
        t = f.create_table("/", "tab", Row)
        t.append([(1, 0.5, b"one"), (2, 1.5, b"two")])
    with T.Mount(h5, mnt, ["-o", "rw,views"]):
        r = sh("/usr/bin/printf '3,2.5,three\\n4,-1,fo,ur\\n' >> %s/tab.csv" % mnt)
        if r.returncode == 0:
            fail("PyTables: a line of four cells appended")
        r = sh("/usr/bin/printf '3,2.5,three\\n4,-1,\"fo,ur\"\\n' >> %s/tab.csv" % mnt)
        if r.returncode:
            fail("PyTables: printf >> tab.csv: %s" % r.stderr)
    with tables.open_file(h5, "r") as f:
        got = f.root.tab.read().tolist()
    want = [(1, 0.5, b"one"), (2, 1.5, b"two"), (3, 2.5, b"three"), (4, -1.0, b"fo,ur")]
    if got != want:
        fail("PyTables reads %r, expected %r" % (got, want))
    else:
        print("ok   a PyTables Table grown through tab.csv; PyTables reads the rows")


if __name__ == "__main__":
    sys.exit(main())
