/* test_codecs.c - the LZO (305, filter_lzo.c) and ZFP (32013, filter_zfp.c)
 * decoders through the pipeline (h5_filter_decode). Chunks are encoded here
 * with the codec libraries as PyTables' H5Zlzo.c and H5Z-ZFP encode them
 * (H5Z-ZFP's header written into the client values by zfp_write_header,
 * as its set_local does); tests/integration/test_chunked.py reads files the
 * plugins themselves wrote. Without a library its tests check that the
 * filter is named and refused.
 */
#include "config.h"
#include "testutil.h"
#include "pline.h"
#include "filter.h"

#include <math.h>

#ifdef HAVE_LZO
#include <lzo1x.h>
#endif
#ifdef HAVE_ZFP
#include <zfp.h>
#endif

static h5_pline one_filter(h5_filter *f, uint16_t id, uint32_t *cd, size_t ncd)
{
	h5_pline pl = { .version = 2, .n = 1, .filters = f };

	memset(f, 0, sizeof(*f));
	f->id = id;
	f->cd = cd;
	f->ncd = ncd;
	return pl;
}

/* Decode a copy of (in, n) expecting 'expect' bytes; *out is the result. */
static int decode(uint8_t **out, size_t *out_len, const h5_pline *pl, const void *in, size_t n, size_t expect)
{
	uint8_t *b = malloc(n ? n : 1);
	size_t len = n;
	int rc;

	ck_assert_ptr_nonnull(b);
	memcpy(b, in, n);
	h5_err_clear();
	rc = h5_filter_decode(&b, &len, pl, 0, expect);
	if (rc < 0) {
		free(b);
		b = NULL;
		len = 0;
	}
	*out = b;
	*out_len = len;
	return rc;
}

/* ---- LZO -------------------------------------------------------------------- */

START_TEST(lzo_name)
{
	ck_assert_str_eq(h5_filter_name(305), "lzo");
#ifndef HAVE_LZO
	{
		h5_filter f;
		uint32_t cd[3] = { 5, 11, 4 };
		h5_pline pl = one_filter(&f, 305, cd, 3);
		uint8_t *out;
		size_t len;

		ck_assert(!h5_filter_available(305));
		ck_assert_int_eq(decode(&out, &len, &pl, "abc", 3, 3), H5_ERR_UNSUPPORTED);
	}
#endif
}
END_TEST

#ifdef HAVE_LZO
static void le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

START_TEST(lzo_streams)
{
	enum { N = 20000 };
	static uint8_t raw[N];
	uint8_t *wrk = malloc(LZO1X_1_MEM_COMPRESS), *z = malloc(N + N / 16 + 64 + 3 + 8), *out;
	lzo_uint zlen = N + N / 16 + 64 + 3;
	uint32_t cd[3] = { 5, 11, 4 };   /* PyTables: level, object version, class */
	h5_filter f;
	h5_pline pl = one_filter(&f, 305, cd, 3);
	size_t len;

	ck_assert(lzo_init() == LZO_E_OK);
	ck_assert_ptr_nonnull(wrk);
	ck_assert_ptr_nonnull(z);
	for (size_t i = 0; i < N; i++)
		raw[i] = (uint8_t)(i % 251 < 100 ? i / 7 : i * 13);
	ck_assert_int_eq(lzo1x_1_compress(raw, N, z, &zlen, wrk), LZO_E_OK);

	/* PyTables 0.8 and later: the bare stream */
	ck_assert_int_eq(decode(&out, &len, &pl, z, zlen, N), 0);
	ck_assert_uint_eq(len, N);
	ck_assert(memcmp(out, raw, N) == 0);
	free(out);

	/* a chunk smaller than the stream says: refused, never overrun */
	ck_assert_int_eq(decode(&out, &len, &pl, z, zlen, N - 1), H5_ERR_FORMAT);
	ck_assert_msg(strstr(h5_err_msg(), "bomb"), "%s", h5_err_msg());
	/* cut short, or a byte changed in its middle: an error or other bytes, never a crash */
	ck_assert_int_eq(decode(&out, &len, &pl, z, zlen / 2, N), H5_ERR_FORMAT);
	for (size_t at = 0; at < zlen; at += 97) {
		z[at] ^= 0x5a;
		if (decode(&out, &len, &pl, z, zlen, N) == 0)
			free(out);
		z[at] ^= 0x5a;
	}

	/* PyTables 0.5-0.7: the stream, adler32 of the data, its length */
	le32(z + zlen, lzo_adler32(lzo_adler32(0, NULL, 0), raw, N));
	le32(z + zlen + 4, N);
	ck_assert_int_eq(decode(&out, &len, &pl, z, zlen + 8, N), 0);
	ck_assert(memcmp(out, raw, N) == 0);
	free(out);
	z[zlen] ^= 1;           /* checksum wrong */
	ck_assert_int_eq(decode(&out, &len, &pl, z, zlen + 8, N), H5_ERR_FORMAT);
	ck_assert_msg(strstr(h5_err_msg(), "checksum"), "%s", h5_err_msg());
	z[zlen] ^= 1;
	le32(z + zlen + 4, N + 1);      /* length wrong */
	ck_assert_int_eq(decode(&out, &len, &pl, z, zlen + 8, N), H5_ERR_FORMAT);
	/* 7 stray bytes are no trailer */
	ck_assert_int_eq(decode(&out, &len, &pl, z, zlen + 7, N), H5_ERR_FORMAT);
	free(wrk);
	free(z);
}
END_TEST
#endif

