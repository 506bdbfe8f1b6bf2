/*
 * farray.c - the fixed array chunk index (spec VII.C; libhdf5 H5FA*.c).
 *
 * A header (FAHD) records the number of entries and points to one data
 * block (FADB). Small arrays keep their elements in the data block; when
 * there are more entries than a page holds, the data block carries a bitmap
 * of initialized pages and the elements live in checksummed pages laid out
 * right after it (the last page may be short).
 */
#include "array.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "file.h"
#include "chunk_rec.h"
#include "array_int.h"

size_t h5_fa_hdr_size(const h5_fmt *fmt)
{
	return H5_ARR_PREFIX + 2 + fmt->sizeof_size + fmt->sizeof_addr + H5_ARR_CKSUM;
}

static uint64_t prefix_size(const h5_fa_hdr *h, const h5_fmt *fmt)
{
	/* H5FA_DBLOCK_PREFIX_SIZE: the bitmap is part of the prefix. */
	return H5_ARR_PREFIX + fmt->sizeof_addr + (h->npages ? h->page_init_size : 0) + H5_ARR_CKSUM;
}

uint64_t h5_fa_dblock_size(const h5_fa_hdr *h, const h5_fmt *fmt)
{
	uint64_t n;

	if (h->npages)
		return prefix_size(h, fmt);
	if (h5_mul_overflow(h->nelmts, h->elmt_size, &n) || h5_add_overflow(n, prefix_size(h, fmt), &n))
		return 0;
	return n;
}

uint64_t h5_fa_page_nelmts(const h5_fa_hdr *h, uint64_t p)
{
	if (p >= h->npages)
		return 0;
	return p + 1 == h->npages ? h->nelmts - p * h->page_nelmts : h->page_nelmts;
}

static uint64_t full_page_size(const h5_fa_hdr *h)
{
	/* page_nelmts < nelmts when paged, and nelmts * elmt_size was checked */
	return h->page_nelmts * h->elmt_size + H5_ARR_CKSUM;
}

uint64_t h5_fa_page_addr(const h5_fa_hdr *h, const h5_fmt *fmt, uint64_t p)
{
	uint64_t a;

	if (p >= h->npages || h5_mul_overflow(p, full_page_size(h), &a) ||
	    h5_add_overflow(a, prefix_size(h, fmt), &a) || h5_add_overflow(a, h->dblk_addr, &a))
		return H5_ADDR_UNDEF;
	return a;
}

uint64_t h5_fa_dblock_alloc_size(const h5_fa_hdr *h, const h5_fmt *fmt)
{
	uint64_t n;

	if (!h->npages)
		return h5_fa_dblock_size(h, fmt);
	/* every element once, plus one checksum per page */
	if (h5_mul_overflow(h->nelmts, h->elmt_size, &n) || h5_add_overflow(n, h->npages * H5_ARR_CKSUM, &n) ||
	    h5_add_overflow(n, prefix_size(h, fmt), &n))
		return 0;
	return n;
}

int h5_fa_hdr_decode(h5_fa_hdr *out, const h5_fmt *fmt, uint64_t addr, const uint8_t *buf, size_t len)
{
	h5_rd r;
	uint64_t bytes;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = h5_arr_hdr_open(&r, &out->client, &out->elmt_size, "FAHD", H5_FA_VERSION, addr, buf, len, h5_fa_hdr_size(fmt));
	if (rc < 0)
		return rc;
	out->addr = addr;
	out->page_bits = h5_rd_u8(&r);
	out->nelmts = h5_rd_size(&r, fmt);
	out->dblk_addr = h5_rd_addr(&r, fmt);
	rc = h5_arr_hdr_close(&r, fmt, "FAHD", addr, out->client, out->elmt_size);
	if (rc < 0)
		return rc;
	/* libhdf5 (H5O__layout_decode) refuses 0 page bits; 64 would shift out. */
	if (out->page_bits == 0 || out->page_bits > 63)
		return h5_err_set(H5_ERR_FORMAT, "FAHD at 0x%llx: page bits %u not in 1..63",
				  (unsigned long long)addr, out->page_bits);
	if (h5_mul_overflow(out->nelmts, out->elmt_size, &bytes))
		return h5_err_set(H5_ERR_FORMAT, "FAHD at 0x%llx: %llu entries overflow", (unsigned long long)addr,
				  (unsigned long long)out->nelmts);
	out->page_nelmts = UINT64_C(1) << out->page_bits;
	if (out->nelmts > out->page_nelmts) {
		out->npages = out->nelmts / out->page_nelmts + (out->nelmts % out->page_nelmts != 0);
		out->page_init_size = (out->npages + 7) / 8;
	}
	return 0;
}

