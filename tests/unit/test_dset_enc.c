/* test_dset_enc.c - the messages of a new dataset (format/dset_enc.c)
 * against the bytes h5py 3 / libhdf5 1.10 wrote for the same datasets
 * (dumped from its object headers: np.arange(10, '<f8') contiguous,
 * '<i4' chunks (5,) maxshape (None,), '<u2' chunks (5,) gzip + shuffle,
 * bool and complex128 of 3, a growable uint8 with chunks=True), decoded
 * back by the readers, and h5py's guess_chunk. */
#include "testutil.h"
#include "dset_enc.h"
#include "dspace.h"
#include "dtype.h"
#include "fillval.h"
#include "pline.h"
#include "layout.h"

static const h5_fmt FMT = { 8, 8 };

static size_t unhex(uint8_t *out, const char *hex)
{
	size_t n = 0;

	for (; hex[0] && hex[1]; hex += 2) {
		unsigned v;

		sscanf(hex, "%2x", &v);
		out[n++] = (uint8_t)v;
	}
	return n;
}

static void same(const uint8_t *got, size_t len, const char *hex)
{
	uint8_t want[512];
	size_t n = unhex(want, hex);

	ck_assert_uint_eq(len, n);
	ck_assert_msg(memcmp(got, want, n) == 0, "bytes differ from h5py's %s", hex);
}

START_TEST(enc_dspace)
{
	uint8_t b[256];
	size_t n;
	uint64_t d10 = 10, unl = H5_UNLIMITED, d3 = 3;
	h5_dspace s;

	ck_assert_int_eq(h5_enc_dspace(b, &n, sizeof(b), &FMT, 1, &d10, NULL), 0);
	same(b, n, "01010100000000000a000000000000000a00000000000000");
	ck_assert_int_eq(h5_enc_dspace(b, &n, sizeof(b), &FMT, 1, &d10, &unl), 0);
	same(b, n, "01010100000000000a00000000000000ffffffffffffffff");
	ck_assert_int_eq(h5_dspace_decode(&s, &FMT, b, n), 0);
	ck_assert_uint_eq(s.rank, 1);
	ck_assert_uint_eq(s.dims[0], 10);
	ck_assert(s.maxdims[0] == H5_UNLIMITED);
	ck_assert_int_eq(h5_enc_dspace(b, &n, sizeof(b), &FMT, 1, &d3, NULL), 0);
	same(b, n, "010101000000000003000000000000000300000000000000");
	ck_assert_int_eq(h5_enc_dspace(b, &n, 10, &FMT, 1, &d3, NULL), H5_ERR_RANGE);
}
END_TEST

START_TEST(enc_dtype)
{
	static const struct {
		char kind;
		unsigned size;
		bool be;
		const char *hex;
	} v[] = {
		{ 'f', 8, false, "11203f000800000000004000340b0034ff030000" },
		{ 'i', 4, false, "100800000400000000002000" },
		{ 'u', 2, false, "100000000200000000001000" },
		{ 'u', 1, false, "100000000100000000000800" },
		{ 'b', 1, false, "180200000100000010080000010000000000080046414c5345000000545255450000000000010000" },
		{ 'c', 16, false, "16020000100000007200000000000000000000000000000000000000000000000000000000000000"
				  "000000000000000011203f000800000000004000340b0034ff030000690000000000000008000000"
				  "0000000000000000000000000000000000000000000000000000000011203f000800000000004000"
				  "340b0034ff030000" },
	};
	uint8_t b[512];
	size_t n;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		h5_dtype *t = NULL;
		size_t used = 0;

		ck_assert_int_eq(h5_enc_dtype(b, &n, sizeof(b), v[i].kind, v[i].size, v[i].be), 0);
		/* the bool enum ends in its two values; h5py's message pads to 8 */
		if (v[i].kind == 'b') {
			uint8_t want[64];
			size_t wn = unhex(want, v[i].hex);

			ck_assert_uint_le(n, wn);
			ck_assert(memcmp(b, want, n) == 0);
		} else {
			same(b, n, v[i].hex);
		}
		ck_assert_int_eq(h5_dtype_decode(&t, b, n, &used), 0);
		ck_assert_uint_eq(t->size, v[i].size);
		ck_assert_uint_eq(used, n);
		h5_dtype_free(t);
	}
	/* big-endian: byte order bit */
	ck_assert_int_eq(h5_enc_dtype(b, &n, sizeof(b), 'f', 4, true), 0);
	ck_assert_uint_eq(b[1] & 1, 1);
	ck_assert_int_eq(h5_enc_dtype(b, &n, sizeof(b), 'f', 16, false), H5_ERR_INVAL);
	ck_assert_int_eq(h5_enc_dtype(b, &n, sizeof(b), 'i', 3, false), H5_ERR_INVAL);
	ck_assert_int_eq(h5_enc_dtype(b, &n, 8, 'f', 8, false), H5_ERR_RANGE);
}
END_TEST

