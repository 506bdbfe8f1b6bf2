/* test_plan.c - the read plan (h5_dataset_map, plan.c) on every layout:
 * compact, contiguous (allocated, and never written: fill), external
 * (several files with gaps between their segments), chunked (missing
 * chunks read as fill, filtered chunks pinned, windows of more pieces
 * than a reply carries read into a buffer) and virtual (a gap of fill
 * between mappings). For windows at the ends, on piece boundaries and at
 * random, with splicing allowed and not (a live mount), the plan's bytes
 * - its extents read back from their descriptors, its pinned pieces, or
 * its buffer - must equal h5_dataset_read's, which must equal what h5py
 * wrote; and each kind must be chosen where it applies. Views: text for
 * variable-length strings, raw bytes otherwise. h5py writes the
 * file at test time. */
#include "testutil.h"

#include <unistd.h>

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/h5fs-test-plan-XXXXXX");
}

static void teardown(void)
{
	test_tmp_remove(tmpdir);
}

/* Each dataset NAME gets NAME.bin: its bytes as h5py reads them. */
static const char gen_script[] =
	"import os, sys\n"
	"try:\n"
	"    import h5py, numpy as np\n"
	"except ImportError:\n"
	"    sys.exit(77)\n"
	"d = sys.argv[1]\n"
	"os.chdir(d)  # external files are named relative to the HDF5 file\n"
	"def out(name, a):\n"
	"    open(name + '.bin', 'wb').write(np.ascontiguousarray(a).tobytes())\n"
	"with h5py.File('p.h5', 'w', libver='latest') as f:\n"
	"    a = np.arange(300, dtype='<i4') * 7\n"
	"    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)\n"
	"    dcpl.set_layout(h5py.h5d.COMPACT)\n"
	"    sp = h5py.h5s.create_simple((300,))\n"
	"    h5py.h5d.create(f.id, b'compact', h5py.h5t.STD_I32LE, sp, dcpl=dcpl).write(\n"
	"        h5py.h5s.ALL, h5py.h5s.ALL, a)\n"
	"    out('compact', a)\n"
	"    b = (np.arange(5000, dtype='<u8') * 2654435761) % 1000003\n"
	"    f.create_dataset('contig', data=b)\n"
	"    out('contig', b)\n"
	"    f.create_dataset('contig_fill', (777,), dtype='<i2', fillvalue=-5)\n"
	"    out('contig_fill', np.full(777, -5, dtype='<i2'))\n"
	"    e = np.arange(250, dtype='<i4') * 3 + 1\n"
	"    for name, off, size in (('e1.bin', 16, 400), ('e2.bin', 100, 400), ('e3.bin', 0, 200)):\n"
	"        open(name, 'wb').write(os.urandom(off + size + 33))\n"
	"    f.create_dataset('external', data=e, external=[('e1.bin', 16, 400), ('e2.bin', 100, 400),\n"
	"                                                  ('e3.bin', 0, 200)])\n"
	"    out('external', e)\n"
	"    c = f.create_dataset('chunked', (100, 37), dtype='<i2', chunks=(8, 10), fillvalue=-3)\n"
	"    c[:40, :] = (np.arange(40 * 37).reshape(40, 37) % 30000).astype('<i2')\n"
	"    c[64:72, 20:30] = 11\n"
	"    out('chunked', c[...])\n"
	"    g = f.create_dataset('filtered', (60, 50), dtype='<f8', chunks=(7, 9), compression='gzip',\n"
	"                         fillvalue=2.5)\n"
	"    g[:35, :] = np.arange(35 * 50).reshape(35, 50) / 3.0\n"
	"    out('filtered', g[...])\n"
	"    m = f.create_dataset('many', (200, 40), dtype='u1', chunks=(200, 1))\n"
	"    m[...] = np.arange(200 * 40).reshape(200, 40) % 251\n"
	"    out('many', m[...])\n"
	"    s1 = f.create_dataset('src1', data=np.arange(100, dtype='<i4'))\n"
	"    s2 = f.create_dataset('src2', data=np.arange(100, 160, dtype='<i4'))\n"
	"    lay = h5py.VirtualLayout(shape=(200,), dtype='<i4')\n"
	"    lay[0:100] = h5py.VirtualSource(s1)\n"
	"    lay[130:190] = h5py.VirtualSource(s2)\n"
	"    v = f.create_virtual_dataset('virtual', lay, fillvalue=-1)\n"
	"    out('virtual', v[...])\n"
	"    t = f.create_dataset('text', (50,), dtype=h5py.string_dtype('utf-8'))\n"
	"    t[...] = ['s%d' % i * (i % 4) for i in range(50)]\n"
	"    open('text.bin', 'wb').write(b''.join(x + b'\\n' for x in t[...]))\n";

