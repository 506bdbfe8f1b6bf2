/*
 * reserve.c - the disk space a change's commit will write, reserved before
 * the change is answered (h5core.h h5_file_reserve; the daemon's
 * write-behind), so that the commit cannot run out of it: allocated past
 * the allocation end (io/file_space.c), or surely given by the free list
 * (space.c). Above txn.c: a reserve that would refuse first has txn.c
 * release what earlier commits freed (h5_txn_give_back).
 */
#include "space.h"
#include "ordered.h"
#include "base.h"
#include "file.h"
#include "freesp.h"
#include "txn.h"
#include "file_ws.h"
#include "h5core.h"

#include <pthread.h>
#include <time.h>

/* Of len bytes a commit may take, those the free list surely gives: all
 * of them when one released extent holds them (h5_space_take places each
 * block best fit, and the largest extent, holding their sum, always has
 * room for the next), else none: blocks of a size the reserve does not
 * know may not fit extents smaller than the sum (a block is never split;
 * summing every extent promised space a dense store written anew could
 * not take, and a full disk then failed the commit after its answer). */
static uint64_t reusable(h5_file *f, uint64_t len)
{
	struct h5_wstate *ws = h5_ws(f);
	const h5_free_ext *big = NULL;

	for (size_t i = 0; i < ws->freesp.n; i++)
		if (!ws->freesp.v[i].ticket && (!big || ws->freesp.v[i].len > big->len))
			big = &ws->freesp.v[i];
	/* (a hole takes blocks: take_backed gives it only within the margin) */
	return big && big->len >= len && h5_file_solid(f, big->addr, big->len) ? len : 0;
}

/* h5_file_reserve's work, write_lock held (let go and taken again
 * around a sync). */
static int reserve_locked(h5_file *f, uint64_t *held, uint64_t want)
{
	struct h5_wstate *ws = h5_ws(f);
	uint64_t at, extra, total, h;
	int rc;

	/* what the other holders hold comes first: reserves of the allocation
	 * end alone, 64 writers' commits took what each had been promised
	 * (stress-ng aiol: 4 KiB writes answered, their 1 MiB chunks past the
	 * margin at the commit) */
	/* and allocated again when the holder's share is held already: what
	 * was allocated for it may have been taken meanwhile (an append's
	 * rows are staged at the allocation end as they come) */
	h = held ? __atomic_load_n(held, __ATOMIC_RELAXED) : 0;
	extra = !held ? want : want > h ? want - h : 0;
	if (h5_add_overflow(__atomic_load_n(&ws->promised, __ATOMIC_RELAXED), extra, &total))
		return h5_err_set(H5_ERR_LIMIT, "file size overflows");
	/* space the free list holds takes no disk space: a change that
	 * fits there is made on a full disk too - also space held back for
	 * a reader section, which ends within a request: on a full disk the
	 * reserve waits for it a little (at most 0.2 s; readers never take
	 * write_lock) rather than refuse a change that fits */
	/* and space freed by a commit whose sync has not come yet is
	 * released by one sync now, as ext4 commits its journal before it
	 * says ENOSPC: the change before this one freed what it needs */
	for (int tries = 0, synced = 0;; tries++) {
		h5_space_settle(f);
		rc = h5_add_overflow(f->base, h5_space_end(f), &at) ? h5_err_set(H5_ERR_LIMIT, "file size overflows")
								     : 0;
		/* (the margin kept: file_space.c); and the pages an ordered
		 * copy's record takes past FILE's end (io/ordered.h), which
		 * the change's commit may need to rewrite a header across a
		 * page: free now, or the change is refused here rather than
		 * lost at its commit. Counted, not held: one record at a time
		 * (write_lock), cut off at once, and every reserve leaves its
		 * pages free after its own allocation. */
		if (rc == 0)
			rc = h5_file_allocate(f, at, total - reusable(f, total), h5_ordered_room(f));
		if (rc == H5_ERR_NOSPC && ws->freesp.pending && !synced) {
			synced = 1;
			h5_err_clear();
			pthread_mutex_unlock(&f->write_lock);
			rc = h5_txn_give_back(f);
			pthread_mutex_lock(&f->write_lock);
			if (rc < 0)
				break;
			continue;
		}
		if (rc != H5_ERR_NOSPC || !ws->nquar || tries >= 100)
			break;
		h5_err_clear();
		nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
	}
	if (rc == 0 && held) {
		__atomic_add_fetch(&ws->promised, extra, __ATOMIC_ACQ_REL);
		/* (at least want: never less than held; atomic for
		 * h5_file_unreserve's look before the lock) */
		__atomic_add_fetch(held, extra, __ATOMIC_RELAXED);
	}
	return rc;
}

int h5_file_reserve(h5_file *f, uint64_t *held, uint64_t want)
{
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	pthread_mutex_lock(&f->write_lock);
	rc = reserve_locked(f, held, want);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

int h5_file_reserve_again(h5_file *f, uint64_t *held, uint64_t want)
{
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	/* the share was allocated by an earlier call and is counted in
	 * promised, which every other reserve allocates past: while a commit
	 * holds write_lock (a link batch's: its writes and fsyncs), that
	 * holds; the next call that finds the lock free allocates it again */
	if (__atomic_load_n(held, __ATOMIC_RELAXED) < want)
		pthread_mutex_lock(&f->write_lock);
	else if (pthread_mutex_trylock(&f->write_lock) != 0)
		return 0;
	rc = reserve_locked(f, held, want);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

void h5_file_unreserve(h5_file *f, uint64_t *held)
{
	uint64_t h, was;

	/* no lock: a commit gives its share back wherever it ends (a stream
	 * that failed to open is freed under write_lock) */
	if (!f || !(h = __atomic_exchange_n(held, 0, __ATOMIC_ACQ_REL)))
		return;
	was = __atomic_load_n(&h5_ws(f)->promised, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&h5_ws(f)->promised, &was, was > h ? was - h : 0, true, __ATOMIC_ACQ_REL,
					    __ATOMIC_RELAXED))
		;
}
