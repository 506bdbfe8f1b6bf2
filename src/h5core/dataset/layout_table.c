/* layout_table.c - the layout table (layout_ops.h): which ops a dataset's
 * layout class reads with. A new layout is one layout_<name>.c and one
 * line here. */
#include "layout_ops.h"

/* indexed by the layout message's class (spec IV.A.2.i) */
static const h5_layout_ops *const by_class[] = {
	[H5_LAYOUT_COMPACT] = &h5_layout_compact,
	[H5_LAYOUT_CONTIGUOUS] = &h5_layout_contiguous,
	[H5_LAYOUT_CHUNKED] = &h5_layout_chunked,
	[H5_LAYOUT_VIRTUAL] = &h5_layout_virtual,
};

const h5_layout_ops *h5_layout_ops_of(const h5_dataset *d)
{
	unsigned cls = d->layout.cls;

	/* an external file list: the data is in other files (IV.A.2.h);
	 * only with a contiguous layout (layout_external.c checks) */
	if (d->efl.n)
		return &h5_layout_external;
	if (cls >= sizeof(by_class) / sizeof(by_class[0]))
		return NULL;
	return by_class[cls];
}
