/* source_http_ra.c - background read-ahead of the HTTP source: one
 * worker thread per source, started at the first sequential stream, keeps
 * up to HTTP_RA_REQS ranged GETs of HTTP_RA_WIN blocks in flight through a
 * curl multi handle (each on its own pooled connection), so a `cat` over a
 * slow link overlaps round trips instead of waiting for each.
 *
 * The reading threads (http_read) say where the stream is with
 * http_ra_note(): a sequential miss or the first read of a block read
 * ahead moves the target [ra_next, ra_until) forward (the distance starts
 * at two windows and doubles up to HTTP_RA_MAX blocks, at most half the
 * cache, so blocks read ahead do not evict each other or the blocks being
 * read); a jump empties it. A stream over a chunked dataset says which
 * chunks it reads next instead (http_ranges_hint, from chunk_stream.c
 * through the ranges_hint op): those runs of blocks are fetched first,
 * in its order, and its reads move no byte-stream target.
 * Blocks being fetched are in h->inflight, so a reader waits for them
 * rather than asking twice. A background fetch that fails is dropped (and
 * stops the stream): the reader then fetches the block itself, with
 * retries, and reports EIO if that fails too. Nothing is retried here.
 *
 * The worker is a thread of its own, not a job of the engine context's
 * pool (pool.c): it spends a stream's life blocked in curl_multi_poll, not
 * decoding, and would hold a decoding worker for all that time. So that a
 * context of many remote files does not keep a thread per file that was
 * once streamed, the worker ends after HTTP_RA_IDLE_S seconds without
 * work, and the next stream starts another. */
#define _GNU_SOURCE /* pthread_setname_np */
#include <config.h>
#include "source_http_int.h"
#include "pool.h"
#include "source.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HTTP_RA_IDLE_S 10               /* the worker ends after this long idle */

typedef struct ra_xfer {
	CURL *c;                     /* NULL: this slot is free */
	struct curl_slist *hd;
	http_reply r;
	uint64_t b, n;
	bool hint;                   /* a block of metadata (http_ra_hint) */
	bool chunk;                  /* chunks of a stream (http_ranges_hint) */
	unsigned slot[HTTP_RA_MAX];  /* the slots it lands in (http_reserve) */
	uint8_t *seg[HTTP_RA_MAX];
} ra_xfer;

/* Blocks read ahead of the readers at most: half the cache keeps what
 * the readers need. */
static uint64_t ra_max(const http_source *h)
{
	return h->nslots / 2 < HTTP_RA_MAX ? h->nslots / 2 : HTTP_RA_MAX;
}

/* The next window to fetch, registered in h->inflight (h->mu held);
 * false if there is none now. A window stops at a block already cached or
 * in flight; a window shorter than HTTP_RA_WIN only there or at the end
 * of the object, else it waits for the stream to move on (no trickle of
 * one-block requests). */
