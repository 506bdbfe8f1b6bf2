/*
 * ordered.h - the ordered copy of a write in place across a 4 KiB page
 * (issue 71 item 5, doc/DESIGN.md "Torn pages").
 *
 * A power cut may keep some pages of a write and lose the others: a block
 * rewritten in place across a page boundary (an object header chunk
 * libhdf5 placed there) could be left half old, half new - a v2 chunk's
 * checksum then fails, a v1 chunk mixes two versions. Such a write is
 * preceded by a copy of its bytes past FILE's end (the record, below),
 * made durable first; the write in place follows, is made durable, and
 * the record is cut off. A writable open finds a record still at FILE's
 * end and writes its bytes in place again (h5_ordered_recover).
 *
 * The record, at FILE's end (a 4 KiB page boundary at or past everything
 * allocated or written: libhdf5 reads nothing past the EOF address):
 *   the bytes (n), then a trailer of 48 bytes:
 *     0  absolute offset of the write (8)     8  n (8)
 *    16  absolute offset of the block the write ends, closed by a
 *        metadata checksum in its last 4 bytes, or all ones (8)
 *    24  that block's length (8)
 *    32  lookup3 checksum of the bytes and trailer bytes 0-31 (4)
 *    36  zero (4)                             40  "H5FSOCP1" (8)
 * A record left after its write in place was made durable (the cut not
 * yet on disk) holds bytes that were durable then: writing them again
 * undoes only changes of that block no fsync has covered since (any fsync
 * after the cut makes the cut durable), which a power cut may lose
 * anyway. A checksummed block that verifies is not written again.
 */
#ifndef H5_ORDERED_H
#define H5_ORDERED_H

#include "file.h"

#define H5_ORDERED_TRAILER 48

/* A write of len bytes at addr (relative to base) over bytes something
 * references. When it spans a 4 KiB page boundary (and the file is not
 * a loose object's commit, whose bytes nothing references yet), the
 * ordered copy: record, fsync, the write, fsync, the record cut off.
 * blk, blen: the checksummed block the write ends (H5_ADDR_UNDEF: none).
 * Else one h5_file_write. Called under write_lock. */
int h5_file_write_inplace(h5_file *f, uint64_t addr, const void *buf, size_t len, uint64_t blk, uint64_t blen);

/* A record: rec holds the n bytes, the trailer is encoded after them
 * (rec has n + H5_ORDERED_TRAILER bytes); decoded from a buffer holding
 * one whole: 0 and the fields, or a negative h5_err. */
void h5_ordered_encode(uint8_t *rec, uint64_t abs, uint64_t n, uint64_t blk_abs, uint64_t blen);
int h5_ordered_decode(uint64_t *abs, uint64_t *n, uint64_t *blk_abs, uint64_t *blen, const uint8_t *rec,
		      size_t len);

/* At a writable open (file/open.c, before the superblock is read): a
 * record at FILE's end written in place again, made durable, cut off;
 * 0 also when there is none. */
int h5_ordered_recover(h5_file *f);

#endif