/* ---- ZFP -------------------------------------------------------------------- */

START_TEST(zfp_name)
{
	ck_assert_str_eq(h5_filter_name(32013), "zfp");
#ifndef HAVE_ZFP
	{
		h5_filter f;
		uint32_t cd[4] = { 0x10005110, 0, 0, 0 };
		h5_pline pl = one_filter(&f, 32013, cd, 4);
		uint8_t *out;
		size_t len;

		ck_assert(!h5_filter_available(32013));
		ck_assert_int_eq(decode(&out, &len, &pl, "abcdefgh", 8, 8), H5_ERR_UNSUPPORTED);
	}
#endif
}
END_TEST

#ifdef HAVE_ZFP
enum { ZM_RATE, ZM_PREC, ZM_ACC, ZM_REV, ZM_EXPERT, ZM_PAD };

static void set_mode(zfp_stream *zs, int mode, zfp_type t, unsigned dims)
{
	switch (mode) {
	case ZM_RATE: zfp_stream_set_rate(zs, 12, t, dims, 0); break;
	case ZM_PREC: zfp_stream_set_precision(zs, 18); break;
	case ZM_ACC: zfp_stream_set_accuracy(zs, 1e-3); break;
	case ZM_REV: zfp_stream_set_reversible(zs); break;
	case ZM_EXPERT: zfp_stream_set_params(zs, 16, 900, 40, -1074); break;
	default: zfp_stream_set_params(zs, 4000, 4000, 64, -1074); break;    /* 4000 bits a block, always */
	}
}

static zfp_field *field(void *p, zfp_type t, unsigned dims, const size_t *n)
{
	switch (dims) {
	case 1: return zfp_field_1d(p, t, n[0]);
	case 2: return zfp_field_2d(p, t, n[1], n[0]);
	case 3: return zfp_field_3d(p, t, n[2], n[1], n[0]);
	default: return zfp_field_4d(p, t, n[3], n[2], n[1], n[0]);
	}
}

/* H5Z-ZFP's client values for (mode, type, dims): the version word, then
 * zfp's full header as native 32-bit words; returns their count. */
static size_t zfp_cd(uint32_t *cd, int mode, zfp_type t, unsigned dims, const size_t *n)
{
	uint64_t words[4] = { 0 };
	bitstream *bs = stream_open(words, sizeof(words));
	zfp_stream *zs = zfp_stream_open(bs);
	zfp_field *fld = field(NULL, t, dims, n);
	size_t bits, nw;

	set_mode(zs, mode, t, dims);
	bits = zfp_write_header(zs, fld, ZFP_HEADER_FULL);
	ck_assert_uint_gt(bits, 0);
	zfp_stream_flush(zs);
	nw = (bits + 31) / 32;
	ck_assert_uint_le(nw, 5);
	cd[0] = (uint32_t)ZFP_VERSION << 16 | (uint32_t)zfp_codec_version << 12 | 0x110;
	memcpy(cd + 1, words, nw * 4);
	zfp_field_free(fld);
	zfp_stream_close(zs);
	stream_close(bs);
	return nw + 1;
}

