#!/usr/bin/python3
"""A codec library missing at run time (issue 45: the codecs other than
deflate are opened on first use, src/h5core/base/dl.c).

An h5py file holds a gzip+shuffle dataset (zlib and libdeflate are linked),
an szip one (libaec, opened when first read) and a zstd one (its chunks
compressed by python3-zstandard, written with write_direct_chunk).  The
daemon runs with H5FS_TEST_DL_DIR, the loader's tests-only switch: the
codec libraries are opened from that directory, which holds a link to
each installed codec library but libzstd.so.1, so that dlopen really
fails.  Then, through the mount:
- reading the zstd dataset fails with EIO, each time, and each failed read
  has its log line (at most 4: the kernel's readahead and retries) saying
  "zstd filter: libzstd.so.1 not found: install libzstd1";
- the gzip and szip datasets read byte for byte what h5py reads (so the
  directory does serve the libraries it holds), before and after that, and
  the daemon is alive and unmounts with status 0;
- h5fs-ls lists the file, the zstd dataset included, with no codec library
  at all (an empty directory): listing needs none.
Without the switch the same mount reads the zstd dataset's values."""
import errno
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import h5fs_testlib as T  # noqa: E402

T.require_h5py()
T.require_fuse()
import h5py  # noqa: E402
import numpy as np  # noqa: E402

# The sonames the filters open (filter_*.c), all but the one hidden.
SONAMES = ["libzstd.so.1", "liblz4.so.1", "libblosc.so.1", "libbz2.so.1.0", "libaec.so.0", "libsz.so.2",
           "liblzo2.so.2", "libzfp.so.1"]
HIDDEN = "libzstd.so.1"
MESSAGE = "zstd filter: libzstd.so.1 not found: install libzstd1"



def config_has(macro):
    with open(os.path.join(T.BUILDDIR, "config.h")) as fh:
        return any(ln.startswith("#define %s " % macro) for ln in fh)


def installed():
    """{soname: path} of the codec libraries ldconfig knows."""
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
    found = {}
    for ln in out.splitlines():
        parts = ln.strip().split(" => ")
        name = parts[0].split(" ")[0]
        # the 64-bit one first: ldconfig lists every ABI's
        if len(parts) == 2 and name in SONAMES and ("x86-64" in parts[0] or name not in found):
            found[name] = parts[1]
    return found


def make(path):
    import zstandard
    v = {"gz": np.arange(40000, dtype="<i4").reshape(200, 200) * 7,
         "sz": np.arange(40000, dtype="<i4").reshape(200, 200) % 1000,
         "zs": np.arange(40000, dtype="<i4").reshape(200, 200) * -3}
    with h5py.File(path, "w") as f:
        f.create_dataset("gz", data=v["gz"], chunks=(50, 50), compression="gzip", shuffle=True)
        f.create_dataset("sz", data=v["sz"], chunks=(50, 50), compression="szip", compression_opts=("nn", 16))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((50, 50))
        # optional: libhdf5 without the plugin accepts the pipeline
        dcpl.set_filter(32015, h5py.h5z.FLAG_OPTIONAL, (3,))
        h5py.h5d.create(f.id, b"zs", h5py.h5t.py_create(np.dtype("<i4")), h5py.h5s.create_simple((200, 200)),
                        dcpl=dcpl)
        zc = zstandard.ZstdCompressor(level=3)
        for r0 in range(0, 200, 50):
            for c0 in range(0, 200, 50):
                blk = np.ascontiguousarray(v["zs"][r0:r0 + 50, c0:c0 + 50])
                f["zs"].id.write_direct_chunk((r0, c0), zc.compress(blk.tobytes()), filter_mask=0)
    return {k: a.tobytes() for k, a in v.items()}


def read(mnt, name):
    with open(os.path.join(mnt, name), "rb") as fh:
        return fh.read()


