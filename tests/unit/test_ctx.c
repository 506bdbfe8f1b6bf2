/* test_ctx.c - the engine context (ctx.c, pool.c): files opened in one
 * context share one cache budget without ever sharing an entry, a closed
 * file's entries leave the cache, the threads are the context's pool
 * however many files are read, two generations of one FILE (live/live.c
 * opens a changed FILE again in the mount's context) never serve each
 * other's chunks, and the buffer pool's budget follows the contexts
 * alive. h5py writes the files: each holds one dataset `z` of 16 chunks
 * of 64 KiB (int32, shuffle+deflate) at the same addresses in every
 * file, with values that differ per file. */
#include "testutil.h"
#include "cidx.h"
#include "pool.h"
#include "base.h"
#include "bufpool.h"
#include "cache.h"
#include "ctx.h"
#include "file.h"
#include "chunk_rec.h"
#include "dataset.h"
#include "chunk.h"

#include <dirent.h>

#define NFILES 50
#define CHUNK_EL 16384u                 /* int32: 64 KiB decoded */
#define NCHUNK 16u

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/h5fs-test-ctx-XXXXXX");
}

static void teardown(void)
{
	test_tmp_remove(tmpdir);
}

/* f<k>.h5: z[i] = (i * 7 + k * 1000003) % 2^31; g.h5 is f0.h5's layout
 * with k = 1, written to a new file and renamed over it ("gen" argument):
 * the second generation of a FILE. */
static const char gen_script[] =
	"import os, sys\n"
	"try:\n"
	"    import h5py, numpy as np\n"
	"except ImportError:\n"
	"    sys.exit(77)\n"
	"d = sys.argv[1]\n"
	"def write(path, k):\n"
	"    a = ((np.arange(16 * 16384, dtype=np.int64) * 7 + k * 1000003) % 2**31).astype('<i4')\n"
	"    with h5py.File(path, 'w', libver='earliest') as f:\n"
	"        f.create_dataset('z', data=a, chunks=(16384,), compression='gzip', shuffle=True)\n"
	"if len(sys.argv) > 2:\n"
	"    write(d + '/g.tmp', 1)\n"
	"    os.rename(d + '/g.tmp', d + '/g.h5')\n"
	"    sys.exit(0)\n"
	"for k in range(50):\n"
	"    write('%s/f%d.h5' % (d, k), k)\n"
	"write(d + '/g.h5', 0)\n";

/* 0, or 77 when there is no h5py. */
static int make_files(void)
{
	int st = test_py_run(tmpdir, gen_script, NULL);

	if (st == 77 || st == TEST_PY_NO_PYTHON) {
		fprintf(stderr, "test_ctx: no /usr/bin/python3 with h5py: skipped\n");
		return 77;
	}
	ck_assert_msg(st == 0, "h5py generator failed: %d", st);
	return 0;
}

/* The second generation of g.h5 (renamed over it: the first stays
 * readable through its descriptor). */
