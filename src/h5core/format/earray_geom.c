/*
 * earray_geom.c - the geometry of an extensible array (spec VII.D; libhdf5
 * H5EA__hdr_init, H5EA__lookup_elmt): super block and data block sizes and
 * where an element lives follow from the creation parameters, not from
 * anything stored (see shared/spec/extensible-array-reference.md); and the
 * on-disk sizes of the array's blocks (H5EA_*_SIZE in H5EApkg.h).
 * earray_codec.c decodes and encodes the blocks, earray.c reads them.
 */
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "file.h"
#include "chunk_rec.h"
#include "array_int.h"
#include "earray_int.h"

static unsigned log2_floor(uint64_t v) { return 63u - (unsigned)__builtin_clzll(v); }
static bool is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

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
	return H5_ARR_PREFIX + 6 + 6u * fmt->sizeof_size + fmt->sizeof_addr + H5_ARR_CKSUM;
}

uint64_t h5_ea_iblock_size(const h5_ea_hdr *h, const h5_fmt *fmt)
{
	const h5_ea_geom *g = &h->g;

	/* All factors are bounded by one-byte parameters: no overflow. */
	return H5_ARR_PREFIX + fmt->sizeof_addr + (uint64_t)g->idx_blk_elmts * h->elmt_size +
	       (uint64_t)(g->ndblk_addrs + g->nsblk_addrs) * fmt->sizeof_addr + H5_ARR_CKSUM;
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
	    h5_add_overflow(n, H5_ARR_PREFIX + fmt->sizeof_addr + g->arr_off_size + H5_ARR_CKSUM, &n))
		return 0;
	return n;
}

static uint64_t dblock_prefix_size(const h5_ea_hdr *h, const h5_fmt *fmt)
{
	return H5_ARR_PREFIX + fmt->sizeof_addr + h->g.arr_off_size + H5_ARR_CKSUM;
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

	if (h5_mul_overflow(h->g.dblk_page_nelmts, h->elmt_size, &n) || h5_add_overflow(n, H5_ARR_CKSUM, &n))
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
