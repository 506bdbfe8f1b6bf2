/*
 * chunk_stream.c - sequential streams over filtered chunked datasets:
 * telling a stream from scattered reads, decoding ahead of it on worker
 * threads (prefetching), and dropping the chunks it has passed
 * (drop-behind). chunk.c reads; this file decides what to decode before
 * it is asked for and what to forget after it was read.
 */
#include "internal.h"
#include "cidx.h"

#include <stdlib.h>

/* How many passed chunks drop-behind keeps: about 16 MiB, for the reads
 * the kernel's parallel readahead hands us out of order, and two rows of
 * chunks (within 64 MiB): a C-order stream passes a whole row of chunks
 * at its last element row, and the reads that come out of order still
 * touch every chunk of the row; dropped earlier, they were decoded again
 * (and fetched again if remote). */
unsigned h5_chunk_stream_keep(const h5_chunk_index *ci)
{
	uint64_t cb = ci->chunk_bytes, npr = 1, keep;

	keep = cb >= (16u << 20) / 8 ? 8 : cb <= (16u << 20) / CHUNK_DROP_MAX ? CHUNK_DROP_MAX : (16u << 20) / cb;
	for (unsigned i = 1; i < ci->rank; i++)
		npr = npr * ci->nchunks[i] > CHUNK_DROP_MAX ? CHUNK_DROP_MAX : npr * ci->nchunks[i];
	if (2 * npr > keep && keep < (64u << 20) / cb)
		keep = 2 * npr < (64u << 20) / cb ? 2 * npr : (64u << 20) / cb;
	return (unsigned)(keep > CHUNK_DROP_MAX ? CHUNK_DROP_MAX : keep);
}

/* Queue the chunks a stream has passed; beyond drop_keep of them the
 * oldest leave the cache (in use, they go at their last release). */
void h5_chunk_stream_drop(h5_chunk_index *ci, const uint64_t *passed, unsigned n)
{
	uint64_t gone[CHUNK_DROP_MAX];
	unsigned ngone = 0;

	pthread_mutex_lock(&ci->stream_lock);
	for (unsigned i = 0; i < n; i++) {
		bool seen = false;

		for (unsigned k = 0; k < ci->drop_len && !seen; k++)
			seen = ci->drop[(ci->drop_head + k) % CHUNK_DROP_MAX] == passed[i];
		if (seen)
			continue;
		if (ci->drop_len == ci->drop_keep) {
			gone[ngone++] = ci->drop[ci->drop_head];
			ci->drop_head = (ci->drop_head + 1) % CHUNK_DROP_MAX;
			ci->drop_len--;
		}
		ci->drop[(ci->drop_head + ci->drop_len++) % CHUNK_DROP_MAX] = passed[i];
	}
	pthread_mutex_unlock(&ci->stream_lock);
	for (unsigned i = 0; i < ngone; i++)
		h5_cache_invalidate(ci->f->chunks, H5_CK_CHUNK, gone[i]);
}

/* Whether a read of [off, end) follows the previous one: it starts where
 * that one ended, give or take one read (several FUSE threads may take
 * readahead requests slightly out of order). */
static bool stream_follows(h5_chunk_index *ci, uint64_t off, uint64_t end, size_t len)
{
	bool seq;

	pthread_mutex_lock(&ci->stream_lock);
	seq = off >= ci->pf_last_off && off <= ci->pf_last_end + len;
	ci->pf_last_off = off;
	ci->pf_last_end = end;
	pthread_mutex_unlock(&ci->stream_lock);
	return seq;
}

/* ---- prefetching ------------------------------------------------------------------
 * The kernel asks for a file in readahead-sized pieces (128 KiB unless the
 * mount's read_ahead_kb was raised), so a sequential reader of a filtered
 * dataset wants one chunk at a time and decompression would run on one
 * core. When reads follow each other, the chunks of the next chunk rows
 * (whole steps of dimension 0, which a C-order stream meets next) are
 * queued for f->prefetch's workers, which decode them into f->chunks with
 * the same load-once h5_cache_get as readers: a reader that gets there
 * first decodes the chunk itself and the worker then finds it cached. At
 * most as many chunks as there are workers are decoded at a time, at most
 * PF_QUEUE wait, and no more than a quarter of the cache is scheduled
 * ahead, so prefetched chunks do not evict each other before use. */

