#!/usr/bin/python3
"""h5fs-ls --refs against the scan kerchunk does (issue 26). Run by hand.

    python3 bench/refs_bench.py [--h5fs-ls ./h5fs-ls] [--size-mib 1024] [--chunks 65536]

Two files of one float32 dataset of --size-mib in --chunks chunks, every
chunk written: "btree1" (h5py's default: a version 1 B-tree index) and
"earray" (libver latest, unlimited dimension: an extensible array). For
each, the time to the complete reference set:
  - h5fs-ls --refs FILE > /dev/null (the whole kerchunk JSON, streamed);
  - a Python scan through h5py's get_chunk_info(i) for every chunk index i,
    building the same {key: [url, offset, size]} dict kerchunk builds
    (kerchunk's path when h5py has no chunk_iter; libhdf5 looks up chunk i
    from the start of the index each time).
Local files: --repeat runs, warm (the file in the page cache) and, as
root, cold (page cache dropped first); the best and the range are printed.
Over HTTP: nginx on 127.0.0.1 behind delay_proxy.py (--delay-ms each way),
h5fs-ls --refs URL against the same Python scan with h5py reading through
fsspec's HTTP file (what kerchunk opens); requests and bytes from nginx's
access log. The Python scans stop at --py-limit seconds (the rate so far
is printed). Both sides' references are checked equal (local runs).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import h5fs_testlib as T  # noqa: E402
import test_remote_nginx as N  # noqa: E402
import h5py  # noqa: E402
import numpy as np  # noqa: E402


def make(path, size_mib, nchunks, layout):
    n = size_mib * 2**20 // 4
    chunk = n // nchunks
    kw = {"libver": "latest"} if layout == "earray" else {}
    with h5py.File(path, "w", **kw) as f:
        ds = f.create_dataset("data", (n,), "<f4", chunks=(chunk,),
                              maxshape=(None,) if layout == "earray" else (n,))
        step = chunk * max(1, (64 << 20) // (chunk * 4))
        for i in range(0, n, step):
            m = min(step, n - i)
            ds[i:i + m] = np.arange(i, i + m, dtype=np.float32)
    return chunk


def drop_caches():
    try:
        with open("/proc/sys/vm/drop_caches", "w") as fh:
            fh.write("3\n")
        return True
    except OSError:
        return False


def h5fs_refs(ls, target, out=subprocess.DEVNULL):
    t = time.monotonic()
    p = subprocess.run([ls, "--refs", target], stdout=out, stderr=subprocess.PIPE)
    el = time.monotonic() - t
    if p.returncode != 0:
        raise RuntimeError("h5fs-ls --refs %s: exit %d: %s" % (target, p.returncode, p.stderr[-300:]))
    return el


def py_scan(fobj, url, limit):
    """kerchunk's scan: every chunk's info by index. Returns (seconds,
    chunks done, total, refs)."""
    t = time.monotonic()
    refs = {}
    with h5py.File(fobj, "r") as f:
        ds = f["data"]
        dsid = ds.id
        n = dsid.get_num_chunks()
        done = 0
        for i in range(n):
            ci = dsid.get_chunk_info(i)
            key = ".".join(str(o // c) for o, c in zip(ci.chunk_offset, ds.chunks))
            refs["data/" + key] = [url, ci.byte_offset, ci.size]
            done += 1
            if done % 256 == 0 and time.monotonic() - t > limit:
                break
    return time.monotonic() - t, done, n, refs


def rng(vals):
    return "best %.2f s, range %.2f-%.2f s over %d runs" % (min(vals), min(vals), max(vals), len(vals))


def local(a, path, layout):
    cold_ok = drop_caches()
    res = {}
    for mode in ("cold", "warm") if cold_ok else ("warm",):
        hs, ps = [], []
        for r in range(a.repeat):
            if mode == "cold":
                drop_caches()
            else:
                h5fs_refs(a.h5fs_ls, path)      # the file in the page cache
            hs.append(h5fs_refs(a.h5fs_ls, path))
            if r < a.py_repeat and not a.no_python:
                if mode == "cold":
                    drop_caches()
                el, done, n, _ = py_scan(path, path, a.py_limit)
                ps.append(el * n / max(done, 1))
                if done < n:
                    print("  python scan stopped after %.0f s at %d of %d chunks (%.0f chunks/s): "
                          "time extrapolated linearly (a lower bound: the scan is quadratic)"
                          % (el, done, n, done / el))
        if not ps:
            print("%s local %s: h5fs-ls --refs %s" % (layout, mode, rng(hs)))
            continue
        print("%s local %s: h5fs-ls --refs %s; python get_chunk_info scan %s; ratio %.0fx (best vs best)"
              % (layout, mode, rng(hs), rng(ps), min(ps) / min(hs)))
        res[mode] = (min(hs), min(ps))
    if not cold_ok:
        print("  (not root: no cold runs)")
    return res


def check_same(a, path):
    with tempfile.TemporaryFile() as fh:
        h5fs_refs(a.h5fs_ls, path, fh)
        fh.seek(0)
        mine = json.load(fh)["refs"]
    _, done, n, theirs = py_scan(path, os.path.abspath(path), 1e9 if a.check else 0)
    if done < n:
        print("  references compared on the first %d chunks only (--check compares all)" % done)
    for k, v in theirs.items():
        if mine.get(k) != v:
            raise RuntimeError("reference %s: h5fs-ls %r, h5py %r" % (k, mine.get(k), v))


def remote(a, wd, layout):
    proc, port = N.start_nginx(os.path.join(wd, "www"), wd)
    proxy = None
    try:
        proxy = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "tests", "integration",
                                                               "delay_proxy.py"), str(port), str(a.delay_ms)],
                                 stdout=subprocess.PIPE)
        pport = int(proxy.stdout.readline())
        url = "http://127.0.0.1:%d/f.h5" % pport
        for r in range(a.http_repeat):
            reset_log(wd)
            el = h5fs_refs(a.h5fs_ls, url)
            nreq, sent = logged(wd)
            print("%s http %g ms: h5fs-ls --refs %.2f s, %d requests, %.1f MiB"
                  % (layout, a.delay_ms, el, nreq, sent / 2**20))
        if a.no_python:
            return
        import fsspec
        reset_log(wd)
        with fsspec.open(url, "rb") as fobj:
            el, done, n, _ = py_scan(fobj, url, a.py_limit)
        nreq, sent = logged(wd)
        print("%s http %g ms: python get_chunk_info scan over fsspec HTTP %.2f s for %d of %d chunks, "
              "%d requests, %.1f MiB%s" % (layout, a.delay_ms, el, done, n, nreq, sent / 2**20,
                                           "" if done == n else " (stopped at --py-limit)"))
    finally:
        if proxy:
            proxy.kill()
            proxy.wait(10)
        T.stop_process(proc)


def logged(wd):
    time.sleep(0.3)   # nginx writes its line after the body
    try:
        lines = open(os.path.join(wd, "access.log")).read().splitlines()
    except OSError:
        return 0, 0
    return len(lines), sum(int(ln.rsplit(" ", 1)[1]) for ln in lines)


def reset_log(wd):
    open(os.path.join(wd, "access.log"), "w").close()
    subprocess.run(["kill", "-USR1", open(os.path.join(wd, "nginx.pid")).read().strip()])
    time.sleep(0.2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--h5fs-ls", default=os.path.join(os.getcwd(), "h5fs-ls"))
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--chunks", type=int, default=65536)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--py-repeat", type=int, default=1, help="python scans per mode (they are slow)")
    ap.add_argument("--py-limit", type=float, default=600, help="seconds before a python scan stops")
    ap.add_argument("--delay-ms", type=float, default=20)
    ap.add_argument("--http-repeat", type=int, default=2)
    ap.add_argument("--layout", action="append", choices=("btree1", "earray"))
    ap.add_argument("--check", action="store_true", help="compare every reference with h5py's")
    ap.add_argument("--no-http", action="store_true")
    ap.add_argument("--no-python", action="store_true", help="h5fs-ls only (no python scans)")
    a = ap.parse_args()
    for layout in a.layout or ("btree1", "earray"):
        wd = tempfile.mkdtemp(prefix="h5fs-refs-bench-")
        try:
            os.makedirs(os.path.join(wd, "www"))
            path = os.path.join(wd, "www", "f.h5")
            chunk = make(path, a.size_mib, a.chunks, layout)
            print("== %s: %d MiB, %d chunks of %d KiB" % (layout, os.path.getsize(path) >> 20, a.chunks,
                                                         chunk * 4 >> 10))
            if not a.no_python:
                check_same(a, path)
            local(a, path, layout)
            if not a.no_http:
                remote(a, wd, layout)
        finally:
            subprocess.run(["rm", "-rf", wd])


if __name__ == "__main__":
    main()
