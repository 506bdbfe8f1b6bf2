/* layout_contiguous.c - contiguous storage (spec IV.A.2.i, layout class
 * 1): one block of FILE at d->layout.addr, or none yet (reads as the fill
 * value). A read is one h5_file_read() of exactly the window. */
#include "layout_ops.h"

static int contig_init(h5_dataset *d)
{
	h5_layout *l = &d->layout;

	/* Layout v1/v2 store no size (dimensions were 32-bit there):
	 * libhdf5 derives it from the dataspace, so do we. */
	if (l->version < 3)
		l->size = d->nbytes;
	if (!h5_addr_defined(l->addr))
		return 0;
	if (l->size < d->nbytes)
		return h5_err_set(H5_ERR_FORMAT, "contiguous storage at 0x%llx is %llu bytes but the "
				  "dataset needs %llu", (unsigned long long)l->addr,
				  (unsigned long long)l->size, (unsigned long long)d->nbytes);
	if (!h5_file_range_ok(d->f, l->addr, d->nbytes))
		return h5_err_set(H5_ERR_FORMAT, "contiguous storage 0x%llx+%llu lies outside the file "
				  "(%llu bytes)", (unsigned long long)l->addr,
				  (unsigned long long)d->nbytes, (unsigned long long)h5_file_eof(d->f));
	return 0;
}

static uint64_t contig_allocated(const h5_dataset *d)
{
	if (!h5_addr_defined(d->layout.addr))
		return 0;
	/* a stored size past the end of the file (only nbytes of it are
	 * ever read, and those were checked) must not show as blocks */
	return h5_file_range_ok(d->f, d->layout.addr, d->layout.size) ? d->layout.size : d->nbytes;
}

static int contig_read(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len)
{
	if (!h5_addr_defined(d->layout.addr)) {
		h5_dataset_fill(d, buf, off, len);
		return 0;
	}
	h5_file_extent_hint(d->f, d->layout.addr, d->layout.addr + d->nbytes);
	return h5_file_read(d->f, d->layout.addr + off, buf, len);
}

/* One piece: of FILE (the whole storage was checked against the file at
 * open, and the file only grows), or of fill value. */
static int contig_map(h5_plan_build *b)
{
	h5_dataset *d = b->d;
	h5_piece p = { .kind = H5_PIECE_FILL, .ds = b->off, .len = b->len };

	if (h5_addr_defined(d->layout.addr)) {
		p.kind = H5_PIECE_EXTENT;
		p.f = d->f;
		p.addr = d->layout.addr + b->off;
		/* a cat's read-ahead stops at the end of the storage */
		h5_file_extent_hint(d->f, d->layout.addr, d->layout.addr + d->nbytes);
	}
	h5_plan_add(b, &p);
	return 0;
}

const h5_layout_ops h5_layout_contiguous = {
	.name = "contiguous",
	.init = contig_init,
	.allocated = contig_allocated,
	.read = contig_read,
	.map = contig_map,
};
