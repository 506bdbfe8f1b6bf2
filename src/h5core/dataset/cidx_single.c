/* cidx_single.c - a dataset of one chunk (layout v4, index type 1: the
 * chunk's address, and size and filter mask when filtered, in the layout
 * message; libhdf5's H5Dsingle.c). */
#include "cidx.h"
#include "base.h"
#include "rd.h"
#include "file.h"
#include "layout.h"
#include "chunk_rec.h"
#include "dataset.h"

static int single_open(h5_chunk_index *ci, int nunlim, int unlim)
{
	const h5_layout *l = &ci->d->layout;

	(void)nunlim;
	(void)unlim;
	for (unsigned i = 0; i < ci->rank; i++)
		if (ci->nchunks[i] > 1)
			return h5_err_set(H5_ERR_FORMAT, "single-chunk index but dimension %u spans %llu chunks", i,
					  (unsigned long long)ci->nchunks[i]);
	if (ci->filtered != !!(l->flags & H5_LAYOUT_FLAG_SINGLE_FILTERED))
		return h5_err_set(H5_ERR_FORMAT, "single-chunk layout: filter flag disagrees with the pipeline");
	return 0;
}

static int single_lookup(h5_chunk_rec *out, h5_chunk_index *ci, const uint64_t *scaled)
{
	const h5_layout *l = &ci->d->layout;

	for (unsigned i = 0; i < ci->rank; i++)
		if (scaled[i] != 0)
			return 0;
	out->addr = l->idx_addr;
	out->size = ci->filtered ? l->single_size : ci->chunk_bytes;
	out->filter_mask = ci->filtered ? l->single_mask : 0;
	return 0;
}

static int single_allocated(uint64_t *out, h5_chunk_index *ci)
{
	*out = ci->filtered ? ci->d->layout.single_size : ci->chunk_bytes;
	return 0;
}

static int single_iterate(h5_chunk_index *ci, h5_cidx_iter_cb cb, void *ud)
{
	uint64_t scaled[H5_MAX_RANK] = { 0 };
	h5_chunk_rec r;
	int rc = single_lookup(&r, ci, scaled);

	return rc < 0 ? rc : cb(scaled, &r, ud);
}

const h5_cidx_ops h5_cidx_single = {
	.type = H5_CIDX_SINGLE,
	.name = "single",
	.open = single_open,
	.lookup = single_lookup,
	.allocated = single_allocated,
	.iterate = single_iterate,
};
