/* cidx_earray.c - the extensible array chunk index (layout v4, index type
 * 4; the structure in earray.c, its writer in earray_write.c; libhdf5's
 * H5Dearray.c). The one index appends go through today (doc/APPEND.md). */
#include "cidx.h"
#include "base.h"
#include "cache.h"
#include "file.h"
#include "layout.h"
#include "chunk_rec.h"
#include "dataset.h"

static int open_earray(h5_chunk_index *ci)
{
	const h5_ea_hdr *h;
	h5_cache_ref ref;
	int rc;

	rc = h5_ea_hdr_get(&h, &ref, ci->f, ci->d->layout.idx_addr);
	if (rc < 0)
		return rc;
	rc = h5_cidx_check_client(ci, h->client, "EAHD", h->addr);
	h5_cache_release(ci->f->meta, &ref);
	return rc;
}

static int ea_open(h5_chunk_index *ci, int nunlim, int unlim)
{
	int rc;

	if (nunlim > 1)
		return h5_err_set(H5_ERR_FORMAT, "extensible array index with %d unlimited dimensions", nunlim);
	rc = h5_cidx_set_down(ci, nunlim ? unlim : 0);
	if (rc == 0 && h5_addr_defined(ci->d->layout.idx_addr))
		rc = open_earray(ci);
	return rc;
}

static int ea_lookup(h5_chunk_rec *out, h5_chunk_index *ci, const uint64_t *scaled)
{
	uint64_t idx = 0;
	int rc = h5_cidx_linear(&idx, ci, scaled);

	return rc < 0 ? rc : h5_ea_lookup(out, ci->f, ci->d->layout.idx_addr, idx);
}

static int ea_allocated(uint64_t *out, h5_chunk_index *ci)
{
	struct alloc_sum s = { ci, 0 };
	int rc = h5_ea_iterate(ci->f, ci->d->layout.idx_addr, h5_cidx_arr_sum_cb, &s);

	*out = s.total;
	return rc;
}

static int ea_iterate(h5_chunk_index *ci, h5_cidx_iter_cb cb, void *ud)
{
	return h5_cidx_arr_iterate(ci, h5_ea_iterate, cb, ud);
}

/* ---- appends: the writer of earray_write.c behind the table's write ops ---- */

static int ea_cparam(h5_ea_cparam *cp, const h5_dataset *d, const h5_fmt *fmt)
{
	const h5_layout *l = &d->layout;

	cp->client = d->pline.n ? H5_ARR_CLIENT_FILT_CHUNK : H5_ARR_CLIENT_CHUNK;
	/* H5D__earray_idx_create: filtered elements carry the chunk size in
	 * 1 + (log2(chunk bytes) + 8) / 8 bytes, and a filter mask */
	cp->elmt_size = (uint8_t)(fmt->sizeof_addr + (d->pline.n ? h5_chunk_size_len(d->chunk_bytes) + 4 : 0));
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
	return h5_ea_writer_open((h5_ea_writer **)w, f, idx_addr, &cp);
}

static int eaw_set(void *w, const uint64_t *scaled, uint64_t idx, const h5_chunk_rec *rec)
{
	(void)scaled;
	return h5_ea_writer_set(w, idx, rec);
}
static int eaw_write(void *w, uint64_t *alloc_end) { return h5_ea_writer_write(w, alloc_end); }
static uint64_t eaw_addr(void *w) { return h5_ea_writer_hdr(w)->addr; }
static bool eaw_addr_is_new(void *w) { return h5_ea_writer_hdr_is_new(w); }
static int eaw_commit(void *w) { return h5_ea_writer_commit(w); }
static void eaw_invalidate(void *w) { h5_ea_writer_invalidate(w); }
static void eaw_free(void *w) { h5_ea_writer_free(w); }

static const h5_cidx_write_ops ea_write_ops = {
	.open = eaw_open,
	.set = eaw_set,
	.write = eaw_write,
	.addr = eaw_addr,
	.addr_is_new = eaw_addr_is_new,
	.addr_field = h5_layout_ea_addr_field,
	.commit = eaw_commit,
	.invalidate = eaw_invalidate,
	.free = eaw_free,
};

const h5_cidx_ops h5_cidx_earray = {
	.type = H5_CIDX_EARRAY,
	.name = "earray",
	.open = ea_open,
	.lookup = ea_lookup,
	.allocated = ea_allocated,
	.iterate = ea_iterate,
	.write = &ea_write_ops,
};
