/* filter_zstd.c - Zstandard (32015) (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "pline.h"
#include "filter.h"

#ifdef HAVE_ZSTD
#include "dl.h"

#include <zstd.h>
#include <zstd_errors.h>

/* libzstd, opened when first needed (dl.h) */
#define ZSTD_FUNCTIONS(X) \
	X(ZSTD_decompress) X(ZSTD_isError) X(ZSTD_getErrorCode) X(ZSTD_getErrorName) \
	X(ZSTD_getFrameContentSize) X(ZSTD_compress) X(ZSTD_maxCLevel)
static struct { ZSTD_FUNCTIONS(H5_DL_FIELD) } zstd_fn;
#define ZSTD_SLOT(name) H5_DL_SLOT(zstd_fn, name)
static const h5_dl_sym zstd_syms[] = { ZSTD_FUNCTIONS(ZSTD_SLOT) { NULL, NULL } };
static h5_dl zstd_lib = {
	.what = "zstd filter", .package = "libzstd1",
	.names = (const char *const[]){ "libzstd.so.1", NULL }, .syms = zstd_syms,
};
#define ZSTD_decompress (zstd_fn.p_ZSTD_decompress)
#define ZSTD_isError (zstd_fn.p_ZSTD_isError)
#define ZSTD_getErrorCode (zstd_fn.p_ZSTD_getErrorCode)
#define ZSTD_getErrorName (zstd_fn.p_ZSTD_getErrorName)
#define ZSTD_getFrameContentSize (zstd_fn.p_ZSTD_getFrameContentSize)
#define ZSTD_compress (zstd_fn.p_ZSTD_compress)
#define ZSTD_maxCLevel (zstd_fn.p_ZSTD_maxCLevel)

/* A frame of no stated size that runs past cap: decoded again into room
 * for more (twice cap, 64 MiB more at most) to tell a damaged chunk (the
 * frame fails) from one that really holds more. */
static int zstd_past(const uint8_t *in, size_t in_len, size_t cap, const char *what)
{
	size_t room = cap < ((size_t)64 << 20) ? cap * 2 + 4096 : cap + ((size_t)64 << 20), r;
	uint8_t *probe = h5_buf_alloc(room);

	if (!probe)
		return h5_err_set(H5_ERR_FORMAT, "%s: corrupt chunk data, or a decompression bomb: the frame runs past "
				  "%zu bytes", what, cap);
	r = ZSTD_decompress(probe, room, in, in_len);
	h5_buf_free(probe);
	if (!ZSTD_isError(r))
		return h5_err_set(H5_ERR_FORMAT, "%s: decompression bomb: the frame holds %zu bytes, more than %zu", what,
				  r, cap);
	if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
		return h5_err_set(H5_ERR_FORMAT, "%s: decompression bomb: the frame holds more than %zu bytes (room "
				  "for %zu)", what, room, cap);
	return h5_err_set(H5_ERR_FORMAT, "%s: corrupt chunk data: %s (decoded past %zu bytes)", what,
			  ZSTD_getErrorName(r), cap);
}

int h5_filter_zstd_into(uint8_t *out, size_t cap, size_t *got, const uint8_t *in, size_t in_len, const char *what)
{
	size_t r;
	int rc = h5_dl_need(&zstd_lib);

	if (rc < 0)
		return rc;
	r = ZSTD_decompress(out, cap, in, in_len);
	if (ZSTD_isError(r)) {
		if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall) {
			/* a frame that says it is larger really is; one that
			 * does not and runs past is damaged */
			unsigned long long fcs = ZSTD_getFrameContentSize(in, in_len);

			if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != ZSTD_CONTENTSIZE_ERROR && fcs > cap)
				return h5_err_set(H5_ERR_FORMAT, "%s: decompression bomb: the frame holds %llu bytes, "
						  "more than %zu", what, fcs, cap);
			return zstd_past(in, in_len, cap, what);
		}
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
	if ((rc = h5_dl_need(&zstd_lib)) < 0)
		return rc;
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

/* the library's formula, as a macro: no need to load it */
size_t h5_filter_zstd_bound(size_t n)
{
	return ZSTD_COMPRESSBOUND(n);
}

int h5_filter_zstd_pack(uint8_t *out, size_t cap, size_t *got, const uint8_t *in, size_t in_len, int level,
			const char *what)
{
	size_t n;
	int rc = h5_dl_need(&zstd_lib);

	if (rc < 0)
		return rc;
	n = ZSTD_compress(out, cap, in, in_len, level);
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
	size_t bound = h5_filter_zstd_bound(*len), n = 0;
	int level = f->ncd >= 1 ? (int)f->cd[0] : ZSTD_CLEVEL_DEFAULT, rc;
	uint8_t *out;

	if ((rc = h5_dl_need(&zstd_lib)) < 0)
		return rc;
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
