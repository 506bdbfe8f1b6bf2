/* test_dtypes.c - datatypes other writers produce (issue 21): array types
 * in datatype message version 1 (dtype.c), float layouts and their NumPy
 * type strings (h5_dtype_float_kind, h5_value_typestr), integers wider than
 * 64 bits as decimal text (value.c). Messages are built byte by byte as
 * spec IV.A.2.d lays them out.
 */
#include "config.h"
#include "testutil.h"
#include "dtype.h"
#include "value.h"

#include <float.h>

/* class-and-version byte, the three class bit bytes, the size */
static void head(tbuf *b, unsigned version, unsigned cls, uint32_t bits, uint32_t size)
{
	tb_u8(b, version << 4 | cls);
	tb_u8(b, bits & 0xff);
	tb_u8(b, (bits >> 8) & 0xff);
	tb_u8(b, (bits >> 16) & 0xff);
	tb_u32(b, size);
}

static void dt_int(tbuf *b, uint32_t size, bool sgn, bool be, unsigned off, unsigned prec)
{
	head(b, 1, 0, (be ? 1u : 0u) | (sgn ? 8u : 0u), size);
	tb_u16(b, off);
	tb_u16(b, prec);
}

static void dt_float(tbuf *b, uint32_t size, bool be, unsigned norm, unsigned prec, unsigned sign, unsigned eloc,
		     unsigned esz, unsigned mloc, unsigned msz, uint32_t bias)
{
	head(b, 1, 1, (be ? 1u : 0u) | norm << 4 | sign << 8, size);
	tb_u16(b, 0);
	tb_u16(b, prec);
	tb_u8(b, eloc);
	tb_u8(b, esz);
	tb_u8(b, mloc);
	tb_u8(b, msz);
	tb_u32(b, bias);
}

static h5_dtype *decode(const tbuf *b)
{
	h5_dtype *t = NULL;
	int rc = h5_dtype_decode(&t, b->p, b->len, NULL);

	ck_assert_msg(rc == 0, "dtype decode: %s", h5_err_msg());
	return t;
}

static char *typestr(const h5_dtype *t)
{
	char *s = NULL;

	ck_assert_int_eq(h5_value_typestr(&s, t), 0);
	return s;
}

/* An array of (2, 3) big-endian int16 in datatype version 'version': rank,
 * 3 reserved bytes, dimensions, permutation indices, base type. */
static void dt_array(tbuf *b, unsigned version)
{
	head(b, version, 10, 0, 12);
	tb_u8(b, 2);
	tb_u8(b, 0);
	tb_u8(b, 0);
	tb_u8(b, 0);
	tb_u32(b, 2);
	tb_u32(b, 3);
	tb_u32(b, 0);
	tb_u32(b, 1);
	dt_int(b, 2, true, true, 0, 16);
}

START_TEST(array_version1)
{
	for (unsigned version = 1; version <= 2; version++) {
		tbuf b = { 0 };
		size_t used = 0;
		h5_dtype *t = NULL;
		char *s;

		dt_array(&b, version);
		ck_assert_int_eq(h5_dtype_decode(&t, b.p, b.len, &used), 0);
		ck_assert_uint_eq(used, b.len);
		ck_assert_int_eq(t->cls, H5T_ARRAY);
		ck_assert_uint_eq(t->arank, 2);
		ck_assert_uint_eq(t->adims[0], 2);
		ck_assert_uint_eq(t->adims[1], 3);
		ck_assert_int_eq(t->base->cls, H5T_INTEGER);
		ck_assert(t->base->big_endian);
		s = typestr(t);
		ck_assert_str_eq(s, "|V12");
		free(s);
		h5_dtype_free(t);
		/* cut anywhere: an error, never a read past the end */
		for (size_t cut = 0; cut < b.len; cut++) {
			t = NULL;
			ck_assert_int_lt(h5_dtype_decode(&t, b.p, cut, NULL), 0);
			ck_assert_ptr_null(t);
		}
		tb_free(&b);
	}
}
END_TEST

