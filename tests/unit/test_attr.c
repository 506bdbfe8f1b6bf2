/* test_attr.c - attribute messages (IV.A.2.m), attribute storage and the
 * xattr mapping (attr.c), and the text encoding of values (value.c). */
#include "testutil.h"
#include "xattrs.h"
#include "base.h"
#include "rd.h"
#include "file.h"
#include "dspace.h"
#include "dtype.h"
#include "attr.h"
#include "value.h"
#include "fltdig.h"
#include "dataset.h"

#include <float.h>
#include <math.h>
#include <sys/wait.h>
#include <unistd.h>

static const h5_fmt fmt8 = { 8, 8 };

/* ---- builders for datatype and dataspace messages ------------------------ */

static void dt_int(tbuf *b, unsigned size, bool is_signed, bool be, unsigned off, unsigned prec)
{
	tb_u8(b, 0x10 | H5T_INTEGER);
	tb_u8(b, (be ? 0x01 : 0) | (is_signed ? 0x08 : 0));
	tb_u16(b, 0);
	tb_u32(b, size);
	tb_u16(b, (uint16_t)off);
	tb_u16(b, (uint16_t)prec);
}

/* IEEE float of 2, 4 or 8 bytes. */
static void dt_float(tbuf *b, unsigned size, bool be)
{
	unsigned esz = size == 2 ? 5 : size == 4 ? 8 : 11, msz = size * 8 - 1 - esz;

	tb_u8(b, 0x10 | H5T_FLOAT);
	tb_u8(b, (be ? 0x01 : 0) | 0x20);      /* implied leading one */
	tb_u8(b, (uint8_t)(size * 8 - 1));     /* sign location */
	tb_u8(b, 0);
	tb_u32(b, size);
	tb_u16(b, 0);
	tb_u16(b, (uint16_t)(size * 8));
	tb_u8(b, (uint8_t)msz);
	tb_u8(b, (uint8_t)esz);
	tb_u8(b, 0);
	tb_u8(b, (uint8_t)msz);
	tb_u32(b, (1u << (esz - 1)) - 1);
}

static void dt_string(tbuf *b, unsigned size, unsigned pad)
{
	tb_u8(b, 0x10 | H5T_STRING);
	tb_u8(b, (uint8_t)pad);
	tb_u16(b, 0);
	tb_u32(b, size);
}

/* Dataspace message version 1 (rank 1 unless dim is 0: scalar-as-rank-0). */
static void ds_v1(tbuf *b, unsigned rank, const uint64_t *dims)
{
	tb_u8(b, 1);
	tb_u8(b, (uint8_t)rank);
	tb_u8(b, 0);
	tb_u8(b, 0);
	tb_u32(b, 0);
	for (unsigned i = 0; i < rank; i++)
		tb_u64(b, dims[i]);
}

static void ds_v2(tbuf *b, unsigned type, unsigned rank, const uint64_t *dims)
{
	tb_u8(b, 2);
	tb_u8(b, (uint8_t)rank);
	tb_u8(b, 0);
	tb_u8(b, (uint8_t)type);
	for (unsigned i = 0; i < rank; i++)
		tb_u64(b, dims[i]);
}

static void pad_to8(tbuf *b, size_t from)
{
	while ((b->len - from) % 8)
		tb_u8(b, 0);
}

static h5_dtype *mk_dtype(const tbuf *b)
{
	h5_dtype *t = NULL;
	int rc = h5_dtype_decode(&t, b->p, b->len, NULL);

	ck_assert_msg(rc == 0, "dtype decode: %s", h5_err_msg());
	return t;
}

/* Attribute message: name "temp", int32 LE, 3 elements {1, -2, 70000}. */
static void build_attr(tbuf *m, unsigned version, size_t *data_off)
{
	tbuf dt = { 0 }, ds = { 0 };
	uint64_t dims[1] = { 3 };
	const char *name = "temp";
	size_t start;

	dt_int(&dt, 4, true, false, 0, 32);
	if (version == 1)
		ds_v1(&ds, 1, dims);
	else
		ds_v2(&ds, 1, 1, dims);
	tb_u8(m, (uint8_t)version);
	tb_u8(m, 0);
	tb_u16(m, (uint16_t)(strlen(name) + 1));
	tb_u16(m, (uint16_t)dt.len);
	tb_u16(m, (uint16_t)ds.len);
	if (version == 3)
		tb_u8(m, 1); /* UTF-8 */
	start = m->len;
	tb_put(m, name, strlen(name) + 1);
	if (version == 1)
		pad_to8(m, start);
	start = m->len;
	tb_put(m, dt.p, dt.len);
	if (version == 1)
		pad_to8(m, start);
	start = m->len;
	tb_put(m, ds.p, ds.len);
	if (version == 1)
		pad_to8(m, start);
	*data_off = m->len;
	tb_u32(m, 1);
	tb_u32(m, (uint32_t)-2);
	tb_u32(m, 70000);
	tb_free(&dt);
	tb_free(&ds);
}

static void check_temp_attr(const h5_attr_msg *a, uint8_t cset)
{
	char *txt = NULL;
	size_t len = 0;

	ck_assert_str_eq(a->name, "temp");
	ck_assert_uint_eq(a->name_len, 4);
	ck_assert_uint_eq(a->cset, cset);
	ck_assert_int_eq(a->dtype->cls, H5T_INTEGER);
	ck_assert_uint_eq(a->dtype->size, 4);
	ck_assert_uint_eq(a->space.rank, 1);
	ck_assert_uint_eq(a->space.dims[0], 3);
	ck_assert_uint_eq(a->data_size, 12);
	ck_assert_int_eq(h5_value_text(&txt, &len, NULL, a->dtype, a->data, a->data_size, 3), 0);
	ck_assert_str_eq(txt, "1, -2, 70000");
	ck_assert_uint_eq(len, strlen("1, -2, 70000"));
	free(txt);
}

START_TEST(attr_decode_versions)
{
	for (unsigned v = 1; v <= 3; v++) {
		tbuf m = { 0 };
		h5_attr_msg a;
		size_t doff;

		build_attr(&m, v, &doff);
		ck_assert_msg(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len) == 0, "v%u: %s", v, h5_err_msg());
		check_temp_attr(&a, v == 3 ? 1 : 0);
		h5_attr_msg_clear(&a);
		/* v1 messages are padded to 8 bytes after the data: still fine */
		tb_zero(&m, 4);
		ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), 0);
		check_temp_attr(&a, v == 3 ? 1 : 0);
		h5_attr_msg_clear(&a);
		tb_free(&m);
	}
}
END_TEST

/* The v1 layout really is padded: name "temp\0" occupies 8 bytes. */
START_TEST(attr_decode_v1_padding)
{
	tbuf m = { 0 };
	size_t doff;

	build_attr(&m, 1, &doff);
	ck_assert_uint_eq(doff, 8 + 8 + 16 + 16);  /* header, name, int dtype (12->16), v1 dspace (16) */
	tb_free(&m);
	build_attr(&m, 2, &doff);
	ck_assert_uint_eq(doff, 8 + 5 + 12 + 12);
	tb_free(&m);
	build_attr(&m, 3, &doff);
	ck_assert_uint_eq(doff, 9 + 5 + 12 + 12);
	tb_free(&m);
}
END_TEST

START_TEST(attr_decode_truncated)
{
	for (unsigned v = 1; v <= 3; v++) {
		tbuf m = { 0 };
		size_t doff;

		build_attr(&m, v, &doff);
		for (size_t n = 0; n < m.len; n++) {
			h5_attr_msg a;
			uint8_t *copy = malloc(n ? n : 1);
			int rc;

			/* a copy of exactly n bytes so ASan sees any overread */
			memcpy(copy, m.p, n);
			rc = h5_attr_decode(&a, NULL, &fmt8, copy, n);
			ck_assert_msg(rc == H5_ERR_FORMAT, "v%u truncated to %zu: rc %d", v, n, rc);
			ck_assert_ptr_null(a.name);
			ck_assert_ptr_null(a.dtype);
			free(copy);
		}
		tb_free(&m);
	}
}
END_TEST

START_TEST(attr_decode_corrupt)
{
	tbuf m = { 0 };
	h5_attr_msg a;
	size_t doff;

	build_attr(&m, 2, &doff);
	/* bad versions */
	m.p[0] = 0;
	ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), H5_ERR_FORMAT);
	m.p[0] = 4;
	ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), H5_ERR_FORMAT);
	m.p[0] = 2;
	/* unknown flag bit */
	m.p[1] = 0x04;
	ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), H5_ERR_FORMAT);
	/* shared datatype: needs the file to resolve it */
	m.p[1] = 0x01;
	ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), H5_ERR_INVAL);
	m.p[1] = 0;
	/* name not NUL-terminated */
	m.p[8 + 4] = 'x';
	ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), H5_ERR_FORMAT);
	/* embedded NUL inside the declared name: decoded with its full length
	 * (xa_list leaves such a name out, its siblings stay listed) */
	m.p[8 + 4] = 0;
	m.p[8 + 1] = 0;
	ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), 0);
	ck_assert_uint_eq(a.name_len, 4);
	ck_assert_ptr_nonnull(memchr(a.name, 0, a.name_len));
	h5_attr_msg_clear(&a);
	m.p[8 + 1] = 'e';
	ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), 0);
	h5_attr_msg_clear(&a);
	/* name size 0 */
	m.p[2] = 0;
	ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), H5_ERR_FORMAT);
	m.p[2] = 5;
	/* datatype size pointing past the end */
	m.p[4] = 0xff;
	m.p[5] = 0xff;
	ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), H5_ERR_FORMAT);
	m.p[4] = 12;
	m.p[5] = 0;
	/* a dimension so large the data cannot be there (and would overflow) */
	h5_le_encode(m.p + 8 + 5 + 12 + 4, UINT64_C(1) << 62, 8);
	ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), H5_ERR_FORMAT);
	h5_le_encode(m.p + 8 + 5 + 12 + 4, 4, 8);  /* 4 elements, 3 stored */
	ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), H5_ERR_FORMAT);
	h5_le_encode(m.p + 8 + 5 + 12 + 4, 2, 8);  /* fewer is fine (trailing bytes) */
	ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), 0);
	ck_assert_uint_eq(a.data_size, 8);
	h5_attr_msg_clear(&a);
	tb_free(&m);

	/* v3 with an unknown character set */
	build_attr(&m, 3, &doff);
	m.p[8] = 2;
	ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), H5_ERR_FORMAT);
	tb_free(&m);
}
END_TEST

/* Null dataspace: no data at all. */
START_TEST(attr_decode_null_space)
{
	tbuf m = { 0 }, dt = { 0 }, ds = { 0 };
	h5_attr_msg a;
	char *txt;
	size_t len;

	dt_float(&dt, 4, false);
	ds_v2(&ds, 2, 0, NULL);
	tb_u8(&m, 3);
	tb_u8(&m, 0);
	tb_u16(&m, 2);
	tb_u16(&m, (uint16_t)dt.len);
	tb_u16(&m, (uint16_t)ds.len);
	tb_u8(&m, 0);
	tb_put(&m, "n", 2);
	tb_put(&m, dt.p, dt.len);
	tb_put(&m, ds.p, ds.len);
	ck_assert_int_eq(h5_attr_decode(&a, NULL, &fmt8, m.p, m.len), 0);
	ck_assert_int_eq(a.space.type, H5_SPACE_NULL);
	ck_assert_uint_eq(a.data_size, 0);
	ck_assert_int_eq(h5_value_text(&txt, &len, NULL, a.dtype, a.data, a.data_size, 0), 0);
	ck_assert_str_eq(txt, "");
	ck_assert_uint_eq(len, 0);
	free(txt);
	h5_attr_msg_clear(&a);
	tb_free(&m);
	tb_free(&dt);
	tb_free(&ds);
}
END_TEST

/* ---- value text ------------------------------------------------------------ */

