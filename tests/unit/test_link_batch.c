/* test_link_batch.c - rename, hard link and unlink of many names of one
 * group in one commit (write/link_batch.c h5_link_change_batch, issue 82
 * item 2), on files h5py wrote: in a symbol-table group (h5py's default)
 * a mix of renames (a name given an existing object, its old name
 * removed), hard links and removals of one of two names lands in one
 * commit, the counts following the names; mv a b; mv b a nets to nothing;
 * a removal of a missing name, a name twice, or an object's last name
 * refused with nothing written, unless the caller takes a one-name
 * dataset's storage (h5_gone). The same sequence in every form a group
 * keeps its links in: a symbol-table group (h5py's default), a
 * latest-format group's dense storage (creation order tracked and
 * indexed, as netCDF-4 makes groups) and compact storage (a group whose
 * compact limit is 64); a compact group at its limit of 8 given three
 * more hard links stays compact past it, which libhdf5 reads and changes
 * (it moves the group to dense storage at its next insert). h5py reads
 * each result: the names, each dataset's values through every name, and
 * the counts. */
#include "testutil.h"
#include "h5core.h"

static const char gen[] =
	"import sys, os\n"
	"try:\n"
	"    import h5py, numpy as np\n"
	"except ImportError:\n"
	"    sys.exit(77)\n"
	"d = sys.argv[1]\n"
	"if len(sys.argv) > 2:\n"
	"    # the check after the batches: names, values, counts\n"
	"    if sys.argv[2] == 'full':\n"
	"        with h5py.File(sys.argv[3], 'a') as f:\n"
	"            g = f['g']\n"
	"            if sorted(g.keys()) != sorted(['a%02d' % i for i in range(7)] + ['l1', 'l2', 'l3']):\n"
	"                print('names', sorted(g.keys())); sys.exit(1)\n"
	"            g['n'] = np.arange(2)\n"
	"            for k, v in (('l1', 0), ('l2', 1), ('l3', 2), ('a06', 6)):\n"
	"                if g[k][()].tolist() != [v] * 3:\n"
	"                    print('value', k); sys.exit(1)\n"
	"        with h5py.File(sys.argv[3], 'r') as f:\n"
	"            if len(f['g']) != 11 or f['g/n'][()].tolist() != [0, 1]:\n"
	"                print('after an insert by libhdf5'); sys.exit(1)\n"
	"        sys.exit(0)\n"
	"    with h5py.File(sys.argv[2], 'r') as f:\n"
	"        g = f['g']\n"
	"        want = {'b00': 0, 'l00': 0, 'c01': 1, 'a02': 2, 'a04': 4, 'l04': 4, 'a05': 5, 'a06': 6,\n"
	"                'm07': 7, 'a08': 8, 'a09': 9}\n"
	"        names = sorted(g.keys())\n"
	"        if names != sorted(want):\n"
	"            print('names', names); sys.exit(1)\n"
	"        for k, v in want.items():\n"
	"            if g[k][()].tolist() != [v] * 3:\n"
	"                print('value', k); sys.exit(1)\n"
	"            rc = h5py.h5g.get_objinfo(g.id, k.encode()).nlink\n"
	"            n = sum(1 for j in want if want[j] == v)\n"
	"            if rc != n:\n"
	"                print('count', k, rc, n); sys.exit(1)\n"
	"    sys.exit(0)\n"
	"with h5py.File(os.path.join(d, 'old.h5'), 'w') as f:\n"
	"    g = f.create_group('g')\n"
	"    for i in range(10):\n"
	"        g['a%02d' % i] = np.full(3, i)\n"
	"with h5py.File(os.path.join(d, 'dense.h5'), 'w', libver='latest') as f:\n"
	"    g = f.create_group('g', track_order=True)\n"
	"    for i in range(10):\n"
	"        g['a%02d' % i] = np.full(3, i)\n"
	"with h5py.File(os.path.join(d, 'compact.h5'), 'w', libver='latest') as f:\n"
	"    gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)\n"
	"    # (h5py has no set_link_phase_change: libhdf5's own, the one h5py loaded)\n"
	"    import ctypes\n"
	"    lib = [l.split()[-1] for l in open('/proc/self/maps') if '/libhdf5' in l and '_hl' not in l][0]\n"
	"    pc = ctypes.CDLL(lib).H5Pset_link_phase_change\n"
	"    pc.argtypes = [ctypes.c_int64, ctypes.c_uint, ctypes.c_uint]\n"
	"    if pc(gcpl.id, 64, 32) < 0:\n"
	"        sys.exit(1)\n"
	"    gcpl.set_link_creation_order(h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED)\n"
	"    g = h5py.Group(h5py.h5g.create(f.id, b'g', gcpl=gcpl))\n"
	"    for i in range(10):\n"
	"        g['a%02d' % i] = np.full(3, i)\n"
	"with h5py.File(os.path.join(d, 'full.h5'), 'w', libver='latest') as f:\n"
	"    g = f.create_group('g')\n"
	"    for i in range(7):\n"
	"        g['a%02d' % i] = np.full(3, i)\n";

