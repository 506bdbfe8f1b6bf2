"""Shared by the stress and growth tests (tests/stress/): fixtures that make
the daemon work hard, and the expected view of them.

The fixtures hold chunked datasets of every chunk index type (v1 B-tree,
single chunk, implicit, fixed array, extensible array, v2 B-tree) with the
filters libhdf5/h5py ship without plugins (deflate, shuffle, fletcher32,
LZF, scale-offset), partially written chunked datasets (fill values),
contiguous and compact datasets, and groups with many links (symbol table,
dense and creation-ordered storage).  Mounted with -o cache_size=1 (1 MiB)
their decoded chunks and metadata (several MiB per file) keep being evicted
and reloaded, which is where races and leaks show.

Mounting and the sanitizer check of the daemon's output come from the
integration test library (tests/integration/h5fs_testlib.py).
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import h5fs_testlib as T  # noqa: E402

SEED = 20241121


def _chunked(g, name, data, chunks, maxshape=None, fill=None, write=None, **filters):
    """A chunked dataset; write: None = all of data, else a tuple of slices
    (the rest of the chunks stay unallocated and read as the fill value)."""
    ds = g.create_dataset(name, shape=data.shape, dtype=data.dtype, chunks=chunks, maxshape=maxshape,
                          fillvalue=fill, track_times=False, **filters)
    if write is None:
        ds[...] = data
    else:
        ds[write] = data[write]
    return ds


def _implicit(g, name, data, chunks):
    import h5py

    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk(chunks)
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    dcpl.set_obj_track_times(False)
    space = h5py.h5s.create_simple(data.shape)
    dsid = h5py.h5d.create(g.id, name.encode(), h5py.h5t.py_create(data.dtype), space, dcpl=dcpl)
    # write only the first half: the other chunks are allocated (early) but
    # hold libhdf5's fill bytes
    half = data.shape[0] // 2
    ms = h5py.h5s.create_simple((half,) + data.shape[1:])
    fs = dsid.get_space()
    fs.select_hyperslab((0,) * data.ndim, (half,) + data.shape[1:])
    dsid.write(ms, fs, data[:half].copy())


def _content(g, rng, big):
    """The datasets of one file; big scales the large ones."""
    import numpy as np

    # compressible but not trivial: small random integers, smooth floats
    n = 256 * big
    c = g.create_group("chunked")
    u2 = rng.integers(0, 1000, (n, 512)).astype("<u2")
    _chunked(c, "gzip", u2, (64, 128), compression="gzip", compression_opts=4)
    _chunked(c, "shuffle_gzip_fletcher", (np.cumsum(rng.standard_normal((n, 300)), axis=1)).astype(">f8"),
             (50, 60), compression="gzip", shuffle=True, fletcher32=True)
    _chunked(c, "lzf", rng.integers(-50, 50, (n * 40,)).astype("<i4"), (4096,), compression="lzf")
    _chunked(c, "scaleoffset", rng.integers(0, 4000, (n, 100)).astype("<i4"), (64, 100), scaleoffset=0)
    _chunked(c, "edges", rng.integers(0, 255, (n + 37, 333)).astype("u1"), (64, 50), compression="gzip")
    _chunked(c, "partial", rng.integers(0, 1 << 30, (n, 200)).astype("<i8"), (32, 40), fill=-7,
             write=(slice(n // 3, n // 2), slice(0, 150)), compression="gzip")
    _chunked(c, "tiny_chunks", rng.integers(0, 100, (n * 16,)).astype("<i2"), (64,), compression="gzip")
    # extensible-dimension indexes (extensible array / v2 B-tree under
    # libver latest; v1 B-tree for earliest)
    _chunked(c, "ea", rng.integers(0, 9, (n * 8, 64)).astype("<i4"), (100, 64), maxshape=(None, 64),
             compression="gzip")
    _chunked(c, "ea_many", rng.integers(0, 3, (n * 160,)).astype("<i8"), (64,), maxshape=(None,),
             compression="gzip", shuffle=True)
    _chunked(c, "bt2", rng.integers(0, 1000, (n + 100, 700)).astype("<i4"), (50, 50), maxshape=(None, None),
             compression="gzip")
    # one chunk holding the whole dataset (single chunk index when filtered)
    _chunked(c, "single", rng.integers(0, 30, (n, 256)).astype("<f4"), (n, 256), compression="gzip")
    _implicit(c, "implicit", rng.integers(0, 1 << 16, (n, 300)).astype("<u4"), (32, 100))
    k = g.create_group("contiguous")
    k.create_dataset("f8", data=rng.standard_normal((n, 512)), track_times=False)
    k.create_dataset("u1", data=rng.integers(0, 255, n * 1000).astype("u1"), track_times=False)
    k.create_dataset("odd", data=rng.integers(0, 255, (977, 13)).astype(">i2"), track_times=False)
    import h5py
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    dcpl.set_obj_track_times(False)
    comp = rng.integers(0, 1 << 20, 1000).astype("<i4")
    dsid = h5py.h5d.create(k.id, b"compact", h5py.h5t.py_create(comp.dtype),
                           h5py.h5s.create_simple(comp.shape), dcpl=dcpl)
    dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, comp)


def _links(g, name, count, rng, track_order=False):
    """A group of many links: small datasets, hard links to them, soft links
    and subgroups (a few levels deep)."""
    import numpy as np

    m = g.create_group(name, track_order=track_order)
    first = None
    for i in range(count):
        r = i % 10
        nm = "n%05d_%s" % (i, "x" * (i % 23))
        if r < 6:
            d = m.create_dataset(nm, data=rng.integers(0, 1000, 1 + i % 50).astype("<i4"), track_times=False)
            first = first or d
        elif r < 8:
            m[nm] = first
        elif r == 8:
            import h5py
            m[nm] = h5py.SoftLink("/%s/n00000_" % name)
        else:
            sub = m.create_group(nm)
            if i % 100 == 9:
                for j in range(40):
                    sub.create_dataset("s%d" % j, data=np.arange(j + 1, dtype="<u2"), track_times=False)


def make(outdir, big=4):
    """Write the fixtures into outdir; return their file names.  big=4
    gives about 12 MiB of dataset bytes per file."""
    import h5py
    import numpy as np

    names = []
    for libver, nlinks in (("latest", 2500), ("earliest", 1500)):
        rng = np.random.default_rng(SEED)
        name = "stress_%s.h5" % libver
        with h5py.File(os.path.join(outdir, name), "w", libver=libver) as f:
            _content(f, rng, big)
            _links(f, "many", nlinks, rng)
            if libver == "latest":
                _links(f, "ordered", 800, rng, track_order=True)
        names.append(name)
    return names


# Appendable datasets (README "Appending": extensible-array index, first
# dimension the only unlimited one, at most deflate/shuffle/fletcher32):
# name -> (initial rows, row shape, dtype, chunks, filters)
APPEND_SETS = {
    "a/gzip": (1000, (64,), "<i4", (100, 64), dict(compression="gzip", shuffle=True, fletcher32=True)),
    "a/raw": (333, (10,), "<f8", (50, 10), {}),
    "a/fresh": (0, (), "u1", (4096,), dict(compression="gzip")),
}


def append_final(name, max_bytes):
    """(bytes, row size): what dataset name holds after its initial rows
    and max_bytes of appended rows; writers append these bytes in order."""
    import numpy as np

    rows0, shape, dt, _, _ = APPEND_SETS[name]
    rowsize = int(np.dtype(dt).itemsize * int(np.prod(shape, dtype=np.int64)))
    rng = np.random.default_rng(SEED + sum(map(ord, name)))
    data = rng.integers(0, 200, (rows0 + max(1, max_bytes // rowsize),) + shape).astype(dt)
    return data.tobytes(), rowsize


def make_append(outdir, max_bytes):
    """stress_append.h5 with the APPEND_SETS datasets; returns (name,
    {dataset path: (final bytes, row size, initial bytes)})."""
    import h5py
    import numpy as np

    name = "stress_append.h5"
    out = {}
    with h5py.File(os.path.join(outdir, name), "w", libver="latest") as f:
        for ds, (rows0, shape, dt, chunks, filters) in APPEND_SETS.items():
            final, rowsize = append_final(ds, max_bytes)
            init = np.frombuffer(final[:rows0 * rowsize], dtype=dt).reshape((rows0,) + shape)
            f.create_dataset(ds, data=init, maxshape=(None,) + shape, chunks=chunks, track_times=False, **filters)
            out["/" + ds] = (final, rowsize, rows0 * rowsize)
    return name, out


class Expected:
    """What the mount must show, from h5py: datasets with their bytes (for
    window reads), the listing of every directory, and st_size of files."""

    def __init__(self, path):
        tree, self.root_addr = T.h5py_tree(path, cwd=os.path.dirname(path))
        self.tree = tree
        self.files = {}            # path -> bytes
        self.dirs = {"": set()}    # path -> set of names
        for p, e in tree.items():
            if e.kind == "?":
                continue
            parent, name = p.rsplit("/", 1)
            self.dirs.setdefault(parent, set()).add(name)
            if e.kind == "dir":
                self.dirs.setdefault(p, set())
            elif e.kind == "file" and e.data is not None:
                self.files[p] = e.data
        # large datasets get most window reads, the small ones most opens
        self.big = sorted(p for p, d in self.files.items() if len(d) >= 65536)
        self.small = sorted(p for p, d in self.files.items() if len(d) < 65536)
        self.dirlist = sorted(self.dirs)


def drop_page_cache(fd):
    """h5fs opens files with keep_cache: without this, repeated reads are
    served by the kernel and never reach the daemon."""
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        pass


def proc_status(pid):
    """(VmRSS in KiB, number of open fds, threads) of a process."""
    rss = thr = None
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("Threads:"):
                thr = int(line.split()[1])
    nfd = len(os.listdir("/proc/%d/fd" % pid))
    return rss, nfd, thr


def daemon_io(pid):
    """Bytes the daemon has read from its file (rchar of /proc/PID/io)."""
    try:
        with open("/proc/%d/io" % pid) as f:
            for line in f:
                if line.startswith("rchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def daemon_gone(m, fails):
    """A failure when the mount's daemon hung or died."""
    if m.hung or not m.alive():
        fails.append("daemon %s: %s" % ("hung" if m.hung else "died", m.output()[-2000:]))


def verdict(fails, wd, failed_line, passed_line):
    """The failures (20 at most) and one closing line; the work directory
    goes when nothing failed. The exit status."""
    for f in fails[:20]:
        print("FAIL " + f)
    if fails:
        print(failed_line)
        return 1
    import shutil
    shutil.rmtree(wd, ignore_errors=True)
    print(passed_line)
    return 0
