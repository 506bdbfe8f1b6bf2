#!/usr/bin/python3
"""The detached daemon is gone at once after any unmount, and h5fs -u
says what is no h5fs mount (issue 83 item 7).

- h5fs mounted as a daemon (no -f), read-only and read-write (a row
  appended first), unmounted by fusermount3 -u, umount (as root) and
  h5fs -u: the daemon's process (its pid from user.h5fs.pid) no longer
  exists within 0.3 s (kill(pid, 0) fails: not even a zombie - its
  parent, the h5fs-reaper waiter, reaps it; before, init reaped the
  orphan 1.3-1.9 s later); FILE is free for h5py's r+ at once; the
  waiter is not taken for a daemon (its command line is its own name);
- h5fs -u of a plain directory, a file, a missing path and a path inside
  an h5fs mount: exit 2, "is not an h5fs mount" or the path's error, and
  never errno's "No data available"; of a mount whose daemon was killed:
  unmounted, exit 1, said.
"""
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

BOUND = 0.3


def gone_after(pid, limit=10.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return time.monotonic() - t0
        time.sleep(0.002)
    return None


def reapers_of(pid):
    """processes whose parent is pid (the daemon's own children: none)"""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as fh:
                    if int(fh.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return out


def one(h5, mnt, opts, how):
    r = subprocess.run([T.H5FS] + opts + [h5, mnt], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    if r.returncode != 0 or not T.is_mounted(mnt):
        T.fail("%s: mount exit %d %s" % (how, r.returncode, r.stderr.decode()))
        return None
    pid = int(os.getxattr(mnt, "user.h5fs.pid"))
    with open("/proc/%d/stat" % pid) as fh:
        ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
    with open("/proc/%d/cmdline" % ppid, "rb") as fh:
        parent = fh.read().split(b"\0")[0]
    if parent != b"h5fs-reaper":
        T.fail("%s: the daemon's parent is %r, not its waiter" % (how, parent))
    if "rw" in opts[-1]:
        with open(os.path.join(mnt, "rows"), "ab") as fh:
            fh.write(np.arange(4, dtype="<i4").tobytes())
    else:
        os.listdir(mnt)
    cmd = {"fusermount3": ["fusermount3", "-u", mnt], "umount": ["umount", mnt], "h5fs -u": [T.H5FS, "-u", mnt]}[how]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, timeout=30)
    dt = gone_after(pid)
    total = None if dt is None else time.monotonic() - t0
    if r.returncode != 0:
        T.fail("%s: exit %d %s" % (how, r.returncode, r.stderr.decode()))
    if dt is None:
        T.fail("%s %s: the daemon %d still exists 10 s after the unmount" % (how, opts, pid))
        return None
    if not T.h5py_opens(h5, 1.0):
        T.fail("%s: h5py cannot open FILE r+ right after" % how)
    return total


def main():
    wd = T.workdir("daemon_exit")
    h5 = os.path.join(wd, "x.h5")
    mnt = os.path.join(wd, "mnt")
    os.makedirs(mnt)
    with h5py.File(h5, "w") as f:
        f.create_dataset("rows", data=np.arange(8, dtype="<i4"), maxshape=(None,), chunks=(64,))
    hows = ["fusermount3", "h5fs -u"] + (["umount"] if os.geteuid() == 0 else [])
    for opts in (["-o", "ro"], ["-o", "rw"]):
        for how in hows:
            # (the best of three: a loaded machine may hold one up)
            times = [t for t in (one(h5, mnt, opts, how) for _ in range(3)) if t is not None]
            if not times:
                continue
            if min(times) > BOUND or max(times) > 3.0:
                T.fail("%s %s: the daemon gone %s s after the unmount began (bound %.1f s)" %
                       (how, " ".join(opts), ["%.3f" % t for t in times], BOUND))
            else:
                print("ok   %-11s %s: the daemon gone %s s after the unmount began" %
                      (how, " ".join(opts), ", ".join("%.3f" % t for t in times)))
    with h5py.File(h5, "r") as f:
        if f["rows"].shape != (8 + 4 * 3 * len(hows),):
            T.fail("rows appended before the unmounts: %r" % (f["rows"].shape,))

    # h5fs -u of what is no h5fs mount
    plain = os.path.join(wd, "plain")
    os.makedirs(plain)
    cases = [(plain, "is not an h5fs mount"), (h5, "is not an h5fs mount"),
             (os.path.join(wd, "missing"), "No such file or directory")]
    with T.Mount(h5, mnt, ["-o", "ro"]):
        os.listdir(mnt)
        cases.append((os.path.join(mnt, "rows"), "inside one"))
        for path, want in cases:
            r = subprocess.run([T.H5FS, "-u", path], capture_output=True, timeout=30)
            err = r.stderr.decode()
            if r.returncode != 2 or want not in err or "No data available" in err:
                T.fail("h5fs -u %s: exit %d, %r" % (path, r.returncode, err))
            else:
                print("ok   h5fs -u %s: exit 2, %s" % (os.path.basename(path), err.strip()))
    # a mount whose daemon was killed: unmounted, exit status 1, said
    r = subprocess.run([T.H5FS, "-o", "ro", h5, mnt], capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    if r.returncode == 0 and T.is_mounted(mnt):
        pid = int(os.getxattr(mnt, "user.h5fs.pid"))
        os.kill(pid, 9)
        gone_after(pid)
        r = subprocess.run([T.H5FS, "-u", mnt], capture_output=True, timeout=30)
        err = r.stderr.decode()
        if r.returncode != 1 or T.is_mounted(mnt) or "daemon had died" not in err:
            T.fail("h5fs -u of a mount whose daemon was killed: exit %d, %r, mounted %s" %
                   (r.returncode, err, T.is_mounted(mnt)))
            subprocess.run(["fusermount3", "-u", mnt], capture_output=True, timeout=10)
        else:
            print("ok   h5fs -u of a mount whose daemon was killed: exit 1, %s" % err.strip())
    else:
        T.fail("mount for the kill: exit %d %s" % (r.returncode, r.stderr.decode()))
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
