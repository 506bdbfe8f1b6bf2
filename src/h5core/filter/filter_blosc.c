/* filter_blosc.c - Blosc (32001) (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "pline.h"
#include "filter.h"

#ifdef HAVE_BLOSC
#include <blosc.h>
#endif

#ifdef HAVE_BLOSC
/* The Blosc HDF5 filter stores one blosc buffer; its header gives the
 * decoded size (which may differ from the chunk when other filters follow). */
static int dec_blosc(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	size_t nbytes = 0, cbytes = 0, blocksize = 0;
	uint8_t *out;
	int r, rc;

	(void)f;
	if (*len < BLOSC_MIN_HEADER_LENGTH)
		return h5_err_set(H5_ERR_FORMAT, "blosc: chunk of %zu bytes is shorter than the blosc header", *len);
	if (blosc_cbuffer_validate(*buf, *len, &nbytes) != 0)
		return h5_err_set(H5_ERR_FORMAT, "blosc: invalid blosc header");
	blosc_cbuffer_sizes(*buf, &nbytes, &cbytes, &blocksize);
	if (cbytes > *len)
		return h5_err_set(H5_ERR_FORMAT, "blosc: buffer of %zu bytes claims %zu", *len, cbytes);
	if ((rc = stage_check("blosc", nbytes, st)) < 0)
		return rc;
	if (nbytes > INT_MAX)
		return h5_err_set(H5_ERR_FORMAT, "blosc: decoded size %zu too large", nbytes);
	out = h5_buf_alloc(nbytes ? nbytes : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "blosc: out of memory");
	r = blosc_decompress_ctx(*buf, out, nbytes, 1);
	if (r < 0 || (size_t)r != nbytes) {
		const char *lib = blosc_cbuffer_complib(*buf);

		h5_buf_free(out);
		return h5_err_set(H5_ERR_FORMAT, "blosc: decompression failed (%d; codec %s)", r, lib ? lib : "unknown");
	}
	swap_buf(buf, len, out, nbytes);
	return 0;
}
#endif

const h5_filter_class h5_filter_blosc = {
	.id = H5_FILTER_BLOSC,
	.name = "blosc",
	.size = H5_FSIZE_BOUND,
#ifdef HAVE_BLOSC
	.decode = dec_blosc,
#endif
};
