/* test_link_follow.c - links followed across files (related.c: h5_link_follow,
 * h5_path_lookup, h5_path_lookup_from) on files h5py writes at test time: chains of external
 * links, an external link in the middle of a path, libhdf5's limit of 16
 * soft or external links (h5py follows 16 and refuses 17: the generator
 * checks that), loops, soft links, and the path each hop reports. */
#include "testutil.h"
#include "file.h"

static char py_dir[64];
static int py_ok;

static const char py_script[] =
	"import os, sys\n"
	"try:\n"
	"    import h5py, numpy as np\n"
	"except ImportError:\n"
	"    sys.exit(77)\n"
	"d = sys.argv[1]\n"
	"os.makedirs(os.path.join(d, 'chain'))\n"
	"with h5py.File(os.path.join(d, 'chain', 'c.h5'), 'w') as f:\n"
	"    f.create_dataset('c/data', data=np.arange(6))\n"
	"    f.create_group('c/sub')\n"
	"    f['c/sub/soft'] = h5py.SoftLink('/c/data')\n"
	"with h5py.File(os.path.join(d, 'chain', 'b.h5'), 'w') as f:\n"
	"    f['to_c'] = h5py.ExternalLink('c.h5', '/c/data')\n"
	"    f['to_cgrp'] = h5py.ExternalLink('c.h5', '/c')\n"
	"    f['via_soft'] = h5py.SoftLink('/to_cgrp/sub')\n"
	"with h5py.File(os.path.join(d, 'chain', 'la.h5'), 'w') as f:\n"
	"    f['x'] = h5py.ExternalLink('lb.h5', '/y')\n"
	"with h5py.File(os.path.join(d, 'chain', 'lb.h5'), 'w') as f:\n"
	"    f['y'] = h5py.ExternalLink('la.h5', '/x')\n"
	"for k in range(17):\n"
	"    with h5py.File(os.path.join(d, 'chain', 'h%02d.h5' % k), 'w') as f:\n"
	"        if k < 16:\n"
	"            f['n'] = h5py.ExternalLink('h%02d.h5' % (k + 1), '/n')\n"
	"        else:\n"
	"            f.create_dataset('n', data=np.arange(3))\n"
	"with h5py.File(os.path.join(d, 'm.h5'), 'w') as f:\n"
	"    f['nested'] = h5py.ExternalLink('chain/b.h5', '/to_c')\n"
	"    f['mid'] = h5py.ExternalLink('chain/b.h5', '/to_cgrp/sub/soft')\n"
	"    f['via'] = h5py.ExternalLink('chain/b.h5', '/via_soft')\n"
	"    f['hops16'] = h5py.ExternalLink('chain/h01.h5', '/n')\n"
	"    f['hops17'] = h5py.ExternalLink('chain/h00.h5', '/n')\n"
	"    f['loop'] = h5py.ExternalLink('chain/la.h5', '/x')\n"
	"    f['missing'] = h5py.ExternalLink('chain/none.h5', '/x')\n"
	"    f['nothing'] = h5py.ExternalLink('chain/c.h5', '/c/none')\n"
	"    f.create_dataset('local/data', data=np.arange(2))\n"
	"    f['soft'] = h5py.SoftLink('/local/data')\n"
	"    f['local/rel'] = h5py.SoftLink('data')\n"
	"    f['local/rel_rel'] = h5py.SoftLink('rel')\n"
	"    f['rel_local'] = h5py.SoftLink('local/rel_rel')\n"
	"    f['local/rel_nowhere'] = h5py.SoftLink('soft')\n"
	"with h5py.File(os.path.join(d, 'm.h5'), 'r') as f, open(os.path.join(d, 'addr.txt'), 'w') as o:\n"
	"    for n in ('nested', 'mid', 'via', 'hops16'):\n"
	"        o.write('%s %d\\n' % (n, h5py.h5o.get_info(f[n].id).addr))\n"
	"    for n in ('hops17', 'loop'):\n"
	"        try:\n"
	"            f[n]\n"
	"            sys.exit(3)\n"
	"        except KeyError as e:\n"
	"            if 'too many links' not in str(e):\n"
	"                sys.exit(4)\n";

static void py_setup(void)
{
	int rc;

	py_ok = 0;
	snprintf(py_dir, sizeof(py_dir), "/tmp/h5fs_test_link_follow_XXXXXX");
	rc = test_py_run(py_dir, py_script, NULL);
	if (rc != 0) {
		fprintf(stderr, "test_link_follow: h5py generator unavailable (status %d): skipping\n", rc);
		return;
	}
	py_ok = 1;
}

static void py_teardown(void)
{
	test_tmp_remove(py_dir);
}

/* h5py's object header address of link `name` of m.h5 */
static uint64_t want_addr(const char *name)
{
	char path[128], n[64];
	unsigned long long a;
	uint64_t out = UINT64_MAX;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/addr.txt", py_dir);
	fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	while (fscanf(fp, "%63s %llu", n, &a) == 2)
		if (strcmp(n, name) == 0)
			out = a;
	fclose(fp);
	ck_assert_uint_ne(out, UINT64_MAX);
	return out;
}

static h5_file *open_master(void)
{
	char path[128];
	h5_file *f = NULL;

	snprintf(path, sizeof(path), "%s/m.h5", py_dir);
	ck_assert_int_eq(h5_file_open(&f, path, NULL), 0);
	return f;
}