def hidden_run(h5, mnt, libdir, want):
    os.environ["H5FS_TEST_DL_DIR"] = libdir
    m = T.Mount(h5, mnt)
    eio = 0
    try:
        m.start()
        with m.watchdog(60):
            for name in ("gz", "sz"):
                if read(mnt, name) != want[name]:
                    T.fail("%s: wrong bytes with %s hidden" % (name, HIDDEN))
            for _ in range(2):
                try:
                    read(mnt, "zs")
                    T.fail("zs read with %s hidden" % HIDDEN)
                except OSError as e:
                    if e.errno != errno.EIO:
                        T.fail("zs: %s, expected EIO" % e)
                    else:
                        eio += 1
            for name in ("gz", "sz"):
                if read(mnt, name) != want[name]:
                    T.fail("%s: wrong bytes after the failed reads" % name)
            if os.stat(os.path.join(mnt, "zs")).st_size != len(want["zs"]):
                T.fail("zs: st_size changed")
    except T.MountError as e:
        T.fail("mount: %s" % e)
    finally:
        m.stop()
        del os.environ["H5FS_TEST_DL_DIR"]
    lines = [ln for ln in m.output().splitlines() if ln.strip()]
    zs_lines = [ln for ln in lines if "/zs" in ln]
    if eio != 2:
        T.fail("%d EIOs of 2 reads of zs" % eio)
    if not eio <= len(zs_lines) <= 4 * eio:
        T.fail("%d log lines for %d failed reads: %r" % (len(zs_lines), eio, lines))
    for ln in zs_lines:
        if MESSAGE not in ln or "EIO" not in ln:
            T.fail("log line without %r: %r" % (MESSAGE, ln))
    for ln in lines:
        if "/zs" not in ln:
            T.fail("other log line: %r" % ln)
    if m.returncode != 0:
        T.fail("exit status %s after unmount" % m.returncode)
    print("ok   zstd hidden: %d EIOs, %d log lines; gzip and szip read" % (eio, len(zs_lines)))
    for ln in zs_lines[:1]:
        print("log: " + ln)


def main():
    if not config_has("HAVE_ZSTD") or not config_has("HAVE_AEC"):
        T.skip("h5fs built without zstd or libaec")
    T.require_modules("zstandard", debian="python3-zstandard")
    if "szip" not in h5py.filters.encode:
        T.skip("this libhdf5 cannot write szip")
    libs = installed()
    if HIDDEN not in libs or "libaec.so.0" not in libs:
        T.skip("ldconfig knows no %s or libaec.so.0" % HIDDEN)
    wd = T.workdir("codecmissing")
    h5 = os.path.join(wd, "codecs.h5")
    want = make(h5)
    libdir = os.path.join(wd, "libs")
    os.makedirs(libdir)
    for name, path in libs.items():
        if name != HIDDEN:
            os.symlink(path, os.path.join(libdir, name))
    mnt = os.path.join(wd, "mnt")

    hidden_run(h5, mnt, libdir, want)

    # listing needs no codec library at all
    empty = os.path.join(wd, "none")
    os.makedirs(empty)
    p = subprocess.run([T.H5FS_LS, h5], capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, H5FS_TEST_DL_DIR=empty))
    if p.returncode != 0 or "zs" not in p.stdout or p.stderr.strip():
        T.fail("h5fs-ls without codec libraries: status %d, %r, %r" % (p.returncode, p.stdout, p.stderr))
    else:
        print("ok   h5fs-ls lists the file without codec libraries")

    # the control: the same mount without the switch reads zstd
    m = T.Mount(h5, mnt)
    try:
        m.start()
        with m.watchdog(60):
            for name in ("gz", "sz", "zs"):
                if read(mnt, name) != want[name]:
                    T.fail("%s: wrong bytes with every library" % name)
    except (T.MountError, OSError) as e:
        T.fail("mount with every library: %s" % e)
    finally:
        m.stop()
    if m.output().strip():
        T.fail("log lines with every library: %r" % m.output())
    print("ok   with every library: gzip, szip and zstd read")
    rc = T.finish()
    if rc == 0:
        shutil.rmtree(wd, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
