/* filter_zfp.c - ZFP (32013), LLNL's H5Z-ZFP plugin (spec IV.A.2.l names the
 * registered id; the format is H5Z-ZFP's H5Zzfp.c and zfp's own header;
 * filter.c runs the pipeline).
 *
 * H5Z-ZFP keeps the zfp header out of the chunks: when a dataset is
 * created its set_local callback writes zfp's full header (magic and codec
 * version, the field's scalar type and dimensions, the compression mode:
 * rate, precision, accuracy, expert or reversible) with zfp_write_header
 * into the client values from cd[1] on, as native 32-bit words, and cd[0]
 * holds the versions: zfp library << 16 | zfp codec << 12 | H5Z-ZFP. The
 * field is one chunk, its dimensions of size 1 dropped (at most 4 remain),
 * in C order. A chunk is the bare zfp bit stream of that field.
 */
#include "filter_impl.h"
#include "base.h"
#include "pline.h"
#include "filter.h"

#ifdef HAVE_ZFP
#include "dl.h"

#include <zfp.h>

/* libzfp (and the OpenMP runtime it pulls in), opened when first needed
 * (dl.h); zfp_codec_version is a constant of the library */
#define ZFP_FUNCTIONS(X) \
	X(stream_open) X(stream_close) X(zfp_stream_open) X(zfp_stream_close) X(zfp_field_alloc) \
	X(zfp_field_free) X(zfp_read_header) X(zfp_stream_rewind) X(zfp_stream_set_bit_stream) \
	X(zfp_field_type) X(zfp_field_size) X(zfp_stream_maximum_size) X(zfp_field_set_pointer) \
	X(zfp_decompress) X(zfp_compress) X(zfp_codec_version)
static struct { ZFP_FUNCTIONS(H5_DL_FIELD) } zfp_fn;
#define ZFP_SLOT(name) H5_DL_SLOT(zfp_fn, name)
static const h5_dl_sym zfp_syms[] = { ZFP_FUNCTIONS(ZFP_SLOT) { NULL, NULL } };
static h5_dl zfp_lib = {
	.what = "zfp filter", .package = "libzfp1",
	.names = (const char *const[]){ "libzfp.so.1", NULL }, .syms = zfp_syms,
};
#define stream_open (zfp_fn.p_stream_open)
#define stream_close (zfp_fn.p_stream_close)
#define zfp_stream_open (zfp_fn.p_zfp_stream_open)
#define zfp_stream_close (zfp_fn.p_zfp_stream_close)
#define zfp_field_alloc (zfp_fn.p_zfp_field_alloc)
#define zfp_field_free (zfp_fn.p_zfp_field_free)
#define zfp_read_header (zfp_fn.p_zfp_read_header)
#define zfp_stream_rewind (zfp_fn.p_zfp_stream_rewind)
#define zfp_stream_set_bit_stream (zfp_fn.p_zfp_stream_set_bit_stream)
#define zfp_field_type (zfp_fn.p_zfp_field_type)
#define zfp_field_size (zfp_fn.p_zfp_field_size)
#define zfp_stream_maximum_size (zfp_fn.p_zfp_stream_maximum_size)
#define zfp_field_set_pointer (zfp_fn.p_zfp_field_set_pointer)
#define zfp_decompress (zfp_fn.p_zfp_decompress)
#define zfp_compress (zfp_fn.p_zfp_compress)
#define zfp_codec_version (*zfp_fn.p_zfp_codec_version)

/* H5Z_ZFP_CD_NELMTS_MAX: one version word and the header's words */
#define ZFP_CD_MAX 6

/* The zfp codec that wrote the data, as H5Z-ZFP works it out: recorded
 * since H5Z-ZFP 1.1.0, before that inferred from the zfp library version
 * (codec 4 before zfp 0.5, then the library's minor digit, 5 since 1.0). */
