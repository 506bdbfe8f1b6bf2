/*
 * wbtimer.c - the timer of a write-behind batch (xbatch.c: setfattr's
 * attributes; lbatch.c: new files): one thread per batch kind that
 * commits the batch idle_ms after its last change, and at the latest
 * max_ms after its first (a loop of changes would keep it pending for
 * ever, and a crash would lose all of them); then makes it durable
 * (fs_meta_sync: FILE fsync'd, the room reserved past its end of
 * allocation given back), so that FILE's size is its end of allocation
 * between sessions of changes. A commit that fails is tried again
 * idle_ms later (the batch decides when to give up).
 */
#include "member.h"

#include <time.h>

static void *loop(void *arg)
{
	struct wbt *t = arg;

	pthread_mutex_lock(&t->mu);
	while (!t->stop) {
		size_t n = t->count(t->owner);

		if (t->timed && !n) {
			t->timed = false;
			pthread_mutex_unlock(&t->mu);
			fs_meta_sync(t->fs);    /* logs its errors; fs_lost after one */
			pthread_mutex_lock(&t->mu);
			continue;
		}
		if (!n) {
			pthread_cond_wait(&t->cv, &t->mu);
			continue;
		}
		int64_t due = t->last_ns + t->idle_ns, now = member_now_ns(), cap = t->first_ns + t->max_ns;

		if (cap < due)
			due = cap;
		if (now >= due) {
			if (t->commit(t->owner) == 0) {
				t->timed = true;
			} else {
				t->first_ns = t->last_ns = member_now_ns();
			}
			continue;
		}
		pthread_mutex_unlock(&t->mu);
		struct timespec ts = { .tv_sec = (due - now) / 1000000000, .tv_nsec = (due - now) % 1000000000 };

		nanosleep(&ts, NULL);
		pthread_mutex_lock(&t->mu);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

int wbt_start(struct wbt *t, h5fs *fs, unsigned idle_ms, unsigned max_ms, size_t (*count)(void *),
	      int (*commit)(void *), void *owner)
{
	*t = (struct wbt){ .fs = fs, .idle_ns = (int64_t)idle_ms * 1000000, .max_ns = (int64_t)max_ms * 1000000,
			   .count = count, .commit = commit, .owner = owner };
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	if (pthread_create(&t->thread, NULL, loop, t) != 0) {
		pthread_mutex_destroy(&t->mu);
		pthread_cond_destroy(&t->cv);
		return ENOMEM;
	}
	return 0;
}

void wbt_changed(struct wbt *t, bool first)
{
	t->last_ns = member_now_ns();
	if (first) {
		t->first_ns = t->last_ns;
		pthread_cond_signal(&t->cv);
	}
}

void wbt_stop(struct wbt *t)
{
	pthread_mutex_lock(&t->mu);
	t->stop = true;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->thread, NULL);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cv);
}
