/* pool.c - the worker pool of an engine context (pool.h says what runs on
 * it and why there is one per context).
 *
 * One mutex guards the job ring, the parallel sections waiting for
 * helpers and the counts. Jobs and helpers run outside it. */
#define _GNU_SOURCE /* pthread_setname_np */
#include "base.h"
#include "ctx.h"
#include "pool.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

/* A parallel section (lives on its caller's stack until every helper that
 * started has returned). */
struct pool_help {
	void (*fn)(void *arg);
	void *arg;
	unsigned want;                  /* helpers still wanted */
	unsigned running;               /* helpers running fn now */
	struct pool_help *next;
};

int h5_pool_new(h5_pool **out, unsigned nworkers)
{
	h5_pool *p;

	*out = NULL;
	if (nworkers == 0)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for the worker pool");
	if (pthread_mutex_init(&p->lock, NULL) != 0) {
		free(p);
		return h5_err_set(H5_ERR_NOMEM, "cannot create the worker pool's mutex");
	}
	if (pthread_cond_init(&p->work, NULL) != 0) {
		pthread_mutex_destroy(&p->lock);
		free(p);
		return h5_err_set(H5_ERR_NOMEM, "cannot create the worker pool's condition variable");
	}
	if (pthread_cond_init(&p->done, NULL) != 0) {
		pthread_cond_destroy(&p->work);
		pthread_mutex_destroy(&p->lock);
		free(p);
		return h5_err_set(H5_ERR_NOMEM, "cannot create the worker pool's condition variable");
	}
	p->nworkers = nworkers > H5_POOL_MAX ? H5_POOL_MAX : nworkers;
	*out = p;
	return 0;
}

/* Every file of the context is closed: no job is queued and no parallel
 * section runs. */
void h5_pool_free(h5_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->started; i++)
		pthread_join(p->tid[i], NULL);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

unsigned h5_pool_workers(const h5_pool *p)
{
	return p ? p->nworkers : 0;
}

unsigned h5_pool_started(h5_pool *p)
{
	unsigned n;

	if (!p)
		return 0;
	pthread_mutex_lock(&p->lock);
	n = p->started;
	pthread_mutex_unlock(&p->lock);
	return n;
}

static void *pool_worker(void *arg)
{
	h5_pool *p = arg;

	/* Named so that top -H, gdb and the tests tell the engine's threads
	 * from the caller's (H5_THREAD_PREFIX, pool.h). */
	pthread_setname_np(pthread_self(), H5_THREAD_PREFIX "pool");
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct pool_help *h;
		h5_pool_job j;

		while (!p->stop && p->len == 0 && !p->helps)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		if ((h = p->helps) != NULL) {
			/* a reader waits on a parallel section: it goes first */
			if (--h->want == 0)
				p->helps = h->next;
			h->running++;
			pthread_mutex_unlock(&p->lock);
			h->fn(h->arg);
			h5_err_clear();
			pthread_mutex_lock(&p->lock);
			h->running--;
			pthread_cond_broadcast(&p->done);
			continue;
		}
		j = p->q[p->head];
		p->head = (p->head + 1) % H5_POOL_QUEUE;
		p->len--;
		pthread_mutex_unlock(&p->lock);
		j.fn(j.owner, j.arg);
		h5_err_clear();
		pthread_mutex_lock(&p->lock);
		(*j.active)--;
		pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Start the workers not started yet (p->lock held); fewer is fine: the
 * callers do what no worker takes. Signals stay with the caller's threads
 * (FUSE's), as with every thread the engine starts. */
static void start_workers(h5_pool *p)
{
	sigset_t all, old;

	if (p->started >= p->nworkers || p->stop)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (p->started < p->nworkers) {
		if (pthread_create(&p->tid[p->started], NULL, pool_worker, p) != 0)
			break;
		p->started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void h5_pool_lock(h5_pool *p)
{
	pthread_mutex_lock(&p->lock);
}

void h5_pool_unlock(h5_pool *p)
{
	if (p->len) {
		start_workers(p);
		pthread_cond_broadcast(&p->work);
	}
	pthread_mutex_unlock(&p->lock);
}

size_t h5_pool_room(const h5_pool *p)
{
	return p->stop ? 0 : H5_POOL_QUEUE - p->len;
}

void h5_pool_queue(h5_pool *p, const h5_pool_job *job)
{
	if (p->len == H5_POOL_QUEUE || p->stop)
		return;         /* callers ask h5_pool_room first */
	p->q[(p->head + p->len) % H5_POOL_QUEUE] = *job;
	p->len++;
	(*job->active)++;
}

void h5_pool_forget(h5_pool *p, void *owner, unsigned *active)
{
	size_t keep = 0;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->len; i++) {
		const h5_pool_job *j = &p->q[(p->head + i) % H5_POOL_QUEUE];

		if (j->owner == owner)
			(*j->active)--;
		else
			p->q[(p->head + keep++) % H5_POOL_QUEUE] = *j;
	}
	p->len = keep;
	while (*active > 0)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

void h5_pool_run(h5_pool *p, void (*fn)(void *arg), void *arg, unsigned helpers)
{
	struct pool_help h = { .fn = fn, .arg = arg };

	if (!p || helpers == 0) {
		fn(arg);
		return;
	}
	h.want = helpers < p->nworkers ? helpers : p->nworkers;
	pthread_mutex_lock(&p->lock);
	start_workers(p);
	if (p->stop || p->started == 0) {
		pthread_mutex_unlock(&p->lock);
		fn(arg);
		return;
	}
	/* last in first served: each section is short, and its caller works
	 * on it meanwhile */
	h.next = p->helps;
	p->helps = &h;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	fn(arg);
	pthread_mutex_lock(&p->lock);
	if (h.want > 0) {               /* helpers that never came */
		struct pool_help **pp = &p->helps;

		while (*pp && *pp != &h)
			pp = &(*pp)->next;
		if (*pp)
			*pp = h.next;
	}
	while (h.running > 0)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

/* h5_pool_each's section: the items, the next to claim, the first error
 * (errors are per thread, so its message is kept here). */
struct pool_each {
	int (*fn)(void *ctx, size_t i);
	void *ctx;
	size_t n, next;
	pthread_mutex_t mu;
	int rc;
	char msg[512];
};

static void each_worker(void *arg)
{
	struct pool_each *e = arg;

	for (;;) {
		size_t i = __atomic_fetch_add(&e->next, 1, __ATOMIC_RELAXED);
		int rc;

		if (i >= e->n)
			break;
		rc = e->fn(e->ctx, i);
		if (rc < 0) {
			pthread_mutex_lock(&e->mu);
			if (!e->rc) {
				e->rc = rc;
				snprintf(e->msg, sizeof(e->msg), "%s", h5_err_msg());
			}
			pthread_mutex_unlock(&e->mu);
			__atomic_store_n(&e->next, e->n, __ATOMIC_RELAXED);
		}
	}
}

int h5_pool_each(h5_pool *p, int (*fn)(void *ctx, size_t i), void *ctx, size_t n, unsigned helpers)
{
	struct pool_each e = { .fn = fn, .ctx = ctx, .n = n };

	if (n == 0)
		return 0;
	if (helpers > n - 1)
		helpers = (unsigned)(n - 1);
	pthread_mutex_init(&e.mu, NULL);
	h5_pool_run(p, each_worker, &e, helpers);
	pthread_mutex_destroy(&e.mu);
	if (e.rc)
		return h5_err_set(e.rc, "%s", e.msg);
	return 0;
}
