/* test_related.c - files reached from FILE (related.c): how external-link
 * and VDS source names are resolved (absolute, HDF5_EXT_PREFIX /
 * HDF5_VDS_PREFIX, -o ext_prefix, "${ORIGIN}", the directory of the file
 * holding the link), the refusal of files outside FILE's directory tree
 * (unless ext_any), one h5_file per file whatever the name, and file
 * numbers that survive the idle files being closed. The files are tiny
 * valid HDF5 files built here (a superblock and one object header). */
#include "testutil.h"
#include "rd.h"
#include "checksum.h"
#include "file.h"
#include "ohdr.h"
#include "related.h"

#include <sys/stat.h>

static char tmpdir[64];
static char top_dir[128];

/* A v2 superblock whose root is an object header with one NIL message:
 * enough for h5_file_open. `tag` goes into the NIL message's bytes so
 * the files differ. */
static void write_h5(const char *path, uint32_t tag)
{
	tbuf b = { 0 };
	size_t start;

	tb_sb2_start(&b, 48);   /* root: the object header after it */
	start = b.len;
	tb_str(&b, "OHDR");
	tb_u8(&b, 2);
	tb_u8(&b, 0x00);        /* chunk 0 size in 1 byte */
	tb_u8(&b, 4 + 4);
	tb_u8(&b, H5_MSG_NIL);
	tb_u16(&b, 4);
	tb_u8(&b, 0);
	tb_u32(&b, tag);
	tb_checksum(&b, start);
	tb_sb2_finish(&b);
	test_write_file(path, &b);
	tb_free(&b);
}

static void mk(const char *rel, uint32_t tag)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
	write_h5(path, tag);
}

static void mkd(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, rel);
	ck_assert_int_eq(mkdir(path, 0755), 0);
}

/* tmpdir/top/{a.h5, c.h5, sub/b.h5, sub/b2.h5, pre/d.h5, pre/c.h5},
 * tmpdir/outside/e.h5 (outside the top file's tree) */
