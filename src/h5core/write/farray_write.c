/*
 * farray_write.c - the appending writer of fixed array chunk indexes (spec
 * VII.C; libhdf5's H5FA*.c, H5Dfarray.c), for datasets that grow within a
 * fixed maximum.
 *
 * The array's elements are read into memory once (h5_fa_iterate; entries
 * never set are libhdf5's fill: an undefined address, size and mask 0),
 * records are set there, and the whole data block - prefix, page-init
 * bitmap and every page when paged - is written as a NEW block past the old
 * end of file (copy-on-write, doc/APPEND.md). The switch is the header,
 * rewritten in place in one checksummed write naming the new block. A
 * dataset without an array gets a new header too; the layout message is
 * then pointed at it. Pages are all written and marked initialized (pages
 * never set hold fill elements), so no page is read as garbage.
 */
#include "array.h"
#include "base.h"
#include "cache.h"
#include "file.h"
#include "layout.h"
#include "chunk_rec.h"
#include "dataset.h"
#include "farray_write.h"
#include "space.h"
#include "cidx_write.h"

struct h5_faw {
	h5_file *f;
	h5_fa_hdr h;            /* working header (addr, dblk_addr change) */
	bool hdr_new, changed;
	uint64_t old_dblk;      /* the data block on disk when opened (UNDEF: none) */
	uint64_t old_hdr;       /* a header copied (spanned a page), freed after the commit */
	unsigned elmt_size;
	uint8_t *elmts;         /* nelmts raw elements */
};

static void put_elmt(h5_faw *w, uint64_t idx, const h5_chunk_rec *rec)
{
	h5_chunk_elmt_encode(w->elmts + idx * w->elmt_size, &w->f->fmt, w->h.client, w->elmt_size, rec);
}

static int load_cb(uint64_t idx, const h5_chunk_rec *rec, void *ud)
{
	h5_faw *w = ud;

	if (idx >= w->h.nelmts)
		return h5_err_set(H5_ERR_FORMAT, "fixed array element %llu beyond %llu", (unsigned long long)idx,
				  (unsigned long long)w->h.nelmts);
	put_elmt(w, idx, rec);
	return 0;
}

/* The header fields a decode derives (pages), for a header made here. */
static int derive(h5_faw *w)
{
	size_t hs = h5_fa_hdr_size(&w->f->fmt);
	uint8_t buf[64];
	int rc;

	rc = h5_fa_hdr_encode(buf, hs, &w->f->fmt, &w->h);
	if (rc == 0)
		rc = h5_fa_hdr_decode(&w->h, &w->f->fmt, w->h.addr, buf, hs);
	return rc;
}

