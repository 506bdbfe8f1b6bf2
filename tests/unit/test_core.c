/* test_core.c - the bounded reader, little-endian helpers, error messages
 * and the loader of libraries opened on first use (dl.c). */
#include "testutil.h"
#include "base.h"
#include "rd.h"
#include "file.h"
#include "h5util.h"
#include "dl.h"

#include <pthread.h>
#include <stdarg.h>
#include <unistd.h>

static int h5_sb_vprintf_test(h5_sb *s, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = h5_sb_vprintf(s, fmt, ap);
	va_end(ap);
	return rc;
}

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

/* ---- dl.c: libm stands in for a codec library (always there) ---------- */

static const char *const absent_names[] = { "libh5fs-test-absent.so.0", "libh5fs-test-absent.so", NULL };
static const char *const libm_names[] = { "libh5fs-test-absent.so.0", "libm.so.6", NULL };

START_TEST(dl_missing_library)
{
	void *p = NULL;
	const h5_dl_sym syms[] = { { "cos", &p }, { NULL, NULL } };
	h5_dl d = { .what = "test codec", .package = "h5fs-test-pkg", .names = absent_names, .syms = syms };
	const char *want = "test codec: libh5fs-test-absent.so.0 not found: install h5fs-test-pkg (";

	ck_assert_int_eq(h5_dl_need(&d), H5_ERR_UNSUPPORTED);
	ck_assert_msg(strncmp(h5_err_msg(), want, strlen(want)) == 0, "%s", h5_err_msg());
	/* every later call fails the same, with the message set again */
	h5_err_clear();
	ck_assert_int_eq(h5_dl_need(&d), H5_ERR_UNSUPPORTED);
	ck_assert_msg(strncmp(h5_err_msg(), want, strlen(want)) == 0, "%s", h5_err_msg());
	ck_assert_ptr_null(p);
}
END_TEST

START_TEST(dl_missing_symbol)
{
	void *p = NULL, *q = NULL;
	const h5_dl_sym syms[] = { { "cos", &p }, { "h5fs_no_such_symbol", &q }, { NULL, NULL } };
	h5_dl d = { .what = "test codec", .package = "libc6", .names = libm_names, .syms = syms,
		    .min_version = "9.9" };

	ck_assert_int_eq(h5_dl_need(&d), H5_ERR_UNSUPPORTED);
	ck_assert_str_eq(h5_err_msg(), "test codec: the library has no h5fs_no_such_symbol: too old (9.9 or later needed)");
	ck_assert_int_eq(h5_dl_need(&d), H5_ERR_UNSUPPORTED);
}
END_TEST

static int dl_ready_calls;
static double (*dl_cos)(double);
static const h5_dl_sym dl_cos_syms[] = { { "cos", (void **)&dl_cos }, { NULL, NULL } };

static void dl_ready(void)
{
	dl_ready_calls++;
}

static h5_dl dl_shared = { .what = "test codec", .package = "libc6", .names = libm_names, .syms = dl_cos_syms,
			   .ready = dl_ready };

static void *dl_worker(void *arg)
{
	int *rc = arg;

	*rc = h5_dl_need(&dl_shared);
	if (*rc == 0 && dl_cos(0.0) != 1.0)
		*rc = -1000;
	return NULL;
}

/* Threads racing to the first use: one load, one ready, every caller sees
 * the table filled (the second name of the list served). */
START_TEST(dl_loads_once_across_threads)
{
	pthread_t t[8];
	int rc[8];

	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, dl_worker, &rc[i]), 0);
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		ck_assert_int_eq(rc[i], 0);
	}
	ck_assert_int_eq(dl_ready_calls, 1);
	ck_assert_int_eq(h5_dl_need(&dl_shared), 0);
	ck_assert_int_eq(dl_ready_calls, 1);
}
END_TEST

/* H5FS_TEST_DL_DIR: the sonames are opened from that directory only, so
 * an empty one makes dlopen of an installed library fail. */
