#!/usr/bin/python3
"""Deterministic generator of hostile HDF5 files for test_hostile.py.

Every case writes a valid file with h5py (the "pristine" one, which h5py
reads and which gives the expected tree), then copies it and patches the
bytes of one structure found by parsing the file here (object headers v1
and v2, layout, dataspace, link, attribute and symbol table messages, v1
B-tree nodes, local and global heaps, fractal heap, v2 B-tree, fixed and
extensible array blocks).  Checksummed structures are re-checksummed
(Jenkins lookup3, as libhdf5) unless the case is about the checksum.

    make_hostile.py DIR [CASE...]    writes DIR/CASE.h5 (+ .pristine.h5)

build(dir, only=None) returns a list of Case objects; see Case for what a
test checks about each."""
import os
import shutil
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ea_dump import lookup3  # noqa: E402  (hashlittle, as H5_checksum_metadata)

import h5py  # noqa: E402
import numpy as np  # noqa: E402

UNDEF = 0xFFFFFFFFFFFFFFFF


class Case:
    """One hostile file.
    name      short id (also the file name)
    path      the hostile file; pristine: the valid file it was made from
              (the expected tree of every object not in bad comes from it)
    bad       {mount path: needle}: each must answer EIO (lookup, listing
              or read) with a log line naming the path; needle (or None)
              must appear in that line, e.g. "checksum"
    maybe     mount paths that may answer EIO or read correctly (a
              corruption h5fs may not need to look at)
    skipped   {mount path} under a bad one that cannot be expected
    opts      extra mount options
    kind      what test_hostile.py checks beyond the tree: "tree" (default),
              "names", "xattr_names", "symlinks", "loops", "efl", "sb"
    info      case-specific data for those checks"""

    def __init__(self, name, path, pristine, bad=None, maybe=(), kind="tree", info=None, why=""):
        self.name = name
        self.path = path
        self.pristine = pristine
        self.bad = dict(bad or {})
        self.maybe = set(maybe)
        self.kind = kind
        self.info = info or {}
        self.why = why
        self.opts = []


# ---- bytes ---------------------------------------------------------------------

def u(buf, off, n):
    return int.from_bytes(buf[off:off + n], "little")


def put(buf, off, n, v):
    buf[off:off + n] = int(v).to_bytes(n, "little")


def find_all(buf, sig):
    out, i = [], buf.find(sig)
    while i >= 0:
        out.append(i)
        i = buf.find(sig, i + 1)
    return out


class Msg:
    __slots__ = ("type", "off", "size", "hoff", "chunk")

    def __init__(self, type_, off, size, hoff, chunk):
        self.type, self.off, self.size, self.hoff, self.chunk = type_, off, size, hoff, chunk


class Ohdr:
    """An object header (IV.A.1.a v1 / IV.A.1.b v2) and its continuation
    chunks: messages with the absolute offsets of their data, and for v2
    the checksummed ranges, so patches can be re-checksummed (fix())."""

    def __init__(self, buf, addr):
        self.addr = addr
        self.msgs = []
        self.chunks = []        # (start, end) ranges of message bytes
        self.csum = []          # v2: (start, end): lookup3 of [start, end) stored at end
        if buf[addr:addr + 4] == b"OHDR":
            self.version = 2
            flags = buf[addr + 5]
            p = addr + 6
            if flags & 0x20:
                p += 16
            if flags & 0x10:
                p += 4
            w = 1 << (flags & 3)
            size = u(buf, p, w)
            p += w
            self.flags = flags
            self._v2_chunk(buf, addr, p, p + size)
        else:
            self.version = 1
            if buf[addr] != 1:
                raise ValueError("no object header at 0x%x" % addr)
            size = u(buf, addr + 8, 4)
            self._v1_chunk(buf, addr + 16, addr + 16 + size)

    def _v2_chunk(self, buf, start, p, end):
        ci = len(self.chunks)
        self.chunks.append((p, end))
        self.csum.append((start, end))
        hl = 4 + (2 if self.flags & 0x04 else 0)
        conts = []
        while end - p >= hl:
            t, sz = buf[p], u(buf, p + 1, 2)
            m = Msg(t, p + hl, sz, p, ci)
            self.msgs.append(m)
            if t == 0x10:
                conts.append((u(buf, m.off, 8), u(buf, m.off + 8, 8)))
            p += hl + sz
        for a, ln in conts:
            if buf[a:a + 4] == b"OCHK" and all(a != c[0] for c in self.csum):
                self._v2_chunk(buf, a, a + 4, a + ln - 4)

    def _v1_chunk(self, buf, p, end):
        ci = len(self.chunks)
        self.chunks.append((p, end))
        conts = []
        while end - p >= 8:
            t, sz = u(buf, p, 2), u(buf, p + 2, 2)
            m = Msg(t, p + 8, sz, p, ci)
            self.msgs.append(m)
            if t == 0x10:
                conts.append((u(buf, m.off, 8), u(buf, m.off + 8, 8)))
            p += 8 + sz
        for a, ln in conts:
            if all(a != c[0] for c in self.chunks):
                self._v1_chunk(buf, a, a + ln)

    def find(self, t):
        return [m for m in self.msgs if m.type == t]

    def one(self, t):
        ms = self.find(t)
        if not ms:
            raise ValueError("object header 0x%x has no message 0x%x" % (self.addr, t))
        return ms[0]

    def fix(self, buf):
        for s, e in self.csum:
            put(buf, e, 4, lookup3(bytes(buf[s:e])))


