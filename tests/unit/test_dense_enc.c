/* test_dense_enc.c - the whole-structure encoders of dense storage
 * (format/fheap_enc.c, format/btree2_enc.c; used by write/dense_write.c),
 * decoded back by the readers (fheap.c, btree2.c) from a memory image:
 * heaps of no object, one (a root direct block), many (a root indirect
 * block over several rows), with objects too large for the first
 * blocks (blocks skipped) and past the root's direct rows (child
 * indirect blocks); trees of 0 to 20000 records (depth 0 to 2); the
 * refusals (a heap past the root's direct rows, an object over the
 * managed limit); and h5_fheap_capacity, a lower bound of what the
 * encoder places. test_dense.py checks the same structures with libhdf5. */
#include "testutil.h"

#include <inttypes.h>

#define HEAPFIX_PREFIX "/tmp/h5fs-de-"
#include "heap_fixtures.h"
#include "base.h"
#include "rd.h"
#include "file.h"
#include "fheap.h"
#include "btree2.h"

#define BASE 0x400u

static h5_fheap_params link_params(void)
{
	/* libhdf5's dense link heaps (H5G_FHEAP_*) */
	return (h5_fheap_params){ .id_len = 7, .width = 4, .start_block_size = 512, .max_direct_size = 65536,
				  .max_heap_bits = 32, .start_root_rows = 1, .checksum_dblocks = true,
				  .max_man_size = 4096, .huge_bt2_addr = UINT64_MAX };
}

/* n objects of the given sizes, each filled with its own byte, encoded at
 * BASE, then every one read back through its ID. */
static void heap_round_trip(const size_t *sizes, size_t n, size_t *img_len)
{
	h5_fheap_params p = link_params();
	h5_fmt fmt = { SA, SS };
	uint8_t **objs = calloc(n ? n : 1, sizeof(*objs)), *ids = calloc(n ? n : 1, 7), *img = NULL, *file;
	size_t len = 0;
	h5_file *f;
	h5_fheap *h;

	for (size_t i = 0; i < n; i++) {
		objs[i] = malloc(sizes[i]);
		memset(objs[i], (int)(i * 7 + 1), sizes[i]);
	}
	ck_assert_int_eq(h5_fheap_build(&img, &len, ids, &p, &fmt, BASE, (const uint8_t *const *)objs, sizes, n), 0);
	file = calloc(1, BASE + len);
	memcpy(file + BASE, img, len);
	f = mem_file(file, BASE + len);
	ck_assert_int_eq(h5_fheap_open(&h, f, BASE), 0);
	for (size_t i = 0; i < n; i++) {
		uint8_t *obj = NULL;
		size_t olen = 0;

		ck_assert_int_eq(h5_fheap_read(&obj, &olen, h, ids + i * 7, 7), 0);
		ck_assert_uint_eq(olen, sizes[i]);
		ck_assert_mem_eq(obj, objs[i], olen);
		free(obj);
		free(objs[i]);
	}
	h5_fheap_close(h);
	h5_file_close(f);
	free(file);
	free(img);
	free(ids);
	free(objs);
	*img_len = len;
}

START_TEST(t_heap_shapes)
{
	size_t one[1] = { 40 }, many[200], big[5] = { 30, 4000, 20, 3000, 4096 }, len = 0;

	heap_round_trip(NULL, 0, &len);
	heap_round_trip(one, 1, &len);
	/* a header and one 512-byte root direct block */
	ck_assert_uint_lt(len, 200 + 512);
	for (size_t i = 0; i < 200; i++)
		many[i] = 17 + i % 40;
	heap_round_trip(many, 200, &len);
	/* over 7 KiB of objects: rows of 512-byte, 1 KiB and 2 KiB blocks */
	ck_assert_uint_gt(len, 7000);
	heap_round_trip(big, 5, &len);
	/* 1.2 MB: past the root's direct rows (512 KiB), into child
	 * indirect blocks of rows 9 and 10 */
	{
		size_t nh = 300, *huge_rows = calloc(nh, sizeof(*huge_rows));

		for (size_t i = 0; i < nh; i++)
			huge_rows[i] = 3000 + i * 3;
		heap_round_trip(huge_rows, nh, &len);
		ck_assert_uint_gt(len, 1000000);
		free(huge_rows);
	}
}
END_TEST

START_TEST(t_heap_refusals)
{
	h5_fheap_params p = link_params();
	h5_fmt fmt = { SA, SS };
	size_t n = 1200, *sizes = calloc(n, sizeof(*sizes));
	uint8_t **objs = calloc(n, sizeof(*objs)), *ids = calloc(n, 7), *img = NULL;
	size_t len = 0;

	for (size_t i = 0; i < n; i++) {
		sizes[i] = 4000;
		objs[i] = calloc(1, sizes[i]);
	}
	/* 4.8 MB: more than one level of child indirect blocks holds: ENOSPC */
	ck_assert_int_eq(h5_fheap_build(&img, &len, ids, &p, &fmt, BASE, (const uint8_t *const *)objs, sizes, n),
			 H5_ERR_NOSPC);
	ck_assert_ptr_null(img);
	sizes[0] = 4097;        /* a huge object */
	ck_assert_int_eq(h5_fheap_build(&img, &len, ids, &p, &fmt, BASE, (const uint8_t *const *)objs, sizes, 1),
			 H5_ERR_UNSUPPORTED);
	p.filtered = true;
	ck_assert_int_eq(h5_fheap_build(&img, &len, ids, &p, &fmt, BASE, (const uint8_t *const *)objs, sizes, 0),
			 H5_ERR_UNSUPPORTED);
	for (size_t i = 0; i < n; i++)
		free(objs[i]);
	free(objs);
	free(ids);
	free(sizes);
}
END_TEST

