/* source_http_int.h - what source_http.c (cache, pins, reads, open),
 * source_http_req.c (requests and retries) and source_http_ra.c (the
 * background read-ahead worker) share: the source's state and the helpers
 * they call. Private to those three files. */
#ifndef H5_SOURCE_HTTP_INT_H
#define H5_SOURCE_HTTP_INT_H

#include "base.h"
#include "source.h"
#include "source_impl.h"

#include <curl/curl.h>
#include <pthread.h>
#include <sys/types.h>

#define HTTP_BLOCK ((size_t)512 << 10)  /* cache block: small, metadata is scattered */
#define HTTP_FIRST ((size_t)4 << 20)    /* the first fetch: superblock, root metadata */
#define HTTP_POOL 16                    /* idle easy handles kept; fetches in flight */
#define HTTP_RA_WIN 8                   /* blocks per read-ahead request, at least (4 MiB) */
#define HTTP_RA_REQS 8                  /* read-ahead requests in flight at most */
#define HTTP_RA_MAX 256                 /* blocks read ahead of the stream (128 MiB) */
#define HTTP_RA_MIN_READ ((size_t)32 << 10) /* smaller reads start no stream */
#define HTTP_HINTS 64                   /* metadata blocks queued by http_prefetch */
#define HTTP_EXTENTS 8                  /* objects read front to back remembered (http_extent_hint) */
#define HTTP_RQ 256                     /* runs of chunk blocks queued (http_ranges_hint) */

enum { HTTP_LOAD_NONE, HTTP_LOAD_FG, HTTP_LOAD_BG };
/* how blocks landed (http_land): fetched for a reader, read ahead of a
 * byte stream, read ahead as the chunks of a chunk stream, or fetched by
 * a reader among a chunk stream's chunks (it overtook the read-ahead):
 * chunk data like the third, but read at once, not ahead */
enum { HTTP_AHEAD_NO, HTTP_AHEAD_STREAM, HTTP_AHEAD_CHUNK, HTTP_FETCHED_CHUNK };

/* Ticks (block uses) after which a chunk block read whole is done with:
 * the chunks in it were decoded long since (http_slot_victim). */
#define HTTP_CHUNK_DONE ((uint64_t)64)
/* ... and after which any block is plain LRU: far beyond how far out of
 * order a stream's reads come */
#define HTTP_CHUNK_STALE ((uint64_t)1024)

typedef struct http_blk {
	uint64_t idx;                /* block number; UINT64_MAX: empty */
	uint64_t used;               /* LRU tick */
	bool ahead;                  /* read ahead and not read since */
	bool chunk;                  /* read ahead for a chunk stream (http_ranges_hint) */
	uint32_t nread;              /* bytes read from it since it landed (a re-read
				      * counts again) */
	unsigned refs;               /* pins (http_pin): never evicted while > 0 */
	uint8_t loading;             /* a transfer writes into it (not cached yet):
				      * LOAD_FG a reader's fetch, LOAD_BG the read-ahead */
	uint8_t *p;
} http_blk;

