/*
 * earray_codec.c - the blocks of an extensible array (spec VII.D
 * "Extensible Array Header", "Index Block", "Super Block", "Data Block",
 * data block pages): decoders on (buf, len) that check signature,
 * version, checksum, client, the header back-pointer and block offsets,
 * and the encoders of the appending writer (earray_write.c). Sizes come
 * from earray_geom.c; earray.c caches and reads the decoded blocks.
 */
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "cache.h"
#include "file.h"
#include "chunk_rec.h"
#include "array_int.h"
#include "earray_int.h"

/* ---- decoders ------------------------------------------------------------ */

/* Index, super and data blocks name the header they belong to. */
#define EA_OWNER(h, fmt) { (fmt), "EAHD", H5_EA_VERSION, (h)->client, (h)->addr }

int h5_ea_hdr_decode(h5_ea_hdr *out, const h5_fmt *fmt, uint64_t addr, const uint8_t *buf, size_t len)
{
	h5_rd r;
	unsigned max_bits, idx_blk, min_elmts, min_ptrs, page_bits;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = h5_arr_hdr_open(&r, &out->client, &out->elmt_size, "EAHD", H5_EA_VERSION, addr, buf, len, h5_ea_hdr_size(fmt));
	if (rc < 0)
		return rc;
	out->addr = addr;
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
	rc = h5_arr_hdr_close(&r, fmt, "EAHD", addr, out->client, out->elmt_size);
	if (rc < 0)
		return rc;
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
	h5_arr_owner o = EA_OWNER(h, fmt);
	h5_rd r;
	int rc;

	*out = NULL;
	rc = h5_arr_block_open(&r, &o, "EAIB", addr, buf, len, size);
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
	h5_arr_owner o = EA_OWNER(h, fmt);
	h5_rd r;
	int rc;

	*out = NULL;
	if (sblk_idx < g->iblock_nsblks || sblk_idx >= g->nsblks)
		return h5_err_set(H5_ERR_FORMAT, "EASB at 0x%llx: super block %u has no EASB",
				  (unsigned long long)addr, sblk_idx);
	size = h5_ea_sblock_size(h, fmt, sblk_idx);
	rc = h5_arr_block_open(&r, &o, "EASB", addr, buf, len, size);
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
	if (b->block_off != (g->sb_start_idx[sblk_idx] & h5_arr_off_mask(g->arr_off_size))) {
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
	h5_arr_owner o = EA_OWNER(h, fmt);
	h5_rd r;
	int rc;

	*out = NULL;
	rc = h5_arr_block_open(&r, &o, "EADB", addr, buf, len, size);
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
	if (b->block_off != (expect_off & h5_arr_off_mask(h->g.arr_off_size))) {
		rc = h5_err_set(H5_ERR_FORMAT, "EADB at 0x%llx: block offset %llu, expected %llu",
				(unsigned long long)addr, (unsigned long long)b->block_off,
				(unsigned long long)(expect_off & h5_arr_off_mask(h->g.arr_off_size)));
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

int h5_ea_hdr_encode(uint8_t *buf, size_t len, const h5_fmt *fmt, const h5_ea_hdr *h)
{
	const h5_ea_geom *g = &h->g;
	uint8_t *p = buf + H5_ARR_PREFIX;
	uint64_t stats[6] = { h->nsblks_created, h->sblks_size, h->ndblks_created,
			      h->dblks_size, h->max_idx_set, h->nelmts };
	int rc = h5_arr_check_len(len, h5_ea_hdr_size(fmt), "EAHD");

	if (rc < 0)
		return rc;
	h5_arr_put_prefix(buf, "EAHD", H5_EA_VERSION, h->client);
	*p++ = h->elmt_size;
	*p++ = (uint8_t)g->max_nelmts_bits;
	*p++ = (uint8_t)g->idx_blk_elmts;
	*p++ = (uint8_t)g->data_blk_min_elmts;
	*p++ = (uint8_t)g->sup_blk_min_data_ptrs;
	*p++ = (uint8_t)g->max_dblk_page_nelmts_bits;
	for (int i = 0; i < 6; i++, p += fmt->sizeof_size)
		h5_le_encode(p, stats[i], fmt->sizeof_size);
	h5_le_encode(p, h->iblock_addr, fmt->sizeof_addr); /* UNDEF encodes as all ones */
	h5_arr_put_cksum(buf, len);
	return 0;
}

int h5_ea_iblock_encode(uint8_t *buf, size_t len, const h5_ea_hdr *h, const h5_fmt *fmt, const h5_ea_iblock *b)
{
	const h5_ea_geom *g = &h->g;
	uint8_t *p = buf + H5_ARR_PREFIX;
	size_t esz = (size_t)g->idx_blk_elmts * h->elmt_size;
	int rc = h5_arr_check_len(len, h5_ea_iblock_size(h, fmt), "EAIB");

	if (rc < 0)
		return rc;
	h5_arr_put_prefix(buf, "EAIB", H5_EA_VERSION, h->client);
	h5_le_encode(p, h->addr, fmt->sizeof_addr);
	p += fmt->sizeof_addr;
	memcpy(p, b->elmts, esz);
	p += esz;
	for (unsigned i = 0; i < g->ndblk_addrs; i++, p += fmt->sizeof_addr)
		h5_le_encode(p, b->dblk_addrs[i], fmt->sizeof_addr);
	for (unsigned i = 0; i < g->nsblk_addrs; i++, p += fmt->sizeof_addr)
		h5_le_encode(p, b->sblk_addrs[i], fmt->sizeof_addr);
	h5_arr_put_cksum(buf, len);
	return 0;
}

int h5_ea_sblock_encode(uint8_t *buf, size_t len, const h5_ea_hdr *h, const h5_fmt *fmt, const h5_ea_sblock *b)
{
	const h5_ea_geom *g = &h->g;
	unsigned u = b->sblk_idx;
	uint8_t *p = buf + H5_ARR_PREFIX;
	int rc = h5_arr_check_len(len, h5_ea_sblock_size(h, fmt, u), "EASB");

	if (rc < 0)
		return rc;
	if (u < g->iblock_nsblks)
		return h5_err_set(H5_ERR_INVAL, "EASB encode: super block %u lives in the index block", u);
	h5_arr_put_prefix(buf, "EASB", H5_EA_VERSION, h->client);
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
	h5_arr_put_cksum(buf, len);
	return 0;
}

int h5_ea_dblock_encode(uint8_t *buf, size_t len, const h5_ea_hdr *h, const h5_fmt *fmt, const h5_ea_dblock *b)
{
	uint8_t *p = buf + H5_ARR_PREFIX;
	int rc = h5_arr_check_len(len, h5_ea_dblock_size(h, fmt, b->nelmts), "EADB");

	if (rc < 0)
		return rc;
	h5_arr_put_prefix(buf, "EADB", H5_EA_VERSION, h->client);
	h5_le_encode(p, h->addr, fmt->sizeof_addr);
	p += fmt->sizeof_addr;
	h5_le_encode(p, b->block_off, h->g.arr_off_size);
	p += h->g.arr_off_size;
	if (!h5_ea_dblock_npages(h, b->nelmts))
		memcpy(p, b->elmts, (size_t)(b->nelmts * h->elmt_size));
	h5_arr_put_cksum(buf, len);
	return 0;
}

int h5_ea_page_encode(uint8_t *buf, size_t len, const h5_ea_hdr *h, const uint8_t *elmts)
{
	int rc = h5_arr_check_len(len, h5_ea_page_size(h), "EA page");

	if (rc < 0)
		return rc;
	memcpy(buf, elmts, len - H5_ARR_CKSUM);
	h5_arr_put_cksum(buf, len);
	return 0;
}
