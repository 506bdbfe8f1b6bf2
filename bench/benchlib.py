"""Helpers the bench scripts share (run by hand, never in CI): printing,
mount detection, a foreground daemon mounted for the length of a block,
and dropping the page cache. Imported from the bench folder, which is
Python's first path entry when a script there runs."""
import os
import subprocess
import time


def say(msg=""):
    print(msg, flush=True)


def is_mounted(mnt):
    mnt = os.path.realpath(mnt)
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == mnt for line in f)


def fsync_path(p):
    """fsync(2) of a file or directory by its path (a directory through a
    mount: its pending names made durable), the reference's and h5fs's
    sides alike."""
    fd = os.open(p, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def drop_caches():
    """Empty the page cache; False when it could not (not root)."""
    if os.geteuid() != 0:
        return False
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        return False
    return True


class Mount:
    """`cmd`, a FUSE daemon running in the foreground (h5fs -f or a floor
    program) that mounts on `mnt`, its output appended to `log`. Up once
    the mount appears (polled every `poll` s, at most `timeout` s: else
    RuntimeError); close() unmounts and waits at most `close_timeout` s
    for the daemon to end before killing it."""

    def __init__(self, cmd, mnt, log, timeout=30, poll=0.002, close_timeout=60):
        self.mnt = mnt
        self.close_timeout = close_timeout
        os.makedirs(mnt, exist_ok=True)
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + timeout
        while not is_mounted(mnt):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("%s did not mount (see %s)" % (os.path.basename(cmd[0]), log))
            time.sleep(poll)

    def close(self):
        if is_mounted(self.mnt):
            subprocess.run(["fusermount3", "-u", self.mnt], timeout=self.close_timeout)
        try:
            self.proc.wait(self.close_timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(self.close_timeout)
        self.log.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def time_each(op, n):
    """op(i) for i in 0..n-1, each call timed alone (perf_counter): the
    list of n durations in seconds."""
    pc = time.perf_counter
    ts = []
    for i in range(n):
        t0 = pc()
        op(i)
        ts.append(pc() - t0)
    return ts
