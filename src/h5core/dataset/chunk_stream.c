/*
 * chunk_stream.c - sequential streams over filtered chunked datasets:
 * telling a stream from scattered reads, decoding ahead of it on worker
 * threads (prefetching), and dropping the chunks it has passed
 * (drop-behind). chunk.c reads; this file decides what to decode before
 * it is asked for and what to forget after it was read.
 */
#include "source.h"
#include "base.h"
#include "cache.h"
#include "ctx.h"
#include "file.h"
#include "chunk_rec.h"
#include "dataset.h"
#include "chunk.h"
#include "cidx.h"
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>

/* How many passed chunks drop-behind keeps, for the reads the kernel's
 * parallel readahead hands us out of order: about 32 MiB over a remote
 * FILE, where a chunk dropped too early is fetched again; 8 MiB over a
 * local one, where it is only decoded again (0.5-1 ms per MiB of CPU), while
 * every chunk kept is a buffer of its own that a stream's start must take
 * as new memory: 4-15 ms per MiB on first touch in the test VM, so the
 * 32 MiB kept cost a 256 MiB `cat` more than its decoding (issue 44,
 * bench/README.md). And two rows of chunks (within 64 MiB): a C-order
 * stream passes a whole row of chunks at its last element row, and the
 * reads that come out of order still touch every chunk of the row;
 * dropped earlier, they were decoded again (and fetched again if
 * remote). */
