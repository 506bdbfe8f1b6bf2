#!/usr/bin/python3
"""Issue 33, item 4, as a new user meets it in a container (no syslog):
where do the reasons for EIO go?

A file whose chunked dataset has a corrupt chunk B-tree is mounted:
- as a daemon with -o logfile=PATH: reading the dataset gives EIO, and
  PATH holds a line naming the dataset, EIO and why (with the time and
  the daemon's pid); the healthy dataset beside it reads right;
- as a daemon without a logfile where there is no /dev/log (issue 83
  item 5): its messages go to ${XDG_STATE_HOME:-~/.local/state}/h5fs/
  NAME-HASH.log, one file per FILE, which h5fs names on stderr before
  detaching, once per FILE until reboot (a second mount with the same
  $XDG_RUNTIME_DIR says nothing, another FILE names its own file); the
  EIO's reason is in it; past H5FS_LOG_MAX bytes it becomes .log.1 (one
  old file kept); with no state directory at all the messages are said
  to be lost, naming -f and -o logfile (skipped on a machine with
  syslog);
- in the foreground (-f) with -o logfile: the line is on stderr and in
  PATH;
- -o logfile naming a file that cannot be opened: exit status 2, one line.
"""
import errno
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def make(path):
    good = np.arange(1000, dtype="<f8")
    with h5py.File(path, "w", libver="earliest") as f:
        f["good"] = good
        f.create_dataset("chunked", data=np.arange(20000, dtype="<i4"), chunks=(500,))
    data = bytearray(open(path, "rb").read())
    # the chunk B-tree (version 1, node type 1: II.A.B-trees) loses its signature
    hits = [m.start() for m in re.finditer(b"TREE", data) if data[m.start() + 4] == 1]
    if len(hits) != 1:
        raise SystemExit("expected one chunk B-tree, found %d" % len(hits))
    data[hits[0]:hits[0] + 4] = b"XXXX"
    open(path, "wb").write(bytes(data))
    return good.tobytes()


def read_errno(path):
    try:
        with open(path, "rb") as fh:
            fh.read()
        return 0
    except OSError as e:
        return e.errno


def daemon_mount(h5, mnt, opts, env=None):
    """h5fs as a daemon (no -f): (exit status, stderr) of the launcher."""
    r = subprocess.run([T.H5FS] + opts + [h5, mnt], capture_output=True, timeout=30, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, **(env or {})))
    return r.returncode, r.stderr.decode()


