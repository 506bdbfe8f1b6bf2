/* test_blockcache.c - the block cache of remote sources (blockcache.c,
 * blockcache_ra.c) over an in-memory transport that counts and logs
 * every range it is asked for: a miss fetches its missing blocks in one
 * range, pinned blocks are never evicted, the read-ahead's windows
 * follow a stream and stop at an object's end, chunk hints are fetched
 * in the order given (neighbours together), failures come back to the
 * reader and leave the source usable; and the slot-victim order. No
 * server: the transport is a buffer (the integration tests use nginx and
 * s3rver for the HTTP transport). */
#include <config.h>
#include "testutil.h"
#include "blockcache.h"
#include "blockcache_int.h"
#include "source.h"

#include <pthread.h>
#include <time.h>

#define MiB ((uint64_t)1 << 20)
#define LOGN 512

/* A transport over a buffer. Every range asked for is logged, in the
 * order asked (fetch: a reader's or the first; stream: the read-ahead's,
 * taken max at a time and answered last first, as a network may). */
typedef struct mem_transport {
	bc_transport base;
	const uint8_t *data;
	uint64_t size;
	pthread_mutex_t mu;
	struct { uint64_t off, len; bool bg; } log[LOGN];
	unsigned nlog, nfetch, nstream;
	uint64_t fail_at;            /* ranges holding this byte fail (UINT64_MAX: none) */
	int fail_code;               /* with this (0: H5_ERR_IO) */
	int changed;
	bool closed;
} mem_transport;

static void mem_log(mem_transport *m, const bc_fetch *f, bool bg)
{
	pthread_mutex_lock(&m->mu);
	if (m->nlog < LOGN) {
		m->log[m->nlog].off = f->off;
		m->log[m->nlog].len = f->len;
		m->log[m->nlog++].bg = bg;
	}
	if (bg)
		m->nstream++;
	else
		m->nfetch++;
	pthread_mutex_unlock(&m->mu);
}

static int mem_get(mem_transport *m, bc_fetch *f)
{
	uint64_t n;

	pthread_mutex_lock(&m->mu);
	if (m->fail_at >= f->off && m->fail_at - f->off < f->len) {
		int code = m->fail_code ? m->fail_code : H5_ERR_IO;

		pthread_mutex_unlock(&m->mu);
		return f->rc = h5_err_set(code, "failed as told at %llu", (unsigned long long)m->fail_at);
	}
	pthread_mutex_unlock(&m->mu);
	if (f->off >= m->size)
		return f->rc = h5_err_set(H5_ERR_FORMAT, "range not satisfiable");
	/* a small object gives less than asked, like a 206 at the end */
	n = m->size - f->off < f->len ? m->size - f->off : f->len;
	for (uint64_t done = 0; done < n;) {
		uint64_t k = BC_BLOCK - done % BC_BLOCK < n - done ? BC_BLOCK - done % BC_BLOCK : n - done;

		memcpy(f->seg[done / BC_BLOCK] + done % BC_BLOCK, m->data + f->off + done, k);
		done += k;
	}
	f->got = (size_t)n;
	f->total = m->size;
	return f->rc = 0;
}

static int mem_fetch(bc_transport *t, bc_fetch *f)
{
	mem_log((mem_transport *)t, f, false);
	return mem_get((mem_transport *)t, f);
}

static void mem_stream(bc_transport *t, bc_queue *q, unsigned max)
{
	bc_fetch *f[BC_STREAM_MAX];
	unsigned n;

	ck_assert_uint_le(max, BC_STREAM_MAX);
	do {
		for (n = 0; n < max && !q->stopping(q) && (f[n] = q->next(q)); n++)
			mem_log((mem_transport *)t, f[n], true);
		for (unsigned i = n; i-- > 0;) {
			mem_get((mem_transport *)t, f[i]);
			q->done(q, f[i]);
		}
	} while (n);
}

static int mem_changed(bc_transport *t, int probe)
{
	(void)probe;
	return ((mem_transport *)t)->changed;
}

static void mem_close(bc_transport *t)
{
	((mem_transport *)t)->closed = true;
}

