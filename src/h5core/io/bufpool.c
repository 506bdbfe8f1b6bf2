/* bufpool.c - large buffers kept for reuse (chunk decoding, read replies).
 *
 * Why: decoding a chunk takes two or three buffers of about the chunk's
 * size (the stored bytes, each filter's output), and the decoded chunk
 * lives in the cache until evicted. From glibc such buffers are fresh
 * mmaps or freshly trimmed heap, so every chunk costs its size in page
 * faults and kernel page zeroing: measured here at about 15% of all CPU
 * of a sequential read of a deflate+shuffle dataset (issue 16). Kept
 * here instead, a buffer that was touched once stays mapped and the next
 * chunk of the same geometry reuses it.
 *
 * The buffers are plain malloc() blocks: anything malloc'd may be given
 * to h5_buf_free (its size comes from malloc_usable_size), and a pool
 * buffer may be given to free(); only the reuse is lost. Small buffers
 * are not pooled (glibc serves them from its arenas without faults).
 * Idle buffers are bounded (BUF_IDLE_MAX of them, and a quarter of the
 * cache budget between 4 and 48 MiB: h5_buf_budget), so memory outside
 * the budget stays small: in a steady read the pool holds the few buffers
 * one decode frees and the next one takes.
 *
 * The budget comes from the engine contexts (ctx.c) alive: a quarter of
 * the sum of their cache budgets, so opening a file no longer sets it for
 * the whole process (the last file opened won). The free list itself stays
 * one per process: a buffer is allocated by one thread and freed by any
 * (a decoded chunk leaves the cache on whichever thread evicts it, a
 * reply buffer after the FUSE reply), and h5_buf_free has no context to
 * give it back to; a daemon has one context, so its pool is that
 * context's.
 */
#define _GNU_SOURCE
#include "base.h"
#include "bufpool.h"
#include "h5util.h"

#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define BUF_MIN ((size_t)64 << 10)      /* smaller: plain malloc/free */
#define BUF_IDLE_MAX 32                 /* idle buffers kept */
#define BUF_IDLE_BYTES ((size_t)48 << 20) /* at most; a file's budget may lower it */
#define BUF_IDLE_MIN ((size_t)4 << 20)

static pthread_mutex_t buf_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	void *p;
	size_t cap;
} buf_idle[BUF_IDLE_MAX];
static size_t buf_nidle, buf_idle_bytes;
static size_t buf_idle_limit = BUF_IDLE_BYTES;
static size_t buf_ctx_budgets;  /* the cache budgets of the live contexts */
static bool buf_fixed;          /* h5_buf_budget set the limit (tests) */

/* Sizes are rounded up to 64 KiB so that buffers for nearly equal sizes
 * (compressed chunks) can stand in for each other. */
static size_t buf_round(size_t n)
{
	return n > SIZE_MAX - (BUF_MIN - 1) ? n : (n + BUF_MIN - 1) & ~(BUF_MIN - 1);
}

/* A new buffer, its pages mapped in one call: one by one on first touch
 * they are a page fault each, and in a virtual machine a fault is an exit
 * to the hypervisor. */
static void *buf_fresh(size_t n)
{
	void *p = malloc(n);

	h5_mem_populate(p, n, 0);
	return p;
}

void *h5_buf_alloc(size_t n)
{
	size_t best = SIZE_MAX, limit;
	void *p = NULL;

	if (n < BUF_MIN)
		return malloc(n ? n : 1);
	/* accept a buffer at most a quarter (plus one step) larger than asked:
	 * a much larger one is better kept for a larger request */
	limit = n + n / 4 + BUF_MIN;
	pthread_mutex_lock(&buf_lock);
	for (size_t i = 0; i < buf_nidle; i++)
		if (buf_idle[i].cap >= n && buf_idle[i].cap <= limit &&
		    (best == SIZE_MAX || buf_idle[i].cap < buf_idle[best].cap))
			best = i;
	if (best != SIZE_MAX) {
		p = buf_idle[best].p;
		buf_idle_bytes -= buf_idle[best].cap;
		buf_idle[best] = buf_idle[--buf_nidle];
	}
	pthread_mutex_unlock(&buf_lock);
	return p ? p : buf_fresh(buf_round(n));
}

void h5_buf_free(void *p)
{
	size_t cap;

	if (!p)
		return;
	cap = malloc_usable_size(p);
	if (cap < BUF_MIN) {
		free(p);
		return;
	}
	pthread_mutex_lock(&buf_lock);
	if (buf_nidle < BUF_IDLE_MAX && buf_idle_bytes + cap <= buf_idle_limit) {
		buf_idle[buf_nidle].p = p;
		buf_idle[buf_nidle++].cap = cap;
		buf_idle_bytes += cap;
		p = NULL;
	}
	pthread_mutex_unlock(&buf_lock);
	free(p);
}

/* buf_lock held */
static void set_limit(size_t cache_budget)
{
	size_t lim = cache_budget / 4;

	lim = lim < BUF_IDLE_MIN ? BUF_IDLE_MIN : lim > BUF_IDLE_BYTES ? BUF_IDLE_BYTES : lim;
	buf_idle_limit = lim;
	while (buf_nidle > 0 && buf_idle_bytes > lim) {
		buf_idle_bytes -= buf_idle[--buf_nidle].cap;
		free(buf_idle[buf_nidle].p);
	}
}

void h5_buf_budget(size_t cache_budget)
{
	pthread_mutex_lock(&buf_lock);
	buf_fixed = cache_budget != 0;
	set_limit(cache_budget ? cache_budget : buf_ctx_budgets);
	pthread_mutex_unlock(&buf_lock);
}

void h5_buf_ctx_budget(size_t cache_budget, bool add)
{
	pthread_mutex_lock(&buf_lock);
	if (add)
		buf_ctx_budgets = buf_ctx_budgets > SIZE_MAX - cache_budget ? SIZE_MAX : buf_ctx_budgets + cache_budget;
	else
		buf_ctx_budgets = buf_ctx_budgets > cache_budget ? buf_ctx_budgets - cache_budget : 0;
	if (!buf_fixed)
		set_limit(buf_ctx_budgets);
	pthread_mutex_unlock(&buf_lock);
}

size_t h5_buf_limit(void)
{
	size_t n;

	pthread_mutex_lock(&buf_lock);
	n = buf_idle_limit;
	pthread_mutex_unlock(&buf_lock);
	return n;
}

size_t h5_buf_idle(void)
{
	size_t n;

	pthread_mutex_lock(&buf_lock);
	n = buf_idle_bytes;
	pthread_mutex_unlock(&buf_lock);
	return n;
}

void h5_buf_trim(void)
{
	pthread_mutex_lock(&buf_lock);
	while (buf_nidle > 0)
		free(buf_idle[--buf_nidle].p);
	buf_idle_bytes = 0;
	pthread_mutex_unlock(&buf_lock);
}
