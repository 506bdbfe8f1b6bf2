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
	return h5_cidx_arr_allocated(out, ci, h5_ea_iterate);
}

static int ea_iterate(h5_chunk_index *ci, h5_cidx_iter_cb cb, void *ud)
{
	return h5_cidx_arr_iterate(ci, h5_ea_iterate, cb, ud);
}

static int ea_blocks(h5_chunk_index *ci, h5_block_cb cb, void *ud)
{
	return h5_ea_blocks(ci->f, ci->d->layout.idx_addr, cb, ud);
}

const h5_cidx_ops h5_cidx_earray = {
	.type = H5_CIDX_EARRAY,
	.name = "earray",
	.open = ea_open,
	.lookup = ea_lookup,
	.allocated = ea_allocated,
	.iterate = ea_iterate,
	.blocks = ea_blocks,
};
