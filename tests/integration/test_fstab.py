#!/usr/bin/python3
"""mount(8), fstab and mount.fuse3 (doc/h5fs.1, MOUNTING WITH MOUNT(8) AND
FSTAB):
- mount.fuse3 FILE MNT -t fuse.h5fs -o ro,allow_other,nofail, with h5fs
  found on PATH (the build directory): what "mount -t fuse.h5fs" runs;
- mount -T TESTFSTAB MNT with a temporary fstab: mount(8) clears PATH, so
  the line names the build's h5fs with the "fuse" type and
  "PROGRAM#FILE" source, and carries the options an fstab line has
  (nofail, _netdev, x-systemd.*, comment=, uid=, umask=);
- when an h5fs on mount(8)'s own PATH is this build (an installed copy),
  the plain "FILE MNT fuse.h5fs" line as well (required when
  H5FS_REQUIRE_INSTALLED=1, as contrib/package-test.sh sets it).
Each mount must show fuse.h5fs in /proc/mounts with FILE as its source,
serve the right bytes and honour the options; umount removes it.
Needs root (mount), mount.fuse3 and /dev/fuse; exits 77 without them."""
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_fuse()
fails = []
WAIT = 30
MOUNT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def mount_entry(mnt):
    mnt = os.path.realpath(mnt)
    with open("/proc/self/mounts") as f:
        for line in f:
            p = line.split()
            if len(p) > 3 and p[1] == mnt:
                return p
    return None


def umount(mnt):
    # "target is busy" can be transient right after a mount (a lookup of the
    # mountpoint still in flight, e.g. the daemon's own read_ahead_kb stat):
    # retry that for a while, as fusermount users do; anything else fails.
    deadline = time.monotonic() + WAIT
    while T.is_mounted(mnt):
        r = subprocess.run(["umount", mnt], capture_output=True, timeout=WAIT)
        if r.returncode == 0 or not T.is_mounted(mnt):
            break
        if b"busy" in r.stderr and time.monotonic() < deadline:
            time.sleep(0.1)
            continue
        subprocess.run(["umount", "-l", mnt], capture_output=True, timeout=WAIT)
        return "umount failed: %s" % r.stderr.decode()[:300]
    deadline = time.monotonic() + WAIT
    while T.is_mounted(mnt) and time.monotonic() < deadline:
        time.sleep(0.05)
    return "still mounted after umount" if T.is_mounted(mnt) else None


def daemons(h5):
    """Live (not zombie) h5fs processes serving h5: a daemon started by
    mount(8) is nobody's child here, so look in /proc."""
    pids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as fh:
                argv = fh.read().split(b"\0")
            with open("/proc/%s/stat" % d) as fh:
                state = fh.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if argv and argv[0].endswith(b"h5fs") and h5.encode() in argv and state not in ("Z", "X"):
            pids.append(int(d))
    return pids