static void setup(void)
{
	strcpy(tmpdir, "/tmp/h5fs-test-related-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(top_dir, sizeof(top_dir), "%s/top", tmpdir);
	mkd("top");
	mkd("top/sub");
	mkd("top/pre");
	mkd("outside");
	mk("top/a.h5", 1);
	mk("top/c.h5", 2);
	mk("top/sub/b.h5", 3);
	mk("top/sub/b2.h5", 4);
	mk("top/pre/d.h5", 5);
	mk("top/pre/c.h5", 6);
	mk("outside/e.h5", 7);
	unsetenv("HDF5_EXT_PREFIX");
	unsetenv("HDF5_VDS_PREFIX");
}

static void teardown(void)
{
	test_tmp_remove(tmpdir);
}

static h5_file *open_top(int ext_any, const char *ext_prefix)
{
	char path[512];
	h5_open_opts o = { .ext_any = ext_any, .ext_prefix = ext_prefix };
	h5_file *f = NULL;

	snprintf(path, sizeof(path), "%s/a.h5", top_dir);
	ck_assert_msg(h5_file_open(&f, path, &o) == 0, "%s: %s", path, h5_err_msg());
	return f;
}

/* Open `name` from `from`; 0 and *out, 1 (no such file) or an h5_err. */
static int rel(h5_file **out, h5_file *from, const char *name, int kind)
{
	*out = NULL;
	return h5_related_open(out, from, name, kind);
}

/* The file's real path ends with `tail` (relative to tmpdir). */
static void ck_is(const h5_file *f, const char *tail)
{
	char want[512], *real;

	ck_assert_ptr_nonnull(f);
	snprintf(want, sizeof(want), "%s/%s", tmpdir, tail);
	real = realpath(want, NULL);
	ck_assert_ptr_nonnull(real);
	ck_assert_ptr_nonnull(f->real_path);
	ck_assert_str_eq(f->real_path, real);
	free(real);
}

struct reached {
	const h5_file *f;
	int found, home;
	uint32_t id;
};

static int find_reached(void *arg, const h5_related_info *ri)
{
	struct reached *w = arg;

	if (strcmp(ri->path, w->f->real_path) != 0)
		return 0;
	w->found = 1;
	w->home = ri->home;
	w->id = ri->id;
	return 1;
}

/* f is listed among the files top reached, with its number; 1 when that
 * number is its path's own. */
static int ck_listed(h5_file *top, const h5_file *f)
{
	struct reached w = { .f = f };

	ck_assert_int_eq(h5_file_related_reached(top, find_reached, &w), 1);
	ck_assert(w.found);
	ck_assert_uint_eq(w.id, h5_file_id(f));
	ck_assert_uint_ne(w.id, 0);
	ck_assert_uint_lt(w.id, 0x4000);       /* bit 62 stays free */
	return w.home;
}

START_TEST(relative_to_the_linking_file)
{
	h5_file *top = open_top(0, NULL), *b, *b_again, *b2;

	ck_assert_int_eq(rel(&b, top, "sub/b.h5", H5_RELATED_EXT), 0);
	ck_is(b, "top/sub/b.h5");
	ck_assert_ptr_eq(b->top, top);
	ck_assert(ck_listed(top, b));
	/* another spelling of the same file: the same h5_file, one identity */
	ck_assert_int_eq(rel(&b_again, top, "./sub/../sub//b.h5", H5_RELATED_EXT), 0);
	ck_assert_ptr_eq(b_again, b);
	/* a name in b.h5 is relative to b.h5's directory, not FILE's */
	ck_assert_int_eq(rel(&b2, b, "b2.h5", H5_RELATED_EXT), 0);
	ck_is(b2, "top/sub/b2.h5");
	ck_listed(top, b2);
	ck_assert_uint_ne(h5_file_id(b2), h5_file_id(b));
	ck_assert_int_eq(rel(&b2, top, "b2.h5", H5_RELATED_EXT), 1);
	h5_related_release(b);
	h5_related_release(b_again);
	h5_related_release(b2);
	h5_file_close(top);
}
END_TEST

START_TEST(file_itself_and_missing)
{
	h5_file *top = open_top(0, NULL), *f;
	char abs_top[512];

	ck_assert_int_eq(rel(&f, top, "a.h5", H5_RELATED_EXT), 0);
	ck_assert_ptr_eq(f, top);
	snprintf(abs_top, sizeof(abs_top), "%s/a.h5", top_dir);
	ck_assert_int_eq(rel(&f, top, abs_top, H5_RELATED_EXT), 0);
	ck_assert_ptr_eq(f, top);
	ck_assert_int_eq(rel(&f, top, "nope.h5", H5_RELATED_EXT), 1);
	ck_assert_ptr_null(f);
	/* a directory is not a file */
	ck_assert_int_eq(rel(&f, top, "sub", H5_RELATED_EXT), 1);
	ck_assert_int_lt(rel(&f, top, "", H5_RELATED_EXT), 0);
	h5_file_close(top);
}
END_TEST

/* libhdf5 (H5F_prefix_open_file): an absolute name that does not exist is
 * tried again by its last component, in the linking file's directory. */
START_TEST(absolute_falls_back_to_base_name)
{
	h5_file *top = open_top(0, NULL), *f;

	ck_assert_int_eq(rel(&f, top, "/no/such/dir/c.h5", H5_RELATED_EXT), 0);
	ck_is(f, "top/c.h5");
	h5_related_release(f);
	ck_assert_int_eq(rel(&f, top, "/no/such/dir/", H5_RELATED_EXT), 1);
	h5_file_close(top);
}
END_TEST

START_TEST(outside_the_tree_refused)
{
	h5_file *top = open_top(0, NULL), *f;
	char abs_e[512];

	ck_assert_int_eq(rel(&f, top, "../outside/e.h5", H5_RELATED_EXT), H5_ERR_PERM);
	ck_assert_ptr_null(f);
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "ext_any"));
	snprintf(abs_e, sizeof(abs_e), "%s/outside/e.h5", tmpdir);
	ck_assert_int_eq(rel(&f, top, abs_e, H5_RELATED_EXT), H5_ERR_PERM);
	/* a symlink inside the tree to a file outside it: the real path counts */
	{
		char link[512];

		snprintf(link, sizeof(link), "%s/sneaky.h5", top_dir);
		ck_assert_int_eq(symlink(abs_e, link), 0);
		ck_assert_int_eq(rel(&f, top, "sneaky.h5", H5_RELATED_EXT), H5_ERR_PERM);
	}
	h5_file_close(top);
	top = open_top(1, NULL);
	ck_assert_int_eq(rel(&f, top, "../outside/e.h5", H5_RELATED_EXT), 0);
	ck_is(f, "outside/e.h5");
	h5_related_release(f);
	h5_file_close(top);
}
END_TEST

/* h5_open_opts.ext_root widens the tree (a collection's DIR): a file
 * beside the top's folder is reached, one outside ext_root still not. */
START_TEST(ext_root_widens_the_tree)
{
	h5_open_opts o = { .ext_root = tmpdir };
	h5_file *top = NULL, *f;
	char path[512];

	snprintf(path, sizeof(path), "%s/sub/b.h5", top_dir);
	ck_assert_int_eq(h5_file_open(&top, path, &o), 0);
	ck_assert_int_eq(rel(&f, top, "../../outside/e.h5", H5_RELATED_EXT), 0);
	ck_is(f, "outside/e.h5");
	h5_related_release(f);
	ck_assert_int_eq(rel(&f, top, "/etc/passwd", H5_RELATED_EXT), H5_ERR_PERM);
	h5_file_close(top);
}
END_TEST

