/*
 * earray.c - the extensible array chunk index (spec VII.D; libhdf5 H5EA*.c).
 *
 * An EA is a header (EAHD) pointing to an index block (EAIB) that holds the
 * first idx_blk_elmts elements, the addresses of the data blocks (EADB) of
 * the first iblock_nsblks "super blocks", and the addresses of the super
 * block structures (EASB) for the rest. Data blocks bigger than a page are
 * split into checksummed pages whose existence the EASB tracks in a bitmap.
 * The geometry is not stored: it follows from the creation parameters
 * exactly as H5EA__hdr_init computes it (see
 * shared/spec/extensible-array-reference.md). The appending writer is
 * earray_write.c; the loaders it shares are declared in earray_int.h.
 */
#include "array.h"
#include "earray_int.h"

#include <stdio.h>

#define EA_PREFIX 6u /* signature, version, client id */
#define EA_CKSUM 4u

static unsigned log2_floor(uint64_t v) { return 63u - (unsigned)__builtin_clzll(v); }
static bool is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

static uint64_t off_mask(unsigned n)
{
	return n >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * n)) - 1;
}

int h5_ea_geom_init(h5_ea_geom *g, unsigned max_nelmts_bits, unsigned idx_blk_elmts,
		    unsigned data_blk_min_elmts, unsigned sup_blk_min_data_ptrs,
		    unsigned max_dblk_page_nelmts_bits)
{
	uint64_t start_idx = 0, start_dblk = 0;
	unsigned lmin;

	memset(g, 0, sizeof(*g));
	/* The parameters are one byte each on disk; libhdf5 (H5EA__hdr_create)
	 * refuses the same combinations when it creates an array. */
	if (max_nelmts_bits == 0 || max_nelmts_bits > 64)
		return h5_err_set(H5_ERR_FORMAT, "extensible array: max_nelmts_bits %u not in 1..64",
				  max_nelmts_bits);
	if (idx_blk_elmts == 0 || idx_blk_elmts > 255)
		return h5_err_set(H5_ERR_FORMAT, "extensible array: bad index block element count %u",
				  idx_blk_elmts);
	if (data_blk_min_elmts > 255 || !is_pow2(data_blk_min_elmts))
		return h5_err_set(H5_ERR_FORMAT, "extensible array: data_blk_min_elmts %u is not a power of two",
				  data_blk_min_elmts);
	if (sup_blk_min_data_ptrs < 2 || sup_blk_min_data_ptrs > 255 || !is_pow2(sup_blk_min_data_ptrs))
		return h5_err_set(H5_ERR_FORMAT,
				  "extensible array: sup_blk_min_data_ptrs %u is not a power of two >= 2",
				  sup_blk_min_data_ptrs);
	if (max_dblk_page_nelmts_bits == 0 || max_dblk_page_nelmts_bits > max_nelmts_bits)
		return h5_err_set(H5_ERR_FORMAT, "extensible array: page bits %u not in 1..%u",
				  max_dblk_page_nelmts_bits, max_nelmts_bits);
	lmin = log2_floor(data_blk_min_elmts);
	if (lmin > max_nelmts_bits || 1 + max_nelmts_bits - lmin > 64)
		return h5_err_set(H5_ERR_FORMAT, "extensible array: %u element bits cannot hold data blocks of %u",
				  max_nelmts_bits, data_blk_min_elmts);

	g->max_nelmts_bits = max_nelmts_bits;
	g->idx_blk_elmts = idx_blk_elmts;
	g->data_blk_min_elmts = data_blk_min_elmts;
	g->sup_blk_min_data_ptrs = sup_blk_min_data_ptrs;
	g->max_dblk_page_nelmts_bits = max_dblk_page_nelmts_bits;
	g->nsblks = 1 + max_nelmts_bits - lmin;
	g->iblock_nsblks = 2 * log2_floor(sup_blk_min_data_ptrs);
	if (g->iblock_nsblks > g->nsblks)
		return h5_err_set(H5_ERR_FORMAT,
				  "extensible array: index block would hold %u super blocks of only %u",
				  g->iblock_nsblks, g->nsblks);
	g->ndblk_addrs = 2 * (sup_blk_min_data_ptrs - 1);
	g->nsblk_addrs = g->nsblks - g->iblock_nsblks;
	g->arr_off_size = (max_nelmts_bits + 7) / 8;
	/* 64 page bits: no data block can exceed the page, so none is paged. */
	g->dblk_page_nelmts = max_dblk_page_nelmts_bits >= 64 ? UINT64_MAX
							       : UINT64_C(1) << max_dblk_page_nelmts_bits;
	for (unsigned u = 0; u < g->nsblks; u++) {
		uint64_t n;

		g->sb_ndblks[u] = UINT64_C(1) << (u / 2);
		g->sb_dblk_nelmts[u] = (UINT64_C(1) << ((u + 1) / 2)) * data_blk_min_elmts;
		g->sb_start_idx[u] = start_idx;
		g->sb_start_dblk[u] = start_dblk;
		/* Only the sums past the last super block may overflow (64-bit arrays). */
		if (u + 1 < g->nsblks &&
		    (h5_mul_overflow(g->sb_ndblks[u], g->sb_dblk_nelmts[u], &n) ||
		     h5_add_overflow(start_idx, n, &start_idx) ||
		     h5_add_overflow(start_dblk, g->sb_ndblks[u], &start_dblk)))
			return h5_err_set(H5_ERR_FORMAT, "extensible array: geometry overflows at super block %u", u);
	}
	return 0;
}

