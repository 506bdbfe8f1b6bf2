/* filter_zstd.c - Zstandard (32015) (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "pline.h"
#include "filter.h"

#ifdef HAVE_ZSTD
#include <zstd.h>
#include <zstd_errors.h>
#endif

#ifdef HAVE_ZSTD
int h5_filter_zstd_into(uint8_t *out, size_t cap, size_t *got, const uint8_t *in, size_t in_len, const char *what)
{
	size_t r = ZSTD_decompress(out, cap, in, in_len);

	if (ZSTD_isError(r)) {
		if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
			return h5_err_set(H5_ERR_FORMAT, "%s: decompression bomb: output exceeds %zu bytes", what, cap);
		if (ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation)
			return h5_err_set(H5_ERR_NOMEM, "%s: out of memory", what);
		return h5_err_set(H5_ERR_FORMAT, "%s: %s", what, ZSTD_getErrorName(r));
	}
	*got = r;
	return 0;
}

static int dec_zstd(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	unsigned long long fcs;
	uint8_t *out;
	size_t got = 0;
	int rc;

	(void)f;
	fcs = ZSTD_getFrameContentSize(*buf, *len);
	if (fcs == ZSTD_CONTENTSIZE_ERROR)
		return h5_err_set(H5_ERR_FORMAT, "zstd: not a zstd frame");
	if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && (rc = stage_check("zstd", fcs, st)) < 0)
		return rc;
	out = h5_buf_alloc(st.size ? st.size : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "zstd: out of memory");
	if ((rc = h5_filter_zstd_into(out, st.size, &got, *buf, *len, "zstd")) < 0 ||
	    (rc = stage_check("zstd", got, st)) < 0) {
		h5_buf_free(out);
		return rc;
	}
	swap_buf(buf, len, out, got);
	return 0;
}

size_t h5_filter_zstd_bound(size_t n)
{
	return ZSTD_compressBound(n);
}

int h5_filter_zstd_pack(uint8_t *out, size_t cap, size_t *got, const uint8_t *in, size_t in_len, int level,
			const char *what)
{
	size_t n = ZSTD_compress(out, cap, in, in_len, level);
	if (ZSTD_isError(n))
		return h5_err_set(ZSTD_getErrorCode(n) == ZSTD_error_memory_allocation ? H5_ERR_NOMEM : H5_ERR_INVAL,
				  "%s: %s", what, ZSTD_getErrorName(n));
	*got = n;
	return 0;
}

/* zstd_h5plugin.c: cd[0] the level (ZSTD_CLEVEL_DEFAULT without it),
 * clamped to 1..max, one frame with its content size as ZSTD_compress
 * writes it. */
static int enc_zstd(uint8_t **buf, size_t *len, const h5_filter *f)
{
	size_t bound = ZSTD_compressBound(*len), n = 0;
	int level = f->ncd >= 1 ? (int)f->cd[0] : ZSTD_CLEVEL_DEFAULT, rc;
	uint8_t *out;

	out = h5_buf_alloc(bound ? bound : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "zstd: out of memory");
	if (level < 1)
		level = 1;
	if (level > ZSTD_maxCLevel())
		level = ZSTD_maxCLevel();
	rc = h5_filter_zstd_pack(out, bound, &n, *buf, *len, level, "zstd");
	if (rc < 0) {
		h5_buf_free(out);
		return rc;
	}
	swap_buf(buf, len, out, n);
	return 0;
}
#endif

const h5_filter_class h5_filter_zstd = {
	.id = H5_FILTER_ZSTD,
	.name = "zstd",
	.size = H5_FSIZE_BOUND,
#ifdef HAVE_ZSTD
	.decode = dec_zstd,
	.encode = enc_zstd,
#endif
};