#define PF_QUEUE 64
#define PF_MAX_WORKERS 8
#define PF_DEPTH 1                          /* chunks ahead per worker */

typedef struct pf_job {
	h5_chunk_index *ci;
	uint64_t scaled[H5_MAX_RANK];
} pf_job;

struct h5_prefetch {
	pthread_mutex_t lock;
	pthread_cond_t work;            /* jobs queued, or stop */
	pthread_cond_t done;            /* a job finished */
	pf_job q[PF_QUEUE];             /* ring */
	size_t head, len;
	unsigned nworkers, started;
	unsigned depth;                 /* chunks decoded ahead of a stream */
	pthread_t tid[PF_MAX_WORKERS];
	bool stop;
};

/* How many chunks a stream's workers decode ahead: PF_DEPTH per worker
 * (measured, bench/README.md "Prefetch depth"); H5FS_PREFETCH_DEPTH
 * overrides it, for measuring. */
static unsigned prefetch_depth(unsigned nworkers)
{
	const char *e = getenv("H5FS_PREFETCH_DEPTH");
	char *end;
	unsigned long v;

	if (e && *e) {
		v = strtoul(e, &end, 10);
		if (*end == '\0' && v >= 1 && v <= PF_QUEUE)
			return (unsigned)v;
	}
	return nworkers * PF_DEPTH < PF_QUEUE ? nworkers * PF_DEPTH : PF_QUEUE;
}

int h5_prefetch_new(h5_prefetch **out, unsigned nworkers)
{
	h5_prefetch *p;

	*out = NULL;
	if (nworkers == 0)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for the prefetcher");
	if (pthread_mutex_init(&p->lock, NULL) != 0) {
		free(p);
		return h5_err_set(H5_ERR_NOMEM, "cannot create the prefetcher's mutex");
	}
	if (pthread_cond_init(&p->work, NULL) != 0) {
		pthread_mutex_destroy(&p->lock);
		free(p);
		return h5_err_set(H5_ERR_NOMEM, "cannot create the prefetcher's condition variable");
	}
	if (pthread_cond_init(&p->done, NULL) != 0) {
		pthread_cond_destroy(&p->work);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return h5_err_set(H5_ERR_NOMEM, "cannot create the prefetcher's condition variable");
	}
	p->nworkers = nworkers > PF_MAX_WORKERS ? PF_MAX_WORKERS : nworkers;
	p->depth = prefetch_depth(p->nworkers);
	*out = p;
	return 0;
}

void h5_prefetch_free(h5_prefetch *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->started; i++)
		pthread_join(p->tid[i], NULL);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* Decode one chunk into the cache. Failures are left for the reader, who
 * decodes it again and reports why. */
static void pf_decode(const pf_job *j)
{
	(void)h5_chunk_decode(j->ci, j->scaled);
	h5_err_clear();
}

