#!/usr/bin/python3
"""s3://BUCKET/KEY against a real S3-compatible server: s3rver (npm,
installed globally by contrib/install-deps.sh) on 127.0.0.1 (issue 15).

Requests are signed with s3rver's account S3RVER/S3RVER, but s3rver does
not check the signature of a GET (test_s3.py checks the signer against
botocore's and the refusal of a wrong secret). The test
creates a bucket at start-up, uploads fixtures with botocore-signed PUTs
(one key with a space and a plus sign: its percent-encoding in the URL
must name the same key), mounts each with -o
s3_endpoint=http://127.0.0.1:PORT,s3_path_style and compares every dataset
with h5py's local read. A missing key is refused at mount (exit
status 3, "not found"); an object replaced during the mount gives EIO
with -o refresh=0 and is opened anew as the new object otherwise, never
mixed bytes (s3rver ignores If-Match: the reply's ETag gives the change
away).
"""
import errno
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
T.require_curl()
S3RVER = os.environ.get("H5FS_S3RVER") or shutil.which("s3rver")
if not S3RVER:
    T.skip("s3rver not installed (contrib/install-deps.sh: npm install -g s3rver@3)")
try:
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
except ImportError:
    T.skip("python3-botocore not installed")

import test_remote  # noqa: E402  (fixture and helpers)

KEY = SECRET = "S3RVER"  # s3rver's built-in account
fail = T.fail


def start_s3rver(wd):
    """s3rver on 127.0.0.1, a port of its choosing, bucket "bucket"."""
    data = os.path.join(wd, "s3data")
    os.makedirs(data)
    log = open(os.path.join(wd, "s3rver.log"), "w+")
    proc = subprocess.Popen([S3RVER, "-d", data, "-a", "127.0.0.1", "-p", "0", "--configure-bucket", "bucket"],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        log.seek(0)
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", log.read())
        if m:
            return proc, int(m.group(1))
        if proc.poll() is not None:
            log.seek(0)
            T.skip("s3rver did not start: %s" % log.read()[:300])
        time.sleep(0.1)
    proc.kill()
    proc.wait(10)
    raise RuntimeError("s3rver did not listen within 30 s")


def s3_request(port, method, key, data=None, secret=SECRET):
    url = "http://127.0.0.1:%d/bucket/%s" % (port, urllib.parse.quote(key, safe="/-._~"))
    req = AWSRequest(method=method, url=url, data=data)
    S3SigV4Auth(Credentials(KEY, secret), "s3", "us-east-1").add_auth(req)
    r = urllib.request.Request(url, data=data, method=method, headers=dict(req.headers.items()))
    try:
        with urllib.request.urlopen(r, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def put(port, key, path):
    st, body = s3_request(port, "PUT", key, open(path, "rb").read())
    if st != 200:
        raise RuntimeError("PUT %s: %d %r" % (key, st, body[:200]))


def main():
    wd = T.workdir("s3rver")
    f1 = os.path.join(wd, "f.h5")
    test_remote.make_fixture(f1)
    exp = test_remote.expected(f1)
    data = open(f1, "rb").read()
    mnt = os.path.join(wd, "mnt")
    saved = dict(os.environ)
    os.environ.update({"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "HOME": wd})
    os.environ.pop("AWS_SESSION_TOKEN", None)
    os.environ.pop("AWS_PROFILE", None)
    proc, port = start_s3rver(wd)
    opts = ["-o", "s3_endpoint=http://127.0.0.1:%d,s3_path_style,retries=1,timeout=10" % port]
    try:
        keys = {"dir/f.h5": f1, "odd name+1.h5": f1}
        for k, p in keys.items():
            put(port, k, p)
        st, body = s3_request(port, "GET", "dir/f.h5")
        if st != 200 or body != data:
            fail("s3rver GET of the uploaded object: %d, %d bytes" % (st, len(body)))

        # every byte equals h5py's
        for k in keys:
            with T.Mount("s3://bucket/" + k, mnt, opts) as m, m.watchdog(120):
                n = 0
                for name, want in sorted(exp.items()):
                    try:
                        got = test_remote.read(mnt, name)
                    except OSError as e:
                        fail("%s: %s: %s" % (k, name, e))
                        continue
                    n += 1
                    if got != want:
                        fail("%s: %s: %s" % (k, name, T.first_diff(got, want)))
                print("s3://bucket/%s: %d datasets equal h5py's" % (k, n))

        # refused at mount: a missing key (404 NoSuchKey)
        test_remote.mount_refused("s3://bucket/no/such.h5", mnt, "missing key", "not found", opts)

        # the object replaced during the mount (same size, one byte
        # changed), with -o refresh=0: EIO, never bytes from two versions
        v2 = os.path.join(wd, "v2.h5")
        with open(v2, "wb") as fh:
            fh.write(data[:-1] + bytes([data[-1] ^ 0xFF]))
        with T.Mount("s3://bucket/dir/f.h5", mnt, opts + ["-o", "refresh=0"]) as m, m.watchdog(120):
            if test_remote.read(mnt, "a") != exp["a"]:
                fail("replaced: a: wrong bytes before the replacement")
            put(port, "dir/f.h5", v2)
            try:
                got = test_remote.read(mnt, "g/b")
                fail("replaced: read of g/b succeeded (%s)" % ("same bytes" if got == exp["g/b"] else "mixed"))
            except OSError as e:
                if e.errno != errno.EIO:
                    fail("replaced: read of g/b gave %s, not EIO" % e)
            if "changed on the server" not in m.output():
                fail("replaced: no log line saying so: %r" % m.output()[:300])
            if not m.alive():
                fail("replaced: the daemon died")
        # live (the default): opened anew as the new object, whose bytes
        # (h5py's read of v2) the read returns
        put(port, "dir/f.h5", f1)   # v1 again
        want = test_remote.expected(v2)["g/b"]
        with T.Mount("s3://bucket/dir/f.h5", mnt, opts) as m, m.watchdog(120):
            test_remote.read(mnt, "a")
            put(port, "dir/f.h5", v2)
            try:
                got = test_remote.read(mnt, "g/b")
                if got != want:
                    fail("replaced, live: %s" % T.first_diff(got, want))
            except OSError as e:
                fail("replaced, live: read of g/b: %s" % e)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        T.stop_process(proc)
    return T.finish()  # test_remote's helpers count into the same tally


if __name__ == "__main__":
    sys.exit(main())
