#!/usr/bin/python3
"""The security model (doc/h5fs.1 SECURITY): a mount never gives a user
what they could not read or change themselves.

As root, with an unprivileged user U (nobody, through setpriv) and another
user O (uid 12345) against root's mounts with and without -o allow_other:
- FILE swapped after mount: U renames a symlink to root's 0644 file (rw
  mount) or root's 0600 file (-o ro) over FILE in U's folder, or a hard
  link of root's file: the mount keeps showing U's file (a log line says
  why), root's file is not changed by U's appends and dd, nor read; a
  regular file of U's renamed over FILE is followed (the live contract).
- External storage through symlinks: a name leading to a symlink to a
  root-only file, a directory symlink in the middle of a name: EIO, not
  the file's bytes; with a relative FILE, names resolve beside FILE (a
  name like tmp/... never reaches /tmp), and a file beside FILE reads.
- A dataset whose external file root alone may read: root reads it, U
  gets EACCES (the caller's own rights on files h5fs opens for them).
- FILE given through a symlink at mount: the target is mounted.
- The owner writes, others may not: on root's allow_other mount of U's
  file U makes a group, sets an attribute and appends, O gets EACCES and
  nothing is made; on U's own fusermount3 mount U makes every change.
- Controls: -o efl_any reads an absolute external name.
Fixtures are written here with h5py."""
import hashlib
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_fuse()
T.require_h5py()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

if os.geteuid() != 0 or not shutil.which("setpriv"):
    T.skip("needs root and setpriv (an unprivileged user against root's mounts)")

U = pwd.getpwnam("nobody")
O_UID = 12345
fails = []


def bad(msg):
    print("FAIL " + msg)
    fails.append(msg)


def ok(msg):
    print("ok   " + msg)


