/*
 * ctx.h - the engine context (ctx.c).
 */
#ifndef H5_IO_CTX_H
#define H5_IO_CTX_H

#include "base.h"
#include "cache.h"

/* ---- the engine context (ctx.c) -----------------------------------------
 * What the files opened in it share (h5core.h): the core of the cache each
 * file has a view of, the worker pool, the budget given to the buffer
 * pool. Refcounted: the creator and every file opened in it hold one. */
struct h5_ctx {
	h5_cache *cache;
	struct h5_pool *pool;   /* nthreads - 1 workers; NULL when nthreads is 1 */
	unsigned nthreads;
	size_t budget;
	unsigned refs;          /* atomic */
};
void h5_ctx_ref(struct h5_ctx *ctx);

#endif
