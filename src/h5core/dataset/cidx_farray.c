/* cidx_farray.c - the fixed array chunk index (layout v4, index type 3;
 * the structure in farray.c; libhdf5's H5Dfarray.c). */
#include "cidx.h"
#include "base.h"
#include "cache.h"
#include "file.h"
#include "layout.h"
#include "chunk_rec.h"
#include "dataset.h"

static int open_farray(h5_chunk_index *ci)
{
	const h5_fa_hdr *h;
	h5_cache_ref ref;
	int rc;

	rc = h5_fa_hdr_get(&h, &ref, ci->f, ci->d->layout.idx_addr);
	if (rc < 0)
		return rc;
	rc = h5_cidx_check_client(ci, h->client, "FAHD", h->addr);
	if (rc == 0 && h->nelmts < ci->max_nchunks)
		rc = h5_err_set(H5_ERR_FORMAT, "FAHD at 0x%llx: %llu entries for %llu chunks",
				(unsigned long long)h->addr, (unsigned long long)h->nelmts,
				(unsigned long long)ci->max_nchunks);
	h5_cache_release(ci->f->meta, &ref);
	return rc;
}

static int fa_open(h5_chunk_index *ci, int nunlim, int unlim)
{
	int rc;

	(void)unlim;
	if (nunlim)
		return h5_err_set(H5_ERR_FORMAT, "fixed array index with an unlimited dimension");
	rc = h5_cidx_set_down(ci, -1);
	if (rc == 0 && h5_addr_defined(ci->d->layout.idx_addr))
		rc = open_farray(ci);
	return rc;
}

static int fa_lookup(h5_chunk_rec *out, h5_chunk_index *ci, const uint64_t *scaled)
{
	uint64_t idx = 0;
	int rc = h5_cidx_linear(&idx, ci, scaled);

	return rc < 0 ? rc : h5_fa_lookup(out, ci->f, ci->d->layout.idx_addr, idx);
}

static int fa_allocated(uint64_t *out, h5_chunk_index *ci)
{
	return h5_cidx_arr_allocated(out, ci, h5_fa_iterate);
}

static int fa_iterate(h5_chunk_index *ci, h5_cidx_iter_cb cb, void *ud)
{
	return h5_cidx_arr_iterate(ci, h5_fa_iterate, cb, ud);
}

static int fa_blocks(h5_chunk_index *ci, h5_block_cb cb, void *ud)
{
	return h5_fa_blocks(ci->f, ci->d->layout.idx_addr, cb, ud);
}

const h5_cidx_ops h5_cidx_farray = {
	.type = H5_CIDX_FARRAY,
	.name = "farray",
	.open = fa_open,
	.lookup = fa_lookup,
	.allocated = fa_allocated,
	.iterate = fa_iterate,
	.blocks = fa_blocks,
};