def fix_csum(buf, start, end):
    """Store lookup3 of [start, end) at end."""
    put(buf, end, 4, lookup3(bytes(buf[start:end])))


def addr_of(f, path):
    return h5py.h5o.get_info(f[path].id).addr


# ---- building blocks -------------------------------------------------------------

def controls(f, prefix="ctl"):
    """Healthy objects next to the hostile ones: they must keep reading
    byte-identical to h5py."""
    g = f.create_group(prefix)
    g.create_dataset("contig", data=np.arange(1000, dtype="<f8"), track_times=False)
    g.create_dataset("chunked", data=np.arange(5000, dtype="<i4").reshape(50, 100), chunks=(10, 25),
                     compression="gzip", track_times=False)
    g.attrs["note"] = "healthy"
    s = g.create_group("sub")
    s.create_dataset("small", data=np.arange(7, dtype="<u2"), track_times=False)
    s.create_dataset("text", data=np.array([b"fixed string"], dtype="S12"), track_times=False)


class Gen:
    def __init__(self, wd):
        self.wd = wd
        self.cases = []

    def pristine(self, name, libver, fill):
        p = os.path.join(self.wd, name + ".pristine.h5")
        with h5py.File(p, "w", libver=libver) as f:
            fill(f)
        return p

    def hostile(self, name, pristine, patch, **kw):
        """Copy pristine to NAME.h5 and run patch(buf, f) on its bytes (f is
        the pristine file open in h5py, for addresses)."""
        h = os.path.join(self.wd, name + ".h5")
        buf = bytearray(open(pristine, "rb").read())
        with h5py.File(pristine, "r") as f:
            extra = patch(buf, f)
        with open(h, "wb") as fh:
            fh.write(buf)
        c = Case(name, h, pristine, **kw)
        if extra:
            c.info.update(extra)
        self.cases.append(c)
        return c


# ---- sizes, offsets and addresses past EOF ------------------------------------

def layout_msg(buf, f, path):
    oh = Ohdr(buf, addr_of(f, path))
    return oh, oh.one(0x08)