typedef struct pfix {
	h5_file *f;
	h5_dataset *d;
	uint8_t *want;
	size_t len;
	unsigned kinds[4];      /* windows answered per h5_plan_kind */
} pfix;

static uint8_t *slurp(const char *name, size_t *len)
{
	char path[256];
	FILE *fp;
	uint8_t *p;
	long n;

	snprintf(path, sizeof(path), "%s/%s.bin", tmpdir, name);
	fp = fopen(path, "rb");
	ck_assert_msg(fp != NULL, "%s", path);
	ck_assert_int_eq(fseek(fp, 0, SEEK_END), 0);
	n = ftell(fp);
	rewind(fp);
	p = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(fread(p, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return p;
}

static int generated = -1;

/* 0: x open on dataset `name`; 77: no h5py (skipped). */
static int open_fix(pfix *x, const char *name)
{
	char path[256];
	h5_link l;

	if (generated < 0)
		generated = test_py_run(tmpdir, gen_script, NULL);
	if (generated == 77 || generated == TEST_PY_NO_PYTHON) {
		fprintf(stderr, "test_plan: no /usr/bin/python3 with h5py: skipped\n");
		return 77;
	}
	ck_assert_msg(generated == 0, "h5py generator failed: %d", generated);
	memset(x, 0, sizeof(*x));
	snprintf(path, sizeof(path), "%s/p.h5", tmpdir);
	ck_assert_msg(h5_file_open(&x->f, path, NULL) == 0, "%s", h5_err_msg());
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(h5_group_lookup(&l, x->f, h5_file_root(x->f), name), 0);
	ck_assert_msg(h5_dataset_open(&x->d, x->f, l.addr) == 0, "%s: %s", name, h5_err_msg());
	h5_link_clear(&l);
	x->want = slurp(name, &x->len);
	ck_assert_uint_eq(h5_dataset_size(x->d), x->len);
	return 0;
}

static void close_fix(pfix *x)
{
	free(x->want);
	h5_dataset_close(x->d);
	h5_file_close(x->f);
}

/* The window through the plan (with flags) and through h5_dataset_read,
 * both against h5py's bytes; returns the plan's kind. */
static h5_plan_kind window(pfix *x, uint64_t off, size_t len, unsigned flags)
{
	h5_read_plan *p = malloc(sizeof(*p));
	uint8_t *got = malloc(len + 1), *rd = malloc(len + 1);
	size_t pos = 0;
	h5_plan_kind k;

	ck_assert(p && got && rd);
	ck_assert_msg(h5_dataset_read(x->d, rd, off, len) == 0, "read [%llu,+%zu): %s", (unsigned long long)off,
		      len, h5_err_msg());
	ck_assert_msg(memcmp(rd, x->want + off, len) == 0, "read [%llu,+%zu) differs from h5py",
		      (unsigned long long)off, len);
	ck_assert_msg(h5_dataset_map(p, x->d, off, len, flags) == 0, "map [%llu,+%zu): %s", (unsigned long long)off,
		      len, h5_err_msg());
	k = p->kind;
	switch (k) {
	case H5_PLAN_EMPTY:
		ck_assert_uint_eq(len, 0);
		break;
	case H5_PLAN_EXTENTS:
		ck_assert(!(flags & H5_MAP_NO_SPLICE));
		ck_assert(p->next > 0 && p->next <= H5_PLAN_MAX);
		for (size_t i = 0; i < p->next; i++) {
			ck_assert(p->ext[i].fd >= 0 && p->ext[i].len > 0 && p->ext[i].len <= len - pos);
			ck_assert_int_eq(pread(p->ext[i].fd, got + pos, (size_t)p->ext[i].len, (off_t)p->ext[i].file_off),
					 (ssize_t)p->ext[i].len);
			pos += (size_t)p->ext[i].len;
		}
		break;
	case H5_PLAN_PINNED:
		ck_assert(p->pin.niov > 0 && p->pin.niov <= H5_PIN_MAX);
		for (size_t i = 0; i < p->pin.niov; i++) {
			ck_assert_uint_le(p->pin.iov[i].iov_len, len - pos);
			memcpy(got + pos, p->pin.iov[i].iov_base, p->pin.iov[i].iov_len);
			pos += p->pin.iov[i].iov_len;
		}
		break;
	case H5_PLAN_BUFFER:
		ck_assert_uint_eq(p->len, len);
		ck_assert_uint_eq(p->pin.nheld + p->pin.nsrc_held, 0);
		memcpy(got, p->buf, len);
		pos = len;
		break;
	}
	ck_assert_msg(pos == len, "plan of [%llu,+%zu) covers %zu bytes", (unsigned long long)off, len, pos);
	ck_assert_msg(memcmp(got, rd, len) == 0, "plan (kind %d) of [%llu,+%zu) differs from the read", (int)k,
		      (unsigned long long)off, len);
	h5_read_plan_release(p);
	ck_assert_uint_eq(p->pin.nheld + p->pin.nsrc_held, 0);
	ck_assert_ptr_null(p->buf);
	x->kinds[k]++;
	free(p);
	free(got);
	free(rd);
	return k;
}

/* The whole dataset, every `step` bytes a window across that boundary,
 * the last byte, and pseudo-random windows; with and without splicing. */
static void windows(pfix *x, size_t step)
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL ^ x->len;

	for (unsigned fl = 0; fl < 2; fl++) {
		unsigned flags = fl ? H5_MAP_NO_SPLICE : 0;

		window(x, 0, x->len, flags);
		window(x, x->len - 1, 1, flags);
		window(x, x->len, 0, flags);
		for (size_t at = step; at < x->len; at += step) {
			window(x, at - 1, 2, flags);
			window(x, at - 3, x->len - (at - 3) < 20 ? x->len - (at - 3) : 20, flags);
		}
		for (int i = 0; i < 200; i++) {
			uint64_t off, len;

			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			off = (seed >> 11) % x->len;
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			len = 1 + (seed >> 11) % (i % 8 == 0 ? x->len : 300);
			if (len > x->len - off)
				len = x->len - off;
			window(x, off, (size_t)len, flags);
		}
	}
}

START_TEST(plan_compact)
{
	pfix x;

	if (open_fix(&x, "compact") == 77)
		return;
	windows(&x, 64);
	/* the dataset's own memory: copied */
	ck_assert_uint_eq(x.kinds[H5_PLAN_EXTENTS] + x.kinds[H5_PLAN_PINNED], 0);
	close_fix(&x);
}
END_TEST

START_TEST(plan_contiguous)
{
	pfix x;
	h5_read_plan p;

	if (open_fix(&x, "contig") == 77)
		return;
	windows(&x, 4096);
	ck_assert_int_eq(window(&x, 8, 4000, 0), H5_PLAN_EXTENTS);
	ck_assert_int_eq(window(&x, 8, 4000, H5_MAP_NO_SPLICE), H5_PLAN_BUFFER);
	/* past the end: an error, nothing held */
	ck_assert_int_eq(h5_dataset_map(&p, x.d, x.len - 3, 4, 0), H5_ERR_INVAL);
	ck_assert_ptr_null(p.buf);
	ck_assert_int_eq(h5_dataset_map(&p, x.d, UINT64_MAX, 2, 0), H5_ERR_INVAL);
	close_fix(&x);
	/* never written: fill, read into a buffer */
	if (open_fix(&x, "contig_fill") == 77)
		return;
	windows(&x, 100);
	ck_assert_uint_eq(x.kinds[H5_PLAN_EXTENTS] + x.kinds[H5_PLAN_PINNED], 0);
	ck_assert_uint_gt(x.kinds[H5_PLAN_BUFFER], 0);
	close_fix(&x);
}
END_TEST

START_TEST(plan_external)
{
	pfix x;

	if (open_fix(&x, "external") == 77)
		return;
	/* the segments end at 400 and 800: windows across both */
	windows(&x, 400);
	ck_assert_int_eq(window(&x, 390, 420, 0), H5_PLAN_BUFFER);
	ck_assert_uint_eq(x.kinds[H5_PLAN_EXTENTS] + x.kinds[H5_PLAN_PINNED], 0);
	close_fix(&x);
}
END_TEST

START_TEST(plan_chunked)
{
	pfix x;
	size_t row = 37 * 2;

	if (open_fix(&x, "chunked") == 77)
		return;
	windows(&x, 10 * 2);
	/* rows 0-7 are written: chunk (0,0)'s first row is one piece of FILE */
	ck_assert_int_eq(window(&x, 0, 20, 0), H5_PLAN_EXTENTS);
	ck_assert_int_eq(window(&x, 2 * row, 3 * row, 0), H5_PLAN_EXTENTS);
	/* rows 40-63 were never written: fill, alone or after FILE's bytes */
	ck_assert_int_eq(window(&x, 48 * row, row, 0), H5_PLAN_BUFFER);
	ck_assert_int_eq(window(&x, 39 * row, 2 * row, 0), H5_PLAN_BUFFER);
	ck_assert_int_eq(window(&x, 0, 20, H5_MAP_NO_SPLICE), H5_PLAN_BUFFER);
	close_fix(&x);
}
END_TEST

START_TEST(plan_filtered)
{
	pfix x;
	size_t row = 50 * 8;

	if (open_fix(&x, "filtered") == 77)
		return;
	windows(&x, 9 * 8);
	/* written rows: decoded chunks, pinned, with splicing or not */
	ck_assert_int_eq(window(&x, 3 * row, 2 * row, 0), H5_PLAN_PINNED);
	ck_assert_int_eq(window(&x, 3 * row + 5, 100, H5_MAP_NO_SPLICE), H5_PLAN_PINNED);
	/* rows 35-59 were never written (chunks from row 35 on: fill) */
	ck_assert_int_eq(window(&x, 40 * row, row, 0), H5_PLAN_BUFFER);
	ck_assert_int_eq(window(&x, 34 * row, 2 * row, 0), H5_PLAN_BUFFER);
	close_fix(&x);
}
END_TEST

/* A window of more pieces than a reply carries is read into a buffer. */
START_TEST(plan_many_pieces)
{
	pfix x;

	if (open_fix(&x, "many") == 77)
		return;
	windows(&x, 40);
	/* one chunk per column: a row of 40 columns is 40 pieces, two rows 80 */
	ck_assert_int_eq(window(&x, 0, 40, 0), H5_PLAN_EXTENTS);
	ck_assert_int_eq(window(&x, 0, 80, 0), H5_PLAN_BUFFER);
	close_fix(&x);
}
END_TEST

START_TEST(plan_virtual)
{
	pfix x;

	if (open_fix(&x, "virtual") == 77)
		return;
	windows(&x, 40);
	/* inside one source: its bytes in FILE; across the gap: fill, read */
	ck_assert_int_eq(window(&x, 16, 200, 0), H5_PLAN_EXTENTS);
	ck_assert_int_eq(window(&x, 140 * 4, 200, 0), H5_PLAN_EXTENTS);
	ck_assert_int_eq(window(&x, 90 * 4, 200, 0), H5_PLAN_BUFFER);
	/* not whole elements: read */
	ck_assert_int_eq(window(&x, 17, 200, 0), H5_PLAN_BUFFER);
	close_fix(&x);
}
END_TEST

/* Views: a dataset of variable-length strings shows as text by default,
 * planned as a buffer equal to the text; its raw view shows the stored
 * heap references (16 bytes each), planned from the layout like any
 * contiguous dataset. */
START_TEST(plan_views)
{
	pfix x;
	h5_read_plan p;
	uint8_t *raw;
	uint64_t rsize;

	if (open_fix(&x, "text") == 77)
		return;
	ck_assert_ptr_eq(h5_dataset_view(x.d), &h5_view_text);
	windows(&x, 7);
	ck_assert_uint_eq(x.kinds[H5_PLAN_EXTENTS] + x.kinds[H5_PLAN_PINNED], 0);
	rsize = h5_view_raw.size(x.d);
	ck_assert_uint_eq(rsize, 50 * 16);
	raw = malloc(rsize);
	ck_assert_ptr_nonnull(raw);
	ck_assert_int_eq(h5_view_raw.read(x.d, raw, 0, rsize), 0);
	ck_assert_int_eq(h5_view_raw.map(&p, x.d, 16, 160, 0), 0);
	ck_assert_int_eq(p.kind, H5_PLAN_EXTENTS);
	ck_assert_uint_eq(p.next, 1);
	{
		uint8_t got[160];

		ck_assert_int_eq(pread(p.ext[0].fd, got, 160, (off_t)p.ext[0].file_off), 160);
		ck_assert_mem_eq(got, raw + 16, 160);
	}
	h5_read_plan_release(&p);
	ck_assert_int_eq(h5_view_raw.map(&p, x.d, rsize - 1, 2, 0), H5_ERR_INVAL);
	free(raw);
	close_fix(&x);
	/* a plain dataset's default view is raw */
	if (open_fix(&x, "contig") == 77)
		return;
	ck_assert_ptr_eq(h5_dataset_view(x.d), &h5_view_raw);
	close_fix(&x);
}
END_TEST

static Suite *plan_suite(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("h5py");

	/* one generated file for all cases: no fork between them */
	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, plan_compact);
	tcase_add_test(tc, plan_contiguous);
	tcase_add_test(tc, plan_external);
	tcase_add_test(tc, plan_chunked);
	tcase_add_test(tc, plan_filtered);
	tcase_add_test(tc, plan_many_pieces);
	tcase_add_test(tc, plan_virtual);
	tcase_add_test(tc, plan_views);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run(srunner_create(plan_suite()), CK_NOFORK, NULL);
}