static char *text_of(const h5_dtype *t, const void *data, size_t len, uint64_t n)
{
	char *txt = NULL;
	size_t tl = 0;
	int rc = h5_value_text(&txt, &tl, NULL, t, data, len, n);

	ck_assert_msg(rc == 0, "h5_value_text: %s", h5_err_msg());
	ck_assert_uint_eq(tl, strlen(txt));
	return txt;
}

#define CHECK_TEXT(t, data, len, n, expect)                                 \
	do {                                                                \
		char *got_ = text_of((t), (data), (len), (n));              \
		ck_assert_msg(strcmp(got_, (expect)) == 0, "got \"%s\", expected \"%s\"", got_, (expect)); \
		free(got_);                                                 \
	} while (0)

START_TEST(value_integers)
{
	static const struct {
		unsigned size;
		bool sgn, be;
		unsigned off, prec;
		uint8_t bytes[8];
		const char *expect;
	} v[] = {
		{ 1, true, false, 0, 8, { 0x80 }, "-128" },
		{ 1, false, false, 0, 8, { 0xff }, "255" },
		{ 2, true, false, 0, 16, { 0xfe, 0xff }, "-2" },
		{ 2, true, true, 0, 16, { 0xff, 0xfe }, "-2" },
		{ 2, false, true, 0, 16, { 0x12, 0x34 }, "4660" },
		{ 3, true, false, 0, 24, { 0xff, 0xff, 0xff }, "-1" },
		{ 4, true, true, 0, 32, { 0x80, 0, 0, 0 }, "-2147483648" },
		{ 4, false, false, 0, 32, { 0xff, 0xff, 0xff, 0xff }, "4294967295" },
		{ 5, false, true, 0, 40, { 0x01, 0, 0, 0, 0 }, "4294967296" },
		{ 8, true, false, 0, 64, { 0, 0, 0, 0, 0, 0, 0, 0x80 }, "-9223372036854775808" },
		{ 8, false, true, 0, 64, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff }, "18446744073709551615" },
		{ 8, true, true, 0, 64, { 0, 0, 0, 0, 0, 0, 0x30, 0x39 }, "12345" },
		/* 4 bits of precision at bit offset 4: 0xf? -> -1 signed, 15 unsigned */
		{ 1, true, false, 4, 4, { 0xf3 }, "-1" },
		{ 1, false, false, 4, 4, { 0xf3 }, "15" },
		/* 12 bits at offset 2 of a big-endian 16-bit: 0x0ffc >> 2 = 0x3ff */
		{ 2, false, true, 2, 12, { 0x0f, 0xfc }, "1023" },
		{ 2, true, true, 2, 12, { 0x2f, 0xfc }, "-1025" },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		tbuf b = { 0 };
		h5_dtype *t;

		dt_int(&b, v[i].size, v[i].sgn, v[i].be, v[i].off, v[i].prec);
		t = mk_dtype(&b);
		CHECK_TEXT(t, v[i].bytes, v[i].size, 1, v[i].expect);
		h5_dtype_free(t);
		tb_free(&b);
	}
}
END_TEST

START_TEST(value_integer_array)
{
	tbuf b = { 0 };
	h5_dtype *t;
	uint8_t d[6] = { 1, 0, 0xff, 0xff, 0x10, 0x27 };

	dt_int(&b, 2, true, false, 0, 16);
	t = mk_dtype(&b);
	CHECK_TEXT(t, d, sizeof(d), 3, "1, -1, 10000");
	CHECK_TEXT(t, d, sizeof(d), 0, "");
	/* data shorter than the elements claimed */
	{
		char *txt = NULL;
		size_t len;

		ck_assert_int_eq(h5_value_text(&txt, &len, NULL, t, d, sizeof(d), 4), H5_ERR_FORMAT);
		ck_assert_int_eq(h5_value_text(&txt, &len, NULL, t, d, sizeof(d), UINT64_MAX), H5_ERR_FORMAT);
		ck_assert_ptr_null(txt);
	}
	h5_dtype_free(t);
	tb_free(&b);
}
END_TEST

static void put_bits(uint8_t *p, uint64_t bits, unsigned size, bool be)
{
	for (unsigned i = 0; i < size; i++)
		p[be ? size - 1 - i : i] = (uint8_t)(bits >> (8 * i));
}

static char *float_text(unsigned size, bool be, uint64_t bits)
{
	tbuf b = { 0 };
	h5_dtype *t;
	uint8_t d[8];
	char *txt;

	dt_float(&b, size, be);
	t = mk_dtype(&b);
	put_bits(d, bits, size, be);
	txt = text_of(t, d, size, 1);
	h5_dtype_free(t);
	tb_free(&b);
	return txt;
}

static uint64_t dbits(double x)
{
	uint64_t u;

	memcpy(&u, &x, 8);
	return u;
}

static uint64_t fbits(float x)
{
	uint32_t u;

	memcpy(&u, &x, 4);
	return u;
}

/* The digits of a float's text (sign, point, exponent left out). */
static int sig_digits(const char *s)
{
	int n = 0, lead = 1;

	for (; *s && *s != 'e'; s++) {
		if (*s < '0' || *s > '9')
			continue;
		if (lead && *s == '0')
			continue;       /* 0.00012: the zeros before the first digit */
		lead = 0;
		n++;
	}
	return n;
}

/* Random doubles and singles (every bit pattern: subnormals, huge, tiny):
 * the text reads back as the value, and no text of one digit fewer does
 * (the shortest; the probe from 16 or 8 digits, fltdig.c). */
START_TEST(value_float_shortest)
{
	uint64_t x = 88172645463325252ULL;

	for (int i = 0; i < 40000; i++) {
		bool single = i & 1;
		char *s, shorter[48];
		double v;
		int nd;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (single) {
			float f;
			uint32_t u = (uint32_t)x;

			memcpy(&f, &u, 4);
			v = f;
		} else {
			memcpy(&v, &x, 8);
		}
		if (!isfinite(v) || v == 0)
			continue;
		s = float_text(single ? 4 : 8, false, single ? fbits((float)v) : dbits(v));
		ck_assert_msg(single ? strtof(s, NULL) == (float)v : strtod(s, NULL) == v, "%.17g: %s", v, s);
		nd = sig_digits(s);
		/* (an integral value's ".0" and trailing zeros of a positional
		 * text are no digits of its shortest form) */
		if (nd > 1 && strchr(s, 'e') == NULL)
			while (nd > 1 && (s[strlen(s) - 1] == '0' || s[strlen(s) - 1] == '.'))
				s[strlen(s) - 1] = 0, nd = sig_digits(s);
		if (nd > 1) {
			snprintf(shorter, sizeof(shorter), "%.*e", nd - 2, v);
			ck_assert_msg(single ? strtof(shorter, NULL) != (float)v : strtod(shorter, NULL) != v,
				      "%.17g: %s is not the shortest (%s reads back too)", v, s, shorter);
		}
		free(s);
	}
}
END_TEST

/* h5_fltdig (integer arithmetic) against h5_fltdig_slow (printf and strtod,
 * the reference) on one value: the same digits and exponent. */
static int fltdig_check(double v, bool single)
{
	char fast[H5_FLTDIG_MAX], slow[H5_FLTDIG_MAX];
	int ef = 0, es = 0, nf, ns;

	if (single)
		v = (float)v;
	if (!isfinite(v) || v == 0 || fabs(v) < (single ? FLT_MIN : DBL_MIN))
		return 0;       /* value.c formats these without fltdig.c */
	nf = h5_fltdig(fast, &ef, v, single);
	ns = h5_fltdig_slow(slow, &es, v, single);
	ck_assert_msg(nf == ns && ef == es && strcmp(fast, slow) == 0, "%s %.17g: %se%d, not %se%d",
		      single ? "single" : "double", v, fast, ef, slow, es);
	return 1;
}

/* Random bit patterns, random values of every decimal exponent the
 * integer path takes (about 1e-13 to 1e17) and edge cases: powers of two
 * and ten and their neighbours, integers, halves, tenths, the largest and
 * smallest normals. H5FS_FLTDIG_N sets the random count (200,000 in CI;
 * 5,000,000 were compared by hand). Subnormals, zeros, infinities and NaN
 * do not reach fltdig.c: their text is checked by value_float_table. */
START_TEST(value_float_fast_vs_printf)
{
	const char *env = getenv("H5FS_FLTDIG_N");
	long n = env ? atol(env) : 200000;
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	for (long i = 0; i < n; i++) {
		double v;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (i % 3 == 0) {
			memcpy(&v, &x, 8);
		} else if (i % 3 == 1) {
			uint32_t u = (uint32_t)(x >> 32);
			float f;

			memcpy(&f, &u, 4);
			v = f;
		} else {
			v = ((double)(x >> 11) * 0x1p-53 * 2 - 1) * pow(10, (int)(x % 31) - 13);
		}
		fltdig_check(v, i & 1);
	}
	for (int single = 0; single < 2; single++) {
		for (int e = -1075; e <= 1024; e++) {
			double p = ldexp(1, e);

			fltdig_check(p, single);
			fltdig_check(-nextafter(p, 0), single);
			fltdig_check(nextafter(p, INFINITY), single);
			if (single) {
				float f = (float)p;

				fltdig_check(nextafterf(f, 0), single);
				fltdig_check(nextafterf(f, INFINITY), single);
			}
		}
		for (int e = -330; e <= 310; e++) {
			double p = pow(10, e);

			fltdig_check(p, single);
			fltdig_check(nextafter(p, 0), single);
			fltdig_check(nextafter(p, INFINITY), single);
			for (int j = 2; j < 10; j++)
				fltdig_check(-j * p, single);
			fltdig_check(9.5 * p, single);
		}
		for (long i = 1; i < 5000; i++) {
			fltdig_check((double)i, single);
			fltdig_check(i + 0.5, single);
			fltdig_check(i * 0.1, single);
			fltdig_check(1e15 + i, single);
			fltdig_check(9007199254740992.0 - i, single);
			fltdig_check(1234567890123456.0 + i * 0.25, single);
			fltdig_check(16777216.0f - (float)i, single);
		}
		fltdig_check(DBL_MAX, single);
		fltdig_check(DBL_MIN, single);
		fltdig_check(FLT_MAX, single);
		fltdig_check(-FLT_MIN, single);
		fltdig_check(nextafterf(FLT_MAX, 0), single);
	}
}
END_TEST

/* Expected strings are Python's repr(float) / numpy's str(float32|float16). */
START_TEST(value_float_table)
{
	static const struct {
		double x;
		const char *expect;
	} d[] = {
		{ 0.1, "0.1" }, { 1.0, "1.0" }, { -2.5, "-2.5" }, { 1e16, "1e+16" }, { 1e15, "1000000000000000.0" },
		{ 1.5e-5, "1.5e-05" }, { 0.0001, "0.0001" }, { 1e100, "1e+100" }, { 123.456, "123.456" },
		{ 1.0 / 3, "0.3333333333333333" }, { 2.0 / 3, "0.6666666666666666" }, { 5e-324, "5e-324" },
		{ 1.7976931348623157e308, "1.7976931348623157e+308" }, { 0.30000000000000004, "0.30000000000000004" },
		{ 123456789012345678.0, "1.2345678901234568e+17" }, { 9007199254740993.0, "9007199254740992.0" },
		{ -0.0, "-0.0" }, { 0.0, "0.0" }, { 1e-7, "1e-07" }, { 12345.0e10, "123450000000000.0" },
	};

	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		for (int be = 0; be < 2; be++) {
			char *s = float_text(8, be, dbits(d[i].x));

			ck_assert_msg(strcmp(s, d[i].expect) == 0, "%.17g: got %s, expected %s", d[i].x, s, d[i].expect);
			free(s);
		}
	}
	{
		char *s;

		s = float_text(8, false, dbits(NAN));
		ck_assert_str_eq(s, "nan");
		free(s);
		s = float_text(8, true, dbits(-INFINITY));
		ck_assert_str_eq(s, "-inf");
		free(s);
		s = float_text(4, false, fbits(0.1f));
		ck_assert_str_eq(s, "0.1");
		free(s);
		s = float_text(4, true, fbits(16777217.0f));
		ck_assert_str_eq(s, "16777216.0");
		free(s);
		s = float_text(4, false, fbits(3.4028235e38f));
		ck_assert_str_eq(s, "3.4028235e+38");
		free(s);
		s = float_text(4, false, fbits(1e-45f));
		ck_assert_str_eq(s, "1e-45");
		free(s);
		s = float_text(4, false, fbits(INFINITY));
		ck_assert_str_eq(s, "inf");
		free(s);
		/* half: 0x3c00 = 1, 0x7bff = 65504, 0x2e66 = 0.1, 0x0001 = 6e-08, 0xfc00 = -inf */
		s = float_text(2, false, 0x3c00);
		ck_assert_str_eq(s, "1.0");
		free(s);
		s = float_text(2, true, 0x7bff);
		ck_assert_str_eq(s, "65500.0");
		free(s);
		s = float_text(2, false, 0x2e66);
		ck_assert_str_eq(s, "0.1");
		free(s);
		s = float_text(2, false, 0x0001);
		ck_assert_str_eq(s, "6e-08");
		free(s);
		s = float_text(2, false, 0xfc00);
		ck_assert_str_eq(s, "-inf");
		free(s);
		s = float_text(2, false, 0x7e00);
		ck_assert_str_eq(s, "nan");
		free(s);
	}
}
END_TEST

