/* test_refs_sum.c - the summaries of h5fs-ls --refs --concat
 * (src/tools/refs_sum.c): an h5py file (a dimension scale "time", a
 * variable along it in chunks of 2 steps, a constant without it) walked
 * into a summary whose records say what the combination needs (the axis,
 * the coordinate's values and the collection's order key, the constant's
 * hash, every chunk); then the decoder on every cut of it and on damaged
 * bytes: an error or fewer records, never a read outside the buffer (the
 * sanitizer build checks that). */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5core.h"
#include "refs_sum.h"
#include "cf_time.h"
#include "testutil.h"

static const char gen[] =
	"import sys, os\n"
	"try:\n"
	"    import h5py, numpy as np\n"
	"except ImportError:\n"
	"    sys.exit(77)\n"
	"with h5py.File(os.path.join(sys.argv[1], 's.h5'), 'w') as f:\n"
	"    t = f.create_dataset('time', data=np.arange(6, dtype='<f8') + 40.0)\n"
	"    t.make_scale('time')\n"
	"    v = f.create_dataset('temp', data=np.arange(60, dtype='<f4').reshape(6, 10), chunks=(2, 10))\n"
	"    x = f.create_dataset('x', data=np.arange(10, dtype='<i4'))\n"
	"    x.make_scale('x')\n"
	"    v.dims[0].attach_scale(t)\n"
	"    v.dims[1].attach_scale(x)\n"
	"    f.create_dataset('lat', data=np.arange(10, dtype='<i4'))\n";

static char tmp[64];
static uint8_t *sum;
static size_t sum_len;

static void setup(void)
{
	char path[128];
	h5_file *f = NULL;
	refs_opts ro = { .url = "/x/s.h5", .file = "s.h5", .inline_max = 0, .no_progress = 1 };
	rs_opts so = { .dim = "time", .inline_max = 0, .values_max = 1 << 20 };
	int rc;

	snprintf(tmp, sizeof(tmp), "/tmp/h5fs-refs-sum-XXXXXX");
	rc = test_py_run(tmp, gen, NULL);
	if (rc != 0) {
		fprintf(stderr, "test_refs_sum: no h5py (%d): not checked\n", rc);
		return;
	}
	snprintf(path, sizeof(path), "%s/s.h5", tmp);
	ck_assert_int_eq(h5_file_open(&f, path, NULL), 0);
	ck_assert_int_eq(rs_scan(&sum, &sum_len, f, &ro, &so), 0);
	h5_file_close(f);
}

static void teardown(void)
{
	free(sum);
	sum = NULL;
	test_tmp_remove(tmp);
}

