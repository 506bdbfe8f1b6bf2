/* test_chunk_stream.c - sequential streams over filtered chunked datasets
 * (chunk_stream.c): which reads continue a stream, the chunks decoded
 * ahead of one by the prefetch workers, and drop-behind (the chunks a
 * stream has passed leave the cache, all but the last drop_keep). h5py
 * writes the datasets; what is in the chunk cache is probed without
 * loading anything. */
#include "testutil.h"
#include "cidx.h"
#include "pool.h"
#include "base.h"
#include "cache.h"
#include "ctx.h"
#include "file.h"
#include "chunk_rec.h"
#include "dataset.h"
#include "chunk.h"

#include <time.h>

static char tmpdir[64];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/h5fs-test-stream-XXXXXX");
}

static void teardown(void)
{
	test_tmp_remove(tmpdir);
}

/* z: 40 chunks of 1 MiB (int32), shuffle+deflate; small: 64 chunks of
 * 16 KiB, deflate; plain: the same unfiltered; rows: the same as 64 rows
 * of 4096, chunks of 4 x 1024 (16 KiB; a chunk row is 4 chunks). */
static const char gen_script[] =
	"import sys\n"
	"try:\n"
	"    import h5py, numpy as np\n"
	"except ImportError:\n"
	"    sys.exit(77)\n"
	"with h5py.File(sys.argv[1] + '/s.h5', 'w') as f:\n"
	"    a = (np.arange(40 * 262144, dtype='<i4') // 7) % 1000\n"
	"    f.create_dataset('z', data=a, chunks=(262144,), compression='gzip', shuffle=True)\n"
	"    b = np.arange(64 * 4096, dtype='<i4')\n"
	"    f.create_dataset('small', data=b, chunks=(4096,), compression='gzip')\n"
	"    f.create_dataset('plain', data=b, chunks=(4096,))\n"
	"    f.create_dataset('rows', data=b.reshape(64, 4096), chunks=(4, 1024), compression='gzip')\n";

typedef struct sfix {
	h5_file *f;
	h5_dataset *d;
} sfix;

/* 0: open with nthreads threads (1: no prefetch workers); 77: no h5py. */
static int open_ds(sfix *x, const char *name, unsigned nthreads)
{
	char path[128];
	h5_open_opts o = { .nthreads = nthreads, .cache_bytes = (size_t)256 << 20 };
	h5_link l;
	static bool made;       /* per test: each runs in its own process */
	int st = made ? 0 : test_py_run(tmpdir, gen_script, NULL);

	if (st == 77 || st == TEST_PY_NO_PYTHON) {
		fprintf(stderr, "test_chunk_stream: no /usr/bin/python3 with h5py: skipped\n");
		return 77;
	}
	ck_assert_msg(st == 0, "h5py generator failed: %d", st);
	made = true;
	snprintf(path, sizeof(path), "%s/s.h5", tmpdir);
	ck_assert_msg(h5_file_open(&x->f, path, &o) == 0, "%s", h5_err_msg());
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(h5_group_lookup(&l, x->f, h5_file_root(x->f), name), 0);
	ck_assert_msg(h5_dataset_open(&x->d, x->f, l.addr) == 0, "%s", h5_err_msg());
	h5_link_clear(&l);
	ck_assert_ptr_nonnull(x->d->cidx);
	return 0;
}

static void close_ds(sfix *x)
{
	h5_dataset_close(x->d);
	h5_file_close(x->f);
}

/* Chunk c in C order over the chunk grid (1-D: chunk c). */
static uint64_t chunk_addr(sfix *x, uint64_t c)
{
	h5_chunk_rec r;
	uint64_t sc[H5_MAX_RANK] = { 0 };
	const h5_chunk_index *ci = x->d->cidx;

	for (unsigned i = ci->rank; i-- > 0;) {
		sc[i] = c % ci->nchunks[i];
		c /= ci->nchunks[i];
	}
	ck_assert_int_eq(h5_chunk_lookup(&r, x->d->cidx, sc), 0);
	ck_assert(h5_addr_defined(r.addr));
	return r.addr;
}

