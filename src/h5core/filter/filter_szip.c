/* filter_szip.c - szip (4), decoded with libaec (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "rd.h"
#include "pline.h"
#include "filter.h"

#if defined(HAVE_AEC) || defined(HAVE_SZLIB)
#include "dl.h"
#endif
#ifdef HAVE_AEC
#include <libaec.h>

/* libaec decodes, libsz (its szip API) encodes; each opened when first
 * needed (dl.h) */
#define AEC_FUNCTIONS(X) X(aec_buffer_decode)
static struct { AEC_FUNCTIONS(H5_DL_FIELD) } aec_fn;
#define AEC_SLOT(name) H5_DL_SLOT(aec_fn, name)
static const h5_dl_sym aec_syms[] = { AEC_FUNCTIONS(AEC_SLOT) { NULL, NULL } };
static h5_dl aec_lib = {
	.what = "szip filter", .package = "libaec0",
	.names = (const char *const[]){ "libaec.so.0", NULL }, .syms = aec_syms,
};
#define aec_buffer_decode (aec_fn.p_aec_buffer_decode)
#endif
#ifdef HAVE_SZLIB
#include <szlib.h>

#define SZ_FUNCTIONS(X) X(SZ_BufftoBuffCompress)
static struct { SZ_FUNCTIONS(H5_DL_FIELD) } sz_fn;
#define SZ_SLOT(name) H5_DL_SLOT(sz_fn, name)
static const h5_dl_sym sz_syms[] = { SZ_FUNCTIONS(SZ_SLOT) { NULL, NULL } };
static h5_dl sz_lib = {
	.what = "szip filter (encoding)", .package = "libsz2",
	.names = (const char *const[]){ "libsz.so.2", NULL }, .syms = sz_syms,
};
#define SZ_BufftoBuffCompress (sz_fn.p_SZ_BufftoBuffCompress)
#endif

#ifdef HAVE_AEC
/* H5Z_filter_szip stores the decoded size (4 bytes LE) then the szip stream;
 * cd (H5Zprivate.h H5Z_SZIP_PARM_*): [0] options mask, [1] pixels per block,
 * [2] bits per pixel, [3] pixels per scanline.  The szip parameters map to
 * libaec as libaec's own szip compatibility layer does (sz_compat.c
 * SZ_BufftoBuffDecompress): 32/64-bit pixels are coded as interleaved bytes,
 * and scanlines that are not a multiple of the block are padded. */
#define SZ_MSB_OPTION_MASK 16
#define SZ_NN_OPTION_MASK 32

