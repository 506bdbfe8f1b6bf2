/* source_http_int.h - what source_http.c (the ranged transport) and
 * source_http_copy.c (servers without Range: the object downloaded once)
 * share. */
#ifndef H5_SOURCE_HTTP_INT_H
#define H5_SOURCE_HTTP_INT_H

#include "blockcache.h"
#include "source.h"

#include "curl_dl.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define POOL 16                 /* idle easy handles kept */
#define DEFAULT_CACHE_MAX_MIB 1024   /* -o cache_max: a download without Range */

typedef struct http_transport {
	bc_transport base;
	char *url, *name, *etag, *userpwd, *sigv4, *token_hdr;
	uint64_t size;               /* pinned by the first reply (0 before) */
	bool replaced;               /* a reply said the object changed (atomic) */
	unsigned retries;
	long timeout_s;
	CURLSH *share;
	pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
	pthread_mutex_t mu;          /* pool, npool, multi */
	CURL *pool[POOL];
	unsigned npool;
	CURLM *multi;                /* the read-ahead's transfers (http_stream) */
} http_transport;

/* An easy handle of the pool (set up for h: share, timeouts, callbacks,
 * SigV4), or NULL; given back with http_handle_put. */
CURL *http_handle_get(http_transport *h);
void http_handle_put(http_transport *h, CURL *c);
/* Failures worth another try: the network, a timeout, a cut body, 5xx. */
bool http_transient(CURLcode cc, long status);
/* The object downloaded whole, at most max bytes, into an unlinked
 * temporary file, and a source reading it (source_http_copy.c). */
int http_copy_open(h5_source **out, http_transport *h, uint64_t max);

#endif
