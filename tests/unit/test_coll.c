/* test_coll.c - the collection library (src/coll, no FUSE): the local
 * backend, the signature rule, the walk, and h5fs-find's predicates. */
#include "testutil.h"

#include "coll_backend.h"
#include "coll_walk.h"
#include "find_expr.h"
#include "ccat.h"
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
 * EMEDIUMTYPE (no HDF5: an index remembers it) with the engine's message. */
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
	ck_assert_int_eq(be->open_member(b, &f, "sub/fake.h5", &oo), EMEDIUMTYPE);
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


/* ---- h5fs-find's expression ---------------------------------------------- */

static int run_expr(const char *expr_words, const fx_entry *x)
{
	char buf[512], *argv[32], err[256], *save = NULL;
	int argc = 0, r;
	fx *e = NULL;

	snprintf(buf, sizeof(buf), "%s", expr_words);
	for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	ck_assert_msg(fx_parse(&e, argc, argv, err, sizeof(err)) == 0, "%s: %s", expr_words, err);
	r = fx_eval(e, x);
	fx_free(e);
	return r;
}

static int parse_fails(const char *expr_words, const char *why)
{
	char buf[512], *argv[32], err[256], *save = NULL;
	int argc = 0;
	fx *e = NULL;

	snprintf(buf, sizeof(buf), "%s", expr_words);
	for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	if (fx_parse(&e, argc, argv, err, sizeof(err)) == 0) {
		fx_free(e);
		return 0;
	}
	return strstr(err, why) != NULL;
}

START_TEST(expr_tests_and_operators)
{
	static const char *const names[] = { "units", "temperature", "h5.x" };
	static const char *const values[] = { "m/s", "205.5", "1, 2" };
	fx_entry ds = { .path = "run1/scan.h5/entry/data", .name = "data", .type = 'f', .dtype = "<f8",
			.shape = "100,3", .ndim = 2, .nattrs = 3, .attr_names = names, .attr_values = values };
	fx_entry folder = { .path = "run1", .name = "run1", .type = 'd', .ndim = -1 };

	ck_assert(run_expr("", &ds));   /* no test: everything */
	ck_assert(run_expr("-name data", &ds));
	ck_assert(!run_expr("-name dat", &ds));
	ck_assert(run_expr("-name d*", &ds));
	ck_assert(run_expr("-path run1*data", &ds));     /* '*' crosses '/' */
	ck_assert(run_expr("-path *.h5/entry/*", &ds));
	ck_assert(!run_expr("-path entry/*", &ds));      /* relative to the top, whole */
	ck_assert(run_expr("-type f", &ds) && !run_expr("-type d", &ds) && run_expr("-type d", &folder));
	ck_assert(run_expr("-attr units", &ds) && !run_expr("-attr unit", &ds));
	ck_assert(run_expr("-attr units=m/s", &ds) && !run_expr("-attr units=m", &ds));
	ck_assert(run_expr("-attr temperature=20[0-9]*", &ds));
	ck_assert(run_expr("-attr h5.x=1,*", &ds));
	ck_assert(run_expr("-dtype <f8", &ds) && run_expr("-dtype *f*", &ds) && !run_expr("-dtype <f4", &ds));
	ck_assert(run_expr("-ndim 2", &ds) && !run_expr("-ndim 1", &ds) && !run_expr("-ndim 0", &folder));
	ck_assert(run_expr("-shape 100,3", &ds) && run_expr("-shape 100,*", &ds) && !run_expr("-shape 100", &ds));
	ck_assert(!run_expr("-dtype * -o -shape *", &folder));
	/* and binds tighter than or; ! and parentheses */
	ck_assert(run_expr("-name x -o -name data -type f", &ds));
	ck_assert(!run_expr("-name x -o -name data -type d", &ds));
	ck_assert(run_expr("( -name x -o -name data ) -a -type f", &ds));
	ck_assert(!run_expr("( -name x -o -name data ) ! -type f", &ds));
	ck_assert(run_expr("! -name x", &ds) && run_expr("-not -false", &ds) && !run_expr("! ! -false", &ds));
	ck_assert(run_expr("-true -and -name data -or -false", &ds));
}
END_TEST

START_TEST(expr_errors)
{
	ck_assert(parse_fails("-name", "needs an argument"));
	ck_assert(parse_fails("-type x", "one of d, f, l"));
	ck_assert(parse_fails("-ndim two", "number of dimensions"));
	ck_assert(parse_fails("-ndim -1", "number of dimensions"));
	ck_assert(parse_fails("-attr =x", "no attribute name"));
	ck_assert(parse_fails("( -name x", "without its ')'"));
	ck_assert(parse_fails("-name x )", "unexpected ')'"));
	ck_assert(parse_fails("-name x -o", "expression ends"));
	ck_assert(parse_fails("!", "expression ends"));
	ck_assert(parse_fails("-size 3", "unknown test"));
	ck_assert(fx_is_expr_word("-attr") && fx_is_expr_word("(") && !fx_is_expr_word("--json"));
}
END_TEST

/* ---- the catalog (ccat.c) in the index -------------------------------------- */

