/* rd.c - the bounded little-endian reader every decoder uses. */
#include "base.h"
#include "rd.h"

/* The widths fields have (addresses and lengths of 8 and 4 bytes, the
 * rest 1, 2, 4) spelled out: gcc makes each one load, where the loop was
 * a byte at a time (4% of a cold walk's daemon instructions, issue 82) */
static uint64_t le4(const uint8_t *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
}

uint64_t h5_le_decode(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	switch (n) {
	case 8:
		return le4(p) | le4(p + 4) << 32;
	case 4:
		return le4(p);
	case 2:
		return (uint64_t)p[0] | (uint64_t)p[1] << 8;
	case 1:
		return p[0];
	default:
		break;
	}
	for (unsigned i = n; i > 0; i--)
		v = (v << 8) | p[i - 1];
	return v;
}

void h5_le_encode(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		p[i] = (uint8_t)(v & 0xff);
		v >>= 8;
	}
}

uint64_t h5_rd_uint(h5_rd *r, unsigned n)
{
	uint64_t v;

	if (n > 8 || !h5_rd_need(r, n)) {
		r->bad = true;
		return 0;
	}
	v = h5_le_decode(r->p + r->pos, n);
	r->pos += n;
	return v;
}

uint64_t h5_rd_addr(h5_rd *r, const h5_fmt *fmt)
{
	unsigned n = fmt->sizeof_addr;
	uint64_t v = h5_rd_uint(r, n);
	uint64_t ones = n >= 8 ? UINT64_MAX : ((UINT64_C(1) << (8 * n)) - 1);

	if (r->bad)
		return H5_ADDR_UNDEF;
	return v == ones ? H5_ADDR_UNDEF : v;
}

uint64_t h5_rd_size(h5_rd *r, const h5_fmt *fmt)
{
	unsigned n = fmt->sizeof_size;
	uint64_t v = h5_rd_uint(r, n);
	uint64_t ones = n >= 8 ? UINT64_MAX : ((UINT64_C(1) << (8 * n)) - 1);

	/* An all-ones length means "unlimited"/"undefined" exactly like an address. */
	return v == ones ? UINT64_MAX : v;
}

const uint8_t *h5_rd_bytes(h5_rd *r, size_t n)
{
	const uint8_t *p;

	if (!h5_rd_need(r, n))
		return NULL;
	p = r->p + r->pos;
	r->pos += n;
	return p;
}

void h5_rd_skip(h5_rd *r, size_t n)
{
	if (h5_rd_need(r, n))
		r->pos += n;
}