uint64_t h5_ea_dblk_npages(const h5_ea_geom *g, unsigned u)
{
	if (u >= g->nsblks || g->sb_dblk_nelmts[u] <= g->dblk_page_nelmts)
		return 0;
	/* Both are powers of two, so the pages tile the block exactly. */
	return g->sb_dblk_nelmts[u] / g->dblk_page_nelmts;
}

uint64_t h5_ea_page_init_size(const h5_ea_geom *g, unsigned u)
{
	return (h5_ea_dblk_npages(g, u) + 7) / 8;
}

uint64_t h5_ea_dblock_off(const h5_ea_geom *g, unsigned u, uint64_t dblk_idx)
{
	/* H5EA__lookup_elmt: start_idx + dblk_idx * dblk_nelmts, where dblk_idx
	 * is the index-block-global slot for index-block data blocks (so the
	 * value is "inflated" there) and the super-block-local one otherwise.
	 * Wrapping is harmless: only arr_off_size bytes are stored. */
	return g->sb_start_idx[u] + dblk_idx * g->sb_dblk_nelmts[u];
}

int h5_ea_locate(h5_ea_loc *out, const h5_ea_geom *g, uint64_t idx)
{
	uint64_t e, q, local;
	unsigned u;

	memset(out, 0, sizeof(*out));
	if (idx < g->idx_blk_elmts) {
		out->in_iblock = true;
		out->elmt = idx;
		return 0;
	}
	/* H5EA__dblock_sblk_idx: the super block is log2(e / min + 1). */
	e = idx - g->idx_blk_elmts;
	q = e / g->data_blk_min_elmts;
	if (q == UINT64_MAX)
		return h5_err_set(H5_ERR_RANGE, "extensible array: index %llu out of range", (unsigned long long)idx);
	u = log2_floor(q + 1);
	if (u >= g->nsblks)
		return h5_err_set(H5_ERR_RANGE, "extensible array: index %llu beyond %u super blocks",
				  (unsigned long long)idx, g->nsblks);
	e -= g->sb_start_idx[u];
	out->sblk_idx = u;
	out->dblk_nelmts = g->sb_dblk_nelmts[u];
	local = e / out->dblk_nelmts;
	out->elmt = e % out->dblk_nelmts;
	if (u < g->iblock_nsblks) {
		out->dblk_idx = g->sb_start_dblk[u] + local;
	} else {
		out->via_sblock = true;
		out->sblk_off = u - g->iblock_nsblks;
		out->dblk_idx = local;
	}
	if (h5_ea_dblk_npages(g, u)) {
		out->paged = true;
		out->page_idx = out->elmt / g->dblk_page_nelmts;
		out->page_elmt = out->elmt % g->dblk_page_nelmts;
		out->page_init_bit = local * h5_ea_dblk_npages(g, u) + out->page_idx;
	}
	return 0;
}

/* ---- sizes (H5EA_*_SIZE macros in H5EApkg.h) ------------------------------ */

size_t h5_ea_hdr_size(const h5_fmt *fmt)
{
	return EA_PREFIX + 6 + 6u * fmt->sizeof_size + fmt->sizeof_addr + EA_CKSUM;
}

uint64_t h5_ea_iblock_size(const h5_ea_hdr *h, const h5_fmt *fmt)
{
	const h5_ea_geom *g = &h->g;

	/* All factors are bounded by one-byte parameters: no overflow. */
	return EA_PREFIX + fmt->sizeof_addr + (uint64_t)g->idx_blk_elmts * h->elmt_size +
	       (uint64_t)(g->ndblk_addrs + g->nsblk_addrs) * fmt->sizeof_addr + EA_CKSUM;
}

uint64_t h5_ea_sblock_size(const h5_ea_hdr *h, const h5_fmt *fmt, unsigned u)
{
	const h5_ea_geom *g = &h->g;
	uint64_t n, bitmap = 0, addrs;

	if (u >= g->nsblks)
		return 0;
	n = g->sb_ndblks[u];
	if (h5_ea_dblk_npages(g, u) && h5_mul_overflow(n, h5_ea_page_init_size(g, u), &bitmap))
		return 0;
	if (h5_mul_overflow(n, fmt->sizeof_addr, &addrs) || h5_add_overflow(bitmap, addrs, &n) ||
	    h5_add_overflow(n, EA_PREFIX + fmt->sizeof_addr + g->arr_off_size + EA_CKSUM, &n))
		return 0;
	return n;
}

static uint64_t dblock_prefix_size(const h5_ea_hdr *h, const h5_fmt *fmt)
{
	return EA_PREFIX + fmt->sizeof_addr + h->g.arr_off_size + EA_CKSUM;
}

uint64_t h5_ea_dblock_npages(const h5_ea_hdr *h, uint64_t nelmts)
{
	return nelmts > h->g.dblk_page_nelmts ? nelmts / h->g.dblk_page_nelmts : 0;
}

uint64_t h5_ea_dblock_size(const h5_ea_hdr *h, const h5_fmt *fmt, uint64_t nelmts)
{
	uint64_t n;

	if (h5_ea_dblock_npages(h, nelmts))
		return dblock_prefix_size(h, fmt);
	if (h5_mul_overflow(nelmts, h->elmt_size, &n) || h5_add_overflow(n, dblock_prefix_size(h, fmt), &n))
		return 0;
	return n;
}