/* Pseudo-random bit patterns of every width, compared with what Python
 * (float64: repr) and NumPy (float32/16: str) print for them. */
START_TEST(value_float_vs_python)
{
	char dir[] = "/tmp/h5fs_test_attr_fp_XXXXXX", in[128], out[128], cmd[512], line[128];
	static const char *script =
		"import sys, struct\n"
		"import numpy as np\n"
		"with open(sys.argv[1]) as f, open(sys.argv[2], 'w') as o:\n"
		"    for l in f:\n"
		"        w, h = l.split()\n"
		"        b = int(h, 16)\n"
		"        if w == '8': s = repr(struct.unpack('<d', b.to_bytes(8, 'little'))[0])\n"
		"        elif w == '4': s = str(np.frombuffer(b.to_bytes(4, 'little'), '<f4')[0])\n"
		"        else: s = str(np.frombuffer(b.to_bytes(2, 'little'), '<f2')[0])\n"
		"        o.write(s + '\\n')\n";
	uint64_t x = UINT64_C(0x9e3779b97f4a7c15);
	enum { N = 3000 };
	static uint64_t pat[N];
	static unsigned width[N];
	FILE *fp;
	int rc;

	if (access("/usr/bin/python3", X_OK) != 0 || !mkdtemp(dir))
		return;
	snprintf(in, sizeof(in), "%s/in.txt", dir);
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	fp = fopen(in, "w");
	ck_assert_ptr_nonnull(fp);
	for (int i = 0; i < N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		width[i] = i % 3 == 0 ? 8 : i % 3 == 1 ? 4 : 2;
		pat[i] = width[i] == 8 ? x : width[i] == 4 ? (x & 0xffffffff) : (x & 0xffff);
		/* every few: a "round" decimal value, where shortest output matters most */
		if (i % 5 == 0 && width[i] == 8)
			pat[i] = dbits((double)(int64_t)(x % 100000) / 1000.0);
		if (i % 5 == 1 && width[i] == 4)
			pat[i] = fbits((float)(int64_t)(x % 100000) / 100.0f);
		fprintf(fp, "%u %llx\n", width[i], (unsigned long long)pat[i]);
	}
	fclose(fp);
	snprintf(cmd, sizeof(cmd), "%s/fp.py", dir);
	fp = fopen(cmd, "w");
	ck_assert_ptr_nonnull(fp);
	fputs(script, fp);
	fclose(fp);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/fp.py %s %s 2>/dev/null", dir, in, out);
	rc = system(cmd);
	if (rc != 0) {
		fprintf(stderr, "test_attr: python3 with numpy unavailable, float comparison skipped\n");
		goto out;
	}
	fp = fopen(out, "r");
	ck_assert_ptr_nonnull(fp);
	for (int i = 0; i < N; i++) {
		char *s;

		ck_assert_ptr_nonnull(fgets(line, sizeof(line), fp));
		line[strcspn(line, "\n")] = '\0';
		s = float_text(width[i], i % 2, pat[i]);
		ck_assert_msg(strcmp(s, line) == 0, "f%u bits 0x%llx: got %s, python %s", width[i] * 8,
			      (unsigned long long)pat[i], s, line);
		free(s);
	}
	fclose(fp);
out:
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(value_strings)
{
	static const struct {
		unsigned pad;
		const char *bytes;
		unsigned size;
		const char *expect;
	} v[] = {
		{ 0, "abc\0\0\0", 6, "abc" },       /* null-terminated */
		{ 0, "abcdef", 6, "abcdef" },       /* full, no terminator */
		{ 1, "ab\0\0\0\0", 6, "ab" },       /* null-padded */
		{ 1, "a b \0\0", 6, "a b " },       /* spaces kept with NUL padding */
		{ 2, "ab    ", 6, "ab" },           /* space-padded */
		{ 2, " a b  ", 6, " a b" },
		{ 2, "      ", 6, "" },
		{ 1, "\0\0\0\0\0\0", 6, "" },
		{ 1, "h\xc3\xa9!\0\0", 6, "h\xc3\xa9!" },  /* UTF-8 bytes verbatim */
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		tbuf b = { 0 };
		h5_dtype *t;

		dt_string(&b, v[i].size, v[i].pad);
		t = mk_dtype(&b);
		CHECK_TEXT(t, v[i].bytes, v[i].size, 1, v[i].expect);
		h5_dtype_free(t);
		tb_free(&b);
	}
	/* several strings: one per line */
	{
		tbuf b = { 0 };
		h5_dtype *t;

		dt_string(&b, 3, 1);
		t = mk_dtype(&b);
		CHECK_TEXT(t, "ab\0cd\0efg", 9, 3, "ab\ncd\nefg");
		h5_dtype_free(t);
		tb_free(&b);
	}
}
END_TEST

START_TEST(value_typestr)
{
	static const struct {
		int kind;      /* 0 int, 1 float, 2 string */
		unsigned size;
		bool sgn, be;
		const char *expect;
	} v[] = {
		{ 0, 1, true, false, "|i1" }, { 0, 1, false, true, "|u1" }, { 0, 4, true, true, ">i4" },
		{ 0, 8, false, false, "<u8" }, { 0, 3, false, false, "|V3" }, { 1, 2, false, false, "<f2" },
		{ 1, 8, false, true, ">f8" }, { 2, 10, false, false, "|S10" },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		tbuf b = { 0 };
		h5_dtype *t;
		char *s = NULL;

		if (v[i].kind == 0)
			dt_int(&b, v[i].size, v[i].sgn, v[i].be, 0, v[i].size * 8);
		else if (v[i].kind == 1)
			dt_float(&b, v[i].size, v[i].be);
		else
			dt_string(&b, v[i].size, 0);
		t = mk_dtype(&b);
		ck_assert_int_eq(h5_value_typestr(&s, t), 0);
		ck_assert_str_eq(s, v[i].expect);
		free(s);
		h5_dtype_free(t);
		tb_free(&b);
	}
}
END_TEST

/* ---- end to end over files written by h5py ---------------------------------- */

static const char *py_script =
	"import sys, os\n"
	"import numpy as np, h5py\n"
	"d = sys.argv[1]\n"
	"with h5py.File(os.path.join(d, 'compact.h5'), 'w') as f:\n"
	"    a = f.attrs\n"
	"    a['i1'] = np.int8(-5)\n"
	"    a['u8'] = np.uint64(2**64 - 1)\n"
	"    a['be'] = np.array([1, -2, 3], dtype='>i4')\n"
	"    a['u16be'] = np.array([65535, 1], dtype='>u2')\n"
	"    a['f8'] = 0.1\n"
	"    a['f4'] = np.float32(0.1)\n"
	"    a['f2'] = np.float16(65504)\n"
	"    a['fl'] = np.array([1.0, 1e16, 1.5e-5, np.nan, -np.inf], dtype='>f8')\n"
	"    a['s'] = np.bytes_(b'hello')\n"
	"    a['vs'] = 'h\\u00e9llo'\n"
	"    a['vsa'] = ['a', 'bb', 'ccc']\n"
	"    a['fsa'] = np.array([b'x', b'yy'], dtype='S4')\n"
	"    a['b'] = np.array([True, False])\n"
	"    a['h5.dtype'] = 'not metadata'\n"
	"    a['cmp'] = np.array((1, 2.5, b'q\"'), dtype=[('x', '<i4'), ('y', '<f8'), ('s', 'S3')])\n"
	"    a['arr2'] = np.array([[1, 2], [3, 4]], dtype='i2')\n"
	"    a.create('arrt', np.array([[1, 2, 3], [4, 5, 6]], dtype='i4'), dtype=np.dtype(('i4', (3,))))\n"
	"    a['empty'] = h5py.Empty('f4')\n"
	"    a['ref'] = f.ref\n"
	"    a.create('vl', np.array([np.array([1, 2, 3], 'i4'), np.array([4], 'i4')], dtype=object),\n"
	"             dtype=h5py.vlen_dtype(np.int32))\n"
	"    a.create('en', np.array([0, 2], 'u1'), dtype=h5py.enum_dtype({'RED': 0, 'GREEN': 1, 'BLUE': 2}, 'u1'))\n"
	"    a['op'] = np.void(b'\\x0a\\x1b')\n"
	"    a['\\u00fcn\\u00efcode'] = 1\n"
	"    g = f.create_group('g')\n"
	"    g.attrs['ga'] = 'group attr'\n"
	"    ds = f.create_dataset('ds', (100, 3), dtype='<f4', chunks=(10, 3), maxshape=(None, 3),\n"
	"                          compression='gzip', shuffle=True, fillvalue=1.5)\n"
	"    ds.attrs['units'] = 'm/s'\n"
	"    f.create_dataset('cd', (5,), dtype=np.dtype({'names': ['a', 'b'], 'formats': ['<i2', '>f8'],\n"
	"                                                'offsets': [0, 8], 'itemsize': 16}))\n"
	"    f.create_dataset('sc', (), dtype='S10')\n"
	"    f.create_dataset('nul', dtype=h5py.Empty('i4'))\n"
	"    f['nt'] = np.dtype('<i8')\n"
	"    f['nt'].attrs['on_type'] = 7\n"
	"with h5py.File(os.path.join(d, 'dense.h5'), 'w', libver='latest') as f:\n"
	"    g = f.create_group('nine')\n"
	"    for i in range(9):\n"
	"        g.attrs['k%d' % i] = i * 1.5\n"
	"    g.attrs['h5.shape'] = 'real'\n"
	"    g.attrs['\\u00e9t\\u00e9'] = '\\u00e9'\n"
	"    o = f.create_group('ordered', track_order=True)\n"
	"    for i in range(12):\n"
	"        o.attrs['z%02d' % (11 - i)] = i\n"
	"    c = f.create_group('corder_compact', track_order=True)\n"
	"    for n in ['b', 'c', 'a']:\n"
	"        c.attrs[n] = n\n"
	"    big = f.create_group('big')\n"
	"    for i in range(10000):\n"
	"        big.attrs['attr_%05d' % i] = i\n"
	"    ds = f.create_dataset('ds', data=np.arange(12, dtype='>i8').reshape(3, 4), chunks=(2, 2),\n"
	"                          maxshape=(None, None))\n"
	"    for i in range(10):\n"
	"        ds.attrs['a%d' % i] = np.arange(i + 1, dtype='<u2')\n"
	"    f.create_dataset('ea', data=np.arange(12), chunks=(4,), maxshape=(None,))\n"
	"    f.create_dataset('fa', data=np.arange(12), chunks=(4,))\n"
	"    f.create_dataset('single', data=np.arange(12), chunks=(12,))\n"
	"    f['t'] = np.dtype([('a', 'i4'), ('b', ('f4', (2, 2)))])\n"
	"    f.create_dataset('typed', (2,), dtype=f['t'])\n"
	"    f['typed'].attrs.create('ta', np.zeros(1, dtype=f['t'].dtype), dtype=f['t'])\n";

static char py_dir[64];
static int py_ok;

/* Run one of the generators below into a fresh dir made from `tmpl`: 1
 * when it wrote its files, else 0 and its tests skip: silently when
 * python3, the temp dir or the script file is unavailable, with a message
 * on stderr when the generator itself fails. */
static int gen_run(char *dir, size_t room, const char *tmpl, const char *script, const char *what)
{
	int rc;

	snprintf(dir, room, "%s", tmpl);
	rc = test_py_run(dir, script, NULL);
	if (rc == TEST_PY_NO_PYTHON || rc == TEST_PY_NO_DIR || rc == TEST_PY_NO_SCRIPT)
		return 0;
	if (rc != 0) {
		fprintf(stderr, "test_attr: h5py generator unavailable (status %d): skipping %s tests\n", rc, what);
		return 0;
	}
	return 1;
}

static void gen_rmdir(const char *dir)
{
	test_tmp_remove(dir);
}

static void py_setup(void)
{
	py_ok = gen_run(py_dir, sizeof(py_dir), "/tmp/h5fs_test_attr_XXXXXX", py_script, "h5py");
}

static void py_teardown(void)
{
	gen_rmdir(py_dir);
}

static h5_file *open_py(const char *name)
{
	char path[128];
	h5_file *f = NULL;

	snprintf(path, sizeof(path), "%s/%s", py_dir, name);
	ck_assert_msg(h5_file_open(&f, path, NULL) == 0, "%s: %s", path, h5_err_msg());
	return f;
}

static uint64_t resolve(h5_file *f, const char *path)
{
	char buf[256], *save = NULL;
	uint64_t a = h5_file_root(f);

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		h5_link l;

		ck_assert_msg(h5_group_lookup(&l, f, a, tok) == 0, "%s: %s", path, h5_err_msg());
		a = l.addr;
		h5_link_clear(&l);
	}
	return a;
}

