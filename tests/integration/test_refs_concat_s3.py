#!/usr/bin/python3
"""h5fs-ls --refs --concat=time s3://BUCKET/PREFIX/ (issue 45) against
s3rver on 127.0.0.1 (test_s3rver.py's server and uploads):

- a netCDF-4 time series uploaded under ts/ in shuffled names, with a
  text object and a fake .h5 (a member by its suffix, no HDF5): exit 0,
  one stderr line for each of the two, and the document is the local
  DIR's (--noindex) with every reference naming s3://bucket/ts/NAME
  instead of the local path;
- read back over HTTP (the references' s3://bucket/ made s3rver's path
  style URL: fsspec has no S3 without s3fs, which Debian lacks), xarray
  gives temp and time equal to h5py's reading of the local files in time
  order;
- a second run on the same index fetches no object (s3rver's log shows
  the listing only) and writes the same document.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402
import test_refs_concat as C  # noqa: E402  (skips without xarray, zarr, fsspec, netCDF4)
import test_s3rver as S  # noqa: E402  (skips without s3rver, botocore, FUSE, libcurl)
import make_concat_fixtures as F  # noqa: E402

fail = T.fail
WAIT = 300


def main():
    wd = T.workdir("refs_concat_s3")
    nc = os.path.join(wd, "nc")
    ordered = F.nc_series(nc)
    with open(os.path.join(nc, "notes.txt"), "w") as fh:
        fh.write("not HDF5\n")
    with open(os.path.join(nc, "fake.h5"), "w") as fh:
        fh.write("a text file named like HDF5\n" * 40)
    T.s3rver_env(wd, S.KEY, S.SECRET, XDG_CACHE_HOME=os.path.join(wd, "cache"))
    local = subprocess.run([T.H5FS_LS, "--refs", "--concat=time", "--noindex", nc], capture_output=True,
                           timeout=WAIT)
    if local.returncode != 0:
        fail("local DIR: exit %d: %s" % (local.returncode, local.stderr.decode()))
        return T.finish()
    proc, port = S.start_s3rver(wd)
    o = "s3_endpoint=http://127.0.0.1:%d,s3_path_style,retries=1,timeout=20" % port
    url = "s3://bucket/ts/"
    try:
        for n in sorted(os.listdir(nc)):
            S.put(port, "ts/" + n, os.path.join(nc, n))
        docs = []
        for label in ("cold", "warm"):
            before = len(T.s3rver_settled(wd))
            p = subprocess.run([T.H5FS_LS, "--refs", "--concat=time", "-o", o, url], capture_output=True,
                               timeout=WAIT)
            err = p.stderr.decode("utf-8", "replace")
            objs = [ln for ln in T.s3rver_settled(wd, before) if ln.startswith("t/ts/")]
            print("%s: exit %d, %d object requests" % (label, p.returncode, len(objs)))
            if p.returncode != 0:
                fail("%s: exit %d: %s" % (label, p.returncode, err))
                continue
            for bad in ("notes.txt", "fake.h5"):
                if len([ln for ln in err.splitlines() if url + bad in ln and "skipped" in ln]) != 1:
                    fail("%s: no one line skipping %s: %r" % (label, bad, err))
            if label == "warm" and objs:
                fail("warm: objects fetched with the index up to date: %r" % objs[:5])
            docs.append(p.stdout)
        if len(docs) == 2 and docs[0] != docs[1]:
            fail("the indexed run wrote another document")
        if not docs:
            return T.finish()
        # the local document with s3:// URLs
        base = os.path.realpath(nc) + "/"
        want = json.loads(local.stdout.decode().replace(json.dumps(base)[1:-1], url))
        got = json.loads(docs[0])
        if got != want:
            diff = sorted(k for k in set(got["refs"]) | set(want["refs"]) if got["refs"].get(k) != want["refs"].get(k))
            fail("the prefix's document is not the DIR's with s3:// URLs: %s" % diff[:5])
        urls = {v[0] for v in got["refs"].values() if isinstance(v, list)}
        if urls != {url + os.path.basename(p) for p in ordered}:
            fail("references name %s" % sorted(urls))
        # read over HTTP: s3rver serves path-style URLs without signatures
        http = os.path.join(wd, "http.json")
        with open(http, "w") as fh:
            fh.write(docs[0].decode().replace('"s3://bucket/', '"http://127.0.0.1:%d/bucket/' % port))
        C.check_series("s3 prefix over HTTP", http, ordered)
    finally:
        T.stop_process(proc)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