/* h5_open_opts.fd_gate is asked before each other file is opened and
 * told after it is closed; a refusal is the open's error; with
 * related_idle < 0 a file is closed as soon as it is released. */
static int gate_open, gate_max, gate_refuse;

static int gate(void *ud, int delta)
{
	ck_assert_ptr_eq(ud, &gate_open);
	if (delta > 0 && gate_refuse)
		return h5_err_set(H5_ERR_LIMIT, "no room");
	gate_open += delta;
	if (gate_open > gate_max)
		gate_max = gate_open;
	return 0;
}

START_TEST(fd_gate_counts_every_open)
{
	h5_open_opts o = { .fd_gate = gate, .fd_gate_ud = &gate_open, .related_idle = -1 };
	h5_file *top = NULL, *f, *g;
	char path[512];

	gate_open = gate_max = gate_refuse = 0;
	snprintf(path, sizeof(path), "%s/a.h5", top_dir);
	ck_assert_int_eq(h5_file_open(&top, path, &o), 0);
	ck_assert_int_eq(gate_open, 0);         /* FILE itself is its opener's */
	ck_assert_int_eq(rel(&f, top, "c.h5", H5_RELATED_EXT), 0);
	ck_assert_int_eq(rel(&g, top, "sub/b.h5", H5_RELATED_EXT), 0);
	ck_assert_int_eq(gate_open, 2);
	h5_related_release(f);
	ck_assert_int_eq(gate_open, 1);         /* closed when released */
	gate_refuse = 1;
	ck_assert_int_eq(rel(&f, top, "c.h5", H5_RELATED_EXT), H5_ERR_LIMIT);
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "no room"));
	gate_refuse = 0;
	h5_related_release(g);
	ck_assert_int_eq(gate_open, 0);
	ck_assert_int_eq(rel(&f, top, "c.h5", H5_RELATED_EXT), 0);
	h5_file_close(top);                     /* closes what is still open */
	ck_assert_int_eq(gate_open, 0);
	ck_assert_int_eq(gate_max, 2);
}
END_TEST

/* The prefix variable of the kind of name is tried before the linking
 * file's directory; the other kind's variable is not used. */
START_TEST(env_prefix_per_kind)
{
	h5_file *top = open_top(0, NULL), *f;

	ck_assert_int_eq(setenv("HDF5_EXT_PREFIX", "${ORIGIN}/nothing:${ORIGIN}/pre", 1), 0);
	ck_assert_int_eq(rel(&f, top, "d.h5", H5_RELATED_EXT), 0);
	ck_is(f, "top/pre/d.h5");
	h5_related_release(f);
	/* c.h5 is both in pre/ and next to a.h5: the prefix wins */
	ck_assert_int_eq(rel(&f, top, "c.h5", H5_RELATED_EXT), 0);
	ck_is(f, "top/pre/c.h5");
	h5_related_release(f);
	/* a VDS source name does not use HDF5_EXT_PREFIX */
	ck_assert_int_eq(rel(&f, top, "d.h5", H5_RELATED_VDS), 1);
	ck_assert_int_eq(rel(&f, top, "c.h5", H5_RELATED_VDS), 0);
	ck_is(f, "top/c.h5");
	h5_related_release(f);
	unsetenv("HDF5_EXT_PREFIX");
	ck_assert_int_eq(setenv("HDF5_VDS_PREFIX", "${ORIGIN}/pre", 1), 0);
	ck_assert_int_eq(rel(&f, top, "d.h5", H5_RELATED_VDS), 0);
	ck_is(f, "top/pre/d.h5");
	h5_related_release(f);
	ck_assert_int_eq(rel(&f, top, "d.h5", H5_RELATED_EXT), 1);
	h5_file_close(top);
}
END_TEST

/* -o ext_prefix: after the variable, before the linking file's directory;
 * a plain directory works as well as ${ORIGIN}; a prefix outside the tree
 * is refused like any other name. */
START_TEST(option_prefix)
{
	char list[600], bad[600];
	h5_file *top, *f;

	snprintf(list, sizeof(list), "%s/nothing:%s/pre", top_dir, top_dir);
	top = open_top(0, list);
	ck_assert_int_eq(rel(&f, top, "d.h5", H5_RELATED_EXT), 0);
	ck_is(f, "top/pre/d.h5");
	h5_related_release(f);
	ck_assert_int_eq(rel(&f, top, "c.h5", H5_RELATED_VDS), 0);
	ck_is(f, "top/pre/c.h5");
	h5_related_release(f);
	/* the variable comes first */
	ck_assert_int_eq(setenv("HDF5_EXT_PREFIX", "${ORIGIN}", 1), 0);
	ck_assert_int_eq(rel(&f, top, "c.h5", H5_RELATED_EXT), 0);
	ck_is(f, "top/c.h5");
	h5_related_release(f);
	unsetenv("HDF5_EXT_PREFIX");
	h5_file_close(top);
	snprintf(bad, sizeof(bad), "%s/outside", tmpdir);
	top = open_top(0, bad);
	ck_assert_int_eq(rel(&f, top, "e.h5", H5_RELATED_EXT), H5_ERR_PERM);
	h5_file_close(top);
}
END_TEST