static unsigned writer_codec(uint32_t cd0)
{
	unsigned h5z = cd0 & 0xfff, codec = (cd0 >> 12) & 0xf, lib = (cd0 >> 16) << 4;

	if (h5z >= 0x110)
		return codec;
	if (lib < 0x500)
		return 4;
	if (lib < 0x1000)
		return (lib & 0xf00) >> 8;
	return 5;
}

static uint32_t bswap32(uint32_t v)
{
	return __builtin_bswap32(v);
}

/* Read the header in cd[1..] into zs (mode) and fld (type, dimensions).
 * A file from a host of the other byte order has the header's words
 * swapped: H5Z-ZFP retries swapped, and then swaps the decoded values back
 * (*swap), since libhdf5 expects the writer's order. */
static int zfp_header(zfp_stream **zs_out, zfp_field **fld_out, bool *swap, const h5_filter *f)
{
	uint64_t words[4] = { 0 };      /* room for ZFP_HEADER_MAX_BITS, whole words */
	uint32_t cd[ZFP_CD_MAX - 1] = { 0 };
	bitstream *bs = NULL;
	zfp_stream *zs = NULL;
	zfp_field *fld = NULL;
	size_t n = f->ncd - 1;
	int rc = 0;

	*zs_out = NULL;
	*fld_out = NULL;
	*swap = false;
	memcpy(cd, f->cd + 1, n * sizeof(cd[0]));
	memcpy(words, cd, sizeof(cd));
	bs = stream_open(words, sizeof(words));
	zs = bs ? zfp_stream_open(bs) : NULL;
	fld = zfp_field_alloc();
	if (!bs || !zs || !fld) {
		rc = h5_err_set(H5_ERR_NOMEM, "zfp: out of memory");
		goto out;
	}
	if (!zfp_read_header(zs, fld, ZFP_HEADER_MAGIC)) {
		for (size_t i = 0; i < n; i++)
			cd[i] = bswap32(cd[i]);
		memcpy(words, cd, sizeof(cd));
		*swap = true;
		zfp_stream_rewind(zs);
		if (!zfp_read_header(zs, fld, ZFP_HEADER_MAGIC)) {
			rc = h5_err_set(H5_ERR_FORMAT, "zfp: no zfp header in the filter's client values");
			goto out;
		}
	}
	zfp_stream_rewind(zs);
	if (zfp_read_header(zs, fld, ZFP_HEADER_FULL) == 0) {
		rc = h5_err_set(H5_ERR_FORMAT, "zfp: bad zfp header in the filter's client values");
		goto out;
	}
	/* the header's bit stream is done with: chunks get their own */
	zfp_stream_set_bit_stream(zs, NULL);
	*zs_out = zs;
	*fld_out = fld;
	zs = NULL;
	fld = NULL;
out:
	if (fld)
		zfp_field_free(fld);
	if (zs)
		zfp_stream_close(zs);
	if (bs)
		stream_close(bs);
	return rc;
}

static int elem_size(size_t *out, zfp_type t)
{
	switch (t) {
	case zfp_type_int32:
	case zfp_type_float:
		*out = 4;
		return 0;
	case zfp_type_int64:
	case zfp_type_double:
		*out = 8;
		return 0;
	default:
		return h5_err_set(H5_ERR_FORMAT, "zfp: scalar type %d in the header", (int)t);
	}
}

static void swap_values(uint8_t *p, size_t nvals, size_t es)
{
	for (size_t i = 0; i < nvals; i++, p += es)
		for (size_t a = 0, b = es - 1; a < b; a++, b--) {
			uint8_t c = p[a];

			p[a] = p[b];
			p[b] = c;
		}
}

