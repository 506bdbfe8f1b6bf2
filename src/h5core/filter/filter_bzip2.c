/* filter_bzip2.c - BZip2 (307) (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "pline.h"
#include "filter.h"

#ifdef HAVE_BZ2
#include "dl.h"

#include <bzlib.h>

/* libbz2, opened when first needed (dl.h) */
#define BZ2_FUNCTIONS(X) \
	X(BZ2_bzDecompressInit) X(BZ2_bzDecompress) X(BZ2_bzDecompressEnd) X(BZ2_bzBuffToBuffCompress)
static struct { BZ2_FUNCTIONS(H5_DL_FIELD) } bz2_fn;
#define BZ2_SLOT(name) H5_DL_SLOT(bz2_fn, name)
static const h5_dl_sym bz2_syms[] = { BZ2_FUNCTIONS(BZ2_SLOT) { NULL, NULL } };
static h5_dl bz2_lib = {
	.what = "bzip2 filter", .package = "libbz2-1.0",
	.names = (const char *const[]){ "libbz2.so.1.0", "libbz2.so.1", NULL }, .syms = bz2_syms,
};
#define BZ2_bzDecompressInit (bz2_fn.p_BZ2_bzDecompressInit)
#define BZ2_bzDecompress (bz2_fn.p_BZ2_bzDecompress)
#define BZ2_bzDecompressEnd (bz2_fn.p_BZ2_bzDecompressEnd)
#define BZ2_bzBuffToBuffCompress (bz2_fn.p_BZ2_bzBuffToBuffCompress)

/* Output past the chunk's bound (out_done bytes, bz mid-stream, brc its
 * last answer): decoded on into scratch, up to 64 MiB more, to tell a
 * damaged chunk (the stream fails or is cut short) from a true
 * decompression bomb (it really decodes to more). */
static int bz_past(bz_stream *bz, const uint8_t *in, size_t in_len, size_t in_done, size_t out_done, size_t bound,
		   int brc)
{
	char scratch[16384];
	size_t extra = 0;

	while (brc == BZ_OK && extra < ((size_t)64 << 20)) {
		size_t in_chunk = in_len - in_done;
		unsigned ai, ao;

		if (in_chunk == 0)
			return h5_err_set(H5_ERR_FORMAT, "bzip2: corrupt chunk data: the stream runs past the %zu bytes "
					  "of the chunk and is cut short", bound);
		bz->next_in = (char *)(uintptr_t)(in + in_done);
		bz->avail_in = ai = (unsigned)(in_chunk > UINT_MAX ? UINT_MAX : in_chunk);
		bz->next_out = scratch;
		bz->avail_out = ao = sizeof(scratch);
		brc = BZ2_bzDecompress(bz);
		in_done += ai - bz->avail_in;
		extra += ao - bz->avail_out;
	}
	if (brc == BZ_STREAM_END)
		return h5_err_set(H5_ERR_FORMAT, "bzip2: decompression bomb: the stream decodes to %zu bytes, more "
				  "than the %zu bytes of the chunk", out_done + extra, bound);
	if (brc == BZ_OK)
		return h5_err_set(H5_ERR_FORMAT, "bzip2: decompression bomb: the stream decodes to more than %zu bytes "
				  "(the chunk holds %zu)", out_done + extra, bound);
	return h5_err_set(brc == BZ_MEM_ERROR ? H5_ERR_NOMEM : H5_ERR_FORMAT, "bzip2: corrupt chunk data (error %d, "
			  "decoded past the %zu bytes of the chunk)", brc, bound);
}

