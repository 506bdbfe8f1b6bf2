/* blockcache_ra.c - background read-ahead of the block cache: one
 * worker thread per source, started at the first sequential stream, keeps
 * up to BC_RA_REQS fetches of BC_RA_WIN blocks or more in flight through
 * the transport's stream op (HTTP: a curl multi handle, each on its own
 * pooled connection), so a `cat` over a slow link overlaps round trips
 * instead of waiting for each.
 *
 * The reading threads (bc_read) say where the stream is with
 * bc_ra_note(): a sequential miss or the first read of a block read
 * ahead moves the target [ra_next, ra_until) forward (the distance starts
 * at two windows and doubles up to BC_RA_MAX blocks, at most half the
 * cache, so blocks read ahead do not evict each other or the blocks being
 * read); a jump empties it. A stream over a chunked dataset says which
 * chunks it reads next instead (bc_ranges_hint, from chunk_stream.c
 * through the ranges_hint op): those runs of blocks are fetched first,
 * in its order, and its reads move no byte-stream target.
 * Blocks being fetched are in h->inflight, so a reader waits for them
 * rather than asking twice. A background fetch that fails is dropped (and
 * stops the stream): the reader then fetches the block itself, with
 * retries, and reports EIO if that fails too. Nothing is retried here.
 *
 * The worker is a thread of its own, not a job of the engine context's
 * pool (pool.c): it spends a stream's life waiting for the network, not
 * decoding, and would hold a decoding worker for all that time. So that a
 * context of many remote files does not keep a thread per file that was
 * once streamed, the worker ends after BC_RA_IDLE_S seconds without
 * work, and the next stream starts another. */
#define _GNU_SOURCE /* pthread_setname_np */
#include <config.h>
#include "blockcache_int.h"
#include "pool.h"
#include "source.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BC_RA_IDLE_S 10                 /* the worker ends after this long idle */

typedef struct ra_xfer {
	bc_fetch f;                  /* first: what the transport is handed */
	bool busy;                   /* handed to the transport, not done yet */
	uint64_t b, n;
	bool hint;                   /* a block of metadata (bc_ra_hint) */
	bool chunk;                  /* chunks of a stream (bc_ranges_hint) */
	unsigned slot[BC_RA_MAX];    /* the slots it lands in (bc_reserve) */
	uint8_t *seg[BC_RA_MAX];
} ra_xfer;

/* The worker's fetches, as the transport's stream op sees them. */
typedef struct ra_queue {
	bc_queue q;                  /* first */
	bc_cache *h;
	unsigned started;            /* fetches handed out (ra_next) */
	ra_xfer x[BC_RA_REQS];
} ra_queue;
/* Blocks read ahead of the readers at most: half the cache keeps what
 * the readers need. */
static uint64_t ra_max(const bc_cache *h)
{
	return h->nslots / 2 < BC_RA_MAX ? h->nslots / 2 : BC_RA_MAX;
}

/* The next window to fetch, registered in h->inflight (h->mu held);
 * false if there is none now. A window stops at a block already cached or
 * in flight; a window shorter than BC_RA_WIN only there or at the end
 * of the object, else it waits for the stream to move on (no trickle of
 * one-block requests). */
