/* views_png.c - NAME.png: a 2-D uint8 or uint16 dataset (grayscale) or an
 * (H, W, 3|4) uint8 one (RGB, RGBA) as a PNG (ISO/IEC 15948, sections 5,
 * 10 and 11; the zlib stream of RFC 1950 with stored deflate blocks,
 * RFC 1951 section 3.2.4).
 *
 * Lossless and uncompressed: the image data (each row a filter byte 0 and
 * the samples, 16-bit ones big-endian) are cut into stored blocks of 65535
 * bytes, one per IDAT chunk, so every offset and the size follow from the
 * shape alone (st_size exact before any pixel is read) and a read of any
 * range needs only the blocks it touches (their CRCs). The zlib stream's
 * Adler-32 covers all the data: it is an IDAT chunk of its own at the end,
 * combined (adler32_combine) from each block's, which are kept as blocks
 * are read; a reader going straight to the end makes the rest be read
 * once. Compressing would make the size known only after encoding the
 * whole image: a copy that a mount of a large file should not make. */
#include "views.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define HEAD 33u                /* signature and IHDR */
#define TAIL 28u                /* the Adler-32 IDAT and IEND */

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

int vw_png_layout(struct vw_png *p, uint64_t h, uint64_t w, unsigned c, unsigned bits)
{
	memset(p, 0, sizeof(*p));
	if (!h || !w || (c != 1 && c != 3 && c != 4) || (bits != 8 && bits != 16) || h > INT32_MAX ||
	    w > INT32_MAX || w * c * (bits / 8) > INT32_MAX - 1)
		return h5_err_set(H5_ERR_NOTFOUND, "no PNG of this shape");
	p->h = h;
	p->w = w;
	p->c = c;
	p->bits = bits;
	p->row = 1 + w * c * (bits / 8);
	p->stream = h * p->row;
	p->nblocks = (p->stream + VW_PNG_BLOCK - 1) / VW_PNG_BLOCK;
	p->size = HEAD + 2 + 17 * p->nblocks + p->stream + TAIL;
	return 0;
}

uint64_t vw_png_block_off(const struct vw_png *p, uint64_t k)
{
	if (k >= p->nblocks)
		return HEAD + 2 + 17 * p->nblocks + p->stream;
	return HEAD + (k ? 2 : 0) + k * (17 + (uint64_t)VW_PNG_BLOCK);
}

static void chunk_crc(uint8_t *chunk, size_t data_len)
{
	uLong crc = crc32(0L, chunk + 4, (uInt)(data_len + 4));

	be32(chunk + 8 + data_len, (uint32_t)crc);
}

void vw_png_block(const struct vw_png *p, uint8_t *out, uint64_t k, const uint8_t *data, size_t len,
		  uint32_t *adler)
{
	size_t at = 8, dlen = (k ? 0 : 2) + 5 + len;

	be32(out, (uint32_t)dlen);
	memcpy(out + 4, "IDAT", 4);
	if (k == 0) {
		out[at++] = 0x78;       /* deflate, 32 KiB window */
		out[at++] = 0x01;       /* no dictionary, level 0; (0x7801 % 31) == 0 */
	}
	out[at++] = k + 1 == p->nblocks ? 1 : 0;        /* BFINAL, BTYPE 00 */
	out[at++] = (uint8_t)len;
	out[at++] = (uint8_t)(len >> 8);
	out[at++] = (uint8_t)~len;
	out[at++] = (uint8_t)(~len >> 8);
	memcpy(out + at, data, len);
	chunk_crc(out, dlen);
	*adler = (uint32_t)adler32(adler32(0L, Z_NULL, 0), data, (uInt)len);
}

void vw_png_head(const struct vw_png *p, uint8_t *buf, uint64_t off, size_t len)
{
	uint8_t h[HEAD];
	static const uint8_t ctype[5] = { 0, 0, 0, 2, 6 };

	memcpy(h, "\x89PNG\r\n\x1a\n", 8);
	be32(h + 8, 13);
	memcpy(h + 12, "IHDR", 4);
	be32(h + 16, (uint32_t)p->w);
	be32(h + 20, (uint32_t)p->h);
	h[24] = (uint8_t)p->bits;
	h[25] = ctype[p->c];
	h[26] = h[27] = h[28] = 0;      /* deflate, adaptive filters, no interlace */
	chunk_crc(h + 8, 13);
	memcpy(buf, h + off, len);
}

