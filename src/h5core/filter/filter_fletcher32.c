/* filter_fletcher32.c - fletcher32 (3): checksum appended to the chunk (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "rd.h"
#include "checksum.h"
#include "pline.h"
#include "filter.h"

/* H5Z_filter_fletcher32 appends the checksum little-endian (UINT32ENCODE).
 * Files from libhdf5 <= 1.6.2 on little-endian hosts hold it with the bytes
 * of each 16-bit half swapped; libhdf5 accepts both, so do we. */
static int dec_fletcher32(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	uint32_t stored, sum, reversed;
	int rc;

	(void)f;
	if (*len < 4)
		return h5_err_set(H5_ERR_FORMAT, "fletcher32: chunk of %zu bytes has no room for the checksum", *len);
	if ((rc = stage_check("fletcher32", *len - 4, st)) < 0)
		return rc;
	stored = (uint32_t)h5_le_decode(*buf + *len - 4, 4);
	sum = h5_checksum_fletcher32(*buf, *len - 4);
	reversed = ((sum & 0x00ff00ffu) << 8) | ((sum >> 8) & 0x00ff00ffu);
	if (stored != sum && stored != reversed)
		return h5_err_set(H5_ERR_CHECKSUM, "fletcher32: chunk checksum mismatch (stored 0x%08x, computed 0x%08x)",
				  stored, sum);
	*len -= 4;
	return 0;
}

static int enc_fletcher32(uint8_t **buf, size_t *len, const h5_filter *f)
{
	uint8_t *out;

	(void)f;
	if (*len > SIZE_MAX - 4)
		return h5_err_set(H5_ERR_LIMIT, "fletcher32: chunk too large");
	out = h5_buf_alloc(*len + 4);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "fletcher32: out of memory");
	memcpy(out, *buf, *len);
	h5_le_encode(out + *len, h5_checksum_fletcher32(*buf, *len), 4);
	swap_buf(buf, len, out, *len + 4);
	return 0;
}

const h5_filter_class h5_filter_fletcher32 = {
	.id = H5_FILTER_FLETCHER32,
	.name = "fletcher32",
	.size = H5_FSIZE_PLUS4,
	.decode = dec_fletcher32,
	.encode = enc_fletcher32,
};