static int dec_zfp(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	zfp_stream *zs = NULL;
	zfp_field *fld = NULL;
	bitstream *bs = NULL;
	uint8_t *in = NULL, *out = NULL;
	size_t es = 0, nvals, maxsz, used;
	uint64_t nbytes;
	bool swap;
	int rc;

	if ((rc = h5_dl_need(&zfp_lib)) < 0)
		return rc;
	if (f->ncd < 2 || f->ncd > ZFP_CD_MAX)
		return h5_err_set(H5_ERR_FORMAT, "zfp: %zu client values (H5Z-ZFP stores 2 to %d)", f->ncd,
				  ZFP_CD_MAX);
	if (writer_codec(f->cd[0]) > zfp_codec_version)
		return h5_err_set(H5_ERR_UNSUPPORTED, "zfp: written with zfp codec %u, this libzfp decodes codec %u",
				  writer_codec(f->cd[0]), zfp_codec_version);
	if ((rc = zfp_header(&zs, &fld, &swap, f)) < 0)
		return rc;
	if ((rc = elem_size(&es, zfp_field_type(fld))) < 0)
		goto out;
	nvals = zfp_field_size(fld, NULL);
	if (nvals == 0 || h5_mul_overflow(nvals, es, &nbytes)) {
		rc = h5_err_set(H5_ERR_FORMAT, "zfp: header gives a field of %zu values", nvals);
		goto out;
	}
	if ((rc = stage_check("zfp", nbytes, st)) < 0)
		goto out;
	/* zfp's decoder reads whole 64-bit words and trusts the stream: it reads
	 * as far as the blocks it decodes say, at most the mode's maximum size.
	 * A shorter chunk (corrupt, or a last word cut) is read from a copy
	 * padded with zeros to that size, so no read leaves the buffer. */
	maxsz = zfp_stream_maximum_size(zs, fld);
	if (maxsz == 0) {
		rc = h5_err_set(H5_ERR_FORMAT, "zfp: header gives no compressed size bound");
		goto out;
	}
	if (*len >= maxsz && ((uintptr_t)*buf & 7) == 0) {
		bs = stream_open(*buf, *len);
	} else if (maxsz > sat_add(sat_add((size_t)nbytes, (size_t)nbytes), 4096)) {
		/* the bound is near the raw size in every real mode; only a header
		 * forcing huge minimum block sizes (expert minbits) makes it larger,
		 * and then a chunk shorter than it cannot be whole: no padded copy
		 * of that size */
		rc = h5_err_set(H5_ERR_FORMAT, "zfp: chunk of %zu bytes, its mode needs up to %zu for %llu bytes",
				*len, maxsz, (unsigned long long)nbytes);
		goto out;
	} else {
		size_t cap = sat_add(maxsz > *len ? maxsz : *len, 8);

		in = cap == SIZE_MAX ? NULL : h5_buf_alloc(cap);
		if (!in) {
			rc = h5_err_set(H5_ERR_NOMEM, "zfp: out of memory");
			goto out;
		}
		memcpy(in, *buf, *len);
		memset(in + *len, 0, cap - *len);
		bs = stream_open(in, cap);
	}
	out = h5_buf_alloc((size_t)nbytes);
	if (!bs || !out) {
		rc = h5_err_set(H5_ERR_NOMEM, "zfp: out of memory");
		goto out;
	}
	zfp_stream_set_bit_stream(zs, bs);
	zfp_stream_rewind(zs);
	zfp_field_set_pointer(fld, out);
	used = zfp_decompress(zs, fld);
	if (used == 0) {
		rc = h5_err_set(H5_ERR_FORMAT, "zfp: decompression failed");
		goto out;
	}
	/* the stream ends on a whole word: 8 bytes past the chunk's end at most */
	if (used > sat_add(*len, 7)) {
		rc = h5_err_set(H5_ERR_FORMAT, "zfp: chunk of %zu bytes truncated: the stream needs %zu", *len, used);
		goto out;
	}
	if (swap)
		swap_values(out, nvals, es);
	swap_buf(buf, len, out, (size_t)nbytes);
	out = NULL;
out:
	if (zs)
		zfp_stream_close(zs);
	if (fld)
		zfp_field_free(fld);
	if (bs)
		stream_close(bs);
	h5_buf_free(in);
	h5_buf_free(out);
	return rc;
}

/* H5Z_filter_zfp's compression: the field and mode from the header in the
 * cd values, the chunk compressed into a buffer of zfp_stream_maximum_size
 * and cut to the stream's size (whole 64-bit words).  A header from a host
 * of the other byte order would need the values swapped first: refused.
 * A codec other than this libzfp's would write a stream the file's readers
 * take for another: refused too. */
