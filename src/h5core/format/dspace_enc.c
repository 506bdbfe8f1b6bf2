/*
 * dspace_enc.c - encoding the dataspace message (IV.A.2.b) of a new
 * attribute: scalar (rank 0) or simple without maximum dimensions. The
 * mirror of dspace.c's decoder.
 */
#include "base.h"
#include "rd.h"
#include "dspace.h"

int h5_dspace_encode(uint8_t *out, size_t *len, size_t cap, const h5_fmt *fmt, unsigned version, unsigned rank,
		     const uint64_t *dims)
{
	size_t n = (version == 1 ? 8 : 4) + (size_t)rank * fmt->sizeof_size;

	if ((version != 1 && version != 2) || rank > H5_MAX_RANK)
		return h5_err_set(H5_ERR_INVAL, "dataspace version %u rank %u cannot be made", version, rank);
	if (n > cap)
		return h5_err_set(H5_ERR_RANGE, "dataspace message of %zu bytes", n);
	memset(out, 0, n);
	out[0] = (uint8_t)version;
	out[1] = (uint8_t)rank;
	out[2] = 0;                             /* no maximum dimensions */
	if (version == 2)
		out[3] = rank ? 1 : 0;          /* simple or scalar */
	for (unsigned i = 0; i < rank; i++)
		h5_le_encode(out + (version == 1 ? 8 : 4) + (size_t)i * fmt->sizeof_size, dims[i], fmt->sizeof_size);
	*len = n;
	return 0;
}