int h5_fa_dblock_decode(h5_fa_dblock **out, const h5_fa_hdr *h, const h5_fmt *fmt, uint64_t addr,
			const uint8_t *buf, size_t len)
{
	uint64_t size = h5_fa_dblock_size(h, fmt);
	size_t extra;
	h5_fa_dblock *b;
	h5_arr_owner o = { fmt, "FAHD", H5_FA_VERSION, h->client, h->addr };
	h5_rd r;
	int rc;

	*out = NULL;
	rc = h5_arr_block_open(&r, &o, "FADB", addr, buf, len, size);
	if (rc < 0)
		return rc;
	/* size was read into memory, so the bitmap or elements fit in size_t */
	extra = (size_t)(h->npages ? h->page_init_size : h->nelmts * h->elmt_size);
	b = calloc(1, sizeof(*b) + extra);
	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory decoding FADB at 0x%llx", (unsigned long long)addr);
	b->addr = addr;
	b->hdr_addr = h->addr;
	if (h->npages)
		b->page_init = (uint8_t *)(b + 1);
	else
		b->elmts = (uint8_t *)(b + 1);
	memcpy(b + 1, h5_rd_bytes(&r, extra), extra);
	*out = b;
	return 0;
}

int h5_fa_page_verify(const h5_fa_hdr *h, uint64_t addr, uint64_t p, const uint8_t *buf, size_t len)
{
	uint64_t n = h5_fa_page_nelmts(h, p);

	if (n == 0 || len != n * h->elmt_size + H5_ARR_CKSUM)
		return h5_err_set(H5_ERR_FORMAT, "FA data block page %llu at 0x%llx: bad size %zu",
				  (unsigned long long)p, (unsigned long long)addr, len);
	return h5_checksum_verify(buf, len, "FA data block page", addr);
}

void h5_fa_dblock_free(h5_fa_dblock *b) { free(b); }

/* ---- encoders (for writers) ---------------------------------------------------- */

int h5_fa_hdr_encode(uint8_t *buf, size_t len, const h5_fmt *fmt, const h5_fa_hdr *h)
{
	int rc = h5_arr_check_len(len, h5_fa_hdr_size(fmt), "FAHD");

	if (rc < 0)
		return rc;
	h5_arr_put_prefix(buf, "FAHD", H5_FA_VERSION, h->client);
	buf[6] = h->elmt_size;
	buf[7] = h->page_bits;
	h5_le_encode(buf + 8, h->nelmts, fmt->sizeof_size);
	h5_le_encode(buf + 8 + fmt->sizeof_size, h->dblk_addr, fmt->sizeof_addr);
	h5_arr_put_cksum(buf, len);
	return 0;
}

int h5_fa_dblock_encode(uint8_t *buf, size_t len, const h5_fa_hdr *h, const h5_fmt *fmt, const h5_fa_dblock *b)
{
	int rc = h5_arr_check_len(len, h5_fa_dblock_size(h, fmt), "FADB");
	uint8_t *p = buf + H5_ARR_PREFIX;

	if (rc < 0)
		return rc;
	h5_arr_put_prefix(buf, "FADB", H5_FA_VERSION, h->client);
	h5_le_encode(p, h->addr, fmt->sizeof_addr);
	p += fmt->sizeof_addr;
	if (h->npages)
		memcpy(p, b->page_init, (size_t)h->page_init_size);
	else
		memcpy(p, b->elmts, (size_t)(h->nelmts * h->elmt_size));
	h5_arr_put_cksum(buf, len);
	return 0;
}

int h5_fa_page_encode(uint8_t *buf, size_t len, const h5_fa_hdr *h, uint64_t p, const uint8_t *elmts)
{
	uint64_t n = h5_fa_page_nelmts(h, p);
	int rc = h5_arr_check_len(len, n ? n * h->elmt_size + H5_ARR_CKSUM : 0, "FA page");

	if (rc < 0)
		return rc;
	memcpy(buf, elmts, len - H5_ARR_CKSUM);
	h5_arr_put_cksum(buf, len);
	return 0;
}

