/* filter_deflate.c - deflate (1): zlib streams, decoded with libdeflate when built with it (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "pline.h"
#include "filter.h"

#include <zlib.h>

#ifdef HAVE_LIBDEFLATE
#include <libdeflate.h>
#include <pthread.h>
#include <stdlib.h>
#endif

/* Output past the chunk's bound (out_done bytes so far, zs mid-stream):
 * decoded on into scratch to tell a damaged chunk - a stream that fails,
 * or ends early, once it runs past - from a true decompression bomb, a
 * stream that really decodes to more (checked up to BOMB_PROBE bytes
 * more: a bomb's ratio is 1032, its whole output is never made). */
#define BOMB_PROBE ((size_t)64 << 20)
static int past_bound(z_stream *zs, const uint8_t *in, size_t in_len, size_t in_done, size_t out_done, size_t bound)
{
	uint8_t scratch[16384];
	size_t extra = 0;
	int zrc = Z_OK;

	while (extra < BOMB_PROBE) {
		size_t in_chunk = in_len - in_done;
		uInt ai, ao;

		zs->next_in = (Bytef *)(uintptr_t)(in + in_done);
		zs->avail_in = ai = (uInt)(in_chunk > UINT_MAX ? UINT_MAX : in_chunk);
		zs->next_out = scratch;
		zs->avail_out = ao = sizeof(scratch);
		zrc = inflate(zs, Z_NO_FLUSH);
		in_done += ai - zs->avail_in;
		extra += ao - zs->avail_out;
		if (zrc == Z_STREAM_END)
			return h5_err_set(H5_ERR_FORMAT, "deflate: decompression bomb: the stream decodes to %zu bytes, "
					  "more than the %zu bytes of the chunk", out_done + extra, bound);
		if (zrc == Z_BUF_ERROR && in_done == in_len)
			return h5_err_set(H5_ERR_FORMAT, "deflate: corrupt chunk data: the stream runs past the %zu bytes "
					  "of the chunk and is cut short after %zu input bytes", bound, in_len);
		if (zrc != Z_OK)
			return h5_err_set(zrc == Z_MEM_ERROR ? H5_ERR_NOMEM : H5_ERR_FORMAT,
					  "deflate: corrupt chunk data at input byte %zu: %s (decoded past the %zu bytes of "
					  "the chunk)", in_done, zs->msg ? zs->msg : "inflate failed", bound);
	}
	return h5_err_set(H5_ERR_FORMAT, "deflate: decompression bomb: the stream decodes to more than %zu bytes "
			  "(the chunk holds %zu)", out_done + extra, bound);
}

/* zlib inflate into at most st.size bytes (+1 byte of slack that detects a
 * stream that would go on).  Used without libdeflate and, with it, to report
 * size mismatches precisely. */
static int inflate_zlib(uint8_t **out, size_t *out_len, const uint8_t *in, size_t in_len, fstage st)
{
	z_stream zs;
	size_t cap = sat_add(st.size, 1);
	size_t in_done = 0, out_done = 0;
	uint8_t *o = NULL;
	int zrc, rc = 0;

	if (cap == SIZE_MAX)
		return h5_err_set(H5_ERR_LIMIT, "deflate: chunk too large");
	o = h5_buf_alloc(cap);
	if (!o)
		return h5_err_set(H5_ERR_NOMEM, "deflate: out of memory for %zu bytes", cap);
	memset(&zs, 0, sizeof(zs));
	if (inflateInit(&zs) != Z_OK) {
		h5_buf_free(o);
		return h5_err_set(H5_ERR_NOMEM, "deflate: inflateInit failed");
	}
	for (;;) {
		size_t in_chunk = in_len - in_done, out_chunk = cap - out_done;

		/* zlib counts in uInt: feed huge buffers in pieces */
		zs.next_in = (Bytef *)(uintptr_t)(in + in_done);
		zs.avail_in = (uInt)(in_chunk > UINT_MAX ? UINT_MAX : in_chunk);
		zs.next_out = o + out_done;
		zs.avail_out = (uInt)(out_chunk > UINT_MAX ? UINT_MAX : out_chunk);
		{
			uInt ai = zs.avail_in, ao = zs.avail_out;

			zrc = inflate(&zs, Z_NO_FLUSH);
			in_done += ai - zs.avail_in;
			out_done += ao - zs.avail_out;
		}
		if (zrc == Z_STREAM_END)
			break;
		if (out_done > st.size) {
			rc = past_bound(&zs, in, in_len, in_done, out_done, st.size);
			goto out;
		}
		if (zrc == Z_OK)
			continue;
		if (zrc == Z_BUF_ERROR && in_done == in_len) {
			rc = h5_err_set(H5_ERR_FORMAT,
					"deflate: stream truncated after %zu input bytes (%zu bytes decoded)",
					in_len, out_done);
			goto out;
		}
		if (zrc == Z_MEM_ERROR) {
			rc = h5_err_set(H5_ERR_NOMEM, "deflate: out of memory");
			goto out;
		}
		rc = h5_err_set(H5_ERR_FORMAT, "deflate: corrupt stream at input byte %zu: %s",
				in_done, zs.msg ? zs.msg : "inflate failed");
		goto out;
	}
	if (out_done > st.size) {
		/* (the stream ended right there: really more than the chunk) */
		rc = h5_err_set(H5_ERR_FORMAT, "deflate: decompression bomb: the stream decodes to %zu bytes, more "
				"than the %zu bytes of the chunk", out_done, st.size);
		goto out;
	}
	if (st.exact && out_done != st.size) {
		rc = h5_err_set(H5_ERR_FORMAT, "deflate: stream decodes to %zu bytes, expected %zu",
				out_done, st.size);
		goto out;
	}
	*out = o;
	*out_len = out_done;
	o = NULL;
out:
	inflateEnd(&zs);
	h5_buf_free(o);
	return rc;
}