static void check_xattr(h5_file *f, const char *path, const char *name, const char *expect, size_t expect_len)
{
	void *v = NULL;
	size_t len = 0;
	int rc = xa_get(&v, &len, f, resolve(f, path), name, 0);

	ck_assert_msg(rc == 0, "%s %s: %s", path, name, h5_err_msg());
	ck_assert_msg(len == expect_len && memcmp(v, expect, len) == 0, "%s %s: got \"%.*s\" (%zu), expected \"%s\"",
		      path, name, (int)len, (char *)v, len, expect);
	free(v);
}

#define XA(f, path, name, expect) check_xattr((f), (path), (name), (expect), sizeof(expect) - 1)

/* The list as one string with '|' for the NULs (names here have no '|'). */
static char *list_str(h5_file *f, const char *path, size_t *count)
{
	char *l = NULL;
	size_t len = 0, n = 0;

	ck_assert_msg(xa_list(&l, &len, f, resolve(f, path)) == 0, "%s: %s", path, h5_err_msg());
	for (size_t i = 0; i < len; i++) {
		if (l[i] == '\0') {
			l[i] = '|';
			n++;
		}
	}
	ck_assert(len == 0 || l[len - 1] == '|');
	l = realloc(l, len + 1);
	l[len] = '\0';
	if (count)
		*count = n;
	return l;
}

START_TEST(e2e_compact_values)
{
	h5_file *f;

	if (!py_ok)
		return;
	f = open_py("compact.h5");
	XA(f, "/", "user.i1", "-5");
	XA(f, "/", "user.u8", "18446744073709551615");
	XA(f, "/", "user.be", "1, -2, 3");
	XA(f, "/", "user.u16be", "65535, 1");
	XA(f, "/", "user.f8", "0.1");
	XA(f, "/", "user.f4", "0.1");
	XA(f, "/", "user.f2", "65500.0");
	XA(f, "/", "user.fl", "1.0, 1e+16, 1.5e-05, nan, -inf");
	XA(f, "/", "user.s", "hello");
	XA(f, "/", "user.vs", "h\xc3\xa9llo");
	XA(f, "/", "user.vsa", "a\nbb\nccc");
	XA(f, "/", "user.fsa", "x\nyy");
	XA(f, "/", "user.b", "TRUE, FALSE");
	XA(f, "/", "user.h5.attr.h5.dtype", "not metadata");
	XA(f, "/", "user.cmp", "{x: 1, y: 2.5, s: \"q\\\"\"}");
	XA(f, "/", "user.arr2", "1, 2, 3, 4");
	XA(f, "/", "user.arrt", "[1, 2, 3], [4, 5, 6]");
	XA(f, "/", "user.empty", "");
	XA(f, "/", "user.vl", "[1, 2, 3], [4]");
	XA(f, "/", "user.en", "RED, BLUE");
	XA(f, "/", "user.op", "0x0a1b");
	XA(f, "/", "user.\xc3\xbcn\xc3\xaf" "code", "1");
	XA(f, "/g", "user.ga", "group attr");
	XA(f, "/ds", "user.units", "m/s");
	XA(f, "/nt", "user.on_type", "7");
	{
		/* object reference: the address of the root group's header */
		char want[64];
		void *v;
		size_t len;

		snprintf(want, sizeof(want), "obj:0x%llx", (unsigned long long)h5_file_root(f));
		ck_assert_int_eq(xa_get(&v, &len, f, h5_file_root(f), "user.ref", 0), 0);
		ck_assert_str_eq((char *)v, want);
		free(v);
	}
	h5_file_close(f);
}
END_TEST

/* h5_attr_which (issue 82): which of several names an object has, in one
 * pass over compact attributes (names of one length told apart: f8/f4,
 * i1), through the dense index (the "nine" group, 11 attributes). */
START_TEST(e2e_which)
{
	static const char *const compact[] = { "i1", "nope", "be", "f4", "f", "f42" };
	static const char *const dense[] = { "k9", "k0", "k7", "\xc3\xa9t\xc3\xa9", "k" };
	h5_file *f;
	uint32_t mask = 99;

	if (!py_ok)
		return;
	f = open_py("compact.h5");
	ck_assert_int_eq(h5_attr_which(&mask, f, h5_file_root(f), compact, 6), 0);
	ck_assert_uint_eq(mask, 1u | 4u | 8u);
	ck_assert_int_eq(h5_attr_which(&mask, f, resolve(f, "/ds"), compact, 6), 0);
	ck_assert_uint_eq(mask, 0);
	h5_file_close(f);
	f = open_py("dense.h5");
	ck_assert_int_eq(h5_attr_which(&mask, f, resolve(f, "/nine"), dense, 5), 0);
	ck_assert_uint_eq(mask, 2u | 4u | 8u);
	ck_assert_int_eq(h5_attr_which(&mask, f, resolve(f, "/nine"), dense, 5), 0);
	ck_assert_uint_eq(mask, 2u | 4u | 8u);
	h5_file_close(f);
}
END_TEST

/* h5_attr_which's answer kept with the cached header (h5_ohdr.which):
 * asked again, the same; other names (one of them a prefix of a kept
 * one, or one name fewer) not given the kept answer; an attribute
 * written since (the header edited, the cached one dropped) seen. */
START_TEST(e2e_which_kept)
{
	static const char *const a[] = { "i1", "nope", "be" };
	static const char *const b[] = { "i1", "nop", "be" };
	static const char *const c[] = { "i1", "nope" };
	char src[128], path[128], cmd[300];
	h5_file *f;
	uint32_t mask = 99;
	uint64_t root;

	if (!py_ok)
		return;
	snprintf(src, sizeof(src), "%s/compact.h5", py_dir);
	snprintf(path, sizeof(path), "%s/which_kept.h5", py_dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", src, path);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_msg(h5_file_open(&f, path, &(h5_open_opts){ .writable = 1 }) == 0, "%s", h5_err_msg());
	root = h5_file_root(f);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(h5_attr_which(&mask, f, root, a, 3), 0);
		ck_assert_uint_eq(mask, 1u | 4u);
	}
	ck_assert_int_eq(h5_attr_which(&mask, f, root, b, 3), 0);
	ck_assert_uint_eq(mask, 1u | 4u);
	ck_assert_int_eq(h5_attr_which(&mask, f, root, c, 2), 0);
	ck_assert_uint_eq(mask, 1u);
	ck_assert_msg(h5_attr_write(f, root, "nope", 4, "x", 1, 0) == 0, "%s", h5_err_msg());
	ck_assert_int_eq(h5_attr_which(&mask, f, root, a, 3), 0);
	ck_assert_uint_eq(mask, 1u | 2u | 4u);
	ck_assert_int_eq(h5_attr_which(&mask, f, root, b, 3), 0);
	ck_assert_uint_eq(mask, 1u | 4u);
	h5_file_close(f);
	unlink(path);
}
END_TEST

/* h5_file_attr_epoch (what src/common/owner.c keeps own_detect's answer
 * by): moved by an attribute written or removed on any object and by a
 * link change of the root group, not by one of another group; never
 * another file's (a second open of the same FILE gets its own). */
