/* views_tiff.c - the layout of a baseline TIFF whose samples are a
 * dataset's bytes as stored (TIFF 6.0, sections 2 and 8, and the
 * SampleFormat tag of section 19; BigTIFF when an offset needs 64 bits).
 *
 * The header, then every page's IFD back to back (each the same size: its
 * entries, the next IFD's offset, and the arrays and rationals that do not
 * fit in an entry), then the pages' samples in C order, page after page:
 * the file's byte order is the dataset's, so the samples need no change and
 * the daemon reads them as the dataset's own bytes (splice). Every byte of
 * the prefix follows from (n, h, w, sample) alone, so a read of any range
 * is made without the others and st_size is exact. Strips are whole rows,
 * about 64 KiB each (libtiff's advice is 8 KiB or more; one strip per page
 * would make a reader of a large frame hold it whole). */
#include "views.h"

#include <stdlib.h>
#include <string.h>

enum { T_SHORT = 3, T_LONG = 4, T_RATIONAL = 5, T_LONG8 = 16 };
#define NTAGS 14
#define STRIP_TARGET 65536u

static void put_n(uint8_t *p, uint64_t v, unsigned n, bool be)
{
	for (unsigned i = 0; i < n; i++)
		p[be ? n - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

int vw_tiff_layout(struct vw_tiff *t, uint64_t n, uint64_t h, uint64_t w, unsigned bytes, unsigned format,
		   bool big_endian, bool force_big)
{
	uint64_t rowb, data, page;

	memset(t, 0, sizeof(*t));
	if (!n || !h || !w || (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) || format < 1 || format > 3)
		return h5_err_set(H5_ERR_NOTFOUND, "no TIFF of this shape or type");
	if (h > UINT32_MAX || w > UINT32_MAX || w > UINT32_MAX / bytes)
		return h5_err_set(H5_ERR_NOTFOUND, "a TIFF page holds at most 2^32-1 rows and columns");
	rowb = w * bytes;
	if (h > UINT64_MAX / rowb || h * rowb > UINT64_MAX / n / 2)
		return h5_err_set(H5_ERR_NOTFOUND, "too large for a TIFF");
	page = h * rowb;
	data = n * page;
	t->n = n;
	t->h = h;
	t->w = w;
	t->bytes = bytes;
	t->format = format;
	t->big_endian = big_endian && bytes > 1;
	t->rps = rowb >= STRIP_TARGET ? 1 : STRIP_TARGET / rowb;
	if (t->rps > h)
		t->rps = h;
	t->nstrips = (h + t->rps - 1) / t->rps;
	for (int big = force_big ? 1 : 0; big < 2; big++) {
		unsigned osz = big ? 8 : 4, field = big ? 8 : 4;
		uint64_t extras = 0;

		t->big = big;
		if (t->nstrips * osz > field)
			extras += 2 * t->nstrips * osz;         /* offsets, counts */
		if (!big)
			extras += 16;                           /* two rationals */
		t->ifd_size = (big ? 8 : 2) + (uint64_t)NTAGS * (big ? 20 : 12) + (big ? 8 : 4) + extras;
		if (n > (UINT64_MAX - data) / 2 / t->ifd_size)
			return h5_err_set(H5_ERR_NOTFOUND, "too large for a TIFF");
		t->prefix = (big ? 16 : 8) + n * t->ifd_size;
		t->size = t->prefix + data;
		if (big || t->size <= UINT32_MAX)
			break;
	}
	return 0;
}

/* One entry: tag, type, count, and the value (inline) or its offset. */
static uint8_t *entry(uint8_t *p, const struct vw_tiff *t, unsigned tag, unsigned type, uint64_t count,
		      uint64_t value)
{
	bool be = t->big_endian;
	unsigned cs = t->big ? 8 : 4;

	put_n(p, tag, 2, be);
	put_n(p + 2, type, 2, be);
	put_n(p + 4, count, cs, be);
	memset(p + 4 + cs, 0, cs);
	/* an inline value is left-justified: a SHORT in its first 2 bytes */
	put_n(p + 4 + cs, value, type == T_SHORT ? 2 : type == T_LONG ? 4 : cs, be);
	return p + 4 + 2 * cs;
}

/* IFD i (t->ifd_size bytes at out), which starts at file offset base. */
static void ifd(const struct vw_tiff *t, uint8_t *out, uint64_t i, uint64_t base)
{
	bool be = t->big_endian, big = t->big;
	unsigned osz = big ? 8 : 4, otype = big ? T_LONG8 : T_LONG;
	uint64_t rowb = t->w * t->bytes, page = t->h * rowb;
	uint64_t data = t->prefix + i * page;
	uint64_t after = base + (big ? 8 : 2) + (uint64_t)NTAGS * (big ? 20 : 12) + (big ? 8 : 4);
	uint64_t xres = after, arrays = big ? after : after + 16;
	bool inline_strips = t->nstrips * osz <= osz;
	uint64_t last = t->h - (t->nstrips - 1) * t->rps;
	uint8_t *p = out;

	memset(out, 0, t->ifd_size);
	put_n(p, NTAGS, big ? 8 : 2, be);
	p += big ? 8 : 2;
	/* tags in ascending order (TIFF 6.0 section 2) */
	p = entry(p, t, 256, T_LONG, 1, t->w);                  /* ImageWidth */
	p = entry(p, t, 257, T_LONG, 1, t->h);                  /* ImageLength */
	p = entry(p, t, 258, T_SHORT, 1, t->bytes * 8);         /* BitsPerSample */
	p = entry(p, t, 259, T_SHORT, 1, 1);                    /* Compression: none */
	p = entry(p, t, 262, T_SHORT, 1, 1);                    /* BlackIsZero */
	p = entry(p, t, 273, otype, t->nstrips, inline_strips ? data : arrays);         /* StripOffsets */
	p = entry(p, t, 277, T_SHORT, 1, 1);                    /* SamplesPerPixel */
	p = entry(p, t, 278, T_LONG, 1, t->rps);                /* RowsPerStrip */
	p = entry(p, t, 279, otype, t->nstrips,                 /* StripByteCounts */
		  inline_strips ? page : arrays + t->nstrips * osz);
	if (big) {
		/* a RATIONAL fits in BigTIFF's 8-byte field: 1/1 */
		p = entry(p, t, 282, T_RATIONAL, 1, 0);
		put_n(p - 8, 1, 4, be);
		put_n(p - 4, 1, 4, be);
		p = entry(p, t, 283, T_RATIONAL, 1, 0);
		put_n(p - 8, 1, 4, be);
		put_n(p - 4, 1, 4, be);
	} else {
		p = entry(p, t, 282, T_RATIONAL, 1, xres);      /* XResolution */
		p = entry(p, t, 283, T_RATIONAL, 1, xres + 8);  /* YResolution */
	}
	p = entry(p, t, 284, T_SHORT, 1, 1);                    /* PlanarConfiguration: chunky */
	p = entry(p, t, 296, T_SHORT, 1, 1);                    /* ResolutionUnit: none */
	p = entry(p, t, 339, T_SHORT, 1, t->format);            /* SampleFormat */
	/* the next IFD, or 0 after the last */
	put_n(p, i + 1 < t->n ? base + t->ifd_size : 0, big ? 8 : 4, be);
	p += big ? 8 : 4;
	if (!big) {
		put_n(p, 1, 4, be);
		put_n(p + 4, 1, 4, be);
		put_n(p + 8, 1, 4, be);
		put_n(p + 12, 1, 4, be);
		p += 16;
	}
	if (!inline_strips) {
		for (uint64_t s = 0; s < t->nstrips; s++)
			put_n(p + s * osz, data + s * t->rps * rowb, osz, be);
		p += t->nstrips * osz;
		for (uint64_t s = 0; s < t->nstrips; s++)
			put_n(p + s * osz, (s + 1 < t->nstrips ? t->rps : last) * rowb, osz, be);
	}
}

int vw_tiff_prefix(const struct vw_tiff *t, uint8_t *buf, uint64_t off, size_t len)
{
	unsigned hdr = t->big ? 16 : 8;
	uint64_t end = off + len, i;
	uint8_t *tmp;

	if (off > t->prefix || len > t->prefix - off)
		return h5_err_set(H5_ERR_INVAL, "read past the TIFF prefix");
	if (off < hdr) {
		uint8_t h[16] = { 0 };
		size_t k = end < hdr ? len : hdr - off;

		h[0] = h[1] = t->big_endian ? 'M' : 'I';
		put_n(h + 2, t->big ? 43 : 42, 2, t->big_endian);
		if (t->big) {
			put_n(h + 4, 8, 2, t->big_endian);      /* offset size */
			put_n(h + 8, 16, 8, t->big_endian);     /* the first IFD */
		} else {
			put_n(h + 4, 8, 4, t->big_endian);
		}
		memcpy(buf, h + off, k);
	}
	if (end <= hdr)
		return 0;
	tmp = malloc(t->ifd_size);
	if (!tmp)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (i = (off > hdr ? off - hdr : 0) / t->ifd_size; i < t->n; i++) {
		uint64_t base = hdr + i * t->ifd_size, a, b;

		if (base >= end)
			break;
		ifd(t, tmp, i, base);
		a = off > base ? off : base;
		b = end < base + t->ifd_size ? end : base + t->ifd_size;
		memcpy(buf + (a - off), tmp + (a - base), b - a);
	}
	free(tmp);
	return 0;
}