static void regen(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 '%s/gen.py' '%s' gen", tmpdir, tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

typedef struct tfile {
	h5_file *f;
	h5_dataset *d;
	unsigned k;             /* the values' file number */
} tfile;

static void open_in(tfile *t, h5_ctx *ctx, const char *name, unsigned k)
{
	char path[128];
	h5_link l;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	ck_assert_msg(h5_file_open(&t->f, path, &(h5_open_opts){ .ctx = ctx }) == 0, "%s", h5_err_msg());
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(h5_group_lookup(&l, t->f, h5_file_root(t->f), "z"), 0);
	ck_assert_msg(h5_dataset_open(&t->d, t->f, l.addr) == 0, "%s", h5_err_msg());
	h5_link_clear(&l);
	ck_assert_ptr_nonnull(t->d->cidx);
	t->k = k;
}

static void close_tf(tfile *t)
{
	h5_dataset_close(t->d);
	h5_file_close(t->f);
	t->d = NULL;
	t->f = NULL;
}

static uint64_t chunk_addr(tfile *t, uint64_t c)
{
	h5_chunk_rec r;
	uint64_t sc[H5_MAX_RANK] = { c };

	ck_assert_int_eq(h5_chunk_lookup(&r, t->d->cidx, sc), 0);
	ck_assert(h5_addr_defined(r.addr));
	return r.addr;
}

static int probe_load(void **obj, size_t *cost, void *ud)
{
	(void)obj;
	(void)cost;
	*(bool *)ud = true;
	return h5_err_set(H5_ERR_NOTFOUND, "probe");
}

/* Whether t's chunk c is decoded in the cache (a probe that loads nothing). */
static bool cached(tfile *t, uint64_t c)
{
	h5_cache_ref ref;
	bool loaded = false;
	int rc = h5_cache_get(&ref, t->f->chunks, H5_CK_CHUNK, chunk_addr(t, c), probe_load, NULL, &loaded);

	h5_err_clear();
	if (rc == 0) {
		h5_cache_release(t->f->chunks, &ref);
		return true;
	}
	ck_assert(loaded);
	return false;
}

/* Read elements [e0, e0 + n) and check them against the file's formula. */
static void read_check(tfile *t, uint64_t e0, size_t n)
{
	int32_t *v = malloc(n * 4);

	ck_assert_ptr_nonnull(v);
	ck_assert_msg(h5_dataset_read(t->d, v, e0 * 4, n * 4) == 0, "%s", h5_err_msg());
	for (size_t i = 0; i < n; i++) {
		int64_t want = (int64_t)(((e0 + i) * 7 + (uint64_t)t->k * 1000003) % 2147483648u);

		if (v[i] != (int32_t)want)
			ck_abort_msg("file %u element %llu: %d, want %lld", t->k, (unsigned long long)(e0 + i), v[i],
				     (long long)want);
	}
	free(v);
}

/* Every chunk, last first: backwards reads are no stream, so no
 * drop-behind and no prefetch: what the cache holds is what was read. */
static void read_all_backwards(tfile *t)
{
	for (unsigned c = NCHUNK; c-- > 0;)
		read_check(t, (uint64_t)c * CHUNK_EL, CHUNK_EL);
}

/* Two files in a context of 8 chunks: the second one's reads evict the
 * first one's chunks, and the context never holds more than its budget
 * (no entry is held between reads). The files' chunks lie at the same
 * addresses: each still reads its own values. */
START_TEST(two_files_share_one_budget)
{
	h5_ctx *ctx;
	tfile a, b;
	size_t budget = 8 * CHUNK_EL * 4 + (64 << 10);  /* 8 chunks and metadata */

	if (make_files() == 77)
		return;
	ck_assert_int_eq(h5_ctx_new(&ctx, &(h5_ctx_opts){ .cache_bytes = budget, .nthreads = 1 }), 0);
	ck_assert_uint_eq(h5_ctx_cache_budget(ctx), budget);
	open_in(&a, ctx, "f3.h5", 3);
	open_in(&b, ctx, "f4.h5", 4);
	ck_assert_uint_eq(chunk_addr(&a, 0), chunk_addr(&b, 0));
	ck_assert_uint_eq(h5_cache_budget(a.f->chunks), budget);
	/* the first file's chunks 0..5 (the last read) stay */
	read_all_backwards(&a);
	ck_assert_uint_le(h5_ctx_cache_used(ctx), budget);
	for (unsigned c = 0; c < 6; c++)
		ck_assert_msg(cached(&a, c), "a's chunk %u", c);
	ck_assert(!cached(&b, 0));              /* same address, other file */
	ck_assert_uint_gt(h5_cache_view_used(a.f->chunks), 6 * CHUNK_EL * 4);
	/* the second file's reads take the budget from the first */
	read_all_backwards(&b);
	ck_assert_uint_le(h5_ctx_cache_used(ctx), budget);
	for (unsigned c = 0; c < 6; c++) {
		ck_assert_msg(cached(&b, c), "b's chunk %u", c);
		ck_assert_msg(!cached(&a, c), "a's chunk %u still cached", c);
	}
	ck_assert_uint_lt(h5_cache_view_used(a.f->chunks), CHUNK_EL * 4);
	ck_assert_uint_eq(h5_cache_view_used(a.f->chunks) + h5_cache_view_used(b.f->chunks),
			  h5_ctx_cache_used(ctx));
	/* and each file still reads its own bytes */
	read_check(&a, 5, 100);
	read_check(&b, 5, 100);
	close_tf(&a);
	close_tf(&b);
	ck_assert_uint_eq(h5_ctx_cache_used(ctx), 0);
	h5_ctx_free(ctx);
}
END_TEST

/* Closing a file drops its entries from the context's cache at once;
 * the other file's stay. The context outlives h5_ctx_free while a file
 * holds it. */
START_TEST(closed_file_drops_its_entries)
{
	h5_ctx *ctx;
	tfile a, b;
	size_t used_b;

	if (make_files() == 77)
		return;
	ck_assert_int_eq(h5_ctx_new(&ctx, &(h5_ctx_opts){ .cache_bytes = 64 << 20, .nthreads = 1 }), 0);
	open_in(&a, ctx, "f1.h5", 1);
	open_in(&b, ctx, "f2.h5", 2);
	read_all_backwards(&a);
	read_all_backwards(&b);
	used_b = h5_cache_view_used(b.f->chunks);
	ck_assert_uint_gt(h5_cache_view_used(a.f->chunks), NCHUNK * CHUNK_EL * 4);
	ck_assert_uint_gt(used_b, NCHUNK * CHUNK_EL * 4);
	close_tf(&a);
	ck_assert_uint_eq(h5_ctx_cache_used(ctx), used_b);
	for (unsigned c = 0; c < NCHUNK; c++)
		ck_assert(cached(&b, c));
	/* the creator lets go first: b's reference keeps the context */
	h5_ctx_free(ctx);
	read_check(&b, 3 * CHUNK_EL - 10, 20);
	ck_assert_uint_eq(h5_cache_view_used(b.f->chunks), used_b);
	close_tf(&b);
}
END_TEST

/* This process's threads whose name starts with PREFIX (every engine
 * thread is named H5_THREAD_PREFIX...; threads it did not name inherit
 * "test_ctx", as do the sanitizers' own). */
static unsigned count_threads(const char *prefix)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *de;
	unsigned n = 0;

	ck_assert_ptr_nonnull(dir);
	while ((de = readdir(dir)) != NULL) {
		char path[64], comm[32] = "";
		FILE *fp;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		fp = fopen(path, "r");
		if (!fp)
			continue;       /* the thread ended meanwhile */
		if (fgets(comm, sizeof(comm), fp) && strncmp(comm, prefix, strlen(prefix)) == 0)
			n++;
		fclose(fp);
	}
	closedir(dir);
	return n;
}

