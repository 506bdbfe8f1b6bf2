/* filter_lzf.c - LZF (32000), as h5py writes it (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "pline.h"
#include "filter.h"

/* The h5py LZF filter stores a raw liblzf stream (when compression does not
 * pay, the optional filter fails at write time and the mask bit is set).
 * liblzf format: a control byte < 32 starts a literal run of ctrl+1 bytes;
 * otherwise len = ctrl >> 5 (7: plus the next byte) and a back reference of
 * len+2 bytes at distance ((ctrl & 31) << 8 | next byte) + 1. */
static int dec_lzf(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	const uint8_t *ip = *buf, *ie = *buf + *len;
	uint8_t *out, *op;
	size_t cap = st.size;
	int rc = 0;

	(void)f;
	out = h5_buf_alloc(cap ? cap : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "lzf: out of memory");
	op = out;
	while (ip < ie) {
		unsigned ctrl = *ip++;

		if (ctrl < 32) {
			size_t n = ctrl + 1;

			if (n > cap - (size_t)(op - out)) {
				rc = h5_err_set(H5_ERR_FORMAT, "lzf: decompression bomb: output exceeds the %zu bytes of the chunk", cap);
				goto out;
			}
			if (n > (size_t)(ie - ip)) {
				rc = h5_err_set(H5_ERR_FORMAT, "lzf: literal run past the end of the stream");
				goto out;
			}
			memcpy(op, ip, n);
			op += n;
			ip += n;
		} else {
			size_t n = ctrl >> 5, dist = (size_t)(ctrl & 31) << 8;

			if (ip >= ie)
				goto truncated;
			if (n == 7) {
				n += *ip++;
				if (ip >= ie)
					goto truncated;
			}
			dist += (size_t)*ip++ + 1;
			n += 2;
			if (n > cap - (size_t)(op - out)) {
				rc = h5_err_set(H5_ERR_FORMAT, "lzf: decompression bomb: output exceeds the %zu bytes of the chunk", cap);
				goto out;
			}
			if (dist > (size_t)(op - out)) {
				rc = h5_err_set(H5_ERR_FORMAT, "lzf: back reference before the start of the output");
				goto out;
			}
			/* byte by byte: the copy may overlap itself */
			for (size_t i = 0; i < n; i++, op++)
				*op = *(op - dist);
		}
	}
	if (st.exact && (size_t)(op - out) != st.size) {
		rc = h5_err_set(H5_ERR_FORMAT, "lzf: stream decodes to %zu bytes, expected %zu", (size_t)(op - out), st.size);
		goto out;
	}
	swap_buf(buf, len, out, (size_t)(op - out));
	return 0;
truncated:
	rc = h5_err_set(H5_ERR_FORMAT, "lzf: back reference truncated at the end of the stream");
out:
	h5_buf_free(out);
	return rc;
}

const h5_filter_class h5_filter_lzf = {
	.id = H5_FILTER_LZF,
	.name = "lzf",
	.size = H5_FSIZE_BOUND,
	.decode = dec_lzf,
};