typedef struct http_source {
	h5_source base;
	char *url, *name, *etag, *userpwd, *sigv4, *token_hdr;
	bool replaced;               /* a reply said the object changed (atomic) */
	unsigned retries;
	long timeout_s;
	CURLSH *share;
	pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
	pthread_mutex_t mu;          /* everything below */
	pthread_cond_t landed;       /* a fetch finished */
	struct { uint64_t b, n; bool bg, chunk; } inflight[HTTP_POOL]; /* block ranges being fetched */
	unsigned ninflight;
	CURL *pool[HTTP_POOL];
	unsigned npool;
	http_blk *slots;
	unsigned nslots;
	uint8_t *arena;              /* the slots' bytes, one mapping (slots_map) */
	size_t arena_len;
	unsigned npinned;            /* pins on all slots together (http_pin) */
	uint64_t tick;
	/* paged aggregation (http_page_hint): fetches cover whole pages */
	uint64_t page, page_base;
	uint64_t page_blocks;        /* blocks a page, if pages are block aligned */
	/* background read-ahead (source_http_ra.c): blocks [ra_next,
	 * ra_until) are to be fetched; ra_until 0: no stream */
	uint64_t ra_next, ra_until, ra_len;
	unsigned ra_unread;          /* slots read ahead and not read since */
	bool ra_started, ra_stop;
	bool ra_idle;                /* the worker ended, idle (joined at the next kick) */
	pid_t ra_pid;                /* the process whose thread ra_thread is */
	pthread_t ra_thread;
	pthread_cond_t ra_wake;      /* work for an idle worker, or stop */
	/* blocks of metadata about to be read (http_prefetch), fetched by the
	 * worker before the stream's windows, one block a request */
	uint64_t hint[HTTP_HINTS];
	unsigned nhint;
	/* objects read front to back (contiguous datasets), in blocks
	 * [lo, hi): a stream inside one reads ahead no further than hi;
	 * the most recently announced first */
	struct { uint64_t lo, hi; } ext[HTTP_EXTENTS];
	unsigned nextents;
	bool ra_capped;              /* ra_until is an object's end, not the distance */
	/* the chunks ahead of a stream over a chunked dataset (http_ranges_hint)
	 * as runs of blocks, in the order the stream reads them: fetched by
	 * the worker after the metadata hints, before the byte stream's
	 * windows. Reads of these blocks (queued, or landed with .chunk)
	 * start no byte stream, whose read-ahead would follow the bytes past
	 * the chunks */
	struct { uint64_t b, n; } rq[HTTP_RQ];
	unsigned nrq;
	/* the blocks the chunk stream's hints spanned since it started (or
	 * started over elsewhere), [rq_lo, rq_hi), rq_lo UINT64_MAX: none:
	 * reads there and at rq_hi move no byte-stream target */
	uint64_t rq_lo, rq_hi;
	CURLM *multi;
} http_source;

/* One request's reply, filled by the callbacks: the body lands in seg[0],
 * seg[1], ... HTTP_BLOCK bytes each (the cache slots it is fetched into:
 * no copy afterwards). */
typedef struct http_reply {
	uint8_t *const *seg;
	size_t cap, got;
	bool overflow;
	uint64_t cr_first, cr_last, cr_total;
	bool have_cr;
	char etag[256];
	char cerr[CURL_ERROR_SIZE];
} http_reply;

/* source_http_req.c */
CURL *http_handle_get(http_source *h);
void http_handle_put(http_source *h, CURL *c);
struct curl_slist *http_request(http_source *h, CURL *c, http_reply *r, uint64_t off, uint8_t *const *seg,
				size_t len);
void http_request_done(http_source *h, CURL *c, struct curl_slist *hd, CURLcode cc);
int http_verdict(http_source *h, const http_reply *r, CURLcode cc, long status, uint64_t off, size_t len,
		 bool *retry);
/* One ranged GET of [off, off+len) into seg, retried; *r the reply. */
int http_get_range(http_source *h, http_reply *r, uint64_t off, uint8_t *const *seg, size_t len);

/* source_http.c */
bool http_cached(const http_source *h, uint64_t b);
bool http_in_flight(const http_source *h, uint64_t b);
uint64_t http_reserve(http_source *h, uint64_t n, unsigned *slot, uint8_t **seg, uint8_t loading);
void http_land(http_source *h, uint64_t b, uint64_t n, const unsigned *slot, bool ok, uint8_t ahead);
void http_flight_end(http_source *h, uint64_t b);
uint64_t http_nblocks(const http_source *h);
http_blk *http_slot_victim(http_blk *slots, unsigned n, uint64_t tick);

/* source_http_ra.c; h->mu held for note and forked, not for stop */
void http_ra_note(http_source *h, uint64_t b, bool sequential);
void http_ra_forked(http_source *h);
void http_ra_hint(http_source *h, uint64_t b);
bool http_chunk_span(const http_source *h, uint64_t b);
void http_ranges_hint(h5_source *s, const h5_range *r, size_t n, bool restart); /* h->mu not held */
void http_ra_stop(http_source *h);

#endif
