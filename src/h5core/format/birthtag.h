/* birthtag.h - h5fs's birth tag (birthtag.c): a NIL message (IV.A.2.a,
 * type 0x0000, whose contents every reader ignores) that every object
 * header h5fs makes carries, holding a random nonzero 32-bit number. Two
 * objects made at one address (the first removed, its space reused, in
 * this mount or a later one) carry different tags, so a file handle of
 * the first, whose generation is its tag (src/fuse/member/export.c), is
 * stale for the second. The body is 8 bytes (a v1 message's body is a
 * multiple of 8): the magic "h5fT" and the tag, little-endian. Editors of
 * a header (write/ohdr_edit.c) keep it: it is no free space for them. */
#ifndef H5_FORMAT_BIRTHTAG_H
#define H5_FORMAT_BIRTHTAG_H

#include "base.h"
#include "ohdr.h"

#define H5_BIRTHTAG_LEN 8       /* the message body */

/* A new tag: random, nonzero */
uint32_t h5_birthtag_new(void);
/* The body of tag's message into b (H5_BIRTHTAG_LEN bytes) */
void h5_birthtag_encode(uint8_t *b, uint32_t tag);
/* The tag a NIL message's body (b, len) holds, or 0 when it holds none
 * (free space, another program's NIL, a damaged tag) */
uint32_t h5_birthtag_decode(const uint8_t *b, size_t len);
/* Whether m is a birth tag (a NIL message that h5_birthtag_decode reads) */
bool h5_msg_is_birthtag(const h5_msg *m);
/* The header's tag (its first birth tag message), 0: none */
uint32_t h5_ohdr_birthtag(const h5_ohdr *oh);

#endif