/* More files than stay open when idle: the idle ones are closed, and a file
 * opened again keeps its number (its objects keep their inode numbers). */
START_TEST(numbers_survive_idle_close)
{
	h5_file *top = open_top(0, NULL), *f, *first;
	char name[64];
	uint32_t id_first;

	mkd("top/many");
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "top/many/m%02d.h5", i);
		mk(name, 100 + (uint32_t)i);
	}
	ck_assert_int_eq(rel(&first, top, "many/m00.h5", H5_RELATED_EXT), 0);
	id_first = h5_file_id(first);
	ck_listed(top, first);
	h5_related_release(first);
	for (int i = 1; i < 40; i++) {
		snprintf(name, sizeof(name), "many/m%02d.h5", i);
		ck_assert_int_eq(rel(&f, top, name, H5_RELATED_EXT), 0);
		ck_listed(top, f);
		ck_assert_uint_ne(h5_file_id(f), id_first);
		h5_related_release(f);
	}
	ck_assert_int_eq(rel(&f, top, "many/m00.h5", H5_RELATED_EXT), 0);
	ck_assert_uint_eq(h5_file_id(f), id_first);
	ck_is(f, "top/many/m00.h5");
	h5_related_release(f);
	/* a held file is not closed under its holder */
	ck_assert_int_eq(rel(&first, top, "many/m01.h5", H5_RELATED_EXT), 0);
	for (int i = 2; i < 40; i++) {
		snprintf(name, sizeof(name), "many/m%02d.h5", i);
		ck_assert_int_eq(rel(&f, top, name, H5_RELATED_EXT), 0);
		h5_related_release(f);
	}
	ck_assert_int_eq(rel(&f, top, "many/m01.h5", H5_RELATED_EXT), 0);
	ck_assert_ptr_eq(f, first);
	h5_related_release(f);
	h5_related_release(first);
	h5_file_close(top);
}
END_TEST

/* Numbers are the paths' own, not the order of reaching: two openings of
 * FILE reaching 40 files in opposite orders number them alike (those two
 * paths hashing alike would push off home are said not to be). */
START_TEST(numbers_independent_of_order)
{
	h5_file *one = open_top(0, NULL), *two = open_top(0, NULL), *f, *g;
	char name[64];
	int home = 0;

	mkd("top/many");
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "top/many/m%02d.h5", i);
		mk(name, 100 + (uint32_t)i);
	}
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "many/m%02d.h5", i);
		ck_assert_int_eq(rel(&f, one, name, H5_RELATED_EXT), 0);
		h5_related_release(f);
		snprintf(name, sizeof(name), "many/m%02d.h5", 39 - i);
		ck_assert_int_eq(rel(&f, two, name, H5_RELATED_EXT), 0);
		h5_related_release(f);
	}
	for (int i = 0; i < 40; i++) {
		int h1, h2;

		snprintf(name, sizeof(name), "many/m%02d.h5", i);
		ck_assert_int_eq(rel(&f, one, name, H5_RELATED_EXT), 0);
		ck_assert_int_eq(rel(&g, two, name, H5_RELATED_EXT), 0);
		h1 = ck_listed(one, f);
		h2 = ck_listed(two, g);
		if (h1 && h2)
			ck_assert_uint_eq(h5_file_id(f), h5_file_id(g));
		home += h1 && h2;
		h5_related_release(f);
		h5_related_release(g);
	}
	ck_assert_int_ge(home, 36);     /* 40 of 16383 numbers: collisions are rare */
	h5_file_close(one);
	h5_file_close(two);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("related");
	TCase *tc = tcase_create("resolve");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);     /* a loaded machine: 40 files opened and closed */
	tcase_add_test(tc, relative_to_the_linking_file);
	tcase_add_test(tc, file_itself_and_missing);
	tcase_add_test(tc, absolute_falls_back_to_base_name);
	tcase_add_test(tc, outside_the_tree_refused);
	tcase_add_test(tc, env_prefix_per_kind);
	tcase_add_test(tc, option_prefix);
	tcase_add_test(tc, numbers_survive_idle_close);
	tcase_add_test(tc, numbers_independent_of_order);
	tcase_add_test(tc, ext_root_widens_the_tree);
	tcase_add_test(tc, fd_gate_counts_every_open);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
