/* test_vlen.c - datasets of variable-length types read as text (vlen.c):
 * the measured size, and windows anywhere in the text (at, before and
 * after the sparse index marks every 1024 elements, one byte, across
 * multi-line strings, at the end) against the text libhdf5's values give
 * (h5py writes the file and the expected text). Strings are measured
 * without the heap, other types rendered, null elements are empty lines. */
#include "testutil.h"
#include "file.h"
#include "dataset.h"
#include "vlen.h"

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/h5fs-test-vlen-XXXXXX");
}

static void teardown(void)
{
	test_tmp_remove(tmpdir);
}

/* Each dataset NAME gets NAME.txt: its expected text (one line per element,
 * C order; strings verbatim, null ones empty; int sequences as "[a, b]"),
 * and NAME.n: the number of elements. The last elements of s and seq are
 * never written, so they are null (fill). */
static const char gen_script[] =
	"import sys\n"
	"try:\n"
	"    import h5py, numpy as np\n"
	"except ImportError:\n"
	"    sys.exit(77)\n"
	"d = sys.argv[1]\n"
	"def s_elem(i):\n"
	"    if i % 97 == 0: return ''\n"
	"    if i % 13 == 0: return 'line%d\\nnext %d' % (i, i)\n"
	"    return '\\u00e9' * (i % 5) + 'x' * (i % 37) + str(i)\n"
	"def out(name, lines, n):\n"
	"    open(d + '/' + name + '.txt', 'wb').write(b''.join(l + b'\\n' for l in lines))\n"
	"    open(d + '/' + name + '.n', 'w').write(str(n))\n"
	"with h5py.File(d + '/v.h5', 'w') as f:\n"
	"    n, w = 3000, 2500\n"
	"    ds = f.create_dataset('s', (n,), dtype=h5py.string_dtype('utf-8'))\n"
	"    ds[:w] = [s_elem(i) for i in range(w)]\n"
	"    out('s', [s_elem(i).encode() for i in range(w)] + [b''] * (n - w), n)\n"
	"    ds = f.create_dataset('s2', (40, 30), dtype=h5py.string_dtype('ascii'), chunks=(7, 4))\n"
	"    a = np.array([[('r%dc%d' % (r, c)).encode() * (1 + (r + c) % 3) for c in range(30)]\n"
	"                  for r in range(40)], dtype=object)\n"
	"    ds[...] = a\n"
	"    out('s2', [a[r, c] for r in range(40) for c in range(30)], 1200)\n"
	"    n, w = 2600, 1500\n"
	"    ds = f.create_dataset('seq', (n,), dtype=h5py.vlen_dtype(np.dtype('<i4')))\n"
	"    vals = [np.arange(i, i + i % 4, dtype='<i4') - 2 for i in range(w)]\n"
	"    for i in range(0, w, 500):\n"
	"        ds[i:i + 500] = vals[i:i + 500]\n"
	"    out('seq', [('[' + ', '.join(str(x) for x in v) + ']').encode() for v in vals] + [b'[]'] * (n - w), n)\n";

static uint8_t *slurp(const char *name, const char *ext, size_t *len)
{
	char path[256];
	FILE *fp;
	uint8_t *p;
	long n;

	snprintf(path, sizeof(path), "%s/%s%s", tmpdir, name, ext);
	fp = fopen(path, "rb");
	ck_assert_msg(fp != NULL, "%s", path);
	ck_assert_int_eq(fseek(fp, 0, SEEK_END), 0);
	n = ftell(fp);
	rewind(fp);
	p = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(fread(p, 1, (size_t)n, fp), (size_t)n);
	p[n] = 0;
	fclose(fp);
	*len = (size_t)n;
	return p;
}

typedef struct vfix {
	h5_file *f;
	h5_dataset *d;
	h5_vtext *vt;
	uint8_t *want;
	size_t want_len;
	uint64_t *line;         /* text offset of each element's line */
	uint64_t n;
} vfix;

/* 0: open; 77: no h5py (skipped). */
static int open_text(vfix *x, const char *name)
{
	char path[256];
	h5_link l;
	size_t len;
	uint8_t *nstr;
	uint64_t k = 0;
	int st = test_py_run(tmpdir, gen_script, NULL);

	if (st == 77 || st == TEST_PY_NO_PYTHON) {
		fprintf(stderr, "test_vlen: no /usr/bin/python3 with h5py: skipped\n");
		return 77;
	}
	ck_assert_msg(st == 0, "h5py generator failed: %d", st);
	memset(x, 0, sizeof(*x));
	snprintf(path, sizeof(path), "%s/v.h5", tmpdir);
	ck_assert_msg(h5_file_open(&x->f, path, NULL) == 0, "%s", h5_err_msg());
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(h5_group_lookup(&l, x->f, h5_file_root(x->f), name), 0);
	ck_assert_msg(h5_dataset_open(&x->d, x->f, l.addr) == 0, "%s", h5_err_msg());
	h5_link_clear(&l);
	ck_assert(x->d->has_vlen);
	x->want = slurp(name, ".txt", &x->want_len);
	nstr = slurp(name, ".n", &len);
	x->n = strtoull((char *)nstr, NULL, 10);
	free(nstr);
	ck_assert_uint_eq(x->n, x->d->nelmts);
	/* the line starts, from the expected text (multi-line strings: every
	 * s element with i % 13 == 0 holds one "\n"; counted by the generator's
	 * rule, not by scanning) */
	x->line = calloc(x->n + 1, sizeof(*x->line));
	ck_assert_ptr_nonnull(x->line);
	for (uint64_t i = 0, pos = 0; i < x->n; i++) {
		bool two = strcmp(name, "s") == 0 && i < 2500 && i % 97 != 0 && i % 13 == 0;
		uint8_t *nl = memchr(x->want + pos, '\n', x->want_len - pos);

		ck_assert_ptr_nonnull(nl);
		if (two)
			nl = memchr(nl + 1, '\n', x->want_len - (size_t)(nl + 1 - x->want));
		ck_assert_ptr_nonnull(nl);
		x->line[i] = pos;
		pos = (uint64_t)(nl - x->want) + 1;
		k = pos;
	}
	x->line[x->n] = k;
	ck_assert_uint_eq(k, x->want_len);
	ck_assert_msg(h5_vtext_ensure(&x->vt, x->d) == 0, "%s", h5_err_msg());
	return 0;
}