static void *pf_worker(void *arg)
{
	h5_prefetch *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		pf_job j;

		while (!p->stop && p->len == 0)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		j = p->q[p->head];
		p->head = (p->head + 1) % PF_QUEUE;
		p->len--;
		pthread_mutex_unlock(&p->lock);
		pf_decode(&j);
		pthread_mutex_lock(&p->lock);
		j.ci->pf_active--;
		pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* The index is being closed: drop its queued jobs, wait for running ones. */
void h5_chunk_stream_forget(h5_chunk_index *ci)
{
	h5_prefetch *p = ci->f->prefetch;
	size_t keep = 0;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->len; i++) {
		const pf_job *j = &p->q[(p->head + i) % PF_QUEUE];

		if (j->ci == ci)
			ci->pf_active--;
		else
			p->q[(p->head + keep++) % PF_QUEUE] = *j;
	}
	p->len = keep;
	while (ci->pf_active > 0)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

/* Called (under p->lock) for a sequential read of [off, end) of the stream. */
static void prefetch_plan(h5_prefetch *p, h5_chunk_index *ci, uint64_t end)
{
	uint64_t rowbytes = ci->esize, rowspan, npr = 1, r0, first, stop, want, nq = 0, cap;
	uint64_t c[H5_MAX_RANK];

	for (unsigned i = 1; i < ci->rank; i++) {
		if (h5_mul_overflow(rowbytes, ci->dims[i], &rowbytes))
			return;
		npr *= ci->nchunks[i];  /* <= elements of the dataset */
	}
	if (h5_mul_overflow(rowbytes, ci->chunk[0], &rowspan) || rowspan == 0 || npr == 0)
		return;
	/* chunks per chunk row times rows ahead >= the depth, within a quarter
	 * of the cache and the queue */
	want = (p->depth + npr - 1) / npr;
	cap = h5_cache_budget(ci->f->chunks) / 4 / ci->chunk_bytes;
	if (cap > PF_QUEUE - p->len)
		cap = PF_QUEUE - p->len;
	r0 = end / rowspan + (end % rowspan != 0);     /* the first row this read did not touch */
	first = ci->pf_upto;
	if (first < r0 || first > r0 + want)           /* a jump: start over */
		first = r0;
	stop = r0 + want < ci->nchunks[0] ? r0 + want : ci->nchunks[0];
	if (first >= stop)
		return;
	ci->pf_upto = stop;
	for (uint64_t r = first; r < stop; r++) {
		unsigned j;

		if (nq >= cap) {
			if (ci->pf_upto > r)
				ci->pf_upto = r;  /* the rest when there is room */
			break;
		}

		c[0] = r;
		for (unsigned i = 1; i < ci->rank; i++)
			c[i] = 0;
		do {
			pf_job *job;

			if (nq >= cap) {
				ci->pf_upto = r;        /* duplicates are cache hits */
				break;
			}
			job = &p->q[(p->head + p->len) % PF_QUEUE];
			job->ci = ci;
			memcpy(job->scaled, c, sizeof(uint64_t) * ci->rank);
			p->len++;
			ci->pf_active++;
			nq++;
			/* odometer over dimensions 1.. (last fastest) */
			for (j = ci->rank; j-- > 1;) {
				if (++c[j] < ci->nchunks[j])
					break;
				c[j] = 0;
			}
		} while (j != 0 && ci->rank > 1);
	}
	if (nq == 0)
		return;
	while (p->started < p->nworkers) {
		if (pthread_create(&p->tid[p->started], NULL, pf_worker, p) != 0)
			break;  /* fewer workers; readers decode what is left */
		p->started++;
	}
	pthread_cond_broadcast(&p->work);
}

/* ---- remote read-ahead ------------------------------------------------------------
 * Over a remote FILE a chunk's bytes take a round trip to arrive, and the
 * byte source's own read-ahead follows the byte stream, which is not the
 * chunks' order (nor ends where the dataset's chunks end). The index knows
 * where the next chunks are, so a stream tells the source (its ranges_hint
 * op, h5_file_ranges_hint) the stored ranges of the chunks ahead, in the
 * order it will read them: row-major chunk order, which is the order a
 * C-order stream meets chunk rows (all chunks of one row of chunks at
 * once). The window starts at RA_FIRST bytes of decoded chunks (at
 * least two chunk rows: the prefetch workers decode the next row), doubles
 * each time the stream has used half of it, up to RA_MAX (or those two
 * rows), and starts over at a jump. The source fetches them
 * (several requests in flight) while the prefetch workers decode what
 * has arrived. Local sources have no such op: nothing happens. */

#define RA_FIRST ((uint64_t)8 << 20)
#define RA_MAX ((uint64_t)64 << 20)
#define RA_JUMP ((uint64_t)8 << 20)

/* The chunks [from, to) (row-major numbers) as ranges of FILE, passed to
 * the source H5_PREFETCH_MAX at a time. Lookup failures end the hint:
 * the reader meets them again and reports them. */
static void ra_hint(h5_chunk_index *ci, uint64_t from, uint64_t to, bool restart)
{
	h5_range r[H5_PREFETCH_MAX];
	uint64_t scaled[H5_MAX_RANK];
	size_t n = 0;

	for (uint64_t c = from; c < to; c++) {
		uint64_t rest = c;
		h5_chunk_rec rec;

		for (unsigned i = ci->rank; i-- > 0;) {
			scaled[i] = rest % ci->nchunks[i];
			rest /= ci->nchunks[i];
		}
		if (h5_chunk_lookup(&rec, ci, scaled) < 0) {
			h5_err_clear();
			break;
		}
		if (!h5_addr_defined(rec.addr) || rec.size == 0)
			continue; /* fill: nothing stored */
		r[n].off = rec.addr;
		r[n++].len = rec.size;
		if (n == H5_PREFETCH_MAX) {
			h5_file_ranges_hint(ci->f, r, n, restart);
			restart = false;
			n = 0;
		}
	}
	if (n || restart)
		h5_file_ranges_hint(ci->f, r, n, restart);
}

/* A sequential read of [off, off+len): hint the chunks ahead (from the
 * read's own when the stream starts over). */
static void ra_plan(h5_chunk_index *ci, uint64_t off, size_t len)
{
	uint64_t end = off + len;
	uint64_t rowbytes = ci->esize, rowspan, npr = 1, total, cur, first, most, from, to;
	bool restart;

	for (unsigned i = 1; i < ci->rank; i++) {
		if (h5_mul_overflow(rowbytes, ci->dims[i], &rowbytes))
			return;
		npr *= ci->nchunks[i];  /* <= elements of the dataset */
	}
	if (h5_mul_overflow(rowbytes, ci->chunk[0], &rowspan) || rowspan == 0 || npr == 0 || end == 0 ||
	    ci->chunk_bytes == 0 || h5_mul_overflow(npr, ci->nchunks[0], &total))
		return;
	cur = (end - 1) / rowspan * npr;   /* the first chunk of the row being read */
	/* at least two rows of chunks: a C-order stream needs a row's chunks
	 * all at once, and the prefetch workers decode the next row */
	first = RA_FIRST / ci->chunk_bytes > 2 ? RA_FIRST / ci->chunk_bytes : 2;
	if (first < 2 * npr)
		first = 2 * npr;
	most = RA_MAX / ci->chunk_bytes > 2 * npr ? RA_MAX / ci->chunk_bytes : 2 * npr;
	if (first > most)
		first = most;
	pthread_mutex_lock(&ci->stream_lock);
	/* a jump: past the hinted chunks, more than RA_JUMP further on (the
	 * kernel's readahead keeps several 1000 KiB reads in flight, which
	 * arrive in any order), or back by more than a row */
	restart = ci->ra_win == 0 || cur > ci->ra_next ||
		  (cur > ci->ra_cur && (cur - ci->ra_cur) / npr > RA_JUMP / rowspan + 1) || cur + npr < ci->ra_cur;
	if (restart) {
		ci->ra_win = first;
		ci->ra_next = off / rowspan * npr;
		ci->ra_cur = cur;
	} else {
		if (cur > ci->ra_cur)
			ci->ra_cur = cur;
		cur = ci->ra_cur;
		if (ci->ra_next - cur > ci->ra_win / 2 || ci->ra_next >= total) {
			pthread_mutex_unlock(&ci->stream_lock);
			return; /* enough hinted ahead: most reads end here */
		}
		ci->ra_win = ci->ra_win * 2 < most ? ci->ra_win * 2 : most;
	}
	from = ci->ra_next;
	to = cur + ci->ra_win < total ? cur + ci->ra_win : total;
	ci->ra_next = to > from ? to : from;
	pthread_mutex_unlock(&ci->stream_lock);
	if (to > from || restart)
		ra_hint(ci, from, to, restart);
}

/* Whether [off, off+len) continues a sequential stream of a filtered
 * dataset; if so, schedule the chunks ahead before reading: the workers
 * start on the next chunks while this thread decodes the current one,
 * and a remote source fetches the chunks after those. */
bool h5_chunk_stream_note(h5_dataset *d, uint64_t off, size_t len)
{
	h5_chunk_index *ci = d->cidx;
	h5_prefetch *p = d->f->prefetch;

	if (!ci || !ci->filtered || len == 0 || off > UINT64_MAX - len || !stream_follows(ci, off, off + len, len))
		return false;
	if (d->f->src->ops->ranges_hint)
		ra_plan(ci, off, len);
	if (p) {
		pthread_mutex_lock(&p->lock);
		if (!p->stop)
			prefetch_plan(p, ci, off + len);
		pthread_mutex_unlock(&p->lock);
	}
	return true;
}
