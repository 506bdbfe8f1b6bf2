#!/usr/bin/python3
"""Ownership and permissions (doc/h5fs.1, -o uid=, gid=, umask=):
- by default every entry shows FILE's owner and group, files the read bits
  of FILE's mode and directories those plus the matching search bits;
  symbolic links 0777;
- -o uid=, gid= (numbers or names) and -o umask= override them;
- the kernel enforces them (default_permissions): as root, with
  allow_other, "nobody" may read what the modes allow and gets EACCES
  otherwise (setpriv).
- -o rw on a FILE of mode 0444 says so (one line: not writable, mounted
  read-only) and the mount refuses writes with EROFS; mkfifo (and mknod
  of a socket) on a read-write mount is EPERM, not EROFS (an HDF5 file
  holds no such node; issue 63), and EROFS on a -o ro mount.
Changing FILE's owner and running as nobody need root; without root only
the mode rules are checked. Uses a copy of examples/example.h5."""
import errno
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_fuse()
fails = []
DATASET = "measurements/temperature"
GROUP = "measurements"
LINK = "latest"


def may_search(st):
    """Whether this process may search a directory with these attributes
    (root may always)."""
    if os.geteuid() == 0:
        return True
    if st.st_uid == os.geteuid():
        return bool(st.st_mode & 0o100)
    if st.st_gid == os.getegid() or st.st_gid in os.getgroups():
        return bool(st.st_mode & 0o010)
    return bool(st.st_mode & 0o001)


def modes(mnt):
    """stat of the root, a group, a dataset and a symlink; None for the
    entries below the root when the root's modes forbid us to look (the
    kernel enforcing them is right then)."""
    root = os.stat(mnt)
    if not may_search(root):
        try:
            os.lstat(os.path.join(mnt, GROUP))
            fails.append("%s: lookup allowed although the root directory is mode %o" % (
                mnt, stat.S_IMODE(root.st_mode)))
        except PermissionError:
            pass
        return root, None, None, None
    g = os.lstat(os.path.join(mnt, GROUP))
    d = os.lstat(os.path.join(mnt, DATASET)) if may_search(g) else None
    ln = os.lstat(os.path.join(mnt, LINK))
    return root, g, d, ln


def check(label, h5, mnt, opts, uid, gid, fmode, dmode, wmode=0o200):
    m = T.Mount(h5, mnt, opts=opts)
    try:
        m.start()
    except T.MountError as e:
        fails.append("%s: %s" % (label, e))
        return
    try:
        root, g, d, ln = modes(mnt)
        bad = []
        # a read-write mount: groups and the datasets whose bytes can be
        # written show FILE's write bits (-o umask: 0222 less it), so its
        # owner may make every change and the kernel refuses the others
        # (man h5fs PERMISSIONS)
        if "ro" in ",".join(opts).split(","):
            wmode = 0
        for what, st, want in (("root", root, dmode | wmode), ("group", g, dmode | wmode),
                               ("dataset", d, fmode | wmode)):
            if st is None:
                continue        # not ours to look at: see modes()
            if stat.S_IMODE(st.st_mode) != want:
                bad.append("%s mode %o, expected %o" % (what, stat.S_IMODE(st.st_mode), want))
            if (st.st_uid, st.st_gid) != (uid, gid):
                bad.append("%s owner %d:%d, expected %d:%d" % (what, st.st_uid, st.st_gid, uid, gid))
        if ln is not None and (not stat.S_ISLNK(ln.st_mode) or stat.S_IMODE(ln.st_mode) != 0o777):
            bad.append("symlink mode %o" % ln.st_mode)
        if bad:
            fails.append("%s: %s" % (label, "; ".join(bad)))
        else:
            print("ok   %-44s files %o dirs %o owner %d:%d" % (label, fmode, dmode, uid, gid))
    finally:
        m.stop()


def as_nobody(argv):
    nb = pwd.getpwnam("nobody")
    return subprocess.run(["setpriv", "--reuid=%d" % nb.pw_uid, "--regid=%d" % nb.pw_gid,
                           "--clear-groups"] + argv, capture_output=True, timeout=30)


def enforce(label, h5, mnt, opts, can_read, expect_bytes):
    m = T.Mount(h5, mnt, opts=["-o", "allow_other"] + opts)
    try:
        m.start()
    except T.MountError as e:
        fails.append("%s: %s" % (label, e))
        return
    try:
        r = as_nobody(["cat", os.path.join(mnt, DATASET)])
        err = r.stderr.decode("utf-8", "replace").strip()
        if can_read:
            if r.returncode != 0 or r.stdout != expect_bytes:
                fails.append("%s: nobody could not read (%d: %s)" % (label, r.returncode, err))
                return
        else:
            if r.returncode == 0 or "Permission denied" not in err:
                fails.append("%s: nobody was not refused (exit %d, %r)" % (label, r.returncode, err))
                return
        print("ok   %-44s nobody %s" % (label, "reads the dataset" if can_read else "gets EACCES"))
    finally:
        m.stop()


