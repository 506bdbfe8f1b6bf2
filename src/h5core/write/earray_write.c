/*
 * earray_write.c - the extensible array appending writer (spec VII.D;
 * libhdf5 H5EA*.c): cidx_earray.c's write ops, like btree1_write.c,
 * btree2_write.c and farray_write.c for the other indexes. The geometry is
 * earray_geom.c's, the codecs earray_codec.c's, the reader and the cached
 * loaders earray.c's.
 */
#include "array.h"
#include "earray_int.h"
#include "base.h"
#include "cache.h"
#include "file.h"
#include "chunk_rec.h"
#include "earray_write.h"
#include "space.h"
#include "cidx_write.h"
#include "layout.h"
#include "dataset.h"

/* ---- the appending writer ----------------------------------------------------
 * Changes are made on private working copies of the blocks they touch
 * (copied from the cache or created as libhdf5's H5EA__*_create would),
 * then every changed block is written as a NEW block beyond the end of the
 * file (copy-on-write) and its parent's pointer redirected, up to the index
 * block. Only the header is rewritten in place, by h5_eaw_commit():
 * it is the single switch from the old array to the new one, so a crash
 * before it leaves the old array intact (doc/APPEND.md) - unless it spans
 * a 4 KiB page: then the whole index is copied once with a new header and
 * the layout message is the switch (h5_eaw_write, w_touch_all). */

typedef struct ea_wdblk {
	unsigned u;             /* super block of the geometry */
	bool via_sblock;
	uint64_t slot;          /* iblock-global or super-block-local slot */
	uint64_t old_addr;      /* UNDEF: created by this writer */
	uint64_t nelmts, npages;
	uint8_t *elmts;         /* nelmts raw elements (all pages when paged) */
} ea_wdblk;

struct h5_eaw {
	h5_file *f;
	h5_ea_hdr h;            /* working header: counters, iblock_addr */
	bool hdr_new;           /* no EAHD on disk yet: h5_eaw_write places one */
	bool written;
	uint64_t old_hdr;       /* a header copied (spanned a page), freed after the commit */
	uint64_t spare[2];      /* space taken but not used placing a header, freed after it */
	h5_ea_iblock *ib;       /* working index block, NULL until touched */
	uint64_t old_iblock;
	h5_ea_sblock **sb;      /* nsblk_addrs working super blocks (NULL: untouched) */
	uint64_t *sb_old;       /* their previous addresses */
	ea_wdblk *db;
	size_t ndb, db_cap;
	size_t last_db;         /* lookup hint: appends hit the same block repeatedly */
	uint8_t fill[32];       /* one encoded "never set" element */
};

const h5_ea_hdr *h5_eaw_hdr(const h5_eaw *w) { return &w->h; }
bool h5_eaw_hdr_is_new(const h5_eaw *w) { return w->hdr_new; }

void h5_eaw_free(h5_eaw *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->ndb; i++)
		free(w->db[i].elmts);
	free(w->db);
	if (w->sb)
		for (unsigned i = 0; i < w->h.g.nsblk_addrs; i++)
			free(w->sb[i]);
	free(w->sb);
	free(w->sb_old);
	free(w->ib);
	free(w);
}

static void fill_elmts(const h5_eaw *w, uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		memcpy(p + i * w->h.elmt_size, w->fill, w->h.elmt_size);
}