START_TEST(float_kinds_and_typestr)
{
	static const struct {
		uint32_t size;
		bool be;
		unsigned norm, prec, sign, eloc, esz, mloc, msz;
		uint32_t bias;
		h5_float_kind kind;
		const char *ts;     /* NULL: depends on the machine's long double */
	} v[] = {
		{ 2, false, 2, 16, 15, 10, 5, 0, 10, 15, H5_FLOAT_IEEE, "<f2" },
		{ 4, true, 2, 32, 31, 23, 8, 0, 23, 127, H5_FLOAT_IEEE, ">f4" },
		{ 8, false, 2, 64, 63, 52, 11, 0, 52, 1023, H5_FLOAT_IEEE, "<f8" },
		{ 16, false, 2, 128, 127, 112, 15, 0, 112, 16383, H5_FLOAT_IEEE, NULL },
		{ 16, true, 2, 128, 127, 112, 15, 0, 112, 16383, H5_FLOAT_IEEE, NULL },
		{ 16, false, 0, 80, 79, 64, 15, 0, 64, 16383, H5_FLOAT_X87, NULL },
		/* a 4-byte float with a 7-bit exponent: no NumPy type */
		{ 4, false, 2, 32, 31, 24, 7, 0, 24, 63, H5_FLOAT_OTHER, "|V4" },
		/* IEEE fields but a bias off by one */
		{ 8, false, 2, 64, 63, 52, 11, 0, 52, 1024, H5_FLOAT_OTHER, "|V8" },
		/* HDF5 2.x's bfloat16, FP8 E4M3 and E5M2: no NumPy type of their own */
		{ 2, false, 2, 16, 15, 7, 8, 0, 7, 127, H5_FLOAT_BF16, "|V2" },
		{ 1, false, 2, 8, 7, 3, 4, 0, 3, 7, H5_FLOAT_E4M3, "|V1" },
		{ 1, false, 2, 8, 7, 2, 5, 0, 2, 15, H5_FLOAT_E5M2, "|V1" },
		/* HDF5 2.1's FP6 E2M3, E3M2 and FP4 E2M1 in the low bits of a byte */
		{ 1, false, 2, 6, 5, 3, 2, 0, 3, 1, H5_FLOAT_E2M3, "|V1" },
		{ 1, false, 2, 6, 5, 2, 3, 0, 2, 3, H5_FLOAT_E3M2, "|V1" },
		{ 1, false, 2, 4, 3, 1, 2, 0, 1, 1, H5_FLOAT_E2M1, "|V1" },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		tbuf b = { 0 };
		h5_dtype *t;
		char *s;
		const char *want = v[i].ts;

		dt_float(&b, v[i].size, v[i].be, v[i].norm, v[i].prec, v[i].sign, v[i].eloc, v[i].esz, v[i].mloc,
			 v[i].msz, v[i].bias);
		t = decode(&b);
		ck_assert_msg(h5_dtype_float_kind(t) == v[i].kind, "case %zu: kind %d", i, h5_dtype_float_kind(t));
		s = typestr(t);
		if (!want) {
			/* NumPy's f16 is the C long double: x87 on x86, IEEE quad on aarch64 */
			bool native = sizeof(long double) == 16 &&
				      ((LDBL_MANT_DIG == 64 && v[i].kind == H5_FLOAT_X87) ||
				       (LDBL_MANT_DIG == 113 && v[i].kind == H5_FLOAT_IEEE));
			want = native ? (v[i].be ? ">f16" : "<f16") : "|V16";
		}
		ck_assert_msg(strcmp(s, want) == 0, "case %zu: typestr %s, expected %s", i, s, want);
		free(s);
		h5_dtype_free(t);
		tb_free(&b);
	}
}
END_TEST

static char *text(const h5_dtype *t, const uint8_t *data, size_t len, uint64_t n)
{
	char *txt = NULL;
	size_t tl = 0;
	int rc = h5_value_text(&txt, &tl, NULL, t, data, len, n);

	ck_assert_msg(rc == 0, "h5_value_text: %s", h5_err_msg());
	ck_assert_uint_eq(tl, strlen(txt));
	return txt;
}