static bool ra_pick(bc_cache *h, ra_xfer *x)
{
	uint64_t nb = bc_nblocks(h), until = h->ra_until < nb ? h->ra_until : nb;
	uint64_t b = h->ra_next, n = 0, win = h->ra_len / BC_RA_REQS, held = h->ra_unread;
	bool capped = false;

	/* the requests in flight cover the distance read ahead */
	if (win < BC_RA_WIN)
		win = BC_RA_WIN;
	if (h->ra_stop || h->ninflight >= BC_POOL)
		return false;
	/* hinted metadata first: a reader is about to wait for it */
	while (h->nhint) {
		uint64_t hb = h->hint[0];

		memmove(h->hint, h->hint + 1, --h->nhint * sizeof(h->hint[0]));
		if (bc_cached(h, hb) || bc_in_flight(h, hb) || bc_reserve(h, 1, x->slot, x->seg,
										 BC_LOAD_BG) == 0)
			continue;
		h->inflight[h->ninflight].b = hb;
		h->inflight[h->ninflight].n = 1;
		h->inflight[h->ninflight].chunk = false;
		h->inflight[h->ninflight++].bg = true;
		x->b = hb;
		x->n = 1;
		x->hint = true;
		x->chunk = false;
		return true;
	}
	x->hint = false;
	x->chunk = false;
	/* all streams together hold at most ra_max() blocks read ahead and
	 * not read yet (arrived or arriving), so none evicts another's */
	for (unsigned i = 0; i < h->ninflight; i++)
		if (h->inflight[i].bg)
			held += h->inflight[i].n;
	if (held >= ra_max(h))
		return false;
	if (win > ra_max(h) - held)
		win = ra_max(h) - held;
	/* the chunks a stream reads next, in its order */
	while (h->nrq) {
		uint64_t cb = h->rq[0].b, ce = cb + h->rq[0].n, cn = 0, cw = win;

		while (cb < ce && (bc_cached(h, cb) || bc_in_flight(h, cb)))
			cb++;
		while (cb + cn < ce && cn < cw && !bc_cached(h, cb + cn) && !bc_in_flight(h, cb + cn))
			cn++;
		if (cn == 0) {
			if (cb == ce)
				memmove(h->rq, h->rq + 1, --h->nrq * sizeof(h->rq[0]));
			else
				h->rq[0].b = cb;
			continue;
		}
		cn = bc_reserve(h, cn, x->slot, x->seg, BC_LOAD_BG);
		if (cn == 0)
			return false;
		h->rq[0].b = cb + cn;
		h->rq[0].n = ce - (cb + cn);
		if (h->rq[0].n == 0)
			memmove(h->rq, h->rq + 1, --h->nrq * sizeof(h->rq[0]));
		h->inflight[h->ninflight].b = cb;
		h->inflight[h->ninflight].n = cn;
		h->inflight[h->ninflight].chunk = true;
		h->inflight[h->ninflight++].bg = true;
		x->b = cb;
		x->n = cn;
		x->chunk = true;
		return true;
	}
	while (b < until && (bc_cached(h, b) || bc_in_flight(h, b)))
		b++;
	h->ra_next = b;
	/* never among a chunk stream's blocks (bc_ranges_hint's span): its
	 * queue fetches them, and those read whole and let go are not wanted
	 * again; a late read just before them (out of order) otherwise
	 * started a window that fetched their holes a second time */
	if (h->rq_lo <= h->rq_hi && b <= h->rq_hi && until > h->rq_lo) {
		if (b >= h->rq_lo) {
			h->ra_until = 0;
			h->ra_len = 0;
			return false;
		}
		until = h->rq_lo;
		capped = true;
	}
	while (b + n < until && n < win && !bc_cached(h, b + n) && !bc_in_flight(h, b + n))
		n++;
	if (n == 0 || (n < BC_RA_WIN && b + n == until && until < nb && !h->ra_capped && !capped))
		return false;
	/* whole pages of a paged file (the next window starts on a page) */
	if (h->page_blocks > 1 && b + n < nb && n > h->page_blocks) {
		uint64_t past = (b + n - h->page_base / BC_BLOCK) % h->page_blocks;

		n -= past;
	}
	/* straight into slots; fewer if pins and other transfers hold the
	 * rest (the next pick continues from there) */
	n = bc_reserve(h, n, x->slot, x->seg, BC_LOAD_BG);
	if (n == 0)
		return false;
	h->ra_next = b + n;
	h->inflight[h->ninflight].b = b;
	h->inflight[h->ninflight].n = n;
	h->inflight[h->ninflight].chunk = false;
	h->inflight[h->ninflight++].bg = true;
	x->b = b;
	x->n = n;
	x->chunk = false;
	return true;
}

/* The transport asks for the next fetch (bc_queue next). */
static bc_fetch *ra_next(bc_queue *q)
{
	ra_queue *rq = (ra_queue *)q;
	bc_cache *h = rq->h;
	ra_xfer *x = NULL;

	pthread_mutex_lock(&h->mu);
	for (unsigned i = 0; i < BC_RA_REQS && !x; i++)
		if (!rq->x[i].busy)
			x = &rq->x[i];
	if (x && ra_pick(h, x)) {
		uint64_t off = x->b * BC_BLOCK, end = (x->b + x->n) * BC_BLOCK;

		if (end > h->base.size)
			end = h->base.size;
		memset(&x->f, 0, sizeof(x->f));
		x->f.off = off;
		x->f.len = (size_t)(end - off);
		x->f.seg = x->seg;
		x->busy = true;
		rq->started++;
	} else {
		if (x) /* nothing to do: the worker waits for a kick after this */
			h->ra_gen_seen = h->ra_gen;
		x = NULL;
	}
	pthread_mutex_unlock(&h->mu);
	return x ? &x->f : NULL;
}

