#!/usr/bin/python3
"""Mount every file of the HDF5 test corpus ($H5FS_CORPUS, default
$H5FS_SRCDIR/../shared/corpus/hdf5-testfiles; skipped when absent).

Files h5py can open: the tree (names, kinds, symlinks, inodes, sizes) must
match h5py's, and the bytes of every dataset too.  Chunked (and virtual)
datasets are reported separately; they fail the test unless
H5FS_CHUNKED_STRICT=0.  The known-unsupported ones (filters this build
lacks: h5fs_testlib.UNSUPPORTED_FILTERS, e.g. zfp without libzfp) are
accepted as EIO only with the daemon's log line saying why.

Files h5py cannot open: h5fs must either refuse to mount with one clear
"h5fs: FILE: cause" line, or mount and answer EIO on the bad objects.

In every case the daemon must survive the whole walk (checked after it)
and no request may hang (a watchdog kills the daemon after 120 s)."""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()

CORPUS = os.environ.get("H5FS_CORPUS") or os.path.normpath(
    os.path.join(T.SRCDIR, "..", "shared", "corpus", "hdf5-testfiles"))
# Files made to break readers (CVE reproducers, deliberately corrupt test
# inputs): libhdf5 may read them anyway, h5fs may answer EIO instead.
# tmisc38*: scale-offset chunks with a corrupt minbits that libhdf5 1.10 decodes
# into arbitrary values and later libhdf5 refuses ("minimum number of bits
# exceeds size of type"), as h5fs does.
HOSTILE = re.compile(r"CVE|bogus|bad_|_err_|corrupt|fuzz|tmisc38", re.I)
# Features h5fs refuses on purpose, with the message it must give (README,
# "Limitations"): a file is accepted as refused only with that message.
KNOWN_UNSUPPORTED = [
    ("file has a metadata cache image", "metadata cache image (run h5clear -m)"),
]
READ_CAP = 16 << 20     # bytes read per file from a mount of a bad file
WALK_LIMIT = 120        # seconds per file


def corpus_files():
    out = []
    for d, dirs, files in os.walk(CORPUS):
        dirs.sort()
        for n in sorted(files):
            p = os.path.join(d, n)
            try:
                with open(p, "rb") as fh:
                    head = fh.read(8)
            except OSError:
                continue
            # everything that is not obviously text goes in: a file h5py
            # rejects still must not hurt the daemon
            if n.endswith((".txt", ".md", ".ddl", ".ls", ".c", ".py", ".sh", ".cmake", ".xml",
                           ".json", ".err", ".tst", ".out")) or n.startswith("LICENSE"):
                continue
            if head.startswith(b"\x89HDF") or n.endswith((".h5", ".hdf5", ".he5", ".nc", ".h5f")) \
                    or b"\0" in head:
                out.append(p)
    return out


def walk_everything(mnt, cap):
    """Read every file of a mount (bounded); count errors. Never raises."""
    errors = 0
    total = 0
    for d, dirs, files in os.walk(mnt, onerror=lambda e: None):
        for n in files:
            p = os.path.join(d, n)
            try:
                if os.path.islink(p):
                    os.readlink(p)
                    continue
                with open(p, "rb") as fh:
                    while total < cap:
                        b = fh.read(1 << 20)
                        if not b:
                            break
                        total += len(b)
            except OSError:
                errors += 1
    return errors


def refused_ok(path, out):
    lines = [x for x in out.splitlines() if x.strip()]
    return len(lines) == 1 and lines[0].startswith("h5fs: %s: " % path)