/* v (two's complement, lo/hi 64-bit halves) as 16 bytes in the byte order */
static void put128(uint8_t *p, uint64_t lo, uint64_t hi, bool be)
{
	for (unsigned i = 0; i < 16; i++) {
		uint8_t byte = (uint8_t)((i < 8 ? lo >> (8 * i) : hi >> (8 * (i - 8))) & 0xff);

		p[be ? 15 - i : i] = byte;
	}
}

START_TEST(wide_integers_decimal)
{
	static const struct {
		uint64_t lo, hi;
		const char *s, *u;      /* as signed, as unsigned */
	} v[] = {
		{ 0, 0, "0", "0" },
		{ 1, 0, "1", "1" },
		{ UINT64_MAX, UINT64_MAX, "-1", "340282366920938463463374607431768211455" },
		{ 0, 1, "18446744073709551616", "18446744073709551616" },
		{ 0, 0x8000000000000000ull, "-170141183460469231731687303715884105728",
		  "170141183460469231731687303715884105728" },
		{ UINT64_MAX, 0x7fffffffffffffffull, "170141183460469231731687303715884105727",
		  "170141183460469231731687303715884105727" },
		/* 12345678901234567890123456789 = 0x27e41b3246bec9b16e398115 */
		{ 0x46bec9b16e398115ull, 0x27e41b32ull, "12345678901234567890123456789",
		  "12345678901234567890123456789" },
		/* 1000000000 * 2^64: a zero nine-digit group in the middle */
		{ 0, 1000000000ull, "18446744073709551616000000000", "18446744073709551616000000000" },
	};

	for (int be = 0; be <= 1; be++)
		for (int sgn = 0; sgn <= 1; sgn++) {
			tbuf b = { 0 };
			uint8_t data[16 * 8];
			size_t n = sizeof(v) / sizeof(v[0]);
			char want[1024] = "", *got;
			h5_dtype *t;

			dt_int(&b, 16, sgn, be, 0, 128);
			t = decode(&b);
			for (size_t i = 0; i < n; i++) {
				put128(data + 16 * i, v[i].lo, v[i].hi, be);
				if (i)
					strcat(want, ", ");
				strcat(want, sgn ? v[i].s : v[i].u);
			}
			got = text(t, data, sizeof(data), n);
			ck_assert_msg(strcmp(got, want) == 0, "be %d signed %d: %s", be, sgn, got);
			free(got);
			h5_dtype_free(t);
			tb_free(&b);
		}
}
END_TEST

START_TEST(wide_integers_offset_and_width)
{
	tbuf b = { 0 };
	uint8_t data[16] = { 0 };
	h5_dtype *t;
	char *got;

	/* 100 bits at offset 12 of 16 bytes, signed: -1 and the bits around set */
	dt_int(&b, 16, true, false, 12, 100);
	t = decode(&b);
	memset(data, 0xff, sizeof(data));
	got = text(t, data, sizeof(data), 1);
	ck_assert_str_eq(got, "-1");
	free(got);
	/* the top of the 100 bits clear, the rest set: 2^99 - 1 */
	data[13] = 0x7f;        /* bit 111 = 12 + 99: byte 13, bit 7 */
	got = text(t, data, sizeof(data), 1);
	ck_assert_str_eq(got, "633825300114114700748351602687");
	free(got);
	h5_dtype_free(t);
	tb_free(&b);

	/* the same in a 32-byte big-endian element: bit 111 is in byte 31 - 13 */
	{
		tbuf be = { 0 };
		uint8_t d32[32];

		dt_int(&be, 32, true, true, 12, 100);
		t = decode(&be);
		memset(d32, 0xff, sizeof(d32));
		d32[18] = 0x7f;
		got = text(t, d32, sizeof(d32), 1);
		ck_assert_str_eq(got, "633825300114114700748351602687");
		free(got);
		h5_dtype_free(t);
		tb_free(&be);
	}

	/* the widest precision a message can hold (65535 bits): 2^65535 - 1 has
	 * 19729 digits (Python's str gives its ends) */
	{
		tbuf w = { 0 };
		uint8_t *big = malloc(8192);

		ck_assert_ptr_nonnull(big);
		dt_int(&w, 8192, false, false, 0, 65535);
		t = decode(&w);
		memset(big, 0xff, 8192);
		got = text(t, big, 8192, 1);
		ck_assert_uint_eq(strlen(got), 19729);
		ck_assert(strncmp(got, "1001764965203423232489", 22) == 0);
		ck_assert_str_eq(got + 19729 - 6, "578367");
		free(got);
		h5_dtype_free(t);
		tb_free(&w);
		free(big);
	}
}
END_TEST