static const bc_transport_ops mem_ops = {
	.fetch = mem_fetch,
	.stream = mem_stream,
	.changed = mem_changed,
	.close = mem_close,
};

static uint8_t *pattern(uint64_t size)
{
	uint8_t *p = malloc(size);

	ck_assert_ptr_nonnull(p);
	for (uint64_t i = 0; i < size; i++)
		p[i] = (uint8_t)(i * 2654435761u >> 13);
	return p;
}

static void mem_init(mem_transport *m, const uint8_t *data, uint64_t size)
{
	memset(m, 0, sizeof(*m));
	m->base.ops = &mem_ops;
	m->data = data;
	m->size = size;
	m->fail_at = UINT64_MAX;
	pthread_mutex_init(&m->mu, NULL);
}

/* Opens a source of size bytes with cache_bytes of budget (a quarter of
 * it in blocks). */
static h5_source *open_mem(mem_transport *m, uint8_t **data, uint64_t size, size_t cache_bytes)
{
	h5_source *s;

	*data = pattern(size);
	mem_init(m, *data, size);
	ck_assert_int_eq(bc_source_open(&s, &m->base, "mem://test", cache_bytes), 0);
	return s;
}

static unsigned counter(mem_transport *m, const unsigned *c)
{
	unsigned v;

	pthread_mutex_lock(&m->mu);
	v = *c;
	pthread_mutex_unlock(&m->mu);
	return v;
}

/* Waits until the read-ahead has nothing in flight and nothing left it
 * could fetch now (the log stable for a while). */
static void quiesce(bc_cache *c, mem_transport *m)
{
	unsigned last = UINT32_MAX, stable = 0;

	for (int i = 0; i < 500 && stable < 5; i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		unsigned n, inflight;

		nanosleep(&ts, NULL);
		/* (hinted runs and metadata blocks the worker has not taken
		 * yet count too: on a loaded machine it may not have woken
		 * within the 50 ms of quiet, CI under ASan: nstream 0) */
		pthread_mutex_lock(&c->mu);
		inflight = c->ninflight + c->nrq + c->nhint;
		pthread_mutex_unlock(&c->mu);
		n = counter(m, &m->nlog);
		stable = n == last && inflight == 0 ? stable + 1 : 0;
		last = n;
	}
	ck_assert_uint_ge(stable, 5);
}

/* The first range the read-ahead asked for (its order against a
 * reader's fetch is the threads' business). */
static unsigned first_bg(const mem_transport *m)
{
	for (unsigned i = 0; i < m->nlog; i++)
		if (m->log[i].bg)
			return i;
	ck_abort_msg("no background fetch");
	return 0;
}

static void read_check(h5_source *s, const uint8_t *data, uint64_t off, size_t len)
{
	uint8_t *buf = malloc(len);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(s->ops->read(s, off, buf, len), 0);
	ck_assert_mem_eq(buf, data + off, len);
	free(buf);
}

/* The first fetch gives the size; a miss fetches the missing blocks of a
 * read in one range; what is cached is not fetched again. */
START_TEST(test_bc_miss_coalesce)
{
	mem_transport m;
	uint8_t *data;
	h5_source *s = open_mem(&m, &data, 40 * MiB, 256 * MiB);
	uint8_t b;

	ck_assert_uint_eq(s->size, 40 * MiB);
	ck_assert_uint_eq(m.nlog, 1);
	ck_assert_uint_eq(m.log[0].off, 0);
	ck_assert_uint_eq(m.log[0].len, BC_FIRST);
	read_check(s, data, 100, 4000);                 /* in the first fetch */
	ck_assert_uint_eq(m.nlog, 1);
	read_check(s, data, 5 * MiB + 10, 100);         /* one block */
	ck_assert_uint_eq(m.nlog, 2);
	ck_assert_uint_eq(m.log[1].off, 5 * MiB);
	ck_assert_uint_eq(m.log[1].len, BC_BLOCK);
	/* three blocks (a jump: no read-ahead), one range */
	read_check(s, data, 16 * MiB + 7, 3 * BC_BLOCK - 20);
	quiesce((bc_cache *)s, &m);
	ck_assert_uint_eq(m.nlog, 3);
	ck_assert_uint_eq(m.log[2].off, 16 * MiB);
	ck_assert_uint_eq(m.log[2].len, 3 * BC_BLOCK);
	ck_assert_uint_eq(m.nstream, 0);
	read_check(s, data, 16 * MiB, 3 * BC_BLOCK);
	/* past the end: no request */
	ck_assert_int_eq(s->ops->read(s, 40 * MiB - 1, &b, 2), H5_ERR_FORMAT);
	h5_err_clear();
	ck_assert_uint_eq(m.nlog, 3);
	h5_source_close(s);
	ck_assert(m.closed);
	free(data);
}
END_TEST

