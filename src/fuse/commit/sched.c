/*
 * sched.c - the write-behind kinds and their one scheduler thread
 * (commit.h invariant 7). A kind registers a slot (its callbacks and its
 * batch's lock); the thread, started at the first registration, looks at
 * every slot when one changed or the earliest due time came:
 *   - a batch kind (lbatch.c new files, xbatch.c attribute values) is
 *     committed idle_ms after its last change and at the latest max_ms
 *     after its first (a loop of changes would keep it pending for ever,
 *     and a crash would lose all of them), then made durable once empty
 *     (fs_meta_sync: FILE fsync'd, the room reserved past its end of
 *     allocation given back), so that FILE's size is its end of
 *     allocation between sessions of changes; a failed commit is tried
 *     again idle_ms later (the kind decides when to give up);
 *   - a periodic kind (idle.c: descriptors left open, changes not synced)
 *     is called when due and says when next.
 * A kind's commit runs with its own lock, never the scheduler's, so a
 * change added meanwhile (commit_changed, kind lock then scheduler lock)
 * and a flush from a request (commit_barrier) do not wait for the thread.
 */
#include "commit.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#define SLOTS_MAX 8     /* (four kinds: lbatch.c, xbatch.c, npy.c, idle.c) */

/* The kinds known to the mount, in their order, with their policies */
struct commit_kinds {
	unsigned n;
	const struct commit_kind *k[SLOTS_MAX];
	struct commit_policy pol[SLOTS_MAX];
};

struct commit_sched {
	pthread_mutex_t mu;
	pthread_cond_t cv;      /* a slot changed, left, or the stop */
	/* a slot's busy or flushing went down (commit_slot_stop waits for
	 * both): apart from cv, so that a barrier's flush, which every
	 * create and mkdir asks for, does not wake the thread for nothing
	 * (a context switch and its lock taken against the request's, 10
	 * futex calls a create: issue 82 item 2) */
	pthread_cond_t left;
	pthread_t thread;
	bool stop, kicked;
	unsigned n;
	struct commit_slot *slot[SLOTS_MAX];    /* in flush order */
};

/* A batch slot looked at (nothing held): when to look again. */
static int64_t run_batch(struct commit_slot *s, int64_t now)
{
	int64_t due;
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->k->count(s->owner);
	if (s->timed && !n) {
		s->timed = false;
		pthread_mutex_unlock(&s->mu);
		if (s->k->settle)
			s->k->settle(s->fs);    /* logs its errors; fs_lost after one */
		return now;
	}
	if (!n) {
		pthread_mutex_unlock(&s->mu);
		return INT64_MAX;
	}
	due = s->last_ns + (int64_t)s->pol.idle_ms * 1000000;
	if (s->first_ns + (int64_t)s->pol.max_ms * 1000000 < due)
		due = s->first_ns + (int64_t)s->pol.max_ms * 1000000;
	if (now >= due) {
		if (s->k->commit(s->owner) == 0)
			s->timed = true;
		else
			s->first_ns = s->last_ns = h5fs_now_ns();
		due = now;      /* looked at again at once: empty, or kept */
	}
	pthread_mutex_unlock(&s->mu);
	return due;
}

static void *loop(void *arg)
{
	struct commit_sched *cs = arg;

	pthread_mutex_lock(&cs->mu);
	while (!cs->stop) {
		int64_t now = h5fs_now_ns(), next = INT64_MAX;

		cs->kicked = false;
		for (unsigned i = 0; i < cs->n && !cs->stop; i++) {
			struct commit_slot *s = cs->slot[i];
			int64_t due;

			s->busy = true;
			pthread_mutex_unlock(&cs->mu);
			due = s->k->poll ? s->k->poll(s->owner, now) : run_batch(s, now);
			pthread_mutex_lock(&cs->mu);
			s->busy = false;
			pthread_cond_broadcast(&cs->left);
			if (due < next)
				next = due;
		}
		if (cs->stop || cs->kicked)
			continue;
		now = h5fs_now_ns();
		if (next <= now)
			continue;
		if (next == INT64_MAX) {
			pthread_cond_wait(&cs->cv, &cs->mu);
		} else {
			/* the condition's clock is CLOCK_MONOTONIC, h5fs_now_ns's */
			struct timespec ts = { .tv_sec = next / 1000000000, .tv_nsec = next % 1000000000 };

			pthread_cond_timedwait(&cs->cv, &cs->mu, &ts);
		}
	}
	pthread_mutex_unlock(&cs->mu);
	return NULL;
}

