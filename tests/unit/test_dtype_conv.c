/* test_dtype_conv.c - n-bit numbers as values (format/dtype_conv.c, issue
 * 83 item 1): integers and bit fields at a bit offset or precision
 * sign-/zero-extended into their container, padding bits ignored, either
 * byte order; n-bit floats as the IEEE float of their size; compound
 * members converted in place, other bytes kept; whole elements only.
 * Datatype messages built byte by byte as spec IV.A.2.d lays them out;
 * the expected values are what h5py (libhdf5's conversion) reads of such
 * types (tests/integration/test_nbit_values.py checks them against it).
 */
#include "config.h"
#include "testutil.h"
#include "dtype.h"
#include "value.h"

#include <string.h>

static void head(tbuf *b, unsigned version, unsigned cls, uint32_t bits, uint32_t size)
{
	tb_u8(b, version << 4 | cls);
	tb_u8(b, bits & 0xff);
	tb_u8(b, (bits >> 8) & 0xff);
	tb_u8(b, (bits >> 16) & 0xff);
	tb_u32(b, size);
}

/* class 0 (or 4, a bit field): bit 0 byte order, bits 1-2 lsb/msb pad, bit 3 signed */
static void dt_int(tbuf *b, unsigned cls, uint32_t size, bool sgn, bool be, unsigned pad, unsigned off,
		   unsigned prec)
{
	head(b, 1, cls, (be ? 1u : 0u) | pad << 1 | (sgn ? 8u : 0u), size);
	tb_u16(b, off);
	tb_u16(b, prec);
}

static h5_dtype *decode(const tbuf *b)
{
	h5_dtype *t = NULL;
	int rc = h5_dtype_decode(&t, b->p, b->len, NULL);

	ck_assert_msg(rc == 0, "dtype decode: %s", h5_err_msg());
	return t;
}

static void put(uint8_t *p, uint64_t v, unsigned size, bool be)
{
	for (unsigned i = 0; i < size; i++)
		p[be ? size - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get(const uint8_t *p, unsigned size, bool be)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)p[be ? size - 1 - i : i] << (8 * i);
	return v;
}

/* hdf5json's h5ex_d_nbit.h5: int32, precision 16, offset 5, both orders,
 * padding bits zero or one */
START_TEST(signed_int32_prec16_off5)
{
	for (int be = 0; be < 2; be++) {
		for (unsigned pad = 0; pad < 4; pad += 3) {
			tbuf b = { 0 };
			const int32_t vals[] = { 0, -1, -2, 32767, -32768, 12345 };
			uint8_t buf[6 * 4];
			h5_dtype *t;

			dt_int(&b, 0, 4, true, be, pad, 5, 16);
			t = decode(&b);
			ck_assert(h5_dtype_conv_needed(t));
			for (int i = 0; i < 6; i++) {
				uint32_t bits = ((uint32_t)vals[i] & 0xffff) << 5;

				if (pad)        /* lsb and msb padding ones */
					bits |= 0x1fu | 0xffe00000u;
				put(buf + 4 * i, bits, 4, be);
			}
			ck_assert_int_eq(h5_dtype_conv_values(t, buf, sizeof(buf)), 0);
			for (int i = 0; i < 6; i++)
				ck_assert_int_eq((int32_t)(uint32_t)get(buf + 4 * i, 4, be), vals[i]);
			h5_dtype_free(t);
			tb_free(&b);
		}
	}
}
END_TEST

START_TEST(unsigned_and_bitfield)
{
	tbuf b = { 0 };
	uint8_t buf[4];
	h5_dtype *t;

	/* uint32, precision 16, offset 5: 65535 stays positive */
	dt_int(&b, 0, 4, false, false, 0, 5, 16);
	t = decode(&b);
	put(buf, 0xffffu << 5 | 0x1f, 4, false);
	ck_assert_int_eq(h5_dtype_conv_values(t, buf, 4), 0);
	ck_assert_uint_eq(get(buf, 4, false), 65535);
	h5_dtype_free(t);
	tb_free(&b);
	/* a bit field of 2 bytes, 3 bits at offset 2, big-endian: no sign */
	b = (tbuf){ 0 };
	dt_int(&b, 4, 2, true, true, 0, 2, 3);
	t = decode(&b);
	ck_assert(h5_dtype_conv_needed(t));
	put(buf, 0x7u << 2 | 0xff00, 2, true);
	ck_assert_int_eq(h5_dtype_conv_values(t, buf, 2), 0);
	ck_assert_uint_eq(get(buf, 2, true), 7);
	h5_dtype_free(t);
	tb_free(&b);
}
END_TEST