/* An object smaller than the first fetch: its size from the reply. */
START_TEST(test_bc_small_object)
{
	mem_transport m;
	uint8_t *data;
	h5_source *s = open_mem(&m, &data, 1000, 0);
	uint64_t size;
	uint8_t b;

	ck_assert_int_eq(s->ops->size(s, &size), 0);
	ck_assert_uint_eq(size, 1000);
	read_check(s, data, 0, 1000);
	ck_assert_int_eq(s->ops->read(s, 999, &b, 2), H5_ERR_FORMAT);
	h5_err_clear();
	ck_assert_uint_eq(m.nlog, 1);
	h5_source_close(s);
	free(data);
}
END_TEST

/* Pinned blocks stay where they are while reads elsewhere cycle the
 * whole cache through; at most a quarter of the cache is pinned. */
START_TEST(test_bc_pins)
{
	mem_transport m;
	uint8_t *data;
	h5_source *s = open_mem(&m, &data, 64 * MiB, 64 * MiB); /* 32 slots */
	bc_cache *c = (bc_cache *)s;
	struct iovec iov[4], iov2[8];
	void *hold, *more;
	size_t n, len = BC_BLOCK + 100;
	uint64_t off = 20 * MiB - 50;
	unsigned before;

	ck_assert_uint_eq(c->nslots, 32);
	ck_assert_int_eq(s->ops->pin(s, off, len, iov, 4, &n, &hold), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(iov[0].iov_len + iov[1].iov_len + iov[2].iov_len, len);
	/* a range over more pieces than offered: refused, nothing held */
	ck_assert_int_eq(s->ops->pin(s, off, len, iov, 2, &n, &more), H5_ERR_LIMIT);
	h5_err_clear();
	ck_assert_ptr_null(more);
	/* 3 + 6 blocks pinned would pass a quarter (8) */
	ck_assert_int_eq(s->ops->pin(s, 30 * MiB, 6 * BC_BLOCK, iov2, 8, &n, &more), H5_ERR_LIMIT);
	h5_err_clear();
	ck_assert_int_eq(s->ops->pin(s, 30 * MiB, 5 * BC_BLOCK, iov2, 8, &n, &more), 0);
	s->ops->unpin(s, more);
	/* small reads all over, twice the cache: no pinned slot goes */
	for (uint64_t b = 0; b < 64; b++)
		read_check(s, data, (64 + b) % 128 * BC_BLOCK + 7, 100);
	ck_assert_mem_eq(iov[0].iov_base, data + off, iov[0].iov_len);
	ck_assert_mem_eq(iov[1].iov_base, data + off + iov[0].iov_len, iov[1].iov_len);
	ck_assert_mem_eq(iov[2].iov_base, data + off + iov[0].iov_len + iov[1].iov_len, iov[2].iov_len);
	before = m.nlog;
	read_check(s, data, off, len);                  /* still cached */
	ck_assert_uint_eq(m.nlog, before);
	s->ops->unpin(s, hold);
	ck_assert_uint_eq(c->npinned, 0);
	/* let go: the reads cycle it out now */
	for (uint64_t b = 0; b < 64; b++)
		read_check(s, data, (b + 80) % 128 * BC_BLOCK + 7, 100);
	before = m.nlog;
	read_check(s, data, off, len);
	ck_assert_uint_gt(m.nlog, before);
	h5_source_close(s);
	free(data);
}
END_TEST

/* A sequential stream is read ahead in windows of at least BC_RA_WIN
 * blocks (but at the end); no block is fetched twice. */
START_TEST(test_bc_readahead)
{
	mem_transport m;
	uint8_t *data;
	uint64_t size = 40 * MiB, seen = 0;
	h5_source *s = open_mem(&m, &data, size, 256 * MiB); /* 128 slots */

	/* right after the first fetch: sequential */
	read_check(s, data, BC_FIRST, 64 << 10);
	quiesce((bc_cache *)s, &m);
	ck_assert_uint_eq(m.nfetch, 2);
	ck_assert_uint_ge(m.nstream, 1);
	ck_assert_uint_eq(m.log[first_bg(&m)].off, BC_FIRST + BC_BLOCK);
	ck_assert_uint_eq(m.log[first_bg(&m)].len, BC_RA_WIN * BC_BLOCK);
	for (uint64_t off = BC_FIRST; off < size; off += 64 << 10)
		read_check(s, data, off, 64 << 10);
	quiesce((bc_cache *)s, &m);
	/* readers faster than the worker fetch what it has not reached
	 * (how many: timing); ranges never overlap, and cover the object */
	ck_assert_uint_gt(m.nstream, 1);
	for (unsigned i = 0; i < m.nlog; i++) {
		for (unsigned j = 0; j < i; j++)
			ck_assert(m.log[i].off >= m.log[j].off + m.log[j].len ||
				  m.log[j].off >= m.log[i].off + m.log[i].len);
		seen += m.log[i].len;
		if (m.log[i].bg)
			ck_assert(m.log[i].len >= BC_RA_WIN * BC_BLOCK ||
				  m.log[i].off + m.log[i].len == size);
	}
	ck_assert_uint_eq(seen, size);
	h5_source_close(s);
	free(data);
}
END_TEST

/* A contiguous dataset announced with extent_hint: its stream reads
 * ahead no further than its end. */
START_TEST(test_bc_extent_caps_readahead)
{
	mem_transport m;
	uint8_t *data;
	h5_source *s = open_mem(&m, &data, 40 * MiB, 256 * MiB);

	s->ops->extent_hint(s, BC_FIRST, 6 * MiB);
	read_check(s, data, BC_FIRST, 64 << 10);
	quiesce((bc_cache *)s, &m);
	ck_assert_uint_eq(m.nstream, 1);
	ck_assert_uint_eq(m.log[first_bg(&m)].off, BC_FIRST + BC_BLOCK);
	ck_assert_uint_eq(m.log[first_bg(&m)].off + m.log[first_bg(&m)].len, 6 * MiB);
	h5_source_close(s);
	free(data);
}
END_TEST

/* Chunks hinted by a stream are fetched in the order given, blocks that
 * touch together, and their reads start no byte stream. */
START_TEST(test_bc_ranges_hint_order)
{
	mem_transport m;
	uint8_t *data;
	h5_source *s = open_mem(&m, &data, 40 * MiB, 256 * MiB);
	h5_range r[4] = {
		{ 20 * MiB, 100 << 10 },
		{ 20 * MiB + (200 << 10), 100 << 10 },  /* same block: one run */
		{ 10 * MiB, BC_BLOCK + 1 },             /* two blocks */
		{ 30 * MiB, 10 },
	};

	s->ops->ranges_hint(s, r, 4, true);
	quiesce((bc_cache *)s, &m);
	ck_assert_uint_eq(m.nstream, 3);
	ck_assert_uint_eq(m.log[1].off, 20 * MiB);
	ck_assert_uint_eq(m.log[1].len, BC_BLOCK);
	ck_assert_uint_eq(m.log[2].off, 10 * MiB);
	ck_assert_uint_eq(m.log[2].len, 2 * BC_BLOCK);
	ck_assert_uint_eq(m.log[3].off, 30 * MiB);
	ck_assert_uint_eq(m.log[3].len, BC_BLOCK);
	/* all there: the reads fetch nothing, and follow no byte stream */
	read_check(s, data, r[2].off, (size_t)r[2].len);
	read_check(s, data, r[0].off, (size_t)r[0].len);
	read_check(s, data, r[1].off, (size_t)r[1].len);
	read_check(s, data, r[3].off, (size_t)r[3].len);
	quiesce((bc_cache *)s, &m);
	ck_assert_uint_eq(m.nlog, 4);
	/* a restart forgets what was queued and not fetched yet */
	s->ops->ranges_hint(s, r, 1, true);
	s->ops->ranges_hint(s, (h5_range[]){ { 35 * MiB, 10 } }, 1, true);
	quiesce((bc_cache *)s, &m);
	ck_assert_uint_eq(m.log[m.nlog - 1].off, 35 * MiB);
	h5_source_close(s);
	free(data);
}
END_TEST

/* Metadata hinted with prefetch: each missing block fetched in the
 * background, one block a range. */
START_TEST(test_bc_prefetch)
{
	mem_transport m;
	uint8_t *data;
	h5_source *s = open_mem(&m, &data, 40 * MiB, 256 * MiB);
	uint64_t off[3] = { 100, 12 * MiB + 5, 25 * MiB };

	s->ops->prefetch(s, off, 3);
	quiesce((bc_cache *)s, &m);
	ck_assert_uint_eq(m.nstream, 2);        /* 100 is in the first fetch */
	for (unsigned i = 1; i < 3; i++) {
		ck_assert(m.log[i].bg);
		ck_assert_uint_eq(m.log[i].len, BC_BLOCK);
	}
	read_check(s, data, off[1], 100);
	read_check(s, data, off[2], 100);
	ck_assert_uint_eq(m.nfetch, 1);
	h5_source_close(s);
	free(data);
}
END_TEST

/* A paged file: a miss fetches the whole pages holding its bytes. */
START_TEST(test_bc_page_hint)
{
	mem_transport m;
	uint8_t *data;
	h5_source *s = open_mem(&m, &data, 40 * MiB, 256 * MiB);

	s->ops->page_hint(s, 0, MiB);
	read_check(s, data, 9 * MiB + BC_BLOCK + 10, 100);
	ck_assert_uint_eq(m.nlog, 2);
	ck_assert_uint_eq(m.log[1].off, 9 * MiB);
	ck_assert_uint_eq(m.log[1].len, MiB);
	h5_source_close(s);
	free(data);
}
END_TEST

/* Failures reach the reader (a missing object after the open is EIO),
 * the source stays usable; a failed background fetch is fetched again
 * by the reader; a failed first fetch fails the open and closes the
 * transport. */
START_TEST(test_bc_failures)
{
	mem_transport m;
	uint8_t *data;
	h5_source *s = open_mem(&m, &data, 40 * MiB, 256 * MiB);
	uint8_t buf[100];
	unsigned before;

	m.fail_at = 12 * MiB + 3;
	ck_assert_int_eq(s->ops->read(s, 12 * MiB, buf, 100), H5_ERR_IO);
	m.fail_code = H5_ERR_NOTFOUND;
	ck_assert_int_eq(s->ops->read(s, 12 * MiB, buf, 100), H5_ERR_IO);
	h5_err_clear();
	m.fail_code = 0;
	/* in the background: dropped, the reader asks again */
	s->ops->ranges_hint(s, (h5_range[]){ { 12 * MiB, 10 } }, 1, true);
	quiesce((bc_cache *)s, &m);
	ck_assert_uint_eq(m.nstream, 1);
	before = m.nfetch;
	m.fail_at = UINT64_MAX;
	read_check(s, data, 12 * MiB, 100);
	ck_assert_uint_eq(m.nfetch, before + 1);
	m.changed = 1;
	ck_assert_int_eq(s->ops->changed(s, 1), 1);
	h5_source_close(s);
	/* the first fetch fails: no source, the transport closed */
	mem_init(&m, data, 40 * MiB);
	m.fail_at = 0;
	ck_assert_int_eq(bc_source_open(&s, &m.base, "mem://test", 0), H5_ERR_IO);
	h5_err_clear();
	ck_assert_ptr_null(s);
	ck_assert(m.closed);
	/* an empty object: not HDF5 */
	mem_init(&m, data, 0);
	ck_assert_int_eq(bc_source_open(&s, &m.base, "mem://test", 0), H5_ERR_NOTHDF5);
	h5_err_clear();
	free(data);
}
END_TEST

/* Readers on several threads over one stream: the bytes are right and
 * no block is fetched twice (a block on its way is waited for). */
typedef struct par_arg {
	h5_source *s;
	const uint8_t *data;
	unsigned id;
} par_arg;

static void *par_reader(void *p)
{
	par_arg *a = p;
	uint8_t *buf = malloc(128 << 10);

	for (uint64_t off = BC_FIRST + a->id * (128 << 10); off + (128 << 10) <= 32 * MiB; off += 4 * (128 << 10)) {
		if (a->s->ops->read(a->s, off, buf, 128 << 10) != 0 || memcmp(buf, a->data + off, 128 << 10)) {
			free(buf);
			return (void *)1;
		}
	}
	free(buf);
	return NULL;
}

START_TEST(test_bc_parallel_readers)
{
	mem_transport m;
	uint8_t *data;
	h5_source *s = open_mem(&m, &data, 40 * MiB, 256 * MiB);
	pthread_t t[4];
	par_arg a[4];
	void *rv;

	for (unsigned i = 0; i < 4; i++) {
		a[i] = (par_arg){ s, data, i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, par_reader, &a[i]), 0);
	}
	for (unsigned i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(t[i], &rv), 0);
		ck_assert_ptr_null(rv);
	}
	quiesce((bc_cache *)s, &m);
	for (unsigned i = 0; i < m.nlog; i++)
		for (unsigned j = 0; j < i; j++)
			ck_assert(m.log[i].off >= m.log[j].off + m.log[j].len ||
				  m.log[j].off >= m.log[i].off + m.log[i].len);
	h5_source_close(s);
	free(data);
}
END_TEST

