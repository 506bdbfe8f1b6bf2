#!/usr/bin/python3
"""h5fs-find on an S3 prefix (issue 35): the requests an indexed query
sends. Run by hand (never in CI), with s3rver installed (npm):

    /usr/bin/python3 bench/find_s3_bench.py --find ./h5fs-find \\
        [--dir /var/tmp/h5fs-find-s3] [--folders 20] [--per 100]

FOLDERS x PER objects of collection_index_bench.py's collection uploaded
to s3rver on 127.0.0.1 under coll/; then h5fs-find s3://bucket/coll/
-dtype '<f4' -attr long_name=ramp: cold (a new index: every member
fetched), warm (the index up to date). Prints the seconds and the
requests of each from s3rver's log: the warm query must send list
requests only (one per folder and 1000 keys), 0 GETs of objects."""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
sys.path.insert(0, HERE)
from benchlib import say  # noqa: E402
import collection_index_bench as C  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--find", required=True)
    ap.add_argument("--dir", default="/var/tmp/h5fs-find-s3")
    ap.add_argument("--folders", type=int, default=20)
    ap.add_argument("--per", type=int, default=100)
    args = ap.parse_args()
    args.find = os.path.abspath(args.find)
    args.top = os.path.join(args.dir, "coll")
    os.makedirs(args.dir, exist_ok=True)
    C.generate(args)
    os.environ["H5FS_BUILDDIR"] = os.environ.get("H5FS_BUILDDIR", os.path.dirname(args.find))
    import test_find_s3 as F3  # noqa: E402  (s3rver helpers)
    import test_s3rver as S  # noqa: E402
    wd = os.path.join(args.dir, "s3-%d" % os.getpid())
    os.makedirs(wd)
    os.environ.update({"AWS_ACCESS_KEY_ID": S.KEY, "AWS_SECRET_ACCESS_KEY": S.SECRET, "HOME": wd,
                       "NODE_OPTIONS": "--openssl-legacy-provider"})
    proc, port = S.start_s3rver(wd)
    o = "s3_endpoint=http://127.0.0.1:%d,s3_path_style,retries=1,timeout=60" % port
    try:
        n = 0
        for d, _dirs, files in os.walk(args.top):
            for fn in files:
                if fn.startswith("."):
                    continue
                p = os.path.join(d, fn)
                S.put(port, "coll/" + os.path.relpath(p, args.top), p)
                n += 1
        say("%d objects uploaded" % n)
        ix = os.path.join(wd, "index.sqlite")
        for label in ("cold", "warm"):
            before = len(F3.settled(wd, 0))
            t = time.monotonic()
            r = subprocess.run([args.find, "s3://bucket/coll/", "-O", o, "--index", ix, "-dtype", "<f4",
                                "-attr", "long_name=ramp"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               check=True, timeout=3600)
            secs = time.monotonic() - t
            lines = F3.settled(wd, before)
            objs = F3.object_requests(lines)
            say("%s: %.2f s, %d hits, %d requests: %d object GETs, %d listings" % (
                label, secs, len(r.stdout.splitlines()), len(lines), len(objs), len(lines) - len(objs)))
    finally:
        proc.terminate()
        proc.wait(30)


if __name__ == "__main__":
    main()
