#!/usr/bin/python3
"""Independent reader of a dataset's Extensible Array chunk index (spec
VII.D, shared/spec/extensible-array-reference.md), used by test_append.py to
compare what h5fs writes with what libhdf5 writes for the same appends.

It shares no code with libh5core: the object header, layout message and
every EA block are parsed here, and every checksum (Jenkins lookup3) is
verified.  structure() returns everything except addresses, so two files
built by different writers compare equal when their arrays have the same
shape: counters, block offsets, page-init bitmaps and which slots are set.

    ea_dump.py FILE DATASET      prints the structure as JSON
"""
import json
import struct
import sys

UNDEF8 = 0xFFFFFFFFFFFFFFFF


def _rot(x, k):
    return ((x << k) | (x >> (32 - k))) & 0xFFFFFFFF


def lookup3(data, initval=0):
    """hashlittle() as H5_checksum_metadata."""
    m = 0xFFFFFFFF
    n = len(data)
    a = b = c = (0xDEADBEEF + n + initval) & m
    k = 0
    while n > 12:
        a = (a + int.from_bytes(data[k:k + 4], "little")) & m
        b = (b + int.from_bytes(data[k + 4:k + 8], "little")) & m
        c = (c + int.from_bytes(data[k + 8:k + 12], "little")) & m
        a = (a - c) & m; a ^= _rot(c, 4); c = (c + b) & m
        b = (b - a) & m; b ^= _rot(a, 6); a = (a + c) & m
        c = (c - b) & m; c ^= _rot(b, 8); b = (b + a) & m
        a = (a - c) & m; a ^= _rot(c, 16); c = (c + b) & m
        b = (b - a) & m; b ^= _rot(a, 19); a = (a + c) & m
        c = (c - b) & m; c ^= _rot(b, 4); b = (b + a) & m
        n -= 12
        k += 12
    if n == 0:
        return c
    tail = data[k:k + n] + bytes(12 - n)
    a = (a + int.from_bytes(tail[0:4], "little")) & m
    b = (b + int.from_bytes(tail[4:8], "little")) & m
    c = (c + int.from_bytes(tail[8:12], "little")) & m
    c ^= b; c = (c - _rot(b, 14)) & m
    a ^= c; a = (a - _rot(c, 11)) & m
    b ^= a; b = (b - _rot(a, 25)) & m
    c ^= b; c = (c - _rot(b, 16)) & m
    a ^= c; a = (a - _rot(c, 4)) & m
    b ^= a; b = (b - _rot(a, 14)) & m
    c ^= b; c = (c - _rot(b, 24)) & m
    return c


class EAError(Exception):
    pass


class File:
    def __init__(self, path):
        with open(path, "rb") as fh:
            self.buf = fh.read()
        self.base = None
        for off in [0] + [512 << i for i in range(20)]:
            if off + 8 <= len(self.buf) and self.buf[off:off + 8] == b"\x89HDF\r\n\x1a\n":
                self.base = off
                break
        if self.base is None:
            raise EAError("no HDF5 signature")
        ver = self.buf[self.base + 8]
        if ver < 2:
            raise EAError("superblock v%d: only v2/v3 files are dumped" % ver)
        self.sa = self.buf[self.base + 9]
        self.ss = self.buf[self.base + 10]
        p = self.base + 12
        _base, _ext, self.eoa, self.root = struct.unpack_from("<4Q", self.buf, p) if self.sa == 8 else (0, 0, 0, 0)
        sblen = 12 + 4 * self.sa + 4
        if lookup3(self.buf[self.base:self.base + sblen - 4]) != self.u(self.base + sblen - 4, 4, absolute=True):
            raise EAError("superblock checksum")

    def u(self, addr, n, absolute=False):
        a = addr if absolute else self.base + addr
        if a + n > len(self.buf):
            raise EAError("read past EOF at 0x%x" % addr)
        return int.from_bytes(self.buf[a:a + n], "little")

    def bytes(self, addr, n):
        a = self.base + addr
        if a + n > len(self.buf) or addr + n > self.eoa:
            raise EAError("block 0x%x+%d beyond EOF/EOA" % (addr, n))
        return self.buf[a:a + n]

    def block(self, addr, n, sig):
        b = self.bytes(addr, n)
        if b[:4] != sig:
            raise EAError("%s at 0x%x: bad signature %r" % (sig.decode(), addr, b[:4]))
        if lookup3(b[:-4]) != int.from_bytes(b[-4:], "little"):
            raise EAError("%s at 0x%x: checksum mismatch" % (sig.decode(), addr))
        return b

    def messages(self, oh_addr):
        """(type, data) of every message of a v2 object header."""
        pfx = self.bytes(oh_addr, 6)
        if pfx[:4] != b"OHDR":
            raise EAError("object header 0x%x: only v2 headers are dumped" % oh_addr)
        flags = pfx[5]
        p = 6 + (16 if flags & 0x20 else 0) + (4 if flags & 0x10 else 0)
        szlen = 1 << (flags & 3)
        size0 = self.u(oh_addr + p, szlen)
        p += szlen
        chunks = [(oh_addr, p, p + size0)]
        out = []
        while chunks:
            addr, start, end = chunks.pop(0)
            blk = self.block(addr, end + 4, b"OHDR" if addr == oh_addr else b"OCHK")
            q = start
            while q + 4 + (2 if flags & 4 else 0) <= end:
                t = blk[q]
                sz = int.from_bytes(blk[q + 1:q + 3], "little")
                q += 4 + (2 if flags & 4 else 0)
                data = blk[q:q + sz]
                if t == 0x10:
                    ca = int.from_bytes(data[:self.sa], "little")
                    cl = int.from_bytes(data[self.sa:self.sa + self.ss], "little")
                    chunks.append((ca, 4, cl - 4))
                out.append((t, data))
                q += sz
        return out


