#!/usr/bin/python3
"""Issue 33, item 5, as a new user meets it: the server everyone tries
first, `python3 -m http.server --bind 127.0.0.1`, ignores Range.

- `h5fs http://127.0.0.1:PORT/f.h5 MNT` mounts (exit 0) with one notice
  that the object was downloaded whole into a temporary file; every
  dataset then reads as h5py reads the file, and the server saw exactly
  one GET of it (nothing more once mounted);
- an object larger than -o cache_max=MiB is refused at mount (exit 3)
  with a message naming the option; a bad -o cache_max value is exit 2;
- the temporary file leaves nothing behind in $TMPDIR;
- objects show the server's Last-Modified as their mtime (issue 47: 0).
"""
import os
import re
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
T.require_curl()
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_server(root, log):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)],
                            cwd=root, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return proc, port
        except OSError:
            if proc.poll() is not None:
                T.skip("python3 -m http.server did not start")
            time.sleep(0.05)
    proc.kill()
    proc.wait(10)
    raise RuntimeError("http.server did not listen within 10 s")


def gets(log, name):
    with open(log) as fh:
        return [ln for ln in fh if re.search(r'"GET /%s HTTP' % re.escape(name), ln)]


def main():
    wd = T.workdir("norange")
    root = os.path.join(wd, "www")
    tmp = os.path.join(wd, "tmp")
    mnt = os.path.join(wd, "mnt")
    for d in (root, tmp, mnt):
        os.makedirs(d)
    small = os.path.join(root, "f.h5")
    with h5py.File(small, "w") as f:
        f["a"] = np.arange(50000, dtype="<f8")
        f.create_dataset("g/c", data=np.arange(40000, dtype="<i4").reshape(200, 200), chunks=(50, 50),
                         compression="gzip")
    big = os.path.join(root, "big.h5")
    with h5py.File(big, "w") as f:
        f["x"] = np.random.default_rng(1).random(300000)     # 2.4 MB
    want = {}
    os.utime(small, (1500000000, 1500000000))       # Last-Modified (issue 47)
    with h5py.File(small, "r") as f:
        want["a"] = f["a"][()].tobytes()
        want["g/c"] = f["g/c"][()].tobytes()
    log_path = os.path.join(wd, "server.log")
    log = open(log_path, "w")
    proc, port = start_server(root, log)
    env = dict(os.environ, TMPDIR=tmp)
    try:
        url = "http://127.0.0.1:%d/f.h5" % port
        m = T.Mount(url, mnt)
        old_env = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = tmp
        try:
            m.start()
        finally:
            if old_env is None:
                del os.environ["TMPDIR"]
            else:
                os.environ["TMPDIR"] = old_env
        try:
            with m.watchdog(60):
                n_after_mount = len(gets(log_path, "f.h5"))
                for name, b in sorted(want.items()):
                    with open(os.path.join(mnt, name), "rb") as fh:
                        got = fh.read()
                    if got != b:
                        T.fail("%s: %s" % (name, T.first_diff(got, b)))
                    else:
                        print("ok   %s: %d bytes as h5py reads them" % (name, len(b)))
                if os.listdir(tmp):
                    T.fail("temporary files left visible in $TMPDIR: %r" % os.listdir(tmp))
                # objects recording no time show FILE's: the Last-Modified
                # of the download (was 0)
                for name in ("", "a", "g"):
                    if int(os.stat(os.path.join(mnt, name)).st_mtime) != 1500000000:
                        T.fail("/%s: mtime %r, the server's Last-Modified 1500000000" % (
                            name, os.stat(os.path.join(mnt, name)).st_mtime))
        finally:
            m.stop()
        n = gets(log_path, "f.h5")
        notice = [ln for ln in m.output().splitlines() if "ignores Range" in ln]
        if len(notice) != 1 or "downloaded whole" not in notice[0]:
            T.fail("expected one notice, got %r" % m.output())
        else:
            print("ok   one notice: %s" % notice[0])
        # the ranged GET that told, then one download; nothing once mounted
        if len(n) != 2 or n_after_mount != 2:
            T.fail("the server saw %d GETs of f.h5 (%d at mount), expected 2: %r" % (len(n), n_after_mount, n))
        else:
            print("ok   the server saw 2 GETs (the ranged one that told, the download), none after")

        # too large for -o cache_max
        r = subprocess.run([T.H5FS, "-o", "cache_max=1", "http://127.0.0.1:%d/big.h5" % port, mnt],
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL, env=env)
        if T.is_mounted(mnt):
            subprocess.run(["fusermount3", "-uz", mnt], timeout=10)
            T.fail("big.h5 mounted with -o cache_max=1")
        err = r.stderr.decode()
        if r.returncode != 3 or "cache_max" not in err or len(err.strip().splitlines()) != 1:
            T.fail("big.h5 with -o cache_max=1: exit %d, %r" % (r.returncode, err))
        else:
            print("ok   larger than -o cache_max: exit %d, %s" % (r.returncode, err.strip()))
        r = subprocess.run([T.H5FS, "-o", "cache_max=0", url, mnt], capture_output=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        if r.returncode != 2 or T.is_mounted(mnt):
            T.fail("-o cache_max=0: exit %d, %r" % (r.returncode, r.stderr))
        if os.listdir(tmp):
            T.fail("temporary files left in $TMPDIR: %r" % os.listdir(tmp))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