static void close_text(vfix *x)
{
	free(x->want);
	free(x->line);
	h5_dataset_close(x->d);
	h5_file_close(x->f);
}

static void window(vfix *x, uint64_t off, size_t len)
{
	uint8_t *buf = malloc(len + 1);

	ck_assert_ptr_nonnull(buf);
	memset(buf, '#', len + 1);
	ck_assert_msg(h5_vtext_read(x->d, x->vt, buf, off, len) == 0, "[%llu, +%zu): %s",
		      (unsigned long long)off, len, h5_err_msg());
	ck_assert_msg(memcmp(buf, x->want + off, len) == 0, "[%llu, +%zu) differs", (unsigned long long)off, len);
	ck_assert_uint_eq(buf[len], '#');      /* nothing written past the window */
	free(buf);
}

/* The whole text, then windows around every mark and element start, then
 * pseudo-random ones. */
static void check_text(vfix *x)
{
	uint64_t size = h5_vtext_size(x->vt), seed = 12345;

	ck_assert_uint_eq(size, x->want_len);
	ck_assert_uint_eq(h5_dataset_size(x->d), size);
	window(x, 0, (size_t)size);
	for (uint64_t e = 0; e < x->n; e += e % 1024 == 0 ? 1023 : 1) {
		uint64_t at = x->line[e];

		if (e % 1024 != 0 && e % 1024 != 1023)
			continue;
		/* exactly at a mark, one byte before it and one after it */
		window(x, at, (size_t)(size - at < 50 ? size - at : 50));
		if (at > 0)
			window(x, at - 1, 2);
		if (at + 1 < size)
			window(x, at + 1, 1);
	}
	for (int i = 0; i < 300; i++) {
		uint64_t off, len;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		off = (seed >> 11) % size;
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		len = 1 + (seed >> 11) % (i % 10 == 0 ? 70000 : 300);
		if (len > size - off)
			len = size - off;
		window(x, off, (size_t)len);
	}
	/* the last byte is the last element's newline */
	window(x, size - 1, 1);
	ck_assert_uint_eq(x->want[size - 1], '\n');
}

START_TEST(strings_with_marks_and_nulls)
{
	vfix x;

	if (open_text(&x, "s") == 77)
		return;
	check_text(&x);
	/* the null elements at the end are empty lines */
	ck_assert_uint_eq(x.line[x.n] - x.line[2500], 500);
	close_text(&x);
}
END_TEST

START_TEST(strings_2d_c_order)
{
	vfix x;

	if (open_text(&x, "s2") == 77)
		return;
	check_text(&x);
	window(&x, x.line[31], 12);       /* row 1, column 1: "r1c1" x 3 */
	ck_assert_int_eq(memcmp(x.want + x.line[31], "r1c1r1c1r1c1\n", 13), 0);
	close_text(&x);
}
END_TEST

START_TEST(sequences_rendered)
{
	vfix x;

	if (open_text(&x, "seq") == 77)
		return;
	check_text(&x);
	close_text(&x);
}
END_TEST

/* Measuring once: a second ensure gives the same index, and reading
 * through the public dataset call gives the same bytes. */
START_TEST(measured_once_public_read)
{
	vfix x;
	h5_vtext *again;
	uint8_t buf[64];

	if (open_text(&x, "s") == 77)
		return;
	ck_assert_int_eq(h5_vtext_ensure(&again, x.d), 0);
	ck_assert_ptr_eq(again, x.vt);
	ck_assert_int_eq(h5_dataset_read(x.d, buf, x.line[1024], sizeof(buf)), 0);
	ck_assert_int_eq(memcmp(buf, x.want + x.line[1024], sizeof(buf)), 0);
	close_text(&x);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("vlen");
	TCase *tc = tcase_create("text");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, strings_with_marks_and_nulls);
	tcase_add_test(tc, strings_2d_c_order);
	tcase_add_test(tc, sequences_rendered);
	tcase_add_test(tc, measured_once_public_read);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
