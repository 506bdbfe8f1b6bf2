/*
 * rd.h - the bounded little-endian reader (rd.c).
 */
#ifndef H5_BASE_RD_H
#define H5_BASE_RD_H

#include "base.h"

/* ---- bounded little-endian reader (rd.c) -------------------------------
 * A cursor over (buf, len). Reading past the end sets `bad` and yields 0, so
 * a decoder reads a whole structure and checks h5_rd_ok() once before
 * trusting any of it. */

typedef struct h5_rd {
	const uint8_t *p;
	size_t len;
	size_t pos;
	bool bad;
} h5_rd;

static inline void h5_rd_init(h5_rd *r, const void *buf, size_t len)
{
	r->p = (const uint8_t *)buf;
	r->len = len;
	r->pos = 0;
	r->bad = false;
}
static inline bool h5_rd_ok(const h5_rd *r) { return !r->bad; }
static inline size_t h5_rd_left(const h5_rd *r) { return r->bad ? 0 : r->len - r->pos; }
static inline bool h5_rd_need(h5_rd *r, size_t n)
{
	if (r->bad || n > r->len - r->pos) {
		r->bad = true;
		return false;
	}
	return true;
}
/* Little-endian unsigned integer of n bytes (0..8). */
uint64_t h5_rd_uint(h5_rd *r, unsigned n);
/* The fixed widths inline, as h5_rd_uint reads them: a header's and a
 * message's fields are read a few at a time per object, and the call and
 * byte loop of h5_rd_uint were 8% of a cold walk's instructions (issue 82) */
static inline uint8_t h5_rd_u8(h5_rd *r)
{
	return h5_rd_need(r, 1) ? r->p[r->pos++] : 0;
}
static inline uint16_t h5_rd_u16(h5_rd *r)
{
	const uint8_t *b = r->p + r->pos;

	if (!h5_rd_need(r, 2))
		return 0;
	r->pos += 2;
	return (uint16_t)(b[0] | (unsigned)b[1] << 8);
}
static inline uint32_t h5_rd_u32(h5_rd *r)
{
	const uint8_t *b = r->p + r->pos;

	if (!h5_rd_need(r, 4))
		return 0;
	r->pos += 4;
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static inline uint64_t h5_rd_u64(h5_rd *r)
{
	uint32_t lo, hi;

	if (!h5_rd_need(r, 8))
		return 0;
	lo = h5_rd_u32(r);
	hi = h5_rd_u32(r);
	return (uint64_t)hi << 32 | lo;
}
/* An address of fmt->sizeof_addr bytes; all-ones becomes H5_ADDR_UNDEF. */
uint64_t h5_rd_addr(h5_rd *r, const h5_fmt *fmt);
/* A length of fmt->sizeof_size bytes. */
uint64_t h5_rd_size(h5_rd *r, const h5_fmt *fmt);
/* Pointer to the next n bytes (NULL and bad if not available). */
const uint8_t *h5_rd_bytes(h5_rd *r, size_t n);
void h5_rd_skip(h5_rd *r, size_t n);
/* Little-endian decode of n bytes at p (no bounds checks: caller checked). */
uint64_t h5_le_decode(const uint8_t *p, unsigned n);
void h5_le_encode(uint8_t *p, uint64_t v, unsigned n);

#endif
