/* cidx_write.c - the writers' table of chunk indexes (cidx_write.h). */
#include "cidx_write.h"
#include "base.h"
#include "layout.h"

static const struct {
	unsigned type;
	const h5_cidx_write_ops *ops;
} table[] = {
	{ H5_CIDX_BTREE1, &h5_cidx_write_btree1 },
	{ H5_CIDX_SINGLE, &h5_cidx_write_single },
	{ H5_CIDX_IMPLICIT, &h5_cidx_write_implicit },
	{ H5_CIDX_FARRAY, &h5_cidx_write_farray },
	{ H5_CIDX_EARRAY, &h5_cidx_write_earray },
	{ H5_CIDX_BTREE2, &h5_cidx_write_btree2 },
};

const h5_cidx_write_ops *h5_cidx_write_ops_of(unsigned type)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].type == type)
			return table[i].ops;
	return NULL;
}