void vw_png_tail(const struct vw_png *p, uint8_t *buf, uint64_t off, size_t len, uint32_t adler)
{
	uint8_t t[TAIL];

	(void)p;
	be32(t, 4);
	memcpy(t + 4, "IDAT", 4);
	be32(t + 8, adler);
	chunk_crc(t, 4);
	be32(t + 16, 0);
	memcpy(t + 20, "IEND", 4);
	chunk_crc(t + 16, 0);
	memcpy(buf, t + off, len);
}

/* ---- the view ---------------------------------------------------------------- */

struct png {
	struct vw_png p;
	bool swap;              /* 16-bit samples stored little-endian */
	uint64_t rawrow;        /* the dataset's bytes of one row */
	uint64_t *adler;        /* per block: its Adler-32 + 1, 0 unknown (atomic) */
};

static void png_free(void *v)
{
	struct png *g = v;

	if (g)
		free(g->adler);
	free(g);
}

bool vw_png_can(const h5_type_view *t, unsigned rank, const uint64_t *dims)
{
	struct vw_png p;
	bool ok;

	if (t->kind != H5_TYPE_NUMBER || !t->typestr)
		return false;
	if (rank == 2)
		ok = strcmp(t->typestr, "|u1") == 0 || strcmp(t->typestr, "<u2") == 0 ||
		     strcmp(t->typestr, ">u2") == 0;
	else if (rank == 3)
		ok = (dims[2] == 3 || dims[2] == 4) && strcmp(t->typestr, "|u1") == 0;
	else
		return false;
	if (ok && vw_png_layout(&p, dims[0], dims[1], rank == 3 ? (unsigned)dims[2] : 1, t->size * 8) < 0) {
		h5_err_clear();
		ok = false;
	}
	return ok;
}

/* The filtered image data [a, b) into out. */
static int stream_bytes(h5_dataset *d, const struct png *g, uint8_t *out, uint64_t a, uint64_t b)
{
	uint64_t r0 = a / g->p.row, r1 = (b - 1) / g->p.row;
	uint8_t *raw = malloc((r1 - r0 + 1) * g->rawrow);
	int rc;

	if (!raw)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = h5_dataset_values_view(d)->read(d, raw, r0 * g->rawrow, (size_t)((r1 - r0 + 1) * g->rawrow));
	for (uint64_t pos = a; pos < b && rc == 0; pos++) {
		uint64_t r = pos / g->p.row, c = pos % g->p.row;

		if (c == 0)
			out[pos - a] = 0;       /* filter type None */
		else
			out[pos - a] = raw[(r - r0) * g->rawrow + ((c - 1) ^ (g->swap ? 1 : 0))];
	}
	free(raw);
	return rc;
}

static uint64_t png_size(const h5_dataset *d)
{
	const struct png *g = h5_dataset_view_state(d);

	return g ? g->p.size : 0;
}

/* Block k's chunk into a buffer of its own (malloc'd), its Adler kept. */
static int block_chunk(uint8_t **out, size_t *n, h5_dataset *d, struct png *g, uint64_t k)
{
	uint64_t a = k * VW_PNG_BLOCK, b = a + VW_PNG_BLOCK < g->p.stream ? a + VW_PNG_BLOCK : g->p.stream;
	size_t len = (size_t)(vw_png_block_off(&g->p, k + 1) - vw_png_block_off(&g->p, k));
	uint8_t *data = malloc(VW_PNG_BLOCK), *c = malloc(len);
	uint32_t ad;
	int rc = 0;

	if (!data || !c) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	rc = stream_bytes(d, g, data, a, b);
	if (rc < 0)
		goto out;
	vw_png_block(&g->p, c, k, data, (size_t)(b - a), &ad);
	__atomic_store_n(&g->adler[k], (uint64_t)ad + 1, __ATOMIC_RELAXED);
	*out = c;
	*n = len;
	c = NULL;
out:
	free(data);
	free(c);
	return rc;
}