START_TEST(e2e_attr_epoch)
{
	char src[128], path[128], cmd[300];
	h5_file *f, *g;
	uint64_t root, sub, x, e;

	if (!py_ok)
		return;
	snprintf(src, sizeof(src), "%s/compact.h5", py_dir);
	snprintf(path, sizeof(path), "%s/epoch.h5", py_dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", src, path);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_msg(h5_file_open(&f, path, &(h5_open_opts){ .writable = 1 }) == 0, "%s", h5_err_msg());
	ck_assert_msg(h5_file_open(&g, path, NULL) == 0, "%s", h5_err_msg());
	ck_assert_uint_ne(h5_file_attr_epoch(f), h5_file_attr_epoch(g));
	root = h5_file_root(f);
	e = h5_file_attr_epoch(f);
	ck_assert_msg(h5_group_create(&sub, f, root, "sub", 3) == 0, "%s", h5_err_msg());
	ck_assert_uint_ne(h5_file_attr_epoch(f), e);            /* the root's links */
	e = h5_file_attr_epoch(f);
	ck_assert_msg(h5_group_create(&x, f, sub, "x", 1) == 0, "%s", h5_err_msg());
	ck_assert_uint_eq(h5_file_attr_epoch(f), e);            /* another group's */
	ck_assert_msg(h5_attr_write(f, x, "a", 1, "1", 1, 0) == 0, "%s", h5_err_msg());
	ck_assert_uint_ne(h5_file_attr_epoch(f), e);            /* any object's attribute */
	e = h5_file_attr_epoch(f);
	ck_assert_msg(h5_attr_delete(f, x, "a", 1) == 0, "%s", h5_err_msg());
	ck_assert_uint_ne(h5_file_attr_epoch(f), e);
	e = h5_file_attr_epoch(f);
	ck_assert_msg(h5_link_delete(f, sub, "x", 1, 1) == 0, "%s", h5_err_msg());
	ck_assert_uint_eq(h5_file_attr_epoch(f), e);
	ck_assert_msg(h5_link_move(f, root, "sub", 3, root, "sub2", 4) == 0, "%s", h5_err_msg());
	ck_assert_uint_ne(h5_file_attr_epoch(f), e);
	e = h5_file_attr_epoch(f);
	ck_assert_msg(h5_link_delete(f, root, "sub2", 4, 1) == 0, "%s", h5_err_msg());
	ck_assert_uint_ne(h5_file_attr_epoch(f), e);
	h5_file_close(g);
	h5_file_close(f);
	unlink(path);
}
END_TEST

/* The engine's data behind user.h5.* and the attribute xattrs, before any
 * naming or formatting (src/common/xattrs.c makes those). */
START_TEST(dataset_meta_data)
{
	h5_dset_meta m;
	h5_attr_set *as = NULL;
	h5_file *f;
	void *v = NULL;
	size_t len = 0;

	if (!py_ok)
		return;
	f = open_py("compact.h5");
	ck_assert_msg(h5_dataset_meta(&m, f, resolve(f, "/ds"), 1) == 0, "%s", h5_err_msg());
	ck_assert_int_eq(m.is_dataset, 1);
	ck_assert_int_eq(m.typestr.rc, 0);
	ck_assert_str_eq(m.typestr.text, "<f4");
	ck_assert_int_eq(m.descr.rc, H5_ERR_NOTFOUND);
	ck_assert_ptr_null(m.descr.text);
	ck_assert_int_eq(m.fill.rc, 0);
	ck_assert_str_eq(m.fill.text, "1.5");
	ck_assert_int_eq(m.has_vlen, 0);
	ck_assert_int_eq(m.shape, H5_SHAPE_SIMPLE);
	ck_assert_uint_eq(m.rank, 2);
	ck_assert_uint_eq(m.dims[0], 100);
	ck_assert_uint_eq(m.dims[1], 3);
	ck_assert_uint_eq(m.maxdims[0], UINT64_MAX);
	ck_assert_uint_eq(m.maxdims[1], 3);
	ck_assert_uint_eq(m.layout_class, 2);
	ck_assert_str_eq(m.layout, "chunked");
	ck_assert_str_eq(m.index, "btree1");
	ck_assert_int_eq(m.external, 0);
	ck_assert_int_eq(m.is_virtual, 0);
	ck_assert_uint_eq(m.chunk_rank, 2);
	ck_assert_uint_eq(m.chunk[0], 10);
	ck_assert_uint_eq(m.chunk[1], 3);
	ck_assert_uint_eq(m.nfilters, 2);
	ck_assert_uint_eq(m.filters[0].id, 2);
	ck_assert_str_eq(m.filters[0].name, "shuffle");
	ck_assert_uint_eq(m.filters[1].id, 1);
	ck_assert_str_eq(m.filters[1].name, "deflate");
	h5_dataset_meta_clear(&m);

	ck_assert_msg(h5_dataset_meta(&m, f, resolve(f, "/cd"), 0) == 0, "%s", h5_err_msg());
	ck_assert_int_eq(m.descr.rc, 0);
	ck_assert_str_eq(m.descr.text, "{'names': ['a', 'b'], 'formats': ['<i2', '>f8'], 'offsets': [0, 8], 'itemsize': 16}");
	ck_assert_uint_eq(m.descr.len, strlen(m.descr.text));
	ck_assert_str_eq(m.layout, "contiguous");
	ck_assert_ptr_null(m.index);
	ck_assert_ptr_null(m.chunk);
	ck_assert_uint_eq(m.nfilters, 0);
	h5_dataset_meta_clear(&m);

	ck_assert_msg(h5_dataset_meta(&m, f, resolve(f, "/nul"), 0) == 0, "%s", h5_err_msg());
	ck_assert_int_eq(m.shape, H5_SHAPE_NULL);
	ck_assert_uint_eq(m.rank, 0);
	h5_dataset_meta_clear(&m);
	/* a group: nothing */
	ck_assert_msg(h5_dataset_meta(&m, f, resolve(f, "/g"), 1) == 0, "%s", h5_err_msg());
	ck_assert_int_eq(m.is_dataset, 0);
	ck_assert_ptr_null(m.typestr.text);
	h5_dataset_meta_clear(&m);

	/* attributes by their HDF5 names: no user. prefix here */
	ck_assert_msg(h5_attr_value_get(&v, &len, f, resolve(f, "/ds"), "units", 5, 0) == 0, "%s", h5_err_msg());
	ck_assert_str_eq((char *)v, "m/s");
	ck_assert_uint_eq(len, 3);
	free(v);
	ck_assert_int_eq(h5_attr_value_get(&v, &len, f, resolve(f, "/ds"), "user.units", 10, 0), H5_ERR_NOTFOUND);
	ck_assert_msg(h5_attr_all(&as, f, resolve(f, "/ds"), 0, SIZE_MAX, SIZE_MAX) == 0, "%s", h5_err_msg());
	ck_assert_uint_eq(as->n, 1);
	ck_assert_str_eq(as->v[0].name, "units");
	ck_assert_uint_eq(as->v[0].name_len, 5);
	ck_assert_str_eq((char *)as->v[0].val, "m/s");
	h5_attr_set_free(as);
	/* a value over max_value is left out (NULL), the name stays */
	ck_assert_msg(h5_attr_all(&as, f, resolve(f, "/ds"), 0, 2, SIZE_MAX) == 0, "%s", h5_err_msg());
	ck_assert_uint_eq(as->n, 1);
	ck_assert_ptr_null(as->v[0].val);
	h5_attr_set_free(as);
	as = NULL;
	ck_assert_int_eq(h5_attr_all(&as, f, resolve(f, "/ds"), 0, SIZE_MAX, 0), H5_ERR_LIMIT);
	ck_assert_ptr_null(as);
	h5_file_close(f);
}
END_TEST

START_TEST(e2e_reserved)
{
	h5_file *f;
	char *l;

	if (!py_ok)
		return;
	f = open_py("compact.h5");
	XA(f, "/ds", "user.h5.dtype", "<f4");
	XA(f, "/ds", "user.h5.shape", "100,3");
	XA(f, "/ds", "user.h5.maxshape", "inf,3");
	XA(f, "/ds", "user.h5.chunks", "10,3");
	XA(f, "/ds", "user.h5.filters", "shuffle,deflate");
	XA(f, "/ds", "user.h5.fill", "1.5");
	XA(f, "/ds", "user.h5.layout", "chunked:btree1");
	XA(f, "/cd", "user.h5.dtype", "|V16");
	XA(f, "/cd", "user.h5.descr", "{'names': ['a', 'b'], 'formats': ['<i2', '>f8'], 'offsets': [0, 8], 'itemsize': 16}");
	XA(f, "/cd", "user.h5.fill", "{a: 0, b: 0.0}");
	XA(f, "/cd", "user.h5.layout", "contiguous");
	XA(f, "/sc", "user.h5.dtype", "|S10");
	XA(f, "/sc", "user.h5.shape", "");
	XA(f, "/sc", "user.h5.fill", "");
	XA(f, "/nul", "user.h5.shape", "null");

	l = list_str(f, "/ds", NULL);
	ck_assert_str_eq(l, "user.h5.dtype|user.h5.shape|user.h5.maxshape|user.h5.chunks|user.h5.filters|"
			    "user.h5.fill|user.h5.layout|user.units|");
	free(l);
	l = list_str(f, "/sc", NULL);
	ck_assert_str_eq(l, "user.h5.dtype|user.h5.shape|user.h5.maxshape|user.h5.fill|user.h5.layout|");
	free(l);
	/* no metadata on groups and named datatypes */
	l = list_str(f, "/g", NULL);
	ck_assert_str_eq(l, "user.ga|");
	free(l);
	l = list_str(f, "/nt", NULL);
	ck_assert_str_eq(l, "user.on_type|");
	free(l);
	{
		void *v = NULL;
		size_t len;
		uint64_t g = resolve(f, "/g"), ds = resolve(f, "/ds"), sc = resolve(f, "/sc");

		ck_assert_int_eq(xa_get(&v, &len, f, g, "user.h5.dtype", 0), H5_ERR_NOTFOUND);
		ck_assert_int_eq(xa_get(&v, &len, f, ds, "user.h5.descr", 0), H5_ERR_NOTFOUND);
		ck_assert_int_eq(xa_get(&v, &len, f, sc, "user.h5.chunks", 0), H5_ERR_NOTFOUND);
		ck_assert_int_eq(xa_get(&v, &len, f, sc, "user.h5.filters", 0), H5_ERR_NOTFOUND);
		ck_assert_int_eq(xa_get(&v, &len, f, ds, "user.h5.nonsense", 0), H5_ERR_NOTFOUND);
		ck_assert_int_eq(xa_get(&v, &len, f, ds, "user.nonsense", 0), H5_ERR_NOTFOUND);
		ck_assert_int_eq(xa_get(&v, &len, f, ds, "trusted.units", 0), H5_ERR_NOTFOUND);
		ck_assert_int_eq(xa_get(&v, &len, f, ds, "units", 0), H5_ERR_NOTFOUND);
		/* escaped names only exist for attributes starting with h5. */
		ck_assert_int_eq(xa_get(&v, &len, f, ds, "user.h5.attr.units", 0), H5_ERR_NOTFOUND);
		ck_assert_int_eq(xa_get(&v, &len, f, h5_file_root(f), "user.h5.dtype", 0), H5_ERR_NOTFOUND);
		ck_assert_ptr_null(v);
	}
	h5_file_close(f);
}
END_TEST

START_TEST(e2e_raw)
{
	h5_file *f;
	void *v;
	size_t len;
	uint64_t root;

	if (!py_ok)
		return;
	f = open_py("compact.h5");
	root = h5_file_root(f);
	ck_assert_int_eq(xa_get(&v, &len, f, root, "user.be", 1), 0);
	ck_assert_uint_eq(len, 12);
	ck_assert_mem_eq(v, "\0\0\0\1\xff\xff\xff\xfe\0\0\0\3", 12);
	free(v);
	ck_assert_int_eq(xa_get(&v, &len, f, root, "user.s", 1), 0);
	ck_assert_uint_eq(len, 5);
	ck_assert_mem_eq(v, "hello", 5);
	free(v);
	/* variable-length strings: the bytes, NUL-separated */
	ck_assert_int_eq(xa_get(&v, &len, f, root, "user.vsa", 1), 0);
	ck_assert_uint_eq(len, 8);
	ck_assert_mem_eq(v, "a\0bb\0ccc", 8);
	free(v);
	ck_assert_int_eq(xa_get(&v, &len, f, root, "user.empty", 1), 0);
	ck_assert_uint_eq(len, 0);
	free(v);
	h5_file_close(f);
}
END_TEST

START_TEST(e2e_compact_list)
{
	h5_file *f;
	char *l;

	if (!py_ok)
		return;
	f = open_py("compact.h5");
	/* no creation order tracked: name order */
	l = list_str(f, "/", NULL);
	ck_assert_str_eq(l, "user.arr2|user.arrt|user.b|user.be|user.cmp|user.empty|user.en|user.f2|user.f4|"
			    "user.f8|user.fl|user.fsa|user.h5.attr.h5.dtype|user.i1|user.op|user.ref|user.s|"
			    "user.u16be|user.u8|user.vl|user.vs|user.vsa|user.\xc3\xbcn\xc3\xaf" "code|");
	free(l);
	h5_file_close(f);
}
END_TEST

START_TEST(e2e_dense)
{
	h5_file *f;
	char *l;
	size_t n;

	if (!py_ok)
		return;
	f = open_py("dense.h5");
	/* 11 attributes with libver latest: dense storage, name order */
	l = list_str(f, "/nine", &n);
	ck_assert_uint_eq(n, 11);
	ck_assert_str_eq(l, "user.h5.attr.h5.shape|user.k0|user.k1|user.k2|user.k3|user.k4|user.k5|user.k6|"
			    "user.k7|user.k8|user.\xc3\xa9t\xc3\xa9|");
	free(l);
	XA(f, "/nine", "user.k0", "0.0");
	XA(f, "/nine", "user.k7", "10.5");
	XA(f, "/nine", "user.h5.attr.h5.shape", "real");
	XA(f, "/nine", "user.\xc3\xa9t\xc3\xa9", "\xc3\xa9");
	{
		void *v = NULL;
		size_t len;
		uint64_t a = resolve(f, "/nine");

		ck_assert_int_eq(xa_get(&v, &len, f, a, "user.k9", 0), H5_ERR_NOTFOUND);
		ck_assert_int_eq(xa_get(&v, &len, f, a, "user.h5.shape", 0), H5_ERR_NOTFOUND);
		ck_assert_int_eq(xa_get(&v, &len, f, a, "user.", 0), H5_ERR_NOTFOUND);
	}
	/* creation order tracked: listed in creation order, dense and compact */
	l = list_str(f, "/ordered", &n);
	ck_assert_uint_eq(n, 12);
	ck_assert_str_eq(l, "user.z11|user.z10|user.z09|user.z08|user.z07|user.z06|user.z05|user.z04|user.z03|"
			    "user.z02|user.z01|user.z00|");
	free(l);
	XA(f, "/ordered", "user.z00", "11");
	l = list_str(f, "/corder_compact", NULL);
	ck_assert_str_eq(l, "user.b|user.c|user.a|");
	free(l);
	/* dense attributes on a dataset, after the reserved names */
	l = list_str(f, "/ds", &n);
	ck_assert_uint_eq(n, 6 + 10);
	ck_assert_ptr_nonnull(strstr(l, "user.h5.layout|user.a0|user.a1|"));
	free(l);
	XA(f, "/ds", "user.a3", "0, 1, 2, 3");
	XA(f, "/ds", "user.h5.dtype", ">i8");
	XA(f, "/ds", "user.h5.maxshape", "inf,inf");
	XA(f, "/ds", "user.h5.layout", "chunked:btree2");
	XA(f, "/ea", "user.h5.layout", "chunked:earray");
	XA(f, "/fa", "user.h5.layout", "chunked:farray");
	XA(f, "/single", "user.h5.layout", "chunked:single");
	/* attribute with a committed datatype */
	XA(f, "/typed", "user.ta", "{a: 0, b: [[0.0, 0.0], [0.0, 0.0]]}");
	XA(f, "/typed", "user.h5.descr", "[('a', '<i4'), ('b', '<f4', (2, 2))]");
	h5_file_close(f);
}
END_TEST

struct count_ud {
	size_t n;
	char last[32];
};

static int count_cb(const char *name, size_t len, void *udp)
{
	struct count_ud *u = udp;

	u->n++;
	snprintf(u->last, sizeof(u->last), "%.*s", (int)len, name);
	return 0;
}

START_TEST(e2e_ten_thousand)
{
	h5_file *f;
	char *l, *p;
	size_t n;
	uint64_t a;
	struct count_ud u = { 0 };

	if (!py_ok)
		return;
	f = open_py("dense.h5");
	l = list_str(f, "/big", &n);
	ck_assert_uint_eq(n, 10000);
	/* sorted by name, every one present once */
	p = l;
	for (int i = 0; i < 10000; i++) {
		char want[32];

		snprintf(want, sizeof(want), "user.attr_%05d|", i);
		ck_assert_msg(strncmp(p, want, strlen(want)) == 0, "entry %d: %.20s", i, p);
		p += strlen(want);
	}
	free(l);
	a = resolve(f, "/big");
	for (int i = 0; i < 10000; i += 997) {
		char name[32], want[16];
		void *v;
		size_t len;

		snprintf(name, sizeof(name), "user.attr_%05d", i);
		snprintf(want, sizeof(want), "%d", i);
		ck_assert_msg(xa_get(&v, &len, f, a, name, 0) == 0, "%s: %s", name, h5_err_msg());
		ck_assert_str_eq((char *)v, want);
		free(v);
	}
	ck_assert_int_eq(h5_attr_iterate_names(f, a, count_cb, &u), 0);
	ck_assert_uint_eq(u.n, 10000);
	ck_assert_str_eq(u.last, "attr_09999");
	h5_file_close(f);
}
END_TEST

/* xa_all gives what xa_list and xa_get give, one name
 * at a time: the same list, and each value (or NULL where xa_get
 * fails). Returns the number of names. */
static size_t check_all(h5_file *f, const char *path, int raw)
{
	uint64_t a = resolve(f, path);
	xa_set *s = NULL;
	char *l = NULL;
	size_t len = 0, n = 0;

	ck_assert_msg(xa_all(&s, f, a, raw, SIZE_MAX, SIZE_MAX) == 0, "%s: %s", path, h5_err_msg());
	ck_assert_msg(xa_list(&l, &len, f, a) == 0, "%s: %s", path, h5_err_msg());
	ck_assert_uint_eq(s->list_len, len);
	ck_assert(memcmp(s->list, l, len) == 0);
	for (size_t i = 0; i < len; i++)
		n += l[i] == '\0';
	ck_assert_uint_eq(s->n, n);
	ck_assert(s->bytes >= len);
	for (size_t i = 0, pos = 0; i < s->n; pos += strlen(l + pos) + 1, i++) {
		void *v = NULL;
		size_t vlen = 0;
		int rc;

		ck_assert_str_eq(s->v[i].name, l + pos);
		rc = xa_get(&v, &vlen, f, a, s->v[i].name, raw);
		h5_err_clear();
		if (rc < 0) {
			ck_assert_msg(!s->v[i].val, "%s %s: xa_get fails (%d), xa_all has a value", path,
				      s->v[i].name, rc);
		} else {
			ck_assert_msg(s->v[i].val, "%s %s: no value", path, s->v[i].name);
			ck_assert_msg(s->v[i].len == vlen && memcmp(s->v[i].val, v, vlen) == 0, "%s %s: \"%.*s\" vs \"%.*s\"",
				      path, s->v[i].name, (int)s->v[i].len, (char *)s->v[i].val, (int)vlen, (char *)v);
			ck_assert(((char *)s->v[i].val)[vlen] == '\0');
		}
		free(v);
	}
	xa_set_free(s);
	free(l);
	return n;
}

START_TEST(e2e_xattr_all)
{
	h5_file *f;
	xa_set *s = NULL;
	uint64_t a;

	if (!py_ok)
		return;
	f = open_py("compact.h5");
	ck_assert_uint_gt(check_all(f, "/", 0), 5);
	ck_assert_uint_gt(check_all(f, "/", 1), 5);
	ck_assert_uint_ge(check_all(f, "/ds", 0), 7);   /* user.h5.* and attributes */
	check_all(f, "/cd", 0);
	/* a value over max_value is left to xa_get; so is every value
	 * of an object with more names than max_names */
	a = resolve(f, "/ds");
	ck_assert_int_eq(xa_all(&s, f, a, 0, 2, SIZE_MAX), 0);
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].name, "user.h5.layout") == 0)
			ck_assert_ptr_null(s->v[i].val);   /* "chunked:btree1" */
		else if (strcmp(s->v[i].name, "user.h5.dtype") == 0)
			ck_assert_ptr_null(s->v[i].val);   /* "<f4": 3 bytes */
	xa_set_free(s);
	s = NULL;
	ck_assert_int_eq(xa_all(&s, f, a, 0, SIZE_MAX, 1), H5_ERR_LIMIT);
	ck_assert_ptr_null(s);
	h5_file_close(f);

	f = open_py("dense.h5");
	ck_assert_uint_eq(check_all(f, "/nine", 0), 11);   /* dense storage, by name hash */
	ck_assert_uint_eq(check_all(f, "/big", 0), 10000);
	h5_file_close(f);
}
END_TEST

