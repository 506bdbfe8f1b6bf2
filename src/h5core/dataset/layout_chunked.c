/* layout_chunked.c - chunked storage (spec IV.A.2.i, layout class 2):
 * chunks behind an index (cidx.h; the grid and decoded chunks in chunk.c,
 * windows over them in chunk_walk.c). */
#include "layout_ops.h"
#include "chunk_int.h"
#include "chunk.h"

static int chunked_init(h5_dataset *d)
{
	const h5_layout *l = &d->layout;
	uint64_t cb = d->dtype->size;
	int rc;

	if (l->ndims != d->space.rank || l->ndims == 0)
		return h5_err_set(H5_ERR_FORMAT, "chunked layout has %u dimensions but the dataspace "
				  "has rank %u", l->ndims, d->space.rank);
	for (unsigned i = 0; i < l->ndims; i++) {
		if (l->chunk[i] == 0)
			return h5_err_set(H5_ERR_FORMAT, "chunk dimension %u is zero", i);
		if (h5_mul_overflow(cb, l->chunk[i], &cb) || cb > (uint64_t)SIZE_MAX / 2)
			return h5_err_set(H5_ERR_LIMIT, "chunk size overflows");
	}
	d->chunk_bytes = cb;
	rc = h5_chunk_index_open(&d->cidx, d);
	if (rc < 0)
		return h5_err_wrap(rc, "chunk index: ");
	return 0;
}

static void chunked_close(h5_dataset *d)
{
	h5_chunk_index_close(d->cidx);
	d->cidx = NULL;
}

static uint64_t chunked_allocated(const h5_dataset *d)
{
	uint64_t v;

	if (d->cidx && h5_chunk_allocated(&v, d->cidx) == 0)
		return v;
	return 0;
}

const h5_layout_ops h5_layout_chunked = {
	.name = "chunked",
	.init = chunked_init,
	.close = chunked_close,
	.allocated = chunked_allocated,
	.read = h5_chunk_read,
	.map = h5_chunk_cut,
};