/* The stream and field of f's header for encoding, or why this build
 * cannot encode it (H5_ERR_UNSUPPORTED; H5_ERR_NOMEM). */
static int enc_setup(zfp_stream **zs, zfp_field **fld, const h5_filter *f)
{
	bool swap = false;
	int rc;

	*zs = NULL;
	*fld = NULL;
	if ((rc = h5_dl_need(&zfp_lib)) < 0)
		return rc;
	if (f->ncd < 2 || f->ncd > ZFP_CD_MAX)
		return h5_err_set(H5_ERR_UNSUPPORTED, "zfp: %zu client values (H5Z-ZFP stores 2 to %d)", f->ncd,
				  ZFP_CD_MAX);
	if (writer_codec(f->cd[0]) != zfp_codec_version)
		return h5_err_set(H5_ERR_UNSUPPORTED, "zfp: dataset written with zfp codec %u, this libzfp encodes codec %u",
				  writer_codec(f->cd[0]), zfp_codec_version);
	if ((rc = zfp_header(zs, fld, &swap, f)) < 0)
		return rc == H5_ERR_NOMEM ? rc : h5_err_wrap(H5_ERR_UNSUPPORTED, "cannot encode: ");
	if (swap) {
		zfp_stream_close(*zs);
		zfp_field_free(*fld);
		*zs = NULL;
		*fld = NULL;
		return h5_err_set(H5_ERR_UNSUPPORTED, "zfp: header of the other byte order: cannot encode");
	}
	return 0;
}

static int check_zfp(const h5_filter *f)
{
	zfp_stream *zs;
	zfp_field *fld;
	int rc = enc_setup(&zs, &fld, f);

	if (rc == 0) {
		zfp_stream_close(zs);
		zfp_field_free(fld);
	}
	return rc;
}

static int enc_zfp(uint8_t **buf, size_t *len, const h5_filter *f)
{
	zfp_stream *zs = NULL;
	zfp_field *fld = NULL;
	bitstream *bs = NULL;
	uint8_t *out = NULL;
	size_t es = 0, maxsz, got;
	int rc;

	if ((rc = enc_setup(&zs, &fld, f)) < 0)
		return rc;
	if ((rc = elem_size(&es, zfp_field_type(fld))) < 0)
		goto out;
	if (zfp_field_size(fld, NULL) * es != *len) {
		rc = h5_err_set(H5_ERR_FORMAT, "zfp: chunk of %zu bytes, the header's field holds %zu",
				*len, zfp_field_size(fld, NULL) * es);
		goto out;
	}
	maxsz = zfp_stream_maximum_size(zs, fld);
	out = maxsz ? h5_buf_alloc(sat_add(maxsz, 8)) : NULL;
	bs = out ? stream_open(out, maxsz) : NULL;
	if (!bs) {
		rc = h5_err_set(maxsz ? H5_ERR_NOMEM : H5_ERR_FORMAT, "zfp: %s", maxsz ? "out of memory" : "no size bound");
		goto out;
	}
	zfp_stream_set_bit_stream(zs, bs);
	zfp_stream_rewind(zs);
	zfp_field_set_pointer(fld, *buf);
	got = zfp_compress(zs, fld);
	if (got == 0) {
		rc = h5_err_set(H5_ERR_INVAL, "zfp: compression failed");
		goto out;
	}
	swap_buf(buf, len, out, got);
	out = NULL;
out:
	if (zs)
		zfp_stream_close(zs);
	if (fld)
		zfp_field_free(fld);
	if (bs)
		stream_close(bs);
	h5_buf_free(out);
	return rc;
}
#endif

const h5_filter_class h5_filter_zfp = {
	.id = H5_FILTER_ZFP,
	.name = "zfp",
	.size = H5_FSIZE_BOUND,
#ifdef HAVE_ZFP
	.decode = dec_zfp,
	.encode = enc_zfp,
	.encode_check = check_zfp,
#endif
};
