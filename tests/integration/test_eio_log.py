#!/usr/bin/python3
"""Every EIO the mount returns has one log line naming the object and why
(doc/h5fs.1, LOGGING).  An h5py file gets two kinds of damage:
- one dataset's object header: a byte inside its checksummed first chunk
  is flipped, so looking it up fails (EIO);
- another dataset's first chunk: its deflate stream is overwritten, so
  reading fails (EIO) while stat still works;
- a third one's chunk is a deflate stream that runs past the chunk's size
  and then breaks (cut short): damaged, logged as "corrupt chunk data",
  not as a "decompression bomb" (issue 83 item 7d).
Mounted in the foreground (-f), stderr must then hold, for each, a line
"h5fs: <op> <path> ... (object header 0x<addr>): EIO: <reason>"; the
healthy datasets next to them still read correctly; every EIO line names a
path; and without -o verbose/debug nothing but errors is logged."""
import errno
import zlib
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

fails = []


def make(path):
    with h5py.File(path, "w", libver="latest") as f:
        f.create_dataset("good", data=np.arange(1000, dtype="<f8"), track_times=False)
        g = f.create_group("grp")
        g.create_dataset("bad_header", data=np.arange(500, dtype="<i4"), track_times=False)
        g.create_dataset("bad_chunk", data=np.arange(20000, dtype="<i4"), chunks=(5000,),
                         compression="gzip", track_times=False)
        g.create_dataset("ok", data=np.arange(100, dtype="<u2"), track_times=False)
        t = g.create_dataset("bad_tail", data=np.arange(20000, dtype="<i4"), chunks=(5000,),
                             compression="gzip", track_times=False)
        # four chunks' worth of varied bytes, its stream cut at 3/4: it
        # decodes past the 20,000 bytes of a chunk, then breaks
        noise = np.random.default_rng(7).integers(0, 256, 80000, dtype=np.uint8).tobytes()
        z = zlib.compress(noise, 1)
        t.id.write_direct_chunk((0,), z[:len(z) * 3 // 4])
    with h5py.File(path, "r") as f:
        hdr = h5py.h5o.get_info(f["grp/bad_header"].id).addr
        chunk = f["grp/bad_chunk"].id.get_chunk_info(0)
        good = f["good"][()].tobytes()
        ok = f["grp/ok"][()].tobytes()
    with open(path, "r+b") as fh:
        fh.seek(hdr)
        head = fh.read(16)
        if head[:4] != b"OHDR":
            raise SystemExit("expected a v2 object header at 0x%x, got %r" % (hdr, head[:4]))
        # byte 12: past signature, version, flags and chunk size, inside
        # the messages covered by the header's checksum
        fh.seek(hdr + 12)
        b = fh.read(1)
        fh.seek(hdr + 12)
        fh.write(bytes([b[0] ^ 0x5a]))
        # the middle of the first chunk's zlib stream
        fh.seek(chunk.byte_offset + 8)
        fh.write(b"\xff" * min(64, chunk.size - 16))
    return hdr, good, ok


def check_levels(h5, mnt):
    """-o verbose adds informational lines (mounted, unmounted); -o debug
    adds debug lines, e.g. for a name that is not there."""
    for opt, want in (("verbose", ["mounted at", "unmounted"]), ("debug", ["mounted at", "no_such_name"])):
        m = T.Mount(h5, mnt, opts=["-o", opt])
        try:
            m.start()
            with m.watchdog(60):
                try:
                    os.stat(os.path.join(mnt, "no_such_name"))
                except OSError:
                    pass
        except T.MountError as e:
            fails.append("-o %s: %s" % (opt, e))
            continue
        finally:
            m.stop()
        out = m.output()
        for w in want:
            if not any(w in ln and ln.startswith("h5fs: ") for ln in out.splitlines()):
                fails.append("-o %s: no log line with %r in %r" % (opt, w, out[-1500:]))
        if opt == "verbose" and "no_such_name" in out:
            fails.append("-o verbose logged a debug message: %r" % out[-1500:])
        print("ok   -o %s logs %s" % (opt, want))


def main():
    wd = T.workdir("eiolog")
    h5 = os.path.join(wd, "damaged.h5")
    hdr, good, ok = make(h5)
    mnt = os.path.join(wd, "mnt")
    m = T.Mount(h5, mnt)
    eio = {"header": 0, "chunk": 0}
    try:
        m.start()
        with m.watchdog(60):
            for _ in range(2):
                try:
                    os.stat(os.path.join(mnt, "grp", "bad_header"))
                    fails.append("stat of the damaged header succeeded")
                except OSError as e:
                    if e.errno != errno.EIO:
                        fails.append("stat of the damaged header: %s, expected EIO" % e)
                    else:
                        eio["header"] += 1
            try:
                st = os.stat(os.path.join(mnt, "grp", "bad_chunk"))
                if st.st_size != 80000:
                    fails.append("bad_chunk st_size %d" % st.st_size)
                with open(os.path.join(mnt, "grp", "bad_chunk"), "rb") as fh:
                    fh.read()
                fails.append("read of the damaged chunk succeeded")
            except OSError as e:
                if e.errno != errno.EIO:
                    fails.append("read of the damaged chunk: %s, expected EIO" % e)
                else:
                    eio["chunk"] += 1
            for name, want in (("good", good), ("grp/ok", ok)):
                with open(os.path.join(mnt, name), "rb") as fh:
                    if fh.read() != want:
                        fails.append("%s: wrong bytes next to the damage" % name)
            try:
                with open(os.path.join(mnt, "grp", "bad_tail"), "rb") as fh:
                    fh.read(20000)
                fails.append("read of the chunk cut short succeeded")
            except OSError as e:
                if e.errno != errno.EIO:
                    fails.append("read of the chunk cut short: %s, expected EIO" % e)
            names = sorted(os.listdir(os.path.join(mnt, "grp")))
            if names != ["bad_chunk", "bad_header", "bad_tail", "ok"]:
                fails.append("listing of /grp: %r" % names)
    except T.MountError as e:
        fails.append("mount: %s" % e)
    finally:
        m.stop()
    log = m.output()
    lines = [ln for ln in log.splitlines() if ln.strip()]
    hdr_lines = [ln for ln in lines if "/grp/bad_header" in ln]
    chunk_lines = [ln for ln in lines if "/grp/bad_chunk" in ln]
    pat = re.compile(r"^h5fs: \S+.* (/\S*)( \[\d+\+\d+\])? \(object header 0x[0-9a-f]+\): EIO: \S")
    if eio["header"] and not any(pat.match(ln) and ("0x%x" % hdr) in ln for ln in hdr_lines):
        fails.append("no log line names /grp/bad_header with object header 0x%x: %r" % (hdr, lines))
    tail_lines = [ln for ln in lines if "/grp/bad_tail" in ln]
    if not tail_lines or any("bomb" in ln or "corrupt chunk data" not in ln for ln in tail_lines):
        fails.append("the chunk cut short is not logged as corrupt chunk data: %r" % tail_lines)
    if eio["chunk"] and not any(pat.match(ln) and ln.startswith("h5fs: read ") for ln in chunk_lines):
        fails.append("no 'read' log line names /grp/bad_chunk: %r" % lines)
    # one line per EIO: the kernel sends one LOOKUP per failed stat; a
    # failed read(2) is a readahead READ plus a retry of the page alone (a
    # few at most, depending on the kernel), each answered EIO once
    if len(hdr_lines) != eio["header"]:
        fails.append("%d EIOs for bad_header but %d log lines: %r" % (eio["header"], len(hdr_lines), hdr_lines))
    if eio["chunk"] and not 1 <= len(chunk_lines) <= 4:
        fails.append("%d log lines for one failed read of bad_chunk: %r" % (len(chunk_lines), chunk_lines))
    for ln in lines:
        if "EIO" in ln and not pat.match(ln):
            fails.append("EIO line without a path and object: %r" % ln)
        if not ln.startswith("h5fs: "):
            fails.append("log line without the h5fs: prefix: %r" % ln)
    if m.returncode != 0:
        fails.append("exit status %s after unmount" % m.returncode)
    for ln in lines:
        if "EIO" not in ln:
            fails.append("default log level logged more than errors: %r" % ln)
    for ln in lines:
        print("log: " + ln)
    check_levels(h5, mnt)
    for f in fails:
        print("FAIL " + f)
    if not fails:
        shutil.rmtree(wd, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
