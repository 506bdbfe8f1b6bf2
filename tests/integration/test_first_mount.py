#!/usr/bin/python3
"""First contact with the h5fs command (issue 33, item 6), as a new user
meets it, on a file h5py wrote:

- a dataset's st_mtime moves when rows are appended: `cat rows >> ds`
  through the mount makes `find -newer STAMP` list it (STAMP touched just
  before), and on a live (-o ro) mount so does an append h5py makes to
  FILE;
- an http:// FILE is mounted `ro` (/proc/mounts; writes fail EROFS) and
  shows the server's Last-Modified as every entry's mtime, not 1970;
- a second h5fs on the same mountpoint is refused (exit 6, one line
  naming the mountpoint and what is mounted there), the first one serving
  on, one mount in /proc/mounts;
- `-o bogus` is one "h5fs: unknown option" line with a pointer to
  --help, exit 2 (not libfuse's bare "fuse: unknown option(s)");
- a missing mountpoint's error says it is the mountpoint;
- a DIR containing the mountpoint is refused in words that read right;
- `-o timeout=` (a remote FILE's option) on a local FILE is refused,
  exit 2, and accepted with an http:// FILE;
- `h5fs -V` prints h5fs's version on its first line.
"""
import email.utils
import errno
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402
import remote_server  # noqa: E402

fail = T.fail
WAIT = 20          # seconds any single command or change may take
LIVE_WAIT = 10     # a live mount shows FILE's change within this


def run(args, **kw):
    if "input" not in kw:
        kw["stdin"] = subprocess.DEVNULL
    return subprocess.run(args, capture_output=True, timeout=WAIT, **kw)


def make(path):
    with h5py.File(path, "w") as f:
        f.create_dataset("rows", data=np.arange(10, dtype="<i4"), maxshape=(None,), chunks=(4,))
        f.create_dataset("fixed", data=np.arange(10, dtype="<i4"))
    # an old FILE, as one from last week
    os.utime(path, (1_600_000_000, 1_600_000_000))


def touch_stamp(path):
    with open(path, "w"):
        pass
    # the stamp's time is a clock tick's; what follows must be later
    time.sleep(0.05)


def newer(mnt, stamp):
    r = run(["find", mnt, "-newer", stamp])
    return set(os.path.relpath(p, mnt) for p in r.stdout.decode().split())


def check_own_append(wd):
    h5 = os.path.join(wd, "own.h5")
    make(h5)
    mnt = os.path.join(wd, "mnt_own")
    stamp = os.path.join(wd, "stamp_own")
    with T.Mount(h5, mnt) as m, m.watchdog(60):
        ds = os.path.join(mnt, "rows")
        before = os.stat(ds).st_mtime_ns
        if before != 1_600_000_000 * 10**9:
            fail("own append: mtime before %d, expected FILE's %d" % (before, 1_600_000_000 * 10**9))
        touch_stamp(stamp)
        r = run(["/bin/sh", "-c", "cat >> '%s'" % ds], input=np.arange(10, 14, dtype="<i4").tobytes())
        if r.returncode != 0:
            fail("own append: cat >> failed: %r" % r.stderr)
            return
        st = os.stat(ds)
        if st.st_size != 14 * 4:
            fail("own append: size %d after the append" % st.st_size)
        if st.st_mtime_ns <= os.stat(stamp).st_mtime_ns:
            fail("own append: st_mtime %d not after the stamp %d" % (st.st_mtime_ns, os.stat(stamp).st_mtime_ns))
        if "rows" not in newer(mnt, stamp):
            fail("own append: find -newer does not list rows: %r" % newer(mnt, stamp))
        if os.stat(ds).st_mtime_ns > time.time_ns():
            fail("own append: mtime in the future")
    print("ok   own append: find -newer lists the appended dataset")


def check_live_append(wd):
    h5 = os.path.join(wd, "live.h5")
    make(h5)
    mnt = os.path.join(wd, "mnt_live")
    stamp = os.path.join(wd, "stamp_live")
    with T.Mount(h5, mnt, ["-o", "ro"]) as m, m.watchdog(60):
        ds = os.path.join(mnt, "rows")
        os.stat(ds)
        touch_stamp(stamp)
        with h5py.File(h5, "a") as f:
            f["rows"].resize((12,))
            f["rows"][10:] = [10, 11]
        deadline = time.monotonic() + LIVE_WAIT
        while time.monotonic() < deadline and os.stat(ds).st_size != 12 * 4:
            time.sleep(0.05)
        if os.stat(ds).st_size != 12 * 4:
            fail("live append: size %d, not 48, after %d s" % (os.stat(ds).st_size, LIVE_WAIT))
            return
        if "rows" not in newer(mnt, stamp):
            fail("live append: find -newer does not list rows (mtime %d, stamp %d)" % (
                os.stat(ds).st_mtime_ns, os.stat(stamp).st_mtime_ns))
    print("ok   live append: find -newer lists the dataset h5py appended to")


