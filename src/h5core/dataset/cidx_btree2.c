/* cidx_btree2.c - the version 2 B-tree chunk index (layout v4, index type
 * 5, record types 10 and 11; the tree in btree2.c; libhdf5's H5Dbtree2.c). */
#include "cidx.h"
#include "base.h"
#include "rd.h"
#include "file.h"
#include "layout.h"
#include "btree2.h"
#include "chunk_rec.h"
#include "dataset.h"

static int open_btree2(h5_chunk_index *ci)
{
	unsigned want_type = ci->filtered ? 11 : 10;
	uint64_t fixed = (uint64_t)ci->f->fmt.sizeof_addr + 8u * ci->rank;
	uint32_t rs;
	int rc;

	rc = h5_bt2_open(&ci->bt2, ci->f, ci->d->layout.idx_addr);
	if (rc < 0)
		return rc;
	if (h5_bt2_type(ci->bt2) != want_type)
		return h5_err_set(H5_ERR_FORMAT, "v2 B-tree at 0x%llx has record type %u, expected %u",
				  (unsigned long long)ci->d->layout.idx_addr, h5_bt2_type(ci->bt2), want_type);
	rs = h5_bt2_record_size(ci->bt2);
	if (want_type == 10 && rs == fixed)
		return 0;
	if (want_type == 11 && rs >= fixed + 4 + 1 && rs <= fixed + 4 + 8) {
		ci->bt2_size_len = (unsigned)(rs - fixed - 4);
		return 0;
	}
	return h5_err_set(H5_ERR_FORMAT, "v2 B-tree at 0x%llx: record size %u does not fit rank %u",
			  (unsigned long long)ci->d->layout.idx_addr, rs, ci->rank);
}

struct bt2_found {
	const h5_chunk_index *ci;
	h5_chunk_rec *out;
};

/* H5D__bt2_compare: scaled coordinates, slowest dimension first. */
static int bt2_cmp(const void *key, const uint8_t *rec, size_t len, void *ud)
{
	const h5_chunk_index *ci = ((const struct bt2_found *)ud)->ci;
	const uint64_t *scaled = key;
	const uint8_t *p = rec + len - 8u * ci->rank;

	for (unsigned i = 0; i < ci->rank; i++, p += 8) {
		uint64_t v = h5_le_decode(p, 8);

		if (scaled[i] != v)
			return scaled[i] < v ? -1 : 1;
	}
	return 0;
}

static void bt2_rec_decode(h5_chunk_rec *out, const h5_chunk_index *ci, const uint8_t *rec)
{
	unsigned sa = ci->f->fmt.sizeof_addr;

	h5_chunk_elmt_decode(out, &ci->f->fmt, ci->filtered ? H5_ARR_CLIENT_FILT_CHUNK : H5_ARR_CLIENT_CHUNK,
			     ci->filtered ? sa + ci->bt2_size_len + 4 : sa, rec);
}

static int bt2_found_cb(const uint8_t *rec, size_t len, void *ud)
{
	struct bt2_found *f = ud;

	bt2_rec_decode(f->out, f->ci, rec);
	return 0;
}

static int bt2_sum_cb(const uint8_t *rec, size_t len, void *ud)
{
	struct alloc_sum *s = ud;
	h5_chunk_rec r;

	bt2_rec_decode(&r, s->ci, rec);
	if (h5_addr_defined(r.addr))
		sum_add(s, s->ci->filtered ? r.size : s->ci->chunk_bytes);
	return 0;
}

static int bt2_idx_open(h5_chunk_index *ci, int nunlim, int unlim)
{
	(void)nunlim;
	(void)unlim;
	return h5_addr_defined(ci->d->layout.idx_addr) ? open_btree2(ci) : 0;
}

static int bt2_lookup(h5_chunk_rec *out, h5_chunk_index *ci, const uint64_t *scaled)
{
	struct bt2_found fd = { ci, out };
	int rc = h5_bt2_find(ci->bt2, bt2_cmp, scaled, bt2_found_cb, &fd);

	if (rc == H5_ERR_NOTFOUND) {
		h5_err_clear();
		rc = 0;
	}
	return rc;
}

static int bt2_allocated(uint64_t *out, h5_chunk_index *ci)
{
	struct alloc_sum s = { ci, 0 };
	int rc = h5_bt2_iterate(ci->bt2, bt2_sum_cb, &s);

	*out = s.total;
	return rc;
}

struct bt2_iter {
	const h5_chunk_index *ci;
	h5_cidx_iter_cb cb;
	void *ud;
};

/* Records 10/11 end with the scaled coordinates, 8 bytes each. */
static int bt2_iter_cb(const uint8_t *rec, size_t len, void *ud)
{
	struct bt2_iter *it = ud;
	const uint8_t *p = rec + len - 8u * it->ci->rank;
	uint64_t scaled[H5_MAX_RANK];
	h5_chunk_rec r;

	bt2_rec_decode(&r, it->ci, rec);
	if (!h5_addr_defined(r.addr))
		return 0;
	for (unsigned i = 0; i < it->ci->rank; i++, p += 8)
		scaled[i] = h5_le_decode(p, 8);
	return it->cb(scaled, &r, it->ud);
}

static int bt2_idx_iterate(h5_chunk_index *ci, h5_cidx_iter_cb cb, void *ud)
{
	struct bt2_iter it = { ci, cb, ud };

	return h5_bt2_iterate(ci->bt2, bt2_iter_cb, &it);
}

static int bt2_idx_blocks(h5_chunk_index *ci, h5_block_cb cb, void *ud)
{
	return h5_bt2_blocks(ci->bt2, cb, ud);
}

static void bt2_idx_close(h5_chunk_index *ci)
{
	h5_bt2_close(ci->bt2);
	ci->bt2 = NULL;
}

const h5_cidx_ops h5_cidx_btree2 = {
	.type = H5_CIDX_BTREE2,
	.name = "btree2",
	.open = bt2_idx_open,
	.lookup = bt2_lookup,
	.allocated = bt2_allocated,
	.iterate = bt2_idx_iterate,
	.blocks = bt2_idx_blocks,
	.close = bt2_idx_close,
};