def daemon_unmount(mnt, pid):
    subprocess.run(["fusermount3", "-u", mnt], timeout=10, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if T.is_mounted(mnt):
        subprocess.run(["fusermount3", "-uz", mnt], timeout=10)
    deadline = time.monotonic() + 10
    while pid and time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        time.sleep(0.05)
    if pid:
        os.kill(pid, signal.SIGKILL)
        T.fail("daemon %d did not exit after unmount" % pid)


def no_syslog(wd, h5, mnt):
    # said once per FILE until reboot: a marker in $XDG_RUNTIME_DIR
    run = os.path.join(wd, "run")
    state = os.path.join(wd, "state")
    os.makedirs(run, mode=0o700, exist_ok=True)
    env = {"XDG_RUNTIME_DIR": run, "XDG_STATE_HOME": state, "H5FS_LOG_MAX": "4096"}
    rc, err = daemon_mount(h5, mnt, ["-o", "ro"], env)
    m = re.search(r" go to (/\S+\.log) ", err)
    path = m.group(1) if m else None
    pid = None
    try:
        if rc != 0 or not path or not path.startswith(os.path.join(state, "h5fs") + "/") or \
                "bad_btree.h5" not in os.path.basename(path):
            T.fail("daemon without syslog: exit %d, stderr %r (no state file named)" % (rc, err))
            return
        print("ok   daemon without syslog: %s" % err.strip())
        # a reason where the notice said: EIO, then enough lines to rotate
        for _ in range(40):
            read_errno(os.path.join(mnt, "chunked"))
        lines = open(path).read().splitlines()
        old = path + ".1"
        m = re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d h5fs\[(\d+)\]: ", lines[0]) if lines else None
        pid = int(m.group(1)) if m else None
        if not any("EIO" in ln and "/chunked" in ln for ln in lines):
            T.fail("state log %s: no EIO line naming /chunked: %r" % (path, lines[:3]))
        elif not os.path.exists(old) or os.path.getsize(path) > 4096 or os.path.getsize(old) > 4096:
            T.fail("state log not rotated at H5FS_LOG_MAX=4096: %s %d bytes, %s %s" %
                   (path, os.path.getsize(path), old, os.path.exists(old) and os.path.getsize(old)))
        elif os.path.exists(old + ".1") or len(os.listdir(os.path.dirname(path))) != 2:
            T.fail("more than one old state log: %r" % os.listdir(os.path.dirname(path)))
        else:
            print("ok   the reasons in %s (%d bytes) and %s (%d bytes): bounded, one old file kept" %
                  (os.path.basename(path), os.path.getsize(path), os.path.basename(old), os.path.getsize(old)))
    finally:
        daemon_unmount(mnt, pid)
    rc, err = daemon_mount(h5, mnt, ["-o", "ro"], env)
    daemon_unmount(mnt, None)
    if rc != 0 or err.strip():
        T.fail("daemon without syslog, mounted again: exit %d, stderr %r (said once)" % (rc, err))
    else:
        print("ok   daemon without syslog, mounted again: nothing said")
    # another FILE: a file of its own, named
    h5b = os.path.join(wd, "other.h5")
    shutil.copy(h5, h5b)
    rc, err = daemon_mount(h5b, mnt, ["-o", "ro"], env)
    daemon_unmount(mnt, None)
    if rc != 0 or "other.h5-" not in err or path in err:
        T.fail("another FILE: exit %d, stderr %r (its own file)" % (rc, err))
    else:
        print("ok   another FILE: its own log file named")
    # no state directory to be had (no HOME, no XDG_STATE_HOME): said lost
    env2 = dict(os.environ, XDG_RUNTIME_DIR=os.path.join(wd, "run2"))
    os.makedirs(env2["XDG_RUNTIME_DIR"], mode=0o700, exist_ok=True)
    env2.pop("XDG_STATE_HOME", None)
    env2.pop("HOME", None)
    r = subprocess.run([T.H5FS, "-o", "ro", h5, mnt], capture_output=True, timeout=30, stdin=subprocess.DEVNULL,
                       env=env2)
    daemon_unmount(mnt, None)
    err = r.stderr.decode()
    if r.returncode != 0 or "lost" not in err or "logfile" not in err:
        T.fail("no state directory: exit %d, stderr %r" % (r.returncode, err))
    else:
        print("ok   no state directory: %s" % err.strip()[:120])


def main():
    wd = T.workdir("logfile")
    h5 = os.path.join(wd, "bad_btree.h5")
    mnt = os.path.join(wd, "mnt")
    os.makedirs(mnt)
    good = make(h5)
    log = os.path.join(wd, "h5fs.log")

    # 1. a daemon with -o logfile
    rc, err = daemon_mount(h5, mnt, ["-o", "ro,logfile=" + log])
    pid = None
    try:
        if rc != 0 or not T.is_mounted(mnt):
            T.fail("daemon with -o logfile: exit %d, %r" % (rc, err))
            return T.finish()
        e = read_errno(os.path.join(mnt, "chunked"))
        if e != errno.EIO:
            T.fail("reading the dataset with a corrupt chunk B-tree: errno %r, expected EIO" % e)
        with open(os.path.join(mnt, "good"), "rb") as fh:
            if fh.read() != good:
                T.fail("the healthy dataset read wrong")
        lines = open(log).read().splitlines()
        eio = [ln for ln in lines if "EIO" in ln]
        m = re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d h5fs\[(\d+)\]: ", eio[0]) if eio else None
        # (the kernel may ask for the pages twice: a line per failed request)
        if not eio or any("/chunked" not in ln for ln in eio) or not m:
            T.fail("logfile: expected timed EIO lines naming /chunked, got %r" % lines)
        else:
            pid = int(m.group(1))
            print("ok   daemon -o logfile: %s" % eio[0][:150])
    finally:
        daemon_unmount(mnt, pid)

    # 2. a daemon without syslog or logfile: its messages go to a file of
    # the user's state directory (one per FILE, bounded), which the one
    # notice before detaching names (issue 83 item 5)
    if os.path.exists("/dev/log") and stat.S_ISSOCK(os.stat("/dev/log").st_mode):
        print("SKIP a daemon without syslog: this machine has /dev/log")
    else:
        no_syslog(wd, h5, mnt)

    # 3. foreground with -o logfile: both
    os.unlink(log)
    with T.Mount(h5, mnt, ["-o", "ro,logfile=" + log]) as m:
        with m.watchdog(30):
            read_errno(os.path.join(mnt, "chunked"))
    in_file = [ln for ln in open(log).read().splitlines() if "EIO" in ln]
    on_err = [ln for ln in m.output().splitlines() if "EIO" in ln]
    if not in_file or len(on_err) != len(in_file) or not on_err[0].startswith("h5fs: "):
        T.fail("-f -o logfile: file %r, stderr %r" % (in_file, on_err))
    else:
        print("ok   -f -o logfile: the line on stderr and in the file")

    # 4. a logfile that cannot be opened
    rc, err = daemon_mount(h5, mnt, ["-o", "logfile=" + os.path.join(wd, "no", "such", "dir", "x.log")])
    if T.is_mounted(mnt):
        daemon_unmount(mnt, None)
        T.fail("mounted with an unopenable logfile")
    lines = [x for x in err.splitlines() if x.strip()]
    if rc != 2 or len(lines) != 1 or "logfile" not in lines[0]:
        T.fail("unopenable logfile: exit %d, %r" % (rc, err))
    else:
        print("ok   unopenable logfile: exit 2, %s" % lines[0])
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