static int dec_deflate(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	uint8_t *out = NULL;
	size_t out_len = 0;
	int rc;

#ifdef HAVE_LIBDEFLATE
	{
		struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
		enum libdeflate_result r;
		size_t in_used = 0;

		if (!d)
			return h5_err_set(H5_ERR_NOMEM, "deflate: cannot allocate decompressor");
		out = h5_buf_alloc(st.size ? st.size : 1);
		if (!out) {
			libdeflate_free_decompressor(d);
			return h5_err_set(H5_ERR_NOMEM, "deflate: out of memory for %zu bytes", st.size);
		}
		/* With actual_out given libdeflate accepts a shorter output, and
		 * like zlib it stops at the end of the stream (libhdf5 ignores
		 * trailing bytes too). */
		r = libdeflate_zlib_decompress_ex(d, *buf, *len, out, st.size, &in_used, &out_len);
		libdeflate_free_decompressor(d);
		if (r == LIBDEFLATE_SUCCESS && (!st.exact || out_len == st.size)) {
			swap_buf(buf, len, out, out_len);
			return 0;
		}
		h5_buf_free(out);
		out = NULL;
		/* Size mismatch or damage: let zlib say precisely what is wrong. */
	}
#endif
	(void)f;
	rc = inflate_zlib(&out, &out_len, *buf, *len, st);
	if (rc < 0)
		return rc;
	swap_buf(buf, len, out, out_len);
	return 0;
}

/* The fused step's first half (filter.c): the stream inflated into out,
 * its adler32 checked (libdeflate sums the output in a pass of its own
 * while it is in the cache: 19 us per MiB here, bench/README.md). A
 * stream libdeflate does not take goes to zlib, which says what is
 * wrong. */
static int dec_deflate_to(uint8_t *out, size_t *got, const uint8_t *in, size_t in_len, const h5_filter *f,
			  fstage st)
{
	uint8_t *o = NULL;
	size_t olen = 0;
	int rc;

#ifdef HAVE_LIBDEFLATE
	{
		struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
		enum libdeflate_result r;
		size_t in_used = 0, out_len = 0;

		if (!d)
			return h5_err_set(H5_ERR_NOMEM, "deflate: cannot allocate decompressor");
		r = libdeflate_zlib_decompress_ex(d, in, in_len, out, st.size, &in_used, &out_len);
		libdeflate_free_decompressor(d);
		if (r == LIBDEFLATE_SUCCESS && (!st.exact || out_len == st.size)) {
			*got = out_len;
			return 0;
		}
	}
#endif
	(void)f;
	rc = inflate_zlib(&o, &olen, in, in_len, st);
	if (rc < 0)
		return rc;
	memcpy(out, o, olen);   /* rare: no libdeflate, or a stream it did not take */
	h5_buf_free(o);
	*got = olen;
	return 0;
}

#ifdef HAVE_LIBDEFLATE
/* One compressor per thread, kept for the next chunk at the same level:
 * allocating one per chunk costs its tables (several hundred KiB) each
 * time, freshly mapped when the thread's arena was trimmed. Freed when
 * the thread ends. */