int h5_faw_open(h5_faw **out, h5_file *f, const h5_dataset *d, uint64_t idx_addr)
{
	const h5_layout *l = &d->layout;
	h5_chunk_rec fill = { H5_ADDR_UNDEF, 0, 0 };
	h5_faw *w;
	int rc = 0;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	w->f = f;
	w->elmt_size = f->fmt.sizeof_addr +
		       (d->pline.n ? h5_chunk_size_len_v(&f->fmt, l->version, d->chunk_bytes) + 4 : 0);
	if (h5_addr_defined(idx_addr)) {
		const h5_fa_hdr *h;
		h5_cache_ref ref;

		rc = h5_fa_hdr_get(&h, &ref, f, idx_addr);
		if (rc < 0)
			goto out;
		w->h = *h;
		h5_cache_release(f->meta, &ref);
		if (w->h.client != (d->pline.n ? H5_ARR_CLIENT_FILT_CHUNK : H5_ARR_CLIENT_CHUNK) ||
		    h5_chunk_elmt_size_ok(&f->fmt, l->version, d->pline.n != 0, d->chunk_bytes, w->h.elmt_size) < 0) {
			rc = h5_err_set(H5_ERR_FORMAT, "FAHD at 0x%llx: client %u, element size %u, expected %u",
					(unsigned long long)idx_addr, w->h.client, w->h.elmt_size, w->elmt_size);
			goto out;
		}
		/* entries are rewritten as wide as they are stored */
		w->elmt_size = w->h.elmt_size;
	} else {
		/* H5D__farray_idx_create: one entry per chunk of the maximum
		 * dimensions, the layout's page bits */
		uint64_t n = 1;

		for (unsigned i = 0; i < d->space.rank; i++) {
			uint64_t mx = d->space.maxdims[i], c = l->chunk[i];

			if (mx == H5_UNLIMITED || c == 0 || h5_mul_overflow(n, mx / c + (mx % c != 0), &n)) {
				rc = h5_err_set(H5_ERR_FORMAT, "fixed array over unlimited or overflowing dimensions");
				goto out;
			}
		}
		w->hdr_new = true;
		w->h.addr = H5_ADDR_UNDEF;
		w->h.client = d->pline.n ? H5_ARR_CLIENT_FILT_CHUNK : H5_ARR_CLIENT_CHUNK;
		w->h.elmt_size = (uint8_t)w->elmt_size;
		w->h.page_bits = l->fa_page_bits;
		w->h.nelmts = n;
		w->h.dblk_addr = H5_ADDR_UNDEF;
		rc = derive(w);
		if (rc < 0)
			goto out;
	}
	if (w->h.nelmts > ((uint64_t)1 << 31) / w->elmt_size) {
		rc = h5_err_set(H5_ERR_LIMIT, "fixed array of %llu entries too large to rewrite",
				(unsigned long long)w->h.nelmts);
		goto out;
	}
	w->elmts = malloc(w->h.nelmts ? (size_t)(w->h.nelmts * w->elmt_size) : 1);
	if (!w->elmts) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (uint64_t i = 0; i < w->h.nelmts; i++)
		put_elmt(w, i, &fill);
	w->old_dblk = w->h.dblk_addr;
	w->old_hdr = H5_ADDR_UNDEF;
	if (h5_addr_defined(w->h.dblk_addr))
		rc = h5_fa_iterate(f, idx_addr, load_cb, w);
out:
	if (rc < 0) {
		h5_faw_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

int h5_faw_set(h5_faw *w, uint64_t idx, const h5_chunk_rec *rec)
{
	if (idx >= w->h.nelmts)
		return h5_err_set(H5_ERR_LIMIT, "chunk %llu beyond the fixed array's %llu entries",
				  (unsigned long long)idx, (unsigned long long)w->h.nelmts);
	put_elmt(w, idx, rec);
	w->changed = true;
	return 0;
}

/* The new data block (and a new header) in new or freed space (space.c
 * h5_space_take); the old one freed after the commit (h5_faw_freed). */
int h5_faw_write(h5_faw *w)
{
	const h5_fmt *fmt = &w->f->fmt;
	uint64_t dsz, total, a, d0;
	size_t hs = h5_fa_hdr_size(fmt), boff = 0;
	h5_fa_dblock b = { 0 };
	uint8_t *buf = NULL, *bits = NULL;
	int rc;

	if (!w->changed)
		return 0;
	/* A header spanning a page is not rewritten in place (its checksum
	 * torn: the index unreadable): copied beside the new data block,
	 * which names it (III.J "Header Address"), and the layout message
	 * switched to it (txn.c h5_txn_switch) - an ordered copy, as the
	 * symbol-table root's (link_stab.c) */
	if (!w->hdr_new && h5_addr_defined(w->h.addr) && h5_space_spans_page(w->h.addr, hs)) {
		w->old_hdr = w->h.addr;
		w->hdr_new = true;
	}
	total = h5_fa_dblock_alloc_size(&w->h, fmt);
	dsz = h5_fa_dblock_size(&w->h, fmt);
	if (total == 0 || total > SIZE_MAX / 2)
		return h5_err_set(H5_ERR_LIMIT, "fixed array data block too large");
	buf = calloc(1, (size_t)total + (w->hdr_new ? hs : 0));
	if (w->h.npages)
		bits = calloc(1, (size_t)w->h.page_init_size);
	if (!buf || (w->h.npages && !bits)) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* (written whole below: freed space may hold it, space.c) */
	rc = h5_space_take(&a, w->f, total + (w->hdr_new ? hs : 0));
	if (rc < 0)
		goto out;
	/* the new header after the data block, or before it where after it
	 * would span a page (the next commit would copy it again) */
	d0 = a;
	if (w->hdr_new && h5_space_spans_page(a + total, hs) && !h5_space_spans_page(a, hs)) {
		w->h.addr = a;
		d0 = a + hs;
		boff = hs;
	} else if (w->hdr_new) {
		w->h.addr = a + total;
	}
	w->h.dblk_addr = d0;
	b.addr = d0;
	b.hdr_addr = w->h.addr;
	b.page_init = bits;
	b.elmts = w->elmts;
	for (uint64_t p = 0; p < w->h.npages; p++)
		bits[p / 8] |= (uint8_t)(0x80u >> (p % 8));
	rc = h5_fa_dblock_encode(buf + boff, (size_t)dsz, &w->h, fmt, &b);
	for (uint64_t p = 0; rc == 0 && p < w->h.npages; p++) {
		uint64_t pa = h5_fa_page_addr(&w->h, fmt, p), n = h5_fa_page_nelmts(&w->h, p);

		rc = h5_fa_page_encode(buf + boff + (pa - d0), (size_t)(n * w->elmt_size + 4), &w->h, p,
				       w->elmts + p * w->h.page_nelmts * w->elmt_size);
	}
	if (rc == 0 && w->hdr_new)
		rc = h5_fa_hdr_encode(buf + (w->h.addr - a), hs, fmt, &w->h);
	if (rc == 0)
		rc = h5_file_write(w->f, a, buf, (size_t)total + (w->hdr_new ? hs : 0));
out:
	free(buf);
	free(bits);
	return rc;
}

uint64_t h5_faw_addr(const h5_faw *w) { return w->h.addr; }
bool h5_faw_addr_is_new(const h5_faw *w) { return w->hdr_new; }

/* The switch: the header names the new data block, in one write. */
int h5_faw_commit(h5_faw *w)
{
	uint8_t buf[64];
	size_t hs = h5_fa_hdr_size(&w->f->fmt);
	int rc;

	if (w->hdr_new || !w->changed)
		return 0;
	rc = h5_fa_hdr_encode(buf, hs, &w->f->fmt, &w->h);
	return rc < 0 ? rc : h5_file_write(w->f, w->h.addr, buf, hs);
}

/* After the commit: the data block it replaced, referenced no more
 * (issue 65: 300 overwrite commits of a 1,024-entry array left 2.5 MB of
 * old data blocks unreferenced). */
void h5_faw_freed(h5_faw *w, h5_freesp *to, uint64_t ticket)
{
	if (w->changed && h5_addr_defined(w->old_hdr) && w->old_hdr != w->h.addr &&
	    h5_freesp_add(to, w->old_hdr, h5_fa_hdr_size(&w->f->fmt), ticket) < 0)
		h5_err_clear();         /* leaked */
	if (w->changed && h5_addr_defined(w->old_dblk) && w->old_dblk != w->h.dblk_addr &&
	    h5_freesp_add(to, w->old_dblk, h5_fa_dblock_alloc_size(&w->h, &w->f->fmt), ticket) < 0)
		h5_err_clear();         /* leaked */
}

void h5_faw_invalidate(h5_faw *w)
{
	if (h5_addr_defined(w->h.addr))
		h5_cache_invalidate(w->f->meta, H5_CK_FA_HDR, w->h.addr);
}

void h5_faw_free(h5_faw *w)
{
	if (!w)
		return;
	free(w->elmts);
	free(w);
}

/* ---- this writer as an entry of the writers' table (cidx_write.h) ---- */

static int faw_open(void **w, h5_file *f, const h5_dataset *d, uint64_t idx_addr)
{
	return h5_faw_open((h5_faw **)w, f, d, idx_addr);
}

static int faw_set(void *w, const uint64_t *scaled, uint64_t idx, const h5_chunk_rec *rec)
{
	(void)scaled;
	return h5_faw_set(w, idx, rec);
}

static int faw_write(void *w) { return h5_faw_write(w); }
static uint64_t faw_addr(void *w) { return h5_faw_addr(w); }
static bool faw_addr_is_new(void *w) { return h5_faw_addr_is_new(w); }
static int faw_commit(void *w) { return h5_faw_commit(w); }
static void faw_invalidate(void *w) { h5_faw_invalidate(w); }
static void faw_freed(void *w, h5_freesp *to, uint64_t ticket) { h5_faw_freed(w, to, ticket); }
static void faw_free(void *w) { h5_faw_free(w); }

const h5_cidx_write_ops h5_cidx_write_farray = {
	.open = faw_open,
	.set = faw_set,
	.write = faw_write,
	.addr = faw_addr,
	.addr_is_new = faw_addr_is_new,
	.addr_field = h5_layout_fa_addr_field,
	.commit = faw_commit,
	.freed = faw_freed,
	.invalidate = faw_invalidate,
	.free = faw_free,
};
