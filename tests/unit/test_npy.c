/* test_npy.c - the .npy header parser (src/common/npy.c) on headers as
 * numpy writes them (npy_vectors.h: every numeric dtype, both byte orders,
 * format versions 1.0, 2.0 and 3.0, scalar and empty shapes; Fortran
 * order, structured, bytes and unicode dtypes taken; object and datetime
 * dtypes refused), cut short at
 * every length (more bytes asked for, never a wrong answer), and broken
 * ones; and the merge of overwritten extents (write/overwrite.c). */
#include "testutil.h"
#include "npy.h"
#include "ow_int.h"

#include <errno.h>

#include "npy_vectors.h"

#define NVEC (sizeof(npy_vectors) / sizeof(npy_vectors[0]))

static unsigned size_of(const char *name)
{
	const char *p = name[0] == '>' ? name + 1 : name;

	if (!strcmp(p, "?"))
		return 1;
	return (unsigned)atoi(p + 1);
}

START_TEST(npy_numpy_headers)
{
	for (size_t i = 0; i < NVEC; i++) {
		const struct npy_vec *v = &npy_vectors[i];
		npy_header h;
		char err[160];
		int rc = npy_parse(&h, (const uint8_t *)v->bytes, v->len, err, sizeof(err));

		if (v->name[0] == '!') {
			ck_assert_msg(rc == -EOPNOTSUPP, "%s: %d (%s)", v->name, rc, err);
			ck_assert(err[0]);
			continue;
		}
		ck_assert_msg(rc == 0, "%s: %d (%s)", v->name, rc, err);
		ck_assert_uint_eq(h.data_offset, v->len);
		ck_assert_uint_eq(h.data_offset % 64, 0);
		ck_assert_uint_eq(h.rank, v->rank);
		for (unsigned d = 0; d < v->rank; d++)
			ck_assert_uint_eq(h.shape[d], v->shape[d]);
		if (strchr(v->name, '-') == NULL && strcmp(v->name, "scalar") && strcmp(v->name, "empty")) {
			ck_assert_uint_eq(h.itemsize, size_of(v->name));
			ck_assert_int_eq(h.big_endian, v->name[0] == '>');
			ck_assert_int_eq(h.kind, v->name[0] == '?' ? 'b' : v->name[v->name[0] == '>'] );
		}
		ck_assert_uint_eq(h.nbytes, h.nelmts * h.itemsize);
		/* issue 57: Fortran order, structured, bytes and unicode dtypes taken */
		ck_assert_int_eq(h.fortran, strncmp(v->name, "fortran", 7) == 0);
		if (!strncmp(v->name, "struct-", 7)) {
			/* struct-i4: one <i4 field; struct-16: an aligned one of 16 bytes */
			const char *sz = v->name + 7 + (v->name[7] == 'i');

			ck_assert_msg(h.kind == 'V' && h.itemsize == (unsigned)atoi(sz), "%s: %c %u", v->name, h.kind,
				      h.itemsize);
		}
		if (!strncmp(v->name, "unicode-", 8))
			ck_assert_msg(h.kind == 'U' && h.itemsize == 12 && h.big_endian, "%s", v->name);
		if (!strncmp(v->name, "str-", 4))
			ck_assert_msg(h.kind == 'S' && h.itemsize == 3 && !strcmp(h.descr, "'|S3'"), "%s", v->name);
	}
}
END_TEST

START_TEST(npy_versions)
{
	unsigned seen[4] = { 0 };

	for (size_t i = 0; i < NVEC; i++) {
		npy_header h;

		if (npy_parse(&h, (const uint8_t *)npy_vectors[i].bytes, npy_vectors[i].len, NULL, 0) == 0)
			seen[h.major]++;
	}
	ck_assert(seen[1] && seen[2] && seen[3]);
}
END_TEST

/* Every prefix asks for more (a count beyond it) or, once the magic is
 * wrong, fails: never a header from fewer bytes than it has. */
START_TEST(npy_short)
{
	for (size_t i = 0; i < NVEC; i++) {
		const struct npy_vec *v = &npy_vectors[i];

		for (size_t n = 0; n < v->len; n++) {
			npy_header h;
			char err[160];
			int rc = npy_parse(&h, (const uint8_t *)v->bytes, n, err, sizeof(err));

			ck_assert_msg(rc > 0 && (size_t)rc > n && (size_t)rc <= v->len, "%s at %zu: %d", v->name, n, rc);
		}
	}
}
END_TEST