uint64_t h5_ea_page_size(const h5_ea_hdr *h)
{
	uint64_t n;

	if (h5_mul_overflow(h->g.dblk_page_nelmts, h->elmt_size, &n) || h5_add_overflow(n, EA_CKSUM, &n))
		return 0;
	return n;
}

uint64_t h5_ea_dblock_alloc_size(const h5_ea_hdr *h, const h5_fmt *fmt, uint64_t nelmts)
{
	uint64_t np = h5_ea_dblock_npages(h, nelmts), n;

	if (!np)
		return h5_ea_dblock_size(h, fmt, nelmts);
	if (!h5_ea_page_size(h) || h5_mul_overflow(np, h5_ea_page_size(h), &n) ||
	    h5_add_overflow(n, dblock_prefix_size(h, fmt), &n))
		return 0;
	return n;
}

uint64_t h5_ea_page_addr(const h5_ea_hdr *h, const h5_fmt *fmt, uint64_t dblk_addr, uint64_t p)
{
	uint64_t a;

	/* Pages follow the data block's prefix (H5EA__lookup_elmt). */
	if (!h5_ea_page_size(h) || h5_mul_overflow(p, h5_ea_page_size(h), &a) ||
	    h5_add_overflow(a, dblock_prefix_size(h, fmt), &a) || h5_add_overflow(a, dblk_addr, &a))
		return H5_ADDR_UNDEF;
	return a;
}

/* ---- decoders ------------------------------------------------------------ */

/* Client id and header back-pointer of an index/super/data block. */
static int check_owner(h5_rd *r, const h5_ea_hdr *h, const h5_fmt *fmt, const char *sig, uint64_t addr)
{
	unsigned client = h5_rd_u8(r);
	uint64_t owner = h5_rd_addr(r, fmt);

	if (client != h->client)
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: client id %u differs from the header's %u", sig,
				  (unsigned long long)addr, client, h->client);
	if (owner != h->addr)
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: header address 0x%llx does not point back to EAHD at 0x%llx",
				  sig, (unsigned long long)addr, (unsigned long long)owner,
				  (unsigned long long)h->addr);
	return 0;
}

int h5_ea_hdr_decode(h5_ea_hdr *out, const h5_fmt *fmt, uint64_t addr, const uint8_t *buf, size_t len)
{
	h5_rd r;
	unsigned max_bits, idx_blk, min_elmts, min_ptrs, page_bits;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = h5_block_check(buf, len, h5_ea_hdr_size(fmt), "EAHD", H5_EA_VERSION, addr);
	if (rc < 0)
		return rc;
	h5_rd_init(&r, buf, len);
	h5_rd_skip(&r, 5);
	out->addr = addr;
	out->client = h5_rd_u8(&r);
	out->elmt_size = h5_rd_u8(&r);
	max_bits = h5_rd_u8(&r);
	idx_blk = h5_rd_u8(&r);
	min_elmts = h5_rd_u8(&r);
	min_ptrs = h5_rd_u8(&r);
	page_bits = h5_rd_u8(&r);
	out->nsblks_created = h5_rd_size(&r, fmt);
	out->sblks_size = h5_rd_size(&r, fmt);
	out->ndblks_created = h5_rd_size(&r, fmt);
	out->dblks_size = h5_rd_size(&r, fmt);
	out->max_idx_set = h5_rd_size(&r, fmt);
	out->nelmts = h5_rd_size(&r, fmt);
	out->iblock_addr = h5_rd_addr(&r, fmt);
	if (!h5_rd_ok(&r))
		return h5_err_set(H5_ERR_FORMAT, "EAHD at 0x%llx: truncated", (unsigned long long)addr);
	rc = h5_chunk_elmt_check(fmt, out->client, out->elmt_size);
	if (rc < 0)
		return h5_err_wrap(rc, "EAHD at 0x%llx: ", (unsigned long long)addr);
	rc = h5_ea_geom_init(&out->g, max_bits, idx_blk, min_elmts, min_ptrs, page_bits);
	if (rc < 0)
		return h5_err_wrap(rc, "EAHD at 0x%llx: ", (unsigned long long)addr);
	if (out->max_idx_set > 0) {
		h5_ea_loc loc;

		if (h5_ea_locate(&loc, &out->g, out->max_idx_set - 1) < 0)
			return h5_err_set(H5_ERR_FORMAT, "EAHD at 0x%llx: max index set %llu exceeds the array's capacity",
					  (unsigned long long)addr, (unsigned long long)out->max_idx_set);
	}
	return 0;
}

int h5_ea_iblock_decode(h5_ea_iblock **out, const h5_ea_hdr *h, const h5_fmt *fmt, uint64_t addr,
			const uint8_t *buf, size_t len)
{
	const h5_ea_geom *g = &h->g;
	uint64_t size = h5_ea_iblock_size(h, fmt);
	size_t esz = (size_t)g->idx_blk_elmts * h->elmt_size;
	h5_ea_iblock *b;
	h5_rd r;
	int rc;

	*out = NULL;
	rc = h5_block_check(buf, len, size, "EAIB", H5_EA_VERSION, addr);
	if (rc < 0)
		return rc;
	h5_rd_init(&r, buf, (size_t)size);
	h5_rd_skip(&r, 5);
	rc = check_owner(&r, h, fmt, "EAIB", addr);
	if (rc < 0)
		return rc;
	b = calloc(1, sizeof(*b) + (size_t)(g->ndblk_addrs + g->nsblk_addrs) * sizeof(uint64_t) + esz);
	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory decoding EAIB");
	b->addr = addr;
	b->hdr_addr = h->addr;
	b->dblk_addrs = (uint64_t *)(b + 1);
	b->sblk_addrs = b->dblk_addrs + g->ndblk_addrs;
	b->elmts = (uint8_t *)(b->sblk_addrs + g->nsblk_addrs);
	memcpy(b->elmts, h5_rd_bytes(&r, esz), esz);
	for (unsigned i = 0; i < g->ndblk_addrs; i++)
		b->dblk_addrs[i] = h5_rd_addr(&r, fmt);
	for (unsigned i = 0; i < g->nsblk_addrs; i++)
		b->sblk_addrs[i] = h5_rd_addr(&r, fmt);
	*out = b;
	return 0;
}

