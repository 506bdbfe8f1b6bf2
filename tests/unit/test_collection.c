/* test_collection.c - the daemon's engine-free part of collections
 * (src/fuse): the id map (idmap.c: (slot, local id) <-> global id across
 * a member's epochs). The backends are the collection library's:
 * test_coll.c. */
#include "testutil.h"

#include "idmap.h"
#include "source.h"
#include "file.h"

#include <errno.h>
#include <sys/stat.h>

#define SYNTH ((uint64_t)1 << 63)

START_TEST(ids_from_first_and_stable)
{
	struct idmap im;
	struct gid *a, *b, *c;

	ck_assert_int_eq(idmap_init(&im, 1), 0);
	a = idmap_get(&im, 0, 1, 0, 0, NULL, 1);
	ck_assert_uint_eq(a->g, 1);
	b = idmap_get(&im, 1, 1, 1, 0, NULL, 1);        /* another slot's local 1 */
	ck_assert_uint_eq(b->g, 2);
	c = idmap_get(&im, 1, 0x802, 1, b->g, "ds", 1);
	ck_assert_uint_eq(c->g, 3);
	ck_assert_ptr_eq(idmap_get(&im, 1, 0x802, 1, 0, NULL, 0), c);
	ck_assert_ptr_eq(idmap_by_global(&im, 3), c);
	ck_assert_str_eq(c->name, "ds");
	ck_assert_uint_eq(c->parent, 2);
	ck_assert_ptr_null(idmap_by_global(&im, 4));
	idmap_free(&im);
}
END_TEST

/* An object's header address + 2 means the same object in every epoch
 * of a member; a per-path (synthetic) id does not: a new entry, and the
 * old one is rebound when resolved again by (parent, name). */
START_TEST(epochs)
{
	struct idmap im;
	struct gid *obj, *dir, *dir2;

	ck_assert_int_eq(idmap_init(&im, 1), 0);
	obj = idmap_get(&im, 2, 0x1000, 1, 5, "data", 1);
	dir = idmap_get(&im, 2, SYNTH | 7, 1, 5, "grp", 1);
	ck_assert_ptr_eq(idmap_get(&im, 2, 0x1000, 2, 0, NULL, 0), obj);
	ck_assert_uint_eq(obj->epoch, 1);       /* named in epoch 2, not resolved */
	ck_assert_ptr_eq(idmap_get(&im, 2, 0x1000, 2, 0, NULL, 1), obj);
	ck_assert_uint_eq(obj->epoch, 2);
	ck_assert_ptr_null(idmap_by_local(&im, 2, SYNTH | 7, 2));
	dir2 = idmap_get(&im, 2, SYNTH | 7, 2, 0, NULL, 0);  /* another object now */
	ck_assert_uint_ne(dir2->g, dir->g);
	ck_assert_uint_eq(dir2->epoch, 0);      /* only named: resolve it first */
	idmap_rebind(&im, dir, SYNTH | 9, 2);
	ck_assert_ptr_eq(idmap_by_local(&im, 2, SYNTH | 9, 2), dir);
	ck_assert_ptr_eq(idmap_by_global(&im, dir->g), dir);
	ck_assert_uint_eq(dir->local, SYNTH | 9);
	idmap_free(&im);
}
END_TEST

START_TEST(many_ids_both_ways)
{
	struct idmap im;
	uint64_t i;

	ck_assert_int_eq(idmap_init(&im, 100), 0);
	for (i = 0; i < 20000; i++)
		ck_assert_uint_eq(idmap_get(&im, (uint32_t)(i % 7), i * 16 + 2, 1, 0, NULL, 1)->g, 100 + i);
	for (i = 0; i < 20000; i++) {
		struct gid *x = idmap_by_global(&im, 100 + i);

		ck_assert_ptr_nonnull(x);
		ck_assert_uint_eq(x->local, i * 16 + 2);
		ck_assert_ptr_eq(idmap_by_local(&im, (uint32_t)(i % 7), i * 16 + 2, 3), x);
	}
	ck_assert_uint_eq(im.n, 20000);
	idmap_free(&im);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("collection");
	TCase *ids = tcase_create("idmap");

	tcase_add_test(ids, ids_from_first_and_stable);
	tcase_add_test(ids, epochs);
	tcase_add_test(ids, many_ids_both_ways);
	suite_add_tcase(s, ids);
	return s;
}

H5_TEST_MAIN(make_suite)
