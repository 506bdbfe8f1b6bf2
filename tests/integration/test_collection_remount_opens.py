#!/usr/bin/python3
"""An indexed remount opens no member file the walk does not read (issue
45 item 3). DIR: make_vds_fixtures.py's virtual datasets (among them
loop_a.h5 and loop_b.h5, whose datasets read each other: a cycle;
typed.h5 and outside.h5, a dataset each that cannot be read), 20 plain
members, bad/badroot.h5 (a superblock whose root group lies past the
end) and bad/corrupt.h5. A first mount with -o index= walks DIR (find,
then every entry's xattrs, as getfattr -R does) and records it; the
daemon of a second mount on that index is traced (strace -f -p, openat
and openat2) while `ls -lR` and the same walk run, and its opens of
DIR's files are counted:

- a member the index recorded is never opened, unless it is a source of
  a member the index could not record (a virtual dataset with an
  unreadable object is read live: its sources with it);
- bad/badroot.h5 is not opened again: the index remembers it unreadable
  (before: opened by every walk, its root group failing after the open);
- loop_a.h5 and loop_b.h5 are opened twice per access of their /v, not
  16 times (each level of the cycle was an open of the other file, 8
  levels deep: 49 opens each for one ls -lR).

Not done (issue 45 item 3, what is left): a member with an object that
fails (loop_a/b, typed, outside) is not recorded at all, so every
remount opens it (and the sources of its virtual datasets) live.

Needs strace (exit 77 without)."""
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
if not shutil.which("strace"):
    T.skip("strace missing (Debian strace)")

# the sources of the virtual datasets the index cannot record (their
# tree has an object that fails): read live with them
LIVE = {"vds/loop_a.h5", "vds/loop_b.h5", "vds/typed.h5", "vds/outside.h5"}
# per file, for ls -lR and the walk together: every access of the
# unreadable /v (not kept: the member's error is its own to give) opens
# the other file of the cycle and resolves its own name once (2); 17 were
# seen, 131 before the cycle was found at once (49 for ls -lR alone)
LOOP_OPENS_MAX = 24


def make(top):
    code = r'''
import os, sys, struct
import h5py, numpy as np
sys.path.insert(0, sys.argv[2])
import make_vds_fixtures
top = sys.argv[1]
make_vds_fixtures.make(os.path.join(top, "vds"))
os.makedirs(os.path.join(top, "plain"), exist_ok=True)
for i in range(20):
    with h5py.File(os.path.join(top, "plain", "p%02d.h5" % i), "w") as f:
        f["d"] = np.arange(100) * i
        f["d"].attrs["i"] = i
os.makedirs(os.path.join(top, "bad"), exist_ok=True)
p = os.path.join(top, "bad", "badroot.h5")
with h5py.File(p, "w", libver="earliest") as f:
    f["x"] = np.arange(10)
blob = bytearray(open(p, "rb").read())
struct.pack_into("<Q", blob, 64, len(blob) + 4096)   # the root's header address: past the end
open(p, "wb").write(bytes(blob))
p = os.path.join(top, "bad", "corrupt.h5")
with h5py.File(p, "w", libver="latest") as f:
    f["x"] = np.arange(10)
blob = bytearray(open(p, "rb").read())
blob[40] ^= 0x10
open(p, "wb").write(bytes(blob))
'''
    subprocess.run(["/usr/bin/python3", "-c", code, top, os.path.dirname(os.path.abspath(__file__))], check=True,
                   timeout=300)


def walk(mnt):
    """find, then every entry's xattrs (getfattr -R -d)."""
    subprocess.run(["find", mnt], timeout=300, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for d, dirs, files in os.walk(mnt):
        for n in dirs + files:
            p = os.path.join(d, n)
            try:
                for x in os.listxattr(p, follow_symlinks=False):
                    os.getxattr(p, x, follow_symlinks=False)
            except OSError:
                pass    # the unreadable objects: EIO, as on the first mount


def traced_opens(m, top, fn):
    """fn() run with the daemon traced: {path in DIR: opens}."""
    log = os.path.join(os.path.dirname(top), "strace.txt")
    st = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=openat,openat2", "-o", log, "-p", str(m.proc.pid)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)         # attached to every thread
        fn()
    finally:
        st.send_signal(signal.SIGINT)
        try:
            st.wait(timeout=30)
        except subprocess.TimeoutExpired:
            st.kill()
            st.wait(timeout=30)
    members = set()
    for d, _, files in os.walk(top):
        for n in files:
            members.add(os.path.relpath(os.path.join(d, n), top))
    count = {}
    with open(log, errors="replace") as fh:
        for ln in fh:
            if "= -1" in ln:
                continue
            m2 = re.search(r'openat2?\([^"]*"([^"]+)"', ln)
            if not m2:
                continue
            p = m2.group(1)
            rel = os.path.relpath(p, top) if p.startswith("/") else p
            if rel in members:
                count[rel] = count.get(rel, 0) + 1
    return count


def main():
    work = T.workdir("remount_opens")
    top = os.path.join(work, "dir")
    make(top)
    real = os.path.realpath(top)
    mnt = os.path.join(work, "mnt")
    index = os.path.join(work, "index.sqlite")
    with T.Mount(top, mnt, ["-o", "index=" + index]) as m:
        with m.watchdog(300):
            walk(mnt)
    db = sqlite3.connect(index)
    recorded = {r[0] for r in db.execute("SELECT path FROM member")}
    db.close()
    if "plain/p00.h5" not in recorded or "vds/src_0.h5" not in recorded:
        T.fail("the first mount recorded %d members, not the plain ones: %s" % (len(recorded), sorted(recorded)[:10]))
    with T.Mount(top, mnt, ["-o", "index=" + index]) as m:
        with m.watchdog(300):
            opens = traced_opens(m, real, lambda: (
                subprocess.run(["ls", "-lR", mnt], timeout=300, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
                walk(mnt)))
    print("opens of DIR's files on the indexed remount: %s" % sorted(opens.items()))
    for p, n in sorted(opens.items()):
        if p in recorded and not p.startswith("vds/"):
            T.fail("%s: recorded in the index, yet opened %d times" % (p, n))
    if "bad/badroot.h5" in opens:
        T.fail("bad/badroot.h5 opened %d times: not remembered unreadable" % opens["bad/badroot.h5"])
    for p in ("vds/loop_a.h5", "vds/loop_b.h5"):
        if opens.get(p, 0) > LOOP_OPENS_MAX:
            T.fail("%s opened %d times (at most %d: the cycle is found at once)" % (p, opens[p], LOOP_OPENS_MAX))
    vds_recorded = {p for p in recorded if p.startswith("vds/")}
    for p in sorted(set(opens) & vds_recorded):
        # a recorded member of vds/ opened: only as a source of one read live
        if p not in ("vds/src_0.h5", "vds/src_1.h5", "vds/src_2.h5", "vds/src_3.h5", "vds/short.h5"):
            T.fail("%s: recorded, and no source of %s, yet opened %d times" % (p, sorted(LIVE), opens[p]))
    if not opens or not set(opens) & LIVE:
        T.fail("no open of the members the index cannot record: the trace saw nothing? %s" % opens)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
