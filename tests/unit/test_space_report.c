/* test_space_report.c - the space report's extent arithmetic
 * (space_extents.c): the union of extents, each byte counted once, split
 * at the end of allocation, per kind; and h5_addrset, the walk's visited
 * set. */
#include "testutil.h"
#include "space_report.h"
#include "addrset.h"
#include "keytab.h"

static h5_space_sums merge(h5_space_ext *v, size_t n, uint64_t eoa)
{
	h5_space_sums s;

	h5_space_merge(&s, v, n, eoa);
	return s;
}

START_TEST(merge_empty)
{
	h5_space_sums s = merge(NULL, 0, 1000);

	ck_assert_uint_eq(s.used, 0);
	ck_assert_uint_eq(s.past_eoa, 0);
	ck_assert_uint_eq(s.by_kind[H5_SPACE_META], 0);
}
END_TEST

START_TEST(merge_overlaps)
{
	h5_space_ext v[] = {
		{ 100, 50, H5_SPACE_META },     /* [100, 150) */
		{ 0, 48, H5_SPACE_META },       /* [0, 48): the superblock */
		{ 120, 10, H5_SPACE_META },     /* inside the first: nothing new */
		{ 140, 20, H5_SPACE_META },     /* over its end: 10 new */
		{ 160, 40, H5_SPACE_RAW },      /* adjacent: joins the run */
		{ 100, 50, H5_SPACE_META },     /* the same block reached twice */
		{ 500, 8, H5_SPACE_RAW },
	};
	h5_space_sums s = merge(v, 7, 1000);

	ck_assert_uint_eq(s.used, 48 + 100 + 8);
	ck_assert_uint_eq(s.by_kind[H5_SPACE_META], 48 + 60);
	ck_assert_uint_eq(s.by_kind[H5_SPACE_RAW], 40 + 8);
	ck_assert_uint_eq(s.past_eoa, 0);
	/* sorted in place */
	for (size_t i = 1; i < 7; i++)
		ck_assert_uint_le(v[i - 1].addr, v[i].addr);
}
END_TEST

/* a byte both kinds claim counts once in used, once in each kind */
START_TEST(merge_kinds_overlap)
{
	h5_space_ext v[] = { { 0, 100, H5_SPACE_META }, { 50, 100, H5_SPACE_RAW } };
	h5_space_sums s = merge(v, 2, 1000);

	ck_assert_uint_eq(s.used, 150);
	ck_assert_uint_eq(s.by_kind[H5_SPACE_META], 100);
	ck_assert_uint_eq(s.by_kind[H5_SPACE_RAW], 100);
}
END_TEST

START_TEST(merge_eoa_split)
{
	h5_space_ext v[] = {
		{ 0, 100, H5_SPACE_META },
		{ 900, 200, H5_SPACE_RAW },     /* straddles eoa = 1000: 100 + 100 */
		{ 2000, 10, H5_SPACE_META },    /* wholly past */
		{ 1000, 5, H5_SPACE_META },     /* starts at eoa: past, joins the straddler */
	};
	h5_space_sums s = merge(v, 4, 1000);

	ck_assert_uint_eq(s.used, 200);
	ck_assert_uint_eq(s.past_eoa, 110);
	ck_assert_uint_eq(s.by_kind[H5_SPACE_RAW], 100);
	ck_assert_uint_eq(s.by_kind[H5_SPACE_META], 100);
}
END_TEST

/* lengths from disk may run past 2^64: saturated, never wrapped */
START_TEST(merge_saturates)
{
	h5_space_ext v[] = { { 10, UINT64_MAX, H5_SPACE_META }, { 20, 5, H5_SPACE_META } };
	h5_space_sums s = merge(v, 2, 100);

	ck_assert_uint_eq(s.used, 90);
	ck_assert_uint_eq(s.past_eoa, UINT64_MAX - 100);
}
END_TEST

START_TEST(list_add)
{
	h5_space_list l = { 0 };

	for (uint64_t i = 0; i < 1000; i++)
		ck_assert_int_eq(h5_space_list_add(&l, i * 10, i % 3, H5_SPACE_RAW), 0);
	/* zero lengths are dropped */
	ck_assert_uint_eq(l.n, 1000 - 334);
	h5_space_list_free(&l);
	ck_assert_ptr_null(l.v);
}
END_TEST

START_TEST(addrset)
{
	h5_addrset s = { 0 };

	for (uint64_t a = 0; a < 5000; a++)
		ck_assert_int_eq(h5_addrset_add(&s, a * 7919), 1);
	for (uint64_t a = 0; a < 5000; a++)
		ck_assert_int_eq(h5_addrset_add(&s, a * 7919), 0);
	ck_assert_uint_eq(s.t.n, 5000);
	/* address 0 is an address (its key is 1) */
	ck_assert_int_eq(h5_addrset_add(&s, 0), 0);
	h5_addrset_free(&s);
}
END_TEST

/* keytab.c, the table under addrset and the overwriters' chunk tables:
 * entries keep their payload across growth, a cleared table is empty,
 * key 0 (a free slot) is refused. */
START_TEST(keytab)
{
	struct ent {
		uint64_t key;
		uint64_t v;
	} *e;
	h5_keytab t = H5_KEYTAB(struct ent);
	void *p;
	size_t seen = 0;

	for (uint64_t k = 1; k <= 3000; k++) {
		ck_assert_int_eq(h5_keytab_get(&p, &t, k * 0x10001), 1);
		e = p;
		ck_assert_uint_eq(e->v, 0);
		e->v = k;
	}
	ck_assert_uint_eq(t.n, 3000);
	ck_assert_uint_ge(t.cap, 6000);
	for (uint64_t k = 1; k <= 3000; k++) {
		ck_assert_int_eq(h5_keytab_get(&p, &t, k * 0x10001), 0);
		ck_assert_uint_eq(((struct ent *)p)->v, k);
	}
	for (size_t i = 0; i < t.cap; i++)
		if ((e = h5_keytab_slot(&t, i)) != NULL) {
			ck_assert_uint_eq(e->key, e->v * 0x10001);
			seen++;
		}
	ck_assert_uint_eq(seen, 3000);
	ck_assert_ptr_null(h5_keytab_slot(&t, t.cap));
	ck_assert_int_lt(h5_keytab_get(&p, &t, 0), 0);
	h5_err_clear();
	h5_keytab_clear(&t);
	ck_assert_uint_eq(t.n, 0);
	ck_assert_int_eq(h5_keytab_get(&p, &t, 0x10001), 1);
	ck_assert_uint_eq(((struct ent *)p)->v, 0);
	h5_keytab_free(&t);
	ck_assert_ptr_null(t.slots);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("space_report");
	TCase *tc = tcase_create("extents");

	tcase_add_test(tc, merge_empty);
	tcase_add_test(tc, merge_overlaps);
	tcase_add_test(tc, merge_kinds_overlap);
	tcase_add_test(tc, merge_eoa_split);
	tcase_add_test(tc, merge_saturates);
	tcase_add_test(tc, list_add);
	tcase_add_test(tc, addrset);
	tcase_add_test(tc, keytab);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