static uint64_t at(h5_file *f, uint64_t g, const char *name)
{
	h5_link l;
	uint64_t a;

	ck_assert_int_eq(h5_group_lookup(&l, f, g, name), 0);
	a = l.addr;
	h5_link_clear(&l);
	return a;
}

static unsigned nlink(h5_file *f, uint64_t addr)
{
	h5_obj_info info;

	ck_assert_int_eq(h5_obj_info_get(&info, f, addr), 0);
	return info.nlink ? info.nlink : 1;
}

/* The sequence in dir's file name (its group g: a00..a09), then h5py's check */
static void mix(const char *dir, const char *name)
{
	char path[128], args[200];
	h5_file *f = NULL;
	h5_link l;
	uint64_t g, a[10];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_int_eq(h5_file_open(&f, path, &(h5_open_opts){ .writable = 1 }), 0);
	ck_assert_int_eq(h5_path_lookup(&g, f, "/g"), 0);
	ck_assert_int_eq(h5_link_change_batchable(f, g), 1);
	for (int i = 0; i < 10; i++) {
		char n[8];

		snprintf(n, sizeof(n), "a%02d", i);
		a[i] = at(f, g, n);
	}
	/* refused before anything is written: a removal of a missing name,
	 * a name twice, an object's last name */
	{
		char *nm[2] = { "a01", "zz" };
		uint64_t ad[2] = { a[1], H5_ADDR_UNDEF };

		ck_assert_int_eq(h5_link_change_batch(f, g, nm, ad, 2, NULL, NULL), H5_ERR_NOTFOUND);
		h5_err_clear();
		nm[1] = "a01";
		ad[1] = a[2];
		ck_assert_int_eq(h5_link_change_batch(f, g, nm, ad, 2, NULL, NULL), H5_ERR_INVAL);
		h5_err_clear();
		nm[1] = "a03";
		ad[0] = H5_ADDR_UNDEF;
		ad[1] = H5_ADDR_UNDEF;
		ck_assert_int_eq(h5_link_change_batch(f, g, nm, ad, 2, NULL, NULL), H5_ERR_INVAL);
		h5_err_clear();
		ck_assert_uint_eq(at(f, g, "a01"), a[1]);
		ck_assert_uint_eq(at(f, g, "a03"), a[3]);
	}
	/* one batch: mv a00 b00, ln b00 l00 (a00's object named twice more,
	 * once less: +1), mv a01 c01, mv a07 m07, ln a04 l04, ln a03 x03 */
	{
		char *nm[] = { "a00", "b00", "l00", "a01", "c01", "a07", "m07", "l04", "x03" };
		uint64_t ad[] = { H5_ADDR_UNDEF, a[0], a[0], H5_ADDR_UNDEF, a[1], H5_ADDR_UNDEF, a[7], a[4], a[3] };

		ck_assert_int_eq(h5_link_change_batch(f, g, nm, ad, sizeof(nm) / sizeof(*nm), NULL, NULL), 0);
	}
	ck_assert_uint_eq(at(f, g, "b00"), a[0]);
	ck_assert_uint_eq(at(f, g, "l00"), a[0]);
	ck_assert_uint_eq(at(f, g, "c01"), a[1]);
	ck_assert_uint_eq(at(f, g, "x03"), a[3]);
	ck_assert_int_eq(h5_group_lookup(&l, f, g, "a00"), H5_ERR_NOTFOUND);
	h5_err_clear();
	ck_assert_uint_eq(nlink(f, a[0]), 2);
	ck_assert_uint_eq(nlink(f, a[1]), 1);
	ck_assert_uint_eq(nlink(f, a[3]), 2);
	ck_assert_uint_eq(nlink(f, a[4]), 2);
	/* the second: a03 and its second name x03 both removed is refused
	 * (the last name), one of them goes; a name kept as it is
	 * (b00 -> its own object) changes nothing; mv a02 t, mv t a02 nets
	 * to nothing (the caller's net: a02 -> a02's object) */
	{
		char *nm[] = { "x03", "b00", "a02" };
		uint64_t ad[] = { H5_ADDR_UNDEF, a[0], a[2] };

		ck_assert_int_eq(h5_link_change_batch(f, g, nm, ad, 3, NULL, NULL), 0);
	}
	{
		char *nm[] = { "a03" };
		uint64_t ad[] = { H5_ADDR_UNDEF };

		ck_assert_int_eq(h5_link_change_batch(f, g, nm, ad, 1, NULL, NULL), H5_ERR_INVAL);
		h5_err_clear();
	}
	{
		char *nm[] = { "a03", "a03x" };
		uint64_t ad[] = { H5_ADDR_UNDEF, a[3] };

		/* a rename (its new name first in no order): one commit */
		ck_assert_int_eq(h5_link_change_batch(f, g, nm, ad, 2, NULL, NULL), 0);
		nm[0] = "a03x";
		ad[0] = H5_ADDR_UNDEF;
		ck_assert_int_eq(h5_link_change_batch(f, g, nm, ad, 1, NULL, NULL), H5_ERR_INVAL);
		h5_err_clear();
	}
	ck_assert_uint_eq(nlink(f, a[3]), 1);
	ck_assert_uint_eq(nlink(f, a[2]), 1);
	h5_file_close(f);
	/* h5py's view after: the names of want (a03's object renamed to
	 * a03x: checked here, not there) */
	ck_assert_int_eq(h5_file_open(&f, path, &(h5_open_opts){ .writable = 1 }), 0);
	ck_assert_int_eq(h5_path_lookup(&g, f, "/g"), 0);
	{
		char *nm[] = { "a03x" };
		uint64_t ad[] = { H5_ADDR_UNDEF };

		h5_link_gone gone[1];
		size_t ng = 9;

		/* its last name: refused unless the caller takes its storage
		 * (as h5_link_delete_gone hands it back) */
		ck_assert_int_eq(h5_link_change_batch(f, g, nm, ad, 1, NULL, NULL), H5_ERR_INVAL);
		h5_err_clear();
		ck_assert_int_eq(h5_link_change_batch(f, g, nm, ad, 1, gone, &ng), 0);
		ck_assert_uint_eq(ng, 1);
		ck_assert_uint_eq(gone[0].addr, a[3]);
		ck_assert_ptr_nonnull(gone[0].gone);
		h5_gone_release(gone[0].gone);
	}
	{
		/* both names of an object named twice in FILE removed in one
		 * batch: refused (only a dataset of one name is taken) */
		char *nm[] = { "a04", "l04" };
		uint64_t ad[] = { H5_ADDR_UNDEF, H5_ADDR_UNDEF };
		h5_link_gone gone[2];
		size_t ng = 9;

		ck_assert_int_eq(h5_link_change_batch(f, g, nm, ad, 2, gone, &ng), H5_ERR_INVAL);
		h5_err_clear();
		ck_assert_uint_eq(ng, 0);
	}
	h5_file_close(f);
	snprintf(args, sizeof(args), "'%s'", path);
	{
		char vdir[64] = "/tmp/h5fs-test-lbatch-v-XXXXXX";

		ck_assert_int_eq(test_py_run(vdir, gen, args), 0);
		test_py_rmdir(vdir);
	}
}

