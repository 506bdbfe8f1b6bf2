#!/usr/bin/python3
"""Independent checker of a dataset's version 1 B-tree chunk index (spec
III.A.1, node type 1), used by the append tests on what h5fs wrote.

It shares no code with libh5core: the object header (v1 or v2, with
continuation blocks), the layout message (v1-v3) and every node are parsed
here.  check() walks the tree from the root and verifies what libhdf5
relies on: signature, type, a level one below the parent's, at most 2K
entries, keys in increasing order, a child's left key equal to its parent's
key, chunk offsets on chunk boundaries, and the sibling pointers of every
level (each node's left/right is its neighbour on that level, the ends
undefined).  It returns the tree's depth, node count and chunk records.

    bt1_dump.py FILE DATASET      prints depth, nodes and chunks
"""
import struct
import sys

UNDEF = 0xFFFFFFFFFFFFFFFF


class BtError(AssertionError):
    pass


def _ohdr_msgs(buf, addr, base=0):
    """(type, data) of every message of the object header at addr (file
    offset); continuation addresses count from base."""
    out = []
    blocks = []
    if buf[addr:addr + 4] == b"OHDR":
        flags = buf[addr + 5]
        p = addr + 6
        if flags & 0x20:
            p += 16
        if flags & 0x10:
            p += 4
        w = 1 << (flags & 3)
        size = int.from_bytes(buf[p:p + w], "little")
        p += w
        blocks.append((p, p + size, 2, flags))
    else:
        size = struct.unpack_from("<I", buf, addr + 8)[0]
        blocks.append((addr + 16, addr + 16 + size, 1, 0))
    while blocks:
        p, end, ver, flags = blocks.pop(0)
        if ver == 2 and buf[p - 4:p] == b"OCHK":
            pass
        while p < end:
            if ver == 1:
                if p + 8 > end:
                    break
                t, sz = struct.unpack_from("<HH", buf, p)
                data = buf[p + 8:p + 8 + sz]
                p += 8 + sz
            else:
                if p + 4 + (2 if flags & 4 else 0) > end - 4:
                    break
                t = buf[p]
                sz = struct.unpack_from("<H", buf, p + 1)[0]
                h = 4 + (2 if flags & 4 else 0)
                data = buf[p + h:p + h + sz]
                p += h + sz
            if t == 0x10:
                caddr, clen = struct.unpack_from("<QQ", data, 0)
                caddr += base
                if ver == 1:
                    blocks.append((caddr, caddr + clen, 1, 0))
                else:
                    blocks.append((caddr + 4, caddr + clen - 4, 2, flags))
            out.append((t, data))
    return out


def root_of(buf, ohdr_addr):
    """B-tree address, chunk dims (element size last) of a v1-v3 layout."""
    for t, d in _ohdr_msgs(buf, ohdr_addr):
        if t != 8:
            continue
        if d[0] == 3:
            if d[1] != 2:
                raise BtError("layout class %d, not chunked" % d[1])
            nd = d[2]
            addr = struct.unpack_from("<Q", d, 3)[0]
            dims = struct.unpack_from("<%dI" % nd, d, 11)
            return addr, list(dims)
        if d[0] in (1, 2):
            nd = d[1]
            addr = struct.unpack_from("<Q", d, 8)[0]
            dims = struct.unpack_from("<%dI" % nd, d, 16)
            return addr, list(dims)
        raise BtError("layout message version %d has no v1 B-tree" % d[0])
    raise BtError("no layout message")


SIGNATURE = b"\x89HDF\r\n\x1a\n"


def base_of(buf):
    """Where the superblock is (0, 512, 1024, ...: after a user block);
    file addresses count from there (II.A "Base Address")."""
    off = 0
    while off + 8 <= len(buf):
        if buf[off:off + 8] == SIGNATURE:
            return off
        off = 512 if off == 0 else off * 2
    raise BtError("no superblock signature")


def index_type(path, ohdr_addr):
    """The chunk index of a chunked dataset: "btree1" (layout v1-v3) or the
    layout v4 index name; None when not chunked."""
    import mmap
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        base = base_of(buf)
        for t, d in _ohdr_msgs(buf, base + ohdr_addr, base):
            if t != 8:
                continue
            if d[0] in (1, 2):
                return "btree1" if d[2] == 2 else None
            if d[0] == 3:
                return "btree1" if d[1] == 2 else None
            if d[0] in (4, 5) and d[1] == 2:
                p = 5 + d[3] * d[4]
                return {1: "single", 2: "implicit", 3: "farray", 4: "earray", 5: "btree2"}.get(d[p])
            return None
    return None