static bool ra_pick(http_source *h, ra_xfer *x)
{
	uint64_t nb = http_nblocks(h), until = h->ra_until < nb ? h->ra_until : nb;
	uint64_t b = h->ra_next, n = 0, win = h->ra_len / HTTP_RA_REQS, held = h->ra_unread;
	bool capped = false;

	/* the requests in flight cover the distance read ahead */
	if (win < HTTP_RA_WIN)
		win = HTTP_RA_WIN;
	if (h->ra_stop || h->ninflight >= HTTP_POOL)
		return false;
	/* hinted metadata first: a reader is about to wait for it */
	while (h->nhint) {
		uint64_t hb = h->hint[0];

		memmove(h->hint, h->hint + 1, --h->nhint * sizeof(h->hint[0]));
		if (http_cached(h, hb) || http_in_flight(h, hb) || http_reserve(h, 1, x->slot, x->seg,
										 HTTP_LOAD_BG) == 0)
			continue;
		h->inflight[h->ninflight].b = hb;
		h->inflight[h->ninflight].n = 1;
		h->inflight[h->ninflight].chunk = false;
		h->inflight[h->ninflight++].bg = true;
		x->b = hb;
		x->n = 1;
		x->hint = true;
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

		while (cb < ce && (http_cached(h, cb) || http_in_flight(h, cb)))
			cb++;
		while (cb + cn < ce && cn < cw && !http_cached(h, cb + cn) && !http_in_flight(h, cb + cn))
			cn++;
		if (cn == 0) {
			if (cb == ce)
				memmove(h->rq, h->rq + 1, --h->nrq * sizeof(h->rq[0]));
			else
				h->rq[0].b = cb;
			continue;
		}
		cn = http_reserve(h, cn, x->slot, x->seg, HTTP_LOAD_BG);
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
	while (b < until && (http_cached(h, b) || http_in_flight(h, b)))
		b++;
	h->ra_next = b;
	/* never among a chunk stream's blocks (http_ranges_hint's span): its
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
	while (b + n < until && n < win && !http_cached(h, b + n) && !http_in_flight(h, b + n))
		n++;
	if (n == 0 || (n < HTTP_RA_WIN && b + n == until && until < nb && !h->ra_capped && !capped))
		return false;
	/* whole pages of a paged file (the next window starts on a page) */
	if (h->page_blocks > 1 && b + n < nb && n > h->page_blocks) {
		uint64_t past = (b + n - h->page_base / HTTP_BLOCK) % h->page_blocks;

		n -= past;
	}
	/* straight into slots; fewer if pins and other transfers hold the
	 * rest (the next pick continues from there) */
	n = http_reserve(h, n, x->slot, x->seg, HTTP_LOAD_BG);
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

/* Starts the GET of window x->b, x->n on the multi handle (h->mu not held). */
static int ra_start(http_source *h, ra_xfer *x)
{
	uint64_t off = x->b * HTTP_BLOCK, end = (x->b + x->n) * HTTP_BLOCK;

	if (end > h->base.size)
		end = h->base.size;
	x->c = http_handle_get(h);
	if (!x->c)
		return H5_ERR_NOMEM;
	x->hd = http_request(h, x->c, &x->r, off, x->seg, (size_t)(end - off));
	if (curl_multi_add_handle(h->multi, x->c) != CURLM_OK) {
		http_request_done(h, x->c, x->hd, CURLE_FAILED_INIT);
		x->c = NULL;
		return H5_ERR_IO;
	}
	return 0;
}

/* A transfer ended (cc: its result; aborted at stop): the blocks into the
 * cache if the reply is right, else the stream stops (h->mu not held). */
static void ra_finish(http_source *h, ra_xfer *x, CURLcode cc, bool aborted)
{
	uint64_t len = (x->b + x->n) * HTTP_BLOCK;
	long status = 0;
	bool retry;

	if (len > h->base.size)
		len = h->base.size;
	len -= x->b * HTTP_BLOCK;
	curl_multi_remove_handle(h->multi, x->c);
	curl_easy_getinfo(x->c, CURLINFO_RESPONSE_CODE, &status);
	http_request_done(h, x->c, x->hd, aborted ? CURLE_ABORTED_BY_CALLBACK : cc);
	if (!aborted && http_verdict(h, &x->r, cc, status, x->b * HTTP_BLOCK, (size_t)len, &retry) == 0) {
		http_land(h, x->b, x->n, x->slot, true,
			  x->hint ? HTTP_AHEAD_NO : x->chunk ? HTTP_AHEAD_CHUNK : HTTP_AHEAD_STREAM);
	} else if (x->hint) {
		/* the reader fetches it itself; the stream goes on */
		http_land(h, x->b, x->n, x->slot, false, HTTP_AHEAD_NO);
	} else {
		http_land(h, x->b, x->n, x->slot, false, HTTP_AHEAD_NO);
		pthread_mutex_lock(&h->mu);
		h->ra_until = 0;
		h->ra_len = 0;
		h->nrq = 0;
		pthread_mutex_unlock(&h->mu);
	}
	http_flight_end(h, x->b); /* wakes readers waiting for these blocks */
	memset(x, 0, sizeof(*x));
}

static void *ra_main(void *arg)
{
	http_source *h = arg;
	ra_xfer x[HTTP_RA_REQS];
	unsigned nrun = 0;
	bool idle = false;              /* a wait timed out and nothing came */

	pthread_setname_np(pthread_self(), H5_THREAD_PREFIX "readahead");

	memset(x, 0, sizeof(x));
	pthread_mutex_lock(&h->mu);
	while (!h->ra_stop) {
		while (nrun < HTTP_RA_REQS) {
			ra_xfer *f = x;

			while (f->c)
				f++;
			if (!ra_pick(h, f))
				break;
			pthread_mutex_unlock(&h->mu);
			if (ra_start(h, f) < 0) {
				http_land(h, f->b, f->n, f->slot, false, HTTP_AHEAD_NO);
				http_flight_end(h, f->b);
				pthread_mutex_lock(&h->mu);
				h->ra_until = 0;
				break;
			}
			nrun++;
			pthread_mutex_lock(&h->mu);
		}
		if (h->ra_stop)
			break;
		if (nrun == 0) {
			struct timespec until;

			if (idle) {
				h->ra_idle = true;      /* ra_kick joins us */
				break;
			}
			clock_gettime(CLOCK_REALTIME, &until);  /* ra_wake's clock */
			until.tv_sec += HTTP_RA_IDLE_S;
			idle = pthread_cond_timedwait(&h->ra_wake, &h->mu, &until) == ETIMEDOUT;
			continue;
		}
		idle = false;
		pthread_mutex_unlock(&h->mu);
		int still = 0, q;
		CURLMsg *m;

		curl_multi_perform(h->multi, &still);
		while ((m = curl_multi_info_read(h->multi, &q)))
			for (unsigned i = 0; m->msg == CURLMSG_DONE && i < HTTP_RA_REQS; i++)
				if (x[i].c == m->easy_handle) {
					ra_finish(h, &x[i], m->data.result, false);
					nrun--;
					break;
				}
		/* bounded: http_ra_note() and http_ra_stop() wake it early */
		if (still)
			curl_multi_poll(h->multi, NULL, 0, 1000, NULL);
		pthread_mutex_lock(&h->mu);
	}
	pthread_mutex_unlock(&h->mu);
	for (unsigned i = 0; i < HTTP_RA_REQS; i++)
		if (x[i].c)
			ra_finish(h, &x[i], CURLE_OK, true);
	return NULL;
}

/* Starts the worker (h->mu held); without it there is just no read-ahead. */
static void ra_launch(http_source *h)
{
	sigset_t all, old;

	if (!h->multi && !(h->multi = curl_multi_init()))
		return;
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
static void ra_kick(http_source *h)
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
	pthread_cond_signal(&h->ra_wake);
	curl_multi_wakeup(h->multi);
}

/* True if block b was read ahead for a chunk stream, or is being (h->mu
 * held): the stream hints what follows it, bytes after it are no stream. */
static bool chunk_block(const http_source *h, uint64_t b)
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
bool http_chunk_span(const http_source *h, uint64_t b)
{
	return h->rq_lo <= h->rq_hi && b >= h->rq_lo && (b <= h->rq_hi || b - h->rq_hi <= ra_max(h));
}

/* True if block b is in a run of chunk blocks waiting to be fetched. */
static bool ra_queued(const http_source *h, uint64_t b)
{
	for (unsigned i = 0; i < h->nrq; i++)
		if (b >= h->rq[i].b && b - h->rq[i].b < h->rq[i].n)
			return true;
	return false;
}

void http_ra_note(http_source *h, uint64_t b, bool sequential)
{
	uint64_t max = ra_max(h), until;

	/* the chunks of a stream that hints them (http_ranges_hint): that
	 * stream says what comes next, not the byte order; a read of blocks
	 * read ahead leaves room for more. The block just after them too: a
	 * reader a little ahead of the hints, or of an earlier stream. And
	 * anything between its chunks: a block a reader fetched itself (out
	 * of order, ahead of the hints) or one read long ago and let go is
	 * no byte stream either. Taken for one, it started windows that
	 * followed the bytes from there, fetching blocks the chunk queue had
	 * fetched and the cache had let go since (a cat of 167 MiB stored
	 * fetched 250-350 MiB) */
	if (http_chunk_span(h, b) || ra_queued(h, b) || chunk_block(h, b) ||
	    (b > 0 && (ra_queued(h, b - 1) || chunk_block(h, b - 1)))) {
		if (h->nrq)
			ra_kick(h);
		return;
	}
	if (!sequential || max < HTTP_RA_WIN) {
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
	h->ra_len = h->ra_len ? h->ra_len * 2 : 2 * HTTP_RA_WIN;
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

void http_ra_hint(http_source *h, uint64_t b)
{
	for (unsigned i = 0; i < h->nhint; i++)
		if (h->hint[i] == b)
			return;
	if (h->nhint == HTTP_HINTS)
		return; /* a hint: the readers fetch what is not queued */
	h->hint[h->nhint++] = b;
	ra_kick(h);
}

/* The chunks a stream reads next (chunk_stream.c, the ranges_hint op):
 * queued for the worker, which fetches them before they are asked for. */
void http_ranges_hint(h5_source *s, const h5_range *r, size_t n, bool restart)
{
	http_source *h = (http_source *)s;

	pthread_mutex_lock(&h->mu);
	http_ra_forked(h);
	if (restart) {
		h->nrq = 0;
		/* the span goes with a stream elsewhere, not with a stream
		 * that starts over among or just after its own chunks (reads
		 * that came far out of order) */
		if (!n || r[0].off / HTTP_BLOCK < h->rq_lo || r[0].off / HTTP_BLOCK > h->rq_hi + HTTP_RA_MAX) {
			h->rq_lo = UINT64_MAX;
			h->rq_hi = 0;
		}
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t lo = r[i].off / HTTP_BLOCK, hi = (r[i].off + r[i].len + HTTP_BLOCK - 1) / HTTP_BLOCK;

		if (lo < h->rq_lo)
			h->rq_lo = lo;
		if (hi > h->rq_hi)
			h->rq_hi = hi;
		/* neighbours coalesce when their blocks touch (a gap of less
		 * than a block: the cache fetches whole blocks anyway) */
		if (h->nrq && lo >= h->rq[h->nrq - 1].b && lo <= h->rq[h->nrq - 1].b + h->rq[h->nrq - 1].n) {
			if (hi > h->rq[h->nrq - 1].b + h->rq[h->nrq - 1].n)
				h->rq[h->nrq - 1].n = hi - h->rq[h->nrq - 1].b;
		} else if (h->nrq < HTTP_RQ) {
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

void http_ra_forked(http_source *h)
{
	if (!h->ra_started || h->ra_pid == getpid())
		return;
	/* a child forked after the worker started (fuse_daemonize after
	 * the open): the thread did not come along, its fetches never
	 * land. Forget them; the multi handle is left to the parent. */
	for (unsigned i = 0; i < h->ninflight;)
		if (h->inflight[i].bg)
			h->inflight[i] = h->inflight[--h->ninflight];
		else
			i++;
	for (unsigned i = 0; i < h->nslots; i++)
		if (h->slots[i].loading == HTTP_LOAD_BG) {
			h->slots[i].loading = HTTP_LOAD_NONE;
			h->slots[i].used = 0;
		}
	h->multi = NULL;
	h->ra_started = false;
	h->ra_idle = false;
	h->ra_until = 0;
	h->ra_len = 0;
	h->nhint = 0;
	pthread_cond_broadcast(&h->landed);
}

void http_ra_stop(http_source *h)
{
	bool mine;

	pthread_mutex_lock(&h->mu);
	http_ra_forked(h);
	mine = h->ra_started;
	h->ra_stop = true;
	pthread_cond_signal(&h->ra_wake);
	if (mine)
		curl_multi_wakeup(h->multi);
	pthread_mutex_unlock(&h->mu);
	if (mine)
		pthread_join(h->ra_thread, NULL);   /* also one that ended idle */
	h->ra_started = false;
	h->ra_idle = false;
	if (h->multi)
		curl_multi_cleanup(h->multi);
	h->multi = NULL;
}