START_TEST(forms_mix)
{
	char dir[64] = "/tmp/h5fs-test-lbatch-XXXXXX", path[128], args[200];
	h5_file *f = NULL;
	uint64_t g, ad[3];
	int rc = test_py_run(dir, gen, NULL);

	if (rc == 77 || rc == TEST_PY_NO_PYTHON) {
		test_py_rmdir(dir);
		return;
	}
	ck_assert_int_eq(rc, 0);
	mix(dir, "old.h5");
	mix(dir, "dense.h5");
	mix(dir, "compact.h5");
	/* a compact group at its limit: three more names in one commit */
	snprintf(path, sizeof(path), "%s/full.h5", dir);
	ck_assert_int_eq(h5_file_open(&f, path, &(h5_open_opts){ .writable = 1 }), 0);
	ck_assert_int_eq(h5_path_lookup(&g, f, "/g"), 0);
	ck_assert_int_eq(h5_link_change_batchable(f, g), 1);
	ad[0] = at(f, g, "a00");
	ad[1] = at(f, g, "a01");
	ad[2] = at(f, g, "a02");
	{
		char *nm[] = { "l1", "l2", "l3" };

		ck_assert_int_eq(h5_link_change_batch(f, g, nm, ad, 3, NULL, NULL), 0);
	}
	ck_assert_uint_eq(at(f, g, "l3"), ad[2]);
	ck_assert_uint_eq(nlink(f, ad[0]), 2);
	h5_file_close(f);
	snprintf(args, sizeof(args), "full '%s'", path);
	{
		char vdir[64] = "/tmp/h5fs-test-lbatch-v-XXXXXX";

		ck_assert_int_eq(test_py_run(vdir, gen, args), 0);
		test_py_rmdir(vdir);
	}
	test_py_rmdir(dir);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("link_batch");
	TCase *tc = tcase_create("link_batch");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, forms_mix);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