int h5_ea_sblock_decode(h5_ea_sblock **out, const h5_ea_hdr *h, const h5_fmt *fmt, uint64_t addr,
			unsigned sblk_idx, const uint8_t *buf, size_t len)
{
	const h5_ea_geom *g = &h->g;
	uint64_t size, bitmap;
	h5_ea_sblock *b;
	h5_rd r;
	int rc;

	*out = NULL;
	if (sblk_idx < g->iblock_nsblks || sblk_idx >= g->nsblks)
		return h5_err_set(H5_ERR_FORMAT, "EASB at 0x%llx: super block %u has no EASB",
				  (unsigned long long)addr, sblk_idx);
	size = h5_ea_sblock_size(h, fmt, sblk_idx);
	rc = h5_block_check(buf, len, size, "EASB", H5_EA_VERSION, addr);
	if (rc < 0)
		return rc;
	h5_rd_init(&r, buf, (size_t)size);
	h5_rd_skip(&r, 5);
	rc = check_owner(&r, h, fmt, "EASB", addr);
	if (rc < 0)
		return rc;
	/* size fits in memory (it was read), so ndblks addresses and the bitmap do too */
	bitmap = h5_ea_dblk_npages(g, sblk_idx) ? g->sb_ndblks[sblk_idx] * h5_ea_page_init_size(g, sblk_idx) : 0;
	b = calloc(1, sizeof(*b) + (size_t)g->sb_ndblks[sblk_idx] * sizeof(uint64_t) + (size_t)bitmap);
	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory decoding EASB at 0x%llx", (unsigned long long)addr);
	b->addr = addr;
	b->hdr_addr = h->addr;
	b->sblk_idx = sblk_idx;
	b->ndblks = g->sb_ndblks[sblk_idx];
	b->npages = h5_ea_dblk_npages(g, sblk_idx);
	b->page_init_size = b->npages ? h5_ea_page_init_size(g, sblk_idx) : 0;
	b->dblk_addrs = (uint64_t *)(b + 1);
	b->block_off = h5_rd_uint(&r, g->arr_off_size);
	if (b->block_off != (g->sb_start_idx[sblk_idx] & off_mask(g->arr_off_size))) {
		rc = h5_err_set(H5_ERR_FORMAT, "EASB at 0x%llx: block offset %llu, expected %llu for super block %u",
				(unsigned long long)addr, (unsigned long long)b->block_off,
				(unsigned long long)g->sb_start_idx[sblk_idx], sblk_idx);
		free(b);
		return rc;
	}
	if (bitmap) {
		b->page_init = (uint8_t *)(b->dblk_addrs + b->ndblks);
		memcpy(b->page_init, h5_rd_bytes(&r, (size_t)bitmap), (size_t)bitmap);
	}
	for (uint64_t i = 0; i < b->ndblks; i++)
		b->dblk_addrs[i] = h5_rd_addr(&r, fmt);
	*out = b;
	return 0;
}

int h5_ea_dblock_decode(h5_ea_dblock **out, const h5_ea_hdr *h, const h5_fmt *fmt, uint64_t addr,
			uint64_t nelmts, uint64_t expect_off, const uint8_t *buf, size_t len)
{
	uint64_t size = h5_ea_dblock_size(h, fmt, nelmts);
	uint64_t np = h5_ea_dblock_npages(h, nelmts);
	size_t esz = np ? 0 : (size_t)(nelmts * h->elmt_size); /* bounded by size */
	h5_ea_dblock *b;
	h5_rd r;
	int rc;

	*out = NULL;
	rc = h5_block_check(buf, len, size, "EADB", H5_EA_VERSION, addr);
	if (rc < 0)
		return rc;
	h5_rd_init(&r, buf, (size_t)size);
	h5_rd_skip(&r, 5);
	rc = check_owner(&r, h, fmt, "EADB", addr);
	if (rc < 0)
		return rc;
	b = calloc(1, sizeof(*b) + esz);
	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory decoding EADB at 0x%llx", (unsigned long long)addr);
	b->addr = addr;
	b->hdr_addr = h->addr;
	b->nelmts = nelmts;
	b->npages = np;
	b->block_off = h5_rd_uint(&r, h->g.arr_off_size);
	if (b->block_off != (expect_off & off_mask(h->g.arr_off_size))) {
		rc = h5_err_set(H5_ERR_FORMAT, "EADB at 0x%llx: block offset %llu, expected %llu",
				(unsigned long long)addr, (unsigned long long)b->block_off,
				(unsigned long long)(expect_off & off_mask(h->g.arr_off_size)));
		free(b);
		return rc;
	}
	if (!np) {
		b->elmts = (uint8_t *)(b + 1);
		memcpy(b->elmts, h5_rd_bytes(&r, esz), esz);
	}
	*out = b;
	return 0;
}