/* ---- cached loaders ---------------------------------------------------------- */

typedef struct fa_load {
	h5_block_load b;        /* first: what h5_file_load_block() sees */
	const h5_fa_hdr *h;
} fa_load;

static void fa_free(void *obj) { free(obj); }

/* The (buf, len) decoders in the shape h5_file_load_block() calls. */
static int fa_hdr_dec(void **obj, size_t *cost, const uint8_t *buf, size_t len, const h5_block_load *b)
{
	(void)cost;
	return h5_fa_hdr_decode(*obj, &b->f->fmt, b->addr, buf, len);
}

static int fa_dblock_dec(void **obj, size_t *cost, const uint8_t *buf, size_t len, const h5_block_load *b)
{
	*cost = len + sizeof(h5_fa_dblock);
	return h5_fa_dblock_decode((h5_fa_dblock **)obj, ((const fa_load *)b)->h, &b->f->fmt, b->addr, buf, len);
}

/* h5_fa_page_verify in the shape of the shared page loader (array_block.c). */
static int fa_page_verify(const void *h, uint64_t addr, uint64_t p, const uint8_t *buf, size_t len)
{
	return h5_fa_page_verify(h, addr, p, buf, len);
}

int h5_fa_hdr_get(const h5_fa_hdr **out, h5_cache_ref *ref, h5_file *f, uint64_t addr)
{
	fa_load l = { .b = { f, addr, h5_fa_hdr_size(&f->fmt), "FAHD", sizeof(h5_fa_hdr), fa_hdr_dec } };
	int rc;

	*out = NULL;
	if (!h5_addr_defined(addr))
		return h5_err_set(H5_ERR_FORMAT, "fixed array header address is undefined");
	rc = h5_cache_get(ref, f->meta, H5_CK_FA_HDR, addr, h5_file_load_block, fa_free, &l);
	if (rc < 0)
		return rc;
	*out = ref->obj;
	return 0;
}

static int dblock_get(const h5_fa_dblock **out, h5_cache_ref *ref, h5_file *f, const h5_fa_hdr *h)
{
	fa_load l = { .b = { f, h->dblk_addr, h5_fa_dblock_size(h, &f->fmt), "FADB", 0, fa_dblock_dec }, .h = h };
	int rc;

	rc = h5_cache_get(ref, f->meta, H5_CK_FA_DBLOCK, l.b.addr, h5_file_load_block, fa_free, &l);
	if (rc < 0)
		return rc;
	*out = ref->obj;
	if ((*out)->hdr_addr != h->addr)
		return h5_arr_conflict(f, ref, "FADB", l.b.addr);
	return 0;
}

/* Raw elements of page p (NULL: the page was never initialized). */
static int page_get(const uint8_t **elmts, h5_cache_ref *ref, bool *have_ref, h5_file *f,
		    const h5_fa_hdr *h, const h5_fa_dblock *db, uint64_t p)
{
	h5_arr_page_load l = { f, H5_CK_FA_PAGE, h5_fa_page_addr(h, &f->fmt, p),
			       h5_fa_page_nelmts(h, p) * h->elmt_size + H5_ARR_CKSUM, h, h->addr, p,
			       "FA data block page", fa_page_verify };
	const h5_arr_page *pg;
	int rc;

	*elmts = NULL;
	*have_ref = false;
	/* H5VM_bit_get: MSB-first bitmap. */
	if (!(db->page_init[p / 8] & (0x80u >> (p % 8))))
		return 0;
	if (!h5_addr_defined(l.addr))
		return h5_err_set(H5_ERR_FORMAT, "FADB at 0x%llx: page %llu address overflows",
				  (unsigned long long)h->dblk_addr, (unsigned long long)p);
	rc = h5_arr_page_get(&pg, ref, &l);
	if (rc < 0)
		return rc;
	*have_ref = true;
	*elmts = pg->elmts;
	return 0;
}