/* ---- real files from the HDF5 test suite ------------------------------------ */

static h5_file *open_corpus(const char *rel)
{
	char path[1024];
	h5_file *f = NULL;

	snprintf(path, sizeof(path), "%s/%s", test_corpus_dir(), rel);
	if (access(path, R_OK) != 0)
		return NULL;
	ck_assert_msg(h5_file_open(&f, path, NULL) == 0, "%s: %s", path, h5_err_msg());
	return f;
}

START_TEST(corpus_values)
{
	h5_file *f = open_corpus("tools/test/h5dump/testfiles/tattr2.h5");

	if (!f) {
		fprintf(stderr, "test_attr: corpus not found, skipping\n");
		return;
	}
	/* v1 attribute messages of every class (values as h5dump shows them) */
	XA(f, "/", "user.array", "[1, 2, 3], [4, 5, 6]");
	XA(f, "/", "user.bitfield", "0x01, 0x02");
	XA(f, "/", "user.compound", "{a: 1, b: 2.0}, {a: 3, b: 4.0}");
	XA(f, "/", "user.enum", "RED, RED");
	XA(f, "/", "user.float", "1.0, 2.0");
	XA(f, "/", "user.opaque", "0x01, 0x02");
	XA(f, "/", "user.string", "ab\nde");
	XA(f, "/", "user.vlen", "[1], [2, 3]");
	XA(f, "/", "user.integer3D", "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24");
	h5_file_close(f);

	f = open_corpus("tools/test/h5diff/testfiles/h5diff_attr1.h5");
	if (f) {
		XA(f, "/", "user.VLstring2D", "ab\ncd\nef\ngh\nij\nkl");
		h5_file_close(f);
	}
	/* big-endian integers of every size */
	f = open_corpus("tools/test/h5dump/testfiles/tattrintsize.h5");
	if (f) {
		void *v;
		size_t len;

		ck_assert_int_eq(xa_get(&v, &len, f, h5_file_root(f), "user.DU64BITS", 0), 0);
		ck_assert_int_eq(strncmp(v, "18446744073709551615, 18446744073709551614, ", 44), 0);
		free(v);
		ck_assert_int_eq(xa_get(&v, &len, f, h5_file_root(f), "user.DS08BITS", 0), 0);
		ck_assert_int_eq(strncmp(v, "-1, -2, -4, -8, -16, -32, -64, -128, -2,", 40), 0);
		free(v);
		h5_file_close(f);
	}
	/* an attribute with a null dataspace */
	f = open_corpus("test/testfiles/tnullspace.h5");
	if (f) {
		XA(f, "/", "user.attr", "");
		h5_file_close(f);
	}
	/* attributes with a committed datatype (v2 shared message) */
	f = open_corpus("tools/test/h5dump/testfiles/tnamed_dtype_attr.h5");
	if (f) {
		XA(f, "/Dataset", "user.Attribute", "8");
		XA(f, "/g1", "user.Attribute", "8");
		h5_file_close(f);
	}
}
END_TEST

/* A corrupt attribute is reported, never crashes: name longer than its message. */
START_TEST(corpus_corrupt)
{
	h5_file *f = open_corpus("test/testfiles/memleak_H5O_dtype_decode_helper_H5Odtype.h5");
	char *l = NULL;
	size_t len;
	void *v = NULL;

	if (!f)
		return;
	ck_assert_int_eq(xa_list(&l, &len, f, resolve(f, "/image")), H5_ERR_FORMAT);
	ck_assert_ptr_null(l);
	h5_file_close(f);
	f = open_corpus("tools/test/h5dump/testfiles/tCVE-2021-37501_attr_decode.h5");
	if (!f)
		return;
	ck_assert_int_eq(xa_get(&v, &len, f, resolve(f, "/input_1"), "user.weight_names", 0), H5_ERR_FORMAT);
	ck_assert_ptr_null(v);
	h5_file_close(f);
}
END_TEST

/* ---- datasets of variable-length types read as text (dataset.c) ------------- */

/* Written by h5py; for every dataset NAME, NAME.txt holds the text built
 * from h5py's values and NAME.off the file offset of its contiguous
 * storage (-1 when chunked), so tests can patch single elements. */