static int dec_szip(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	struct aec_stream strm;
	uint32_t opts, bpp, ppb, pps, orig;
	size_t pixel_size, scanlines = 0, tmp_size, total_out;
	bool pad, deinterleave;
	uint8_t *out = NULL, *tmp = NULL;
	int arc, rc = 0;

	if ((rc = h5_dl_need(&aec_lib)) < 0)
		return rc;
	if (f->ncd < 4)
		return h5_err_set(H5_ERR_FORMAT, "szip: %zu cd values, expected 4", f->ncd);
	opts = f->cd[0];
	ppb = f->cd[1];
	bpp = f->cd[2];
	pps = f->cd[3];
	if (ppb == 0 || ppb > 32 || (ppb & 1) || pps == 0 || pps > 128 * 32 ||
	    bpp == 0 || (bpp > 32 && bpp != 64))
		return h5_err_set(H5_ERR_FORMAT, "szip: invalid parameters (bpp %u, ppb %u, pps %u)", bpp, ppb, pps);
	if (*len < 4)
		return h5_err_set(H5_ERR_FORMAT, "szip: chunk of %zu bytes has no size header", *len);
	orig = (uint32_t)h5_le_decode(*buf, 4);
	if ((rc = stage_check("szip", orig, st)) < 0)
		return rc;

	memset(&strm, 0, sizeof(strm));
	strm.block_size = ppb;
	strm.rsi = (pps + ppb - 1) / ppb;
	strm.flags = ((opts & SZ_MSB_OPTION_MASK) ? AEC_DATA_MSB : 0) |
		     ((opts & SZ_NN_OPTION_MASK) ? AEC_DATA_PREPROCESS : 0);
	strm.next_in = *buf + 4;
	strm.avail_in = *len - 4;
	pad = pps % ppb != 0;
	deinterleave = bpp == 32 || bpp == 64;
	strm.bits_per_sample = deinterleave ? 8 : bpp;
	pixel_size = strm.bits_per_sample > 16 ? 4 : strm.bits_per_sample > 8 ? 2 : 1;

	out = h5_buf_alloc(orig ? orig : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "szip: out of memory");
	tmp_size = orig;
	if (pad) {
		/* lines padded to whole blocks: rsi*ppb/pps < 1 + ppb/pps, so
		 * at most 32 times the chunk (ppb <= 32) */
		scanlines = (orig / pixel_size + pps - 1) / pps;
		tmp_size = (size_t)strm.rsi * ppb * pixel_size * scanlines;
	}
	if (pad || deinterleave) {
		tmp = h5_buf_alloc(tmp_size ? tmp_size : 1);
		if (!tmp) {
			rc = h5_err_set(H5_ERR_NOMEM, "szip: out of memory");
			goto out;
		}
		strm.next_out = tmp;
		strm.avail_out = tmp_size;
	} else {
		strm.next_out = out;
		strm.avail_out = orig;
	}
	arc = aec_buffer_decode(&strm);
	if (arc != AEC_OK) {
		rc = h5_err_set(arc == AEC_MEM_ERROR ? H5_ERR_NOMEM : H5_ERR_FORMAT,
				"szip: decoding failed (libaec error %d)", arc);
		goto out;
	}
	total_out = strm.total_out;
	if (pad) {
		size_t line = (size_t)pps * pixel_size, padded = (size_t)strm.rsi * ppb * pixel_size, i = line;

		/* remove_padding: keep the first `line` bytes of every padded line */
		for (size_t j = padded; j < total_out; j += padded) {
			memmove(tmp + i, tmp + j, total_out - j < line ? total_out - j : line);
			i += line;
		}
		total_out = scanlines * line;
		if (strm.total_out < tmp_size)
			total_out = 0;  /* short stream: reported below */
	}
	if (total_out < orig) {
		rc = h5_err_set(H5_ERR_FORMAT, "szip: stream decodes to %zu bytes, expected %u", total_out, orig);
		goto out;
	}
	if (deinterleave) {
		size_t ws = bpp / 8, n = orig / ws;

		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < ws; j++)
				out[i * ws + j] = tmp[j * n + i];
		/* libaec leaves any bytes past whole words unset; keep them */
		if (orig % ws)
			memcpy(out + n * ws, tmp + n * ws, orig % ws);
	} else if (pad) {
		memcpy(out, tmp, orig);
	}
	swap_buf(buf, len, out, orig);
	out = NULL;
out:
	h5_buf_free(tmp);
	h5_buf_free(out);
	return rc;
}
#endif

#ifdef HAVE_SZLIB
/* H5Z_filter_szip's compression: the decoded size (4 bytes LE), then what
 * SZ_BufftoBuffCompress makes of the chunk with the cd values as its
 * parameters, in an output no larger than the input: when it does not fit
 * the filter fails, and szip being optional (H5Pset_szip) the chunk is
 * stored unfiltered with its mask bit set. */
static int enc_szip(uint8_t **buf, size_t *len, const h5_filter *f)
{
	SZ_com_t p;
	size_t dlen = *len;
	uint8_t *out;
	int r;

	if ((r = h5_dl_need(&sz_lib)) < 0)
		return r;
	if (f->ncd < 4)
		return h5_err_set(H5_ERR_FORMAT, "szip: %zu cd values, expected 4", f->ncd);
	if (*len > UINT32_MAX)
		return h5_err_set(H5_ERR_LIMIT, "szip: chunk of %zu bytes too large", *len);
	p.options_mask = (int)f->cd[0];
	p.pixels_per_block = (int)f->cd[1];
	p.bits_per_pixel = (int)f->cd[2];
	p.pixels_per_scanline = (int)f->cd[3];
	out = h5_buf_alloc(*len + 4);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "szip: out of memory");
	h5_le_encode(out, *len, 4);
	r = SZ_BufftoBuffCompress(out + 4, &dlen, *buf, *len, &p);
	if (r != SZ_OK) {
		h5_buf_free(out);
		return h5_err_set(r == SZ_MEM_ERROR ? H5_ERR_NOMEM : H5_ERR_LIMIT,
				  "szip: compression failed (%s)", r == SZ_OUTBUFF_FULL ? "does not compress" : "libsz error");
	}
	swap_buf(buf, len, out, dlen + 4);
	return 0;
}
#endif

const h5_filter_class h5_filter_szip = {
	.id = H5_FILTER_SZIP,
	.name = "szip",
	.size = H5_FSIZE_BOUND,
#ifdef HAVE_AEC
	.decode = dec_szip,
#endif
#ifdef HAVE_SZLIB
	.encode = enc_szip,
#endif
};
