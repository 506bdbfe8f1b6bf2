/* dspace.c - the Dataspace message (IV.A.2.b "The Dataspace Message"). */
#include "base.h"
#include "rd.h"
#include "ohdr.h"
#include "dspace.h"

/* Flag bits of the dataspace message (IV.A.2.b, "Flags"). */
#define DSPACE_FLAG_MAX 0x01
#define DSPACE_FLAG_PERM 0x02 /* version 1 only; never implemented by libhdf5 */

int h5_dspace_decode(h5_dspace *out, const h5_fmt *fmt, const uint8_t *buf, size_t len)
{
	h5_rd r;
	uint8_t flags;
	unsigned i;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	h5_rd_init(&r, buf, len);
	out->version = h5_rd_u8(&r);
	out->rank = h5_rd_u8(&r);
	flags = h5_rd_u8(&r);
	if (!h5_rd_ok(&r)) {
		ret = h5_err_set(H5_ERR_FORMAT, "dataspace message: truncated header (%zu bytes)", len);
		goto out;
	}
	if (out->version == 1) {
		/* v1 has no type field: rank 0 is how libhdf5 < 1.8 wrote scalars.
		 * One reserved byte, then four more. */
		out->type = out->rank ? H5_SPACE_SIMPLE : H5_SPACE_SCALAR;
		h5_rd_skip(&r, 5);
	} else if (out->version == 2) {
		out->type = h5_rd_u8(&r);
		if (h5_rd_ok(&r) && out->type > H5_SPACE_NULL) {
			ret = h5_err_set(H5_ERR_FORMAT, "dataspace message: unknown type %d", out->type);
			goto out;
		}
	} else {
		ret = h5_err_set(H5_ERR_FORMAT, "dataspace message: bad version %u", out->version);
		goto out;
	}
	if (out->rank > H5_MAX_RANK) {
		ret = h5_err_set(H5_ERR_FORMAT, "dataspace message: rank %u exceeds %d",
				 out->rank, H5_MAX_RANK);
		goto out;
	}
	/* A scalar or null space has no dimensions; a simple one needs some. */
	if ((out->type == H5_SPACE_SIMPLE) != (out->rank > 0)) {
		ret = h5_err_set(H5_ERR_FORMAT, "dataspace message: type %d with rank %u",
				 out->type, out->rank);
		goto out;
	}
	out->has_max = (flags & DSPACE_FLAG_MAX) != 0;
	for (i = 0; i < out->rank; i++)
		out->dims[i] = h5_rd_size(&r, fmt);
	for (i = 0; i < out->rank; i++)
		/* h5_rd_size() turns the all-ones "unlimited" value into UINT64_MAX,
		 * which is H5_UNLIMITED. */
		out->maxdims[i] = out->has_max ? h5_rd_size(&r, fmt) : out->dims[i];
	if (out->version == 1 && (flags & DSPACE_FLAG_PERM))
		for (i = 0; i < out->rank; i++)
			(void)h5_rd_size(&r, fmt);
	if (!h5_rd_ok(&r)) {
		ret = h5_err_set(H5_ERR_FORMAT, "dataspace message: truncated (rank %u, %zu bytes)",
				 out->rank, len);
		goto out;
	}
	for (i = 0; i < out->rank; i++) {
		if (out->dims[i] == UINT64_MAX) {
			ret = h5_err_set(H5_ERR_FORMAT, "dataspace message: dimension %u is undefined", i);
			goto out;
		}
		if (out->maxdims[i] != H5_UNLIMITED && out->maxdims[i] < out->dims[i]) {
			ret = h5_err_set(H5_ERR_FORMAT,
					 "dataspace message: dimension %u size %llu exceeds maximum %llu", i,
					 (unsigned long long)out->dims[i],
					 (unsigned long long)out->maxdims[i]);
			goto out;
		}
	}
out:
	if (ret < 0)
		memset(out, 0, sizeof(*out));
	return ret;
}

int h5_dspace_nelmts(const h5_dspace *s, uint64_t *out)
{
	uint64_t n = 1;

	*out = 0;
	if (s->type == H5_SPACE_NULL)
		return 0;
	if (s->rank > H5_MAX_RANK)
		return h5_err_set(H5_ERR_INVAL, "dataspace: rank %u exceeds %d", s->rank, H5_MAX_RANK);
	for (unsigned i = 0; i < s->rank; i++)
		if (h5_mul_overflow(n, s->dims[i], &n))
			return h5_err_set(H5_ERR_LIMIT, "dataspace: number of elements overflows 64 bits");
	*out = n;
	return 0;
}

/* Patch the current size of dimension 0 of the dataspace message ds in a
 * header being edited (appends): the first dimension follows the 8-byte
 * version 1 prefix or the 4-byte version 2 one (IV.A.2.b). */
int h5_dspace_patch_dim0(h5_ohdr_edit *e, const h5_msg *ds, const h5_fmt *fmt, uint64_t n)
{
	uint8_t v[8];

	h5_le_encode(v, n, fmt->sizeof_size);
	return h5_ohdr_patch(e, ds->addr + (ds->data[0] == 1 ? 8 : 4), v, fmt->sizeof_size);
}
