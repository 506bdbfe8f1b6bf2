/* blockcache.h - a read-only byte source for objects behind a network:
 * a block cache (slots, pins, victim choice, read-ahead, page hints) over
 * a transport that only fetches byte ranges.
 *
 * The cache knows nothing of HTTP: a transport (source_http.c, and S3
 * through it) is a bc_transport_ops table that fetches a range straight
 * into the cache's slots, and runs a stream of background fetches
 * several at once. bc_source_open() makes an h5_source of the two: the
 * transport then belongs to it. A new remote protocol is a transport,
 * never another cache. */
#ifndef H5_BLOCKCACHE_H
#define H5_BLOCKCACHE_H

#include "source.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BC_BLOCK ((size_t)512 << 10)    /* cache block: small, metadata is scattered */
#define BC_FIRST ((size_t)4 << 20)      /* the first fetch: superblock, root metadata */
#define BC_STREAM_MAX 8                 /* background fetches in flight at most */

/* One range to fetch: [off, off+len) of the object into seg[0], seg[1],
 * ... BC_BLOCK bytes each (the cache slots it lands in: no copy
 * afterwards). The transport fills the results. */
typedef struct bc_fetch {
	uint64_t off;
	size_t len;
	uint8_t *const *seg;
	int rc;                 /* 0, or the error (message set) */
	size_t got;             /* bytes received (the first fetch may get fewer
				 * than asked: a small object) */
	uint64_t total;         /* the object's size, as the reply said */
	int64_t mtime;          /* its modification time (seconds; 0: not said) */
} bc_fetch;

/* The background fetches the cache wants (its read-ahead worker), handed
 * to the transport's stream op one at a time as it has room for them. */
typedef struct bc_queue bc_queue;
struct bc_queue {
	/* The next fetch to start, or NULL: none now (asked again after each
	 * end and after each wake). */
	bc_fetch *(*next)(bc_queue *q);
	/* f ended, f->rc its result (aborted ones too). */
	void (*done)(bc_queue *q, bc_fetch *f);
	/* True when the cache closes: what is in flight is to be aborted. */
	bool (*stopping)(bc_queue *q);
};

typedef struct bc_transport bc_transport;

typedef struct bc_transport_ops {
	/* Fetches one range, retried as the transport's policy says
	 * (a reader's miss, the first fetch, which pins the object's
	 * identity: size and version). A range past the end is H5_ERR_FORMAT,
	 * a missing object H5_ERR_NOTFOUND, else H5_ERR_IO. Required. */
	int (*fetch)(bc_transport *t, bc_fetch *f);
	/* Background fetches (the read-ahead): started as q->next() gives
	 * them, up to max at once (concurrently where the transport can), no
	 * retries, each reported by q->done(); returns when next() has none
	 * and none is in flight, or at q->stopping() after aborting the rest.
	 * One thread at a time. NULL: fetched one by one with fetch. */
	void (*stream)(bc_transport *t, bc_queue *q, unsigned max);
	/* Ask q->next() again soon (new work for a stream under way); called
	 * with the cache's lock held. NULL: nothing to do. */
	void (*wake)(bc_transport *t);
	/* In a child forked while a stream was under way: the parent's
	 * stream state is forgotten, not used (the lock held). NULL: none. */
	void (*forked)(bc_transport *t);
	/* Whether the object changed since the first fetch (h5_source_ops
	 * changed). NULL: never known. */
	int (*changed)(bc_transport *t, int probe);
	/* After the last stream ended. */
	void (*close)(bc_transport *t);
} bc_transport_ops;

/* Transports embed this as their first member. */
struct bc_transport {
	const bc_transport_ops *ops;
};

/* A read-only source over transport t, which it owns from now on (closed
 * on failure too): the first BC_FIRST bytes are fetched now and give the
 * size. name is for messages; cache_bytes the engine's cache budget (0:
 * default), of which the blocks take a quarter. */
int bc_source_open(h5_source **out, bc_transport *t, const char *name, size_t cache_bytes);

#endif
