/* test_core.c - the bounded reader, little-endian helpers and error messages. */
#include "testutil.h"
#include "base.h"
#include "rd.h"
#include "file.h"

START_TEST(rd_reads_little_endian)
{
	const uint8_t b[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09};
	h5_rd r;

	h5_rd_init(&r, b, sizeof(b));
	ck_assert_uint_eq(h5_rd_u8(&r), 0x01);
	ck_assert_uint_eq(h5_rd_u16(&r), 0x0302);
	ck_assert_uint_eq(h5_rd_u32(&r), 0x07060504);
	ck_assert_uint_eq(h5_rd_left(&r), 2);
	ck_assert(h5_rd_ok(&r));
}
END_TEST

START_TEST(rd_overrun_is_sticky)
{
	const uint8_t b[] = {0xff, 0xff, 0xff};
	h5_rd r;

	h5_rd_init(&r, b, sizeof(b));
	ck_assert_uint_eq(h5_rd_u32(&r), 0);
	ck_assert(!h5_rd_ok(&r));
	/* Once bad, even an in-range read yields 0 and nothing is trusted. */
	ck_assert_uint_eq(h5_rd_u8(&r), 0);
	ck_assert_uint_eq(h5_rd_left(&r), 0);
	ck_assert_ptr_null(h5_rd_bytes(&r, 1));
}
END_TEST

START_TEST(rd_addr_undefined_for_each_width)
{
	const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	const unsigned widths[] = {2, 4, 8};

	for (size_t i = 0; i < 3; i++) {
		h5_fmt fmt = {.sizeof_addr = (uint8_t)widths[i], .sizeof_size = (uint8_t)widths[i]};
		h5_rd r;

		h5_rd_init(&r, ones, sizeof(ones));
		ck_assert_uint_eq(h5_rd_addr(&r, &fmt), H5_ADDR_UNDEF);
		ck_assert(h5_rd_ok(&r));
	}
	{
		const uint8_t b[] = {0x34, 0x12, 0xfe, 0xff};
		h5_fmt fmt = {.sizeof_addr = 4, .sizeof_size = 4};
		h5_rd r;

		h5_rd_init(&r, b, sizeof(b));
		ck_assert_uint_eq(h5_rd_addr(&r, &fmt), 0xfffe1234u);
	}
}
END_TEST

START_TEST(rd_bytes_and_skip_are_bounded)
{
	const uint8_t b[] = {1, 2, 3, 4};
	h5_rd r;
	const uint8_t *p;

	h5_rd_init(&r, b, sizeof(b));
	h5_rd_skip(&r, 1);
	p = h5_rd_bytes(&r, 2);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p[0], 2);
	h5_rd_skip(&r, SIZE_MAX); /* must not wrap around */
	ck_assert(!h5_rd_ok(&r));
}
END_TEST

START_TEST(le_roundtrip)
{
	uint8_t b[8];

	for (unsigned n = 1; n <= 8; n++) {
		uint64_t v = UINT64_C(0x8877665544332211) >> (8 * (8 - n));

		h5_le_encode(b, v, n);
		ck_assert_uint_eq(h5_le_decode(b, n), v);
	}
}
END_TEST

START_TEST(err_keeps_message_and_wraps)
{
	int rc = h5_err_set(H5_ERR_FORMAT, "EAHD at 0x%x: bad version %u", 0x40, 7u);

	ck_assert_int_eq(rc, H5_ERR_FORMAT);
	ck_assert_str_eq(h5_err_msg(), "EAHD at 0x40: bad version 7");
	rc = h5_err_wrap(rc, "dataset %s: ", "/a");
	ck_assert_int_eq(rc, H5_ERR_FORMAT);
	ck_assert_str_eq(h5_err_msg(), "dataset /a: EAHD at 0x40: bad version 7");
	h5_err_clear();
	ck_assert_str_eq(h5_err_msg(), "no error");
	ck_assert_str_eq(h5_err_name(H5_ERR_CHECKSUM), "checksum mismatch");
}
END_TEST

START_TEST(overflow_helpers)
{
	uint64_t r;

	ck_assert(h5_add_overflow(UINT64_MAX, 1, &r));
	ck_assert(!h5_add_overflow(1, 2, &r));
	ck_assert_uint_eq(r, 3);
	ck_assert(h5_mul_overflow(UINT64_C(1) << 33, UINT64_C(1) << 31, &r));
}
END_TEST

START_TEST(file_mem_rejects_garbage)
{
	static const uint8_t junk[4096] = {1, 2, 3};
	h5_file *f = NULL;
	int rc = h5_file_open_mem(&f, junk, sizeof(junk), NULL);

	ck_assert_int_eq(rc, H5_ERR_NOTHDF5);
	ck_assert_ptr_null(f);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("core");
	TCase *tc = tcase_create("rd");

	tcase_add_test(tc, rd_reads_little_endian);
	tcase_add_test(tc, rd_overrun_is_sticky);
	tcase_add_test(tc, rd_addr_undefined_for_each_width);
	tcase_add_test(tc, rd_bytes_and_skip_are_bounded);
	tcase_add_test(tc, le_roundtrip);
	tcase_add_test(tc, err_keeps_message_and_wraps);
	tcase_add_test(tc, overflow_helpers);
	tcase_add_test(tc, file_mem_rejects_garbage);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