/* A compound {a: int32 at 0, b: float64 at 4} of datatype message version v
 * (3 or 5: HDF5 2.x writes 5 under libver latest, packed as 3 is). */
static void dt_compound_packed(tbuf *b, unsigned v)
{
	head(b, v, 6, 2, 12);
	tb_put(b, "a", 2);
	tb_u8(b, 0);
	dt_int(b, 4, true, false, 0, 32);
	tb_put(b, "b", 2);
	tb_u8(b, 4);
	dt_float(b, 8, false, 2, 64, 63, 52, 11, 0, 52, 1023);
}

START_TEST(version5_compound)
{
	tbuf b = { 0 };
	h5_dtype *t;
	size_t used = 0;

	dt_compound_packed(&b, 5);
	ck_assert_int_eq(h5_dtype_decode(&t, b.p, b.len, &used), 0);
	ck_assert_uint_eq(used, b.len);
	ck_assert_int_eq(t->cls, H5T_COMPOUND);
	ck_assert_uint_eq(t->nmembers, 2);
	ck_assert_str_eq(t->members[1].name, "b");
	ck_assert_uint_eq(t->members[1].offset, 4);
	ck_assert_uint_eq(t->members[1].type->size, 8);
	h5_dtype_free(t);
	tb_free(&b);
	/* version 6 is not defined */
	b = (tbuf){ 0 };
	dt_compound_packed(&b, 6);
	ck_assert_int_lt(h5_dtype_decode(&t, b.p, b.len, NULL), 0);
	tb_free(&b);
}
END_TEST

/* Class 11 of version v, bits (bit 0 homogeneous, bits 1-2 form), parts of
 * psize bytes (IEEE binary16/32/64). */
static void dt_complex(tbuf *b, unsigned v, uint32_t bits, unsigned psize, bool be)
{
	head(b, v, 11, bits, 2 * psize);
	if (psize == 2)
		dt_float(b, 2, be, 2, 16, 15, 10, 5, 0, 10, 15);
	else if (psize == 4)
		dt_float(b, 4, be, 2, 32, 31, 23, 8, 0, 23, 127);
	else
		dt_float(b, 8, be, 2, 64, 63, 52, 11, 0, 52, 1023);
}

START_TEST(complex_class)
{
	static const struct {
		unsigned psize;
		bool be;
		const char *ts;
	} v[] = { { 4, false, "<c8" }, { 8, false, "<c16" }, { 8, true, ">c16" }, { 2, false, "|V4" } };

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		tbuf b = { 0 };
		h5_dtype *t;
		char *s;

		dt_complex(&b, 5, 1, v[i].psize, v[i].be);
		t = decode(&b);
		ck_assert_int_eq(t->cls, H5T_COMPLEX);
		ck_assert_uint_eq(t->base->size, v[i].psize);
		s = typestr(t);
		ck_assert_msg(strcmp(s, v[i].ts) == 0, "case %zu: typestr %s, expected %s", i, s, v[i].ts);
		free(s);
		h5_dtype_free(t);
		tb_free(&b);
	}
	/* values: (1.5-2.0j), (0.0+0.25j) as complex64 (floats as value.c writes them) */
	{
		tbuf b = { 0 };
		h5_dtype *t;
		float f[4] = { 1.5f, -2.0f, 0.0f, 0.25f };
		uint8_t data[16];
		char *txt;

		memcpy(data, f, sizeof(data));
		dt_complex(&b, 5, 1, 4, false);
		t = decode(&b);
		txt = text(t, data, sizeof(data), 2);
		ck_assert_str_eq(txt, "(1.5-2.0j), (0.0+0.25j)");
		free(txt);
		h5_dtype_free(t);
		tb_free(&b);
	}
	/* the forms HDF5 2.x does not write are refused, saying which */
	for (unsigned form = 1; form <= 3; form++) {
		tbuf b = { 0 };
		h5_dtype *t = NULL;

		dt_complex(&b, 5, 1 | form << 1, 8, false);
		ck_assert_int_eq(h5_dtype_decode(&t, b.p, b.len, NULL), H5_ERR_UNSUPPORTED);
		ck_assert_ptr_nonnull(strstr(h5_err_msg(), form == 1 ? "polar" : form == 2 ? "exponential" : "reserved"));
		tb_free(&b);
	}
	{
		tbuf b = { 0 };
		h5_dtype *t = NULL;

		/* heterogeneous; version 4 */
		dt_complex(&b, 5, 0, 8, false);
		ck_assert_int_eq(h5_dtype_decode(&t, b.p, b.len, NULL), H5_ERR_UNSUPPORTED);
		tb_free(&b);
		b = (tbuf){ 0 };
		dt_complex(&b, 4, 1, 8, false);
		ck_assert_int_eq(h5_dtype_decode(&t, b.p, b.len, NULL), H5_ERR_FORMAT);
		tb_free(&b);
	}
}
END_TEST