static const ccat_obj *obj_at(const ccat_member *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->v[i].path, path) == 0)
			return &m->v[i];
	return NULL;
}

struct got_stamps {
	int n;
	uint64_t size;
	char member[64];
};

static void stamps_cb(void *arg, const cindex_key *k)
{
	struct got_stamps *g = arg;

	g->n++;
	g->size = k->size;
	snprintf(g->member, sizeof(g->member), "%s", k->member);
}

struct got_all {
	int n;
	ccat_member *m;
};

static void all_cb(void *arg, const char *path, ccat_member *m)
{
	struct got_all *g = arg;

	g->n++;
	ck_assert_str_eq(path, "run/example.h5");
	ccat_member_free(g->m);
	g->m = m;
}

/* examples/example.h5 read into a catalog (paths, types, dtype, shape,
 * ndim, attribute texts), stored, its stamp and whole catalog read back
 * equal, then forgotten. */
START_TEST(catalog_roundtrip)
{
	const char *src = getenv("H5FS_SRCDIR");
	char path[1024], ixp[512];
	h5_open_opts oo = { 0 };
	h5_file *f = NULL;
	ccat_member *m = NULL;
	const ccat_obj *o;
	cindex *ix = NULL;
	struct got_stamps gs = { 0 };
	struct got_all ga = { 0 };
	cindex_key k = { .root = "/coll", .member = "run/example.h5", .view = "", .size = 1234, .mtime_ns = 5,
			 .etag = "" };
	const char *gone[] = { "run/example.h5" };

	snprintf(path, sizeof(path), "%s/examples/example.h5", src && *src ? src : ".");
	ck_assert_int_eq(h5_file_open(&f, path, &oo), 0);
	ck_assert_int_eq(ccat_read(&m, f), 0);
	h5_file_close(f);
	ck_assert_ptr_null(m->error);
	o = obj_at(m, "");
	ck_assert(o && o->type == CCAT_GROUP && o->nattrs == 2);
	ck_assert_str_eq(o->attrs[0].name, "title");
	ck_assert_str_eq(o->attrs[0].value, "h5fs example file");
	o = obj_at(m, "measurements/temperature");
	ck_assert(o && o->type == CCAT_DATASET && o->ndim == 1);
	ck_assert_str_eq(o->dtype, "<f8");
	ck_assert_str_eq(o->shape, "24");
	ck_assert(o->nattrs == 1 && !strcmp(o->attrs[0].name, "units") && !strcmp(o->attrs[0].value, "degC"));
	o = obj_at(m, "images/gradient");
	ck_assert(o && o->ndim == 2 && !strcmp(o->shape, "32,32") && !strcmp(o->dtype, "|u1"));

	snprintf(ixp, sizeof(ixp), "%s/index.sqlite", tmpdir);
	ck_assert_int_eq(cindex_open(&ix, ixp, NULL, NULL), 0);
	ck_assert_int_eq(ccat_store(ix, &k, &m, 1), 0);
	ck_assert_int_eq(ccat_store(ix, &k, &m, 1), 0);         /* replaces, not adds */
	ck_assert_int_eq(ccat_stamps(ix, "/coll", stamps_cb, &gs), 0);
	ck_assert(gs.n == 1 && gs.size == 1234 && !strcmp(gs.member, "run/example.h5"));
	ck_assert_int_eq(ccat_load_all(ix, "/other", all_cb, &ga), 0);
	ck_assert_int_eq(ga.n, 0);                              /* per collection */
	ck_assert_int_eq(ccat_load_all(ix, "/coll", all_cb, &ga), 0);
	ck_assert_int_eq(ga.n, 1);
	ck_assert_uint_eq(ga.m->n, m->n);
	for (size_t i = 0; i < m->n; i++) {
		const ccat_obj *a = &m->v[i], *b = &ga.m->v[i];

		ck_assert_str_eq(a->path, b->path);
		ck_assert_int_eq(a->type, b->type);
		ck_assert_int_eq(a->ndim, b->ndim);
		ck_assert((!a->dtype && !b->dtype) || !strcmp(a->dtype, b->dtype));
		ck_assert((!a->shape && !b->shape) || !strcmp(a->shape, b->shape));
		ck_assert_uint_eq(a->nattrs, b->nattrs);
		for (uint32_t q = 0; q < a->nattrs; q++) {
			ck_assert_str_eq(a->attrs[q].name, b->attrs[q].name);
			ck_assert_str_eq(a->attrs[q].value, b->attrs[q].value);
		}
	}
	ck_assert_int_eq(ccat_forget(ix, "/coll", gone, 1), 0);
	gs.n = 0;
	ck_assert_int_eq(ccat_stamps(ix, "/coll", stamps_cb, &gs), 0);
	ck_assert_int_eq(gs.n, 0);
	cindex_close(ix);
	ccat_member_free(ga.m);
	ccat_member_free(m);
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
	tcase_add_test(loc, catalog_roundtrip);
	{
		TCase *ex = tcase_create("find_expr");

		tcase_add_test(ex, expr_tests_and_operators);
		tcase_add_test(ex, expr_errors);
		suite_add_tcase(s, ex);
	}
	return s;
}

H5_TEST_MAIN(make_suite)
