#!/usr/bin/python3
"""One writer (or reader) of test_concurrent.py: runs its kind of operation
on the mount until its deadline, and records each operation with its
answer (JSON lines: [seq, value, "ok" | errno]) for the checker.

    conc_worker.py KIND MNT SECONDS LOG SEED
"""
import errno
import json
import os
import random
import sys
import time

import numpy as np

kind, mnt, secs, log, seed = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4], int(sys.argv[5])
rng = random.Random(seed)
stop = time.monotonic() + secs
out = open(log, "w")


def rec(seq, val, ans):
    out.write(json.dumps([seq, val, ans]) + "\n")
    out.flush()


def run(seq, val, fn):
    try:
        fn()
        rec(seq, val, "ok")
    except OSError as e:
        rec(seq, val, e.errno)


def append():
    # cat >> rows: open, write whole rows, close (a commit each time)
    i = 0
    while time.monotonic() < stop:
        n = rng.randint(1, 40)
        b = np.arange(1000000 + i, 1000000 + i + n, dtype="<i8").tobytes()

        def op():
            fd = os.open(mnt + "/d/app", os.O_WRONLY | os.O_APPEND)
            try:
                os.write(fd, b)
            finally:
                os.close(fd)
        run(i, n, op)
        i += n


def overwrite():
    # pwrite of the first 16 rows, value -k
    k = 0
    while time.monotonic() < stop:
        k += 1
        b = np.full(16, -k, dtype="<i8").tobytes()

        def op():
            fd = os.open(mnt + "/d/app", os.O_WRONLY)
            try:
                os.pwrite(fd, b, 0)
            finally:
                os.close(fd)
        run(k, k, op)


def setfattr():
    k = 0
    while time.monotonic() < stop:
        k += 1
        run(k, k % 12, lambda: os.setxattr(mnt + "/g", "user.a%d" % (k % 12), str(k).encode()))


def mkdir():
    k = 0
    while time.monotonic() < stop:
        k += 1
        name = mnt + "/g/sub%d" % rng.randint(0, 30)
        if os.path.isdir(name):
            run(k, ["rmdir", os.path.basename(name)], lambda: os.rmdir(name))
        else:
            run(k, ["mkdir", os.path.basename(name)], lambda: os.mkdir(name))


def npsave():
    # np.save over the same name: the old array stays until the new one is in
    k = 0
    while time.monotonic() < stop:
        k += 1
        a = np.full((50, 7), k, dtype="<i4")
        run(k, k, lambda: np.save(mnt + "/s/arr.npy", a))


def cpover():
    k = 0
    src = log + ".src"
    while time.monotonic() < stop:
        k += 1
        with open(src, "wb") as fh:
            fh.write(("copy %d\n" % k).encode() * 40)

        def op():
            with open(src, "rb") as a, open(mnt + "/s/blob", "wb") as b:
                b.write(a.read())
        run(k, k, op)


def renameover():
    # as sed -i: a new file beside, renamed over the name
    k = 0
    while time.monotonic() < stop:
        k += 1

        def op():
            tmp = mnt + "/r/.tmp%d" % k
            with open(tmp, "wb") as b:
                b.write(("text %d\n" % k).encode() * 30)
            os.rename(tmp, mnt + "/r/txt")
        run(k, k, op)


def truncate():
    # to 0 (emptied) or more whole rows (fill appended): fewer rows but not
    # 0 is EPERM by the man page
    k = 0
    while time.monotonic() < stop:
        k += 1
        try:
            cur = os.stat(mnt + "/t/grow").st_size
        except OSError as e:
            rec(k, -1, e.errno)
            continue
        n = 0 if cur > 4096 or rng.random() < 0.3 else cur + rng.randint(1, 64) * 8
        run(k, n, lambda: os.truncate(mnt + "/t/grow", n))


def reader():
    # rows past 16 only ever hold appended values, in order
    k = 0
    while time.monotonic() < stop:
        k += 1
        try:
            with open(mnt + "/d/app", "rb") as fh:
                a = np.frombuffer(fh.read(), dtype="<i8")
            ok = len(a) >= 100 and np.array_equal(a[16:100], np.arange(16, 100)) and \
                np.array_equal(a[100:], 1000000 + np.arange(len(a) - 100))
            if ok:
                rec(k, len(a), "ok")
            else:
                # where it went wrong, for the checker's message
                want = np.concatenate([np.arange(100), 1000000 + np.arange(max(len(a) - 100, 0))])[:len(a)]
                want[:16] = a[:16]
                i = int(np.argmax(a != want)) if len(a) >= 100 else -1
                out.write(json.dumps([k, len(a), "bad", i, int(a[i]) if i >= 0 else None]) + "\n")
                out.flush()
        except OSError as e:
            rec(k, 0, e.errno)


{"append": append, "overwrite": overwrite, "setfattr": setfattr, "mkdir": mkdir, "npsave": npsave,
 "cpover": cpover, "renameover": renameover, "truncate": truncate, "reader": reader}[kind]()
out.close()
