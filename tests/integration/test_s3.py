#!/usr/bin/python3
"""s3://BUCKET/KEY through a real mount (issue 15), with every request's
AWS Signature Version 4 checked by botocore's signer.

A local S3-style endpoint on 127.0.0.1 (path style, forced for an IP
endpoint) serves the fixture with Range support; it recomputes the
signature of each request with botocore (S3SigV4Auth over the headers the
request says it signed, payload UNSIGNED-PAYLOAD) and answers 403 on a
mismatch. Credentials from the environment (with a session token), from
~/.aws/credentials with AWS_PROFILE, anonymous when none; a wrong secret is
refused at mount with "access denied". A cat of a chunked dataset goes
through the chunk read-ahead (issue 23) signed like every request: fewer
requests than chunks, no byte twice, at most 1.1x the stored bytes.
"""
import http.server
import os
import re
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
T.require_curl()
try:
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
except ImportError:
    T.skip("python3-botocore not installed")
import h5py  # noqa: E402
import numpy as np  # noqa: E402

KEY, SECRET, TOKEN = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "tok/en+123="
REGION = "eu-west-1"
fail = T.fail


class S3(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def verify(self):
        """None if the request is anonymous or correctly signed, else why not."""
        a = self.headers.get("Authorization")
        st = self.server.st
        if a is None:
            return None if st["anonymous_ok"] else "anonymous"
        m = re.match(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request, *"
                     r"SignedHeaders=([^,]+), *Signature=([0-9a-f]{64})$", a)
        if not m:
            return "malformed Authorization: " + a
        if m.group(1) != KEY or m.group(3) != REGION:
            return "credential scope %s/%s" % (m.group(1), m.group(3))
        signed = m.group(4).split(";")
        if "x-amz-content-sha256" not in signed or self.headers.get("x-amz-content-sha256") != "UNSIGNED-PAYLOAD":
            return "payload not declared UNSIGNED-PAYLOAD"
        if st["token"] and ("x-amz-security-token" not in signed or
                            self.headers.get("x-amz-security-token") != st["token"]):
            return "session token missing"
        req = AWSRequest(method="GET", url="http://%s%s" % (self.headers["Host"], self.path),
                         headers={h: self.headers[h] for h in signed})
        req.context["timestamp"] = self.headers["x-amz-date"]
        auth = S3SigV4Auth(Credentials(KEY, SECRET, st["token"] or None), "s3", REGION)
        sts = auth.string_to_sign(req, auth.canonical_request(req))
        if auth.signature(sts, req) != m.group(5):
            return "signature mismatch"
        return None

    def do_GET(self):
        st = self.server.st
        why = self.verify()
        with st["lock"]:
            st["log"].append((self.path, why, self.headers.get("Range"), self.headers.get("If-Match")))
        if why or self.path != "/bucket/dir/f.h5":
            body = b"<Error>AccessDenied</Error>" if why else b"<Error>NoSuchKey</Error>"
            self.send_response(403 if why else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        data = st["data"]
        a, b = map(int, re.match(r"bytes=(\d+)-(\d+)$", self.headers["Range"]).groups())
        b = min(b, len(data) - 1)
        self.send_response(206)
        self.send_header("Content-Range", "bytes %d-%d/%d" % (a, b, len(data)))
        self.send_header("ETag", '"s3etag"')
        self.send_header("Content-Length", str(b - a + 1))
        self.end_headers()
        self.wfile.write(data[a:b + 1])


def main():
    wd = T.workdir("s3")
    h5 = os.path.join(wd, "f.h5")
    with h5py.File(h5, "w") as f:
        f["x"] = np.arange(3 << 20, dtype="<i4")
        f.create_dataset("z", data=np.arange(1 << 18, dtype="<f8"), chunks=(4096,), compression="gzip")
        rng = np.random.default_rng(23)
        f.create_dataset("c", data=np.round(rng.normal(size=3 << 20) * 1000, 2), chunks=(1 << 15,),
                         shuffle=True, compression="gzip")
    with h5py.File(h5, "r") as f:
        exp = {n: T.dataset_bytes(f[n])[0] for n in ("x", "z")}
        want_c = f["c"][()].tobytes()
        nchunks_c, stored_c = f["c"].id.get_num_chunks(), f["c"].id.get_storage_size()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), S3)
    httpd.daemon_threads = True
    httpd.st = st = {"data": open(h5, "rb").read(), "log": [], "lock": threading.Lock(),
                     "anonymous_ok": False, "token": None}
    th = threading.Thread(target=httpd.serve_forever, daemon=True)
    th.start()
    ep = "http://127.0.0.1:%d" % httpd.server_address[1]
    opts = ["-o", "s3_endpoint=%s,s3_region=%s,retries=1,timeout=10" % (ep, REGION)]
    mnt = os.path.join(wd, "mnt")
    home = os.path.join(wd, "home")
    os.makedirs(os.path.join(home, ".aws"))
    with open(os.path.join(home, ".aws", "credentials"), "w") as fh:
        fh.write("[default]\naws_access_key_id = WRONG\naws_secret_access_key = WRONG\n\n"
                 "[p2]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (KEY, SECRET))
    saved = dict(os.environ)

    def case(what, env, token=None, anonymous_ok=False, refused=None):
        os.environ.clear()
        os.environ.update({k: v for k, v in saved.items() if not k.startswith("AWS_")})
        os.environ["HOME"] = home if "HOME" not in env else env.pop("HOME")
        os.environ.update(env)
        st["token"], st["anonymous_ok"] = token, anonymous_ok
        st["log"].clear()
        m = T.Mount("s3://bucket/dir/f.h5", mnt, opts)
        try:
            m.start()
        except T.MountError as e:
            if not refused or refused not in str(e):
                fail("%s: %s" % (what, e))
            return
        try:
            if refused:
                fail("%s: mounted" % what)
            for n, want in exp.items():
                with open(os.path.join(mnt, n), "rb") as fh:
                    if fh.read() != want:
                        fail("%s: %s: wrong bytes" % (what, n))
            bad = [e for e in st["log"] if e[1]]
            if bad or not st["log"]:
                fail("%s: requests refused by the signature check: %r" % (what, bad[:3]))
            print("%s: %d requests, all verified" % (what, len(st["log"])))
        finally:
            m.stop()
            os.environ.clear()
            os.environ.update(saved)

    def chunked():
        """A cat of a chunked dataset: the chunk read-ahead of the HTTP
        source (issue 23), signed: every request verified, fewer requests
        than chunks, no byte fetched twice, <= 1.1x the stored bytes."""
        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = KEY, SECRET
        st["token"], st["anonymous_ok"] = None, False
        try:
            with T.Mount("s3://bucket/dir/f.h5", mnt, opts) as m, m.watchdog(120):
                os.stat(os.path.join(mnt, "c"))
                n0 = len(st["log"])
                with open(os.path.join(mnt, "c"), "rb") as fh:
                    if fh.read() != want_c:
                        fail("chunked: wrong bytes")
        finally:
            os.environ.clear()
            os.environ.update(saved)
        # the live mount's probes of the object (one byte with If-Match,
        # at most once per refresh interval while requests come: README
        # "Live files") are no fetch of the dataset's bytes; a cat slower
        # than a second (a loaded machine) has some
        def probe(e):
            r = re.match(r"bytes=(\d+)-(\d+)$", e[2] or "")
            return bool(e[3]) and r is not None and r.group(1) == r.group(2)
        bad = [e for e in st["log"] if e[1]]
        log = [e for e in st["log"][n0:] if not probe(e)]
        rngs = sorted(tuple(map(int, re.match(r"bytes=(\d+)-(\d+)$", e[2]).groups())) for e in log)
        sent = sum(b - a + 1 for a, b in rngs)
        print("chunked, signed: %d requests for %d chunks (and %d probes), %d bytes for %d stored" % (
            len(log), nchunks_c, len(st["log"]) - n0 - len(log), sent, stored_c))
        if bad:
            fail("chunked: requests refused by the signature check: %r" % bad[:3])
        if not log or len(log) >= nchunks_c:
            fail("chunked: %d requests for %d chunks: not coalesced" % (len(log), nchunks_c))
        if any(b0 <= a1 for (_, a1), (b0, _) in zip(rngs, rngs[1:])):
            fail("chunked: a byte fetched twice: %r" % rngs)
        if sent > 1.1 * stored_c:
            fail("chunked: %d bytes fetched for %d stored" % (sent, stored_c))

    try:
        chunked()
        case("env credentials", {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET})
        case("env credentials + session token",
             {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_SESSION_TOKEN": TOKEN}, token=TOKEN)
        case("~/.aws/credentials, AWS_PROFILE=p2", {"AWS_PROFILE": "p2"})
        case("anonymous", {"HOME": wd}, anonymous_ok=True)
        case("wrong secret", {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": "nope"}, refused="access denied")
        case("anonymous where signing is required", {"HOME": wd}, refused="access denied")
    finally:
        httpd.shutdown()
        httpd.server_close()
        th.join(10)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