static int probe_load(void **obj, size_t *cost, void *ud)
{
	*(bool *)ud = true;
	return h5_err_set(H5_ERR_NOTFOUND, "probe");
}

/* Whether chunk c is decoded in the cache (a look that loads nothing
 * and never stands in a prefetch worker's way: a probe that failed while
 * a worker waited on it was the worker's result, and the chunk was never
 * decoded - TSan's CI stage, "chunk row 1 not decoded ahead") */
static bool cached(sfix *x, uint64_t c)
{
	return h5_cache_holds(x->f->chunks, H5_CK_CHUNK, chunk_addr(x, c));
}

static void read_at(sfix *x, uint64_t off, size_t len)
{
	uint8_t *buf = malloc(len);

	ck_assert_ptr_nonnull(buf);
	ck_assert_msg(h5_dataset_read(x->d, buf, off, len) == 0, "%s", h5_err_msg());
	free(buf);
}

START_TEST(detects_streams)
{
	sfix x;

	if (open_ds(&x, "small", 1) == 77)
		return;
	/* the first read at 0 starts a stream; reads that follow, or come a
	 * read early or late (FUSE threads take readahead out of order), too */
	ck_assert(h5_chunk_stream_note(x.d, 0, 100));
	ck_assert(h5_chunk_stream_note(x.d, 100, 100));
	ck_assert(h5_chunk_stream_note(x.d, 250, 100));
	ck_assert(h5_chunk_stream_note(x.d, 300, 100));
	/* a late read, in what the stream skipped (200-250), is the
	 * stream's; one behind that, read already, is not */
	ck_assert(h5_chunk_stream_note(x.d, 200, 50));
	ck_assert(!h5_chunk_stream_note(x.d, 100, 100));
	/* a jump forward, then a read following it */
	ck_assert(!h5_chunk_stream_note(x.d, 500000, 100));
	ck_assert(h5_chunk_stream_note(x.d, 500100, 4096));
	/* backwards */
	ck_assert(!h5_chunk_stream_note(x.d, 1000, 100));
	/* a gap of more than one read */
	ck_assert(!h5_chunk_stream_note(x.d, 1201, 100));
	/* nothing */
	ck_assert(!h5_chunk_stream_note(x.d, 1301, 0));
	close_ds(&x);
	/* unfiltered chunks are spliced from FILE: never a stream */
	if (open_ds(&x, "plain", 1) == 77)
		return;
	ck_assert(!h5_chunk_stream_note(x.d, 0, 100));
	ck_assert(!h5_chunk_stream_note(x.d, 100, 100));
	close_ds(&x);
}
END_TEST

/* With workers (3 threads: 2 workers, 2 chunks ahead), a sequential read
 * of chunk 0 gets chunks 1 and 2 decoded without anyone reading them; a
 * scattered read schedules nothing. */
START_TEST(prefetches_ahead)
{
	sfix x;
	struct timespec t0, t;
	bool got = false;

	if (open_ds(&x, "small", 3) == 77)
		return;
	ck_assert_ptr_nonnull(x.f->pool);
	read_at(&x, 0, 16384);                  /* the first read at 0: a stream */
	ck_assert(cached(&x, 0));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		got = cached(&x, 1) && cached(&x, 2);
		if (got)
			break;
		usleep(2000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 10);
	ck_assert_msg(got, "chunks 1 and 2 not decoded ahead within 10 s");
	/* no further than the depth */
	ck_assert(!cached(&x, 3));
	ck_assert(!cached(&x, 4));
	/* a jump schedules nothing after it */
	read_at(&x, 40 * 16384, 100);
	usleep(100000);
	ck_assert(cached(&x, 40));
	ck_assert(!cached(&x, 41));
	ck_assert(!cached(&x, 42));
	close_ds(&x);
}
END_TEST

/* A 2-D dataset is prefetched by whole chunk rows (what a C-order reader
 * meets next): after the first row of chunks (4 of them, 64 KiB of the
 * file), the 4 chunks of the second row, not the third. */
static bool wait_cached(sfix *x, const uint64_t *cs, unsigned n)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		unsigned k = 0;

		while (k < n && cached(x, cs[k]))
			k++;
		if (k == n)
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= 10)
			return false;
		usleep(2000);
	}
}