/* A fetch ended (bc_queue done; aborted at stop too): the blocks into the
 * cache if it succeeded, else the stream stops (h->mu not held). */
static void ra_done(bc_queue *q, bc_fetch *f)
{
	bc_cache *h = ((ra_queue *)q)->h;
	ra_xfer *x = (ra_xfer *)f;

	if (f->rc == 0) {
		bc_land(h, x->b, x->n, x->slot, true,
			x->hint ? BC_AHEAD_NO : x->chunk ? BC_AHEAD_CHUNK : BC_AHEAD_STREAM);
	} else if (x->hint) {
		/* the reader fetches it itself; the stream goes on */
		bc_land(h, x->b, x->n, x->slot, false, BC_AHEAD_NO);
	} else {
		bc_land(h, x->b, x->n, x->slot, false, BC_AHEAD_NO);
		pthread_mutex_lock(&h->mu);
		h->ra_until = 0;
		h->ra_len = 0;
		h->nrq = 0;
		pthread_mutex_unlock(&h->mu);
	}
	bc_flight_end(h, x->b); /* wakes readers waiting for these blocks */
	x->busy = false;
}

static bool ra_stopping(bc_queue *q)
{
	bc_cache *h = ((ra_queue *)q)->h;
	bool stop;

	pthread_mutex_lock(&h->mu);
	stop = h->ra_stop;
	pthread_mutex_unlock(&h->mu);
	return stop;
}

/* The queue's fetches through the transport: its stream op, or one by
 * one with fetch (which retries) for a transport without one. */
static void ra_run(bc_cache *h, ra_queue *q)
{
	bc_transport *t = h->t;
	bc_fetch *f;

	if (t->ops->stream) {
		t->ops->stream(t, &q->q, BC_RA_REQS);
		return;
	}
	while (!ra_stopping(&q->q) && (f = ra_next(&q->q))) {
		f->rc = t->ops->fetch(t, f);
		ra_done(&q->q, f);
	}
}

static void *ra_main(void *arg)
{
	bc_cache *h = arg;
	ra_queue *q = calloc(1, sizeof(*q));
	bool idle = false;              /* a wait timed out and nothing came */

	pthread_setname_np(pthread_self(), H5_THREAD_PREFIX "readahead");
	pthread_mutex_lock(&h->mu);
	if (!q) {
		h->ra_idle = true;      /* no read-ahead; the next kick tries again */
		pthread_mutex_unlock(&h->mu);
		return NULL;
	}
	q->q.next = ra_next;
	q->q.done = ra_done;
	q->q.stopping = ra_stopping;
	q->h = h;
	while (!h->ra_stop) {
		struct timespec until;

		q->started = 0;
		pthread_mutex_unlock(&h->mu);
		ra_run(h, q);
		pthread_mutex_lock(&h->mu);
		if (h->ra_stop)
			break;
		if (q->started) {
			idle = false;
			continue;
		}
		/* kicked since it last found nothing: look again */
		if (h->ra_gen != h->ra_gen_seen)
			continue;
		if (idle) {
			h->ra_idle = true;      /* bc_ra_kick joins us */
			break;
		}
		clock_gettime(CLOCK_REALTIME, &until);  /* ra_wake's clock */
		until.tv_sec += BC_RA_IDLE_S;
		idle = pthread_cond_timedwait(&h->ra_wake, &h->mu, &until) == ETIMEDOUT;
	}
	pthread_mutex_unlock(&h->mu);
	free(q);
	return NULL;
}