START_TEST(small_float_values)
{
	tbuf b = { 0 };
	h5_dtype *t;
	char *txt;
	/* bfloat16 1.0, -2.5 (0x3f80, 0xc020) */
	uint8_t bf[4] = { 0x80, 0x3f, 0x20, 0xc0 };
	/* E4M3: 448 (0x7e, its largest; written shortest for 4 significant bits, as
	 * NumPy writes float16 65504 as 65500.0), NaN (0x7f), 1.0 (0x38), -0.125 (0xa0) */
	uint8_t e4[4] = { 0x7e, 0x7f, 0x38, 0xa0 };
	/* E5M2: 1.0 (0x3c), inf (0x7c), 57344 (0x7b, shortest: 60000.0) */
	uint8_t e5[3] = { 0x3c, 0x7c, 0x7b };

	dt_float(&b, 2, false, 2, 16, 15, 7, 8, 0, 7, 127);
	t = decode(&b);
	txt = text(t, bf, sizeof(bf), 2);
	ck_assert_str_eq(txt, "1.0, -2.5");
	free(txt);
	h5_dtype_free(t);
	tb_free(&b);

	b = (tbuf){ 0 };
	dt_float(&b, 1, false, 2, 8, 7, 3, 4, 0, 3, 7);
	t = decode(&b);
	txt = text(t, e4, sizeof(e4), 4);
	ck_assert_str_eq(txt, "450.0, nan, 1.0, -0.125");
	free(txt);
	h5_dtype_free(t);
	tb_free(&b);

	/* (shortest text that reads back as the value, as for every float)
	 * FP6 E2M3: 7.5 (0x1f, its largest), -7.5, 0.125 (subnormal); E3M2: 28
	 * (0x1f), 0.0625 (0x01); FP4 E2M1: 6 (0x7), -6, 0.5: no inf, no NaN */
	{
		static const struct {
			unsigned prec, sign, eloc, esz, msz, bias;
			uint8_t v[3];
			const char *want;
		} f[] = {
			{ 6, 5, 3, 2, 3, 1, { 0x1f, 0x3f, 0x01 }, "7.5, -7.5, 0.1" }, /* 0.1 reads back as 0.125 */
			{ 6, 5, 2, 3, 2, 3, { 0x1f, 0x01, 0x00 }, "28.0, 0.06, 0.0" },
			{ 4, 3, 1, 2, 1, 1, { 0x07, 0x0f, 0x01 }, "6.0, -6.0, 0.5" },
		};

		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
			b = (tbuf){ 0 };
			dt_float(&b, 1, false, 2, f[i].prec, f[i].sign, f[i].eloc, f[i].esz, 0, f[i].msz, f[i].bias);
			t = decode(&b);
			txt = text(t, f[i].v, 3, 3);
			ck_assert_msg(strcmp(txt, f[i].want) == 0, "case %zu: %s, expected %s", i, txt, f[i].want);
			free(txt);
			h5_dtype_free(t);
			tb_free(&b);
		}
	}

	b = (tbuf){ 0 };
	dt_float(&b, 1, false, 2, 8, 7, 2, 5, 0, 2, 15);
	t = decode(&b);
	txt = text(t, e5, sizeof(e5), 3);
	ck_assert_str_eq(txt, "1.0, inf, 60000.0");
	free(txt);
	h5_dtype_free(t);
	tb_free(&b);
}
END_TEST

