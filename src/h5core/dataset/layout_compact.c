/* layout_compact.c - compact storage (spec IV.A.2.i, layout class 0): the
 * raw data lives inside the layout message itself, decoded into
 * d->layout.compact when the dataset was opened. */
#include "layout_ops.h"

static int compact_init(h5_dataset *d)
{
	const h5_layout *l = &d->layout;

	if (d->efl.n)
		return h5_err_set(H5_ERR_FORMAT, "compact layout with an external file list");
	if (l->compact_size < d->nbytes || (l->compact_size && !l->compact))
		return h5_err_set(H5_ERR_FORMAT, "compact data is %zu bytes but the dataset needs %llu",
				  l->compact_size, (unsigned long long)d->nbytes);
	return 0;
}

static uint64_t compact_allocated(const h5_dataset *d)
{
	return d->layout.compact_size;
}

static int compact_read(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len)
{
	memcpy(buf, d->layout.compact + off, len);
	return 0;
}

/* The bytes live in the dataset, which a newer generation of a live FILE
 * may free while a reply is written: copied, never pinned. */
static int compact_map(h5_plan_build *b)
{
	b->read = true;
	return 0;
}

const h5_layout_ops h5_layout_compact = {
	.name = "compact",
	.init = compact_init,
	.allocated = compact_allocated,
	.read = compact_read,
	.map = compact_map,
};
