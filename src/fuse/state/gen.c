/*
 * gen.c - generations of FILE (fs.h struct gen): FILE as opened once.
 * Nodes and reads in flight hold the generation they were read in; a live
 * FILE's change makes the next one (live/live.c), and the last holder of
 * an old one closes it.
 */
#include "fs.h"

void gen_hold(struct gen *g)
{
	__atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
}

void gen_release(struct gen *g)
{
	if (g && __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		h5_file_close(g->f);
		free(g);
	}
}

struct gen *gen_current(h5fs *fs)
{
	struct gen *g;

	pthread_mutex_lock(&fs->lock);
	g = fs->gen;
	gen_hold(g);
	pthread_mutex_unlock(&fs->lock);
	return g;
}

bool gen_is_current(h5fs *fs, const struct gen *g)
{
	bool cur;

	pthread_mutex_lock(&fs->lock);
	cur = fs->gen == g;
	pthread_mutex_unlock(&fs->lock);
	return cur;
}

struct timespec gen_file_time(const h5_file *f)
{
	h5_file_stamp s;

	if (h5_file_stamp_get(&s, f) == 1)
		return (struct timespec){ .tv_sec = (time_t)(s.mtime_ns / 1000000000),
					  .tv_nsec = (long)(s.mtime_ns % 1000000000) };
	return (struct timespec){ .tv_sec = (time_t)h5_file_mtime(f) };
}
