/* filter_lzo.c - LZO (305), PyTables' lzo filter (spec IV.A.2.l names the
 * registered id; the chunk format is PyTables' H5Zlzo.c; filter.c runs the
 * pipeline).
 *
 * A chunk is one LZO1X stream (it ends with its own end marker). PyTables
 * 0.5 to 0.7 appended a trailer of 8 bytes: the adler32 of the decoded
 * bytes, then their count, each a 4-byte number as the (little-endian)
 * writer held it; 0.8 and later write none, with the same client values
 * ({level, object version, object class}), so the values cannot tell.
 * The stream can: decoding it whole stops at its end marker, and 8 bytes
 * not consumed after a stream that decodes alone are such a trailer, which
 * is then checked as PyTables checked it.
 */
#include "filter_impl.h"
#include "pline.h"
#include "filter.h"

#ifdef HAVE_LZO
#include "dl.h"

#include <lzo1x.h>
#include <pthread.h>

/* liblzo2, opened when first needed (dl.h); lzo_init() is a macro over
 * __lzo_init_v2 */
#define LZO_FUNCTIONS(X) X(__lzo_init_v2) X(lzo1x_decompress_safe) X(lzo1x_1_compress) X(lzo_adler32)
static struct { LZO_FUNCTIONS(H5_DL_FIELD) } lzo_fn;
#define LZO_SLOT(name) H5_DL_SLOT(lzo_fn, name)
static const h5_dl_sym lzo_syms[] = { LZO_FUNCTIONS(LZO_SLOT) { NULL, NULL } };
static h5_dl lzo_lib = {
	.what = "lzo filter", .package = "liblzo2-2",
	.names = (const char *const[]){ "liblzo2.so.2", NULL }, .syms = lzo_syms,
};
#define __lzo_init_v2 (lzo_fn.p___lzo_init_v2)
#define lzo1x_decompress_safe (lzo_fn.p_lzo1x_decompress_safe)
#define lzo1x_1_compress (lzo_fn.p_lzo1x_1_compress)
#define lzo_adler32 (lzo_fn.p_lzo_adler32)

#define LZO_TRAILER 8

static pthread_once_t lzo_once = PTHREAD_ONCE_INIT;
static int lzo_init_rc;

/* lzo_init() checks the library matches the header's ABI; once per process. */
static void lzo_init_once(void)
{
	lzo_init_rc = lzo_init();
}

