/*
 * notify.c - the one thread that issues FUSE notifications (notify.h has
 * why). A queue under one mutex, drained in order; the epoch gate of the
 * requests whose replies carry entries.
 */
#include "notify.h"
#include "fuse_ops.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The longest the thread waits for requests begun before a batch (a
 * request reading a remote FILE may take long; the notification then goes
 * anyway, as it went before there was a gate). */
#define NOTIFY_GATE_NS 5000000000LL

struct note {
	struct note *next;
	uint64_t ino;           /* inode, or the entry's parent */
	off_t off, len;
	char *name;             /* an entry's name (NULL: an inode's) */
	size_t namelen;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t more;    /* queued, or stop */
	pthread_cond_t done;    /* issued moved */
	struct note *head, *tail;
	uint64_t queued, issued;
	struct fuse_session *se;   /* non-NULL while the thread runs */
	bool stop;
	pthread_t thread;
	/* the gate: requests of epoch e are counted in inflight[e & 1] */
	unsigned epoch;
	unsigned inflight[2];
} Q = { .mu = PTHREAD_MUTEX_INITIALIZER, .more = PTHREAD_COND_INITIALIZER, .done = PTHREAD_COND_INITIALIZER };

unsigned notify_reply_begin(void)
{
	for (;;) {
		unsigned e = __atomic_load_n(&Q.epoch, __ATOMIC_SEQ_CST);

		__atomic_add_fetch(&Q.inflight[e & 1], 1, __ATOMIC_SEQ_CST);
		/* counted in e only if e is still current: else the thread may
		 * have read e's count already */
		if (__atomic_load_n(&Q.epoch, __ATOMIC_SEQ_CST) == e)
			return e;
		__atomic_sub_fetch(&Q.inflight[e & 1], 1, __ATOMIC_SEQ_CST);
	}
}

void notify_reply_end(unsigned token)
{
	__atomic_sub_fetch(&Q.inflight[token & 1], 1, __ATOMIC_SEQ_CST);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Every request counted before now has replied (bounded). The thread
 * alone flips the epoch. */
static void gate_wait(void)
{
	unsigned old = __atomic_fetch_add(&Q.epoch, 1, __ATOMIC_SEQ_CST);
	int64_t until = now_ns() + NOTIFY_GATE_NS;
	struct timespec pause = { 0, 50000 };

	while (__atomic_load_n(&Q.inflight[old & 1], __ATOMIC_SEQ_CST) && now_ns() < until)
		nanosleep(&pause, NULL);
}

static void issue(struct fuse_session *se, const struct note *n)
{
	/* errors are the kernel's: ENOENT (it holds no such inode or
	 * entry), ENOTCONN (unmounting); nothing to do about either */
	if (n->name) {
		(void)fuse_lowlevel_notify_inval_entry(se, (fuse_ino_t)n->ino, n->name, n->namelen);
		/* and the parent's cached listing: the kernel drops it with the
		 * entry only when it holds that entry, and a name it never
		 * looked up (one the daemon made) would stay unlisted for as
		 * long as listings are kept (cache_readdir, H5FS_TIMEOUT) */
		(void)fuse_lowlevel_notify_inval_inode(se, (fuse_ino_t)n->ino, 0, 0);
	} else
		(void)fuse_lowlevel_notify_inval_inode(se, (fuse_ino_t)n->ino, n->off, n->len);
}

static void *drain(void *arg)
{
	struct fuse_session *se = arg;

	pthread_mutex_lock(&Q.mu);
	for (;;) {
		struct note *batch;
		uint64_t k = 0;

		while (!Q.head && !Q.stop)
			pthread_cond_wait(&Q.more, &Q.mu);
		if (!Q.head)
			break;
		batch = Q.head;
		Q.head = Q.tail = NULL;
		pthread_mutex_unlock(&Q.mu);
		gate_wait();
		while (batch) {
			struct note *n = batch;

			batch = n->next;
			issue(se, n);
			free(n->name);
			free(n);
			k++;
		}
		pthread_mutex_lock(&Q.mu);
		Q.issued += k;
		pthread_cond_broadcast(&Q.done);
	}
	pthread_mutex_unlock(&Q.mu);
	return NULL;
}

int notify_start(struct fuse_session *se)
{
	int e;

	pthread_mutex_lock(&Q.mu);
	Q.stop = false;
	e = pthread_create(&Q.thread, NULL, drain, se);
	if (!e)
		Q.se = se;
	pthread_mutex_unlock(&Q.mu);
	return e;
}

void notify_stop(void)
{
	pthread_mutex_lock(&Q.mu);
	if (!Q.se) {
		pthread_mutex_unlock(&Q.mu);
		return;
	}
	Q.se = NULL;
	Q.stop = true;
	pthread_cond_signal(&Q.more);
	pthread_mutex_unlock(&Q.mu);
	pthread_join(Q.thread, NULL);
	pthread_mutex_lock(&Q.mu);
	pthread_cond_broadcast(&Q.done);   /* flushes waiting on the rest */
	pthread_mutex_unlock(&Q.mu);
}

static void enqueue(struct fuse_session *se, struct note *n)
{
	pthread_mutex_lock(&Q.mu);
	if (!Q.se || Q.se != se) {
		pthread_mutex_unlock(&Q.mu);
		free(n->name);
		free(n);
		return;
	}
	if (Q.tail)
		Q.tail->next = n;
	else
		Q.head = n;
	Q.tail = n;
	Q.queued++;
	pthread_cond_signal(&Q.more);
	pthread_mutex_unlock(&Q.mu);
}

void notify_inval_inode(struct fuse_session *se, uint64_t ino, off_t off, off_t len)
{
	struct note *n;

	if (!se || !ino || !(n = calloc(1, sizeof(*n))))
		return;     /* (out of memory: the timeouts still bound it) */
	n->ino = ino;
	n->off = off;
	n->len = len;
	enqueue(se, n);
}

void notify_inval_entry(struct fuse_session *se, uint64_t parent, const char *name, size_t namelen)
{
	struct note *n;

	if (!se || !parent || !(n = calloc(1, sizeof(*n))))
		return;
	n->name = malloc(namelen + 1);
	if (!n->name) {
		free(n);
		return;
	}
	memcpy(n->name, name, namelen);
	n->name[namelen] = '\0';
	n->namelen = namelen;
	n->ino = parent;
	enqueue(se, n);
}

/* Until what is queued now was issued (or the session went): ms < 0
 * without a bound. True when it was. */
static bool wait_issued(int ms)
{
	struct timespec until;
	uint64_t target;
	bool done;
	int rc = 0;

	clock_gettime(CLOCK_REALTIME, &until);      /* (Q.done's clock) */
	if (ms > 0) {
		until.tv_sec += ms / 1000;
		until.tv_nsec += (long)(ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
	}
	pthread_mutex_lock(&Q.mu);
	target = Q.queued;
	while (Q.se && Q.issued < target && rc == 0)
		rc = ms < 0 ? pthread_cond_wait(&Q.done, &Q.mu) : pthread_cond_timedwait(&Q.done, &Q.mu, &until);
	done = !Q.se || Q.issued >= target;
	pthread_mutex_unlock(&Q.mu);
	return done;
}

void notify_flush(void)
{
	(void)wait_issued(-1);
}

bool notify_settle(int ms)
{
	return wait_issued(ms);
}
