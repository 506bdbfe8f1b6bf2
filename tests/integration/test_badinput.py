#!/usr/bin/python3
"""Bad inputs are refused before mounting: missing file, unreadable file,
a directory, not HDF5, empty, truncated superblock, corrupt superblock
checksum, bad options.  Each must exit non-zero within the time bound,
print exactly one line "h5fs: FILE: cause" on stderr, and leave nothing
mounted.  Also: --help and --version exit 0."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

fails = []


def run(args, timeout=20):
    try:
        return subprocess.run([T.H5FS] + args, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None


def expect_refused(label, path, mnt, cause_hint=None, opts=(), prefix=None):
    r = run(list(opts) + [path, mnt])
    mounted = T.is_mounted(mnt)
    if mounted:
        subprocess.run(["fusermount3", "-uz", mnt], timeout=10)
    if r is None:
        fails.append("%s: h5fs did not exit within 20 s" % label)
        return
    err = r.stderr.decode("utf-8", "replace")
    lines = [line for line in err.splitlines() if line.strip()]
    problems = []
    if r.returncode == 0:
        problems.append("exit status 0")
    if mounted:
        problems.append("something was mounted")
    if len(lines) != 1:
        problems.append("%d stderr lines" % len(lines))
    elif not lines[0].startswith(prefix or "h5fs: %s: " % path):
        problems.append("stderr line does not start with %r" % (prefix or "h5fs: FILE: "))
    elif cause_hint and cause_hint.lower() not in lines[0].lower():
        problems.append("cause does not mention %r" % cause_hint)
    if problems:
        fails.append("%s: %s; stderr=%r" % (label, ", ".join(problems), err[:500]))
    else:
        print("ok   %-28s %s" % (label, lines[0]))


def main():
    wd = T.workdir("badinput")
    mnt = os.path.join(wd, "mnt")
    os.makedirs(mnt)
    good = os.path.join(wd, "good.h5")
    with h5py.File(good, "w", libver="latest") as f:
        f["x"] = np.arange(10)
    blob = open(good, "rb").read()

    def write(name, data):
        p = os.path.join(wd, name)
        with open(p, "wb") as fh:
            fh.write(data)
        return p

    expect_refused("missing file", os.path.join(wd, "nope.h5"), mnt, "No such file")
    expect_refused("directory", wd, mnt)
    expect_refused("empty file", write("empty.h5", b""), mnt)
    expect_refused("not HDF5", write("text.h5", b"hello, this is not an HDF5 file\n" * 100), mnt)
    expect_refused("truncated superblock", write("trunc.h5", blob[:20]), mnt)
    # v2/v3 superblocks carry a checksum over their 44 bytes: flip a bit
    # in the root address field
    bad = bytearray(blob)
    bad[40] ^= 0x10
    expect_refused("corrupt superblock", write("corrupt.h5", bytes(bad)), mnt)
    # a root address far past the end of the file (checksum fixed up would
    # need lookup3 here; use a v0 superblock instead, which has none)
    with h5py.File(os.path.join(wd, "v0.h5"), "w", libver="earliest") as f:
        f["x"] = np.arange(3)
    v0 = bytearray(open(os.path.join(wd, "v0.h5"), "rb").read())
    # v0 layout: 8 sig, 8 versions etc., 4+4 K values/flags, then 4 addresses
    # (base, free-space, EOF, driver) of 8 bytes from offset 24, then the
    # root symbol table entry: link name offset (8), object header address
    v0[64:72] = (1 << 40).to_bytes(8, "little")
    expect_refused("root address past EOF", write("v0bad.h5", bytes(v0)), mnt)
    if os.geteuid() != 0:
        p = write("unreadable.h5", blob)
        os.chmod(p, 0)
        expect_refused("unreadable file", p, mnt, "Permission denied")
    expect_refused("bad cache_size", good, mnt, "cache_size", opts=("-o", "cache_size=abc"), prefix="h5fs: ")

    for args, label in ((["--help"], "--help"), (["-V"], "-V"), (["--version"], "--version")):
        r = run(args)
        if r is None or r.returncode != 0 or not r.stdout:
            fails.append("%s: exit %s, stdout %r" % (label, r and r.returncode, r and r.stdout[:200]))
        else:
            print("ok   %-28s exit 0" % label)
    r = run([])
    if r is None or r.returncode == 0 or not r.stderr:
        fails.append("no arguments: should fail with a usage message")
    else:
        print("ok   %-28s %s" % ("no arguments", r.stderr.decode().strip().splitlines()[0]))

    for f in fails:
        print("FAIL " + f)
    if not fails:
        import shutil
        shutil.rmtree(wd, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
