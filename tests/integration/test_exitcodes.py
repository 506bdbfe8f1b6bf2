#!/usr/bin/python3
"""Exit status classes of h5fs and h5fs-ls (doc/h5fs.1 and doc/h5fs-ls.1,
EXIT STATUS): 0 clean unmount, 2 usage, 3 cannot open FILE, 4 not HDF5 or
unsupported, 5 corrupt, 6 mount failed; h5fs-ls adds 6 = PATH not found.
Every failure about FILE prints exactly one line "h5fs: FILE: cause" and
mounts nothing.  Inputs are derived from examples/example.h5 (superblock
v0, no checksum, so single fields can be changed), so h5py is not needed;
the cases that mount need /dev/fuse and fusermount3 and are skipped
without them."""
import os
import shutil
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

fails = []
TIMEOUT = 20


def run(prog, args, timeout=TIMEOUT):
    try:
        return subprocess.run([prog] + args, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None


def expect(label, prog, args, status, mnt=None, one_line=None):
    r = run(prog, args)
    if mnt and T.is_mounted(mnt):
        subprocess.run(["fusermount3", "-uz", mnt], timeout=TIMEOUT)
        fails.append("%s: something was mounted" % label)
    if r is None:
        fails.append("%s: did not exit within %d s" % (label, TIMEOUT))
        return
    err = r.stderr.decode("utf-8", "replace")
    lines = [x for x in err.splitlines() if x.strip()]
    if r.returncode != status:
        fails.append("%s: exit status %d, expected %d; stderr=%r" % (label, r.returncode, status, err[:300]))
        return
    if one_line is not None:
        if len(lines) != 1 or not lines[0].startswith(one_line):
            fails.append("%s: expected one stderr line starting %r, got %r" % (label, one_line, err[:300]))
            return
    print("ok   %-40s exit %d  %s" % (label, status, lines[0] if lines else ""))


def fuse_usable():
    if not os.path.exists(T.H5FS) or not shutil.which("fusermount3"):
        return False
    try:
        os.close(os.open("/dev/fuse", os.O_RDWR))
    except OSError:
        return False
    return True


def main():
    for p in (T.H5FS, T.H5FS_LS):
        if not os.path.exists(p):
            T.skip("%s not built" % p)
    example = os.path.join(T.SRCDIR, "examples", "example.h5")
    if not os.path.exists(example):
        T.skip("examples/example.h5 missing")
    wd = T.workdir("exitcodes")
    mnt = os.path.join(wd, "mnt")
    os.makedirs(mnt)
    good = os.path.join(wd, "good.h5")
    shutil.copyfile(example, good)
    blob = open(good, "rb").read()
    assert blob[:8] == b"\x89HDF\r\n\x1a\n" and blob[8] == 0, "example.h5 should have a v0 superblock"

    def write(name, data):
        p = os.path.join(wd, name)
        with open(p, "wb") as fh:
            fh.write(data)
        return p

    # v0 superblock: signature 8, versions 8, K values + flags 8, four
    # addresses 24..56, root symbol table entry: name offset 56, object
    # header address 64..72
    unsupported = bytearray(blob)
    unsupported[8] = 7                         # superblock version 7
    rootpast = bytearray(blob)
    rootpast[64:72] = (1 << 40).to_bytes(8, "little")
    rootbad = bytearray(blob)
    rootbad[64:72] = (0).to_bytes(8, "little")  # "object header" = the superblock
    text = write("text.h5", b"this is not an HDF5 file\n" * 64)
    empty = write("empty.h5", b"")
    trunc = write("trunc.h5", blob[:30])
    unsup = write("unsupported.h5", bytes(unsupported))
    past = write("rootpast.h5", bytes(rootpast))
    rbad = write("rootbad.h5", bytes(rootbad))
    fifo = os.path.join(wd, "fifo.h5")
    os.mkfifo(fifo)
    afile = write("notadir", b"x")

    def refused(path):
        return "h5fs: %s: " % path

    H = T.H5FS
    # 2: usage
    expect("no arguments", H, [], 2)
    expect("only FILE", H, [good], 2)
    expect("three arguments", H, [good, mnt, "extra"], 2)
    expect("unknown option", H, ["-o", "no_such_option", good, mnt], 2, mnt, "h5fs: unknown option: ")
    expect("unknown flag", H, ["--no-such-flag", good, mnt], 2, mnt)
    expect("bad cache_size", H, ["-o", "cache_size=abc", good, mnt], 2, mnt, "h5fs: invalid -o cache_size")
    expect("bad cache_mb", H, ["-o", "cache_mb=0", good, mnt], 2, mnt, "h5fs: invalid -o cache_mb")
    expect("bad uid", H, ["-o", "uid=no_such_user_h5fs", good, mnt], 2, mnt, "h5fs: invalid -o uid")
    expect("bad gid", H, ["-o", "gid=-3", good, mnt], 2, mnt, "h5fs: invalid -o gid")
    expect("bad umask", H, ["-o", "umask=999", good, mnt], 2, mnt, "h5fs: invalid -o umask")
    expect("bad xattr mode", H, ["-o", "xattr=binary", good, mnt], 2, mnt, "h5fs: invalid -o xattr")
    # 3: cannot open FILE
    expect("missing FILE", H, [os.path.join(wd, "nope.h5"), mnt], 3, mnt,
           refused(os.path.join(wd, "nope.h5")))
    expect("FILE is a directory", H, [wd, mnt], 3, mnt, refused(wd))
    expect("FILE is a FIFO", H, [fifo, mnt], 3, mnt, refused(fifo))
    if os.geteuid() != 0:
        noperm = write("noperm.h5", blob)
        os.chmod(noperm, 0)
        expect("FILE unreadable", H, [noperm, mnt], 3, mnt, refused(noperm))
    elif shutil.which("setpriv"):
        # root reads anything: run as nobody against a file only root may read
        noperm = write("noperm.h5", blob)
        os.chmod(noperm, 0o600)
        os.chmod(wd, 0o755)
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", H, noperm, mnt],
                           capture_output=True, timeout=TIMEOUT)
        if r.returncode != 3 or b"Permission denied" not in r.stderr:
            fails.append("FILE unreadable (as nobody): exit %d, stderr %r" % (r.returncode, r.stderr[:300]))
        else:
            print("ok   %-40s exit 3  %s" % ("FILE unreadable (as nobody)", r.stderr.decode().strip()))
    # 4: not HDF5 / unsupported
    expect("not HDF5 (text)", H, [text, mnt], 4, mnt, refused(text))
    expect("not HDF5 (empty)", H, [empty, mnt], 4, mnt, refused(empty))
    expect("unsupported superblock version", H, [unsup, mnt], 4, mnt, refused(unsup))
    # 5: corrupt
    expect("truncated superblock", H, [trunc, mnt], 5, mnt, refused(trunc))
    expect("root group past end of file", H, [past, mnt], 5, mnt, refused(past))
    expect("root group is no object header", H, [rbad, mnt], 5, mnt, refused(rbad))
    # 6: mount failed (FILE is fine)
    expect("missing MOUNTPOINT", H, [good, os.path.join(wd, "nomnt")], 6, None,
           "h5fs: mountpoint %s: " % os.path.join(wd, "nomnt"))
    expect("MOUNTPOINT is a file", H, [good, afile], 6, None, "h5fs: mountpoint %s: " % afile)
    # 0: help, version
    for a in ("--help", "-h", "--version", "-V"):
        r = run(H, [a])
        if r is None or r.returncode != 0 or not r.stdout:
            fails.append("%s: exit %s" % (a, r and r.returncode))
        else:
            print("ok   %-40s exit 0" % a)

    # 0: mounted, then unmounted with fusermount3 -u; the order of checks:
    # FILE problems are reported before mountpoint problems
    expect("bad FILE and missing MOUNTPOINT", H, [text, os.path.join(wd, "nomnt")], 4, None, refused(text))
    if fuse_usable():
        m = T.Mount(good, mnt)
        try:
            m.start()
            if not os.listdir(mnt):
                fails.append("clean unmount: empty mount")
        except T.MountError as e:
            fails.append("clean unmount: %s" % e)
        finally:
            m.stop()
        if m.returncode != 0:
            fails.append("clean unmount: exit status %s, expected 0; %s" % (m.returncode, m.output()[-500:]))
        else:
            print("ok   %-40s exit 0" % "mount + fusermount3 -u")
    else:
        print("skip mount + fusermount3 -u (no usable /dev/fuse or fusermount3)")

    # h5fs-ls
    L = T.H5FS_LS
    expect("h5fs-ls: ok", L, ["-R", good], 0)
    expect("h5fs-ls: no arguments", L, [], 2)
    expect("h5fs-ls: unknown option", L, ["--bogus", good], 2)
    expect("h5fs-ls: missing FILE", L, [os.path.join(wd, "nope.h5")], 3, None, "h5fs-ls: ")
    # a directory is a collection (issue 25 item 6): listed, its corrupt
    # and unsupported members with their errors (its FIFO not opened)
    expect("h5fs-ls: DIR with bad members", L, [wd], 1)
    expect("h5fs-ls: FILE is a FIFO", L, [fifo], 3, None, "h5fs-ls: ")
    expect("h5fs-ls: not HDF5", L, [text], 4, None, "h5fs-ls: ")
    expect("h5fs-ls: unsupported version", L, [unsup], 4, None, "h5fs-ls: ")
    expect("h5fs-ls: truncated superblock", L, [trunc], 5, None, "h5fs-ls: ")
    expect("h5fs-ls: PATH not found", L, [good, "/no/such/path"], 6, None, "h5fs-ls: ")
    expect("h5fs-ls: root unreadable", L, [past], 1)

    for f in fails:
        print("FAIL " + f)
    if not fails:
        for p in (wd,):
            os.chmod(p, stat.S_IRWXU)
        shutil.rmtree(wd, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    t0 = time.monotonic()
    rc = main()
    print("(%.1f s)" % (time.monotonic() - t0))
    sys.exit(rc)