int h5_ea_page_verify(const h5_ea_hdr *h, uint64_t addr, const uint8_t *buf, size_t len)
{
	uint64_t size = h5_ea_page_size(h);

	if (size == 0 || len != size)
		return h5_err_set(H5_ERR_FORMAT, "EA data block page at 0x%llx: %zu bytes, expected %llu",
				  (unsigned long long)addr, len, (unsigned long long)size);
	return h5_checksum_verify(buf, len, "EA data block page", addr);
}

void h5_ea_iblock_free(h5_ea_iblock *b) { free(b); }
void h5_ea_sblock_free(h5_ea_sblock *b) { free(b); }
void h5_ea_dblock_free(h5_ea_dblock *b) { free(b); }

/* ---- encoders (for the appending writer) ------------------------------------ */

static void put_prefix(uint8_t *p, const char *sig, unsigned client)
{
	memcpy(p, sig, 4);
	p[4] = H5_EA_VERSION;
	p[5] = (uint8_t)client;
}

static void put_cksum(uint8_t *buf, size_t len)
{
	h5_le_encode(buf + len - EA_CKSUM, h5_checksum_metadata(buf, len - EA_CKSUM), 4);
}

static int check_len(size_t len, uint64_t want, const char *what)
{
	if (want == 0 || len != want)
		return h5_err_set(H5_ERR_INVAL, "%s encode: buffer of %zu bytes, need %llu", what, len,
				  (unsigned long long)want);
	return 0;
}

int h5_ea_hdr_encode(uint8_t *buf, size_t len, const h5_fmt *fmt, const h5_ea_hdr *h)
{
	const h5_ea_geom *g = &h->g;
	uint8_t *p = buf + EA_PREFIX;
	uint64_t stats[6] = { h->nsblks_created, h->sblks_size, h->ndblks_created,
			      h->dblks_size, h->max_idx_set, h->nelmts };
	int rc = check_len(len, h5_ea_hdr_size(fmt), "EAHD");

	if (rc < 0)
		return rc;
	put_prefix(buf, "EAHD", h->client);
	*p++ = h->elmt_size;
	*p++ = (uint8_t)g->max_nelmts_bits;
	*p++ = (uint8_t)g->idx_blk_elmts;
	*p++ = (uint8_t)g->data_blk_min_elmts;
	*p++ = (uint8_t)g->sup_blk_min_data_ptrs;
	*p++ = (uint8_t)g->max_dblk_page_nelmts_bits;
	for (int i = 0; i < 6; i++, p += fmt->sizeof_size)
		h5_le_encode(p, stats[i], fmt->sizeof_size);
	h5_le_encode(p, h->iblock_addr, fmt->sizeof_addr); /* UNDEF encodes as all ones */
	put_cksum(buf, len);
	return 0;
}

int h5_ea_iblock_encode(uint8_t *buf, size_t len, const h5_ea_hdr *h, const h5_fmt *fmt, const h5_ea_iblock *b)
{
	const h5_ea_geom *g = &h->g;
	uint8_t *p = buf + EA_PREFIX;
	size_t esz = (size_t)g->idx_blk_elmts * h->elmt_size;
	int rc = check_len(len, h5_ea_iblock_size(h, fmt), "EAIB");

	if (rc < 0)
		return rc;
	put_prefix(buf, "EAIB", h->client);
	h5_le_encode(p, h->addr, fmt->sizeof_addr);
	p += fmt->sizeof_addr;
	memcpy(p, b->elmts, esz);
	p += esz;
	for (unsigned i = 0; i < g->ndblk_addrs; i++, p += fmt->sizeof_addr)
		h5_le_encode(p, b->dblk_addrs[i], fmt->sizeof_addr);
	for (unsigned i = 0; i < g->nsblk_addrs; i++, p += fmt->sizeof_addr)
		h5_le_encode(p, b->sblk_addrs[i], fmt->sizeof_addr);
	put_cksum(buf, len);
	return 0;
}

int h5_ea_sblock_encode(uint8_t *buf, size_t len, const h5_ea_hdr *h, const h5_fmt *fmt, const h5_ea_sblock *b)
{
	const h5_ea_geom *g = &h->g;
	unsigned u = b->sblk_idx;
	uint8_t *p = buf + EA_PREFIX;
	int rc = check_len(len, h5_ea_sblock_size(h, fmt, u), "EASB");

	if (rc < 0)
		return rc;
	if (u < g->iblock_nsblks)
		return h5_err_set(H5_ERR_INVAL, "EASB encode: super block %u lives in the index block", u);
	put_prefix(buf, "EASB", h->client);
	h5_le_encode(p, h->addr, fmt->sizeof_addr);
	p += fmt->sizeof_addr;
	h5_le_encode(p, g->sb_start_idx[u], g->arr_off_size);
	p += g->arr_off_size;
	if (h5_ea_dblk_npages(g, u)) {
		size_t bitmap = (size_t)(g->sb_ndblks[u] * h5_ea_page_init_size(g, u));

		if (b->page_init)
			memcpy(p, b->page_init, bitmap);
		else
			memset(p, 0, bitmap);
		p += bitmap;
	}
	for (uint64_t i = 0; i < g->sb_ndblks[u]; i++, p += fmt->sizeof_addr)
		h5_le_encode(p, b->dblk_addrs[i], fmt->sizeof_addr);
	put_cksum(buf, len);
	return 0;
}