typedef struct enc_slot {
	struct libdeflate_compressor *c;
	int level;
} enc_slot;

static pthread_key_t enc_key;
static bool enc_key_ok;
static pthread_once_t enc_once = PTHREAD_ONCE_INIT;

static void enc_slot_free(void *p)
{
	enc_slot *e = p;

	libdeflate_free_compressor(e->c);
	free(e);
}

static void enc_key_make(void)
{
	enc_key_ok = pthread_key_create(&enc_key, enc_slot_free) == 0;
}

/* libdeflate's level for zlib's: zlib's levels 4-9 match lazily
 * (deflate_slow), libdeflate's from 5 (its 2-4 are greedy), so zlib's 4 -
 * h5py's default - is libdeflate's 5: the same strategy and, measured on
 * bench/write_bench.py's data, the same size (0.04% smaller; libdeflate's
 * 4 wrote 7.5% more) for the same CPU; on shuffled int32 chunks 0.5%
 * smaller for 12% more CPU, still a third less than zlib's 4
 * (bench/README.md). Others map to themselves. */
static int enc_level(unsigned level)
{
	return level == 4 ? 5 : (int)level;
}

static struct libdeflate_compressor *enc_get(int level)
{
	enc_slot *e;

	pthread_once(&enc_once, enc_key_make);
	if (!enc_key_ok)
		return libdeflate_alloc_compressor(level);
	e = pthread_getspecific(enc_key);
	if (e && e->level == level)
		return e->c;
	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e)
			return NULL;
		if (pthread_setspecific(enc_key, e) != 0) {
			free(e);
			return libdeflate_alloc_compressor(level);
		}
	}
	libdeflate_free_compressor(e->c);
	e->c = libdeflate_alloc_compressor(level);
	e->level = level;
	return e->c;
}

/* A compressor enc_get gave: kept, unless the thread could not keep it. */
static void enc_put(struct libdeflate_compressor *c)
{
	enc_slot *e = enc_key_ok ? pthread_getspecific(enc_key) : NULL;

	if (c && (!e || e->c != c))
		libdeflate_free_compressor(c);
}
#endif

static int enc_deflate(uint8_t **buf, size_t *len, const h5_filter *f)
{
	unsigned level = 6;
	uLongf dlen;
	uint8_t *out;
	int zrc;

	/* H5Z_filter_deflate: exactly one cd value, the level 0..9 */
	if (f->ncd >= 1)
		level = f->cd[0];
	if (level > 9)
		return h5_err_set(H5_ERR_INVAL, "deflate: invalid level %u", level);
#ifdef HAVE_LIBDEFLATE
	/* libdeflate writes the same zlib format several times faster than zlib
	 * at the same level (appends are compression-bound); level 0 (stored)
	 * stays with zlib, whose stored blocks libdeflate does not promise. */
	if (level > 0) {
		struct libdeflate_compressor *c = enc_get(enc_level(level));
		size_t bound, n;

		if (!c)
			return h5_err_set(H5_ERR_NOMEM, "deflate: out of memory");
		bound = libdeflate_zlib_compress_bound(c, *len);
		out = h5_buf_alloc(bound ? bound : 1);
		n = out ? libdeflate_zlib_compress(c, *buf, *len, out, bound) : 0;
		enc_put(c);
		if (!out)
			return h5_err_set(H5_ERR_NOMEM, "deflate: out of memory");
		if (n == 0) {
			h5_buf_free(out);
			return h5_err_set(H5_ERR_INVAL, "deflate: libdeflate could not compress %zu bytes", *len);
		}
		swap_buf(buf, len, out, n);
		return 0;
	}
#endif
	dlen = compressBound((uLong)*len);
	out = h5_buf_alloc(dlen ? dlen : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "deflate: out of memory");
	zrc = compress2(out, &dlen, *buf, (uLong)*len, (int)level);
	if (zrc != Z_OK) {
		h5_buf_free(out);
		return h5_err_set(zrc == Z_MEM_ERROR ? H5_ERR_NOMEM : H5_ERR_INVAL, "deflate: compress2 failed (%d)", zrc);
	}
	swap_buf(buf, len, out, dlen);
	return 0;
}

const h5_filter_class h5_filter_deflate = {
	.id = H5_FILTER_DEFLATE,
	.name = "deflate",
	.size = H5_FSIZE_BOUND,
	.decode = dec_deflate,
	.decode_to = dec_deflate_to,
	.encode = enc_deflate,
};
