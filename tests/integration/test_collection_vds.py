#!/usr/bin/python3
"""A virtual dataset whose sources are other files of the collection
(issue 35: `links/vds.h5:/stack` read EIO through the collection mount
where the file mounted alone read): links/vds.h5's /stack takes its rows
from links/a.h5 ("a.h5"), links/b.h5 ("./b.h5") and links/sub/c.h5
("sub/c.h5"), one source per row block, and a row block no source maps
(the fill value). DIR is mounted without an index, with one (cold: the
member is recorded), and again on that index (warm: an indexed root that
opens the member for the bytes); every byte of /stack, read whole and in
unaligned pieces, equals h5py's, as does the file mounted alone. With
-o max_files=4 (the member and its three sources, what the lookup of
/stack holds open at once) it reads too, and with fewer descriptors than
that (-o max_files=3 and 2, also on the index; issue 45 item 3: EIO
before) the virtual dataset turns scarce: its sources are opened one at
a time for each read (dataset_vds.c).

A low open-file limit (the daemon started under `ulimit -n 40`, issue 45
item 3): 30 members, three virtual datasets over all 30, read by two
readers at once, each byte as h5py's, and no EIO or EMFILE. (With six
readers, one loaded CI run got EMFILE with no log line: most likely the
kernel's limit, reached because FUSE's worker threads each hold a splice
pipe pair that max_files does not count; issue 45.) The default
max_files was once 1 there (64 descriptors kept for the daemon), which no
virtual dataset over other members can be read with; now half the limit,
and when the kernel refuses a descriptor (FUSE's pipes and the rest take
more than the daemon's half) an idle member is closed and the open tried
again. Six readers once outwaited the 10 s a source's open waits for a
descriptor (a virtual dataset being opened held up to max_files sources
while waiting for another reader's: it now turns scarce at once), and
two crashed the daemon: a member opened twice by two requests (one slot,
two roots), and a member closed between a read's reply and its end (the
handle's RELEASE came in between).
"""
import concurrent.futures
import hashlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()

ROWS, COLS = 7, 1000    # rows of each source; 8000-byte rows: reads cross them


def make(top):
    """The collection, written deterministically by h5py (a subprocess:
    h5py's file handles closed before anything is mounted)."""
    code = r'''
import os, sys
import h5py, numpy as np
top = sys.argv[1]
rows, cols = %d, %d
links = os.path.join(top, "links")
os.makedirs(os.path.join(links, "sub"), exist_ok=True)
names = [("a.h5", "a.h5"), ("b.h5", "./b.h5"), (os.path.join("sub", "c.h5"), "sub/c.h5")]
for i, (path, _) in enumerate(names):
    with h5py.File(os.path.join(links, path), "w", libver="latest") as f:
        f["data"] = (np.arange(rows * cols, dtype="<f8").reshape(rows, cols) * (i + 1) + 0.25 * i)
lay = h5py.VirtualLayout(shape=(4 * rows, cols), dtype="<f8")
for i, (_, name) in enumerate(names):
    lay[i * rows:(i + 1) * rows] = h5py.VirtualSource(name, "data", shape=(rows, cols))
with h5py.File(os.path.join(links, "vds.h5"), "w", libver="latest") as f:
    f.create_virtual_dataset("stack", lay, fillvalue=-1.5)
with open(os.path.join(top, "plain.txt"), "w") as fh:
    fh.write("not hdf5\n")
''' % (ROWS, COLS)
    subprocess.run(["/usr/bin/python3", "-c", code, top], check=True, timeout=120)


def expected(top):
    """/stack's bytes as h5py reads them (from links/, where libhdf5
    finds the sources beside the VDS file)."""
    code = ("import sys, h5py; f = h5py.File(sys.argv[1], 'r'); "
            "sys.stdout.buffer.write(f['stack'][()].astype('<f8').tobytes())")
    r = subprocess.run(["/usr/bin/python3", "-c", code, os.path.join(top, "links", "vds.h5")],
                       check=True, timeout=120, stdout=subprocess.PIPE, cwd=os.path.join(top, "links"))
    return r.stdout


def check_bytes(what, path, want):
    with open(path, "rb") as fh:
        got = fh.read()
    if got != want:
        T.fail("%s: %d bytes read, sha256 %s; h5py's %d bytes %s" % (
            what, len(got), hashlib.sha256(got).hexdigest()[:16], len(want), hashlib.sha256(want).hexdigest()[:16]))
        return
    # unaligned pieces crossing rows and sources
    with open(path, "rb") as fh:
        for off, n in ((0, 1), (7999, 3), (ROWS * COLS * 8 - 5, 11), (2 * ROWS * COLS * 8 - 100, 9000),
                       (3 * ROWS * COLS * 8 - 4096, 8192), (len(want) - 17, 17)):
            fh.seek(off)
            piece = fh.read(n)
            if piece != want[off:off + n]:
                T.fail("%s: %d bytes at %d differ from h5py's" % (what, n, off))


NSRC, SROWS, SCOLS = 30, 4, 500