/* Starts the worker (h->mu held); without it there is just no read-ahead. */
static void ra_launch(bc_cache *h)
{
	sigset_t all, old;

	/* signals stay with the FUSE threads */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	h->ra_stop = false;
	if (pthread_create(&h->ra_thread, NULL, ra_main, h) == 0) {
		h->ra_started = true;
		h->ra_pid = getpid();
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Work for the worker: started if need be, woken if idle or polling. */
static void ra_kick(bc_cache *h)
{
	if (h->ra_started && h->ra_idle) {
		/* it ended idle; it let go of h->mu before returning */
		pthread_join(h->ra_thread, NULL);
		h->ra_started = false;
		h->ra_idle = false;
	}
	if (!h->ra_started)
		ra_launch(h);
	if (!h->ra_started)
		return;
	h->ra_gen++;
	pthread_cond_signal(&h->ra_wake);
	if (h->t->ops->wake)
		h->t->ops->wake(h->t);
}

/* True if block b was read ahead for a chunk stream, or is being (h->mu
 * held): the stream hints what follows it, bytes after it are no stream. */
static bool chunk_block(const bc_cache *h, uint64_t b)
{
	for (unsigned i = 0; i < h->ninflight; i++)
		if (b >= h->inflight[i].b && b - h->inflight[i].b < h->inflight[i].n)
			return h->inflight[i].chunk;
	for (unsigned i = 0; i < h->nslots; i++)
		if (h->slots[i].idx == b)
			return h->slots[i].chunk;
	return false;
}

/* True if block b is among a chunk stream's chunks (h->mu held): the
 * blocks its hints spanned, or up to ra_max() blocks after them. After
 * them: a stream's readers overtake its hints when the reads that move
 * them come out of order (a loaded machine: chunk_stream.c hints only
 * from reads that follow the previous one). Blocks those readers fetched
 * were taken for a byte stream, whose read-ahead doubles on every block
 * read and can run on past the dataset's end, up to ra_max() blocks, in
 * windows cut among the chunk queue's fetches: what the 1.3x over-fetch
 * of loaded rounds looked like (bench/README.md, issue 23). */
bool bc_chunk_span(const bc_cache *h, uint64_t b)
{
	return h->rq_lo <= h->rq_hi && b >= h->rq_lo && (b <= h->rq_hi || b - h->rq_hi <= ra_max(h));
}

/* True if block b is in a run of chunk blocks waiting to be fetched. */
static bool ra_queued(const bc_cache *h, uint64_t b)
{
	for (unsigned i = 0; i < h->nrq; i++)
		if (b >= h->rq[i].b && b - h->rq[i].b < h->rq[i].n)
			return true;
	return false;
}

void bc_ra_note(bc_cache *h, uint64_t b, bool sequential)
{
	uint64_t max = ra_max(h), until;

	/* the chunks of a stream that hints them (bc_ranges_hint): that
	 * stream says what comes next, not the byte order; a read of blocks
	 * read ahead leaves room for more. The block just after them too: a
	 * reader a little ahead of the hints, or of an earlier stream. And
	 * anything between its chunks: a block a reader fetched itself (out
	 * of order, ahead of the hints) or one read long ago and let go is
	 * no byte stream either. Taken for one, it started windows that
	 * followed the bytes from there, fetching blocks the chunk queue had
	 * fetched and the cache had let go since (a cat of 167 MiB stored
	 * fetched 250-350 MiB) */
	if (bc_chunk_span(h, b) || ra_queued(h, b) || chunk_block(h, b) ||
	    (b > 0 && (ra_queued(h, b - 1) || chunk_block(h, b - 1)))) {
		if (h->nrq)
			ra_kick(h);
		return;
	}
	if (!sequential || max < BC_RA_WIN) {
		/* a jump: what the stream left unread is plain cache now, no
		 * longer counted against the read-ahead */
		if (h->ra_unread)
			for (unsigned i = 0; i < h->nslots; i++)
				h->slots[i].ahead = false;
		h->ra_unread = 0;
		h->ra_until = 0;
		h->ra_len = 0;
		return;
	}
	h->ra_len = h->ra_len ? h->ra_len * 2 : 2 * BC_RA_WIN;
	if (h->ra_len > max)
		h->ra_len = max;
	until = b + 1 + h->ra_len;
	/* inside an object read front to back: not past its end */
	h->ra_capped = false;
	for (unsigned i = 0; i < h->nextents; i++)
		if (b >= h->ext[i].lo && b < h->ext[i].hi) {
			if (until >= h->ext[i].hi) {
				until = h->ext[i].hi;
				h->ra_capped = true;
			}
			break;
		}
	/* no stream yet, the reader passed the worker, or the worker is
	 * further than this stream reads ahead: another stream elsewhere
	 * (two cats at once), and the worker turns to this one */
	if (h->ra_until == 0 || h->ra_next <= b || h->ra_next > until) {
		h->ra_next = b + 1;
		h->ra_until = until;
	} else if (until > h->ra_until) {
		h->ra_until = until;
	}
	ra_kick(h);
}

void bc_ra_hint(bc_cache *h, uint64_t b)
{
	for (unsigned i = 0; i < h->nhint; i++)
		if (h->hint[i] == b)
			return;
	if (h->nhint == BC_HINTS)
		return; /* a hint: the readers fetch what is not queued */
	h->hint[h->nhint++] = b;
	ra_kick(h);
}

/* The chunks a stream reads next (chunk_stream.c, the ranges_hint op):
 * queued for the worker, which fetches them before they are asked for. */
void bc_ranges_hint(h5_source *s, const h5_range *r, size_t n, bool restart)
{
	bc_cache *h = (bc_cache *)s;

	pthread_mutex_lock(&h->mu);
	bc_ra_forked(h);
	if (restart) {
		h->nrq = 0;
		/* the span goes with a stream elsewhere, not with a stream
		 * that starts over among or just after its own chunks (reads
		 * that came far out of order) */
		if (!n || r[0].off / BC_BLOCK < h->rq_lo || r[0].off / BC_BLOCK > h->rq_hi + BC_RA_MAX) {
			h->rq_lo = UINT64_MAX;
			h->rq_hi = 0;
		}
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t lo = r[i].off / BC_BLOCK, hi = (r[i].off + r[i].len + BC_BLOCK - 1) / BC_BLOCK;

		if (lo < h->rq_lo)
			h->rq_lo = lo;
		if (hi > h->rq_hi)
			h->rq_hi = hi;
		/* neighbours coalesce when their blocks touch (a gap of less
		 * than a block: the cache fetches whole blocks anyway) */
		if (h->nrq && lo >= h->rq[h->nrq - 1].b && lo <= h->rq[h->nrq - 1].b + h->rq[h->nrq - 1].n) {
			if (hi > h->rq[h->nrq - 1].b + h->rq[h->nrq - 1].n)
				h->rq[h->nrq - 1].n = hi - h->rq[h->nrq - 1].b;
		} else if (h->nrq < BC_RQ) {
			h->rq[h->nrq].b = lo;
			h->rq[h->nrq++].n = hi - lo;
		} /* else a hint: the readers fetch what is not queued */
	}
	/* a byte-stream window among the chunks fetches what the queue
	 * fetches, or fetched and the cache let go: stopped */
	if (h->ra_until && h->ra_next >= h->rq_lo && h->ra_next <= h->rq_hi) {
		h->ra_until = 0;
		h->ra_len = 0;
	}
	if (h->nrq)
		ra_kick(h);
	pthread_mutex_unlock(&h->mu);
}

void bc_ra_forked(bc_cache *h)
{
	if (!h->ra_started || h->ra_pid == getpid())
		return;
	/* a child forked after the worker started (fuse_daemonize after
	 * the open): the thread did not come along, its fetches never
	 * land. Forget them; the transport's stream state (a curl multi
	 * handle) is left to the parent. */
	for (unsigned i = 0; i < h->ninflight;)
		if (h->inflight[i].bg)
			h->inflight[i] = h->inflight[--h->ninflight];
		else
			i++;
	for (unsigned i = 0; i < h->nslots; i++)
		if (h->slots[i].loading == BC_LOAD_BG) {
			h->slots[i].loading = BC_LOAD_NONE;
			h->slots[i].used = 0;
		}
	if (h->t->ops->forked)
		h->t->ops->forked(h->t);
	h->ra_started = false;
	h->ra_idle = false;
	h->ra_until = 0;
	h->ra_len = 0;
	h->nhint = 0;
	pthread_cond_broadcast(&h->landed);
}

void bc_ra_stop(bc_cache *h)
{
	bool mine;

	pthread_mutex_lock(&h->mu);
	bc_ra_forked(h);
	mine = h->ra_started;
	h->ra_stop = true;
	pthread_cond_signal(&h->ra_wake);
	if (mine && h->t->ops->wake)
		h->t->ops->wake(h->t);
	pthread_mutex_unlock(&h->mu);
	if (mine)
		pthread_join(h->ra_thread, NULL);   /* also one that ended idle */
	h->ra_started = false;
	h->ra_idle = false;
}