/* The library loaded and initialised: 0, or why not. */
static int lzo_ready(void)
{
	int rc = h5_dl_need(&lzo_lib);

	if (rc < 0)
		return rc;
	pthread_once(&lzo_once, lzo_init_once);
	if (lzo_init_rc != LZO_E_OK)
		return h5_err_set(H5_ERR_UNSUPPORTED, "lzo: library initialisation failed (%d)", lzo_init_rc);
	return 0;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One LZO1X stream of in_len bytes into out (cap bytes): *got decoded. The
 * _safe decoder checks both buffers' bounds, whatever the stream says. */
static int lzo_run(lzo_uint *got, uint8_t *out, size_t cap, const uint8_t *in, size_t in_len)
{
	*got = cap;
	return lzo1x_decompress_safe(in, in_len, out, got, NULL);
}

/* Output past the chunk's bound: decoded again into room for more (up to
 * 64 MiB, twice the chunk at most) to tell a damaged chunk (the stream
 * fails) from one that really decodes to more than the chunk. */
static int lzo_past(const uint8_t *in, size_t in_len, size_t bound)
{
	size_t room = bound < ((size_t)64 << 20) ? bound * 2 + 4096 : bound + ((size_t)64 << 20);
	uint8_t *probe = h5_buf_alloc(room);
	lzo_uint got = 0;
	int lrc, rc;

	if (!probe)
		return h5_err_set(H5_ERR_FORMAT, "lzo: corrupt chunk data, or a decompression bomb: the stream runs "
				  "past the %zu bytes of the chunk", bound);
	lrc = lzo_run(&got, probe, room, in, in_len);
	if (lrc == LZO_E_INPUT_NOT_CONSUMED && in_len >= LZO_TRAILER)
		lrc = lzo_run(&got, probe, room, in, in_len - LZO_TRAILER);
	h5_buf_free(probe);
	if (lrc == LZO_E_OK)
		rc = h5_err_set(H5_ERR_FORMAT, "lzo: decompression bomb: the stream decodes to %zu bytes, more than "
				"the %zu bytes of the chunk", (size_t)got, bound);
	else if (lrc == LZO_E_OUTPUT_OVERRUN)
		rc = h5_err_set(H5_ERR_FORMAT, "lzo: decompression bomb: the stream decodes to more than %zu bytes "
				"(the chunk holds %zu)", room, bound);
	else
		rc = h5_err_set(H5_ERR_FORMAT, "lzo: corrupt chunk data (error %d, decoded past the %zu bytes of the "
				"chunk)", lrc, bound);
	return rc;
}

static int dec_lzo(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	lzo_uint got = 0;
	uint8_t *out;
	int lrc, rc = 0;

	(void)f;
	if ((rc = lzo_ready()) < 0)
		return rc;
	out = h5_buf_alloc(st.size ? st.size : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "lzo: out of memory");
	lrc = lzo_run(&got, out, st.size, *buf, *len);
	if (lrc == LZO_E_INPUT_NOT_CONSUMED && *len >= LZO_TRAILER) {
		/* PyTables 0.5-0.7: the stream, then adler32 and length */
		size_t in_len = *len - LZO_TRAILER;

		lrc = lzo_run(&got, out, st.size, *buf, in_len);
		if (lrc == LZO_E_OK && le32(*buf + in_len + 4) != got) {
			rc = h5_err_set(H5_ERR_FORMAT, "lzo: stream decodes to %zu bytes, its trailer gives %u",
					(size_t)got, le32(*buf + in_len + 4));
			goto out;
		}
		if (lrc == LZO_E_OK && lzo_adler32(lzo_adler32(0, NULL, 0), out, got) != le32(*buf + in_len)) {
			rc = h5_err_set(H5_ERR_FORMAT, "lzo: checksum mismatch (adler32 of the %zu decoded bytes)",
					(size_t)got);
			goto out;
		}
	}
	if (lrc == LZO_E_OUTPUT_OVERRUN) {
		rc = lzo_past(*buf, *len, st.size);
		goto out;
	}
	if (lrc != LZO_E_OK) {
		rc = h5_err_set(H5_ERR_FORMAT, "lzo: corrupt stream (error %d)", lrc);
		goto out;
	}
	if ((rc = stage_check("lzo", got, st)) < 0)
		goto out;
	swap_buf(buf, len, out, got);
	return 0;
out:
	h5_buf_free(out);
	return rc;
}

/* H5Zlzo.c's compression (PyTables 0.8 and later, no trailer):
 * lzo1x_1_compress into nbytes + nbytes/16 + 64 + 3 bytes; a stream not
 * smaller than the chunk fails the (optional) filter, and the chunk is
 * stored without it, its mask bit set. */
static int enc_lzo(uint8_t **buf, size_t *len, const h5_filter *f)
{
	size_t cap = sat_add(sat_add(*len, *len / 16), 64 + 3);
	lzo_uint got = cap;
	uint8_t *out, *wrk;
	int lrc;

	(void)f;
	if ((lrc = lzo_ready()) < 0)
		return lrc;
	out = h5_buf_alloc(cap);
	wrk = malloc(LZO1X_1_MEM_COMPRESS);
	if (!out || !wrk) {
		h5_buf_free(out);
		free(wrk);
		return h5_err_set(H5_ERR_NOMEM, "lzo: out of memory");
	}
	lrc = lzo1x_1_compress(*buf, *len, out, &got, wrk);
	free(wrk);
	if (lrc != LZO_E_OK || got >= *len) {
		h5_buf_free(out);
		return h5_err_set(H5_ERR_LIMIT, "lzo: %s", lrc != LZO_E_OK ? "compression failed" : "does not compress");
	}
	swap_buf(buf, len, out, got);
	return 0;
}
#endif

const h5_filter_class h5_filter_lzo = {
	.id = H5_FILTER_LZO,
	.name = "lzo",
	.size = H5_FSIZE_BOUND,
#ifdef HAVE_LZO
	.decode = dec_lzo,
	.encode = enc_lzo,
#endif
};