class Geom:
    def __init__(self, max_bits, idx_elmts, min_elmts, min_ptrs, page_bits):
        self.max_bits, self.idx_elmts, self.min_elmts = max_bits, idx_elmts, min_elmts
        self.min_ptrs, self.page_bits = min_ptrs, page_bits
        self.nsblks = 1 + max_bits - (min_elmts.bit_length() - 1)
        self.iblock_nsblks = 2 * (min_ptrs.bit_length() - 1)
        self.ndblk_addrs = 2 * (min_ptrs - 1)
        self.nsblk_addrs = self.nsblks - self.iblock_nsblks
        self.arr_off = (max_bits + 7) // 8
        self.page_nelmts = 1 << page_bits
        self.ndblks, self.dblk_nelmts, self.start_idx, self.start_dblk = [], [], [], []
        si = sd = 0
        for u in range(self.nsblks):
            self.ndblks.append(1 << (u // 2))
            self.dblk_nelmts.append((1 << ((u + 1) // 2)) * min_elmts)
            self.start_idx.append(si)
            self.start_dblk.append(sd)
            si += self.ndblks[u] * self.dblk_nelmts[u]
            sd += self.ndblks[u]

    def npages(self, u):
        n = self.dblk_nelmts[u]
        return n // self.page_nelmts if n > self.page_nelmts else 0


def dump(path, dset_addr):
    """The dataset's dims and its EA, as a dict with addresses."""
    f = File(path)
    msgs = f.messages(dset_addr)
    dims = None
    layout = None
    for t, d in msgs:
        if t == 1:
            rank = d[1]
            dims = [int.from_bytes(d[4 + i * f.ss:4 + (i + 1) * f.ss], "little") for i in range(rank)]
        elif t == 8:
            layout = d
    if layout is None or layout[0] not in (4, 5) or layout[1] != 2:
        raise EAError("not a v4 chunked layout")
    ndims, enc = layout[3], layout[4]
    p = 5 + ndims * enc
    if layout[p] != 4:
        raise EAError("chunk index type %d is not an extensible array" % layout[p])
    # layout order: max bits, index elements, min pointers, min elements, page bits
    lp = list(layout[p + 1:p + 6])
    g = Geom(lp[0], lp[1], lp[3], lp[2], lp[4])
    hdr_addr = int.from_bytes(layout[p + 6:p + 6 + f.sa], "little")
    res = {"dims": dims, "eoa": f.eoa}
    if hdr_addr == (1 << (8 * f.sa)) - 1:
        res["ea"] = None
        return res
    hlen = 6 + 6 + 6 * f.ss + f.sa + 4
    h = f.block(hdr_addr, hlen, b"EAHD")
    client, esz = h[5], h[6]
    params = list(h[7:12])  # max bits, index elements, min elements, min pointers, page bits
    if params != [lp[0], lp[1], lp[3], lp[2], lp[4]]:
        raise EAError("EAHD parameters %s differ from the layout's" % params)
    q = 12
    stats = []
    for _ in range(6):
        stats.append(int.from_bytes(h[q:q + f.ss], "little"))
        q += f.ss
    iaddr = int.from_bytes(h[q:q + f.sa], "little")
    ea = {"addr": hdr_addr, "client": client, "elmt_size": esz, "params": params,
          "nsblks_created": stats[0], "sblks_size": stats[1], "ndblks_created": stats[2],
          "dblks_size": stats[3], "max_idx_set": stats[4], "nelmts_realized": stats[5],
          "iblock": None, "dblocks": [], "sblocks": [], "pages": 0, "elements": {}}
    res["ea"] = ea
    if iaddr == (1 << (8 * f.sa)) - 1:
        return res

    def owner(b, sig, addr):
        if b[5] != client or int.from_bytes(b[6:6 + f.sa], "little") != hdr_addr:
            raise EAError("%s at 0x%x: client/header back-pointer wrong" % (sig, addr))

    def elmts(raw, first, n):
        for i in range(n):
            e = raw[i * esz:(i + 1) * esz]
            a = int.from_bytes(e[:f.sa], "little")
            if a != (1 << (8 * f.sa)) - 1:
                rec = [a]
                if client == 1:
                    rec.append(int.from_bytes(e[f.sa:esz - 4], "little"))
                    rec.append(int.from_bytes(e[esz - 4:], "little"))
                ea["elements"][first + i] = rec

    def dblock(addr, u, slot, off_expected, kind):
        n = g.dblk_nelmts[u]
        np_ = g.npages(u)
        size = 6 + f.sa + g.arr_off + (0 if np_ else n * esz) + 4
        b = f.block(addr, size, b"EADB")
        owner(b, "EADB", addr)
        boff = int.from_bytes(b[6 + f.sa:6 + f.sa + g.arr_off], "little")
        if boff != off_expected & ((1 << (8 * g.arr_off)) - 1):
            raise EAError("EADB at 0x%x: block offset %d, expected %d" % (addr, boff, off_expected))
        first = g.idx_elmts + g.start_idx[u] + (slot - (g.start_dblk[u] if kind == "iblock" else 0)) * n
        ea["dblocks"].append({"sblk": u, "slot": slot, "owner": kind, "block_off": boff, "nelmts": n,
                              "npages": np_})
        if not np_:
            elmts(b[6 + f.sa + g.arr_off:-4], first, n)
        return first, n, np_

    iblen = 6 + f.sa + g.idx_elmts * esz + (g.ndblk_addrs + g.nsblk_addrs) * f.sa + 4
    ib = f.block(iaddr, iblen, b"EAIB")
    owner(ib, "EAIB", iaddr)
    q = 6 + f.sa
    elmts(ib[q:q + g.idx_elmts * esz], 0, g.idx_elmts)
    q += g.idx_elmts * esz
    dba = [int.from_bytes(ib[q + i * f.sa:q + (i + 1) * f.sa], "little") for i in range(g.ndblk_addrs)]
    q += g.ndblk_addrs * f.sa
    sba = [int.from_bytes(ib[q + i * f.sa:q + (i + 1) * f.sa], "little") for i in range(g.nsblk_addrs)]
    undef = (1 << (8 * f.sa)) - 1
    ea["iblock"] = {"addr": iaddr, "dblk_set": [a != undef for a in dba], "sblk_set": [a != undef for a in sba]}
    slot = 0
    for u in range(g.iblock_nsblks):
        for k in range(g.ndblks[u]):
            if dba[slot] != undef:
                dblock(dba[slot], u, slot, g.start_idx[u] + slot * g.dblk_nelmts[u], "iblock")
            slot += 1
    for s, a in enumerate(sba):
        if a == undef:
            continue
        u = s + g.iblock_nsblks
        np_ = g.npages(u)
        pis = (np_ + 7) // 8 if np_ else 0
        size = 6 + f.sa + g.arr_off + g.ndblks[u] * pis + g.ndblks[u] * f.sa + 4
        sb = f.block(a, size, b"EASB")
        owner(sb, "EASB", a)
        q = 6 + f.sa
        boff = int.from_bytes(sb[q:q + g.arr_off], "little")
        if boff != g.start_idx[u]:
            raise EAError("EASB at 0x%x: block offset %d, expected %d" % (a, boff, g.start_idx[u]))
        q += g.arr_off
        bitmap = sb[q:q + g.ndblks[u] * pis]
        q += g.ndblks[u] * pis
        das = [int.from_bytes(sb[q + i * f.sa:q + (i + 1) * f.sa], "little") for i in range(g.ndblks[u])]
        ea["sblocks"].append({"sblk": u, "block_off": boff, "page_init": bitmap.hex(),
                              "dblk_set": [d != undef for d in das]})
        for k, da in enumerate(das):
            if da == undef:
                continue
            first, n, np_ = dblock(da, u, k, g.start_idx[u] + k * g.dblk_nelmts[u], "sblock")
            if not np_:
                continue
            psize = g.page_nelmts * esz + 4
            for pg in range(np_):
                bit = k * np_ + pg
                if not bitmap[bit // 8] & (0x80 >> (bit % 8)):
                    continue
                paddr = da + 6 + f.sa + g.arr_off + 4 + pg * psize
                pb = f.bytes(paddr, psize)
                if lookup3(pb[:-4]) != int.from_bytes(pb[-4:], "little"):
                    raise EAError("EA page at 0x%x: checksum mismatch" % paddr)
                ea["pages"] += 1
                elmts(pb[:-4], first + pg * g.page_nelmts, g.page_nelmts)
    return res


def structure(path, dset_addr):
    """dump() without addresses and chunk sizes: what two writers must agree on."""
    d = dump(path, dset_addr)
    ea = d["ea"]
    if ea is None:
        return {"dims": d["dims"], "ea": None}
    s = dict(ea)
    del s["addr"]
    s["elements"] = sorted(ea["elements"])
    if s["iblock"]:
        s["iblock"] = {k: v for k, v in ea["iblock"].items() if k != "addr"}
    return {"dims": d["dims"], "ea": s}


def dset_addr(path, name):
    import h5py
    with h5py.File(path, "r") as f:
        return h5py.h5o.get_info(f[name].id).addr


if __name__ == "__main__":
    p, n = sys.argv[1], sys.argv[2]
    print(json.dumps(structure(p, dset_addr(p, n)), indent=1, sort_keys=True))