/* Compress (data, n values of t) in mode; *out (malloc) holds the stream and
 * *expect what libzfp's own decoder makes of it. */
static size_t zfp_chunk(uint8_t **out, uint8_t **expect, const void *data, int mode, zfp_type t, unsigned dims,
			const size_t *n, size_t nbytes)
{
	zfp_field *fld = field((void *)data, t, dims, n);
	zfp_stream *zs = zfp_stream_open(NULL);
	size_t cap, used;
	bitstream *bs;

	set_mode(zs, mode, t, dims);
	cap = zfp_stream_maximum_size(zs, fld);
	*out = calloc(1, cap);
	*expect = malloc(nbytes);
	ck_assert_ptr_nonnull(*out);
	ck_assert_ptr_nonnull(*expect);
	bs = stream_open(*out, cap);
	zfp_stream_set_bit_stream(zs, bs);
	used = zfp_compress(zs, fld);
	ck_assert_uint_gt(used, 0);
	zfp_stream_rewind(zs);
	zfp_field_set_pointer(fld, *expect);
	ck_assert_uint_gt(zfp_decompress(zs, fld), 0);
	zfp_field_free(fld);
	zfp_stream_close(zs);
	stream_close(bs);
	return used;
}

START_TEST(zfp_modes)
{
	static const size_t shapes[4][4] = { { 100 }, { 13, 9 }, { 5, 6, 7 }, { 3, 4, 5, 6 } };
	static const zfp_type types[4] = { zfp_type_float, zfp_type_double, zfp_type_int32, zfp_type_int64 };
	static const size_t esize[4] = { 4, 8, 4, 8 };

	for (unsigned dims = 1; dims <= 4; dims++)
		for (int ti = 0; ti < 4; ti++)
			for (int mode = ZM_RATE; mode <= ZM_EXPERT; mode++) {
				const size_t *n = shapes[dims - 1];
				size_t nv = 1, nbytes, zlen, ncd, len;
				uint32_t cd[6];
				uint8_t *data, *z, *want, *out;
				h5_filter f;
				h5_pline pl;

				/* zfp's integer types are compressed with rate, precision or
				 * reversible modes (accuracy is for floats) */
				if (ti >= 2 && (mode == ZM_ACC || mode == ZM_EXPERT))
					continue;
				for (unsigned d = 0; d < dims; d++)
					nv *= n[d];
				nbytes = nv * esize[ti];
				data = malloc(nbytes);
				ck_assert_ptr_nonnull(data);
				for (size_t i = 0; i < nv; i++) {
					double x = sin((double)i / 7) * 100 + (double)(i % 5);

					if (types[ti] == zfp_type_float)
						((float *)data)[i] = (float)x;
					else if (types[ti] == zfp_type_double)
						((double *)data)[i] = x;
					else if (types[ti] == zfp_type_int32)
						((int32_t *)data)[i] = (int32_t)(x * 1000);
					else
						((int64_t *)data)[i] = (int64_t)(x * 100000);
				}
				ncd = zfp_cd(cd, mode, types[ti], dims, n);
				pl = one_filter(&f, 32013, cd, ncd);
				zlen = zfp_chunk(&z, &want, data, mode, types[ti], dims, n, nbytes);
				ck_assert_msg(decode(&out, &len, &pl, z, zlen, nbytes) == 0, "dims %u type %d mode %d: %s",
					      dims, ti, mode, h5_err_msg());
				ck_assert_uint_eq(len, nbytes);
				ck_assert_msg(memcmp(out, want, nbytes) == 0, "dims %u type %d mode %d: bytes differ", dims,
					      ti, mode);
				if (mode == ZM_REV)
					ck_assert_msg(memcmp(out, data, nbytes) == 0, "reversible: not lossless");
				free(out);
				/* the chunk cut short: an error or other values, never a read
				 * past the buffer (the copy is padded; sanitizer builds check) */
				if (decode(&out, &len, &pl, z, zlen / 2, nbytes) == 0)
					free(out);
				/* the dataset's chunk is not the header's field */
				ck_assert_int_eq(decode(&out, &len, &pl, z, zlen, nbytes + esize[ti]), H5_ERR_FORMAT);
				free(data);
				free(z);
				free(want);
			}
}
END_TEST