int h5_ea_dblock_encode(uint8_t *buf, size_t len, const h5_ea_hdr *h, const h5_fmt *fmt, const h5_ea_dblock *b)
{
	uint8_t *p = buf + EA_PREFIX;
	int rc = check_len(len, h5_ea_dblock_size(h, fmt, b->nelmts), "EADB");

	if (rc < 0)
		return rc;
	put_prefix(buf, "EADB", h->client);
	h5_le_encode(p, h->addr, fmt->sizeof_addr);
	p += fmt->sizeof_addr;
	h5_le_encode(p, b->block_off, h->g.arr_off_size);
	p += h->g.arr_off_size;
	if (!h5_ea_dblock_npages(h, b->nelmts))
		memcpy(p, b->elmts, (size_t)(b->nelmts * h->elmt_size));
	put_cksum(buf, len);
	return 0;
}

int h5_ea_page_encode(uint8_t *buf, size_t len, const h5_ea_hdr *h, const uint8_t *elmts)
{
	int rc = check_len(len, h5_ea_page_size(h), "EA page");

	if (rc < 0)
		return rc;
	memcpy(buf, elmts, len - EA_CKSUM);
	put_cksum(buf, len);
	return 0;
}

/* ---- cached loaders ---------------------------------------------------------
 * A block is cached by address; the decoded object keeps the context it was
 * decoded in (owning header, super block, size), and a hit whose context
 * differs means two structures claim the same bytes: corrupt. */


typedef struct ea_load {
	h5_block_load b;        /* first: what h5_file_load_block() sees */
	const h5_ea_hdr *h;
	unsigned sblk_idx;
	uint64_t nelmts, expect_off;
} ea_load;

/* The (buf, len) decoders in the shape h5_file_load_block() calls. */
static int ea_hdr_dec(void **obj, size_t *cost, const uint8_t *buf, size_t len, const h5_block_load *b)
{
	(void)cost;
	return h5_ea_hdr_decode(*obj, &b->f->fmt, b->addr, buf, len);
}

static int ea_iblock_dec(void **obj, size_t *cost, const uint8_t *buf, size_t len, const h5_block_load *b)
{
	const ea_load *l = (const ea_load *)b;

	*cost = len + sizeof(h5_ea_iblock);
	return h5_ea_iblock_decode((h5_ea_iblock **)obj, l->h, &b->f->fmt, b->addr, buf, len);
}

static int ea_sblock_dec(void **obj, size_t *cost, const uint8_t *buf, size_t len, const h5_block_load *b)
{
	const ea_load *l = (const ea_load *)b;

	*cost = len * 2 + sizeof(h5_ea_sblock);
	return h5_ea_sblock_decode((h5_ea_sblock **)obj, l->h, &b->f->fmt, b->addr, l->sblk_idx, buf, len);
}

static int ea_dblock_dec(void **obj, size_t *cost, const uint8_t *buf, size_t len, const h5_block_load *b)
{
	const ea_load *l = (const ea_load *)b;

	*cost = len + sizeof(h5_ea_dblock);
	return h5_ea_dblock_decode((h5_ea_dblock **)obj, l->h, &b->f->fmt, b->addr, l->nelmts, l->expect_off,
				   buf, len);
}

static int ea_page_load(void **obj, size_t *cost, void *ud)
{
	ea_load *l = ud;
	uint64_t size = h5_ea_page_size(l->h);
	h5_ea_page *pg;
	int rc;

	if (size == 0 || size > SIZE_MAX - sizeof(*pg))
		return h5_err_set(H5_ERR_FORMAT, "EA page at 0x%llx: size overflows", (unsigned long long)l->b.addr);
	if (!h5_file_range_ok(l->b.f, l->b.addr, size))
		return h5_err_set(H5_ERR_FORMAT, "EA data block page at 0x%llx+%llu is outside the file",
				  (unsigned long long)l->b.addr, (unsigned long long)size);
	pg = malloc(sizeof(*pg) + (size_t)size);
	if (!pg)
		return h5_err_set(H5_ERR_NOMEM, "out of memory loading EA page");
	pg->hdr_addr = l->h->addr;
	pg->nelmts = l->h->g.dblk_page_nelmts;
	pg->elmts = (uint8_t *)(pg + 1);
	rc = h5_file_read(l->b.f, l->b.addr, pg->elmts, (size_t)size);
	if (rc >= 0)
		rc = h5_ea_page_verify(l->h, l->b.addr, pg->elmts, (size_t)size);
	if (rc < 0) {
		free(pg);
		return rc;
	}
	*obj = pg;
	*cost = sizeof(*pg) + (size_t)size;
	return 0;
}

static void ea_free(void *obj) { free(obj); }

static int conflict(h5_file *f, h5_cache_ref *ref, const char *what, uint64_t addr)
{
	h5_cache_release(f->meta, ref);
	return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx is claimed by two different array structures", what,
			  (unsigned long long)addr);
}

int h5_ea_hdr_get(const h5_ea_hdr **out, h5_cache_ref *ref, h5_file *f, uint64_t addr)
{
	ea_load l = { .b = { f, addr, h5_ea_hdr_size(&f->fmt), "EAHD", sizeof(h5_ea_hdr), ea_hdr_dec } };
	int rc;

	*out = NULL;
	if (!h5_addr_defined(addr))
		return h5_err_set(H5_ERR_FORMAT, "extensible array header address is undefined");
	rc = h5_cache_get(ref, f->meta, H5_CK_EA_HDR, addr, h5_file_load_block, ea_free, &l);
	if (rc < 0)
		return rc;
	*out = ref->obj;
	return 0;
}