def gen_past_eof(g):
    def fill(f):
        controls(f)
        f.create_dataset("contig_far", data=np.arange(4096, dtype="u1"), track_times=False)
        f.create_dataset("contig_wrap", data=np.arange(4096, dtype="u1"), track_times=False)
        f.create_dataset("contig_size", data=np.arange(4096, dtype="u1"), track_times=False)
        f.create_dataset("dims_overflow", data=np.zeros((4, 4), dtype="<i8"), track_times=False)
        f.create_dataset("dims_huge", data=np.zeros(16, dtype="<i8"), track_times=False)
        f.create_dataset("dims_big", data=np.zeros(16, dtype="u1"), track_times=False)
        f.create_dataset("single_huge", data=np.arange(4000, dtype="<i4"), chunks=(4000,),
                         compression="gzip", track_times=False)
        f.create_dataset("rank_huge", data=np.zeros(16, dtype="u1"), track_times=False)
        f.create_dataset("dtype_huge", data=np.zeros(16, dtype="<i4"), track_times=False)
        for n in ("pline_cd_count", "pline_nfilters"):
            f.create_dataset(n, data=np.arange(400, dtype="<i4"), chunks=(100,), compression="gzip",
                             track_times=False)
        d = f.create_dataset("attr_host", data=np.arange(10, dtype="<i2"), track_times=False)
        d.attrs["fine"] = np.arange(3, dtype="<i4")
        d.attrs["huge"] = np.arange(4, dtype="<i4")
        d.attrs["overflow"] = np.zeros((2, 2), dtype="<i4")
    p = g.pristine("past_eof", "latest", fill)
    size = os.path.getsize(p)

    def patch(buf, f):
        for path, addr, sz in (("contig_far", 1 << 40, None), ("contig_wrap", UNDEF - 64, None),
                               ("contig_size", None, 1 << 62)):
            oh, m = layout_msg(buf, f, path)
            assert buf[m.off] in (3, 4) and buf[m.off + 1] == 1, "contiguous layout v3/v4"
            if addr is not None:
                put(buf, m.off + 2, 8, addr)
            if sz is not None:
                put(buf, m.off + 10, 8, sz)
            oh.fix(buf)
        # dataspace v2: version, rank, flags, type, then dims
        for path, dims in (("dims_overflow", (1 << 40, 1 << 40)), ("dims_huge", (1 << 61,)),
                           ("dims_big", (1 << 50,))):
            oh = Ohdr(buf, addr_of(f, path))
            m = oh.one(0x01)
            assert buf[m.off] == 2 and buf[m.off + 1] == len(dims)
            for i, d in enumerate(dims):
                put(buf, m.off + 4 + 8 * i, 8, d)
                if buf[m.off + 2] & 1:          # maximum dimensions follow
                    put(buf, m.off + 4 + 8 * (len(dims) + i), 8, d)
            oh.fix(buf)
        # rank 200 (at most 32 exist)
        oh = Ohdr(buf, addr_of(f, "rank_huge"))
        buf[oh.one(0x01).off + 1] = 200
        oh.fix(buf)
        # an integer type of 4 GiB - 1 per element
        oh = Ohdr(buf, addr_of(f, "dtype_huge"))
        put(buf, oh.one(0x03).off + 4, 4, 0xFFFFFFFF)
        oh.fix(buf)
        # filter pipeline v2: 65535 client data values; 255 filters
        for n in ("pline_cd_count", "pline_nfilters"):
            oh = Ohdr(buf, addr_of(f, n))
            m = oh.one(0x0B)
            assert buf[m.off] == 2 and buf[m.off + 1] == 1 and u(buf, m.off + 2, 2) == 1
            if n == "pline_cd_count":
                put(buf, m.off + 6, 2, 0xFFFF)
            else:
                buf[m.off + 1] = 255
            oh.fix(buf)
        # single chunk index with a filtered chunk: layout v4, flags bit 1
        oh, m = layout_msg(buf, f, "single_huge")
        o = m.off
        assert buf[o] == 4 and buf[o + 1] == 2
        flags, nd, enc = buf[o + 2], buf[o + 3], buf[o + 4]
        q = o + 5 + nd * enc
        assert buf[q] == 1 and flags & 2, "single chunk index, filtered"
        put(buf, q + 1, 8, 1 << 62)
        oh.fix(buf)
        # attribute dataspaces
        oh = Ohdr(buf, addr_of(f, "attr_host"))
        for m in oh.find(0x0C):
            o = m.off
            ver, nsz, dsz = buf[o], u(buf, o + 2, 2), u(buf, o + 4, 2)
            assert ver == 3
            name = bytes(buf[o + 9:o + 9 + nsz - 1])
            ds = o + 9 + nsz + dsz
            if name == b"huge":
                put(buf, ds + 4, 8, 1 << 40)
            elif name == b"overflow":
                put(buf, ds + 4, 8, 1 << 40)
                put(buf, ds + 12, 8, 1 << 40)
        oh.fix(buf)
        return {"xattr_bad": {"/attr_host": ["user.huge", "user.overflow"]},
                "xattr_good": {"/attr_host": {"user.fine": b"0, 1, 2"}}}

    g.hostile("past_eof", p, patch, bad={
        "/contig_far": None, "/contig_wrap": None, "/rank_huge": None, "/dtype_huge": None,
        "/pline_cd_count": None, "/pline_nfilters": None,
        "/dims_overflow": None, "/dims_huge": None, "/dims_big": None, "/single_huge": None},
        info={"blocks_max": {"/contig_size": 4096}},
        why="storage addresses and sizes past EOF, dims whose product overflows (file size %d)" % size)

    # v1 B-tree chunk index (libver earliest): one chunk's size, another's
    # address past EOF
    def fill1(f):
        controls(f)
        for n in ("chunk_size", "chunk_addr", "chunk_dim0", "chunk_dimhuge"):
            f.create_dataset(n, data=np.arange(8000, dtype="<i4"), chunks=(2000,), compression="gzip",
                             track_times=False)
    p1 = g.pristine("chunk_eof", "earliest", fill1)

    def patch1(buf, f):
        for path, v in (("chunk_dim0", 0), ("chunk_dimhuge", 0xFFFFFFFF)):
            oh, m = layout_msg(buf, f, path)
            assert buf[m.off] == 3 and buf[m.off + 1] == 2 and buf[m.off + 2] == 2
            put(buf, m.off + 11, 4, v)          # after version, class, ndims, B-tree address
        for path in ("chunk_size", "chunk_addr"):
            ci = f[path].id.get_chunk_info(0)
            oh, m = layout_msg(buf, f, path)
            assert buf[m.off] == 3 and buf[m.off + 1] == 2
            bt = u(buf, m.off + 3, 8)
            assert buf[bt:bt + 4] == b"TREE" and buf[bt + 4] == 1 and buf[bt + 5] == 0
            keylen = 8 + 8 * 2          # size, mask, offset per dim + element offset
            child0 = bt + 24 + keylen
            assert u(buf, child0, 8) == ci.byte_offset
            if path == "chunk_size":
                put(buf, bt + 24, 4, 0xFFFFFFF0)
            else:
                put(buf, child0, 8, 1 << 40)
    g.hostile("chunk_eof", p1, patch1, bad={"/chunk_size": None, "/chunk_addr": None, "/chunk_dim0": None,
                                             "/chunk_dimhuge": None},
              why="v1 B-tree chunk records: chunk size 4 GiB, chunk address 1 TiB; chunk dims 0 and 2^32-1")

    # local heap of an old-style group: data segment size and address
    def fill2(f):
        controls(f)
        for n in ("heap_size", "heap_addr"):
            s = f.create_group(n)
            for i in range(5):
                s.create_dataset("d%d" % i, data=np.arange(i + 1, dtype="u1"), track_times=False)
    p2 = g.pristine("lheap_eof", "earliest", fill2)

    def patch2(buf, f):
        for path, off, v in (("heap_size", 8, 1 << 60), ("heap_addr", 24, 1 << 40)):
            oh = Ohdr(buf, addr_of(f, path))
            m = oh.one(0x11)
            heap = u(buf, m.off + 8, 8)
            assert buf[heap:heap + 4] == b"HEAP"
            put(buf, heap + off, 8, v)
    g.hostile("lheap_eof", p2, patch2, bad={"/heap_size": None, "/heap_addr": None},
              why="local heap data segment of 2^60 bytes / at 1 TiB")

    # global heap collection size
    def fill3(f):
        controls(f)
        f.create_dataset("strings", data=np.array(["alpha", "beta", "gamma"], dtype=object),
                         dtype=h5py.string_dtype(), track_times=False)
    p3 = g.pristine("gheap_size", "latest", fill3)

    def patch3(buf, f):
        for a in find_all(buf, b"GCOL"):
            if buf[a + 4] == 1:
                put(buf, a + 8, 8, 1 << 60)
    g.hostile("gheap_size", p3, patch3, bad={"/strings": None},
              why="global heap collection of 2^60 bytes")

    # fractal heap of a dense group: starting block size 2^40
    def fill4(f):
        controls(f)
        d = f.create_group("dense")
        for i in range(40):
            d.create_dataset("member_%03d" % i, data=np.arange(3, dtype="u1"), track_times=False)
    p4 = g.pristine("fheap_size", "latest", fill4)

    def patch4(buf, f):
        a = find_all(buf, b"FRHP")
        assert len(a) == 1
        a = a[0]
        put(buf, a + 112, 8, 1 << 40)
        fix_csum(buf, a, a + 142)
    g.hostile("fheap_size", p4, patch4, bad={"/dense": None}, why="fractal heap starting block 2^40 bytes")