static const char *vl_script =
	"import sys, os\n"
	"import numpy as np, h5py\n"
	"d = sys.argv[1]\n"
	"s = h5py.string_dtype()\n"
	"out = {}\n"
	"def lines(vals):\n"
	"    return b''.join(v + b'\\n' for v in vals)\n"
	"with h5py.File(os.path.join(d, 'vl.h5'), 'w') as f:\n"
	"    w = ['one', '', 'caf\\u00e9', 'two\\nlines', 'x' * 5000]\n"
	"    f.create_dataset('words', data=np.array(w, dtype=object), dtype=s)\n"
	"    out['words'] = lines([x.encode() for x in w])\n"
	"    big = ['%d%s' % (i, 'y' * (i % 23)) for i in range(100000)]\n"
	"    big[7] = ''\n"
	"    f.create_dataset('big', data=np.array(big, dtype=object), dtype=s)\n"
	"    out['big'] = lines([x.encode() for x in big])\n"
	"    f.create_dataset('bigz', data=np.array(big, dtype=object), dtype=s, chunks=(999,),\n"
	"                     compression='gzip')\n"
	"    out['bigz'] = out['big']\n"
	"    f.create_dataset('grid', data=np.array([['a', 'bb'], ['', 'dddd']], dtype=object), dtype=s)\n"
	"    out['grid'] = b'a\\nbb\\n\\ndddd\\n'\n"
	"    f.create_dataset('scalar', data='only', dtype=s)\n"
	"    out['scalar'] = b'only\\n'\n"
	"    f.create_dataset('unwritten', shape=(4,), dtype=s)\n"
	"    out['unwritten'] = b'\\n' * 4\n"
	"    f.create_dataset('none', shape=(0,), dtype=s)\n"
	"    out['none'] = b''\n"
	"    vi = h5py.vlen_dtype(np.dtype('<i4'))\n"
	"    rag = np.empty(3000, dtype=object)\n"
	"    for i in range(3000):\n"
	"        rag[i] = np.arange(i % 5, dtype='<i4') - i\n"
	"    f.create_dataset('ragged', data=rag, dtype=vi)\n"
	"    out['ragged'] = lines([('[' + ', '.join(str(int(x)) for x in r) + ']').encode() for r in rag])\n"
	"    ct = np.dtype([('a', '<i2'), ('b', s)])\n"
	"    f.create_dataset('cmp', data=np.array([(1, 'x'), (-2, 'q\"\\n')], dtype=ct))\n"
	"    out['cmp'] = b'{a: 1, b: \"x\"}\\n{a: -2, b: \"q\\\\\"\\\\n\"}\\n'\n"
	"    f.create_dataset('fixed', data=np.array([b'ab', b'c'], dtype='S3'))\n"
	"    out['fixed'] = b'ab\\0c\\0\\0'\n"
	"    for k, v in out.items():\n"
	"        open(os.path.join(d, k + '.txt'), 'wb').write(v)\n"
	"        off = f[k].id.get_offset()\n"
	"        open(os.path.join(d, k + '.off'), 'w').write(str(-1 if off is None else off))\n";

static char vl_dir[64];
static int vl_ok;

static void vl_setup(void)
{
	vl_ok = gen_run(vl_dir, sizeof(vl_dir), "/tmp/h5fs_test_vlen_XXXXXX", vl_script, "vlen");
}

static void vl_teardown(void)
{
	gen_rmdir(vl_dir);
}

static uint8_t *vl_slurp(const char *name, size_t *len)
{
	char path[128];
	FILE *fp;
	uint8_t *p;
	long n;

	snprintf(path, sizeof(path), "%s/%s", vl_dir, name);
	fp = fopen(path, "rb");
	ck_assert_msg(fp != NULL, "%s", path);
	ck_assert_int_eq(fseek(fp, 0, SEEK_END), 0);
	n = ftell(fp);
	ck_assert(n >= 0);
	rewind(fp);
	p = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(fread(p, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return p;
}

static int64_t vl_offset(const char *ds)
{
	char name[64];
	size_t len;
	uint8_t *p;
	int64_t off;

	snprintf(name, sizeof(name), "%s.off", ds);
	p = vl_slurp(name, &len);
	p[len] = 0;
	off = strtoll((char *)p, NULL, 10);
	free(p);
	return off;
}

static h5_dataset *vl_open(h5_file *f, const char *name)
{
	h5_dataset *d = NULL;

	ck_assert_msg(h5_dataset_open(&d, f, resolve(f, name)) == 0, "%s: %s", name, h5_err_msg());
	return d;
}

/* The whole text, several windows (marks, element edges, the last byte)
 * and a window past the end against NAME.txt. */
static void vl_check(h5_file *f, const char *name)
{
	char txt[64];
	size_t wlen;
	uint8_t *want, *got;
	h5_dataset *d = vl_open(f, name);
	uint64_t size = h5_dataset_size(d);
	uint32_t seed = 12345;

	snprintf(txt, sizeof(txt), "%s.txt", name + 1);
	want = vl_slurp(txt, &wlen);
	ck_assert_msg(size == wlen, "%s: size %llu, text is %zu bytes", name, (unsigned long long)size, wlen);
	ck_assert_uint_eq(h5_dataset_size(d), size);    /* cached: the same answer */
	got = malloc(wlen + 1);
	ck_assert_ptr_nonnull(got);
	ck_assert_msg(h5_dataset_read(d, got, 0, wlen) == 0, "%s: %s", name, h5_err_msg());
	ck_assert_msg(memcmp(got, want, wlen) == 0, "%s: text differs", name);
	for (int i = 0; i < 300 && wlen; i++) {
		uint64_t off, len;

		seed = seed * 1103515245u + 12345u;
		off = (seed >> 4) % wlen;
		seed = seed * 1103515245u + 12345u;
		len = 1 + (seed >> 4) % (i % 3 == 0 ? 70000 : 40);
		if (off + len > wlen)
			len = wlen - off;
		memset(got, 0xee, len);
		ck_assert_msg(h5_dataset_read(d, got, off, (size_t)len) == 0, "%s [%llu+%llu]: %s", name,
			      (unsigned long long)off, (unsigned long long)len, h5_err_msg());
		ck_assert_msg(memcmp(got, want + off, (size_t)len) == 0, "%s: window [%llu+%llu] differs", name,
			      (unsigned long long)off, (unsigned long long)len);
	}
	if (wlen) {
		ck_assert_int_eq(h5_dataset_read(d, got, wlen - 1, 1), 0);
		ck_assert_int_eq(got[0], want[wlen - 1]);
	}
	ck_assert_int_eq(h5_dataset_read(d, got, wlen, 1), H5_ERR_INVAL);
	ck_assert_int_eq(h5_dataset_read(d, got, 0, wlen + 1), H5_ERR_INVAL);
	ck_assert_int_eq(h5_dataset_read(d, got, wlen, 0), 0);
	free(got);
	free(want);
	h5_dataset_close(d);
}

START_TEST(vlen_text_matches_h5py)
{
	static const char *const names[] = {
		"/words", "/big", "/bigz", "/grid", "/scalar", "/unwritten", "/none", "/ragged", "/cmp", "/fixed"
	};
	h5_file *f;

	if (!vl_ok)
		return;
	{
		char path[128];

		snprintf(path, sizeof(path), "%s/vl.h5", vl_dir);
		f = NULL;
		ck_assert_msg(h5_file_open(&f, path, NULL) == 0, "%s", h5_err_msg());
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		vl_check(f, names[i]);
	h5_file_close(f);
}
END_TEST

/* Windows read on their own, element by element around index marks (every
 * 1024 elements): each line of /big starts where the text says. */
START_TEST(vlen_index_marks)
{
	char path[128];
	h5_file *f = NULL;
	h5_dataset *d;
	size_t wlen;
	uint8_t *want, got[64];
	uint64_t pos = 0;

	if (!vl_ok)
		return;
	snprintf(path, sizeof(path), "%s/vl.h5", vl_dir);
	ck_assert_int_eq(h5_file_open(&f, path, NULL), 0);
	d = vl_open(f, "/big");
	want = vl_slurp("big.txt", &wlen);
	/* a read before any size query measures the text itself */
	ck_assert_int_eq(h5_dataset_read(d, got, 0, 4), 0);
	ck_assert_int_eq(memcmp(got, "0\n1y", 4), 0);
	for (uint64_t i = 0; i < 100000; i++) {
		const uint8_t *nl = memchr(want + pos, '\n', wlen - pos);
		uint64_t len = (uint64_t)(nl - (want + pos)) + 1;

		if (i % 1024 == 0 || i % 1024 == 1023 || i % 1024 == 1 || i > 99990) {
			size_t n = len < sizeof(got) ? (size_t)len : sizeof(got);

			ck_assert_int_eq(h5_dataset_read(d, got, pos, n), 0);
			ck_assert_msg(memcmp(got, want + pos, n) == 0, "element %llu", (unsigned long long)i);
			/* a window from the middle of one element into the next */
			if (pos + len + 2 <= wlen) {
				ck_assert_int_eq(h5_dataset_read(d, got, pos + len - 1, 3), 0);
				ck_assert_int_eq(memcmp(got, want + pos + len - 1, 3), 0);
			}
		}
		pos += len;
	}
	ck_assert_uint_eq(pos, wlen);
	free(want);
	h5_dataset_close(d);
	h5_file_close(f);
}
END_TEST

struct vl_thread {
	h5_dataset *d;
	const uint8_t *want;
	size_t wlen;
	unsigned seed;
	int bad;
};

static void *vl_reader(void *arg)
{
	struct vl_thread *t = arg;
	uint8_t *buf = malloc(20000);

	if (!buf) {
		t->bad = 1;
		return NULL;
	}
	for (int i = 0; i < 200 && !t->bad; i++) {
		uint64_t off, len;

		t->seed = t->seed * 1103515245u + 12345u;
		off = (t->seed >> 4) % t->wlen;
		t->seed = t->seed * 1103515245u + 12345u;
		len = 1 + (t->seed >> 4) % 20000;
		if (off + len > t->wlen)
			len = t->wlen - off;
		if (h5_dataset_read(t->d, buf, off, (size_t)len) != 0 || memcmp(buf, t->want + off, (size_t)len) != 0)
			t->bad = 1;
	}
	free(buf);
	return NULL;
}

/* Threads share one dataset whose text nobody measured yet. */
START_TEST(vlen_threads)
{
	char path[128];
	h5_file *f = NULL;
	h5_dataset *d;
	size_t wlen;
	uint8_t *want;
	pthread_t th[6];
	struct vl_thread t[6];

	if (!vl_ok)
		return;
	snprintf(path, sizeof(path), "%s/vl.h5", vl_dir);
	ck_assert_int_eq(h5_file_open(&f, path, NULL), 0);
	d = vl_open(f, "/bigz");
	want = vl_slurp("bigz.txt", &wlen);
	for (int i = 0; i < 6; i++) {
		t[i] = (struct vl_thread){ d, want, wlen, 77u + (unsigned)i, 0 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, vl_reader, &t[i]), 0);
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(!t[i].bad, "thread %d read wrong bytes or failed", i);
	}
	ck_assert_uint_eq(h5_dataset_size(d), wlen);
	free(want);
	h5_dataset_close(d);
	h5_file_close(f);
}
END_TEST

/* First occurrence of pat[0..n) in buf[0..len), or NULL. */
static uint8_t *vl_find(uint8_t *buf, size_t len, const char *pat, size_t n)
{
	for (size_t i = 0; i + n <= len; i++)
		if (memcmp(buf + i, pat, n) == 0)
			return buf + i;
	return NULL;
}

/* The file image, to be patched and opened from memory. */
static uint8_t *vl_image(size_t *len)
{
	return vl_slurp("vl.h5", len);
}

static h5_file *vl_open_mem(const uint8_t *img, size_t len)
{
	h5_file *f = NULL;

	ck_assert_msg(h5_file_open_mem(&f, img, len, NULL) == 0, "%s", h5_err_msg());
	return f;
}

/* Element i of the contiguous /words: 4-byte length, 8-byte collection
 * address, 4-byte object index. */
static uint8_t *vl_elem(uint8_t *img, int64_t base, unsigned i)
{
	return img + base + 16 * i;
}

START_TEST(vlen_null_and_bad_refs)
{
	size_t len, n;
	uint8_t *img, buf[64];
	int64_t base;
	h5_file *f;
	h5_dataset *d;

	if (!vl_ok)
		return;
	img = vl_image(&len);
	base = vl_offset("words");
	ck_assert(base > 0 && (size_t)base + 5 * 16 <= len);

	/* address 0 is a null string whatever its length: an empty line */
	memset(vl_elem(img, base, 0) + 4, 0, 8);
	f = vl_open_mem(img, len);
	d = vl_open(f, "/words");
	n = h5_dataset_size(d);
	ck_assert_uint_eq(n, 1 + 1 + 6 + 10 + 5001);
	ck_assert_int_eq(h5_dataset_read(d, buf, 0, 9), 0);
	ck_assert_int_eq(memcmp(buf, "\n\ncaf\xc3\xa9\ntw", 9), 0);
	h5_dataset_close(d);
	h5_file_close(f);
	free(img);

	/* a length beyond the heap object: the size trusts the length, the
	 * read of that element refuses; the other elements still read */
	img = vl_image(&len);
	h5_le_encode(vl_elem(img, base, 2), 1000, 4);
	f = vl_open_mem(img, len);
	d = vl_open(f, "/words");
	ck_assert_uint_eq(h5_dataset_size(d), 4 + 1 + 1001 + 10 + 5001);
	ck_assert_int_eq(h5_dataset_read(d, buf, 0, 5), 0);
	ck_assert_int_eq(memcmp(buf, "one\n\n", 5), 0);
	ck_assert_int_eq(h5_dataset_read(d, buf, 5, 1), H5_ERR_FORMAT);
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "global heap object"));
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "element 2"));
	/* skipping over the bad element needs only its length */
	ck_assert_int_eq(h5_dataset_read(d, buf, 4 + 1 + 1001, 4), 0);
	ck_assert_int_eq(memcmp(buf, "two\n", 4), 0);
	h5_dataset_close(d);
	h5_file_close(f);
	free(img);

	/* a heap address outside the file, an object index the collection
	 * lacks, the largest length */
	for (int k = 0; k < 3; k++) {
		img = vl_image(&len);
		if (k == 0)
			h5_le_encode(vl_elem(img, base, 0) + 4, (uint64_t)len + 4096, 8);
		else if (k == 1)
			h5_le_encode(vl_elem(img, base, 0) + 12, 60000, 4);
		else
			h5_le_encode(vl_elem(img, base, 0), 0xffffffffu, 4);
		f = vl_open_mem(img, len);
		d = vl_open(f, "/words");
		n = h5_dataset_size(d);
		ck_assert_uint_eq(n, (k == 2 ? 0xffffffffull + 1 : 4) + 1 + 6 + 10 + 5001);
		ck_assert_int_eq(h5_dataset_read(d, buf, 0, 1), H5_ERR_FORMAT);
		ck_assert_ptr_nonnull(strstr(h5_err_msg(), "0x"));
		h5_dataset_close(d);
		h5_file_close(f);
		free(img);
	}
}
END_TEST