int h5_ea_iblock_get(const h5_ea_iblock **out, h5_cache_ref *ref, h5_file *f, const h5_ea_hdr *h)
{
	ea_load l = { .b = { f, h->iblock_addr, h5_ea_iblock_size(h, &f->fmt), "EAIB", 0, ea_iblock_dec },
		      .h = h };
	int rc;

	rc = h5_cache_get(ref, f->meta, H5_CK_EA_IBLOCK, l.b.addr, h5_file_load_block, ea_free, &l);
	if (rc < 0)
		return rc;
	*out = ref->obj;
	if ((*out)->hdr_addr != h->addr)
		return conflict(f, ref, "EAIB", l.b.addr);
	return 0;
}

int h5_ea_sblock_get(const h5_ea_sblock **out, h5_cache_ref *ref, h5_file *f, const h5_ea_hdr *h,
		     uint64_t addr, unsigned sblk_idx)
{
	ea_load l = { .b = { f, addr, h5_ea_sblock_size(h, &f->fmt, sblk_idx), "EASB", 0, ea_sblock_dec },
		      .h = h, .sblk_idx = sblk_idx };
	int rc;

	rc = h5_cache_get(ref, f->meta, H5_CK_EA_SBLOCK, addr, h5_file_load_block, ea_free, &l);
	if (rc < 0)
		return rc;
	*out = ref->obj;
	if ((*out)->hdr_addr != h->addr || (*out)->sblk_idx != sblk_idx)
		return conflict(f, ref, "EASB", addr);
	return 0;
}

int h5_ea_dblock_get(const h5_ea_dblock **out, h5_cache_ref *ref, h5_file *f, const h5_ea_hdr *h,
		     uint64_t addr, uint64_t nelmts, uint64_t expect_off)
{
	ea_load l = { .b = { f, addr, h5_ea_dblock_size(h, &f->fmt, nelmts), "EADB", 0, ea_dblock_dec },
		      .h = h, .nelmts = nelmts, .expect_off = expect_off };
	int rc;

	rc = h5_cache_get(ref, f->meta, H5_CK_EA_DBLOCK, addr, h5_file_load_block, ea_free, &l);
	if (rc < 0)
		return rc;
	*out = ref->obj;
	if ((*out)->hdr_addr != h->addr || (*out)->nelmts != nelmts ||
	    (*out)->block_off != (expect_off & off_mask(h->g.arr_off_size)))
		return conflict(f, ref, "EADB", addr);
	return 0;
}

int h5_ea_page_get(const h5_ea_page **out, h5_cache_ref *ref, h5_file *f, const h5_ea_hdr *h, uint64_t addr)
{
	ea_load l = { .b = { .f = f, .addr = addr }, .h = h };
	int rc;

	if (!h5_addr_defined(addr))
		return h5_err_set(H5_ERR_FORMAT, "EA data block page address overflows");
	rc = h5_cache_get(ref, f->meta, H5_CK_EA_PAGE, addr, ea_page_load, ea_free, &l);
	if (rc < 0)
		return rc;
	*out = ref->obj;
	if ((*out)->hdr_addr != h->addr || (*out)->nelmts != h->g.dblk_page_nelmts)
		return conflict(f, ref, "EA data block page", addr);
	return 0;
}

/* ---- lookup and iteration ---------------------------------------------------
 * Both work on "units": the run of consecutive elements stored together
 * (index block elements, a data block, or a page) or known to be absent
 * together (an unallocated super block, data block or page). */

typedef struct ea_unit {
	const uint8_t *elmts;   /* raw elements, NULL when the unit is not allocated */
	uint64_t first;         /* array index of the unit's first element */
	uint64_t n;             /* elements in the unit */
	h5_cache_ref refs[4];
	int nrefs;
} ea_unit;

static void unit_release(h5_file *f, ea_unit *un)
{
	while (un->nrefs > 0)
		h5_cache_release(f->meta, &un->refs[--un->nrefs]);
}

static uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