/* H5Zbzip2.c: one bzip2 stream. */
static int dec_bzip2(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	bz_stream bz;
	size_t cap = sat_add(st.size, 1), in_done = 0, out_done = 0;
	uint8_t *out;
	int brc, rc = 0;

	(void)f;
	if ((rc = h5_dl_need(&bz2_lib)) < 0)
		return rc;
	if (cap == SIZE_MAX)
		return h5_err_set(H5_ERR_LIMIT, "bzip2: chunk too large");
	out = h5_buf_alloc(cap);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "bzip2: out of memory");
	memset(&bz, 0, sizeof(bz));
	if (BZ2_bzDecompressInit(&bz, 0, 0) != BZ_OK) {
		h5_buf_free(out);
		return h5_err_set(H5_ERR_NOMEM, "bzip2: cannot initialise the decompressor");
	}
	for (;;) {
		size_t in_chunk = *len - in_done, out_chunk = cap - out_done;
		unsigned ai, ao;

		bz.next_in = (char *)(uintptr_t)(*buf + in_done);
		bz.avail_in = ai = (unsigned)(in_chunk > UINT_MAX ? UINT_MAX : in_chunk);
		bz.next_out = (char *)out + out_done;
		bz.avail_out = ao = (unsigned)(out_chunk > UINT_MAX ? UINT_MAX : out_chunk);
		brc = BZ2_bzDecompress(&bz);
		in_done += ai - bz.avail_in;
		out_done += ao - bz.avail_out;
		if (out_done > st.size) {
			rc = bz_past(&bz, *buf, *len, in_done, out_done, st.size, brc);
			goto out;
		}
		if (brc == BZ_STREAM_END)
			break;
		if (brc == BZ_MEM_ERROR) {
			rc = h5_err_set(H5_ERR_NOMEM, "bzip2: out of memory");
			goto out;
		}
		if (brc != BZ_OK) {
			rc = h5_err_set(H5_ERR_FORMAT, "bzip2: corrupt stream (error %d)", brc);
			goto out;
		}
		if (in_done == *len && bz.avail_out > 0) {
			/* all input used, room left, and the stream has not ended */
			rc = h5_err_set(H5_ERR_FORMAT, "bzip2: stream truncated after %zu input bytes", in_done);
			goto out;
		}
	}
	if (st.exact && out_done != st.size) {
		rc = h5_err_set(H5_ERR_FORMAT, "bzip2: stream decodes to %zu bytes, expected %zu", out_done, st.size);
		goto out;
	}
	BZ2_bzDecompressEnd(&bz);
	swap_buf(buf, len, out, out_done);
	return 0;
out:
	BZ2_bzDecompressEnd(&bz);
	h5_buf_free(out);
	return rc;
}

/* H5Zbzip2.c: cd[0] the block size in 100 kB (1..9, 9 without it), work
 * factor 0; BZ2_bzBuffToBuffCompress makes the same stream as its loop. */
static int enc_bzip2(uint8_t **buf, size_t *len, const h5_filter *f)
{
	unsigned bs = f->ncd >= 1 ? f->cd[0] : 9, dlen;
	size_t cap = sat_add(sat_add(*len, *len / 100), 600);
	uint8_t *out;
	int brc;

	if ((brc = h5_dl_need(&bz2_lib)) < 0)
		return brc;
	if (bs < 1 || bs > 9)
		return h5_err_set(H5_ERR_INVAL, "bzip2: invalid block size %u", bs);
	if (cap > UINT_MAX)
		return h5_err_set(H5_ERR_LIMIT, "bzip2: chunk of %zu bytes too large", *len);
	out = h5_buf_alloc(cap);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "bzip2: out of memory");
	dlen = (unsigned)cap;
	brc = BZ2_bzBuffToBuffCompress((char *)out, &dlen, (char *)*buf, (unsigned)*len, (int)bs, 0, 0);
	if (brc != BZ_OK) {
		h5_buf_free(out);
		return h5_err_set(brc == BZ_MEM_ERROR ? H5_ERR_NOMEM : H5_ERR_INVAL, "bzip2: compression failed (%d)", brc);
	}
	swap_buf(buf, len, out, dlen);
	return 0;
}
#endif

const h5_filter_class h5_filter_bzip2 = {
	.id = H5_FILTER_BZIP2,
	.name = "bzip2",
	.size = H5_FSIZE_BOUND,
#ifdef HAVE_BZ2
	.decode = dec_bzip2,
	.encode = enc_bzip2,
#endif
};