def partial_edge_unfiltered(path, ohdr_addr):
    """Whether a layout v4 chunked dataset stores partial edge chunks
    unfiltered (layout flags bit 0, H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS)."""
    with open(path, "rb") as fh:
        buf = fh.read()
    base = base_of(buf)
    for t, d in _ohdr_msgs(buf, base + ohdr_addr, base):
        if t == 8:
            return d[0] in (4, 5) and d[1] == 2 and bool(d[2] & 1)
    return False


def bt2_shape(path, ohdr_addr):
    """(depth, total records, root records) of a layout v4 v2 B-tree index,
    from its header (checksum verified by the caller's h5py reads)."""
    with open(path, "rb") as fh:
        buf = fh.read()
    base = base_of(buf)
    for t, d in _ohdr_msgs(buf, base + ohdr_addr, base):
        if t != 8 or d[0] != 4 or d[1] != 2:
            continue
        p = 5 + d[3] * d[4]
        if d[p] != 5:
            raise BtError("index type %d, not a v2 B-tree" % d[p])
        addr = base + struct.unpack_from("<Q", d, p + 7)[0]
        if buf[addr:addr + 4] != b"BTHD":
            raise BtError("no v2 B-tree header at 0x%x" % addr)
        depth = struct.unpack_from("<H", buf, addr + 12)[0]
        root_nrec = struct.unpack_from("<H", buf, addr + 24)[0]
        total = struct.unpack_from("<Q", buf, addr + 26)[0]
        return depth, total, root_nrec
    raise BtError("no v4 chunked layout message")


def check(path, ohdr_addr, k=32):
    """Walk and verify the tree; (depth, nodes, [(offsets, size, mask, addr)])."""
    with open(path, "rb") as fh:
        buf = fh.read()
    base = base_of(buf)
    if base:
        buf = buf[base:]
    root, dims = root_of(buf, ohdr_addr)
    nd = len(dims)
    ksz = 8 + 8 * nd
    levels = {}
    chunks = []
    if root == UNDEF:
        return 0, 0, chunks

    def key(p):
        size, mask = struct.unpack_from("<II", buf, p)
        offs = struct.unpack_from("<%dQ" % nd, buf, p + 8)
        return size, mask, offs

    def node(addr, want_level, lkey):
        if buf[addr:addr + 4] != b"TREE" or buf[addr + 4] != 1:
            raise BtError("node 0x%x: bad signature or type" % addr)
        level = buf[addr + 5]
        n = struct.unpack_from("<H", buf, addr + 6)[0]
        left, right = struct.unpack_from("<QQ", buf, addr + 8)
        if want_level is not None and level != want_level:
            raise BtError("node 0x%x: level %d, expected %d" % (addr, level, want_level))
        if n == 0 or n > 2 * k:
            raise BtError("node 0x%x: %d entries" % (addr, n))
        levels.setdefault(level, []).append((addr, left, right))
        p = addr + 24
        keys, kids = [], []
        for i in range(n + 1):
            keys.append(key(p))
            p += ksz
            if i < n:
                kids.append(struct.unpack_from("<Q", buf, p)[0])
                p += 8
        for s, m, offs in keys:
            for o, dm in zip(offs, dims):
                if o % dm:
                    raise BtError("node 0x%x: offset %r not on a chunk boundary" % (addr, offs))
        for a, b in zip(keys, keys[1:]):
            if not a[2] < b[2]:
                raise BtError("node 0x%x: keys out of order %r >= %r" % (addr, a[2], b[2]))
        if lkey is not None and keys[0][2] != lkey:
            raise BtError("node 0x%x: left key %r, parent says %r" % (addr, keys[0][2], lkey))
        for i in range(n):
            if level == 0:
                chunks.append((keys[i][2], keys[i][0], keys[i][1], kids[i]))
            else:
                node(kids[i], level - 1, keys[i][2])
        return level

    depth = node(root, None, None) + 1
    count = 0
    for lv, nodes in levels.items():
        count += len(nodes)
        for i, (addr, left, right) in enumerate(nodes):
            want_l = nodes[i - 1][0] if i else UNDEF
            want_r = nodes[i + 1][0] if i + 1 < len(nodes) else UNDEF
            if left != want_l or right != want_r:
                raise BtError("level %d node 0x%x: siblings 0x%x/0x%x, expected 0x%x/0x%x" % (
                    lv, addr, left, right, want_l, want_r))
    return depth, count, chunks


def main():
    import h5py
    with h5py.File(sys.argv[1], "r") as f:
        addr = h5py.h5o.get_info(f[sys.argv[2]].id).addr
    depth, count, chunks = check(sys.argv[1], addr)
    print("depth %d, %d nodes, %d chunks" % (depth, count, len(chunks)))


if __name__ == "__main__":
    main()