static int parse_text(const char *dict, unsigned major)
{
	uint8_t buf[512];
	size_t pre = major == 1 ? 10 : 12, n = strlen(dict);
	npy_header h;
	char err[160];

	memcpy(buf, "\x93NUMPY", 6);
	buf[6] = (uint8_t)major;
	buf[7] = 0;
	memset(buf + 8, 0, 4);
	buf[8] = (uint8_t)(n + 1);
	memcpy(buf + pre, dict, n);
	buf[pre + n] = '\n';
	return npy_parse(&h, buf, pre + n + 1, err, sizeof(err));
}

START_TEST(npy_broken)
{
	npy_header h;

	ck_assert_int_eq(parse_text("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 1), 0);
	ck_assert_int_eq(parse_text("{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (3L,)}", 2), 0);
	ck_assert_int_eq(parse_text("{'descr': '<f8', 'shape': (3,), }", 1), -EINVAL);
	ck_assert_int_eq(parse_text("{'descr': '<f8', 'fortran_order': Maybe, 'shape': (3,), }", 1), -EINVAL);
	ck_assert_int_eq(parse_text("{'descr': '<f8', 'fortran_order': False, 'shape': (3, -1), }", 1), -EINVAL);
	ck_assert_int_eq(parse_text("{'descr': '<f8', 'fortran_order': False, 'shape': [3], }", 1), -EINVAL);
	ck_assert_int_eq(parse_text("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'x': 1}", 1), -EINVAL);
	ck_assert_int_eq(parse_text("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), } x", 1), -EINVAL);
	ck_assert_int_eq(parse_text("{'descr': 'f8', 'fortran_order': False, 'shape': (3,), }", 1), -EINVAL);
	ck_assert_int_eq(parse_text("{'descr': '<f16', 'fortran_order': False, 'shape': (3,), }", 1), -EOPNOTSUPP);
	ck_assert_int_eq(parse_text("{'descr': '<i3', 'fortran_order': False, 'shape': (3,), }", 1), -EOPNOTSUPP);
	ck_assert_int_eq(parse_text("{'descr': '<f8', 'fortran_order': False, "
				    "'shape': (4294967296, 4294967296, 4294967296), }", 1), -EINVAL);
	ck_assert_int_eq(parse_text("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 4), -EOPNOTSUPP);
	ck_assert_int_eq(npy_parse(&h, (const uint8_t *)"\x93NUMPX\x01\x00\x00\x00", 10, NULL, 0), -EINVAL);
	ck_assert_int_eq(npy_parse(&h, (const uint8_t *)"PK\x03", 3, NULL, 0), -EINVAL);
	/* a header without its newline */
	ck_assert_int_eq(npy_parse(&h, (const uint8_t *)"\x93NUMPY\x01\x00\x02\x00{}", 12, NULL, 0), -EINVAL);
}
END_TEST

/* Overwritten extents become disjoint ranges in offset order, each byte
 * its last value. */
START_TEST(ow_merge)
{
	uint8_t a[] = "aaaaaaaa", b[] = "bbb", c[] = "cc", d[] = "d";
	h5_ow_ext ext[] = {
		{ .off = 10, .len = 8, .p = a },
		{ .off = 40, .len = 3, .p = b },        /* alone */
		{ .off = 14, .len = 3, .p = b },        /* inside a */
		{ .off = 16, .len = 2, .p = c },        /* over a's end, b's last */
		{ .off = 18, .len = 1, .p = d },        /* adjacent: joins */
		{ .off = 9, .len = 2, .p = c },         /* before a, over its first */
	};
	h5_ow_ext *r = NULL;
	size_t m = 0;

	ck_assert_int_eq(h5_ow_merge(&r, &m, ext, 6), 0);
	ck_assert_uint_eq(m, 2);
	ck_assert_uint_eq(r[0].off, 9);
	ck_assert_uint_eq(r[0].len, 10);
	ck_assert(memcmp(r[0].p, "ccaaabbccd", 10) == 0);
	ck_assert_uint_eq(r[1].off, 40);
	ck_assert(memcmp(r[1].p, "bbb", 3) == 0);
	h5_ow_free(r, m);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("npy");
	TCase *tc = tcase_create("npy");

	tcase_add_test(tc, npy_numpy_headers);
	tcase_add_test(tc, npy_versions);
	tcase_add_test(tc, npy_short);
	tcase_add_test(tc, npy_broken);
	tcase_add_test(tc, ow_merge);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
