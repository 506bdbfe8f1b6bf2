/* blockcache_int.h - what blockcache.c (slots, pins, reads, open) and
 * blockcache_ra.c (the background read-ahead worker) share: the cache's
 * state and the helpers they call. Private to those two files (and the
 * unit tests of their parts). */
#ifndef H5_BLOCKCACHE_INT_H
#define H5_BLOCKCACHE_INT_H

#include "base.h"
#include "blockcache.h"
#include "source.h"

#include <pthread.h>
#include <sys/types.h>

#define BC_POOL 16                      /* fetches in flight at most (readers and worker) */
#define BC_RA_WIN 8                     /* blocks per read-ahead request, at least (4 MiB) */
#define BC_RA_REQS BC_STREAM_MAX        /* read-ahead requests in flight at most */
#define BC_RA_MAX 256                   /* blocks read ahead of the stream (128 MiB) */
#define BC_RA_MIN_READ ((size_t)32 << 10) /* smaller reads start no stream */
#define BC_HINTS 64                     /* metadata blocks queued by bc_prefetch */
#define BC_EXTENTS 8                    /* objects read front to back remembered (bc_extent_hint) */
#define BC_RQ 256                       /* runs of chunk blocks queued (bc_ranges_hint) */

enum { BC_LOAD_NONE, BC_LOAD_FG, BC_LOAD_BG };
/* how blocks landed (bc_land): fetched for a reader, read ahead of a
 * byte stream, read ahead as the chunks of a chunk stream, or fetched by
 * a reader among a chunk stream's chunks (it overtook the read-ahead):
 * chunk data like the third, but read at once, not ahead */
enum { BC_AHEAD_NO, BC_AHEAD_STREAM, BC_AHEAD_CHUNK, BC_FETCHED_CHUNK };

/* Ticks (block uses) after which a chunk block read whole is done with:
 * the chunks in it were decoded long since (bc_slot_victim). */
#define BC_CHUNK_DONE ((uint64_t)64)
/* ... and after which any block is plain LRU: far beyond how far out of
 * order a stream's reads come */
#define BC_CHUNK_STALE ((uint64_t)1024)

typedef struct bc_blk {
	uint64_t idx;                /* block number; UINT64_MAX: empty */
	uint64_t used;               /* LRU tick */
	bool ahead;                  /* read ahead and not read since */
	bool chunk;                  /* read ahead for a chunk stream (bc_ranges_hint) */
	uint32_t nread;              /* bytes read from it since it landed (a re-read
				      * counts again) */
	unsigned refs;               /* pins (bc_pin): never evicted while > 0 */
	uint8_t loading;             /* a transfer writes into it (not cached yet):
				      * LOAD_FG a reader's fetch, LOAD_BG the read-ahead */
	uint8_t *p;
} bc_blk;

typedef struct bc_cache {
	h5_source base;
	bc_transport *t;
	char *name;
	pthread_mutex_t mu;          /* everything below */
	pthread_cond_t landed;       /* a fetch finished */
	struct { uint64_t b, n; bool bg, chunk; } inflight[BC_POOL]; /* block ranges being fetched */
	unsigned ninflight;
	bc_blk *slots;
	unsigned nslots;
	uint8_t *arena;              /* the slots' bytes, one mapping (slots_map) */
	size_t arena_len;
	unsigned npinned;            /* pins on all slots together (bc_pin) */
	uint64_t tick;
	/* paged aggregation (bc_page_hint): fetches cover whole pages */
	uint64_t page, page_base;
	uint64_t page_blocks;        /* blocks a page, if pages are block aligned */
	/* background read-ahead (blockcache_ra.c): blocks [ra_next,
	 * ra_until) are to be fetched; ra_until 0: no stream */
	uint64_t ra_next, ra_until, ra_len;
	unsigned ra_unread;          /* slots read ahead and not read since */
	bool ra_started, ra_stop;
	bool ra_idle;                /* the worker ended, idle (joined at the next kick) */
	uint64_t ra_gen;             /* work given to the worker (bc_ra_kick) ... */
	uint64_t ra_gen_seen;        /* ... as of its last look for work that found none */
	pid_t ra_pid;                /* the process whose thread ra_thread is */
	pthread_t ra_thread;
	pthread_cond_t ra_wake;      /* work for an idle worker, or stop */
	/* blocks of metadata about to be read (bc_prefetch), fetched by the
	 * worker before the stream's windows, one block a request */
	uint64_t hint[BC_HINTS];
	unsigned nhint;
	/* objects read front to back (contiguous datasets), in blocks
	 * [lo, hi): a stream inside one reads ahead no further than hi;
	 * the most recently announced first */
	struct { uint64_t lo, hi; } ext[BC_EXTENTS];
	unsigned nextents;
	bool ra_capped;              /* ra_until is an object's end, not the distance */
	/* the chunks ahead of a stream over a chunked dataset (bc_ranges_hint)
	 * as runs of blocks, in the order the stream reads them: fetched by
	 * the worker after the metadata hints, before the byte stream's
	 * windows. Reads of these blocks (queued, or landed with .chunk)
	 * start no byte stream, whose read-ahead would follow the bytes past
	 * the chunks */
	struct { uint64_t b, n; } rq[BC_RQ];
	unsigned nrq;
	/* the blocks the chunk stream's hints spanned since it started (or
	 * started over elsewhere), [rq_lo, rq_hi), rq_lo UINT64_MAX: none:
	 * reads there and at rq_hi move no byte-stream target */
	uint64_t rq_lo, rq_hi;
} bc_cache;

/* blockcache.c */
bool bc_cached(const bc_cache *h, uint64_t b);
bool bc_in_flight(const bc_cache *h, uint64_t b);
uint64_t bc_reserve(bc_cache *h, uint64_t n, unsigned *slot, uint8_t **seg, uint8_t loading);
void bc_land(bc_cache *h, uint64_t b, uint64_t n, const unsigned *slot, bool ok, uint8_t ahead);
void bc_flight_end(bc_cache *h, uint64_t b);
uint64_t bc_nblocks(const bc_cache *h);
bc_blk *bc_slot_victim(bc_blk *slots, unsigned n, uint64_t tick);

/* blockcache_ra.c; h->mu held for note, hint and forked, not for stop */
void bc_ra_note(bc_cache *h, uint64_t b, bool sequential);
void bc_ra_forked(bc_cache *h);
void bc_ra_hint(bc_cache *h, uint64_t b);
bool bc_chunk_span(const bc_cache *h, uint64_t b);
void bc_ranges_hint(h5_source *s, const h5_range *r, size_t n, bool restart); /* h->mu not held */
void bc_ra_stop(bc_cache *h);

#endif