unsigned h5_chunk_stream_keep(const h5_chunk_index *ci)
{
	uint64_t cb = ci->chunk_bytes, npr = 1, keep, span;

	span = ci->f->src->ops->ranges_hint ? (32u << 20) : (8u << 20);
	keep = cb >= span / 8 ? 8 : cb <= span / CHUNK_DROP_MAX ? CHUNK_DROP_MAX : span / cb;
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

/* Reads of a stream that arrive after a later one: the kernel's readahead
 * keeps several requests in flight and the FUSE threads take them in any
 * order. A late read lies in what the stream skipped (its hole), at most
 * STREAM_BEHIND reads behind the furthest one. */
#define STREAM_BEHIND 16

/* Where a read of [off, end) stands to the stream: it starts where the
 * furthest read so far ended, give or take one read (STREAM_AHEAD: the
 * stream goes on from there; what it skips is its hole); it fills the
 * hole, a request the readahead sent earlier and a thread took later
 * (STREAM_LATE: still the stream's, for drop-behind, though nothing new
 * to schedule); or neither (STREAM_NONE: a new start; a backward scan
 * is one at every read). Counted as a new start, a late read once moved
 * the stream back and was never noted as passing its chunks, so about a
 * quarter of a sequential read's decoded chunks stayed in the cache until
 * the budget evicted them, each a fresh buffer (issue 44). */
enum stream_pos { STREAM_NONE, STREAM_AHEAD, STREAM_LATE };

static enum stream_pos stream_follows(h5_chunk_index *ci, uint64_t off, uint64_t end, size_t len)
{
	enum stream_pos pos = STREAM_NONE;
	uint64_t back = (uint64_t)len * STREAM_BEHIND;

	pthread_mutex_lock(&ci->stream_lock);
	if (off >= ci->pf_last_off && off <= ci->pf_last_end + len) {
		pos = STREAM_AHEAD;
		if (off > ci->pf_last_end) {
			if (ci->pf_hole_lo >= ci->pf_hole_hi)
				ci->pf_hole_lo = ci->pf_last_end;
			ci->pf_hole_hi = off;
		}
	} else if (off >= ci->pf_hole_lo && off < ci->pf_hole_hi && off + back >= ci->pf_last_off) {
		pos = STREAM_LATE;
		if (off <= ci->pf_hole_lo && end > ci->pf_hole_lo)
			ci->pf_hole_lo = end;        /* filled from below */
	} else {
		ci->pf_hole_lo = ci->pf_hole_hi = 0;
	}
	if (pos != STREAM_LATE) {
		ci->pf_last_off = off;
		ci->pf_last_end = end;
	}
	pthread_mutex_unlock(&ci->stream_lock);
	return pos;
}

/* ---- prefetching ------------------------------------------------------------------
 * The kernel asks for a file in readahead-sized pieces (128 KiB unless the
 * mount's read_ahead_kb was raised), so a sequential reader of a filtered
 * dataset wants one chunk at a time and decompression would run on one
 * core. When reads follow each other, the chunks of the next chunk rows
 * (whole steps of dimension 0, which a C-order stream meets next) are
 * queued as jobs of the context's worker pool (pool.c, f->pool), which
 * decode them into f->chunks with
 * the same load-once h5_cache_get as readers: a reader that gets there
 * first decodes the chunk itself and the worker then finds it cached. At
 * most as many chunks as there are workers are decoded at a time, at most
 * H5_POOL_QUEUE wait (for every file of the context), and no more than a
 * quarter of the cache is scheduled ahead, so prefetched chunks do not
 * evict each other before use. */

#define PF_DEPTH 1                          /* chunks ahead per worker */
#define PF_WORKERS_MAX 7                    /* workers counted, at most (as measured) */

static unsigned env_depth;                  /* H5FS_PREFETCH_DEPTH, 0: unset */
static pthread_once_t env_once = PTHREAD_ONCE_INIT;

static void read_env_depth(void)
{
	const char *e = getenv("H5FS_PREFETCH_DEPTH");
	char *end;
	unsigned long v;

	if (e && *e) {
		v = strtoul(e, &end, 10);
		if (*end == '\0' && v >= 1 && v <= H5_POOL_QUEUE)
			env_depth = (unsigned)v;
	}
}

/* How many chunks a stream's workers decode ahead: PF_DEPTH per worker
 * (measured, bench/README.md "Prefetch depth"); H5FS_PREFETCH_DEPTH
 * overrides it, for measuring. */
static unsigned prefetch_depth(const h5_pool *p)
{
	unsigned n = h5_pool_workers(p);

	pthread_once(&env_once, read_env_depth);
	if (env_depth)
		return env_depth;
	return (n < PF_WORKERS_MAX ? n : PF_WORKERS_MAX) * PF_DEPTH;
}

/* Whether the stream reads past chunk row `row` already: a job the
 * workers came to late (the pool's workers also help parallel sections,
 * which go first). The reader decoded that chunk itself meanwhile, and
 * drop-behind may have dropped it: decoding it again would only read its
 * stored bytes again (over HTTP, a second fetch of blocks the source let
 * go once they were read). */
static bool pf_stale(h5_chunk_index *ci, uint64_t row)
{
	uint64_t rowspan = ci->esize, off;

	for (unsigned i = 1; i < ci->rank; i++)
		if (h5_mul_overflow(rowspan, ci->dims[i], &rowspan))
			return false;
	if (h5_mul_overflow(rowspan, ci->chunk[0], &rowspan) || rowspan == 0)
		return false;
	pthread_mutex_lock(&ci->stream_lock);
	off = ci->pf_last_off;
	pthread_mutex_unlock(&ci->stream_lock);
	return off / rowspan > row;
}

/* A pool job: decode one chunk into the cache, unless the stream has
 * passed it. Failures are left for the reader, who decodes it again and
 * reports why. */
static void pf_decode(void *owner, const uint64_t *scaled)
{
	if (pf_stale(owner, scaled[0]))
		return;
	(void)h5_chunk_decode(owner, scaled);
	h5_err_clear();
}

/* The index is being closed: drop its queued jobs, wait for running ones. */
void h5_chunk_stream_forget(h5_chunk_index *ci)
{
	h5_pool_forget(ci->f->pool, ci, &ci->pf_active);
}

/* Called (under the pool's lock) for a sequential read of [off, end) of the stream. */
static void prefetch_plan(h5_pool *p, h5_chunk_index *ci, uint64_t end)
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
	want = (prefetch_depth(p) + npr - 1) / npr;
	cap = h5_cache_budget(ci->f->chunks) / 4 / ci->chunk_bytes;
	if (cap > h5_pool_room(p))
		cap = h5_pool_room(p);
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
			h5_pool_job job = { .fn = pf_decode, .owner = ci, .active = &ci->pf_active };

			if (nq >= cap) {
				ci->pf_upto = r;        /* duplicates are cache hits */
				break;
			}
			memcpy(job.arg, c, sizeof(uint64_t) * ci->rank);
			h5_pool_queue(p, &job);
			nq++;
			/* odometer over dimensions 1.. (last fastest) */
			for (j = ci->rank; j-- > 1;) {
				if (++c[j] < ci->nchunks[j])
					break;
				c[j] = 0;
			}
		} while (j != 0 && ci->rank > 1);
	}
	/* h5_pool_unlock starts the workers and wakes them */
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
#define RA_JUMP ((uint64_t)16 << 20)

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
	uint64_t rowbytes = ci->esize, rowspan, npr = 1, total, cur, first, most, from, to, jump, back;
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
	/* a jump: more than RA_JUMP (at least a row) past the furthest read
	 * or the hinted chunks, or back by more than the largest window. The
	 * kernel's readahead keeps several 1000 KiB reads in flight and FUSE
	 * threads serve them in any order: on a loaded machine reads came
	 * up to 13 chunks behind the furthest one, and a stream a little
	 * ahead of its hints is the same stream. Counted as jumps (back by
	 * more than a row, or past the hints at all), they restarted the
	 * hints every few MiB from a small window, the readers overtook it
	 * and fetched chunks themselves, and the source's cache let blocks
	 * go and fetched them again (1.5-2x the stored bytes in
	 * bench/remote_chunked_bench.py). */
	jump = (RA_JUMP / rowspan + 1) * npr;
	back = most > jump ? most : jump;
	restart = ci->ra_win == 0 || cur > ci->ra_next + jump || (cur > ci->ra_cur && cur - ci->ra_cur > jump) ||
		  cur + back < ci->ra_cur;
	if (restart) {
		ci->ra_win = first;
		ci->ra_next = off / rowspan * npr;
		ci->ra_cur = cur;
	} else {
		if (cur > ci->ra_cur)
			ci->ra_cur = cur;
		cur = ci->ra_cur;
		if ((ci->ra_next > cur && ci->ra_next - cur > ci->ra_win / 2) || ci->ra_next >= total) {
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
	h5_pool *p = d->f->pool;

	enum stream_pos pos;

	if (!ci || !ci->filtered || len == 0 || off > UINT64_MAX - len)
		return false;
	pos = stream_follows(ci, off, off + len, len);
	if (pos == STREAM_NONE)
		return false;
	if (pos == STREAM_LATE)
		return true;    /* its chunks are dropped behind; the front plans */
	if (d->f->src->ops->ranges_hint)
		ra_plan(ci, off, len);
	if (p) {
		h5_pool_lock(p);
		prefetch_plan(p, ci, off + len);
		h5_pool_unlock(p);
	}
	return true;
}