START_TEST(prefetches_chunk_rows)
{
	sfix x;
	static const uint64_t row1[4] = { 4, 5, 6, 7 };

	if (open_ds(&x, "rows", 3) == 77)
		return;
	ck_assert_uint_eq(x.d->cidx->nchunks[1], 4);
	read_at(&x, 0, 4 * 4096 * 4);           /* chunk row 0, a stream from 0 */
	for (uint64_t c = 0; c < 4; c++)
		ck_assert(cached(&x, c));
	ck_assert_msg(wait_cached(&x, row1, 4), "chunk row 1 not decoded ahead within 10 s");
	usleep(50000);
	for (uint64_t c = 8; c < 12; c++)
		ck_assert(!cached(&x, c));
	close_ds(&x);
}
END_TEST

/* A full sequential read of 40 chunks of 1 MiB of a local FILE: drop_keep
 * is 8 (about 8 MiB), so chunks 0-31 left the cache and 32-39 stayed. No
 * workers, so nothing decodes a chunk again behind the reader. */
START_TEST(drops_behind_a_stream)
{
	sfix x;
	const size_t cb = (size_t)1 << 20;

	if (open_ds(&x, "z", 1) == 77)
		return;
	ck_assert_ptr_null(x.f->pool);
	ck_assert_uint_eq(x.d->cidx->drop_keep, 8);
	for (uint64_t off = 0; off < 40 * cb; off += cb / 4)
		read_at(&x, off, cb / 4);
	for (uint64_t c = 0; c < 40; c++)
		ck_assert_msg(cached(&x, c) == (c >= 32), "chunk %llu %s", (unsigned long long)c,
			      c >= 32 ? "dropped" : "kept");
	close_ds(&x);
}
END_TEST

/* The same stream with every pair of quarter-chunk reads swapped, as FUSE
 * threads take the kernel's readahead requests: the late read, which is
 * the one that covers a chunk's end, still passes that chunk, and the
 * chunks are dropped as in order. (Counted as a new start, such reads
 * once left a quarter of a stream's chunks in the cache: issue 44.) */
START_TEST(drops_behind_late_reads)
{
	sfix x;
	const size_t q = ((size_t)1 << 20) / 4;

	if (open_ds(&x, "z", 1) == 77)
		return;
	read_at(&x, 0, q);
	for (uint64_t k = 1; k < 160; k += 2) {
		if (k + 1 < 160)
			read_at(&x, (k + 1) * q, q);
		read_at(&x, k * q, q);
	}
	for (uint64_t c = 0; c < 40; c++)
		ck_assert_msg(cached(&x, c) == (c >= 32), "chunk %llu %s", (unsigned long long)c,
			      c >= 32 ? "dropped" : "kept");
	close_ds(&x);
}
END_TEST

/* Random reads keep what they decoded: nothing is passed. */
START_TEST(scattered_reads_keep_chunks)
{
	sfix x;
	const size_t cb = (size_t)1 << 20;

	if (open_ds(&x, "z", 1) == 77)
		return;
	for (uint64_t i = 0; i < 30; i++)
		read_at(&x, ((i * 17) % 30) * cb + 4096, cb - 8192);
	for (uint64_t c = 0; c < 30; c++)
		ck_assert(cached(&x, c));
	close_ds(&x);
}
END_TEST

/* A parallel section that holds the pool's one worker until released. */
typedef struct blocker {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned inside;
	bool go;
	h5_pool *p;
} blocker;

static void block_fn(void *arg)
{
	blocker *b = arg;

	pthread_mutex_lock(&b->mu);
	b->inside++;
	pthread_cond_broadcast(&b->cv);
	while (!b->go)
		pthread_cond_wait(&b->cv, &b->mu);
	pthread_mutex_unlock(&b->mu);
}

static void *block_thread(void *arg)
{
	blocker *b = arg;

	h5_pool_run(b->p, block_fn, b, 1);
	return NULL;
}

/* The pool's worker comes late to a stream's prefetch jobs (it was
 * helping a parallel section): the jobs of chunks the stream has passed
 * (decoded by the reader, then dropped behind it) are skipped, not decoded
 * into the cache again (over HTTP that fetched their bytes twice). */