/* The block cache under a chunk stream (issue 23): a block
 * read ahead and not read yet, or one holding a chunk not read yet, goes
 * last, whatever its age; a chunk block read whole long ago goes first.
 * Plain LRU took the stream's next block here (it landed before the
 * oldest block was read) and the stream fetched it again. */
START_TEST(test_bc_slot_victim)
{
	bc_blk s[6];
	uint64_t tick = 1000;

	memset(s, 0, sizeof(s));
	for (unsigned i = 0; i < 6; i++)
		s[i].idx = 100 + i;
	s[0].used = 900;                        /* fetched by a reader, partly read: plain */
	s[0].nread = BC_BLOCK / 4;
	s[1].used = 850;                        /* read ahead for the chunk stream, unread */
	s[1].chunk = s[1].ahead = true;
	s[2].used = 800;                        /* one of its two chunks read */
	s[2].chunk = true;
	s[2].nread = BC_BLOCK / 2;
	s[3].used = 950;                        /* read whole, lately */
	s[3].chunk = true;
	s[3].nread = BC_BLOCK;
	s[4].used = 1;                          /* pinned by a reply */
	s[4].refs = 1;
	s[5].used = 2;                          /* being written by a transfer */
	s[5].loading = BC_LOAD_BG;
	/* the plain block, least recently used of the plain ones */
	ck_assert_ptr_eq(bc_slot_victim(s, 6, tick), &s[0]);
	/* a chunk block read whole more than BC_CHUNK_DONE ticks ago: first */
	s[3].used = tick - BC_CHUNK_DONE - 1;
	ck_assert_ptr_eq(bc_slot_victim(s, 6, tick), &s[3]);
	/* so is any block read whole that long ago (a chunk a reader fetched
	 * itself, outside a stream: random reads), before an empty slot
	 * whose first use costs fresh pages */
	s[0].nread = BC_BLOCK;
	ck_assert_ptr_eq(bc_slot_victim(s, 6, tick), &s[0]);
	s[0].nread = BC_BLOCK / 4;
	/* without those two: the half-read block before the unread one */
	s[0].refs = s[3].refs = 1;
	ck_assert_ptr_eq(bc_slot_victim(s, 6, tick), &s[2]);
	s[2].refs = 1;
	ck_assert_ptr_eq(bc_slot_victim(s, 6, tick), &s[1]);
	s[1].refs = 1;
	ck_assert_ptr_null(bc_slot_victim(s, 6, tick));
	/* untouched for BC_CHUNK_STALE ticks: plain LRU again (a block
	 * holding an index node is never read whole) */
	s[1].refs = s[2].refs = s[0].refs = 0;
	tick = 900 + BC_CHUNK_STALE + 1;
	ck_assert_ptr_eq(bc_slot_victim(s, 6, tick), &s[2]);
	/* an empty slot is plain, and has used 0 */
	s[5].loading = 0;
	s[5].idx = UINT64_MAX;
	s[5].used = 0;
	ck_assert_ptr_eq(bc_slot_victim(s, 6, tick), &s[5]);
}
END_TEST