/* a full-width integer needs nothing and is left as it is */
START_TEST(full_width_untouched)
{
	tbuf b = { 0 };
	uint8_t buf[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, was[8];
	h5_dtype *t;

	memcpy(was, buf, 8);
	dt_int(&b, 0, 4, true, false, 0, 0, 32);
	t = decode(&b);
	ck_assert(!h5_dtype_conv_needed(t));
	ck_assert_int_eq(h5_dtype_conv_values(t, buf, 8), 0);
	ck_assert_mem_eq(buf, was, 8);
	/* a partial element is refused, whatever the type */
	ck_assert_int_eq(h5_dtype_conv_values(t, buf, 6), H5_ERR_INVAL);
	h5_dtype_free(t);
	tb_free(&b);
}
END_TEST

/* libhdf5's n-bit float test type: 4 bytes, precision 20 at offset 7,
 * sign bit 26, exponent 6 bits at 20 (bias 31), mantissa 13 bits at 7 */
static void dt_nbit_float(tbuf *b, bool be)
{
	head(b, 1, 1, (be ? 1u : 0u) | 2u << 4 | 26u << 8, 4);
	tb_u16(b, 7);
	tb_u16(b, 20);
	tb_u8(b, 20);
	tb_u8(b, 6);
	tb_u8(b, 7);
	tb_u8(b, 13);
	tb_u32(b, 31);
}

static uint32_t nbit_float_bits(bool neg, unsigned e, unsigned m)
{
	return (neg ? 1u << 26 : 0) | e << 20 | m << 7;
}

START_TEST(nbit_float_to_ieee)
{
	for (int be = 0; be < 2; be++) {
		tbuf b = { 0 };
		uint8_t buf[4 * 4];
		const float want[] = { 1.5f, -2.25f, 0.0f, 100.125f };
		h5_dtype *t;
		char *ts = NULL;

		dt_nbit_float(&b, be);
		t = decode(&b);
		ck_assert(h5_dtype_conv_needed(t));
		ck_assert(h5_dtype_conv_float(t));
		ck_assert_int_eq(h5_value_typestr(&ts, t), 0);
		ck_assert_str_eq(ts, be ? ">f4" : "<f4");
		free(ts);
		/* 1.5 = 1.1b * 2^0; -2.25 = -1.001b * 2^1; 100.125 = 1.100100001b * 2^6 */
		put(buf, nbit_float_bits(false, 31, 1u << 12), 4, be);
		put(buf + 4, nbit_float_bits(true, 32, 1u << 10), 4, be);
		put(buf + 8, 0x7fu, 4, be);     /* zero, low padding bits set */
		put(buf + 12, nbit_float_bits(false, 37, 0x1210u), 4, be);
		ck_assert_int_eq(h5_dtype_conv_values(t, buf, sizeof(buf)), 0);
		for (int i = 0; i < 4; i++) {
			uint32_t u = (uint32_t)get(buf + 4 * i, 4, be);
			float f;

			memcpy(&f, &u, 4);
			ck_assert_msg(f == want[i], "element %d: %g, not %g", i, f, want[i]);
		}
		h5_dtype_free(t);
		tb_free(&b);
	}
}
END_TEST

/* compound {a: int8 of 4 bits at offset 2, at 0; b: int16 full, at 1}:
 * a converted, b's bytes kept */
START_TEST(compound_members)
{
	tbuf b = { 0 };
	uint8_t buf[3 * 2];
	h5_dtype *t;

	head(&b, 3, 6, 2, 3);
	tb_put(&b, "a", 2);
	tb_u8(&b, 0);
	dt_int(&b, 0, 1, true, false, 0, 2, 4);
	tb_put(&b, "b", 2);
	tb_u8(&b, 1);
	dt_int(&b, 0, 2, true, false, 0, 0, 16);
	t = decode(&b);
	ck_assert(h5_dtype_conv_needed(t));
	buf[0] = 0xf << 2 | 3;          /* -1, padding bits set */
	put(buf + 1, 0xbeef, 2, false);
	buf[3] = 0x7 << 2;              /* 7 */
	put(buf + 4, 0x1234, 2, false);
	ck_assert_int_eq(h5_dtype_conv_values(t, buf, sizeof(buf)), 0);
	ck_assert_int_eq((int8_t)buf[0], -1);
	ck_assert_uint_eq(get(buf + 1, 2, false), 0xbeef);
	ck_assert_int_eq((int8_t)buf[3], 7);
	ck_assert_uint_eq(get(buf + 4, 2, false), 0x1234);
	h5_dtype_free(t);
	tb_free(&b);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("dtype_conv");
	TCase *tc = tcase_create("dtype_conv");

	tcase_add_test(tc, signed_int32_prec16_off5);
	tcase_add_test(tc, unsigned_and_bitfield);
	tcase_add_test(tc, full_width_untouched);
	tcase_add_test(tc, nbit_float_to_ieee);
	tcase_add_test(tc, compound_members);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