int h5_eaw_open(h5_eaw **out, h5_file *f, uint64_t hdr_addr, const h5_ea_cparam *cp)
{
	static const h5_chunk_rec undef = { H5_ADDR_UNDEF, 0, 0 };
	h5_eaw *w;
	int rc;

	*out = NULL;
	if (!f->writable)
		return h5_err_set(H5_ERR_ROFS, "extensible array: file is open read-only");
	w = calloc(1, sizeof(*w));
	if (!w)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for the extensible array writer");
	w->f = f;
	w->old_hdr = w->spare[0] = w->spare[1] = H5_ADDR_UNDEF;
	if (h5_addr_defined(hdr_addr)) {
		const h5_ea_hdr *h;
		h5_cache_ref ref;

		rc = h5_ea_hdr_get(&h, &ref, f, hdr_addr);
		if (rc < 0)
			goto out;
		w->h = *h;
		h5_cache_release(f->meta, &ref);
		if (w->h.client != cp->client || w->h.elmt_size != cp->elmt_size ||
		    w->h.g.max_nelmts_bits != cp->max_nelmts_bits || w->h.g.idx_blk_elmts != cp->idx_blk_elmts ||
		    w->h.g.data_blk_min_elmts != cp->data_blk_min_elmts ||
		    w->h.g.sup_blk_min_data_ptrs != cp->sup_blk_min_data_ptrs ||
		    w->h.g.max_dblk_page_nelmts_bits != cp->max_dblk_page_nelmts_bits) {
			rc = h5_err_set(H5_ERR_FORMAT, "EAHD at 0x%llx: parameters differ from the dataset's layout "
					"(client %u, element size %u)", (unsigned long long)hdr_addr,
					w->h.client, w->h.elmt_size);
			goto out;
		}
	} else {
		rc = h5_chunk_elmt_check(&f->fmt, cp->client, cp->elmt_size);
		if (rc < 0)
			goto out;
		w->hdr_new = true;
		w->h.addr = H5_ADDR_UNDEF;
		w->h.client = cp->client;
		w->h.elmt_size = cp->elmt_size;
		w->h.iblock_addr = H5_ADDR_UNDEF;
		rc = h5_ea_geom_init(&w->h.g, cp->max_nelmts_bits, cp->idx_blk_elmts, cp->data_blk_min_elmts,
				     cp->sup_blk_min_data_ptrs, cp->max_dblk_page_nelmts_bits);
		if (rc < 0)
			goto out;
	}
	if (w->h.elmt_size > sizeof(w->fill)) {
		rc = h5_err_set(H5_ERR_FORMAT, "extensible array element of %u bytes", w->h.elmt_size);
		goto out;
	}
	/* H5D_EARRAY_FILL / H5D_EARRAY_FILT_FILL: undefined address, size 0, mask 0 */
	h5_chunk_elmt_encode(w->fill, &f->fmt, w->h.client, w->h.elmt_size, &undef);
	w->old_iblock = w->h.iblock_addr;
	w->sb = calloc(w->h.g.nsblk_addrs ? w->h.g.nsblk_addrs : 1, sizeof(*w->sb));
	w->sb_old = calloc(w->h.g.nsblk_addrs ? w->h.g.nsblk_addrs : 1, sizeof(*w->sb_old));
	if (!w->sb || !w->sb_old)
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory for the extensible array writer");
out:
	if (rc < 0) {
		h5_eaw_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

/* The working index block: a copy of the one on disk, or a new one whose
 * elements and pointers are all undefined (H5EA__iblock_create). */
static int w_iblock(h5_eaw *w)
{
	const h5_ea_geom *g = &w->h.g;
	size_t naddr = (size_t)g->ndblk_addrs + g->nsblk_addrs, esz = (size_t)g->idx_blk_elmts * w->h.elmt_size;
	h5_ea_iblock *b;

	if (w->ib)
		return 0;
	b = calloc(1, sizeof(*b) + naddr * sizeof(uint64_t) + esz);
	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for an EA index block");
	b->dblk_addrs = (uint64_t *)(b + 1);
	b->sblk_addrs = b->dblk_addrs + g->ndblk_addrs;
	b->elmts = (uint8_t *)(b->sblk_addrs + g->nsblk_addrs);
	if (h5_addr_defined(w->h.iblock_addr)) {
		const h5_ea_iblock *src;
		h5_cache_ref ref;
		int rc = h5_ea_iblock_get(&src, &ref, w->f, &w->h);

		if (rc < 0) {
			free(b);
			return rc;
		}
		memcpy(b->elmts, src->elmts, esz);
		memcpy(b->dblk_addrs, src->dblk_addrs, naddr * sizeof(uint64_t));
		h5_cache_release(w->f->meta, &ref);
	} else {
		fill_elmts(w, b->elmts, g->idx_blk_elmts);
		for (size_t i = 0; i < naddr; i++)
			b->dblk_addrs[i] = H5_ADDR_UNDEF;
		w->h.nelmts += g->idx_blk_elmts;
	}
	b->hdr_addr = w->h.addr;
	w->ib = b;
	return 0;
}

static int w_sblock(h5_ea_sblock **out, h5_eaw *w, const h5_ea_loc *loc)
{
	const h5_ea_geom *g = &w->h.g;
	unsigned u = loc->sblk_idx;
	uint64_t n = g->sb_ndblks[u], npages = h5_ea_dblk_npages(g, u);
	uint64_t bitmap = npages ? n * h5_ea_page_init_size(g, u) : 0, addr;
	h5_ea_sblock *b;
	int rc;

	if (w->sb[loc->sblk_off]) {
		*out = w->sb[loc->sblk_off];
		return 0;
	}
	b = calloc(1, sizeof(*b) + (size_t)n * sizeof(uint64_t) + (size_t)bitmap);
	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for an EA super block");
	b->sblk_idx = u;
	b->ndblks = n;
	b->npages = npages;
	b->page_init_size = npages ? h5_ea_page_init_size(g, u) : 0;
	b->block_off = g->sb_start_idx[u];
	b->dblk_addrs = (uint64_t *)(b + 1);
	b->page_init = bitmap ? (uint8_t *)(b->dblk_addrs + n) : NULL;
	addr = w->ib->sblk_addrs[loc->sblk_off];
	if (h5_addr_defined(addr)) {
		const h5_ea_sblock *src;
		h5_cache_ref ref;

		rc = h5_ea_sblock_get(&src, &ref, w->f, &w->h, addr, u);
		if (rc < 0) {
			free(b);
			return rc;
		}
		memcpy(b->dblk_addrs, src->dblk_addrs, (size_t)n * sizeof(uint64_t));
		if (bitmap)
			memcpy(b->page_init, src->page_init, (size_t)bitmap);
		h5_cache_release(w->f->meta, &ref);
	} else {
		/* H5EA__sblock_create */
		for (uint64_t i = 0; i < n; i++)
			b->dblk_addrs[i] = H5_ADDR_UNDEF;
		w->h.nsblks_created++;
		w->h.sblks_size += h5_ea_sblock_size(&w->h, &w->f->fmt, u);
	}
	w->sb_old[loc->sblk_off] = addr;
	w->sb[loc->sblk_off] = b;
	*out = b;
	return 0;
}

/* Copy the initialized pages of a paged data block into elmts. */
static int w_load_pages(h5_eaw *w, const h5_ea_sblock *sb, uint64_t dblk_addr, uint64_t slot,
			uint8_t *elmts)
{
	uint64_t psize = w->h.g.dblk_page_nelmts * w->h.elmt_size;

	for (uint64_t p = 0; p < sb->npages; p++) {
		uint64_t bit = slot * sb->npages + p;
		const h5_ea_page *pg;
		h5_cache_ref ref;
		int rc;

		if (!(sb->page_init[bit / 8] & (0x80u >> (bit % 8))))
			continue;
		rc = h5_ea_page_get(&pg, &ref, w->f, &w->h, h5_ea_page_addr(&w->h, &w->f->fmt, dblk_addr, p));
		if (rc < 0)
			return rc;
		memcpy(elmts + p * psize, pg->elmts, (size_t)psize);
		h5_cache_release(w->f->meta, &ref);
	}
	return 0;
}

static int w_dblock(ea_wdblk **out, h5_eaw *w, const h5_ea_loc *loc, h5_ea_sblock *sb)
{
	const h5_ea_geom *g = &w->h.g;
	uint64_t addr, nbytes;
	ea_wdblk *d;
	int rc;

	if (w->last_db < w->ndb) {
		d = &w->db[w->last_db];
		if (d->u == loc->sblk_idx && d->slot == loc->dblk_idx) {
			*out = d;
			return 0;
		}
	}
	for (size_t i = 0; i < w->ndb; i++)
		if (w->db[i].u == loc->sblk_idx && w->db[i].slot == loc->dblk_idx) {
			w->last_db = i;
			*out = &w->db[i];
			return 0;
		}
	if (w->ndb == w->db_cap) {
		size_t ncap = w->db_cap ? w->db_cap * 2 : 8;
		ea_wdblk *nd = realloc(w->db, ncap * sizeof(*nd));

		if (!nd)
			return h5_err_set(H5_ERR_NOMEM, "out of memory for EA data blocks");
		w->db = nd;
		w->db_cap = ncap;
	}
	d = &w->db[w->ndb];
	memset(d, 0, sizeof(*d));
	d->u = loc->sblk_idx;
	d->via_sblock = loc->via_sblock;
	d->slot = loc->dblk_idx;
	d->nelmts = loc->dblk_nelmts;
	d->npages = h5_ea_dblock_npages(&w->h, d->nelmts);
	if (d->npages && !loc->via_sblock)
		return h5_err_set(H5_ERR_UNSUPPORTED, "extensible array: paged data blocks in the index block");
	if (h5_mul_overflow(d->nelmts, w->h.elmt_size, &nbytes) || nbytes > SIZE_MAX / 2 ||
	    !h5_ea_dblock_alloc_size(&w->h, &w->f->fmt, d->nelmts))
		return h5_err_set(H5_ERR_LIMIT, "extensible array data block of %llu elements is too large",
				  (unsigned long long)d->nelmts);
	d->elmts = malloc((size_t)nbytes);
	if (!d->elmts)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for an EA data block");
	fill_elmts(w, d->elmts, d->nelmts);
	addr = loc->via_sblock ? sb->dblk_addrs[loc->dblk_idx] : w->ib->dblk_addrs[loc->dblk_idx];
	d->old_addr = addr;
	if (h5_addr_defined(addr)) {
		uint64_t off = h5_ea_dblock_off(g, loc->sblk_idx, loc->dblk_idx);

		if (d->npages) {
			const h5_ea_dblock *src;
			h5_cache_ref ref;

			/* verify the prefix, then the pages that exist */
			rc = h5_ea_dblock_get(&src, &ref, w->f, &w->h, addr, d->nelmts, off);
			if (rc < 0)
				goto fail;
			h5_cache_release(w->f->meta, &ref);
			rc = w_load_pages(w, sb, addr, loc->dblk_idx, d->elmts);
		} else {
			const h5_ea_dblock *src;
			h5_cache_ref ref;

			rc = h5_ea_dblock_get(&src, &ref, w->f, &w->h, addr, d->nelmts, off);
			if (rc == 0) {
				memcpy(d->elmts, src->elmts, (size_t)nbytes);
				h5_cache_release(w->f->meta, &ref);
			}
		}
		if (rc < 0)
			goto fail;
	} else {
		/* H5EA__dblock_create: the allocation includes every page */
		w->h.ndblks_created++;
		w->h.dblks_size += h5_ea_dblock_alloc_size(&w->h, &w->f->fmt, d->nelmts);
		w->h.nelmts += d->nelmts;
	}
	w->last_db = w->ndb++;
	*out = d;
	return 0;
fail:
	free(d->elmts);
	return rc;
}

/* (rec's address may be undefined: a punched chunk, no longer stored -
 * spec III.I, an element of a chunk not allocated is the undefined
 * address) */
int h5_eaw_set(h5_eaw *w, uint64_t idx, const h5_chunk_rec *rec)
{
	h5_ea_sblock *sb = NULL;
	ea_wdblk *d = NULL;
	h5_ea_loc loc;
	uint8_t *p;
	int rc;

	if (w->written)
		return h5_err_set(H5_ERR_INVAL, "extensible array writer: set after write");
	if (w->h.g.max_nelmts_bits < 64 && idx >= (UINT64_C(1) << w->h.g.max_nelmts_bits))
		return h5_err_set(H5_ERR_LIMIT, "extensible array: element %llu beyond its %u-bit capacity",
				  (unsigned long long)idx, w->h.g.max_nelmts_bits);
	rc = h5_ea_locate(&loc, &w->h.g, idx);
	if (rc < 0)
		return rc;
	rc = w_iblock(w);
	if (rc < 0)
		return rc;
	if (loc.in_iblock) {
		p = w->ib->elmts + loc.elmt * w->h.elmt_size;
	} else {
		if (loc.via_sblock) {
			rc = w_sblock(&sb, w, &loc);
			if (rc < 0)
				return rc;
		}
		rc = w_dblock(&d, w, &loc, sb);
		if (rc < 0)
			return rc;
		p = d->elmts + loc.elmt * w->h.elmt_size;
		if (loc.paged)
			sb->page_init[loc.page_init_bit / 8] |= (uint8_t)(0x80u >> (loc.page_init_bit % 8));
	}
	if (rec->size && w->h.client == H5_ARR_CLIENT_FILT_CHUNK) {
		unsigned n = w->h.elmt_size - w->f->fmt.sizeof_addr - 4;

		if (n < 8 && rec->size >> (8 * n))
			return h5_err_set(H5_ERR_LIMIT, "chunk of %llu bytes does not fit the index's %u-byte size field",
					  (unsigned long long)rec->size, n);
	}
	h5_chunk_elmt_encode(p, &w->f->fmt, w->h.client, w->h.elmt_size, rec);
	if (idx >= w->h.max_idx_set)
		w->h.max_idx_set = idx + 1;
	return 0;
}

/* Every block goes to new space or space freed once no reader can see it
 * (space.c h5_space_take: each block is written whole before anything
 * references it), never over what readers see; the blocks a commit
 * copied are freed after it (h5_eaw_freed). */
static int w_alloc(h5_eaw *w, uint64_t *addr, uint64_t size)
{
	if (size == 0)
		return h5_err_set(H5_ERR_LIMIT, "file address space exhausted");
	return h5_space_take(addr, w->f, size);
}

static int w_write_dblock(h5_eaw *w, ea_wdblk *d)
{
	const h5_fmt *fmt = &w->f->fmt;
	uint64_t alloc = h5_ea_dblock_alloc_size(&w->h, fmt, d->nelmts);
	uint64_t pre = h5_ea_dblock_size(&w->h, fmt, d->nelmts), addr;
	h5_ea_dblock b = { .hdr_addr = w->h.addr, .nelmts = d->nelmts, .npages = d->npages, .elmts = d->elmts };
	uint8_t *img;
	int rc;

	rc = w_alloc(w, &addr, alloc);
	if (rc < 0)
		return rc;
	if (alloc > SIZE_MAX)
		return h5_err_set(H5_ERR_LIMIT, "EA data block too large");
	img = malloc((size_t)alloc);
	if (!img)
		return h5_err_set(H5_ERR_NOMEM, "out of memory writing an EA data block");
	b.addr = addr;
	b.block_off = h5_ea_dblock_off(&w->h.g, d->u, d->slot);
	rc = h5_ea_dblock_encode(img, (size_t)pre, &w->h, fmt, &b);
	for (uint64_t p = 0; rc == 0 && p < d->npages; p++) {
		uint64_t psize = h5_ea_page_size(&w->h);

		/* pages never initialized are written too (as "never set"), so the
		 * file is never shorter than the space the header accounts for */
		rc = h5_ea_page_encode(img + pre + p * psize, (size_t)psize, &w->h,
				       d->elmts + p * w->h.g.dblk_page_nelmts * w->h.elmt_size);
	}
	if (rc == 0)
		rc = h5_file_write(w->f, addr, img, (size_t)alloc);
	free(img);
	if (rc < 0)
		return rc;
	if (d->via_sblock)
		w->sb[d->u - w->h.g.iblock_nsblks]->dblk_addrs[d->slot] = addr;
	else
		w->ib->dblk_addrs[d->slot] = addr;
	return 0;
}

static int w_write_block(h5_eaw *w, uint64_t *addr, uint64_t size,
			 int (*enc)(uint8_t *, size_t, const h5_ea_hdr *, const h5_fmt *, const void *), const void *b)
{
	uint8_t *img;
	int rc;

	rc = w_alloc(w, addr, size);
	if (rc < 0)
		return rc;
	img = malloc((size_t)size);
	if (!img)
		return h5_err_set(H5_ERR_NOMEM, "out of memory writing an EA block");
	rc = enc(img, (size_t)size, &w->h, &w->f->fmt, b);
	if (rc == 0)
		rc = h5_file_write(w->f, *addr, img, (size_t)size);
	free(img);
	return rc;
}

static int enc_sblock(uint8_t *buf, size_t len, const h5_ea_hdr *h, const h5_fmt *fmt, const void *b)
{
	return h5_ea_sblock_encode(buf, len, h, fmt, b);
}

static int enc_iblock(uint8_t *buf, size_t len, const h5_ea_hdr *h, const h5_fmt *fmt, const void *b)
{
	return h5_ea_iblock_encode(buf, len, h, fmt, b);
}

/* Every block of the array on disk becomes a working copy (written anew
 * by h5_eaw_write, naming the new header; the old ones freed after the
 * commit): the index block, each super block and each data block, pages
 * included (VII.D: EAIB, EASB and EADB hold the header's address under
 * their checksums; a data block page holds none but is allocated with
 * its block). The chunks they point at stay where they are. */
static int w_touch_all(h5_eaw *w)
{
	const h5_ea_geom *g = &w->h.g;
	int rc = w_iblock(w);

	for (unsigned u = 0; rc == 0 && u < g->nsblks; u++) {
		h5_ea_sblock *sb = NULL;
		h5_ea_loc loc;

		rc = h5_ea_locate(&loc, g, g->idx_blk_elmts + g->sb_start_idx[u]);
		if (rc < 0)
			break;
		if (loc.via_sblock) {
			if (!w->sb[loc.sblk_off] && !h5_addr_defined(w->ib->sblk_addrs[loc.sblk_off]))
				continue;
			rc = w_sblock(&sb, w, &loc);
		}
		for (uint64_t j = 0; rc == 0 && j < g->sb_ndblks[u]; j++) {
			ea_wdblk *d;

			loc.dblk_idx = loc.via_sblock ? j : g->sb_start_dblk[u] + j;
			if (h5_addr_defined(loc.via_sblock ? sb->dblk_addrs[j] : w->ib->dblk_addrs[loc.dblk_idx]))
				rc = w_dblock(&d, w, &loc, sb);
		}
	}
	return rc;
}

/* A new header's place, within one page (a header across a page would
 * be copied again by the next commit): where first taken, else in twice
 * its size, one half of which lies within a page; what is not used is
 * freed after the commit (h5_eaw_freed). */
static int w_place_hdr(h5_eaw *w)
{
	uint64_t hs = h5_ea_hdr_size(&w->f->fmt), a;
	int rc = w_alloc(w, &a, hs);

	if (rc < 0 || !h5_space_spans_page(a, hs)) {
		w->h.addr = a;
		return rc;
	}
	w->spare[0] = a;
	rc = w_alloc(w, &a, 2 * hs);
	if (rc < 0)
		return rc;
	w->h.addr = h5_space_spans_page(a, hs) ? a + hs : a;
	w->spare[1] = h5_space_spans_page(a, hs) ? a : a + hs;
	return 0;
}

int h5_eaw_write(h5_eaw *w)
{
	const h5_ea_geom *g = &w->h.g;
	int rc;

	if (w->written)
		return h5_err_set(H5_ERR_INVAL, "extensible array writer: written twice");
	w->written = true;
	if (!w->ib)
		return 0; /* nothing was set */
	/* A header spanning a page is not rewritten in place (a power cut
	 * keeping one page tears its checksum: the index unreadable). Every
	 * block names its header, so the whole index is copied once, naming
	 * a new header placed within a page, and the layout message switched
	 * to it (txn.c h5_txn_switch) - an ordered copy, the old array intact
	 * until the switch, as the v2 B-tree's and fixed array's headers */
	if (!w->hdr_new && h5_addr_defined(w->h.addr) && h5_space_spans_page(w->h.addr, h5_ea_hdr_size(&w->f->fmt))) {
		rc = w_touch_all(w);
		if (rc < 0)
			return rc;
		w->old_hdr = w->h.addr;
		w->hdr_new = true;
	}
	if (w->hdr_new) {
		/* blocks point back at the header, so it is placed first */
		rc = w_place_hdr(w);
		if (rc < 0)
			return rc;
	}
	for (size_t i = 0; i < w->ndb; i++) {
		rc = w_write_dblock(w, &w->db[i]);
		if (rc < 0)
			return rc;
	}
	for (unsigned s = 0; s < g->nsblk_addrs; s++) {
		h5_ea_sblock *b = w->sb[s];

		if (!b)
			continue;
		b->hdr_addr = w->h.addr;
		rc = w_write_block(w, &b->addr, h5_ea_sblock_size(&w->h, &w->f->fmt, b->sblk_idx), enc_sblock, b);
		if (rc < 0)
			return rc;
		w->ib->sblk_addrs[s] = b->addr;
	}
	w->ib->hdr_addr = w->h.addr;
	rc = w_write_block(w, &w->ib->addr, h5_ea_iblock_size(&w->h, &w->f->fmt), enc_iblock, w->ib);
	if (rc < 0)
		return rc;
	w->h.iblock_addr = w->ib->addr;
	if (w->hdr_new)
		return h5_eaw_commit(w);
	return 0;
}

int h5_eaw_commit(h5_eaw *w)
{
	size_t size = h5_ea_hdr_size(&w->f->fmt);
	uint8_t buf[128];
	int rc;

	if (!w->written)
		return h5_err_set(H5_ERR_INVAL, "extensible array writer: commit before write");
	if (!w->ib)
		return 0;
	if (size > sizeof(buf))
		return h5_err_set(H5_ERR_INVAL, "EAHD of %zu bytes", size);
	rc = h5_ea_hdr_encode(buf, size, &w->f->fmt, &w->h);
	if (rc < 0)
		return rc;
	/* One write of the whole header: it replaces the counters and the index
	 * block pointer together (doc/APPEND.md, "atomicity"). */
	return h5_file_write(w->f, w->h.addr, buf, size);
}

/* After the commit: the blocks it copied (index block, super blocks,
 * data blocks), referenced no more. */
void h5_eaw_freed(h5_eaw *w, h5_freesp *to, uint64_t ticket)
{
	const h5_fmt *fmt = &w->f->fmt;
	int rc = 0;

	if (!w->written || !w->ib)
		return;
	if (h5_addr_defined(w->old_hdr) && w->old_hdr != w->h.addr)
		rc |= h5_freesp_add(to, w->old_hdr, h5_ea_hdr_size(fmt), ticket);
	for (unsigned i = 0; i < 2; i++)
		if (h5_addr_defined(w->spare[i]))
			rc |= h5_freesp_add(to, w->spare[i], h5_ea_hdr_size(fmt), ticket);
	if (h5_addr_defined(w->old_iblock) && w->old_iblock != w->h.iblock_addr)
		rc |= h5_freesp_add(to, w->old_iblock, h5_ea_iblock_size(&w->h, fmt), ticket);
	for (unsigned s = 0; w->sb && s < w->h.g.nsblk_addrs; s++)
		if (w->sb[s] && h5_addr_defined(w->sb_old[s]) && w->sb_old[s] != w->sb[s]->addr)
			rc |= h5_freesp_add(to, w->sb_old[s], h5_ea_sblock_size(&w->h, fmt, w->sb[s]->sblk_idx),
					    ticket);
	for (size_t i = 0; i < w->ndb; i++)
		if (h5_addr_defined(w->db[i].old_addr))
			rc |= h5_freesp_add(to, w->db[i].old_addr, h5_ea_dblock_alloc_size(&w->h, fmt, w->db[i].nelmts),
					    ticket);
	if (rc < 0)
		h5_err_clear();         /* leaked */
}

void h5_eaw_invalidate(h5_eaw *w)
{
	h5_cache *c = w->f->meta;

	if (h5_addr_defined(w->h.addr))
		h5_cache_invalidate(c, H5_CK_EA_HDR, w->h.addr);
	if (h5_addr_defined(w->old_hdr))
		h5_cache_invalidate(c, H5_CK_EA_HDR, w->old_hdr);
	if (h5_addr_defined(w->old_iblock))
		h5_cache_invalidate(c, H5_CK_EA_IBLOCK, w->old_iblock);
	for (unsigned s = 0; w->sb && s < w->h.g.nsblk_addrs; s++)
		if (w->sb[s] && h5_addr_defined(w->sb_old[s]))
			h5_cache_invalidate(c, H5_CK_EA_SBLOCK, w->sb_old[s]);
	for (size_t i = 0; i < w->ndb; i++) {
		const ea_wdblk *d = &w->db[i];

		if (!h5_addr_defined(d->old_addr))
			continue;
		h5_cache_invalidate(c, H5_CK_EA_DBLOCK, d->old_addr);
		for (uint64_t p = 0; p < d->npages; p++) {
			uint64_t a = h5_ea_page_addr(&w->h, &w->f->fmt, d->old_addr, p);

			if (h5_addr_defined(a))
				h5_cache_invalidate(c, H5_CK_EA_PAGE, a);
		}
	}
}

/* ---- this writer as an entry of the writers' table (cidx_write.h) ---- */

static int ea_cparam(h5_ea_cparam *cp, const h5_dataset *d, const h5_fmt *fmt)
{
	const h5_layout *l = &d->layout;

	cp->client = d->pline.n ? H5_ARR_CLIENT_FILT_CHUNK : H5_ARR_CLIENT_CHUNK;
	/* H5D__earray_idx_create: filtered elements carry the chunk size in
	 * 1 + (log2(chunk bytes) + 8) / 8 bytes (layout version 5: Size of
	 * Lengths bytes), and a filter mask */
	cp->elmt_size = (uint8_t)(fmt->sizeof_addr +
				  (d->pline.n ? h5_chunk_size_len_v(fmt, l->version, d->chunk_bytes) + 4 : 0));
	cp->max_nelmts_bits = l->ea_max_bits;
	cp->idx_blk_elmts = l->ea_idx_elmts;
	cp->data_blk_min_elmts = l->ea_min_elmts;
	cp->sup_blk_min_data_ptrs = l->ea_min_ptrs;
	cp->max_dblk_page_nelmts_bits = l->ea_page_bits;
	return 0;
}

static int eaw_open(void **w, h5_file *f, const h5_dataset *d, uint64_t idx_addr)
{
	h5_ea_cparam cp;

	ea_cparam(&cp, d, &f->fmt);
	if (h5_addr_defined(idx_addr) && d->layout.version >= 5 && d->pline.n) {
		/* layout version 5: the elements are rewritten as wide as the
		 * header says they are, if that width is one a filtered element
		 * may have (h5_chunk_elmt_size_ok) */
		const h5_ea_hdr *h;
		h5_cache_ref ref;
		int rc = h5_ea_hdr_get(&h, &ref, f, idx_addr);

		if (rc < 0)
			return rc;
		if (h5_chunk_elmt_size_ok(&f->fmt, d->layout.version, true, d->chunk_bytes, h->elmt_size) == 0)
			cp.elmt_size = h->elmt_size;
		h5_cache_release(f->meta, &ref);
		h5_err_clear();
	}
	return h5_eaw_open((h5_eaw **)w, f, idx_addr, &cp);
}

static int eaw_set(void *w, const uint64_t *scaled, uint64_t idx, const h5_chunk_rec *rec)
{
	(void)scaled;
	return h5_eaw_set(w, idx, rec);
}
static int eaw_write(void *w) { return h5_eaw_write(w); }
static uint64_t eaw_addr(void *w) { return h5_eaw_hdr(w)->addr; }
static bool eaw_addr_is_new(void *w) { return h5_eaw_hdr_is_new(w); }
static int eaw_commit(void *w) { return h5_eaw_commit(w); }
static void eaw_invalidate(void *w) { h5_eaw_invalidate(w); }
static void eaw_freed(void *w, h5_freesp *to, uint64_t ticket) { h5_eaw_freed(w, to, ticket); }
static void eaw_free(void *w) { h5_eaw_free(w); }

const h5_cidx_write_ops h5_cidx_write_earray = {
	.open = eaw_open,
	.set = eaw_set,
	.write = eaw_write,
	.addr = eaw_addr,
	.addr_is_new = eaw_addr_is_new,
	.addr_field = h5_layout_ea_addr_field,
	.commit = eaw_commit,
	.freed = eaw_freed,
	.invalidate = eaw_invalidate,
	.free = eaw_free,
};