START_TEST(enc_fill_pline)
{
	uint8_t b[256];
	size_t n;
	h5_fill fv;
	h5_pline pl;
	h5_enc_filters zf = { .shuffle = true, .deflate = 4, .elem_size = 2 };
	h5_enc_filters all = { .shuffle = true, .deflate = 9, .fletcher32 = true, .elem_size = 8 };

	ck_assert_int_eq(h5_enc_fill_default(b, &n, sizeof(b), false), 0);
	same(b, n, "0202020100000000");
	ck_assert_int_eq(h5_enc_fill_default(b, &n, sizeof(b), true), 0);
	same(b, n, "0203000100000000");
	ck_assert_int_eq(h5_fill_decode(&fv, 0x0005, b, n), 0);
	ck_assert_uint_eq(fv.alloc_time, 3);
	h5_fill_clear(&fv);
	ck_assert_int_eq(h5_enc_pline(b, &n, sizeof(b), &zf), 0);
	same(b, n, "0102000000000000020008000100010073687566666c6500020000000000000001000800010001006465666c61"
		   "7465000400000000000000");
	ck_assert_int_eq(h5_enc_pline(b, &n, sizeof(b), &all), 0);
	ck_assert_int_eq(h5_pline_decode(&pl, b, n), 0);
	ck_assert_uint_eq(pl.n, 3);
	ck_assert_uint_eq(pl.filters[0].id, 2);
	ck_assert_uint_eq(pl.filters[1].id, 1);
	ck_assert_uint_eq(pl.filters[2].id, 3);
	h5_pline_clear(&pl);
}
END_TEST

START_TEST(enc_layout)
{
	uint8_t b[256];
	size_t n;
	uint64_t c5 = 5, c100 = 100;
	h5_layout l;

	ck_assert_int_eq(h5_enc_layout(b, &n, sizeof(b), &FMT, 1, NULL, 8, 0x800, 80), 0);
	same(b, n, "030100080000000000005000000000000000");
	ck_assert_int_eq(h5_enc_layout(b, &n, sizeof(b), &FMT, 1, &c5, 4, 0x1000, 0), 0);
	same(b, n, "03020200100000000000000500000004000000");
	ck_assert_int_eq(h5_enc_layout(b, &n, sizeof(b), &FMT, 1, &c100, 1, H5_ADDR_UNDEF, 0), 0);
	same(b, n, "030202ffffffffffffffff6400000001000000");
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(h5_layout_decode(&l, &FMT, b, n), 0);
	ck_assert_uint_eq(l.cls, 2);
	ck_assert_uint_eq(l.chunk[0], 100);
	ck_assert(!h5_addr_defined(l.idx_addr));
	h5_layout_clear(&l);
}
END_TEST

/* NumPy descrs as np.save writes them (dtype_descr.c): decoded back by
 * the reader, members at their offsets, arrays as version 2, what h5py
 * cannot store refused. */
