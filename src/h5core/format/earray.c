/*
 * earray.c - the extensible array chunk index (spec VII.D; libhdf5 H5EA*.c).
 *
 * An EA is a header (EAHD) pointing to an index block (EAIB) that holds the
 * first idx_blk_elmts elements, the addresses of the data blocks (EADB) of
 * the first iblock_nsblks "super blocks", and the addresses of the super
 * block structures (EASB) for the rest. Data blocks bigger than a page are
 * split into checksummed pages whose existence the EASB tracks in a bitmap.
 * The geometry is not stored: it follows from the creation parameters
 * exactly as H5EA__hdr_init computes it (earray_geom.c, see
 * shared/spec/extensible-array-reference.md); the blocks are decoded and
 * encoded by earray_codec.c. This file caches the decoded blocks and
 * looks elements up. The appending writer is earray_write.c; the loaders
 * it shares are declared in earray_int.h.
 */
#include "array_int.h"
#include "earray_int.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "file.h"
#include "chunk_rec.h"

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

/* h5_ea_page_verify in the shape of the shared page loader (array_block.c). */
static int ea_page_verify(const void *h, uint64_t addr, uint64_t tag, const uint8_t *buf, size_t len)
{
	(void)tag;
	return h5_ea_page_verify(h, addr, buf, len);
}

static void ea_free(void *obj) { free(obj); }

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
		return h5_arr_conflict(f, ref, "EAIB", l.b.addr);
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
		return h5_arr_conflict(f, ref, "EASB", addr);
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
	    (*out)->block_off != (expect_off & h5_arr_off_mask(h->g.arr_off_size)))
		return h5_arr_conflict(f, ref, "EADB", addr);
	return 0;
}

int h5_ea_page_get(const h5_ea_page **out, h5_cache_ref *ref, h5_file *f, const h5_ea_hdr *h, uint64_t addr)
{
	h5_arr_page_load l = { f, H5_CK_EA_PAGE, addr, h5_ea_page_size(h), h, h->addr, h->g.dblk_page_nelmts,
			       "EA data block page", ea_page_verify };

	*out = NULL;
	if (!h5_addr_defined(addr))
		return h5_err_set(H5_ERR_FORMAT, "EA data block page address overflows");
	return h5_arr_page_get(out, ref, &l);
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

/* The data blocks whose addresses addrs[0..n) holds, of super block u. */
static int ea_dblocks(const h5_ea_hdr *h, const h5_fmt *fmt, unsigned u, const uint64_t *addrs, uint64_t n,
		      h5_block_cb cb, void *ud)
{
	uint64_t size = h5_ea_dblock_alloc_size(h, fmt, h->g.sb_dblk_nelmts[u]);
	int rc = 0;

	for (uint64_t k = 0; k < n && rc == 0; k++)
		if (h5_addr_defined(addrs[k]))
			rc = cb(addrs[k], size, ud);
	return rc;
}

/* VII.D: the header, the index block, the data blocks it points at (the
 * first iblock_nsblks super blocks' worth, their slots in order), and each
 * super block with its data blocks; a paged data block is allocated with
 * its pages (H5EA__dblock_create). */
int h5_ea_blocks(h5_file *f, uint64_t hdr_addr, h5_block_cb cb, void *ud)
{
	h5_cache_ref href, iref;
	const h5_ea_hdr *h;
	const h5_ea_iblock *ib;
	int rc;

	rc = h5_ea_hdr_get(&h, &href, f, hdr_addr);
	if (rc < 0)
		return rc;
	rc = cb(hdr_addr, h5_ea_hdr_size(&f->fmt), ud);
	if (rc != 0 || !h5_addr_defined(h->iblock_addr))
		goto out_hdr;
	rc = h5_ea_iblock_get(&ib, &iref, f, h);
	if (rc < 0)
		goto out_hdr;
	rc = cb(h->iblock_addr, h5_ea_iblock_size(h, &f->fmt), ud);
	for (unsigned u = 0; u < h->g.iblock_nsblks && rc == 0; u++) {
		uint64_t first = h->g.sb_start_dblk[u], n = h->g.sb_ndblks[u];

		if (first >= h->g.ndblk_addrs)
			break;
		if (n > h->g.ndblk_addrs - first)
			n = h->g.ndblk_addrs - first;
		rc = ea_dblocks(h, &f->fmt, u, ib->dblk_addrs + first, n, cb, ud);
	}
	for (unsigned s = 0; s < h->g.nsblk_addrs && rc == 0; s++) {
		unsigned u = h->g.iblock_nsblks + s;
		const h5_ea_sblock *sb;
		h5_cache_ref sref;

		if (!h5_addr_defined(ib->sblk_addrs[s]))
			continue;
		rc = h5_ea_sblock_get(&sb, &sref, f, h, ib->sblk_addrs[s], u);
		if (rc < 0)
			break;
		rc = cb(sb->addr, h5_ea_sblock_size(h, &f->fmt, u), ud);
		if (rc == 0)
			rc = ea_dblocks(h, &f->fmt, u, sb->dblk_addrs, sb->ndblks, cb, ud);
		h5_cache_release(f->meta, &sref);
	}
	h5_cache_release(f->meta, &iref);
out_hdr:
	h5_cache_release(f->meta, &href);
	return rc;
}