/* Damage to the global heap itself (III.E "GCOL"). */
START_TEST(vlen_bad_heap)
{
	size_t len;
	uint8_t *img, *gcol, buf[16];
	h5_file *f;
	h5_dataset *d;

	if (!vl_ok)
		return;
	img = vl_image(&len);
	gcol = vl_find(img, len, "GCOL", 4);
	ck_assert_ptr_nonnull(gcol);
	for (; gcol; gcol = vl_find(gcol, len - (size_t)(gcol - img), "GCOL", 4))
		memcpy(gcol, "GCOX", 4);
	f = vl_open_mem(img, len);

	/* strings: measured from their lengths, reading them fails */
	d = vl_open(f, "/words");
	ck_assert_uint_eq(h5_dataset_size(d), 4 + 1 + 6 + 10 + 5001);
	ck_assert_int_eq(h5_dataset_read(d, buf, 0, 1), H5_ERR_FORMAT);
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "global heap"));
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "signature"));
	h5_dataset_close(d);

	/* sequences must be rendered to be measured: the size falls back to
	 * one newline per element and every read reports the damage, the
	 * same way each time */
	d = vl_open(f, "/ragged");
	ck_assert_uint_eq(h5_dataset_size(d), 3000);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(h5_dataset_read(d, buf, 0, 1), H5_ERR_FORMAT);
		ck_assert_ptr_nonnull(strstr(h5_err_msg(), "signature"));
		ck_assert_ptr_nonnull(strstr(h5_err_msg(), "element"));
	}
	h5_dataset_close(d);
	h5_file_close(f);
	free(img);

	/* the first collection (holding /words) claims more bytes than the
	 * file has, or fewer than its objects need */
	for (int k = 0; k < 2; k++) {
		img = vl_image(&len);
		gcol = vl_find(img, len, "GCOL", 4);
		h5_le_encode(gcol + 8, k == 0 ? (uint64_t)len * 2 : 64, 8);
		f = vl_open_mem(img, len);
		d = vl_open(f, "/words");
		ck_assert_int_eq(h5_dataset_read(d, buf, 0, 1), H5_ERR_FORMAT);
		ck_assert_ptr_nonnull(strstr(h5_err_msg(), "global heap at 0x"));
		h5_dataset_close(d);
		h5_file_close(f);
		free(img);
	}
}
END_TEST

/* A string type too small to hold a heap reference. */
START_TEST(vlen_small_type)
{
	size_t len;
	uint8_t *img, *p, buf[4];
	h5_file *f;
	h5_dataset *d;
	int hits = 0;

	if (!vl_ok)
		return;
	img = vl_image(&len);
	/* datatype message: class 9 version 1, bits: string (1), UTF-8 (1 << 8), size 16 */
	for (p = img; (p = vl_find(p, len - (size_t)(p - img), "\x19\x01\x01\x00\x10\x00\x00\x00", 8)) != NULL; p++) {
		p[4] = 8;
		hits++;
	}
	ck_assert_int_gt(hits, 0);
	f = vl_open_mem(img, len);
	d = vl_open(f, "/words");
	ck_assert_uint_eq(h5_dataset_size(d), 5);       /* the fallback: one newline each */
	ck_assert_int_eq(h5_dataset_read(d, buf, 0, 1), H5_ERR_FORMAT);
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "heap reference"));
	h5_dataset_close(d);
	h5_file_close(f);
	free(img);
}
END_TEST

START_TEST(vlen_reserved)
{
	char path[128];
	h5_file *f = NULL;
	void *v = NULL;
	size_t len;

	if (!vl_ok)
		return;
	snprintf(path, sizeof(path), "%s/vl.h5", vl_dir);
	ck_assert_int_eq(h5_file_open(&f, path, NULL), 0);
	XA(f, "/words", "user.h5.dtype", "|O");
	XA(f, "/words", "user.h5.text", "strings");
	XA(f, "/grid", "user.h5.shape", "2,2");
	XA(f, "/ragged", "user.h5.dtype", "|O");
	XA(f, "/ragged", "user.h5.text", "values");
	XA(f, "/ragged", "user.h5.fill", "[]");
	XA(f, "/cmp", "user.h5.dtype", "|O");
	XA(f, "/cmp", "user.h5.text", "values");
	XA(f, "/cmp", "user.h5.descr", "[('a', '<i2'), ('b', '|O')]");
	XA(f, "/fixed", "user.h5.dtype", "|S3");
	ck_assert_int_eq(xa_get(&v, &len, f, resolve(f, "/fixed"), "user.h5.text", 0), H5_ERR_NOTFOUND);
	{
		char *l = list_str(f, "/words", NULL);

		ck_assert_ptr_nonnull(strstr(l, "|user.h5.text|"));
		free(l);
		l = list_str(f, "/fixed", NULL);
		ck_assert_ptr_null(strstr(l, "user.h5.text"));
		free(l);
	}
	h5_file_close(f);
}
END_TEST

/* The names a copy sets back are the names listed (issue 83 item 3):
 * attribute h5.X is listed as user.h5.attr.h5.X and that name sets it;
 * user.h5.attr.X (X without "h5.") sets h5.X as before; the description
 * keys are reserved, other user.h5.* names too. */
START_TEST(write_names)
{
	static const struct {
		const char *xattr, *attr;
		enum xa_write_kind kind;
	} cases[] = {
		{ "user.units", "units", XA_W_ATTR },
		{ "user.h5.attr.h5.note", "h5.note", XA_W_ATTR },
		{ "user.h5.attr.h5.h5.x", "h5.h5.x", XA_W_ATTR },
		{ "user.h5.attr.tag", "h5.tag", XA_W_ATTR },
		{ "user.h5.new.i4.cnt", "cnt", XA_W_TYPED },
		{ "user.h5.dtype", "", XA_W_RESERVED },
		{ "user.h5.view", "", XA_W_RESERVED },
		{ "trusted.x", "", XA_W_OTHER },
		{ "user.", "", XA_W_OTHER },
	};
	char attr[256], ts[8];
	size_t len;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum xa_write_kind k = xa_write_name(cases[i].xattr, attr, &len, ts);

		ck_assert_msg(k == cases[i].kind, "%s: kind %d, not %d", cases[i].xattr, k, cases[i].kind);
		if (k == XA_W_ATTR || k == XA_W_TYPED)
			ck_assert_msg(strcmp(attr, cases[i].attr) == 0 && len == strlen(cases[i].attr), "%s: attribute %s",
				      cases[i].xattr, attr);
	}
	for (const char *const *k = (const char *const[]){ "dtype", "shape", "maxshape", "chunks", "filters", "fill",
							  "layout", "descr", "text", NULL }; *k; k++)
		ck_assert_msg(xa_meta_key(*k), "%s is a description key", *k);
	ck_assert(!xa_meta_key("view"));
	ck_assert(!xa_meta_key("attr.x"));
}
END_TEST

static Suite *attr_suite(void)
{
	Suite *s = suite_create("attr");
	TCase *tc = tcase_create("decode");
	TCase *tv = tcase_create("value");
	TCase *te = tcase_create("h5py");
	TCase *tvl = tcase_create("vlen");

	tcase_add_test(tc, attr_decode_versions);
	tcase_add_test(tc, attr_decode_v1_padding);
	tcase_add_test(tc, attr_decode_truncated);
	tcase_add_test(tc, attr_decode_corrupt);
	tcase_add_test(tc, attr_decode_null_space);
	suite_add_tcase(s, tc);

	/* decode and value start no thread: the TSan make check leaves them
	 * out by this tag (run-sanitizers.sh CK_EXCLUDE_TAGS); ASan's and the
	 * plain make check run them */
	tcase_set_tags(tc, "nothreads");
	tcase_set_tags(tv, "nothreads");
	tcase_set_timeout(tv, 60);
	tcase_add_test(tv, value_integers);
	tcase_add_test(tv, value_integer_array);
	tcase_add_test(tv, value_float_table);
	tcase_add_test(tv, value_float_shortest);
	tcase_add_test(tv, value_float_fast_vs_printf);
	tcase_add_test(tv, value_float_vs_python);
	tcase_add_test(tv, value_strings);
	tcase_add_test(tv, value_typestr);
	tcase_add_test(tv, write_names);
	suite_add_tcase(s, tv);

	tcase_set_timeout(te, 120);
	tcase_add_unchecked_fixture(te, py_setup, py_teardown);
	tcase_add_test(te, e2e_compact_values);
	tcase_add_test(te, e2e_reserved);
	tcase_add_test(te, dataset_meta_data);
	tcase_add_test(te, e2e_raw);
	tcase_add_test(te, e2e_compact_list);
	tcase_add_test(te, e2e_dense);
	tcase_add_test(te, e2e_which);
	tcase_add_test(te, e2e_which_kept);
	tcase_add_test(te, e2e_attr_epoch);
	tcase_add_test(te, e2e_ten_thousand);
	tcase_add_test(te, e2e_xattr_all);
	tcase_add_test(te, corpus_values);
	tcase_add_test(te, corpus_corrupt);
	suite_add_tcase(s, te);

	tcase_set_timeout(tvl, 120);
	tcase_add_unchecked_fixture(tvl, vl_setup, vl_teardown);
	tcase_add_test(tvl, vlen_text_matches_h5py);
	tcase_add_test(tvl, vlen_index_marks);
	tcase_add_test(tvl, vlen_threads);
	tcase_add_test(tvl, vlen_null_and_bad_refs);
	tcase_add_test(tvl, vlen_bad_heap);
	tcase_add_test(tvl, vlen_small_type);
	tcase_add_test(tvl, vlen_reserved);
	suite_add_tcase(s, tvl);
	return s;
}

H5_TEST_MAIN(attr_suite)