/* Blocks a reader fetched itself among a chunk stream's chunks land as
 * chunk blocks (done once read whole), not as read ahead. */
START_TEST(test_bc_land_fetched_chunk)
{
	bc_cache h;
	bc_blk s[2];
	unsigned slot[2] = { 0, 1 };

	memset(&h, 0, sizeof(h));
	memset(s, 0, sizeof(s));
	pthread_mutex_init(&h.mu, NULL);
	h.slots = s;
	h.nslots = 2;
	s[0].idx = s[1].idx = UINT64_MAX;
	s[0].loading = s[1].loading = BC_LOAD_FG;
	bc_land(&h, 7, 2, slot, true, BC_FETCHED_CHUNK);
	for (unsigned i = 0; i < 2; i++) {
		ck_assert_uint_eq(s[i].idx, 7 + i);
		ck_assert(s[i].chunk);
		ck_assert(!s[i].ahead);
		ck_assert_uint_eq(s[i].loading, BC_LOAD_NONE);
	}
	ck_assert_uint_eq(h.ra_unread, 0);
	pthread_mutex_destroy(&h.mu);
}
END_TEST

/* A read just past a chunk stream's hinted blocks (a reader that overtook
 * the hints) belongs to that stream: it starts no byte stream, whose
 * read-ahead would follow the bytes past the dataset's end; far past
 * them it is another stream. */