START_TEST(dl_test_dir_hides_libraries)
{
	char dir[] = "/tmp/h5fs-dl-XXXXXX";
	void *p = NULL;
	const h5_dl_sym syms[] = { { "cos", &p }, { NULL, NULL } };
	h5_dl d = { .what = "test codec", .package = "libc6", .names = libm_names + 1, .syms = syms };

	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("H5FS_TEST_DL_DIR", dir, 1);
	ck_assert_int_eq(h5_dl_need(&d), H5_ERR_UNSUPPORTED);
	ck_assert_msg(strstr(h5_err_msg(), "libm.so.6 not found: install libc6") != NULL, "%s", h5_err_msg());
	ck_assert_msg(strstr(h5_err_msg(), dir) != NULL, "%s", h5_err_msg());
	unsetenv("H5FS_TEST_DL_DIR");
	rmdir(dir);
	ck_assert_ptr_null(p);
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

/* ---- the utility surface (h5util.h) ---------------------------------------- */

START_TEST(path_join_one_slash)
{
	static const struct { const char *dir, *name, *want; } c[] = {
		{ "", "a", "/a" },              /* the root of an HDF5 path */
		{ "/", "a", "/a" },
		{ "/g", "a", "/g/a" },
		{ "dir/", "x.h5", "dir/x.h5" },
		{ "/d", "", "/d/" },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		char *p = h5_path_join(c[i].dir, c[i].name);

		ck_assert_ptr_nonnull(p);
		ck_assert_str_eq(p, c[i].want);
		free(p);
	}
	{
		char *p = h5_path_join_n("/abc", 2, "xyz", 1);

		ck_assert_str_eq(p, "/a/x");
		free(p);
	}
}
END_TEST

START_TEST(utf8_valid_cases)
{
	ck_assert(h5_utf8_valid("", 0));
	ck_assert(h5_utf8_valid("abc", 3));
	ck_assert(h5_utf8_valid("\xc3\xa9", 2));                /* e acute */
	ck_assert(h5_utf8_valid("\xe2\x82\xac", 3));            /* euro */
	ck_assert(h5_utf8_valid("\xf0\x9f\x98\x80", 4));        /* emoji */
	ck_assert(!h5_utf8_valid("\xc3", 1));                   /* cut short */
	ck_assert(!h5_utf8_valid("\xe2\x82", 2));
	ck_assert(!h5_utf8_valid("\xc0\x80", 2));               /* overlong lead */
	ck_assert(!h5_utf8_valid("\xf5\x80\x80\x80", 4));       /* beyond U+10FFFF */
	ck_assert(!h5_utf8_valid("\x80", 1));                   /* a lone continuation */
	ck_assert(!h5_utf8_valid("a\xc3(", 3));                 /* not a continuation */
}
END_TEST

START_TEST(sb_bounds_and_long_printf)
{
	h5_sb s = { 0 };
	char *out;
	size_t len;
	char big[1000];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	ck_assert_int_eq(h5_sb_printf(&s, "%s", big), H5_ERR_INVAL);   /* short pieces only */
	ck_assert_int_eq(h5_sb_vprintf_test(&s, "%s", big), 0);        /* any length */
	ck_assert_uint_eq(s.len, sizeof(big) - 1);
	s.max = s.len + 2;
	ck_assert_int_eq(h5_sb_puts(&s, "ab"), 0);
	ck_assert_int_eq(h5_sb_puts(&s, "c"), H5_ERR_LIMIT);
	ck_assert_int_eq(h5_sb_finish(&out, &len, &s), 0);
	ck_assert_uint_eq(len, sizeof(big) + 1);
	ck_assert_ptr_null(s.p);
	free(out);
	ck_assert_int_eq(h5_sb_finish(&out, &len, &s), 0);             /* nothing: "" */
	ck_assert_str_eq(out, "");
	free(out);
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
	tc = tcase_create("util");
	tcase_add_test(tc, path_join_one_slash);
	tcase_add_test(tc, utf8_valid_cases);
	tcase_add_test(tc, sb_bounds_and_long_printf);
	suite_add_tcase(s, tc);
	tc = tcase_create("dl");
	tcase_add_test(tc, dl_missing_library);
	tcase_add_test(tc, dl_missing_symbol);
	tcase_add_test(tc, dl_loads_once_across_threads);
	tcase_add_test(tc, dl_test_dir_hides_libraries);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