def verify(label, cmd, env, h5, mnt, want, uid=None, fmode=None):
    try:
        r = subprocess.run(cmd, capture_output=True, timeout=WAIT, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        fails.append("%s: %s did not return within %d s" % (label, cmd[0], WAIT))
        umount(mnt)
        return
    try:
        if r.returncode != 0:
            fails.append("%s: exit %d: %s" % (label, r.returncode, (r.stdout + r.stderr).decode()[:500]))
            return
        ent = mount_entry(mnt)
        bad = []
        if not ent:
            fails.append("%s: nothing mounted" % label)
            return
        if ent[2] != "fuse.h5fs":
            bad.append("type %s" % ent[2])
        if ent[0] != os.path.realpath(h5):
            bad.append("source %s" % ent[0])
        opts = ent[3].split(",")
        for o in ("ro", "allow_other", "default_permissions"):
            if o not in opts:
                bad.append("option %s missing from %s" % (o, ent[3]))
        with open(os.path.join(mnt, "measurements", "temperature"), "rb") as fh:
            if fh.read() != want:
                bad.append("wrong bytes")
        st = os.stat(os.path.join(mnt, "measurements", "temperature"))
        if uid is not None and st.st_uid != uid:
            bad.append("st_uid %d, expected %d" % (st.st_uid, uid))
        if fmode is not None and (st.st_mode & 0o777) != fmode:
            bad.append("mode %o, expected %o" % (st.st_mode & 0o777, fmode))
        if bad:
            fails.append("%s: %s (mount line: %s)" % (label, "; ".join(bad), " ".join(ent)))
        else:
            print("ok   %-40s %s" % (label, " ".join(ent[:4])))
    finally:
        err = umount(mnt)
        if err:
            fails.append("%s: %s" % (label, err))
        deadline = time.monotonic() + WAIT
        while daemons(h5) and time.monotonic() < deadline:
            time.sleep(0.05)
        if daemons(h5):
            fails.append("%s: h5fs still running after umount: pids %s" % (label, daemons(h5)))


def main():
    if os.geteuid() != 0:
        T.skip("mount(8) needs root")
    helper = shutil.which("mount.fuse3", path=MOUNT_PATH) or shutil.which("mount.fuse3")
    if not helper:
        T.skip("mount.fuse3 not installed (package fuse3)")
    if not shutil.which("mount") or not shutil.which("umount"):
        T.skip("mount/umount not installed")
    example = os.path.join(T.SRCDIR, "examples", "example.h5")
    wd = T.workdir("fstab")
    h5 = os.path.join(wd, "run.h5")
    shutil.copyfile(example, h5)
    os.chmod(h5, 0o644)
    mnt = os.path.join(wd, "mnt")
    os.makedirs(mnt)
    if any(c in wd for c in " \t\\#"):
        T.skip("work directory %r cannot be written in an fstab line" % wd)
    try:
        # the bytes, through a plain mount
        m = T.Mount(h5, mnt)
        m.start()
        try:
            with open(os.path.join(mnt, "measurements", "temperature"), "rb") as fh:
                want = fh.read()
        finally:
            m.stop()

        # 1. what "mount -t fuse.h5fs FILE MNT -o ..." runs, with h5fs on PATH
        bindir = os.path.dirname(os.path.abspath(T.H5FS))
        if os.path.basename(T.H5FS) != "h5fs":
            bindir = os.path.join(wd, "bin")
            os.makedirs(bindir)
            os.symlink(os.path.abspath(T.H5FS), os.path.join(bindir, "h5fs"))
        env = dict(os.environ, PATH=bindir + ":" + os.environ.get("PATH", MOUNT_PATH))
        verify("mount.fuse3 -t fuse.h5fs (PATH)", [helper, h5, mnt, "-t", "fuse.h5fs", "-o",
               "ro,allow_other,nofail,_netdev,noatime"], env, h5, mnt, want, fmode=0o444)

        # 2. mount -T fstab: the "fuse" type with PROGRAM#FILE
        fstab = os.path.join(wd, "fstab")
        with open(fstab, "w") as fh:
            fh.write("# test fstab for h5fs\n")
            fh.write("%s#%s  %s  fuse  ro,allow_other,nofail,_netdev,x-systemd.automount,"
                     "comment=h5fs-test,uid=4321,umask=0227  0  0\n" % (os.path.abspath(T.H5FS), h5, mnt))
        verify("mount -T fstab (fuse, PROGRAM#FILE)", ["mount", "-T", fstab, mnt], None, h5, mnt, want,
               uid=4321, fmode=0o440)

        # 3. the plain fuse.h5fs line, when mount(8)'s PATH finds this build
        found = shutil.which("h5fs", path=MOUNT_PATH)
        if found and os.path.samefile(found, T.H5FS):
            with open(fstab, "w") as fh:
                fh.write("%s  %s  fuse.h5fs  ro,allow_other,nofail  0  0\n" % (h5, mnt))
            verify("mount -T fstab (fuse.h5fs)", ["mount", "-T", fstab, mnt], None, h5, mnt, want)
        elif os.environ.get("H5FS_REQUIRE_INSTALLED") == "1":
            # contrib/package-test.sh: the installed package must serve it
            fails.append("plain fuse.h5fs fstab line: h5fs on mount(8)'s PATH is %s, not %s" % (found, T.H5FS))
        else:
            print("note: mount -T with type fuse.h5fs not tried: mount(8) clears PATH, and %s" % (
                "h5fs on its PATH is %s, not this build" % found if found else "no h5fs is installed on it"))
    finally:
        for _ in range(3):
            if T.is_mounted(mnt):
                umount(mnt)
    for f in fails:
        print("FAIL " + f)
    if not fails:
        shutil.rmtree(wd, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