def main():
    if not os.path.isdir(CORPUS):
        T.skip("corpus not found at %s" % CORPUS)
    wd = T.workdir("corpus")
    mnt = os.path.join(wd, "mnt")
    files = corpus_files()
    stats = dict(files=len(files), full_match=0, with_failures=0, chunked_issues=0,
                 h5py_rejects=0, refused=0, mounted_bad=0, crashed=0)
    failed_files = []
    chunked_files = []
    t0 = time.monotonic()
    for path in files:
        rel = os.path.relpath(path, CORPUS)
        cwd = os.path.dirname(path)
        try:
            expected, root_addr = T.h5py_tree(path, cwd=cwd)
        except Exception as e:
            expected = None
            why = str(e).splitlines()[0][:100] if str(e) else type(e).__name__
        m = T.Mount(path, mnt, opts=("-o", "ro"), cwd=cwd)
        if expected is None:
            stats["h5py_rejects"] += 1
            try:
                m.start()
            except T.MountError:
                out = m.output()
                if refused_ok(path, out):
                    stats["refused"] += 1
                    print("refused  %s (h5py: %s): %s" % (rel, why, out.strip().split(": ", 2)[-1][:120]))
                else:
                    stats["with_failures"] += 1
                    failed_files.append(rel)
                    print("FAIL     %s: refused without one 'h5fs: FILE: cause' line: %r" % (rel, out[:300]))
                continue
            try:
                with m.watchdog(WALK_LIMIT):
                    nerr = walk_everything(mnt, READ_CAP)
                alive = m.alive() and not m.hung
            finally:
                m.stop()
            if alive:
                stats["mounted_bad"] += 1
                print("mounted  %s (h5py: %s): walk done, %d EIO/errors" % (rel, why, nerr))
            else:
                stats["crashed"] += 1
                failed_files.append(rel)
                print("FAIL     %s: daemon %s during the walk: %s" % (
                    rel, "hung" if m.hung else "died", m.output()[-500:]))
            continue

        rep = T.Report(rel)
        try:
            m.start()
        except T.MountError as e:
            known = [why for pat, why in KNOWN_UNSUPPORTED if pat in str(e)]
            if known:
                stats["refused"] += 1
                print("refused  %s (known limitation: %s)" % (rel, known[0]))
                continue
            rep.bad("h5py opens it but h5fs refused: %s" % e)
        else:
            try:
                with m.watchdog(WALK_LIMIT):
                    T.compare(expected, root_addr, mnt, rep, windows=20, eio_ok=bool(HOSTILE.search(rel)))
                if m.hung:
                    rep.bad("daemon hung; killed after %d s" % WALK_LIMIT)
                elif not m.alive():
                    rep.bad("daemon died during the walk: %s" % m.output()[-500:])
            finally:
                m.stop()
            T.check_logs(rep, m.output())
            if m.hung or (m.returncode is not None and m.returncode < 0) or any(
                    "daemon died" in x or "daemon is gone" in x for x in rep.fail + rep.chunked_fail):
                stats["crashed"] += 1
                rep.fail.append("daemon crashed or hung (exit status %s)" % m.returncode)
        if rep.failed() or rep.fail:
            stats["with_failures"] += 1
            failed_files.append(rel)
            rep.notes = []
            rep.show(limit=8)
        elif rep.chunked_fail:
            stats["chunked_issues"] += 1
            chunked_files.append(rel)
            rep.notes = []
            rep.show(limit=4)
        else:
            stats["full_match"] += 1
            print("ok       %s (%d datasets, %d chunked)" % (rel, rep.compared, rep.chunked_ok))
    print()
    print("corpus summary (%.0f s): %s" % (time.monotonic() - t0,
                                           ", ".join("%s=%d" % kv for kv in stats.items())))
    if failed_files:
        print("files with failures (%d): %s" % (len(failed_files), " ".join(failed_files)))
    if chunked_files:
        print("files whose only problems are chunked/virtual datasets (%d%s): %s" % (
            len(chunked_files), "" if T.CHUNKED_STRICT else ", not fatal", " ".join(chunked_files)))
    bad = stats["with_failures"] + stats["crashed"] + (len(chunked_files) if T.CHUNKED_STRICT else 0)
    if not bad:
        import shutil
        shutil.rmtree(wd, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