static int unit_get(ea_unit *un, h5_file *f, const h5_ea_hdr *h, const h5_ea_iblock *ib,
		    const h5_ea_loc *loc, uint64_t idx)
{
	const h5_ea_geom *g = &h->g;
	const h5_ea_sblock *sb;
	const h5_ea_dblock *db;
	const h5_ea_page *pg = NULL;
	uint64_t dblk_addr;
	int rc;

	memset(un, 0, sizeof(*un));
	if (loc->in_iblock) {
		un->elmts = ib->elmts;
		un->n = g->idx_blk_elmts;
		return 0;
	}
	un->first = idx - loc->elmt;
	un->n = loc->dblk_nelmts;
	if (!loc->via_sblock) {
		dblk_addr = ib->dblk_addrs[loc->dblk_idx];
		if (!h5_addr_defined(dblk_addr))
			return 0;
		/* libhdf5 never pages the index block's data blocks (its lookup
		 * would read elements that are not there), so neither do we. */
		if (loc->paged)
			return h5_err_set(H5_ERR_UNSUPPORTED,
					  "EAHD at 0x%llx: paged data blocks in the index block", (unsigned long long)h->addr);
		rc = h5_ea_dblock_get(&db, &un->refs[un->nrefs], f, h, dblk_addr, loc->dblk_nelmts,
				h5_ea_dblock_off(g, loc->sblk_idx, loc->dblk_idx));
		if (rc < 0)
			return rc;
		un->nrefs++;
		un->elmts = db->elmts;
		return 0;
	}
	if (!h5_addr_defined(ib->sblk_addrs[loc->sblk_off])) {
		/* The whole super block is absent. */
		un->first = g->idx_blk_elmts + g->sb_start_idx[loc->sblk_idx];
		un->n = g->sb_ndblks[loc->sblk_idx] * loc->dblk_nelmts; /* <= 2^max_bits, may wrap at 64 */
		if (un->n == 0)
			un->n = UINT64_MAX;
		return 0;
	}
	rc = h5_ea_sblock_get(&sb, &un->refs[un->nrefs], f, h, ib->sblk_addrs[loc->sblk_off], loc->sblk_idx);
	if (rc < 0)
		return rc;
	un->nrefs++;
	dblk_addr = sb->dblk_addrs[loc->dblk_idx];
	if (!h5_addr_defined(dblk_addr))
		return 0;
	rc = h5_ea_dblock_get(&db, &un->refs[un->nrefs], f, h, dblk_addr, loc->dblk_nelmts,
			h5_ea_dblock_off(g, loc->sblk_idx, loc->dblk_idx));
	if (rc < 0)
		return rc;
	un->nrefs++;
	if (!loc->paged) {
		un->elmts = db->elmts;
		return 0;
	}
	un->first = idx - loc->page_elmt;
	un->n = g->dblk_page_nelmts;
	/* H5VM_bit_get: bit i is (byte i/8) & (0x80 >> i%8), one flat bitmap. */
	if (!(sb->page_init[loc->page_init_bit / 8] & (0x80u >> (loc->page_init_bit % 8))))
		return 0;
	rc = h5_ea_page_get(&pg, &un->refs[un->nrefs], f, h, h5_ea_page_addr(h, &f->fmt, dblk_addr, loc->page_idx));
	if (rc < 0)
		return rc;
	un->nrefs++;
	un->elmts = pg->elmts;
	return 0;
}

int h5_ea_lookup(h5_chunk_rec *out, h5_file *f, uint64_t hdr_addr, uint64_t idx)
{
	h5_cache_ref href, iref;
	const h5_ea_hdr *h;
	const h5_ea_iblock *ib;
	h5_ea_loc loc;
	ea_unit un;
	int rc;

	out->addr = H5_ADDR_UNDEF;
	out->size = 0;
	out->filter_mask = 0;
	rc = h5_ea_hdr_get(&h, &href, f, hdr_addr);
	if (rc < 0)
		return rc;
	/* libhdf5 reports elements never set as the fill value without looking. */
	if (idx >= h->max_idx_set || !h5_addr_defined(h->iblock_addr))
		goto out_hdr;
	rc = h5_ea_locate(&loc, &h->g, idx);
	if (rc < 0)
		goto out_hdr;
	rc = h5_ea_iblock_get(&ib, &iref, f, h);
	if (rc < 0)
		goto out_hdr;
	rc = unit_get(&un, f, h, ib, &loc, idx);
	if (rc >= 0 && un.elmts)
		h5_chunk_elmt_decode(out, &f->fmt, h->client, h->elmt_size,
				     un.elmts + (size_t)(idx - un.first) * h->elmt_size);
	unit_release(f, &un);
	h5_cache_release(f->meta, &iref);
out_hdr:
	h5_cache_release(f->meta, &href);
	return rc;
}

int h5_ea_iterate(h5_file *f, uint64_t hdr_addr, h5_arr_elmt_cb cb, void *ud)
{
	h5_cache_ref href, iref;
	const h5_ea_hdr *h;
	const h5_ea_iblock *ib;
	uint64_t idx = 0;
	int rc;

	rc = h5_ea_hdr_get(&h, &href, f, hdr_addr);
	if (rc < 0)
		return rc;
	if (!h5_addr_defined(h->iblock_addr) || h->max_idx_set == 0)
		goto out_hdr;
	rc = h5_ea_iblock_get(&ib, &iref, f, h);
	if (rc < 0)
		goto out_hdr;
	while (idx < h->max_idx_set) {
		h5_ea_loc loc;
		ea_unit un;
		uint64_t end;

		rc = h5_ea_locate(&loc, &h->g, idx);
		if (rc < 0)
			break;
		rc = unit_get(&un, f, h, ib, &loc, idx);
		end = sat_add(un.first, un.n);
		if (end > h->max_idx_set)
			end = h->max_idx_set;
		if (rc == 0 && end <= idx) /* units contain idx; anything else is a bug */
			rc = h5_err_set(H5_ERR_FORMAT, "EAHD at 0x%llx: iteration stalled at %llu",
					(unsigned long long)hdr_addr, (unsigned long long)idx);
		for (uint64_t i = idx; rc == 0 && un.elmts && i < end; i++) {
			h5_chunk_rec rec;

			h5_chunk_elmt_decode(&rec, &f->fmt, h->client, h->elmt_size,
					     un.elmts + (size_t)(i - un.first) * h->elmt_size);
			if (h5_addr_defined(rec.addr))
				rc = cb(i, &rec, ud);
		}
		unit_release(f, &un);
		if (rc != 0)
			break;
		idx = end;
	}
	h5_cache_release(f->meta, &iref);
out_hdr:
	h5_cache_release(f->meta, &href);
	return rc;
}