START_TEST(test_bc_chunk_span)
{
	bc_cache h;

	memset(&h, 0, sizeof(h));
	h.nslots = 128;                         /* ra_max(): 64 blocks */
	h.rq_lo = UINT64_MAX;
	ck_assert(!bc_chunk_span(&h, 10));    /* no chunk stream */
	h.rq_lo = 100;
	h.rq_hi = 140;
	ck_assert(!bc_chunk_span(&h, 99));
	ck_assert(bc_chunk_span(&h, 100));
	ck_assert(bc_chunk_span(&h, 140));
	ck_assert(bc_chunk_span(&h, 143));
	ck_assert(bc_chunk_span(&h, 140 + 64));
	ck_assert(!bc_chunk_span(&h, 140 + 65));
	/* a sequential miss there moves no byte-stream target */
	bc_ra_note(&h, 143, true);
	ck_assert_uint_eq(h.ra_until, 0);
	ck_assert_uint_eq(h.ra_len, 0);
	ck_assert(!h.ra_started);
}
END_TEST

static Suite *blockcache_suite(void)
{
	Suite *s = suite_create("blockcache");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_bc_miss_coalesce);
	tcase_add_test(tc, test_bc_small_object);
	tcase_add_test(tc, test_bc_pins);
	tcase_add_test(tc, test_bc_readahead);
	tcase_add_test(tc, test_bc_extent_caps_readahead);
	tcase_add_test(tc, test_bc_ranges_hint_order);
	tcase_add_test(tc, test_bc_prefetch);
	tcase_add_test(tc, test_bc_page_hint);
	tcase_add_test(tc, test_bc_failures);
	tcase_add_test(tc, test_bc_parallel_readers);
	tcase_add_test(tc, test_bc_slot_victim);
	tcase_add_test(tc, test_bc_land_fetched_chunk);
	tcase_add_test(tc, test_bc_chunk_span);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(blockcache_suite)