def check_remote(wd):
    h5 = os.path.join(wd, "remote.h5")
    make(h5)
    mnt = os.path.join(wd, "mnt_remote")
    srv = remote_server.Server(open(h5, "rb").read())
    when = 1_700_000_000
    srv.state.last_modified = email.utils.formatdate(when, usegmt=True)
    try:
        # -o timeout= and retries= belong to remote FILEs: accepted here
        with T.Mount(srv.url, mnt, ["-o", "retries=2,timeout=5"]) as m, m.watchdog(60):
            opts = [ln.split()[3] for ln in open("/proc/mounts") if ln.split()[1] == mnt]
            if len(opts) != 1 or "ro" not in opts[0].split(","):
                fail("remote: /proc/mounts options %r, expected ro" % opts)
            for name in ("", "rows", "fixed"):
                mt = os.stat(os.path.join(mnt, name)).st_mtime
                if int(mt) != when:
                    fail("remote: /%s mtime %d, expected Last-Modified %d" % (name, mt, when))
            try:
                with open(os.path.join(mnt, "rows"), "ab") as fh:
                    fh.write(b"\0" * 4)
                fail("remote: an append was accepted")
            except OSError as e:
                if e.errno != errno.EROFS:
                    fail("remote: append failed with %s, expected EROFS" % errno.errorcode.get(e.errno))
    finally:
        srv.stop()
    print("ok   remote: ro in /proc/mounts, Last-Modified as mtime, EROFS")


def check_cli(wd):
    H = T.H5FS
    h5 = os.path.join(wd, "cli.h5")
    make(h5)
    mnt = os.path.join(wd, "mnt_cli")
    os.makedirs(mnt)

    def one_line(label, args, status, *needles):
        r = run([H] + args)
        err = [x for x in r.stderr.decode("utf-8", "replace").splitlines() if x.strip()]
        if T.is_mounted(mnt) and args[-1] == mnt:
            subprocess.run(["fusermount3", "-u", mnt], timeout=WAIT)
            fail("%s: something was mounted" % label)
        if r.returncode != status or len(err) != 1 or not err[0].startswith("h5fs: ") or \
                any(n not in err[0] for n in needles):
            fail("%s: exit %d (expected %d), stderr %r; expected one 'h5fs: ' line with %r" % (
                label, r.returncode, status, err, needles))
            return
        print("ok   %-28s exit %d  %s" % (label, status, err[0]))

    one_line("-o bogus", ["-o", "bogus", h5, mnt], 2, "unknown option", "bogus", "--help")
    one_line("-o ro,bogus", ["-o", "ro,bogus", h5, mnt], 2, "unknown option", "bogus", "--help")
    one_line("--bogus", ["--bogus", h5, mnt], 2, "unknown option", "--bogus", "--help")
    missing = os.path.join(wd, "no_such_dir")
    one_line("missing mountpoint", [h5, missing], 6, "mountpoint %s" % missing, "No such file")
    one_line("-o timeout= on a local FILE", ["-o", "timeout=5", h5, mnt], 2, "timeout=5", "remote", h5)
    one_line("-o retries= on a local DIR", ["-o", "retries=1", wd, mnt], 2, "retries=1", "remote")
    inside = os.path.join(wd, "inside")
    os.makedirs(inside)
    one_line("DIR containing MOUNTPOINT", [wd, inside], 3, "the mountpoint %s lies inside" % inside)

    # a second mount on the same mountpoint
    with T.Mount(h5, mnt) as m, m.watchdog(60):
        r = run([H, h5, mnt])
        err = r.stderr.decode().strip().splitlines()
        if r.returncode != 6 or len(err) != 1 or "mountpoint %s" % mnt not in err[0] or \
                "already a mount" not in err[0] or "fuse.h5fs" not in err[0] or "h5fs -u" not in err[0]:
            fail("second mount: exit %d, stderr %r" % (r.returncode, err))
        n = sum(1 for ln in open("/proc/mounts") if ln.split()[1] == mnt)
        if n != 1:
            fail("second mount: %d mounts on the mountpoint" % n)
            # the stacked one's daemon ends when it is unmounted
            subprocess.run(["fusermount3", "-u", mnt], timeout=WAIT)
        with open(os.path.join(mnt, "fixed"), "rb") as fh:
            if fh.read() != np.arange(10, dtype="<i4").tobytes():
                fail("second mount: the first one no longer serves FILE's bytes")
        if not m.alive():
            fail("second mount: the first daemon exited")
        else:
            print("ok   second mount refused: %s" % (err[0] if err else ""))

    for a in ("-V", "--version"):
        r = run([H, a])
        out = r.stdout.decode().splitlines()
        if r.returncode != 0 or not out or not out[0].startswith("h5fs "):
            fail("%s: exit %d, first line %r" % (a, r.returncode, out[:1]))
        else:
            print("ok   %s first line: %s" % (a, out[0]))


def main():
    wd = T.workdir("first_mount")
    check_cli(wd)
    check_own_append(wd)
    check_live_append(wd)
    if "#define HAVE_CURL 1" in open(os.path.join(T.BUILDDIR, "config.h")).read():
        check_remote(wd)
    else:
        print("skip remote: h5fs built without libcurl")
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