int h5_fa_lookup(h5_chunk_rec *out, h5_file *f, uint64_t hdr_addr, uint64_t idx)
{
	h5_cache_ref href, dref, pref;
	const h5_fa_hdr *h;
	const h5_fa_dblock *db;
	const uint8_t *elmts;
	bool have_page = false;
	uint64_t i = idx;
	int rc;

	out->addr = H5_ADDR_UNDEF;
	out->size = 0;
	out->filter_mask = 0;
	rc = h5_fa_hdr_get(&h, &href, f, hdr_addr);
	if (rc < 0)
		return rc;
	if (idx >= h->nelmts) {
		rc = h5_err_set(H5_ERR_FORMAT, "FAHD at 0x%llx: chunk index %llu beyond the array's %llu entries",
				(unsigned long long)hdr_addr, (unsigned long long)idx, (unsigned long long)h->nelmts);
		goto out_hdr;
	}
	if (!h5_addr_defined(h->dblk_addr))
		goto out_hdr;
	rc = dblock_get(&db, &dref, f, h);
	if (rc < 0)
		goto out_hdr;
	elmts = db->elmts;
	if (h->npages) {
		rc = page_get(&elmts, &pref, &have_page, f, h, db, idx / h->page_nelmts);
		i = idx % h->page_nelmts;
	}
	if (rc >= 0 && elmts)
		h5_chunk_elmt_decode(out, &f->fmt, h->client, h->elmt_size, elmts + (size_t)i * h->elmt_size);
	if (have_page)
		h5_cache_release(f->meta, &pref);
	h5_cache_release(f->meta, &dref);
out_hdr:
	h5_cache_release(f->meta, &href);
	return rc;
}

static int visit(const h5_fa_hdr *h, const h5_fmt *fmt, const uint8_t *elmts, uint64_t first, uint64_t n,
		 h5_arr_elmt_cb cb, void *ud)
{
	int rc = 0;

	for (uint64_t i = 0; i < n && rc == 0; i++) {
		h5_chunk_rec rec;

		h5_chunk_elmt_decode(&rec, fmt, h->client, h->elmt_size, elmts + (size_t)i * h->elmt_size);
		if (h5_addr_defined(rec.addr))
			rc = cb(first + i, &rec, ud);
	}
	return rc;
}

int h5_fa_iterate(h5_file *f, uint64_t hdr_addr, h5_arr_elmt_cb cb, void *ud)
{
	h5_cache_ref href, dref;
	const h5_fa_hdr *h;
	const h5_fa_dblock *db;
	int rc;

	rc = h5_fa_hdr_get(&h, &href, f, hdr_addr);
	if (rc < 0)
		return rc;
	if (!h5_addr_defined(h->dblk_addr))
		goto out_hdr;
	rc = dblock_get(&db, &dref, f, h);
	if (rc < 0)
		goto out_hdr;
	if (!h->npages)
		rc = visit(h, &f->fmt, db->elmts, 0, h->nelmts, cb, ud);
	for (uint64_t p = 0; p < h->npages && rc == 0; p++) {
		h5_cache_ref pref;
		const uint8_t *elmts;
		bool have_page;

		rc = page_get(&elmts, &pref, &have_page, f, h, db, p);
		if (rc == 0 && elmts)
			rc = visit(h, &f->fmt, elmts, p * h->page_nelmts, h5_fa_page_nelmts(h, p), cb, ud);
		if (have_page)
			h5_cache_release(f->meta, &pref);
	}
	h5_cache_release(f->meta, &dref);
out_hdr:
	h5_cache_release(f->meta, &href);
	return rc;
}

/* VII.C: the header, and the data block allocated with all its pages in
 * one piece (H5FA__dblock_create), whatever pages were written. */
int h5_fa_blocks(h5_file *f, uint64_t hdr_addr, h5_block_cb cb, void *ud)
{
	h5_cache_ref href;
	const h5_fa_hdr *h;
	int rc;

	rc = h5_fa_hdr_get(&h, &href, f, hdr_addr);
	if (rc < 0)
		return rc;
	rc = cb(hdr_addr, h5_fa_hdr_size(&f->fmt), ud);
	if (rc == 0 && h5_addr_defined(h->dblk_addr))
		rc = cb(h->dblk_addr, h5_fa_dblock_alloc_size(h, &f->fmt), ud);
	h5_cache_release(f->meta, &href);
	return rc;
}