START_TEST(zfp_bad_values)
{
	static const size_t n[1] = { 64 };
	uint32_t cd[6], bad[6];
	size_t ncd = zfp_cd(cd, ZM_PREC, zfp_type_double, 1, n), len;
	uint8_t chunk[64] = { 0 }, *out;
	h5_filter f;
	h5_pline pl;

	/* too few or too many client values */
	pl = one_filter(&f, 32013, cd, 1);
	ck_assert_int_eq(decode(&out, &len, &pl, chunk, sizeof(chunk), 512), H5_ERR_FORMAT);
	pl = one_filter(&f, 32013, cd, 7);
	ck_assert_int_eq(decode(&out, &len, &pl, chunk, sizeof(chunk), 512), H5_ERR_FORMAT);
	/* no zfp magic */
	memcpy(bad, cd, sizeof(bad));
	bad[1] ^= 0xff;
	pl = one_filter(&f, 32013, bad, ncd);
	ck_assert_int_eq(decode(&out, &len, &pl, chunk, sizeof(chunk), 512), H5_ERR_FORMAT);
	/* written by a newer zfp codec than this libzfp decodes */
	memcpy(bad, cd, sizeof(bad));
	bad[0] = (bad[0] & ~0xf000u) | (uint32_t)(zfp_codec_version + 1) << 12;
	pl = one_filter(&f, 32013, bad, ncd);
	ck_assert_int_eq(decode(&out, &len, &pl, chunk, sizeof(chunk), 512), H5_ERR_UNSUPPORTED);
	/* the header's words from a host of the other byte order: found swapped */
	memcpy(bad, cd, sizeof(bad));
	for (size_t i = 1; i < ncd; i++)
		bad[i] = __builtin_bswap32(bad[i]);
	pl = one_filter(&f, 32013, bad, ncd);
	ck_assert_int_eq(decode(&out, &len, &pl, chunk, sizeof(chunk), 512), 0);
	free(out);
	/* a mode whose blocks take 4000 bits each (16 blocks: 8000 bytes for
	 * 512, and zfp_stream_maximum_size adds a header): a short chunk is
	 * refused, not read through an 8000-byte copy;
	 * one of the full size decodes */
	{
		uint32_t pad[6];
		size_t npad = zfp_cd(pad, ZM_PAD, zfp_type_double, 1, n);
		uint8_t *full = calloc(1, 8192);

		ck_assert_ptr_nonnull(full);
		pl = one_filter(&f, 32013, pad, npad);
		ck_assert_int_eq(decode(&out, &len, &pl, chunk, sizeof(chunk), 512), H5_ERR_FORMAT);
		ck_assert_int_eq(decode(&out, &len, &pl, full, 8192, 512), 0);
		free(out);
		free(full);
	}
	/* an all-zero stream of the right field decodes (to zeros) */
	pl = one_filter(&f, 32013, cd, ncd);
	ck_assert_int_eq(decode(&out, &len, &pl, chunk, sizeof(chunk), 512), 0);
	ck_assert_uint_eq(len, 512);
	free(out);
}
END_TEST
#endif

static Suite *make_suite(void)
{
	Suite *s = suite_create("codecs");
	TCase *tc = tcase_create("codecs");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, lzo_name);
	tcase_add_test(tc, zfp_name);
#ifdef HAVE_LZO
	tcase_add_test(tc, lzo_streams);
#endif
#ifdef HAVE_ZFP
	tcase_add_test(tc, zfp_modes);
	tcase_add_test(tc, zfp_bad_values);
#endif
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
