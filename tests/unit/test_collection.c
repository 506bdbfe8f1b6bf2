/* test_collection.c - the engine-free parts of collections (src/fuse):
 * the id map (idmap.c: (slot, local id) <-> global id across a member's
 * epochs) and the local-DIR backend (coll_local.c: list, stat, bytes,
 * members), on a temp dir made here. */
#include "testutil.h"

#include "coll_backend.h"
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

static char tmpdir[64];

static void put(const char *rel, const void *bytes, size_t len)
{
	char p[512];
	FILE *fp;

	snprintf(p, sizeof(p), "%s/%s", tmpdir, rel);
	fp = fopen(p, "wb");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(bytes, 1, len, fp), len);
	ck_assert_int_eq(fclose(fp), 0);
}

static void setup(void)
{
	char p[512], l[512];

	strcpy(tmpdir, "/tmp/h5fs-test-coll-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(p, sizeof(p), "%s/sub", tmpdir);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	put("readme.txt", "hello\n", 6);
	put("sub/fake.h5", "not HDF5 at all, although named so", 34);
	snprintf(p, sizeof(p), "%s/nowhere", tmpdir);
	snprintf(l, sizeof(l), "%s/dangling", tmpdir);
	ck_assert_int_eq(symlink(p, l), 0);
	snprintf(p, sizeof(p), "%s/readme.txt", tmpdir);
	snprintf(l, sizeof(l), "%s/sub/link.txt", tmpdir);
	ck_assert_int_eq(symlink(p, l), 0);
}

static void teardown(void)
{
	test_tmp_remove(tmpdir);
}

static const struct coll_dirent *find(const struct coll_dirent *d, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(d[i].name, name) == 0)
			return &d[i];
	return NULL;
}

/* A listing: folders and files (symlinks followed, a dangling one left
 * out), with sizes; stat of one path. */
START_TEST(local_list_and_stat)
{
	const struct coll_backend *be = coll_backend_of(tmpdir);
	struct coll_dirent *d = NULL;
	const struct coll_dirent *e;
	struct coll_stat st;
	h5_open_opts oo = { 0 };
	size_t n = 0;
	void *b = NULL;

	ck_assert_ptr_eq(be, &coll_local);
	ck_assert_int_eq(be->open(&b, tmpdir, &oo), 0);
	ck_assert_int_eq(be->list(b, &d, &n, ""), 0);
	ck_assert_uint_eq(n, 2);
	e = find(d, n, "sub");
	ck_assert(e && e->st.is_dir && !e->st.is_file);
	e = find(d, n, "readme.txt");
	ck_assert(e && e->st.is_file && e->st.size == 6);
	ck_assert_ptr_null(find(d, n, "dangling"));
	coll_dirents_free(d, n);
	ck_assert_int_eq(be->list(b, &d, &n, "sub"), 0);
	ck_assert_uint_eq(n, 2);
	e = find(d, n, "link.txt");
	ck_assert(e && e->st.is_file && e->st.size == 6);
	coll_dirents_free(d, n);
	ck_assert_int_eq(be->stat(b, &st, "sub/fake.h5"), 0);
	ck_assert(st.is_file && st.size == 34 && st.mtime_ns > 0);
	ck_assert_int_eq(be->stat(b, &st, "sub/none"), ENOENT);
	ck_assert_int_eq(be->list(b, &d, &n, "readme.txt"), ENOTDIR);
	be->close(b);
}
END_TEST

/* A file's bytes through the byte source; a member that is not HDF5 is
 * EIO with the engine's message. */
START_TEST(local_bytes_and_members)
{
	const struct coll_backend *be = coll_backend_of(tmpdir);
	h5_open_opts oo = { 0 };
	h5_source *src = NULL;
	h5_file *f = NULL;
	char buf[6];
	void *b = NULL;

	ck_assert_int_eq(be->open(&b, tmpdir, &oo), 0);
	ck_assert_str_eq(be->tree(b), tmpdir);
	ck_assert_int_eq(be->open_source(b, &src, "sub/link.txt"), 0);
	ck_assert_int_eq(src->ops->read(src, 0, buf, 6), 0);
	ck_assert_int_eq(memcmp(buf, "hello\n", 6), 0);
	ck_assert_int_lt(src->ops->read(src, 4, buf, 6), 0);    /* past the end */
	h5_err_clear();
	h5_source_close(src);
	ck_assert_int_eq(be->open_source(b, &src, "missing"), ENOENT);
	ck_assert_int_eq(be->open_member(b, &f, "sub/fake.h5", &oo), EIO);
	ck_assert_ptr_null(f);
	ck_assert_str_ne(h5_err_msg(), "");
	h5_err_clear();
	be->close(b);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("collection");
	TCase *ids = tcase_create("idmap");
	TCase *loc = tcase_create("local");

	tcase_add_test(ids, ids_from_first_and_stable);
	tcase_add_test(ids, epochs);
	tcase_add_test(ids, many_ids_both_ways);
	suite_add_tcase(s, ids);
	tcase_add_checked_fixture(loc, setup, teardown);
	tcase_add_test(loc, local_list_and_stat);
	tcase_add_test(loc, local_bytes_and_members);
	suite_add_tcase(s, loc);
	return s;
}

H5_TEST_MAIN(make_suite)