def as_user(uid, gid, argv, data=None):
    return subprocess.run(["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid, "--clear-groups"] + argv,
                          input=data, capture_output=True, timeout=30)


def as_u(argv, data=None):
    return as_user(U.pw_uid, U.pw_gid, argv, data)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def make_file(path, owner, n=1024, uid=None):
    """A FILE whose root attribute owner says whose it is; uid: chowned
    to that user (and the group of U's, or the same number)."""
    with h5py.File(path, "w") as f:
        f.attrs["owner"] = owner
        f.create_dataset("app", data=np.full(10, 7 if owner == "root" else 1, dtype="i4"), maxshape=(None,),
                         chunks=(16,))
        f.create_dataset("fixed", data=np.full(n, 9 if owner == "root" else 2, dtype="i4"))
    if uid is not None:
        os.chown(path, uid, U.pw_gid if uid == U.pw_uid else uid)


def u_folder(path):
    """An empty folder of U's (made anew)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    os.chown(path, U.pw_uid, U.pw_gid)


def make_efl(path, names, size=64):
    with h5py.File(path, "w") as f:
        for ds, name in names.items():
            f.create_dataset(ds, shape=(size,), dtype="u1", external=[(name, 0, size)])


def owner_attr(mnt, who):
    r = as_user(who[0], who[1], ["getfattr", "--only-values", "-n", "user.owner", mnt])
    return r.stdout.decode(errors="replace").strip() if r.returncode == 0 else "rc%d" % r.returncode


def wait_log(m, text, seconds=10):
    return T.wait_until(lambda: text in m.output(), seconds)


def swap_tests(base):
    """FILE replaced after mount: symlinks and hard links not followed."""
    u = os.path.join(base, "u")
    root644 = os.path.join(base, "root644.h5")
    root600 = os.path.join(base, "root600.h5")
    make_file(root644, "root")
    os.chmod(root644, 0o644)
    make_file(root600, "root")
    os.chmod(root600, 0o600)
    mnt = os.path.join(base, "mnt")
    for allow in (True, False):
        for kind in ("symlink", "hardlink"):
            label = "%s swapped in, rw%s" % (kind, " allow_other" if allow else "")
            u_folder(u)
            f = os.path.join(u, "f.h5")
            make_file(f, "u", uid=U.pw_uid)
            before = sha(root644)
            held = os.path.join(base, "held.h5")     # U's inode, kept to look at after
            if os.path.exists(held):
                os.unlink(held)
            os.link(f, held)
            opts = ["-o", "allow_other"] if allow else []
            with T.Mount(f, mnt, opts=opts) as m:
                if kind == "symlink":
                    r = as_u(["sh", "-c", "cd %s && ln -s ../root644.h5 f.tmp && mv -f f.tmp f.h5" % u])
                else:
                    # (a hard link U could make where protected_hardlinks is off)
                    os.link(root644, os.path.join(u, "f.tmp"))
                    r = as_u(["mv", "-f", os.path.join(u, "f.tmp"), f])
                if r.returncode != 0:
                    bad("%s: the swap failed: %s" % (label, r.stderr))
                    continue
                if not wait_log(m, "not followed"):
                    bad("%s: no log line saying the new FILE is not followed: %s" % (label, m.output()[-500:]))
                who = (U.pw_uid, U.pw_gid) if allow else (0, 0)
                got = owner_attr(mnt, who)
                if got != "u":
                    bad("%s: the mount shows owner=%r after the swap (root's file?)" % (label, got))
                w = as_user(who[0], who[1], ["sh", "-c", "head -c 8 /dev/zero >> %s/app" % mnt])
                d = as_user(who[0], who[1], ["dd", "if=/dev/zero", "of=%s/fixed" % mnt, "bs=64", "count=1",
                                            "conv=notrunc,fsync", "status=none"])
            with h5py.File(held, "r") as h:
                rows = h["app"].shape[0]
            if sha(root644) != before:
                bad("%s: root's 0644 file was changed through the mount" % label)
            elif w.returncode != 0 or rows != 12:
                bad("%s: the append did not reach the file that was mounted (rc %d, %d rows)" % (
                    label, w.returncode, rows))
            else:
                ok("%s: root's file untouched (append rc %d %r, dd rc %d %r), U's file still shown" % (
                    label, w.returncode, w.stderr[-80:], d.returncode, d.stderr[-80:]))
    # -o ro: root's 0600 file swapped in is never read
    u_folder(u)
    f = os.path.join(u, "f.h5")
    make_file(f, "u", uid=U.pw_uid)
    with T.Mount(f, mnt, opts=["-o", "ro,allow_other"]) as m:
        as_u(["sh", "-c", "cd %s && ln -s ../root600.h5 f.tmp && mv -f f.tmp f.h5" % u])
        wait_log(m, "not followed")
        r = as_u(["cat", os.path.join(mnt, "fixed")])
        want = np.full(1024, 2, dtype="i4").tobytes()
        if r.stdout != want or owner_attr(mnt, (U.pw_uid, U.pw_gid)) != "u":
            bad("ro: root's 0600 file swapped in was read (%d bytes, rc %d)" % (len(r.stdout), r.returncode))
        else:
            ok("ro allow_other: root's 0600 file swapped in is not read; U's file still shown")
    # control: a regular file of U's renamed over FILE is followed
    g = os.path.join(u, "g.h5")
    os.unlink(f)
    make_file(f, "u", uid=U.pw_uid)
    with T.Mount(f, mnt, opts=["-o", "ro,allow_other"]) as m:
        os.unlink(f)
        make_file(g, "u2", uid=U.pw_uid)
        as_u(["mv", "-f", g, f])
        if not T.wait_until(lambda: owner_attr(mnt, (U.pw_uid, U.pw_gid)) == "u2", 10):
            bad("control: U's own file renamed over FILE is not followed (%r)" % owner_attr(mnt, (0, 0)))
        else:
            ok("control: U's own regular file renamed over FILE is followed")
    # control: another user's regular file renamed over FILE is not
    os.unlink(f)
    make_file(f, "u", uid=U.pw_uid)
    with T.Mount(f, mnt, opts=["-o", "ro"]) as m:
        make_file(g, "other", uid=O_UID)
        os.rename(g, f)
        wait_log(m, "another user's file")
        if owner_attr(mnt, (0, 0)) != "u":
            bad("another user's file renamed over FILE was followed")
        else:
            ok("another user's regular file renamed over FILE is not followed")


def efl_tests(base):
    """External storage through symlinks, names resolved beside FILE."""
    d = os.path.join(base, "e")
    os.makedirs(d)
    secret_dir = os.path.join(base, "secret")
    os.makedirs(secret_dir, mode=0o700)
    secret = os.path.join(secret_dir, "shadow")
    with open(secret, "wb") as f:
        f.write(b"S" * 64)
    os.chmod(secret, 0o600)
    with open(os.path.join(d, "ok.bin"), "wb") as f:
        f.write(b"k" * 64)
    os.symlink(secret, os.path.join(d, "shadow.bin"))
    os.symlink(secret_dir, os.path.join(d, "sub"))
    # a name that resolved against the daemon's cwd (/) before: base
    # without its leading '/'
    rel_escape = os.path.join(secret_dir, "shadow").lstrip("/")
    h5 = os.path.join(d, "efl.h5")
    make_efl(h5, {"shadow": "shadow.bin", "mid": "sub/shadow", "okd": "ok.bin", "rel": rel_escape})
    os.chown(d, U.pw_uid, U.pw_gid)
    mnt = os.path.join(base, "mnt")
    for label, cwd, name, allow in (("absolute FILE", None, h5, True), ("relative FILE", d, "efl.h5", True),
                                    ("absolute FILE, root reading, no allow_other", None, h5, False),
                                    ("relative FILE, root reading, no allow_other", d, "efl.h5", False)):
        reader = as_u if allow else (lambda argv: subprocess.run(argv, capture_output=True, timeout=30))
        with T.Mount(name, mnt, opts=["-o", "ro,allow_other" if allow else "ro"], cwd=cwd):
            for ds in ("shadow", "mid", "rel"):
                r = reader(["head", "-c", "64", os.path.join(mnt, ds)])
                if b"S" in r.stdout:
                    bad("%s: U read the root-only file through external name %s" % (label, ds))
                elif r.returncode == 0:
                    bad("%s: %s read without error (%r)" % (label, ds, r.stdout[:16]))
                else:
                    ok("%s: external %s refused (%s)" % (label, ds, r.stderr.decode().strip()[-40:]))
            r = reader(["cat", os.path.join(mnt, "okd")])
            if r.stdout != b"k" * 64:
                bad("%s: the external file beside FILE does not read (%r)" % (label, r.stderr))
            else:
                ok("%s: the external file beside FILE reads" % label)
    # -o efl_any: the explicit opt-out still reads an absolute name
    pub = os.path.join(base, "pub.bin")
    with open(pub, "wb") as f:
        f.write(b"p" * 64)
    os.chmod(pub, 0o644)
    h5b = os.path.join(d, "abs.h5")
    make_efl(h5b, {"pub": pub})
    with T.Mount(h5b, mnt, opts=["-o", "ro,efl_any"]):
        try:
            with open(os.path.join(mnt, "pub"), "rb") as f:
                got = f.read()
        except OSError as e:
            got = str(e).encode()
        if got != b"p" * 64:
            bad("-o efl_any: the absolute external name does not read (%r)" % got[:40])
        else:
            ok("-o efl_any: an absolute external name reads")
    # the caller's own rights: a root-only external file beside root's FILE
    r2 = os.path.join(base, "r2")
    os.makedirs(r2)
    with open(os.path.join(r2, "priv.bin"), "wb") as f:
        f.write(b"P" * 64)
    os.chmod(os.path.join(r2, "priv.bin"), 0o600)
    h5c = os.path.join(r2, "pub.h5")
    make_efl(h5c, {"priv": "priv.bin"})
    os.chmod(h5c, 0o644)
    with T.Mount(h5c, mnt, opts=["-o", "ro,allow_other"]) as m:
        r = as_u(["cat", os.path.join(mnt, "priv")])
        if r.returncode == 0 or b"P" in r.stdout or b"Permission denied" not in r.stderr:
            bad("U read root's 0600 external file through the mount (rc %d %r)" % (r.returncode, r.stderr))
        else:
            ok("a root-only external file: U gets EACCES")
        with open(os.path.join(mnt, "priv"), "rb") as f:
            if f.read() != b"P" * 64:
                bad("root cannot read its own external file")
            else:
                ok("root reads its own root-only external file")
        if "may not read" not in m.output():
            bad("no log line for the refused open")
    # a supplementary group of the caller's that may read it: allowed
    os.chown(os.path.join(r2, "priv.bin"), 0, O_UID)
    os.chmod(os.path.join(r2, "priv.bin"), 0o640)
    with T.Mount(h5c, mnt, opts=["-o", "ro,allow_other"]):
        g = subprocess.run(["setpriv", "--reuid=%d" % U.pw_uid, "--regid=%d" % U.pw_gid, "--groups=%d" % O_UID,
                            "cat", os.path.join(mnt, "priv")], capture_output=True, timeout=30)
        n = as_u(["cat", os.path.join(mnt, "priv")])
        if g.stdout != b"P" * 64 or n.returncode == 0:
            bad("group rights on an external file: with the group rc %d, without rc %d" % (
                g.returncode, n.returncode))
        else:
            ok("an external file of a group U is in (supplementary): U reads it; without the group EACCES")


def rename_race(base):
    """U swaps a symlink to root's 0600 file and files of U's own over FILE
    as fast as it can while U reads through an allow_other -o ro mount:
    every read is one of U's files, never root's."""
    u = os.path.join(base, "race")
    u_folder(u)
    f = os.path.join(u, "f.h5")
    for n in ("f.h5", "a.h5", "b.h5"):
        make_file(os.path.join(u, n), "u", uid=U.pw_uid)
    root600 = os.path.join(base, "root600.h5")
    mnt = os.path.join(base, "mnt")
    script = ("cd %s; i=0; while [ $i -lt 100 ]; do ln -sf ../root600.h5 s.tmp; mv -f s.tmp f.h5; "
              "cp -p a.h5 c.tmp; mv -f c.tmp f.h5; i=$((i+1)); done" % u)
    with T.Mount(f, mnt, opts=["-o", "ro,allow_other"]):
        swapper = subprocess.Popen(["setpriv", "--reuid=%d" % U.pw_uid, "--regid=%d" % U.pw_gid,
                                    "--clear-groups", "sh", "-c", script],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        reads = leaked = 0
        try:
            while swapper.poll() is None and reads < 400:
                r = as_u(["cat", os.path.join(mnt, "fixed")])
                reads += 1
                if np.frombuffer(r.stdout[:len(r.stdout) // 4 * 4], dtype="i4").tolist().count(9):
                    leaked += 1
        finally:
            T.stop_process(swapper)
    if not os.path.exists(root600):
        bad("rename race: root's file missing")
    elif leaked:
        bad("rename race: %d of %d reads returned root's bytes" % (leaked, reads))
    else:
        ok("rename race: %d reads while FILE was swapped 200 times, none of root's bytes" % reads)


def vds_test(base):
    """A virtual dataset whose source name is a symlink to a root-only file."""
    d = os.path.join(base, "v")
    os.makedirs(d)
    secret = os.path.join(base, "secret", "src.h5")
    with h5py.File(secret, "w") as f:
        f.create_dataset("data", data=np.full(16, 99, dtype="i4"))
    os.chmod(secret, 0o600)
    os.symlink(secret, os.path.join(d, "src.h5"))
    layout = h5py.VirtualLayout(shape=(16,), dtype="i4")
    layout[:] = h5py.VirtualSource("src.h5", "data", shape=(16,))
    h5 = os.path.join(d, "vds.h5")
    with h5py.File(h5, "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=-1)
    # and a root-only source inside the tree: root reads it, U gets EACCES
    inside = os.path.join(d, "priv.h5")
    with h5py.File(inside, "w") as f:
        f.create_dataset("data", data=np.full(16, 77, dtype="i4"))
    os.chmod(inside, 0o600)
    layout = h5py.VirtualLayout(shape=(16,), dtype="i4")
    layout[:] = h5py.VirtualSource("priv.h5", "data", shape=(16,))
    h5p = os.path.join(d, "vpriv.h5")
    with h5py.File(h5p, "w") as f:
        f.create_virtual_dataset("v", layout, fillvalue=-1)
    mnt = os.path.join(base, "mnt")
    with T.Mount(h5, mnt, opts=["-o", "ro,allow_other"]):
        r = as_u(["cat", os.path.join(mnt, "v")])
        if 99 in np.frombuffer(r.stdout[:len(r.stdout) // 4 * 4], dtype="i4").tolist():
            bad("VDS: the root-only source behind a symlink was read")
        else:
            ok("VDS: a source behind a symlink out of the tree is not read (rc %d)" % r.returncode)
    with T.Mount(h5p, mnt, opts=["-o", "ro,allow_other"]):
        r = as_u(["cat", os.path.join(mnt, "v")])
        with open(os.path.join(mnt, "v"), "rb") as f:
            mine = f.read()
        if r.returncode == 0 or b"Permission denied" not in r.stderr:
            bad("VDS: U read a root-only source (rc %d)" % r.returncode)
        elif mine != np.full(16, 77, dtype="i4").tobytes():
            bad("VDS: root cannot read its own root-only source")
        else:
            ok("VDS: a root-only source: U gets EACCES, root reads it")


def extlink_test(base):
    """Objects of a file an external link leads to show that file's owner
    and read bits: U sees nothing of a root-only target, all of a 0644 one."""
    d = os.path.join(base, "x")
    os.makedirs(d)
    for name, mode in (("priv.h5", 0o600), ("pub.h5", 0o644)):
        with h5py.File(os.path.join(d, name), "w") as f:
            g = f.create_group("g")
            g.attrs["who"] = name
            g.create_dataset("data", data=np.full(8, 5, dtype="i4"))
        os.chmod(os.path.join(d, name), mode)
    h5 = os.path.join(d, "top.h5")
    with h5py.File(h5, "w") as f:
        f["priv"] = h5py.ExternalLink("priv.h5", "/g")
        f["pub"] = h5py.ExternalLink("pub.h5", "/g")
    os.chmod(h5, 0o644)
    mnt = os.path.join(base, "mnt")
    with T.Mount(h5, mnt, opts=["-o", "ro,allow_other"]):
        ls = as_u(["ls", os.path.join(mnt, "priv")])
        ga = as_u(["getfattr", "-n", "user.who", os.path.join(mnt, "priv")])
        cat = as_u(["cat", os.path.join(mnt, "priv", "data")])
        if ls.returncode == 0 or ga.returncode == 0 or cat.returncode == 0 or b"priv.h5" in ga.stdout:
            bad("external link to a root-only file: U listed (%d), read an attribute (%d) or data (%d)" % (
                ls.returncode, ga.returncode, cat.returncode))
        else:
            ok("external link to a root-only file: U can neither list it, read its attributes nor its data")
        ls = as_u(["ls", os.path.join(mnt, "pub")])
        cat = as_u(["cat", os.path.join(mnt, "pub", "data")])
        if ls.returncode or cat.stdout != np.full(8, 5, dtype="i4").tobytes():
            bad("external link to a 0644 file: U cannot read it (%r)" % (ls.stderr + cat.stderr))
        else:
            ok("external link to a 0644 file: U reads it")
        if sorted(os.listdir(os.path.join(mnt, "priv"))) != ["data"]:
            bad("root cannot list its own linked file")


def symlink_file_test(base):
    d = os.path.join(base, "s")
    os.makedirs(d)
    real = os.path.join(d, "real.h5")
    make_file(real, "real")
    link = os.path.join(base, "link.h5")
    os.symlink(real, link)
    mnt = os.path.join(base, "mnt")
    with T.Mount(link, mnt, opts=["-o", "ro"]):
        if owner_attr(mnt, (0, 0)) != "real":
            bad("FILE given through a symlink: its target is not what is mounted")
        else:
            ok("FILE given through a symlink at mount: the target is mounted")


def owner_writes(base):
    """Root's allow_other mount of U's file: U changes it, O may not."""
    u = os.path.join(base, "w")
    u_folder(u)
    f = os.path.join(u, "f.h5")
    make_file(f, "u", uid=U.pw_uid)
    os.chmod(f, 0o644)
    mnt = os.path.join(base, "mnt")
    with T.Mount(f, mnt, opts=["-o", "allow_other"]):
        r = as_u(["mkdir", os.path.join(mnt, "byowner")])
        a = as_u(["sh", "-c", "head -c 8 /dev/zero >> %s/app" % mnt])
        x = as_u(["setfattr", "-n", "user.note", "-v", "hi", mnt])
        o1 = as_user(O_UID, O_UID, ["mkdir", os.path.join(mnt, "byother")])
        o2 = as_user(O_UID, O_UID, ["sh", "-c", "head -c 8 /dev/zero >> %s/app" % mnt])
        o3 = as_user(O_UID, O_UID, ["setfattr", "-n", "user.other", "-v", "no", mnt])
    with h5py.File(f, "r") as h:
        names = set(h.keys())
        n_app = h["app"].shape[0]
        note = h.attrs.get("note")
        other = h.attrs.get("other")
    if r.returncode or "byowner" not in names:
        bad("the owner could not make a group (%r)" % r.stderr)
    elif a.returncode or n_app != 12:
        bad("the owner's append: rc %d, %d rows" % (a.returncode, n_app))
    elif x.returncode or note is None:
        bad("the owner's setfattr on the root group: %r" % x.stderr)
    else:
        ok("the owner makes a group, appends and sets an attribute through root's allow_other mount")
    if any(p.returncode == 0 for p in (o1, o2, o3)) or "byother" in names or other is not None:
        bad("another user changed FILE (mkdir %d, append %d, setfattr %d)" % (
            o1.returncode, o2.returncode, o3.returncode))
    elif not all(b"Permission denied" in p.stderr for p in (o1, o2, o3)):
        bad("another user was refused but not with EACCES: %r" % [p.stderr for p in (o1, o2, o3)])
    else:
        ok("another user gets EACCES for mkdir, append and setfattr; nothing made")


def user_mount(base):
    """U's own mount (fusermount3) of U's file: U makes every change. This
    machine's /dev/fuse may be root's alone (containers): it is opened to
    others, as Debian has it (0666), for this test and given back after."""
    u = os.path.join(base, "um")
    u_folder(u)
    f = os.path.join(u, "f.h5")
    make_file(f, "u", uid=U.pw_uid)
    mnt = os.path.join(u, "mnt")
    u_folder(mnt)
    # the daemon where U may run it (the build tree may be private)
    daemon = os.path.join(base, "h5fs")
    shutil.copy(T.H5FS, daemon)
    os.chmod(daemon, 0o755)
    was = os.stat("/dev/fuse").st_mode & 0o777
    proc = None
    try:
        os.chmod("/dev/fuse", was | 0o666)
        proc = subprocess.Popen(["setpriv", "--reuid=%d" % U.pw_uid, "--regid=%d" % U.pw_gid, "--clear-groups",
                                 daemon, "-f", f, mnt], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if not T.wait_until(lambda: T.is_mounted(mnt), 10):
            bad("U's own mount did not appear: %r" % (proc.stdout.read1() if proc.poll() is not None else ""))
            return
        r = as_u(["sh", "-c", "mkdir %s/g && setfattr -n user.x -v 1 %s && head -c 8 /dev/zero >> %s/app" % (
            mnt, mnt, mnt)])
        as_u(["fusermount3", "-u", mnt])
        proc.wait(timeout=10)
        with h5py.File(f, "r") as h:
            done = "g" in h and h.attrs.get("x") is not None and h["app"].shape[0] == 12
        if r.returncode or not done:
            bad("U's own mount: mkdir, setfattr and an append (rc %d %r)" % (r.returncode, r.stderr))
        else:
            ok("U's own fusermount3 mount: U makes a group, sets an attribute, appends")
    finally:
        os.chmod("/dev/fuse", was)
        if proc is not None and proc.poll() is None:
            subprocess.run(["fusermount3", "-uz", mnt], capture_output=True, timeout=10)
            T.stop_process(proc)


def main():
    base = tempfile.mkdtemp(prefix="h5fs-sec-")
    try:
        os.chmod(base, 0o755)
        swap_tests(base)
        efl_tests(base)
        symlink_file_test(base)
        extlink_test(base)
        rename_race(base)
        vds_test(base)
        owner_writes(base)
        user_mount(base)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if fails:
        print("%d failure(s)" % len(fails))
        sys.exit(1)


if __name__ == "__main__":
    main()