/* A cell of text (NAME.csv written, issue 83 item 4) parsed in its type:
 * what h5_value_text shows reads back to the same bytes; a string is
 * taken verbatim and padded as its type says, too long or holding a NUL
 * refused; numbers as attributes parse them (white space around them). */
static int cell(uint8_t *out, const uint8_t *enc, size_t len, const char *text, size_t n)
{
	h5_dtype *t = NULL;
	int rc;

	ck_assert_int_eq(h5_dtype_decode(&t, enc, len, NULL), 0);
	memset(out, 0xee, 16);
	rc = h5_value_parse_cell(out, t, text, n);
	h5_dtype_free(t);
	return rc;
}

START_TEST(text_cells)
{
	uint8_t enc[64], out[16];
	size_t len;

	/* null-padded S8 (h5py's bytes) */
	ck_assert_int_eq(h5_dtype_encode_fstr(enc, &len, 8, 1, 0), 0);
	ck_assert_int_eq(cell(out, enc, len, " a,b", 4), 0);
	ck_assert_mem_eq(out, " a,b\0\0\0\0", 8);
	ck_assert_int_eq(cell(out, enc, len, "12345678", 8), 0);
	ck_assert_mem_eq(out, "12345678", 8);
	ck_assert_uint_eq(out[8], 0xee);        /* nothing past the element */
	ck_assert_int_eq(cell(out, enc, len, "123456789", 9), H5_ERR_INVAL);
	ck_assert_int_eq(cell(out, enc, len, "a\0b", 3), H5_ERR_INVAL);
	/* null-terminated: its NUL must fit */
	ck_assert_int_eq(h5_dtype_encode_fstr(enc, &len, 4, 0, 0), 0);
	ck_assert_int_eq(cell(out, enc, len, "abc", 3), 0);
	ck_assert_mem_eq(out, "abc\0", 4);
	ck_assert_int_eq(cell(out, enc, len, "abcd", 4), H5_ERR_INVAL);
	/* space-padded */
	ck_assert_int_eq(h5_dtype_encode_fstr(enc, &len, 5, 2, 0), 0);
	ck_assert_int_eq(cell(out, enc, len, "ab", 2), 0);
	ck_assert_mem_eq(out, "ab   ", 5);
	/* numbers: the attribute rules, one element */
	ck_assert_int_eq(h5_dtype_encode_number(enc, &len, 'i', 2, true), 0);
	ck_assert_int_eq(cell(out, enc, len, " -2 ", 4), 0);
	ck_assert_mem_eq(out, "\xff\xfe", 2);
	ck_assert_int_eq(cell(out, enc, len, "40000", 5), H5_ERR_INVAL);
	ck_assert_int_eq(cell(out, enc, len, "1.5", 3), H5_ERR_INVAL);
	ck_assert_int_eq(cell(out, enc, len, "", 0), H5_ERR_INVAL);
	ck_assert_int_eq(h5_dtype_encode_number(enc, &len, 'f', 4, false), 0);
	ck_assert_int_eq(cell(out, enc, len, "1e39", 4), H5_ERR_INVAL);
	ck_assert_int_eq(cell(out, enc, len, "0.5", 3), 0);
	ck_assert_mem_eq(out, "\0\0\0\x3f", 4);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("dtypes");
	TCase *tc = tcase_create("dtypes");

	tcase_add_test(tc, array_version1);
	tcase_add_test(tc, float_kinds_and_typestr);
	tcase_add_test(tc, wide_integers_decimal);
	tcase_add_test(tc, wide_integers_offset_and_width);
	tcase_add_test(tc, version5_compound);
	tcase_add_test(tc, complex_class);
	tcase_add_test(tc, small_float_values);
	tcase_add_test(tc, text_cells);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