START_TEST(late_prefetch_jobs_skipped)
{
	sfix x;
	blocker b = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	pthread_t t;
	unsigned active;
	int waited = 0;

	if (open_ds(&x, "small", 2) == 77)  /* one worker */
		return;
	ck_assert_ptr_nonnull(x.f->pool);
	b.p = x.f->pool;
	ck_assert_int_eq(pthread_create(&t, NULL, block_thread, &b), 0);
	pthread_mutex_lock(&b.mu);
	while (b.inside < 2)                    /* the caller and the worker */
		pthread_cond_wait(&b.cv, &b.mu);
	pthread_mutex_unlock(&b.mu);
	x.d->cidx->drop_keep = 1;
	for (uint64_t c = 0; c < 6; c++)        /* a stream: jobs for chunks 1..6 wait */
		read_at(&x, c * 16384, 16384);
	for (uint64_t c = 0; c < 5; c++)
		ck_assert_msg(!cached(&x, c), "chunk %llu not dropped", (unsigned long long)c);
	pthread_mutex_lock(&b.mu);
	b.go = true;
	pthread_cond_broadcast(&b.cv);
	pthread_mutex_unlock(&b.mu);
	pthread_join(t, NULL);
	do {                                    /* the worker runs the jobs */
		h5_pool_lock(x.f->pool);
		active = x.d->cidx->pf_active;
		h5_pool_unlock(x.f->pool);
		if (active)
			usleep(10000);
	} while (active && ++waited < 1000);
	ck_assert_uint_eq(active, 0);
	for (uint64_t c = 1; c < 5; c++)
		ck_assert_msg(!cached(&x, c), "chunk %llu decoded again after the stream passed it",
			      (unsigned long long)c);
	ck_assert(cached(&x, 6));               /* ahead of the stream: decoded */
	close_ds(&x);
}
END_TEST

/* h5_chunk_stream_drop itself: a queue of drop_keep, oldest out first,
 * a chunk passed twice queued once, a chunk in use kept until released. */
START_TEST(drop_queue)
{
	sfix x;
	uint64_t a[6];
	h5_cache_ref held;
	bool loaded = false;

	if (open_ds(&x, "small", 1) == 77)
		return;
	for (uint64_t c = 0; c < 6; c++) {
		a[c] = chunk_addr(&x, c);
		read_at(&x, (5 - c) * 16384 + 8, 100);   /* backwards: no stream */
	}
	for (uint64_t c = 0; c < 6; c++)
		ck_assert(cached(&x, c));
	x.d->cidx->drop_keep = 2;
	h5_chunk_stream_drop(x.d->cidx, (uint64_t[]){ a[0], a[1], a[1], a[2] }, 4);
	ck_assert(!cached(&x, 0));
	ck_assert(cached(&x, 1));
	ck_assert(cached(&x, 2));
	/* chunk 3 in use while it is dropped: gone once released */
	ck_assert_int_eq(h5_cache_get(&held, x.f->chunks, H5_CK_CHUNK, a[3], probe_load, NULL, &loaded), 0);
	ck_assert(!loaded);
	h5_chunk_stream_drop(x.d->cidx, (uint64_t[]){ a[3], a[4], a[5] }, 3);
	ck_assert(!cached(&x, 1));
	ck_assert(!cached(&x, 2));
	ck_assert(cached(&x, 4));
	ck_assert(cached(&x, 5));
	h5_cache_release(x.f->chunks, &held);
	ck_assert(!cached(&x, 3));
	close_ds(&x);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("chunk_stream");
	TCase *tc = tcase_create("stream");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, detects_streams);
	tcase_add_test(tc, prefetches_ahead);
	tcase_add_test(tc, prefetches_chunk_rows);
	tcase_add_test(tc, drops_behind_a_stream);
	tcase_add_test(tc, drops_behind_late_reads);
	tcase_add_test(tc, scattered_reads_keep_chunks);
	tcase_add_test(tc, drop_queue);
	tcase_add_test(tc, late_prefetch_jobs_skipped);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