#define NREADERS 4

typedef struct reader_arg {
	tfile *tf;
	unsigned from;          /* every NREADERS-th file from here */
	int err;
} reader_arg;

/* Each file: a sequential stream in 64 KiB reads (prefetch jobs), then
 * one read of the whole dataset (a parallel section). */
static void *reader(void *arg)
{
	reader_arg *r = arg;
	size_t n = NCHUNK * CHUNK_EL;
	int32_t *v = malloc(n * 4);

	if (!v) {
		r->err = -1;
		return NULL;
	}
	for (unsigned k = r->from; k < NFILES && !r->err; k += NREADERS) {
		tfile *t = &r->tf[k];

		for (uint64_t off = 0; off < n * 4 && !r->err; off += 65536)
			if (h5_dataset_read(t->d, v, off, 65536) < 0)
				r->err = -2;
		if (!r->err && h5_dataset_read(t->d, v, 0, n * 4) < 0)
			r->err = -3;
		for (size_t i = 0; i < n && !r->err; i++)
			if (v[i] != (int32_t)((i * 7 + (uint64_t)k * 1000003) % 2147483648u))
				r->err = -4;
	}
	free(v);
	return NULL;
}

static volatile bool sampling;
static unsigned max_threads;

static void *sampler(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&sampling, __ATOMIC_ACQUIRE)) {
		unsigned n = count_threads(H5_THREAD_PREFIX);

		if (n > max_threads)
			max_threads = n;
		usleep(200);
	}
	return NULL;
}

/* 50 files in one context of 3 threads, read by 4 threads at once (each
 * sequential stream queues prefetch jobs, each whole read is a parallel
 * section): no engine threads but the pool's 2 workers ever run,
 * started only at the first read and ended with the context. A file of its own context each, the same reads would start 2
 * workers per file. */
