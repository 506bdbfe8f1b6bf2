#!/usr/bin/python3
"""Concurrent hostile-input walk: every file of the HDF5 test corpus (the
set test_corpus.py uses; CVE reproducers and corrupt files included) is
mounted with -o cache_size=1, and 8 threads then hammer it at the same
time for H5FS_CORPUS_MT_SECONDS (default 0.5) per file: stat, listdir,
readlink, reads of random windows (page cache dropped first), listxattr
and getxattr.  Errors such as EIO are fine here (test_corpus.py checks the
answers); what fails is a daemon that dies, hangs (watchdog), or prints a
sanitizer report, i.e. races and memory errors on the error paths (loads
that fail while other threads wait for them in the cache, structures that
nest into themselves).  Meant for an ASan or TSan daemon (H5FS_BIN).

Environment: H5FS_BIN, H5FS_CORPUS (default as test_corpus.py),
H5FS_CORPUS_MT_SECONDS, H5FS_CORPUS_MT_THREADS (8), H5FS_CORPUS_MT_MATCH
(only files whose path contains it).  Exit 77 when the corpus is absent.
"""
import os
import random
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import h5fs_testlib as T  # noqa: E402
import test_corpus  # noqa: E402  (exits 77 without h5py/FUSE)

SECONDS = float(os.environ.get("H5FS_CORPUS_MT_SECONDS", "0.5"))
THREADS = int(os.environ.get("H5FS_CORPUS_MT_THREADS", "8"))
MATCH = os.environ.get("H5FS_CORPUS_MT_MATCH", "")


def listing(mnt, limit=2000):
    """Paths of the mount (bounded, errors ignored): (files, dirs, links)."""
    files, dirs, links = [], [mnt], []
    for d, ds, fs in os.walk(mnt, onerror=lambda e: None):
        for n in ds:
            p = os.path.join(d, n)
            (links if os.path.islink(p) else dirs).append(p)
        for n in fs:
            p = os.path.join(d, n)
            (links if os.path.islink(p) else files).append(p)
        if len(files) + len(dirs) > limit:
            break
    return files, dirs, links


def hammer(tid, paths, stop, dead):
    files, dirs, links = paths
    rng = random.Random(tid)
    allp = files + dirs + links
    while not stop.is_set():
        r = rng.random()
        try:
            if r < 0.45 and files:
                p = rng.choice(files)
                fd = os.open(p, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                    size = os.fstat(fd).st_size
                    off = rng.randrange(0, min(size, 1 << 40) + 1) if size > 0 else 0
                    os.pread(fd, rng.choice((1, 100, 4096, 65536, 1 << 20)), off)
                finally:
                    os.close(fd)
            elif r < 0.6:
                os.listdir(rng.choice(dirs))
            elif r < 0.7 and links:
                os.readlink(rng.choice(links))
            elif r < 0.85:
                p = rng.choice(allp)
                for a in os.listxattr(p, follow_symlinks=False)[:8]:
                    try:
                        os.getxattr(p, a, follow_symlinks=False)
                    except OSError as e:
                        if e.errno in T.DEAD:
                            raise
            else:
                os.lstat(rng.choice(allp))
        except OSError as e:
            if e.errno in T.DEAD:
                dead.append(str(e))
                stop.set()


def main():
    if not os.path.isdir(test_corpus.CORPUS):
        T.skip("corpus not found at %s" % test_corpus.CORPUS)
    wd = T.workdir("corpus_mt")
    mnt = os.path.join(wd, "mnt")
    files = [p for p in test_corpus.corpus_files() if MATCH in p]
    print("corpus_mt: %d files, %d threads, %.1f s each, daemon %s" % (len(files), THREADS, SECONDS, T.H5FS))
    fails = []
    mounted = 0
    t0 = time.monotonic()
    for path in files:
        rel = os.path.relpath(path, test_corpus.CORPUS)
        m = T.Mount(path, mnt, opts=("-o", "ro,cache_size=1"), cwd=os.path.dirname(path))
        try:
            try:
                m.start()
            except T.MountError:
                continue                 # refused: test_corpus.py judges the message
            mounted += 1
            dead = []
            try:
                with m.watchdog(60):
                    paths = listing(mnt)
                    stop = threading.Event()
                    ts = [threading.Thread(target=hammer, args=(i, paths, stop, dead), daemon=True)
                          for i in range(THREADS)]
                    for t in ts:
                        t.start()
                    stop.wait(SECONDS)
                    stop.set()
                    for t in ts:
                        t.join(70)
            except OSError as e:
                if e.errno not in T.DEAD:
                    raise
                dead.append(str(e))
            alive = m.alive() and not m.hung
            m.stop()
            if not alive or dead:
                fails.append("%s: daemon %s: %s" % (rel, "hung" if m.hung else "died", m.output()[-1500:]))
        except T.SanitizerReport as e:
            fails.append("%s: %s" % (rel, str(e)[:4000]))
        finally:
            if T.is_mounted(mnt):
                m.kill()
        if fails and fails[-1].startswith(rel + ":"):
            print("FAIL %s" % fails[-1])
            sys.stdout.flush()
    print("corpus_mt: %d files, %d mounted, %d failures, %.0f s" % (
        len(files), mounted, len(fails), time.monotonic() - t0))
    if not fails:
        import shutil
        shutil.rmtree(wd, ignore_errors=True)
        print("corpus_mt: 1 passed, 0 failed")
        return 0
    print("corpus_mt: 0 passed, 1 failed")
    return 1


if __name__ == "__main__":
    sys.exit(main())