static struct commit_sched *sched_new(void)
{
	struct commit_sched *cs = calloc(1, sizeof(*cs));
	pthread_condattr_t ca;

	if (!cs)
		return NULL;
	pthread_mutex_init(&cs->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cs->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&cs->left, NULL);
	if (pthread_create(&cs->thread, NULL, loop, cs) != 0) {
		pthread_mutex_destroy(&cs->mu);
		pthread_cond_destroy(&cs->cv);
		pthread_cond_destroy(&cs->left);
		free(cs);
		return NULL;
	}
	return cs;
}

void *commit_kind_new_locked(h5fs *fs, size_t size, size_t slot_off, const struct commit_kind *k)
{
	char *owner = calloc(1, size);

	if (owner && commit_slot_start_locked((struct commit_slot *)(void *)(owner + slot_off), fs, k, owner) != 0) {
		free(owner);
		owner = NULL;
	}
	return owner;
}

int commit_slot_start_locked(struct commit_slot *s, h5fs *fs, const struct commit_kind *k, void *owner)
{
	struct commit_sched *cs = fs->sched;
	unsigned i;

	*s = (struct commit_slot){ .k = k, .owner = owner, .fs = fs, .pol = commit_policy(fs, k->bit) };
	pthread_mutex_init(&s->mu, NULL);
	if (!cs && !fs->sched_stopped && (cs = fs->sched = sched_new()) == NULL) {
		pthread_mutex_destroy(&s->mu);
		return ENOMEM;
	}
	if (!cs) {
		pthread_mutex_destroy(&s->mu);
		return ESHUTDOWN;       /* unmounting: the kinds stopped */
	}
	pthread_mutex_lock(&cs->mu);
	if (cs->n >= SLOTS_MAX) {
		pthread_mutex_unlock(&cs->mu);
		pthread_mutex_destroy(&s->mu);
		return ENOMEM;
	}
	/* in the kinds' order (names before attributes; periodic last) */
	for (i = cs->n; i > 0 && cs->slot[i - 1]->k->bit > k->bit; i--)
		cs->slot[i] = cs->slot[i - 1];
	cs->slot[i] = s;
	cs->n++;
	s->listed = true;
	s->cs = cs;
	cs->kicked = true;
	pthread_cond_broadcast(&cs->cv);
	pthread_mutex_unlock(&cs->mu);
	return 0;
}

void commit_changed(struct commit_slot *s, bool first)
{
	struct commit_sched *cs = s->cs;

	s->last_ns = h5fs_now_ns();
	if (!first)
		return;         /* its due time only moved later */
	s->first_ns = s->last_ns;
	pthread_mutex_lock(&cs->mu);
	cs->kicked = true;
	pthread_cond_broadcast(&cs->cv);
	pthread_mutex_unlock(&cs->mu);
}

void commit_slot_stop(struct commit_slot *s)
{
	struct commit_sched *cs = s->cs;

	/* (a kind stops only at the unmount, after the requests and before
	 * the scheduler; the scheduler may be in it, or a barrier its idle
	 * poll runs (behind/idle.c) in its flush: both waited for) */
	if (s->listed) {
		pthread_mutex_lock(&cs->mu);
		/* (each field loaded alone: the compiler read busy and
		 * flushing as one word with `timed` beside them, which
		 * run_batch writes under s->mu, not cs->mu: TSan, an lbatch
		 * commit letting s->mu go at the unmount) */
		while (__atomic_load_n(&s->busy, __ATOMIC_RELAXED) || __atomic_load_n(&s->flushing, __ATOMIC_RELAXED))
			pthread_cond_wait(&cs->left, &cs->mu);
		for (unsigned i = 0; i < cs->n; i++) {
			if (cs->slot[i] != s)
				continue;
			for (unsigned j = i + 1; j < cs->n; j++)
				cs->slot[j - 1] = cs->slot[j];
			cs->n--;
			break;
		}
		cs->kicked = true;
		pthread_cond_broadcast(&cs->cv);
		pthread_mutex_unlock(&cs->mu);
	}
	s->listed = false;
	pthread_mutex_destroy(&s->mu);
}

