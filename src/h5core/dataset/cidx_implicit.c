/* cidx_implicit.c - the implicit index (layout v4, index type 2): every
 * chunk of the maximum dimensions allocated at creation, back to back
 * (libhdf5's H5Dnone.c). */
#include "cidx.h"
#include "base.h"
#include "file.h"
#include "layout.h"
#include "chunk_rec.h"
#include "dataset.h"

static int implicit_open(h5_chunk_index *ci, int nunlim, int unlim)
{
	(void)unlim;
	if (nunlim)
		return h5_err_set(H5_ERR_FORMAT, "implicit index with an unlimited dimension");
	if (ci->filtered)
		return h5_err_set(H5_ERR_FORMAT, "implicit chunk index on a filtered dataset");
	return h5_cidx_set_down(ci, -1);
}

static int implicit_lookup(h5_chunk_rec *out, h5_chunk_index *ci, const uint64_t *scaled)
{
	uint64_t idx = 0;
	int rc = h5_cidx_linear(&idx, ci, scaled);

	if (rc < 0)
		return rc;
	/* H5D__none_idx_get_addr: the chunks sit back to back */
	if (h5_mul_overflow(idx, ci->chunk_bytes, &idx) || h5_add_overflow(idx, ci->d->layout.idx_addr, &out->addr))
		return h5_err_set(H5_ERR_FORMAT, "implicit chunk address overflows");
	out->size = ci->chunk_bytes;
	return 0;
}

/* Space for every chunk of the maximum dimensions is allocated at creation
 * (H5D__none_idx_create), but libhdf5 reports (and H5Dget_storage_size /
 * h5dump show) the chunks of the current dimensions (H5D__none_idx_iterate);
 * so do we. */
static int implicit_allocated(uint64_t *out, h5_chunk_index *ci)
{
	uint64_t nc = 1;

	for (unsigned i = 0; i < ci->rank; i++)
		if (h5_mul_overflow(nc, ci->nchunks[i], &nc))
			nc = UINT64_MAX;
	*out = h5_mul_overflow(nc, ci->chunk_bytes, out) ? UINT64_MAX : *out;
	return 0;
}

/* The chunks of the current dimensions, in C order of the grid. */
static int implicit_iterate(h5_chunk_index *ci, h5_cidx_iter_cb cb, void *ud)
{
	uint64_t scaled[H5_MAX_RANK] = { 0 };
	int rc = 0;

	for (unsigned i = 0; i < ci->rank; i++)
		if (ci->nchunks[i] == 0)
			return 0;
	while (rc == 0) {
		h5_chunk_rec r = { H5_ADDR_UNDEF, 0, 0 };
		unsigned k;

		rc = implicit_lookup(&r, ci, scaled);
		if (rc == 0)
			rc = cb(scaled, &r, ud);
		for (k = ci->rank; k-- > 0;) {
			if (++scaled[k] < ci->nchunks[k])
				break;
			scaled[k] = 0;
		}
		if (k == (unsigned)-1)
			break;
	}
	return rc;
}

const h5_cidx_ops h5_cidx_implicit = {
	.type = H5_CIDX_IMPLICIT,
	.name = "implicit",
	.open = implicit_open,
	.lookup = implicit_lookup,
	.allocated = implicit_allocated,
	.iterate = implicit_iterate,
};
