#!/usr/bin/python3
"""Two read-write mounts of one collection show the same modes (issue 35):
the first mount opens the members read-write (their datasets
owner-writable, 644: the growable one appends, both take bytes written in
place) and holds them; a second mount of the same DIR then opens them
read-only (another process holds them) and must still show 644, not 444 - what a mount shows never depends on which mount holds
the lock. Also a third mount sharing the first one's index.
A member's owner who is not root writes into the member's root group as
in a single-file mount (issue 63): the member's directory shows its
write bits (drwxr-xr-x for a 0644 file), mkdir there and in a group
succeed as that user (setpriv, -o allow_other; root only)."""
import os
import pwd
import shutil
import stat
import subprocess
import tempfile
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def make(top):
    os.makedirs(os.path.join(top, "sub"))
    for i, rel in enumerate(("a.h5", "sub/b.h5")):
        with h5py.File(os.path.join(top, rel), "w", libver="latest") as f:
            f.create_dataset("grow", data=np.arange(10, dtype="<i4"), maxshape=(None,), chunks=(4,))
            f.create_dataset("fixed", data=np.arange(5, dtype="<f8"))
            f.attrs["i"] = i
        os.chmod(os.path.join(top, rel), 0o644)


def modes(mnt):
    out = {}
    for d, dirs, files in os.walk(mnt):
        for n in dirs + files:
            p = os.path.join(d, n)
            out[os.path.relpath(p, mnt)] = stat.S_IMODE(os.lstat(p).st_mode)
    return out


def member_owner():
    """mkdir into a member's root as its owner (nobody), not root."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        print("skip the member owner: not root, or no setpriv")
        return
    nb = pwd.getpwnam("nobody")
    base = tempfile.mkdtemp(prefix="h5fs-collown-")     # reachable by nobody
    try:
        os.chmod(base, 0o755)
        top = os.path.join(base, "coll")
        os.makedirs(top)
        p = os.path.join(top, "plain.h5")
        with h5py.File(p, "w") as f:
            f.create_group("g")
        os.chown(p, nb.pw_uid, nb.pw_gid)
        os.chmod(p, 0o644)
        os.chmod(top, 0o755)
        mnt = os.path.join(base, "mnt")
        with T.Mount(top, mnt, ["-o", "allow_other,noindex"]) as m:
            mode = stat.S_IMODE(os.stat(os.path.join(mnt, "plain.h5")).st_mode)
            if mode != 0o755:
                T.fail("member owner: plain.h5 shows %o (want 755, as a single FILE's root)" % mode)
            for d in ("plain.h5/g2", "plain.h5/g/sub"):
                r = subprocess.run(["setpriv", "--reuid=%d" % nb.pw_uid, "--regid=%d" % nb.pw_gid,
                                    "--clear-groups", "mkdir", os.path.join(mnt, d)], capture_output=True,
                                   timeout=30)
                if r.returncode != 0:
                    T.fail("member owner: mkdir %s as its owner: %s" % (d, r.stderr.decode().strip()))
            r = subprocess.run(["setpriv", "--reuid=1", "--regid=1", "--clear-groups", "mkdir",
                                os.path.join(mnt, "plain.h5/g3")], capture_output=True, timeout=30)
            if r.returncode == 0:
                T.fail("member owner: another user made plain.h5/g3")
        with h5py.File(p, "r") as f:
            if "g2" not in f or "sub" not in f["g"] or "g3" in f:
                T.fail("member owner: the file holds %r" % list(f))
            else:
                print("ok   member owner (nobody) mkdir'd plain.h5/g2 and plain.h5/g/sub; others refused")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main():
    wd = T.workdir("coll_modes")
    top = os.path.join(wd, "coll")
    make(top)
    ix = os.path.join(wd, "index.sqlite")
    with T.Mount(top, os.path.join(wd, "m1"), ["-o", "index=" + ix]) as m1:
        first = modes(m1.mnt)
        if first.get("a.h5/grow") != 0o644 or first.get("a.h5/fixed") != 0o644:
            T.fail("first mount: grow %o, fixed %o (want 644, 644)" % (
                first.get("a.h5/grow", 0), first.get("a.h5/fixed", 0)))
        # the members stay open (and locked) in m1 while these walk
        with T.Mount(top, os.path.join(wd, "m2"), ["-o", "noindex"]) as m2:
            second = modes(m2.mnt)
        with T.Mount(top, os.path.join(wd, "m3"), ["-o", "index=" + ix]) as m3:
            third = modes(m3.mnt)
        with T.Mount(top, os.path.join(wd, "m4"), ["-o", "index=" + os.path.join(wd, "other.sqlite")]) as m4:
            fourth = modes(m4.mnt)
    for label, got in (("noindex mount", second), ("mount on the same index", third),
                       ("mount with its own index", fourth)):
        diff = sorted(k for k in set(first) | set(got) if first.get(k) != got.get(k))
        if diff:
            T.fail("%s: modes differ from the first mount's: %s" % (
                label, ", ".join("%s %o/%o" % (k, first.get(k, 0), got.get(k, 0)) for k in diff[:4])))
    member_owner()
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
