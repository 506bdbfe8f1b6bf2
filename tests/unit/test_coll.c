/* test_coll.c - the collection library (src/coll, no FUSE): the local
 * backend, the signature rule, the walk, and h5fs-find's predicates. */
#include "testutil.h"

#include "coll_backend.h"
#include "coll_walk.h"
#include "source.h"
#include "file.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The signature rule: at 0, or after a user block at 512, 1024, ...;
 * nowhere else. */
START_TEST(signature_rule)
{
	static const uint8_t sig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
	uint8_t buf[4096];
	h5_source *src = NULL;

	memset(buf, 0, sizeof(buf));
	memcpy(buf, sig, 8);
	ck_assert_int_eq(h5_source_open_mem(&src, buf, sizeof(buf)), 0);
	ck_assert(coll_sig_hdf5(src, sizeof(buf)));
	h5_source_close(src);
	memset(buf, 0, sizeof(buf));
	memcpy(buf + 2048, sig, 8);
	ck_assert_int_eq(h5_source_open_mem(&src, buf, sizeof(buf)), 0);
	ck_assert(coll_sig_hdf5(src, sizeof(buf)));
	ck_assert(!coll_sig_hdf5(src, 2050));   /* below size only */
	h5_source_close(src);
	memset(buf, 0, sizeof(buf));
	memcpy(buf + 100, sig, 8);              /* not a place libhdf5 looks */
	ck_assert_int_eq(h5_source_open_mem(&src, buf, sizeof(buf)), 0);
	ck_assert(!coll_sig_hdf5(src, sizeof(buf)));
	h5_source_close(src);
}
END_TEST

struct seen {
	char log[2048];
	int kinds_asked, kinds_set;
};

static void v_folder(void *u, const char *path, const struct coll_stat *st)
{
	struct seen *s = u;

	(void)st;
	snprintf(s->log + strlen(s->log), sizeof(s->log) - strlen(s->log), "D %s\n", path);
}

static void v_file(void *u, const char *path, const struct coll_stat *st, bool hdf5)
{
	struct seen *s = u;

	snprintf(s->log + strlen(s->log), sizeof(s->log) - strlen(s->log), "%c %s %llu\n", hdf5 ? 'H' : 'F',
		 path, (unsigned long long)st->size);
}

static void v_error(void *u, const char *path, int e)
{
	struct seen *s = u;

	snprintf(s->log + strlen(s->log), sizeof(s->log) - strlen(s->log), "E %s %d\n", path, e);
}

static int v_kind(void *u, const char *path, const struct coll_stat *st)
{
	struct seen *s = u;

	(void)st;
	s->kinds_asked++;
	return strcmp(path, "readme.txt") == 0 ? 1 : -1;        /* the cache's word wins */
}

static void v_set_kind(void *u, const char *path, const struct coll_stat *st, bool hdf5)
{
	struct seen *s = u;

	(void)path;
	(void)st;
	(void)hdf5;
	s->kinds_set++;
}

/* The walk: name order, folders entered, kinds by signature unless the
 * cache knows, a symlink loop refused once and the walk going on. */
START_TEST(walk_order_kinds_loop)
{
	static const uint8_t sig[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };
	const struct coll_backend *be = coll_backend_of(tmpdir);
	h5_open_opts oo = { 0 };
	struct seen s = { 0 };
	coll_visit v = { .u = &s, .folder = v_folder, .file = v_file, .error = v_error };
	char p[512], l[512];
	void *b = NULL;

	put("sub/real.dat", sig, 8);
	snprintf(p, sizeof(p), "%s/sub", tmpdir);
	snprintf(l, sizeof(l), "%s/sub/loop", tmpdir);
	ck_assert_int_eq(symlink(p, l), 0);
	ck_assert_int_eq(be->open(&b, tmpdir, &oo), 0);
	ck_assert_int_eq(coll_walk(be, b, &v), 0);
	ck_assert_str_eq(s.log, "F readme.txt 6\nD sub\nF sub/fake.h5 34\nF sub/link.txt 6\n"
			 "D sub/loop\nE sub/loop 40\nH sub/real.dat 8\n");
	memset(&s, 0, sizeof(s));
	v.kind = v_kind;
	v.set_kind = v_set_kind;
	v.top_only = 1;
	ck_assert_int_eq(coll_walk(be, b, &v), 0);
	ck_assert_str_eq(s.log, "H readme.txt 6\nD sub\n");
	ck_assert_int_eq(s.kinds_asked, 1);
	ck_assert_int_eq(s.kinds_set, 0);
	be->close(b);
	ck_assert_int_eq(coll_errno(H5_ERR_NOTFOUND), ENOENT);
	ck_assert_int_eq(coll_h5err(ENOENT), H5_ERR_NOTFOUND);
	ck_assert_int_eq(coll_errno(H5_ERR_CHECKSUM), EIO);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("coll");
	TCase *loc = tcase_create("local");

	tcase_add_checked_fixture(loc, setup, teardown);
	tcase_add_test(loc, local_list_and_stat);
	tcase_add_test(loc, local_bytes_and_members);
	tcase_add_test(loc, walk_order_kinds_loop);
	suite_add_tcase(s, loc);
	tcase_add_test(loc, signature_rule);
	return s;
}

H5_TEST_MAIN(make_suite)
