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

/* Whether [off, off+len) continues a sequential stream of a filtered
 * dataset; if so, schedule the chunks ahead before reading: the workers
 * start on the next chunks while this thread decodes the current one. */
bool h5_chunk_stream_note(h5_dataset *d, uint64_t off, size_t len)
{
	h5_chunk_index *ci = d->cidx;
	h5_prefetch *p = d->f->prefetch;

	if (!ci || !ci->filtered || len == 0 || off > UINT64_MAX - len || !stream_follows(ci, off, off + len, len))
		return false;
	if (p) {
		pthread_mutex_lock(&p->lock);
		if (!p->stop)
			prefetch_plan(p, ci, off + len);
		pthread_mutex_unlock(&p->lock);
	}
	return true;
}
