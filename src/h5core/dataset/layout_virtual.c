/* layout_virtual.c - virtual storage (spec IV.A.2.i, layout class 3):
 * elements mapped from source datasets of other files (the mappings in
 * vds.c, resolved against the sources in dataset_vds.c). */
#include "layout_ops.h"

static uint64_t virtual_allocated(const h5_dataset *d)
{
	(void)d;
	return 0;       /* the sources hold the bytes */
}

const h5_layout_ops h5_layout_virtual = {
	.name = "virtual",
	.init = h5_dataset_vds_open,
	.close = h5_dataset_vds_close,
	.allocated = virtual_allocated,
	.read = h5_dataset_vds_read,
	.map = h5_dataset_vds_cut,
};