START_TEST(threads_bounded_by_the_pool)
{
	h5_ctx *ctx;
	static tfile tf[NFILES];
	reader_arg ra[NREADERS];
	pthread_t th[NREADERS], sm;
	char name[32];

	if (make_files() == 77)
		return;
	ck_assert_int_eq(h5_ctx_new(&ctx, &(h5_ctx_opts){ .cache_bytes = 32 << 20, .nthreads = 3 }), 0);
	for (unsigned k = 0; k < NFILES; k++) {
		snprintf(name, sizeof(name), "f%u.h5", k);
		open_in(&tf[k], ctx, name, k);
	}
	ck_assert_uint_eq(h5_ctx_threads(ctx), 0);     /* lazily: nothing read yet */
	ck_assert_uint_eq(count_threads(H5_THREAD_PREFIX), 0);
	max_threads = 0;
	sampling = true;
	ck_assert_int_eq(pthread_create(&sm, NULL, sampler, NULL), 0);
	for (unsigned i = 0; i < NREADERS; i++) {
		ra[i] = (reader_arg){ .tf = tf, .from = i };
		ck_assert_int_eq(pthread_create(&th[i], NULL, reader, &ra[i]), 0);
	}
	for (unsigned i = 0; i < NREADERS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_msg(ra[i].err == 0, "reader %u: %d (%s)", i, ra[i].err, h5_err_msg());
	}
	__atomic_store_n(&sampling, false, __ATOMIC_RELEASE);
	pthread_join(sm, NULL);
	ck_assert_uint_eq(h5_ctx_threads(ctx), 2);
	ck_assert_msg(max_threads <= 2, "%u engine threads", max_threads);
	ck_assert_uint_eq(count_threads(H5_THREAD_PREFIX), 2);
	ck_assert_uint_le(h5_ctx_cache_used(ctx), h5_ctx_cache_budget(ctx));
	for (unsigned k = 0; k < NFILES; k++)
		close_tf(&tf[k]);
	h5_ctx_free(ctx);
	ck_assert_uint_eq(count_threads(H5_THREAD_PREFIX), 0); /* the pool ended with its context */
}
END_TEST

/* A changed FILE opened again in the same context (the next generation,
 * live/live.c): the old generation's decoded chunks at the same addresses
 * never serve the new one, and each reads its own bytes while both are
 * open. */
START_TEST(generations_do_not_share_entries)
{
	h5_ctx *ctx;
	tfile g1, g2;

	if (make_files() == 77)
		return;
	ck_assert_int_eq(h5_ctx_new(&ctx, &(h5_ctx_opts){ .cache_bytes = 64 << 20, .nthreads = 2 }), 0);
	open_in(&g1, ctx, "g.h5", 0);
	read_all_backwards(&g1);
	regen();
	open_in(&g2, ctx, "g.h5", 1);
	ck_assert_uint_eq(chunk_addr(&g1, 0), chunk_addr(&g2, 0));
	for (unsigned c = 0; c < NCHUNK; c++) {
		ck_assert(cached(&g1, c));
		ck_assert(!cached(&g2, c));
	}
	read_all_backwards(&g2);
	read_all_backwards(&g1);
	read_check(&g2, 0, NCHUNK * CHUNK_EL);         /* a parallel section */
	/* the old generation closed: its entries go, the new one's stay */
	close_tf(&g1);
	ck_assert_uint_eq(h5_ctx_cache_used(ctx), h5_cache_view_used(g2.f->chunks));
	for (unsigned c = 0; c < NCHUNK; c++)
		ck_assert(cached(&g2, c));
	close_tf(&g2);
	h5_ctx_free(ctx);
}
END_TEST

/* A file opened without a context has a private one, sized by its open
 * options, and ends it when closed. */
START_TEST(private_context)
{
	tfile t;
	char path[128];
	h5_link l;

	if (make_files() == 77)
		return;
	snprintf(path, sizeof(path), "%s/f7.h5", tmpdir);
	ck_assert_int_eq(h5_file_open(&t.f, path, &(h5_open_opts){ .cache_bytes = 3 << 20, .nthreads = 2 }), 0);
	ck_assert_ptr_nonnull(t.f->ctx);
	ck_assert_uint_eq(h5_ctx_cache_budget(t.f->ctx), 3 << 20);
	ck_assert_uint_eq(t.f->nthreads, 2);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(h5_group_lookup(&l, t.f, h5_file_root(t.f), "z"), 0);
	ck_assert_int_eq(h5_dataset_open(&t.d, t.f, l.addr), 0);
	h5_link_clear(&l);
	t.k = 7;
	read_check(&t, 0, NCHUNK * CHUNK_EL);
	close_tf(&t);
}
END_TEST