def rw_and_nodes(h5, mnt):
    """-o rw on a 0444 FILE; mkfifo on read-write and read-only mounts."""
    os.chmod(h5, 0o444)
    m = T.Mount(h5, mnt, opts=["-o", "rw"])
    m.start()
    try:
        try:
            os.setxattr(mnt, "user.x", b"1")
            fails.append("-o rw on a 0444 FILE: setxattr was accepted")
        except OSError as e:
            if e.errno != errno.EROFS:
                fails.append("-o rw on a 0444 FILE: setxattr gave %s" % errno.errorcode.get(e.errno))
    finally:
        m.stop()
    lines = [ln for ln in m.output().splitlines() if "-o rw" in ln and "not writable" in ln and
             "mounted read-only" in ln and "0444" in ln]
    if len(lines) != 1:
        fails.append("-o rw on a 0444 FILE: no one line says it: %r" % m.output()[-500:])
    else:
        print("ok   %-44s %s" % ("-o rw, FILE 0444", lines[0]))
    os.chmod(h5, 0o644)
    for opts, want in (([], errno.EPERM), (["-o", "ro"], errno.EROFS)):
        m = T.Mount(h5, mnt, opts=opts)
        m.start()
        try:
            for what, make in (("mkfifo", lambda: os.mkfifo(os.path.join(mnt, "ff"))),
                               ("mknod socket", lambda: os.mknod(os.path.join(mnt, "ss"), stat.S_IFSOCK | 0o644))):
                try:
                    make()
                    fails.append("%s %s: made" % (what, opts))
                except OSError as e:
                    if e.errno != want:
                        fails.append("%s %s: %s, not %s" % (what, opts, errno.errorcode.get(e.errno),
                                                              errno.errorcode[want]))
                    else:
                        print("ok   %-44s %s" % ("%s %s" % (what, " ".join(opts) or "(read-write)"),
                                                 errno.errorcode[want]))
        finally:
            m.stop()


def main():
    example = os.path.join(T.SRCDIR, "examples", "example.h5")
    root = os.geteuid() == 0
    # nobody must be able to reach the mount point: not under the build
    # tree, whose directories may be private
    base = tempfile.mkdtemp(prefix="h5fs-perms-")
    try:
        os.chmod(base, 0o755)
        mnt = os.path.join(base, "mnt")
        os.makedirs(mnt)
        os.chmod(mnt, 0o755)
        h5 = os.path.join(base, "run.h5")
        shutil.copyfile(example, h5)
        me_u, me_g = os.getuid(), os.getgid()
        rw_and_nodes(h5, mnt)

        os.chmod(h5, 0o644)
        check("default, FILE 0644", h5, mnt, [], me_u, me_g, 0o444, 0o555)
        os.chmod(h5, 0o640)
        check("default, FILE 0640", h5, mnt, [], me_u, me_g, 0o440, 0o550)
        os.chmod(h5, 0o604)
        check("default, FILE 0604", h5, mnt, [], me_u, me_g, 0o404, 0o505)
        os.chmod(h5, 0o600)
        check("default, FILE 0600", h5, mnt, [], me_u, me_g, 0o400, 0o500)
        check("-o umask=022 (FILE 0600)", h5, mnt, ["-o", "umask=022"], me_u, me_g, 0o444, 0o555)
        check("-o umask=0137", h5, mnt, ["-o", "umask=0137"], me_u, me_g, 0o440, 0o440)
        check("-o uid=123,gid=456,umask=007", h5, mnt, ["-o", "uid=123,gid=456,umask=007"], 123, 456,
              0o440, 0o550, 0o220)
        nb = pwd.getpwnam("nobody")
        check("-o uid=nobody (a name)", h5, mnt, ["-o", "uid=nobody"], nb.pw_uid, me_g, 0o400, 0o500)

        if not root:
            print("skip owner of FILE and enforcement: not root")
        else:
            os.chown(h5, 12345, 23456)
            os.chmod(h5, 0o640)
            check("default, FILE 12345:23456 0640", h5, mnt, [], 12345, 23456, 0o440, 0o550)
            os.chown(h5, 0, 0)
            if not shutil.which("setpriv"):
                print("skip enforcement: setpriv not installed")
            else:
                want = None
                m = T.Mount(h5, mnt)
                m.start()
                try:
                    with open(os.path.join(mnt, DATASET), "rb") as fh:
                        want = fh.read()
                finally:
                    m.stop()
                os.chmod(h5, 0o644)
                enforce("FILE 0644: others may read", h5, mnt, [], True, want)
                enforce("FILE 0644, -o umask=077", h5, mnt, ["-o", "umask=077"], False, want)
                os.chmod(h5, 0o600)
                enforce("FILE 0600: only its owner", h5, mnt, [], False, want)
                enforce("FILE 0600, -o uid=nobody", h5, mnt, ["-o", "uid=nobody"], True, want)
                # without allow_other even readable modes do not let others in
                m = T.Mount(h5, mnt, opts=["-o", "umask=0"])
                m.start()
                try:
                    r = as_nobody(["stat", mnt])
                    if r.returncode == 0:
                        fails.append("without allow_other, nobody could stat the mount")
                    else:
                        print("ok   %-44s nobody is refused" % "no allow_other")
                finally:
                    m.stop()
    finally:
        if T.is_mounted(os.path.join(base, "mnt")):
            subprocess.run(["fusermount3", "-uz", os.path.join(base, "mnt")], timeout=10)
        shutil.rmtree(base, ignore_errors=True)
    for f in fails:
        print("FAIL " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError as e:
        if e.errno in (errno.ENOTCONN, errno.ECONNABORTED):
            print("FAIL daemon gone: %s" % e)
            sys.exit(1)
        raise