int commit_barrier(h5fs *fs, unsigned mask)
{
	struct commit_slot *s[SLOTS_MAX];
	struct commit_sched *cs;
	unsigned n = 0;
	int err = 0;

	/* Each slot flushed is counted in it (flushing) before cs->mu is let
	 * go: its stop (the unmount's, from another thread than a barrier the
	 * scheduler's idle poll runs) waits for it before its owner is freed. */
	pthread_mutex_lock(&fs->lock);
	cs = fs->sched;
	if (cs) {
		pthread_mutex_lock(&cs->mu);
		for (unsigned i = 0; i < cs->n; i++) {
			if (!(cs->slot[i]->k->bit & mask) || !cs->slot[i]->k->flush)
				continue;
			s[n] = cs->slot[i];
			s[n++]->flushing++;
		}
		pthread_mutex_unlock(&cs->mu);
	}
	pthread_mutex_unlock(&fs->lock);
	for (unsigned i = 0; i < n; i++) {
		if (!err)
			err = s[i]->k->flush(s[i]->owner);
		pthread_mutex_lock(&cs->mu);
		s[i]->flushing--;
		pthread_cond_broadcast(&cs->left);      /* (not cv: the thread) */
		pthread_mutex_unlock(&cs->mu);
	}
	return err;
}

void commit_sched_stop(h5fs *fs)
{
	struct commit_kinds *ks = fs->kinds;
	struct commit_sched *cs;

	/* every kind known to the mount stopped, in their order (each
	 * commits what it holds and unregisters its slot, commit_slot_stop;
	 * one that never began has nothing), then the thread */
	for (unsigned i = 0; ks && i < ks->n; i++)
		if (ks->k[i]->stop)
			ks->k[i]->stop(fs);
	pthread_mutex_lock(&fs->lock);
	cs = fs->sched;
	fs->sched = NULL;
	fs->sched_stopped = true;
	pthread_mutex_unlock(&fs->lock);
	if (!cs)
		return;
	pthread_mutex_lock(&cs->mu);
	cs->stop = true;
	pthread_cond_broadcast(&cs->cv);
	pthread_mutex_unlock(&cs->mu);
	pthread_join(cs->thread, NULL);
	pthread_mutex_destroy(&cs->mu);
	pthread_cond_destroy(&cs->cv);
	pthread_cond_destroy(&cs->left);
	free(cs);
}

/* ---- the kinds known to the mount and their policies ---- */

/* H5FS_COMMIT_<key><suffix>, a positive number, or dflt */
static uint64_t override(const char *key, const char *suffix, uint64_t dflt, uint64_t max)
{
	char name[64];
	const char *v;
	unsigned long long x;
	char *end;

	if (!key)
		return dflt;
	snprintf(name, sizeof(name), "H5FS_COMMIT_%s%s", key, suffix);
	v = getenv(name);
	if (!v || !*v)
		return dflt;
	errno = 0;
	x = strtoull(v, &end, 10);
	return errno || *end || x == 0 || x > max ? dflt : (uint64_t)x;
}

int commit_kind_register(h5fs *fs, const struct commit_kind *k)
{
	struct commit_kinds *ks = fs->kinds;
	struct commit_policy p = k->policy;
	unsigned i;

	if (!ks && (ks = fs->kinds = calloc(1, sizeof(*ks))) == NULL)
		return ENOMEM;
	if (ks->n >= SLOTS_MAX)
		return ENOMEM;
	/* a periodic kind looks for what is idle -o idle_commit seconds */
	if (k->poll)
		p.idle_ms = fs->cfg.idle_commit > UINT_MAX / 1000 ? UINT_MAX : fs->cfg.idle_commit * 1000;
	p.idle_ms = (unsigned)override(k->key, "_IDLE_MS", p.idle_ms, UINT_MAX);
	p.max_ms = (unsigned)override(k->key, "_MS", p.max_ms, UINT_MAX);
	p.max_bytes = override(k->key, "_BYTES", p.max_bytes, UINT64_MAX);
	for (i = ks->n; i > 0 && ks->k[i - 1]->bit > k->bit; i--) {
		ks->k[i] = ks->k[i - 1];
		ks->pol[i] = ks->pol[i - 1];
	}
	ks->k[i] = k;
	ks->pol[i] = p;
	ks->n++;
	return 0;
}

const struct commit_kind *commit_kind_of(h5fs *fs, unsigned bit)
{
	struct commit_kinds *ks = fs->kinds;

	for (unsigned i = 0; ks && i < ks->n; i++)
		if (ks->k[i]->bit == bit)
			return ks->k[i];
	return NULL;
}

struct commit_policy commit_policy(h5fs *fs, unsigned bit)
{
	struct commit_kinds *ks = fs->kinds;

	for (unsigned i = 0; ks && i < ks->n; i++)
		if (ks->k[i]->bit == bit)
			return ks->pol[i];
	return (struct commit_policy){ 0 };
}

void commit_kinds_free(h5fs *fs)
{
	free(fs->kinds);
	fs->kinds = NULL;
}
