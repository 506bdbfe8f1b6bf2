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
 *   the new bytes (n), the old bytes (n, as FILE held them), then a
 *   trailer of 48 bytes:
 *     0  absolute offset of the write (8)     8  n (8)
 *    16  zero (16)
 *    32  lookup3 checksum of the 2n bytes and trailer bytes 0-31 (4)
 *    36  zero (4)                             40  "H5FSOCP2" (8)
 * Recovery writes the new bytes again only when FILE holds, page by page,
 * the old or the new ones and not all new: a torn write, or one not
 * begun. A record left after its write in place was made durable (the
 * cut not yet on disk) is older than any change of the block made since:
 * a page holding neither leaves the block alone; and any fsync after the
 * cut makes the cut durable, so a record can only undo changes no fsync
 * covered, which a power cut may lose anyway.
 */
#ifndef H5_ORDERED_H
#define H5_ORDERED_H

#include "file.h"

#define H5_ORDERED_TRAILER 48

/* A write of len bytes at addr (relative to base) over bytes something
 * references. When it spans a 4 KiB page boundary (and the file is not
 * a loose object's commit, whose bytes nothing references yet), the
 * ordered copy: record, fsync, the write, fsync, the record cut off.
 * Else one h5_file_write. Called under write_lock. */
int h5_file_write_inplace(h5_file *f, uint64_t addr, const void *buf, size_t len);

/* The disk space the record of one ordered copy takes (its pages past
 * FILE's end), which every reserve counts before its change is answered
 * (write/reserve.c h5_file_reserve): the record of an in-place write of a
 * page (any header chunk h5fs places; most libhdf5 places), or of the
 * largest such write this file made since it was opened. One at a time
 * (write_lock), cut off at once: one room serves every holder. 0 while
 * no block across a page has been seen (h5_ordered_note): a file whose
 * headers all lie within pages needs no record, and a change that fits
 * freed space is still made on a full disk. */
uint64_t h5_ordered_room(h5_file *f);
/* A block at addr (relative) of len bytes that a commit may rewrite in
 * place (an object header chunk, format/ohdr.c, as it is decoded - before
 * any change of it is answered): across a page, the reserves count a
 * record from now on. */
void h5_ordered_note(h5_file *f, uint64_t addr, uint64_t len);

/* A record: rec holds the n new bytes and the n old ones, the trailer is
 * encoded after them (rec has 2n + H5_ORDERED_TRAILER bytes); decoded
 * from a buffer holding one whole: 0 and the fields, or a negative
 * h5_err. */
void h5_ordered_encode(uint8_t *rec, uint64_t abs, uint64_t n);
int h5_ordered_decode(uint64_t *abs, uint64_t *n, const uint8_t *rec, size_t len);

/* At a writable open (file/open.c, before the superblock is read): a
 * record at FILE's end written in place again, made durable, cut off;
 * 0 also when there is none. */
int h5_ordered_recover(h5_file *f);

#endif
