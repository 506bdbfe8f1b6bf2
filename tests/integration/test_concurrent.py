#!/usr/bin/python3
"""Several processes of every write kind at once on one mount (issue 56
item 7): appends (open, write, close: a commit each), pwrites of the same
dataset's first rows, setfattr, mkdir/rmdir, np.save over a name, cp over a
name, a new file renamed over a name (sed -i), truncates, and readers -
each recording every operation and its answer (conc_worker.py). After
unmount: every answered change is in FILE (the appended rows in order, the
last answered overwrite, attribute values, the groups made and not removed,
the last np.save, cp and rename, the last truncate's size), no operation
got an error (nothing failed here: no fault is injected), readers saw only
rows that were written, unmount exits 0 and libhdf5 reads FILE (h5py
visits every object; h5dump when installed). On h5py's default format and
libver="latest".

H5FS_CONC_SECONDS (default 3) sets how long the workers run.
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

SECS = float(os.environ.get("H5FS_CONC_SECONDS", "3"))
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conc_worker.py")
KINDS = ["append", "overwrite", "setfattr", "mkdir", "npsave", "cpover", "renameover", "truncate", "reader"]


def make(path, libver):
    with h5py.File(path, "w", libver=libver) as f:
        f.create_dataset("d/app", data=np.arange(100, dtype="<i8"), maxshape=(None,), chunks=(64,))
        f.create_group("g")
        f.create_dataset("s/arr", data=np.zeros((50, 7), dtype="<i4"))
        f.create_dataset("s/blob", data=np.frombuffer(b"old\n" * 10, dtype="u1"), maxshape=(None,),
                         chunks=(256,))
        f.create_dataset("r/txt", data=np.frombuffer(b"old text\n", dtype="u1"), maxshape=(None,),
                         chunks=(256,))
        f.create_dataset("t/grow", data=np.arange(8, dtype="<i8"), maxshape=(None,), chunks=(16,))


def load(log):
    with open(log) as fh:
        return [json.loads(ln) for ln in fh if ln.strip()]


def last_ok(recs):
    oks = [r for r in recs if r[2] == "ok"]
    return oks[-1] if oks else None


def check(h5, logs, tag):
    recs = {k: load(logs[k]) for k in KINDS}
    for k, rs in recs.items():
        bad = [r for r in rs if r[2] != "ok"]
        if bad:
            T.fail("%s %s: %d of %d operations failed, first %s" % (tag, k, len(bad), len(rs), bad[:3]))
        if not rs:
            T.fail("%s %s: no operation ran" % (tag, k))
    with h5py.File(h5, "r") as f:
        app = f["d/app"][()]
        want = np.concatenate([np.arange(100)] + [1000000 + np.arange(r[0], r[0] + r[1])
                                                   for r in recs["append"] if r[2] == "ok"])
        lo = last_ok(recs["overwrite"])
        if lo:
            want[:16] = -lo[1]
        if len(app) < len(want) or not np.array_equal(app[:len(want)], want):
            T.fail("%s append+overwrite: /d/app has %d rows, %d answered; first difference at %s"
                     % (tag, len(app), len(want), next((i for i in range(min(len(app), len(want)))
                                                         if app[i] != want[i]), "the end")))
        attrs = {}
        for r in recs["setfattr"]:
            if r[2] == "ok":
                attrs["a%d" % r[1]] = str(r[0])
        for name, v in attrs.items():
            got = f["g"].attrs.get(name)
            got = got.decode() if isinstance(got, bytes) else str(got)
            if got != v:
                T.fail("%s setfattr: /g %s is %r, last answered %r" % (tag, name, got, v))
        dirs = set()
        for r in recs["mkdir"]:
            if r[2] == "ok":
                (dirs.add if r[1][0] == "mkdir" else dirs.discard)(r[1][1])
        have = {k for k in f["g"] if k.startswith("sub")}
        if have != dirs:
            T.fail("%s mkdir/rmdir: /g holds %s, answered %s" % (tag, sorted(have), sorted(dirs)))
        lo = last_ok(recs["npsave"])
        if lo and not np.array_equal(f["s/arr"][()], np.full((50, 7), lo[1], dtype="<i4")):
            T.fail("%s np.save: /s/arr is not the last answered save %d" % (tag, lo[1]))
        lo = last_ok(recs["cpover"])
        if lo and f["s/blob"][()].tobytes() != ("copy %d\n" % lo[1]).encode() * 40:
            T.fail("%s cp: /s/blob is not the last answered copy %d" % (tag, lo[1]))
        lo = last_ok(recs["renameover"])
        if lo and f["r/txt"][()].tobytes() != ("text %d\n" % lo[1]).encode() * 30:
            T.fail("%s rename over: /r/txt is not the last renamed %d" % (tag, lo[1]))
        leftover = [k for k in f["r"] if k != "txt"]
        if leftover:
            T.fail("%s rename over: temporaries left: %s" % (tag, leftover[:5]))
        lo = last_ok(recs["truncate"])
        if lo and f["t/grow"].nbytes != lo[1]:
            T.fail("%s truncate: /t/grow is %d bytes, last answered %d" % (tag, f["t/grow"].nbytes, lo[1]))
        f.visititems(lambda n, o: o[()] if isinstance(o, h5py.Dataset) else None)
    bad = [r for r in recs["reader"] if r[2] == "bad"]
    if bad:
        T.fail("%s reader: %d reads saw rows never written, first %s (read, rows, -, row, value)"
               % (tag, len(bad), bad[0]))
    if shutil.which("h5dump"):
        p = subprocess.run(["h5dump", "-H", h5], capture_output=True, timeout=60)
        if p.returncode:
            T.fail("%s: h5dump -H fails: %s" % (tag, p.stderr.decode()[-300:]))
    return {k: sum(1 for r in rs if r[2] == "ok") for k, rs in recs.items()}


def main():
    work = T.workdir("concurrent")
    for libver in ("earliest", "latest"):
        tag = "libver=%s" % libver
        h5 = os.path.join(work, "c_%s.h5" % libver)
        mnt = os.path.join(work, "mnt_%s" % libver)
        os.makedirs(mnt, exist_ok=True)
        make(h5, libver)
        logs = {k: os.path.join(work, "%s_%s.log" % (libver, k)) for k in KINDS}
        m = T.Mount(h5, mnt)
        m.start()
        procs = []
        try:
            for i, k in enumerate(KINDS):
                procs.append(subprocess.Popen([sys.executable, WORKER, k, mnt, str(SECS), logs[k], str(i + 1)]))
            for p in procs:
                try:
                    p.wait(timeout=SECS + 60)
                except subprocess.TimeoutExpired:
                    T.fail("%s: a worker hangs" % tag)
        finally:
            for p in procs:
                T.stop_process(p)
            m.stop()
        rc = m.returncode
        out = m.output()
        if rc:
            T.fail("%s: unmount exits %s: %s" % (tag, rc, out[-500:]))
        if "lost" in out or "refused" in out:
            T.fail("%s: the log reports lost or refused changes: %s" % (tag, out[-800:]))
        counts = check(h5, logs, tag)
        print("%s: answered %s" % (tag, counts))
    sys.exit(T.finish())


if __name__ == "__main__":
    main()