/* Follow link `name` of m.h5's root: its h5_link_follow result; on success
 * *fpath and the file's base name. */
static int follow(h5_file *f, const char *name, uint64_t *addr, char **fpath, char *base, size_t room)
{
	h5_link l;
	h5_file *g = NULL;
	int rc;

	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(h5_group_lookup(&l, f, h5_file_root(f), name), 0);
	rc = h5_link_follow(&g, addr, fpath, f, &l);
	if (rc == 0) {
		const char *p = h5_file_path(g), *s = strrchr(p, '/');

		snprintf(base, room, "%s", s ? s + 1 : p);
		h5_file_release_related(g);
	}
	h5_link_clear(&l);
	return rc;
}

START_TEST(py_chains)
{
	static const struct {
		const char *name, *file, *fpath;
	} ok[] = {
		{ "nested", "c.h5", "/c/data" },          /* a chain of two */
		{ "mid", "c.h5", "/c/data" },             /* external, hard, soft */
		{ "via", "c.h5", "/c/sub" },              /* soft, then external */
		{ "hops16", "h16.h5", "/n" },             /* 16 links: the limit */
		{ "soft", "m.h5", "/local/data" },        /* an absolute soft link */
	};
	h5_file *f;
	uint64_t addr;
	char *fpath = NULL, base[64];

	if (!py_ok)
		return;
	f = open_master();
	for (size_t i = 0; i < sizeof(ok) / sizeof(*ok); i++) {
		addr = 0;
		ck_assert_msg(follow(f, ok[i].name, &addr, &fpath, base, sizeof(base)) == 0, "%s: %s", ok[i].name,
			      h5_err_msg());
		ck_assert_str_eq(base, ok[i].file);
		ck_assert_str_eq(fpath, ok[i].fpath);
		if (strcmp(ok[i].name, "soft") != 0)
			ck_assert_uint_eq(addr, want_addr(ok[i].name));
		free(fpath);
		fpath = NULL;
	}
	h5_file_close(f);
}
END_TEST

START_TEST(py_refused)
{
	static const struct {
		const char *name;
		int rc;
		const char *msg;
	} bad[] = {
		{ "hops17", H5_ERR_LOOP, "more than 16" },
		{ "loop", H5_ERR_LOOP, "more than 16" },
		{ "missing", H5_ERR_NOTFOUND, "file not found: chain/none.h5" },
		{ "nothing", H5_ERR_NOTFOUND, "chain/c.h5::/c/none" },
	};
	h5_file *f;
	uint64_t addr = 0;
	char *fpath = NULL, base[64];

	if (!py_ok)
		return;
	f = open_master();
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		ck_assert_int_eq(follow(f, bad[i].name, &addr, &fpath, base, sizeof(base)), bad[i].rc);
		ck_assert_ptr_null(fpath);
		ck_assert_msg(strstr(h5_err_msg(), bad[i].msg), "%s: %s", bad[i].name, h5_err_msg());
	}
	/* h5_path_lookup (virtual dataset sources) stays inside its file */
	ck_assert_int_eq(h5_path_lookup(&addr, f, "/local/data"), 0);
	ck_assert_int_eq(h5_path_lookup(&addr, f, "/soft"), 0);
	ck_assert_int_eq(h5_path_lookup(&addr, f, "/nested"), H5_ERR_NOTFOUND);
	h5_file_close(f);
}
END_TEST

/* h5_path_lookup_from: relative paths (a relative soft link's target) from
 * a group, relative links on the way read from the group holding them, as
 * libhdf5 reads them: local/rel_nowhere's "soft" is /local/soft, nothing. */
START_TEST(py_relative)
{
	h5_file *f;
	uint64_t data = 0, local = 0, addr = 0;

	if (!py_ok)
		return;
	f = open_master();
	ck_assert_int_eq(h5_path_lookup(&data, f, "/local/data"), 0);
	ck_assert_int_eq(h5_path_lookup(&local, f, "/local"), 0);
	ck_assert_int_eq(h5_path_lookup_from(&addr, f, local, "data"), 0);
	ck_assert_uint_eq(addr, data);
	ck_assert_int_eq(h5_path_lookup_from(&addr, f, local, "rel_rel"), 0);
	ck_assert_uint_eq(addr, data);
	ck_assert_int_eq(h5_path_lookup_from(&addr, f, h5_file_root(f), "rel_local"), 0);
	ck_assert_uint_eq(addr, data);
	ck_assert_int_eq(h5_path_lookup_from(&addr, f, local, "/soft"), 0);
	ck_assert_uint_eq(addr, data);
	ck_assert_int_eq(h5_path_lookup_from(&addr, f, local, "./rel"), 0);
	ck_assert_uint_eq(addr, data);
	ck_assert_int_eq(h5_path_lookup_from(&addr, f, local, "rel_nowhere"), H5_ERR_NOTFOUND);
	ck_assert_int_eq(h5_path_lookup_from(&addr, f, h5_file_root(f), "data"), H5_ERR_NOTFOUND);
	h5_file_close(f);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("link_follow");
	TCase *tp = tcase_create("h5py");

	tcase_add_unchecked_fixture(tp, py_setup, py_teardown);
	tcase_set_timeout(tp, 120);
	tcase_add_test(tp, py_chains);
	tcase_add_test(tp, py_refused);
	tcase_add_test(tp, py_relative);
	suite_add_tcase(s, tp);
	return s;
}

H5_TEST_MAIN(make_suite)