/* h5_fheap_capacity is a lower bound of what h5_fheap_build places (the
 * write-behind promises a batch on it): objects of one size up to the
 * capacity are built, and the first count that fails lies past it; with
 * sizes mixed up to max_obj too. */
static int build_n(const size_t *sizes, size_t n)
{
	h5_fheap_params p = link_params();
	h5_fmt fmt = { SA, SS };
	const uint8_t **objs = calloc(n ? n : 1, sizeof(*objs));
	static uint8_t zero[4096];
	uint8_t *ids = calloc(n ? n : 1, 7), *img = NULL;
	size_t len = 0;
	int rc;

	for (size_t i = 0; i < n; i++)
		objs[i] = zero;
	rc = h5_fheap_build(&img, &len, ids, &p, &fmt, BASE, objs, sizes, n);
	h5_err_clear();
	free(img);
	free(ids);
	free(objs);
	return rc;
}

START_TEST(t_heap_capacity)
{
	h5_fheap_params p = link_params();
	h5_fmt fmt = { SA, SS };
	const size_t obj[] = { 60, 300, 1000, 4096 };

	for (size_t k = 0; k < sizeof(obj) / sizeof(obj[0]); k++) {
		uint64_t cap = h5_fheap_capacity(&p, &fmt, obj[k]);
		size_t fit = (size_t)(cap / obj[k]), over, *sizes, ncap = fit * 4 + 16;

		/* a few MiB (4 MiB of blocks, less what each block cannot use) */
		ck_assert_uint_gt(cap, (uint64_t)2 << 20);
		ck_assert_uint_lt(cap, (uint64_t)5 << 20);
		sizes = calloc(ncap, sizeof(*sizes));
		for (size_t i = 0; i < ncap; i++)
			sizes[i] = obj[k];
		ck_assert_int_eq(build_n(sizes, fit), 0);
		/* the first count that fails is past the capacity */
		for (over = fit; over <= fit * 2 && build_n(sizes, over) == 0; over += 1 + fit / 64)
			;
		ck_assert_uint_le(over, fit * 2);
		ck_assert_int_eq(build_n(sizes, over), H5_ERR_NOSPC);
		/* mixed sizes up to obj[k]: still placed */
		{
			uint64_t sum = 0;
			size_t n = 0;

			while (sum + obj[k] <= cap && n < ncap) {
				sizes[n] = 1 + (n * 7919) % obj[k];
				sum += sizes[n++];
			}
			ck_assert_int_eq(build_n(sizes, n), 0);
		}
		free(sizes);
	}
	/* a heap that cannot be made has none */
	p.filtered = true;
	ck_assert_uint_eq(h5_fheap_capacity(&p, &fmt, 100), 0);
}
END_TEST

typedef struct got_t {
	uint8_t *p;
	size_t n;
} got_t;

static int collect(const uint8_t *rec, size_t len, void *ud)
{
	got_t *g = ud;

	ck_assert_uint_eq(len, 11);
	memcpy(g->p + g->n * 11, rec, 11);
	g->n++;
	return 0;
}

/* n type-5 records (hash, heap ID) in key order, encoded and walked. */
static void tree_round_trip(size_t n, unsigned *depth)
{
	h5_bt2_params p = { .type = 5, .node_size = 512, .rec_size = 11, .split_pct = 100, .merge_pct = 40 };
	h5_fmt fmt = { SA, SS };
	uint8_t *recs = calloc(n ? n : 1, 11), *img = NULL, *file;
	got_t g = { calloc(n ? n : 1, 11), 0 };
	size_t len = 0;
	h5_file *f;
	h5_bt2 *bt;

	for (size_t i = 0; i < n; i++) {
		h5_le_encode(recs + i * 11, (uint64_t)i * 7919u, 4);
		h5_le_encode(recs + i * 11 + 4, i, 7);
	}
	ck_assert_int_eq(h5_bt2_build(&img, &len, &p, &fmt, BASE, recs, n), 0);
	file = calloc(1, BASE + len);
	memcpy(file + BASE, img, len);
	*depth = (unsigned)h5_le_decode(img + 12, 2);
	f = mem_file(file, BASE + len);
	ck_assert_int_eq(h5_bt2_open(&bt, f, BASE), 0);
	ck_assert_uint_eq(h5_bt2_nrecords(bt), n);
	ck_assert_int_eq(h5_bt2_iterate(bt, collect, &g), 0);
	ck_assert_uint_eq(g.n, n);
	if (n)
		ck_assert_mem_eq(g.p, recs, n * 11);
	h5_bt2_close(bt);
	h5_file_close(f);
	free(file);
	free(img);
	free(recs);
	free(g.p);
}

START_TEST(t_tree_depths)
{
	unsigned depth = 99;

	tree_round_trip(0, &depth);
	ck_assert_uint_eq(depth, 0);
	tree_round_trip(1, &depth);
	ck_assert_uint_eq(depth, 0);
	tree_round_trip(45, &depth);     /* one full leaf of 512 bytes */
	ck_assert_uint_eq(depth, 0);
	tree_round_trip(46, &depth);
	ck_assert_uint_eq(depth, 1);
	tree_round_trip(1000, &depth);
	ck_assert_uint_eq(depth, 1);
	tree_round_trip(20000, &depth);
	ck_assert_uint_eq(depth, 2);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("dense_enc");
	TCase *tc = tcase_create("dense_enc");

	tcase_add_test(tc, t_heap_shapes);
	tcase_add_test(tc, t_heap_refusals);
	tcase_add_test(tc, t_heap_capacity);
	tcase_add_test(tc, t_tree_depths);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