START_TEST(enc_dtype_descr)
{
	static const char st[] = "[('i', '<i4'), ('f', '>f8'), ('s', '|S3'), ('b', '|b1'), ('', '|V1'), "
				 "('c', '<c16'), ('arr', '<i2', (2, 3)), ('sub', [('x', '<f4'), ('y', '|u1')])]";
	uint8_t buf[4096];
	size_t len = 0, isz = 0, used = 0;
	h5_dtype *t = NULL;

	ck_assert_int_eq(h5_enc_dtype_descr(buf, &len, sizeof(buf), &isz, st, strlen(st)), 0);
	ck_assert_uint_eq(isz, 4 + 8 + 3 + 1 + 1 + 16 + 12 + 5);
	ck_assert_int_eq(h5_dtype_decode(&t, buf, len, &used), 0);
	ck_assert_uint_eq(used, len);
	ck_assert_int_eq(t->cls, H5T_COMPOUND);
	ck_assert_uint_eq(t->version, 2);       /* an array member */
	ck_assert_uint_eq(t->size, isz);
	ck_assert_uint_eq(t->nmembers, 7);      /* the padding is no member */
	ck_assert_str_eq(t->members[1].name, "f");
	ck_assert(t->members[1].type->big_endian);
	ck_assert_uint_eq(t->members[2].type->cls, H5T_STRING);
	ck_assert_uint_eq(t->members[2].type->str_pad, 1);
	ck_assert_uint_eq(t->members[3].type->cls, H5T_ENUM);
	ck_assert_uint_eq(t->members[4].offset, 17);
	ck_assert_uint_eq(t->members[4].type->cls, H5T_COMPOUND);
	ck_assert_uint_eq(t->members[5].type->cls, H5T_ARRAY);
	ck_assert_uint_eq(t->members[5].type->arank, 2);
	ck_assert_uint_eq(t->members[5].type->adims[1], 3);
	ck_assert_uint_eq(t->members[5].type->size, 12);
	ck_assert_uint_eq(t->members[6].offset, 45);
	ck_assert_uint_eq(t->members[6].type->size, 5);
	h5_dtype_free(t);
	t = NULL;
	/* no array: version 1, as libhdf5 writes it */
	ck_assert_int_eq(h5_enc_dtype_descr(buf, &len, sizeof(buf), &isz, "[('a', '<u2')]", 14), 0);
	ck_assert_int_eq(h5_dtype_decode(&t, buf, len, NULL), 0);
	ck_assert_uint_eq(t->version, 1);
	ck_assert_uint_eq(t->size, 2);
	h5_dtype_free(t);
	ck_assert_int_eq(h5_enc_dtype_descr(buf, &len, sizeof(buf), &isz, "'|S7'", 5), 0);
	ck_assert_uint_eq(isz, 7);
	for (unsigned i = 0; i < 4; i++) {
		static const char *const bad[] = { "'|O'", "'<M8[s]'", "[('a', '|O')]", "'<f16'" };

		ck_assert_int_eq(h5_enc_dtype_descr(buf, &len, sizeof(buf), &isz, bad[i], strlen(bad[i])),
				 H5_ERR_UNSUPPORTED);
		h5_err_clear();
	}
}
END_TEST

START_TEST(enc_guess_chunk)
{
	static const struct {
		unsigned rank;
		uint64_t dims[3];
		size_t es;
		uint64_t want[3];
	} v[] = {
		{ 1, { 100 }, 1, { 100 } },
		{ 1, { 1000000 }, 8, { 3907 } },
		{ 1, { 0 }, 1, { 1024 } },
		{ 2, { 3000, 4000 }, 4, { 94, 125 } },
		{ 3, { 10, 20, 30 }, 2, { 10, 20, 30 } },
		{ 1, { 1u << 30 }, 1, { 131072 } },
		{ 1, { 7 }, 16, { 7 } },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint64_t c[3];

		h5_enc_guess_chunk(c, v[i].rank, v[i].dims, v[i].es);
		for (unsigned d = 0; d < v[i].rank; d++)
			ck_assert_uint_eq(c[d], v[i].want[d]);
	}
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("dset_enc");
	TCase *tc = tcase_create("dset_enc");

	tcase_add_test(tc, enc_dspace);
	tcase_add_test(tc, enc_dtype);
	tcase_add_test(tc, enc_fill_pline);
	tcase_add_test(tc, enc_layout);
	tcase_add_test(tc, enc_guess_chunk);
	tcase_add_test(tc, enc_dtype_descr);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