static int png_read(h5_dataset *d, void *buf, uint64_t off, size_t len)
{
	struct png *g = (struct png *)h5_dataset_view_state(d);
	uint64_t end = off + len, pos = off, b0, bend;
	uint8_t *out = buf;
	int rc = 0;

	if (!g || off > g->p.size || len > g->p.size - off)
		return h5_err_set(H5_ERR_INVAL, "read of %zu bytes at %llu is past the end of the PNG", len,
				  (unsigned long long)off);
	b0 = vw_png_block_off(&g->p, 0);
	bend = vw_png_block_off(&g->p, g->p.nblocks);
	while (pos < end && rc == 0) {
		if (pos < b0) {
			uint64_t e = end < b0 ? end : b0;

			vw_png_head(&g->p, out + (pos - off), pos, (size_t)(e - pos));
			pos = e;
		} else if (pos < bend) {
			uint64_t k = pos < vw_png_block_off(&g->p, 1) ? 0
				: 1 + (pos - vw_png_block_off(&g->p, 1)) / (17 + (uint64_t)VW_PNG_BLOCK);
			uint64_t cs, ce, e;
			uint8_t *c = NULL;
			size_t n;

			if (k >= g->p.nblocks)
				k = g->p.nblocks - 1;
			cs = vw_png_block_off(&g->p, k);
			ce = vw_png_block_off(&g->p, k + 1);
			rc = block_chunk(&c, &n, d, g, k);
			if (rc < 0)
				break;
			e = end < ce ? end : ce;
			memcpy(out + (pos - off), c + (pos - cs), (size_t)(e - pos));
			free(c);
			pos = e;
		} else {
			uLong ad = adler32(0L, Z_NULL, 0);

			/* the stream's Adler-32: every block's, combined */
			for (uint64_t k = 0; k < g->p.nblocks && rc == 0; k++) {
				uint64_t v = __atomic_load_n(&g->adler[k], __ATOMIC_RELAXED);
				uint64_t bl = k + 1 < g->p.nblocks ? VW_PNG_BLOCK : g->p.stream - k * VW_PNG_BLOCK;
				uint8_t *c = NULL;
				size_t n;

				if (!v) {
					rc = block_chunk(&c, &n, d, g, k);
					free(c);
					v = __atomic_load_n(&g->adler[k], __ATOMIC_RELAXED);
				}
				ad = adler32_combine(ad, (uLong)(v - 1), (z_off_t)bl);
			}
			if (rc < 0)
				break;
			vw_png_tail(&g->p, out + (pos - off), pos - bend, (size_t)(end - pos), (uint32_t)ad);
			pos = end;
		}
	}
	return rc;
}

static int png_map(h5_read_plan *out, h5_dataset *d, uint64_t off, size_t len, unsigned flags)
{
	(void)flags;
	return h5_view_map_made(out, d, off, len, png_read);
}

static const h5_view_ops png_ops = {
	.name = "png",
	.size = png_size,
	.read = png_read,
	.map = png_map,
};

int vw_png_open(const h5_view_ops **ops, h5_dataset *d, const h5_type_view *t, unsigned rank,
		const uint64_t *dims)
{
	struct png *g = calloc(1, sizeof(*g));
	int rc;

	if (!g)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = vw_png_layout(&g->p, dims[0], dims[1], rank == 3 ? (unsigned)dims[2] : 1, t->size * 8);
	if (rc < 0) {
		png_free(g);
		return rc;
	}
	g->swap = t->size == 2 && t->typestr[0] == '<';
	g->rawrow = g->p.w * g->p.c * t->size;
	g->adler = calloc(g->p.nblocks, sizeof(*g->adler));
	if (!g->adler) {
		png_free(g);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	h5_dataset_set_view_state(d, g, png_free);
	*ops = &png_ops;
	return 0;
}