def make_many(top):
    """NSRC members s00.h5 ... and vds0-2.h5, each a virtual dataset of
    all of them (row block i from s%02d.h5)."""
    code = r'''
import os, sys
import h5py, numpy as np
top, n, rows, cols = sys.argv[1], %d, %d, %d
os.makedirs(top, exist_ok=True)
for i in range(n):
    with h5py.File(os.path.join(top, "s%%02d.h5" %% i), "w", libver="latest") as f:
        f["data"] = np.arange(rows * cols, dtype="<f8").reshape(rows, cols) * (i + 1)
lay = h5py.VirtualLayout(shape=(n * rows, cols), dtype="<f8")
for i in range(n):
    lay[i * rows:(i + 1) * rows] = h5py.VirtualSource("s%%02d.h5" %% i, "data", shape=(rows, cols))
for k in range(3):
    with h5py.File(os.path.join(top, "vds%%d.h5" %% k), "w", libver="latest") as f:
        f.create_virtual_dataset("stack", lay, fillvalue=-1.5)
''' % (NSRC, SROWS, SCOLS)
    subprocess.run(["/usr/bin/python3", "-c", code, top], check=True, timeout=120)
    code = ("import sys, os, h5py\n"
            "for n in sorted(os.listdir(sys.argv[1])):\n"
            "    f = h5py.File(os.path.join(sys.argv[1], n), 'r')\n"
            "    k = 'stack' if n.startswith('vds') else 'data'\n"
            "    b = f[k][()].astype('<f8').tobytes()\n"
            "    sys.stdout.buffer.write(b'%s %s %d\\n' % (n.encode(), k.encode(), len(b)) + b)\n")
    r = subprocess.run(["/usr/bin/python3", "-c", code, top], check=True, timeout=120, stdout=subprocess.PIPE,
                       cwd=top)
    want, out = {}, r.stdout
    while out:
        head, _, rest = out.partition(b"\n")
        name, key, n = head.decode().split()
        want[os.path.join(name, key)] = rest[:int(n)]
        out = rest[int(n):]
    return want


def scarce_descriptors(work):
    top = os.path.join(work, "many")
    want = make_many(top)
    mnt = os.path.join(work, "mnt40")
    with T.Mount(top, mnt, ["-o", "noindex"], nofile=40) as m:
        with m.watchdog(120):
            subprocess.run(["find", mnt], check=True, timeout=60, stdout=subprocess.DEVNULL)
            jobs = ([p for p in sorted(want) if p.startswith("vds")] * 3 + sorted(want)) * 2

            def read(p):
                try:
                    with open(os.path.join(mnt, p), "rb") as fh:
                        return p, fh.read()
                except OSError as e:
                    T.fail("ulimit -n 40: %s: %s; the daemon: %s" % (p, e, m.output().strip()[-1500:]))
                    return p, None
            with concurrent.futures.ThreadPoolExecutor(2) as ex:
                for p, got in ex.map(read, jobs):
                    if got is not None and got != want[p]:
                        T.fail("ulimit -n 40: %s: %d bytes read differ from h5py's %d" % (p, len(got), len(want[p])))
            for p in sorted(want):      # and one at a time, after them
                got = read(p)[1]
                if got is not None and got != want[p]:
                    T.fail("ulimit -n 40, one reader: %s differs from h5py's" % p)
        out = m.output()
        if "EIO" in out or "rror" in out or "no descriptor left" in out or "EMFILE" in out:
            T.fail("ulimit -n 40: the daemon logged: %s" % out.strip()[-2500:])
        if "open-file limit 40: 20" not in out:
            T.fail("ulimit -n 40: max_files not lowered to 20: %s" % out.strip()[:300])
    print("ulimit -n 40: %d members and 3 virtual datasets over 30 of them read as h5py's by 2 readers"
          % len(want))


def main():
    work = T.workdir("collvds")
    top = os.path.join(work, "dir")
    make(top)
    want = expected(top)
    if len(want) != 4 * ROWS * COLS * 8:
        T.fail("h5py read %d bytes of /stack" % len(want))
    mnt = os.path.join(work, "mnt")
    index = os.path.join(work, "index.sqlite")
    stack = os.path.join(mnt, "links", "vds.h5", "stack")

    # the file alone (its sources beside it)
    with T.Mount(os.path.join(top, "links", "vds.h5"), mnt) as m:
        with m.watchdog(60):
            check_bytes("links/vds.h5 mounted alone", os.path.join(mnt, "stack"), want)
    for what, opts in (("-o noindex", ["-o", "noindex"]),
                       ("cold indexed", ["-o", "index=" + index]),
                       ("warm indexed", ["-o", "index=" + index]),
                       # the member and its three sources at once: what a
                       # VDS's lookup holds
                       ("-o max_files=4", ["-o", "noindex,max_files=4"]),
                       # fewer: the sources opened one at a time
                       ("-o max_files=3", ["-o", "noindex,max_files=3"]),
                       ("-o max_files=2", ["-o", "noindex,max_files=2"]),
                       ("indexed, -o max_files=2", ["-o", "max_files=2,index=" + index])):
        with T.Mount(top, mnt, opts) as m:
            with m.watchdog(60):
                # a walk first (the cold mount records vds.h5 then), as find does
                subprocess.run(["find", mnt], check=True, timeout=60, stdout=subprocess.DEVNULL)
                check_bytes("collection, " + what, stack, want)
                st = os.stat(stack)
                if st.st_size != len(want):
                    T.fail("collection, %s: st_size %d, want %d" % (what, st.st_size, len(want)))
            if "EIO" in m.output() or "rror" in m.output():
                T.fail("collection, %s: the daemon logged: %s" % (what, m.output().strip()[:500]))
    print("links/vds.h5:/stack (sources a.h5, ./b.h5, sub/c.h5) reads as h5py's through the collection")
    scarce_descriptors(work)
    return T.finish()


if __name__ == "__main__":
    sys.exit(main())