/* The buffer pool keeps a quarter of the live contexts' budgets idle
 * (4..48 MiB): a second context raises it, freeing one lowers it again;
 * opening a file no longer sets it. */
START_TEST(buffer_budget_follows_contexts)
{
	h5_ctx *c1, *c2;

	ck_assert_int_eq(h5_ctx_new(&c1, &(h5_ctx_opts){ .cache_bytes = 40 << 20, .nthreads = 1 }), 0);
	ck_assert_uint_eq(h5_buf_limit(), 10 << 20);
	ck_assert_int_eq(h5_ctx_new(&c2, &(h5_ctx_opts){ .cache_bytes = 60 << 20, .nthreads = 1 }), 0);
	ck_assert_uint_eq(h5_buf_limit(), 25 << 20);
	h5_ctx_free(c1);
	ck_assert_uint_eq(h5_buf_limit(), 15 << 20);
	h5_ctx_free(c2);
	ck_assert_uint_eq(h5_buf_limit(), 4 << 20);
}
END_TEST

/* h5_pool_each: every item runs once, on the caller and the pool's
 * workers; an error stops the items not yet claimed and comes back with
 * its message on the caller's thread. */
typedef struct each_arg {
	unsigned char seen[1000];
	size_t fail_at;         /* the item that fails, or SIZE_MAX */
	unsigned ran;
} each_arg;

static int each_item(void *ctx, size_t i)
{
	each_arg *a = ctx;

	__atomic_fetch_add(&a->seen[i], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&a->ran, 1, __ATOMIC_RELAXED);
	if (i == a->fail_at)
		return h5_err_set(H5_ERR_IO, "item %zu failed", i);
	return 0;
}

START_TEST(pool_each_runs_every_item_once)
{
	h5_pool *p;
	each_arg *a = calloc(1, sizeof(*a));

	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(h5_pool_new(&p, 3), 0);
	for (int round = 0; round < 20; round++) {
		memset(a, 0, sizeof(*a));
		a->fail_at = SIZE_MAX;
		ck_assert_int_eq(h5_pool_each(p, each_item, a, 1000, 3), 0);
		for (size_t i = 0; i < 1000; i++)
			ck_assert_int_eq(a->seen[i], 1);
	}
	/* no pool: all on the caller */
	memset(a, 0, sizeof(*a));
	a->fail_at = SIZE_MAX;
	ck_assert_int_eq(h5_pool_each(NULL, each_item, a, 1000, 3), 0);
	ck_assert_uint_eq(a->ran, 1000);
	ck_assert_int_eq(h5_pool_each(p, each_item, a, 0, 3), 0);
	ck_assert_uint_eq(a->ran, 1000);
	/* an error: returned with its message, later items skipped */
	memset(a, 0, sizeof(*a));
	a->fail_at = 10;
	ck_assert_int_eq(h5_pool_each(NULL, each_item, a, 1000, 0), H5_ERR_IO);
	ck_assert_str_eq(h5_err_msg(), "item 10 failed");
	ck_assert_uint_eq(a->ran, 11);
	for (int round = 0; round < 20; round++) {
		memset(a, 0, sizeof(*a));
		a->fail_at = 500;
		h5_err_clear();
		ck_assert_int_eq(h5_pool_each(p, each_item, a, 1000, 3), H5_ERR_IO);
		ck_assert_str_eq(h5_err_msg(), "item 500 failed");
		ck_assert_uint_eq(a->seen[500], 1);
		for (size_t i = 0; i < 1000; i++)
			ck_assert_int_le(a->seen[i], 1);
	}
	h5_pool_free(p);
	free(a);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("ctx");
	TCase *tc = tcase_create("ctx");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, two_files_share_one_budget);
	tcase_add_test(tc, closed_file_drops_its_entries);
	tcase_add_test(tc, threads_bounded_by_the_pool);
	tcase_add_test(tc, generations_do_not_share_entries);
	tcase_add_test(tc, private_context);
	tcase_add_test(tc, buffer_budget_follows_contexts);
	tcase_add_test(tc, pool_each_runs_every_item_once);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
