#!/usr/bin/python3
"""The read-side suite once over HTTP (issue 15): every file of the mount
fixtures (make_fixtures.py), the chunked fixtures (make_chunked.py) and the
HDF5 corpus that h5py can open is served by nginx on 127.0.0.1 from its
own directory and mounted as http://127.0.0.1:PORT/DIR/NAME; the tree,
every byte of every dataset and random windows must equal what h5py reads
from the same file locally (h5fs_testlib.compare, as test_mount and
test_corpus do for local files).

The files a remote FILE names (external links, virtual dataset sources)
are looked for beside it on the server (related.c), as h5py finds them
beside the local file: the expected tree is h5py's of the file in place.
Files made to break readers (test_corpus.HOSTILE) may answer EIO, as
locally.
"""
import os
import shutil
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
T.require_curl()
import test_remote_nginx as N  # noqa: E402  (nginx on loopback)
import test_corpus as C  # noqa: E402  (the corpus walk's file list and hostile names)
import make_fixtures  # noqa: E402
import make_chunked  # noqa: E402

WALK_LIMIT = 120
OPTS = ["-o", "ro,retries=2,timeout=20"]


KNOWN = {}          # (file name, dataset path) -> bytes h5py cannot give (make_chunked)


def make_links(wd):
    """External links as a remote FILE must resolve them beside its URL:
    into a subdirectory, to a name needing percent-encoding, by the last
    component of an absolute name, a VDS whose sources sit beside it; and
    ones it must not follow: out of the directory (..), a missing file."""
    import h5py
    import numpy as np

    d = os.path.join(wd, "links")
    os.makedirs(os.path.join(d, "sub"))
    with h5py.File(os.path.join(wd, "outside.h5"), "w") as f:
        f["x"] = np.arange(5, dtype="<i2")
    with h5py.File(os.path.join(d, "sub", "inner.h5"), "w") as f:
        f["g/x"] = np.arange(7, dtype="<f8")
    with h5py.File(os.path.join(d, "with space & #.h5"), "w") as f:
        f["y"] = np.arange(9, dtype="<u4")
    with h5py.File(os.path.join(d, "src.h5"), "w") as f:
        f["s"] = np.arange(12, dtype="<i4")
    with h5py.File(os.path.join(d, "top.h5"), "w") as f:
        f["own"] = np.arange(3, dtype="<i8")
        f["to_sub"] = h5py.ExternalLink("sub/inner.h5", "/g")
        f["to_space"] = h5py.ExternalLink("with space & #.h5", "/y")
        f["to_abs"] = h5py.ExternalLink("/nonexistent/dir/src.h5", "/s")
        f["to_out"] = h5py.ExternalLink("../outside.h5", "/x")
        f["to_missing"] = h5py.ExternalLink("missing.h5", "/x")
        lay = h5py.VirtualLayout(shape=(2, 12), dtype="<i4")
        lay[0] = h5py.VirtualSource("src.h5", "s", shape=(12,))
        lay[1] = h5py.VirtualSource("gone.h5", "s", shape=(12,))
        f.create_virtual_dataset("vds", lay, fillvalue=-1)
    return [("links/top.h5", os.path.join(d, "top.h5"))]


def sources(wd):
    """(label, path) of every file to serve."""
    out = []
    fx = os.path.join(wd, "fixtures")
    os.makedirs(fx)
    for n in make_fixtures.make(fx):
        out.append(("fixtures/" + n, os.path.join(fx, n)))
    ck = os.path.join(wd, "chunked")
    os.makedirs(ck)
    KNOWN.update(make_chunked.make(ck).known)
    for n in sorted(os.listdir(ck)):
        if n.endswith(".h5"):
            out.append(("chunked/" + n, os.path.join(ck, n)))
    out.extend(make_links(wd))
    if os.path.isdir(C.CORPUS):
        for p in T.corpus_sample(C.corpus_files()):
            out.append((os.path.relpath(p, C.CORPUS), p))
    return out


def adjust(expected, path):
    """What a remote mount must show where h5py's local read is not it:
    bytes the generator knows (chunks libhdf5 leaves undefined), and
    external storage, whose raw files are local files: EIO (README)."""
    import h5py

    name = os.path.basename(path)
    with h5py.File(path, "r") as f:
        for p, e in expected.items():
            if e.kind != "file":
                continue
            known = KNOWN.get((name, p))
            if known is not None:
                e.data, e.size, e.why = known, len(known), None
            try:
                efl = isinstance(f[p], h5py.Dataset) and f[p].external
            except Exception:
                efl = False
            if efl:
                e.data, e.why = None, "remote: external storage is read from local files only"


def main():
    wd = T.workdir("remote-suite")
    www = os.path.join(wd, "www")
    mnt = os.path.join(wd, "mnt")
    os.makedirs(www)
    files = sources(wd)
    # nginx serves each file from where it is (its neighbours too)
    roots = {"fixtures": os.path.join(wd, "fixtures"), "chunked": os.path.join(wd, "chunked"),
             "links": os.path.join(wd, "links")}
    if os.path.isdir(C.CORPUS):
        roots["corpus"] = C.CORPUS
    for k, d in roots.items():
        os.symlink(d, os.path.join(www, k))
    proc, port = N.start_nginx(www, wd)
    stats = dict(files=0, full_match=0, with_failures=0, h5py_rejects=0)
    failed = []
    t0 = time.monotonic()
    try:
        for label, path in files:
            top = label.split("/", 1)[0]
            url_path = label if top in ("fixtures", "chunked", "links") else "corpus/" + label
            url = "http://127.0.0.1:%d/%s" % (port, urllib.parse.quote(url_path))
            cwd = os.path.dirname(path)
            try:
                expected, root_addr = T.h5py_tree(path, cwd=cwd)
            except Exception:
                stats["h5py_rejects"] += 1      # test_corpus covers refusals, locally
                continue
            adjust(expected, path)
            stats["files"] += 1
            rep = T.Report(label)
            m = T.Mount(url, mnt, opts=OPTS, cwd=cwd)
            try:
                m.start()
            except T.MountError as e:
                known = [why for pat, why in C.KNOWN_UNSUPPORTED if pat in str(e)]
                if known:
                    continue
                rep.bad("h5py opens it but the remote mount was refused: %s" % e)
            else:
                try:
                    with m.watchdog(WALK_LIMIT):
                        T.compare(expected, root_addr, mnt, rep, windows=10,
                                  eio_ok=bool(C.HOSTILE.search(label)))
                    if m.hung:
                        rep.bad("daemon hung; killed after %d s" % WALK_LIMIT)
                    elif not m.alive():
                        rep.bad("daemon died during the walk: %s" % m.output()[-500:])
                finally:
                    m.stop()
                T.check_logs(rep, m.output())
            if rep.failed() or rep.fail or rep.chunked_fail:
                stats["with_failures"] += 1
                failed.append(label)
                rep.notes = []
                rep.show(limit=6)
            else:
                stats["full_match"] += 1
    finally:
        T.stop_process(proc)
    print("remote suite summary (%.0f s): %s" % (time.monotonic() - t0,
                                                 ", ".join("%s=%d" % kv for kv in stats.items())))
    if failed:
        print("files with failures over HTTP (%d): %s" % (len(failed), " ".join(failed)))
        return 1
    if stats["full_match"] < 20:
        print("FAIL: only %d files compared over HTTP" % stats["full_match"])
        return 1
    shutil.rmtree(wd, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