# ---- cycles -----------------------------------------------------------------------

def compact_attrs():
    """Attributes stay in the object header (continuation chunks), never dense."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_attr_phase_change(1000, 900)
    return dcpl


def btree1_root(buf, oh_addr, kind):
    oh = Ohdr(buf, oh_addr)
    if kind == "group":
        bt = u(buf, oh.one(0x11).off, 8)
    else:
        m = oh.one(0x08)
        bt = u(buf, m.off + 3, 8)
    assert buf[bt:bt + 4] == b"TREE", "v1 B-tree at 0x%x" % bt
    return bt


def gen_cycles(g):
    # v1 B-tree of a group (300 links: the root is level 1) and of chunks
    def fill(f):
        controls(f)
        for n in ("child_is_root", "level200", "sibling_self"):
            s = f.create_group(n)
            for i in range(300):
                s["link%03d" % i] = h5py.SoftLink("/ctl/contig")
        for n in ("chunks_child_is_root", "chunks_level200"):
            f.create_dataset(n, data=np.arange(800, dtype="<i2"), chunks=(4,), track_times=False)
    p = g.pristine("btree1_cycles", "earliest", fill)

    def patch(buf, f):
        for n, kind in (("child_is_root", "group"), ("chunks_child_is_root", "chunk")):
            bt = btree1_root(buf, addr_of(f, n), kind)
            assert buf[bt + 5] >= 1, "%s: root level %d" % (n, buf[bt + 5])
            keylen = 8 if kind == "group" else 8 + 8 * 2
            child1 = bt + 24 + keylen + (8 + keylen)
            put(buf, child1, 8, bt)         # second child: the root itself (its parent)
        for n, kind in (("level200", "group"), ("chunks_level200", "chunk")):
            bt = btree1_root(buf, addr_of(f, n), kind)
            buf[bt + 5] = 200
        bt = btree1_root(buf, addr_of(f, "sibling_self"), "group")
        keylen = 8
        child0 = u(buf, bt + 24 + keylen, 8)
        assert buf[child0:child0 + 4] == b"TREE"
        put(buf, child0 + 8, 8, child0)     # left sibling: itself
        put(buf, child0 + 16, 8, child0)    # right sibling: itself
    g.hostile("btree1_cycles", p, patch,
              bad={"/child_is_root": None, "/level200": None, "/chunks_child_is_root": None,
                   "/chunks_level200": None},
              maybe={"/sibling_self"},
              why="v1 B-tree: child pointing to its parent (the root), level 200, siblings pointing to themselves")

    # fractal heap: root indirect block whose first indirect child is itself
    def fill2(f):
        controls(f)
        d = f.create_group("big_dense")
        for i in range(2300):
            d["%04d_" % i + "n" * 240] = h5py.SoftLink("/ctl")
    p2 = g.pristine("fheap_loop", "latest", fill2)

    def patch2(buf, f):
        hs = find_all(buf, b"FRHP")
        assert len(hs) == 1
        h = hs[0]
        width, start, maxd = u(buf, h + 110, 2), u(buf, h + 112, 8), u(buf, h + 120, 8)
        maxbits, root, rows = u(buf, h + 128, 2), u(buf, h + 132, 8), u(buf, h + 140, 2)
        assert buf[root:root + 4] == b"FHIB", "root is an indirect block"
        drows = (maxd.bit_length() - 1) - (start.bit_length() - 1) + 2
        assert rows > drows, "root indirect block has indirect rows (%d > %d)" % (rows, drows)
        bo = (maxbits + 7) // 8
        ent = root + 5 + 8 + bo
        nd = width * drows
        ni = width * (rows - drows)
        first_ind = ent + 8 * nd
        assert buf[u(buf, first_ind, 8):u(buf, first_ind, 8) + 4] == b"FHIB"
        put(buf, first_ind, 8, root)
        fix_csum(buf, root, ent + 8 * (nd + ni))
    g.hostile("fheap_loop", p2, patch2, bad={"/big_dense": None},
              why="fractal heap indirect block whose child is itself")

    # object header continuation loops: v1 (chunk 0 continues to itself)
    # and v2 (a continuation chunk continues to itself)
    def fill3(f):
        controls(f)
        d = f.create_dataset("cont_loop", data=np.arange(20, dtype="<i4"), dcpl=compact_attrs(),
                             track_times=False)
        for i in range(40):
            d.attrs["attribute_%02d" % i] = np.arange(20, dtype="<i4") + i
    p3 = g.pristine("ohdr_loop_v1", "earliest", fill3)

    def patch3(buf, f):
        oh = Ohdr(buf, addr_of(f, "cont_loop"))
        c = [m for m in oh.find(0x10) if m.chunk == 0]
        assert c, "a continuation message in chunk 0"
        put(buf, c[0].off, 8, oh.chunks[0][0])
        put(buf, c[0].off + 8, 8, oh.chunks[0][1] - oh.chunks[0][0])
    g.hostile("ohdr_loop_v1", p3, patch3, bad={"/cont_loop": None},
              why="v1 object header continuation back to its first chunk")

    p4 = g.pristine("ohdr_loop_v2", "latest", fill3)

    def patch4(buf, f):
        oh = Ohdr(buf, addr_of(f, "cont_loop"))
        assert len(oh.chunks) >= 2, "continuation chunks"
        # chunk 1 (an OCHK): turn one of its messages of >= 16 bytes into a
        # continuation message pointing at chunk 1 itself
        s, e = oh.csum[1]
        hl = 4 + (2 if oh.flags & 0x04 else 0)
        m = [m for m in oh.msgs if m.chunk == 1 and m.size >= 16 + hl][0]
        buf[m.hoff] = 0x10
        put(buf, m.hoff + 1, 2, 16)
        put(buf, m.off, 8, s)
        put(buf, m.off + 8, 8, e + 4 - s)
        # the rest of the old message becomes a NIL message
        rest = m.size - 16
        q = m.off + 16
        buf[q] = 0
        put(buf, q + 1, 2, rest - hl)
        buf[q + 3] = 0
        oh.fix(buf)
    g.hostile("ohdr_loop_v2", p4, patch4, bad={"/cont_loop": None},
              why="v2 object header continuation chunk continuing to itself")

    # global heap IDs of a variable-length string dataset: into the middle
    # of the collection header, object 0 (free space), a missing object
    def fill5(f):
        controls(f)
        for n in ("into_header", "object0", "missing", "len_huge", "len_long", "fine"):
            f.create_dataset(n, data=np.array(["one", "two", "three"], dtype=object),
                             dtype=h5py.string_dtype(), track_times=False)
    p5 = g.pristine("gheap_ids", "latest", fill5)

    def patch5(buf, f):
        for n in ("into_header", "object0", "missing", "len_huge", "len_long"):
            off = f[n].id.get_offset()
            gcol = u(buf, off + 4, 8)
            assert buf[gcol:gcol + 4] == b"GCOL", n
            if n == "into_header":
                put(buf, off + 4, 8, gcol + 8)
            elif n == "object0":
                put(buf, off + 12, 4, 0)
            elif n == "len_huge":
                put(buf, off, 4, 0x7FFFFFF0)    # the string's length, not the object's
            elif n == "len_long":
                put(buf, off, 4, 100)
            else:
                put(buf, off + 12, 4, 60000)
    g.hostile("gheap_ids", p5, patch5, bad={"/into_header": None, "/object0": None, "/missing": None,
                                            "/len_huge": None, "/len_long": None},
              why="variable-length string heap IDs pointing into the collection header, at object 0, "
                  "at a missing object")

    # hard links back to the root and to a parent (no patching needed)
    def fill6(f):
        controls(f)
        a = f.create_group("a")
        b = a.create_group("b")
        b.create_dataset("leaf", data=np.arange(5, dtype="u1"), track_times=False)
        b["to_root"] = f
        b["to_parent"] = a
        a["to_self"] = a
    for lv in ("earliest", "latest"):
        pp = g.pristine("hardlink_loops_" + lv, lv, fill6)
        c = Case("hardlink_loops_" + lv, pp, pp, kind="loops")
        g.cases.append(c)


# ---- depth limits ---------------------------------------------------------------

def nested_dtype(levels):
    dt = np.dtype([("leaf", "<i4")])
    for i in range(levels - 1):
        dt = np.dtype([("x%d" % i, "<i2"), ("in", dt)])
    return dt


def gen_depth(g):
    def fill(f):
        controls(f)
        f.create_dataset("nested5", data=np.zeros(3, dtype=nested_dtype(5)), track_times=False)
        f.create_dataset("nested20", data=np.zeros(3, dtype=nested_dtype(20)), track_times=False)
        d = f.create_group("deep_btree2")
        for i in range(120):
            d["n%03d" % i] = h5py.SoftLink("/ctl")
    p = g.pristine("depth", "latest", fill)

    def patch(buf, f):
        hs = find_all(buf, b"BTHD")
        assert len(hs) == 1
        h = hs[0]
        put(buf, h + 12, 2, 200)
        fix_csum(buf, h, h + 34)
    g.hostile("depth", p, patch, bad={"/nested20": "nested", "/deep_btree2": None},
              why="compound nested 20 levels; v2 B-tree of depth 200 (v1 B-tree level 200: btree1_cycles)")


# ---- checksums --------------------------------------------------------------------

def gen_checksums(g):
    def fill_ohdr(f):
        controls(f)
        d = f.create_dataset("target", data=np.arange(64, dtype="<i4"), dcpl=compact_attrs(),
                             track_times=False)
        for i in range(40):
            d.attrs["attribute_%02d" % i] = np.arange(20, dtype="<i4") + i
    p = g.pristine("csum_ohdr", "latest", fill_ohdr)

    def patch_ohdr(buf, f):
        oh = Ohdr(buf, addr_of(f, "target"))
        s, e = oh.chunks[0]
        buf[e - 1] ^= 0x40          # the gap / last message byte of chunk 0
    g.hostile("csum_OHDR", p, patch_ohdr, bad={"/target": "checksum"})

    def patch_ochk(buf, f):
        oh = Ohdr(buf, addr_of(f, "target"))
        assert len(oh.chunks) >= 2
        s, e = oh.chunks[1]
        buf[e - 1] ^= 0x40
    g.hostile("csum_OCHK", p, patch_ochk, bad={"/target": "checksum"})

    # dense group: v2 B-tree name index and fractal heap
    def fill_dense(f):
        controls(f)
        d = f.create_group("target")
        for i in range(150):
            d.create_dataset("member_with_a_longer_name_%03d" % i, data=np.arange(i % 7 + 1, dtype="u1"),
                             track_times=False)
    pd = g.pristine("csum_dense", "latest", fill_dense)

    def flip(sig, where):
        def patch(buf, f):
            hits = [a for a in find_all(buf, sig)]
            assert hits, "no %r block" % sig
            a = hits[0]
            if where == "fhdb":
                # a direct block's data, after header and checksum
                h = find_all(buf, b"FRHP")[0]
                off = 5 + 8 + (u(buf, h + 128, 2) + 7) // 8 + 4
                buf[a + off + 20] ^= 0x40
            else:
                buf[a + where] ^= 0x40
        return patch
    for sig, where in ((b"BTHD", 34), (b"BTIN", 6), (b"BTLF", 6), (b"FRHP", 142), (b"FHIB", 22),
                       (b"FHDB", "fhdb")):
        g.hostile("csum_" + sig.decode(), pd, flip(sig, where), bad={"/target": "checksum"})

    # fixed array chunk index
    def fill_fa(f):
        controls(f)
        f.create_dataset("target", data=np.arange(100, dtype="<i4"), chunks=(1,), track_times=False)
    pf = g.pristine("csum_farray", "latest", fill_fa)

    def fa_flip(which):
        def patch(buf, f):
            oh, m = layout_msg(buf, f, "target")
            o = m.off
            assert buf[o] == 4 and buf[o + 1] == 2
            nd, enc = buf[o + 3], buf[o + 4]
            q = o + 5 + nd * enc
            assert buf[q] == 3, "fixed array index"
            hd = u(buf, q + 2, 8)       # after the page bits byte
            assert buf[hd:hd + 4] == b"FAHD"
            if which == "FAHD":
                buf[hd + 24] ^= 0x40    # the stored checksum
            else:
                db = u(buf, hd + 16, 8)
                assert buf[db:db + 4] == b"FADB"
                buf[db + 16] ^= 0x40    # an element (chunk address)
        return patch
    for sig in ("FAHD", "FADB"):
        g.hostile("csum_" + sig, pf, fa_flip(sig), bad={"/target": "checksum"})

    # extensible array chunk index (enough chunks for super blocks)
    def fill_ea(f):
        controls(f)
        f.create_dataset("target", data=np.arange(3000, dtype="<i4"), chunks=(1,), maxshape=(None,),
                         track_times=False)
    pe = g.pristine("csum_earray", "latest", fill_ea)
    for sig, where in ((b"EAHD", 68), (b"EAIB", 15), (b"EASB", 15), (b"EADB", 16)):
        g.hostile("csum_" + sig.decode(), pe, flip(sig, where), bad={"/target": "checksum"})

    # superblock v2 (libver v108) and v3 (latest): refused at mount
    for lv, ver in (("v108", 2), ("latest", 3)):
        pp = g.pristine("csum_sb%d" % ver, lv, controls)

        def patch_sb(buf, f, ver=ver):
            assert buf[8] == ver
            buf[20] ^= 0x01          # base address field: covered by the checksum
        c = g.hostile("csum_sb%d" % ver, pp, patch_sb, kind="sb")
        c.info["want"] = "checksum"


# ---- hostile names ---------------------------------------------------------------

def gen_names(g):
    # new-style compact group (link messages in a v2 object header)
    def fill(f):
        controls(f)
        # at most 8 links each, so they stay compact (link messages)
        t = f.create_group("names")
        for n in ("sib1", "sib2"):
            t.create_dataset(n, data=np.arange(9, dtype="u1"), track_times=False)
        for n in ("x", "yy", "a_b", "a_c", "z"):
            t.create_dataset(n, data=np.arange(3, dtype="u1"), track_times=False)
        t.create_dataset(b"bad\xff\xfeutf8", data=np.arange(4, dtype="u1"), track_times=False)
        t2 = f.create_group("names2")
        t2.create_dataset("sib3", data=np.arange(9, dtype="u1"), track_times=False)
        t2.create_dataset("L" * 300, data=np.arange(2, dtype="u1"), track_times=False)
        t3 = f.create_group("names3")
        t3.create_dataset("sib4", data=np.arange(9, dtype="u1"), track_times=False)
        t3.create_dataset("w", data=np.arange(3, dtype="u1"), track_times=False)
    p = g.pristine("names_compact", "latest", fill)

    def patch(buf, f):
        for grp in ("names", "names2", "names3"):
            patch_group(buf, f, grp)

    def patch_group(buf, f, grp):
        oh = Ohdr(buf, addr_of(f, grp))
        assert oh.find(0x06), "compact links in %s" % grp
        for m in oh.find(0x06):
            o = m.off
            flags = buf[o + 1]
            q = o + 2 + (1 if flags & 8 else 0) + (8 if flags & 4 else 0) + (1 if flags & 0x10 else 0)
            w = 1 << (flags & 3)
            nl = u(buf, q, w)
            name = bytes(buf[q + w:q + w + nl])
            new = {b"x": b".", b"yy": b"..", b"a_b": b"a/b", b"a_c": b"a\0c"}.get(name)
            if new is not None:
                buf[q + w:q + w + nl] = new
            elif name in (b"z", b"w"):
                # empty name: length 0, the address moved up, one byte left over
                put(buf, q, w, 0)
                buf[q + w:q + w + 8] = buf[q + w + 1:q + w + 9]
                buf[q + w + 8] = 0
                if name == b"w":
                    # and a name length pointing past the message
                    put(buf, q, w, 200 if w == 1 else 60000)
        oh.fix(buf)
    # /names3: a link message whose name runs past the message is corrupt
    # (not a hostile name): the group fails, with a log line
    c = g.hostile("names_compact", p, patch, kind="names", bad={"/names3": "exceeds"})
    c.info.update(groups={"/names": {"sib1", "sib2", b"bad\xff\xfeutf8"}, "/names2": {"sib3"}})
    c.maybe = {"/names/x", "/names/yy", "/names/a_b", "/names/a_c", "/names/z", "/names2/" + "L" * 300}

    # old-style group: names in a local heap (order kept: the SNOD is sorted)
    def fill2(f):
        controls(f)
        t = f.create_group("names")
        for n in ("#", "%", "%%", "a_b", "sib1", "sib2"):
            t.create_dataset(n, data=np.arange(5, dtype="u1"), track_times=False)
    p2 = g.pristine("names_heap", "earliest", fill2)

    def patch2(buf, f):
        oh = Ohdr(buf, addr_of(f, "names"))
        heap = u(buf, oh.one(0x11).off + 8, 8)
        data, dsize = u(buf, heap + 24, 8), u(buf, heap + 8, 8)
        seg = bytes(buf[data:data + dsize])
        for old, new in ((b"#\0", b"\0\0"), (b"%%\0", b"..\0"), (b"%\0", b".\0"), (b"a_b\0", b"a/b\0")):
            i = seg.find(b"\0" + old) + 1
            assert i > 0, old
            buf[data + i:data + i + len(old)] = new
            seg = bytes(buf[data:data + dsize])
    c2 = g.hostile("names_heap", p2, patch2, kind="names")
    c2.info.update(groups={"/names": {"sib1", "sib2"}})
    c2.maybe = {"/names/#", "/names/%", "/names/%%", "/names/a_b"}

    # attribute names (v2 object header: attribute messages v3)
    def fill3(f):
        controls(f)
        d = f.create_dataset("target", data=np.arange(6, dtype="u1"), dcpl=compact_attrs(),
                             track_times=False)
        for n in ("ok1", "ok2", "n_l", "e", "dot", "a/b", "."):
            d.attrs[n] = np.int32(len(n))
        aid = h5py.h5a.create(d.id, b"bad\xff\xfeutf8", h5py.h5t.STD_I32LE, h5py.h5s.create(h5py.h5s.SCALAR))
        aid.write(np.array(7, dtype="<i4"))
        d.attrs["A" * 300] = np.int32(1)
    p3 = g.pristine("attr_names", "latest", fill3)

    def patch3(buf, f):
        oh = Ohdr(buf, addr_of(f, "target"))
        for m in oh.find(0x0C):
            o = m.off
            nsz = u(buf, o + 2, 2)
            name = bytes(buf[o + 9:o + 9 + nsz - 1])
            if name == b"n_l":
                buf[o + 10] = 0          # "n\0l"
            elif name == b"e":
                buf[o + 9] = 0           # "" (two NULs in a name of size 2)
        oh.fix(buf)
    c3 = g.hostile("attr_names", p3, patch3, kind="xattr_names")
    c3.info.update(path="/target",
                   want={b"user.ok1": b"3", b"user.ok2": b"3", b"user.dot": b"3", b"user.a/b": b"3",
                         b"user..": b"1", b"user.bad\xff\xfeutf8": b"7"},
                   absent=[b"user.n", b"user.", b"user.n\0l", b"user." + b"A" * 300])


# ---- soft links that try to leave the mount ---------------------------------------

def gen_symlinks(g):
    targets = {
        "abs_dotdot": "/../../etc",
        "rel_passwd": "../../../../etc/passwd",
        "many_dotdot": "../" * 200 + "etc/shadow",
        "mixed": "/a/../../../../a/./b/../../..//",
        "dotdot_only": "..",
        "abs_root": "/",
        "long": "x/" * 3000 + "y",
    }

    def fill(f):
        controls(f)
        b = f.create_group("a/b")
        b.create_dataset("here", data=np.arange(3, dtype="u1"), track_times=False)
        for n, t in targets.items():
            b[n] = h5py.SoftLink(t)
        c = f.create_group("a/c")
        c.create_dataset("here", data=np.arange(4, dtype="u1"), track_times=False)
        c["nul_in_target"] = h5py.SoftLink("..XX..XXetc")
    p = g.pristine("symlinks", "latest", fill)

    def patch(buf, f):
        oh = Ohdr(buf, addr_of(f, "a/c"))
        hit = 0
        for m in oh.find(0x06):
            seg = bytes(buf[m.off:m.off + m.size])
            i = seg.find(b"..XX..XXetc")
            if i >= 0:
                buf[m.off + i:m.off + i + 11] = b"..\0/..\0/etc"
                hit += 1
        assert hit == 1
        oh.fix(buf)
    c = g.hostile("symlinks", p, patch, kind="symlinks")
    c.info.update(dirs={"/a/b": sorted(targets), "/a/c": ["nul_in_target"]})
    c.maybe = {"/a/b/long", "/a/c/nul_in_target"}     # checked by check_symlinks


# ---- decompression bomb ---------------------------------------------------------

def deflate_bomb(nbytes):
    """A zlib stream inflating to about nbytes zero bytes: one stored byte,
    then a fixed-Huffman block of <length 258, distance 1> pairs (13 bits
    each, so 8 of them are 13 bytes, byte-aligned after the block header and
    one pair), end of block, adler32."""
    bits = []

    def code(v, n):         # Huffman codes: most significant bit first
        bits.extend((v >> (n - 1 - i)) & 1 for i in range(n))

    def pair():
        code(0b11000101, 8)         # literal/length 285: length 258
        code(0, 5)                  # distance code 0: distance 1

    def tobytes(bs):
        assert len(bs) % 8 == 0
        return bytes(sum(bs[i + j] << j for j in range(8)) for i in range(0, len(bs), 8))

    head = b"\x78\x01" + b"\x00" + b"\x01\x00\xfe\xff" + b"\x00"     # stored block: one 0 byte
    bits.extend([1, 1, 0])          # BFINAL, BTYPE=01 (fixed), LSB first
    pair()
    first = tobytes(bits)
    bits.clear()
    for _ in range(8):
        pair()
    period = tobytes(bits)
    reps = max(1, (nbytes - 259) // (258 * 8))
    bits.clear()
    code(0, 7)                      # end of block
    bits.append(0)
    tail = tobytes(bits)
    total = 1 + 258 + reps * 8 * 258
    adler = ((total % 65521) << 16) | 1
    return head + first + period * reps + tail + adler.to_bytes(4, "big"), total


def gen_bomb(g):
    def fill(f):
        controls(f)
        for n, kw in (("bomb", {}), ("bomb_shuffle", {"shuffle": True})):
            f.create_dataset(n, data=np.arange(65536, dtype="u1"), chunks=(16384,), compression="gzip",
                             track_times=False, **kw)
        rnd = np.random.RandomState(5).randint(0, 256, 65536).astype("u1")
        f.create_dataset("inplace", data=rnd, chunks=(16384,), compression="gzip", track_times=False)
    p = g.pristine("bomb", "latest", fill)
    bomb, total = deflate_bomb(1 << 30)
    small, stotal = deflate_bomb(1 << 20)
    if zlib.decompress(small) != bytes(stotal):
        raise SystemExit("deflate_bomb builds a bad stream")
    h = os.path.join(g.wd, "bomb.h5")
    shutil.copy(p, h)
    with h5py.File(h, "r+") as f:
        for n in ("bomb", "bomb_shuffle"):
            f[n].id.write_direct_chunk((16384,), bomb, filter_mask=0)
        ci = f["inplace"].id.get_chunk_info(1)
    # the same on-disk size: a dynamic-Huffman stream of zeros, padded
    z = zlib.compress(bytes(16 << 20), 9)
    assert len(z) <= ci.size, (len(z), ci.size)
    with open(h, "r+b") as fh:
        fh.seek(ci.byte_offset)
        fh.write(z + bytes(ci.size - len(z)))
    c = Case("bomb", h, p, bad={"/bomb": "bomb", "/bomb_shuffle": "bomb", "/inplace": "bomb"},
             why="deflate chunks of %d bytes inflating to %d, of %d bytes inflating to %d (declared 16384)" % (
                 len(bomb), total, ci.size, 16 << 20))
    g.cases.append(c)


# ---- external file list -----------------------------------------------------------

def gen_efl(g):
    d = os.path.join(g.wd, "efl")
    os.makedirs(os.path.join(d, "sub"), exist_ok=True)
    secret = os.path.join(g.wd, "efl_secret.bin")
    with open(secret, "wb") as fh:
        fh.write(b"SECRET-" * 100)
    for n in ("near.bin", "sub/deeper.bin"):
        with open(os.path.join(d, n), "wb") as fh:
            fh.write(bytes(range(256)) * 4)
    p = os.path.join(d, "efl.h5")
    with h5py.File(p, "w", libver="latest") as f:
        controls(f)
        f.create_dataset("near", shape=(1024,), dtype="u1", external=[("near.bin", 0, 1024)])
        f.create_dataset("deeper", shape=(512,), dtype="u1", external=[("sub/deeper.bin", 512, 512)])
        f.create_dataset("absolute", shape=(700,), dtype="u1", external=[(secret, 0, 700)])
        f.create_dataset("dotdot", shape=(700,), dtype="u1", external=[("../efl_secret.bin", 0, 700)])
        f.create_dataset("dotdot_inner", shape=(700,), dtype="u1",
                         external=[("sub/../../efl_secret.bin", 0, 700)])
    c = Case("efl", p, p, bad={"/absolute": "efl_any", "/dotdot": "efl_any", "/dotdot_inner": "efl_any"},
             kind="efl")
    c.info.update(cwd=d)
    g.cases.append(c)
    c2 = Case("efl_any", p, p, kind="efl")
    c2.opts = ["-o", "efl_any"]
    c2.info.update(cwd=d)
    g.cases.append(c2)


GENERATORS = [gen_past_eof, gen_cycles, gen_depth, gen_checksums, gen_names, gen_symlinks, gen_bomb,
              gen_efl]


def build(wd, only=None):
    g = Gen(wd)
    for gen in GENERATORS:
        if only and gen.__name__[4:] not in only:
            continue
        gen(g)
    return g.cases


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    os.makedirs(sys.argv[1], exist_ok=True)
    for c in build(sys.argv[1], set(sys.argv[2:]) or None):
        print("%-22s %s %s" % (c.name, c.path, c.why))