START_TEST(records)
{
	rs_opts so = { .dim = "time", .inline_max = 0, .values_max = 1 << 20 };
	rs_head h;
	rs_reader rd;
	rs_rec r;
	int rc, arrays = 0, chunks = 0, temp = 0;

	if (!sum)
		return;
	ck_assert_int_eq(rs_open(&h, &rd, sum, sum_len), 0);
	ck_assert(rs_matches(&h, &so));
	so.dim = "x";
	ck_assert(!rs_matches(&h, &so));
	ck_assert_int_eq(h.nerr, 0);
	ck_assert(h.has_key);
	ck_assert(h.key == 40.0);
	while ((rc = rs_next(&r, &rd)) == 1) {
		if (r.kind == RS_ARRAY) {
			arrays++;
			temp = strcmp(r.prefix, "temp/") == 0;
			if (strcmp(r.prefix, "time/") == 0) {
				ck_assert_uint_eq(r.flags & (RS_AXIS | RS_COORD | RS_VALUES), RS_AXIS | RS_COORD | RS_VALUES);
				ck_assert_uint_eq(r.nvalues, 6 * 8);
			} else if (temp) {
				ck_assert_uint_eq(r.flags & (RS_AXIS | RS_COORD | RS_HASH), RS_AXIS);
				ck_assert_int_eq(r.axis, 0);
				ck_assert_uint_eq(r.chunks[0], 2);
				ck_assert_uint_eq(r.shape[0], 6);
			} else {
				/* lat, and the scale x: without time */
				ck_assert(strcmp(r.prefix, "lat/") == 0 || strcmp(r.prefix, "x/") == 0);
				ck_assert_uint_eq(r.flags & (RS_AXIS | RS_HASH), RS_HASH);
			}
		} else if (r.kind == RS_CHUNK && temp) {
			chunks++;
			ck_assert(r.url == NULL);       /* the member's own */
			ck_assert(r.data == NULL);
			ck_assert_uint_lt(r.idx[0], 3);
		}
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(arrays, 4);
	ck_assert_int_eq(chunks, 3);
}
END_TEST

/* Every cut of the body, and every byte changed: the decoder stops with
 * an error or at the end, within the bytes it was given. */
START_TEST(damage)
{
	rs_head h;
	rs_reader rd0, rd;
	rs_rec r;
	size_t body;

	if (!sum)
		return;
	ck_assert_int_eq(rs_open(&h, &rd0, sum, sum_len), 0);
	body = (size_t)(rd0.end - rd0.p);
	for (size_t cut = 0; cut < body; cut++) {
		uint8_t *copy = malloc(cut ? cut : 1);
		int rc, n = 0;

		memcpy(copy, rd0.p, cut);
		rd.p = copy;
		rd.end = copy + cut;
		rd.rank = 0;
		while ((rc = rs_next(&r, &rd)) == 1)
			n++;
		ck_assert(rc == 0 || rc == H5_ERR_FORMAT);
		free(copy);
	}
	for (size_t at = 0; at < body; at++) {
		uint8_t *copy = malloc(body);
		int rc;

		memcpy(copy, rd0.p, body);
		copy[at] ^= 0xA5;
		rd.p = copy;
		rd.end = copy + body;
		rd.rank = 0;
		while ((rc = rs_next(&r, &rd)) == 1)
			;
		ck_assert(rc == 0 || rc == H5_ERR_FORMAT);
		free(copy);
	}
	/* the header: any cut is refused */
	for (size_t cut = 0; cut < sum_len; cut++)
		ck_assert_int_eq(rs_open(&h, &rd, sum, cut), H5_ERR_FORMAT);
}
END_TEST

/* CF time units (src/tools/cf_time.c): what --concat re-encodes a
 * file's time coordinate with, and what it refuses. */
static int64_t recode_i8(const char *from, const char *to, const char *cal, int64_t v, int *rc)
{
	cf_units a, b;
	char why[256];

	ck_assert_int_eq(cf_units_parse(&a, from, cal, why, sizeof(why)), 0);
	ck_assert_int_eq(cf_units_parse(&b, to, cal, why, sizeof(why)), 0);
	*rc = cf_recode((uint8_t *)&v, 1, "<i8", &a, &b, why, sizeof(why));
	return v;
}

START_TEST(cf_time)
{
	cf_units u;
	char why[256];
	int rc;
	double d = 0.5;
	uint8_t be[4] = { 0, 0, 0, 5 };   /* >i4 5 */

	/* xarray's per-day files: hours since each day, into the first's */
	ck_assert_int_eq(recode_i8("hours since 2021-03-02 00:00:00", "hours since 2021-03-01", "proleptic_gregorian",
				   23, &rc), 47);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(recode_i8("days since 2000-01-03", "hours since 2000-01-01T00:00Z", NULL, 1, &rc), 72);
	/* 12 hours is no whole day */
	recode_i8("hours since 2000-01-03", "days since 2000-01-01", NULL, 12, &rc);
	ck_assert_int_eq(rc, -1);
	/* calendars: 2000 is a leap year but for noleap; the standard
	 * calendar's switch from Julian to Gregorian days */
	ck_assert_int_eq(recode_i8("days since 2001-03-01", "days since 2000-02-28", "noleap", 0, &rc), 366);
	ck_assert_int_eq(recode_i8("days since 2001-03-01", "days since 2000-02-28", "proleptic_gregorian", 0, &rc),
			 367);
	ck_assert_int_eq(recode_i8("days since 2001-03-01", "days since 2000-02-28", "360_day", 0, &rc), 363);
	ck_assert_int_eq(recode_i8("days since 1582-10-15", "days since 1582-10-04", "gregorian", 0, &rc), 1);
	ck_assert_int_eq(recode_i8("days since 1582-10-15", "days since 1582-10-04", "proleptic_gregorian", 0, &rc),
			 11);
	/* time zones: the same instant */
	ck_assert_int_eq(recode_i8("hours since 2000-01-01 00:00:00 +01:00", "hours since 1999-12-31 23:00:00",
				   NULL, 5, &rc), 5);
	/* out of range: INT64_MIN (xarray's NaT) moved by a day */
	recode_i8("days since 2000-01-01", "days since 2000-01-02", NULL, INT64_MIN, &rc);
	ck_assert_int_eq(rc, -1);
	/* floats, and big-endian integers */
	{
		cf_units a, b;

		ck_assert_int_eq(cf_units_parse(&a, "days since 2000-01-02", NULL, why, sizeof(why)), 0);
		ck_assert_int_eq(cf_units_parse(&b, "hours since 2000-01-01", NULL, why, sizeof(why)), 0);
		ck_assert_int_eq(cf_recode((uint8_t *)&d, 1, "<f8", &a, &b, why, sizeof(why)), 0);
		ck_assert(d == 36.0);
		ck_assert_int_eq(cf_recode(be, 1, ">i4", &a, &b, why, sizeof(why)), 0);
		ck_assert_int_eq((be[2] << 8) | be[3], 24 + 5 * 24);
		ck_assert_int_eq(cf_recode(be, 1, "|b1", &a, &b, why, sizeof(why)), -1);
	}
	/* what is not CF time, or not supported */
	ck_assert_int_eq(cf_units_parse(&u, "m", NULL, why, sizeof(why)), 1);
	ck_assert_int_eq(cf_units_parse(&u, "degrees_north", NULL, why, sizeof(why)), 1);
	ck_assert_int_eq(cf_units_parse(&u, "months since 2000-01-01", NULL, why, sizeof(why)), -1);
	ck_assert(strstr(why, "no fixed length") != NULL);
	ck_assert_int_eq(cf_units_parse(&u, "days since 2021-02-29", "standard", why, sizeof(why)), -1);
	ck_assert_int_eq(cf_units_parse(&u, "days since 2020-02-29", "standard", why, sizeof(why)), 0);
	ck_assert_int_eq(cf_units_parse(&u, "days since 1582-10-10", "standard", why, sizeof(why)), -1);
	ck_assert_int_eq(cf_units_parse(&u, "days since 2000-01-01", "lunar", why, sizeof(why)), -1);
	ck_assert_int_eq(cf_units_parse(&u, "days since 2000-01-01 garbage", NULL, why, sizeof(why)), -1);
	ck_assert(cf_same_calendar("gregorian", "standard"));
	ck_assert(cf_same_calendar(NULL, "Standard"));
	ck_assert(!cf_same_calendar("noleap", "standard"));
	ck_assert_int_eq(cf_units_parse(&u, "seconds since 1970-01-01", NULL, why, sizeof(why)), 0);
	ck_assert(cf_seconds(&u, 10) == 10.0);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("refs_sum");
	TCase *tc = tcase_create("summary"), *tt = tcase_create("cf_time");

	tcase_add_test(tt, cf_time);
	suite_add_tcase(s, tt);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, records);
	tcase_add_test(tc, damage);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
