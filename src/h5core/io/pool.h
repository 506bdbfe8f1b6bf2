/* pool.h - the worker pool of an engine context (pool.c, ctx.c).
 *
 * One bounded set of threads per context does every background and
 * parallel decode of the files opened in it, so a mount of many files (or
 * many generations of one) has one set of threads, not one per file:
 * - background jobs (chunk prefetching, chunk_stream.c): queued, run by
 *   whichever worker is free, and forgotten per owner (a chunk index being
 *   closed drops its queued jobs and waits for its running ones);
 * - parallel sections (h5_pool_run: the chunks of a large read, chunk.c;
 *   the chunks an append filters, append_stage.c): the caller works too,
 *   idle workers join it, and it returns once every helper has returned.
 *   Parallel sections go before queued jobs: a reader waits on them.
 * Workers start at the first work (lazily: a daemon forks after opening
 * FILE, and a file that is never read in bulk needs none).
 */
#ifndef H5_POOL_H
#define H5_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define H5_POOL_QUEUE 64        /* background jobs waiting, at most */
#define H5_POOL_MAX 63          /* workers, at most (64 threads with the caller) */
#define H5_POOL_ARGS 32         /* = H5_MAX_RANK: a chunk's scaled coordinates */
#define H5_THREAD_PREFIX "h5-"  /* every engine thread's name starts so */

typedef void (*h5_pool_fn)(void *owner, const uint64_t *arg);

typedef struct h5_pool_job {
	h5_pool_fn fn;
	void *owner;                    /* what h5_pool_forget names */
	unsigned *active;               /* the owner's count of queued or running jobs */
	uint64_t arg[H5_POOL_ARGS];
} h5_pool_job;

struct pool_help;

typedef struct h5_pool {
	pthread_mutex_t lock;
	pthread_cond_t work;            /* jobs queued, a parallel section, or stop */
	pthread_cond_t done;            /* a job or a helper finished */
	h5_pool_job q[H5_POOL_QUEUE];   /* ring */
	size_t head, len;
	struct pool_help *helps;        /* parallel sections wanting helpers */
	unsigned nworkers, started;
	pthread_t tid[H5_POOL_MAX];
	bool stop;
} h5_pool;

/* nworkers 0: no pool (*out NULL), and every call below takes NULL: the
 * caller then does all the work on its own thread. */
int h5_pool_new(h5_pool **out, unsigned nworkers);
void h5_pool_free(h5_pool *p);
unsigned h5_pool_workers(const h5_pool *p);    /* the most it starts */
unsigned h5_pool_started(h5_pool *p);          /* started so far */

/* Background jobs: h5_pool_lock, h5_pool_room / h5_pool_queue (which
 * counts the job in *job->active) as many as wanted, h5_pool_unlock
 * (which starts workers if need be and wakes them). */
void h5_pool_lock(h5_pool *p);
void h5_pool_unlock(h5_pool *p);
size_t h5_pool_room(const h5_pool *p);
void h5_pool_queue(h5_pool *p, const h5_pool_job *job);
/* Drop owner's queued jobs and wait for its running ones (*active 0). */
void h5_pool_forget(h5_pool *p, void *owner, unsigned *active);

/* A parallel section: fn(arg) on this thread and on up to `helpers` idle
 * workers at once; fn takes work items from arg until none are left (so a
 * helper that starts late finds nothing and returns). */
void h5_pool_run(h5_pool *p, void (*fn)(void *arg), void *arg, unsigned helpers);

/* fn(ctx, i) for every i in [0, n), as a parallel section: items are
 * claimed one at a time (a helper preempted holds up at most the one it
 * has); the first error skips the items not yet claimed and is returned,
 * with its message, on this thread. */
int h5_pool_each(h5_pool *p, int (*fn)(void *ctx, size_t i), void *ctx, size_t n, unsigned helpers);

#endif
