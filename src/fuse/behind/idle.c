/* idle.c - the idle commit of write handles left open (write.c), and of
 * attribute and link changes.
 *
 * A descriptor that wrote and sits open (a script that never closes, an
 * interactive session) would hold FILE's lock, and keep its last rows
 * uncommitted, until it is closed. The idle kind looks every second; a handle
 * holding the lock whose last write is -o idle_commit seconds old is
 * committed as fsync commits it (wfile_fsync: whole rows, written bytes),
 * which gives the lock back unless a partial row is left. Pinned while in
 * use, so its release waits; one handle per look.
 *
 * mkdir, rm, mv, setfattr commit ordered but not synced, and leave room
 * reserved past the end of allocation (write/txn.c): once none came for
 * -o idle_commit seconds they are made durable and that room given back
 * (fs_meta_sync), so FILE's size is its end of allocation between
 * sessions of changes, not only at unmount. Both are one periodic kind
 * of the commit layer's scheduler (commit/sched.c). */
#include "wstate.h"
#include "npystream.h"
#include "handle.h"

static bool idle_for_long(const struct wfile *w, const void *arg)
{
	const int64_t *since = arg;     /* last write before this */

	return __atomic_load_n(&w->holding, __ATOMIC_RELAXED) && __atomic_load_n(&w->last_ns, __ATOMIC_RELAXED) <= *since;
}

/* Attribute and link changes idle for idle ns: made durable, FILE trimmed. */
static void meta_idle(h5fs *fs, int64_t now, int64_t idle)
{
	bool due, freed;

	pthread_mutex_lock(&fs->wmu);
	/* (storage freed: at once, so its space goes back to the host) */
	freed = fs->meta_freed;
	due = pager_unsynced(&fs->pg) && (now - fs->meta_ns >= idle || freed);
	if (due)
		fs->meta_freed = false;
	pthread_mutex_unlock(&fs->wmu);
	if (!due || fs_meta_sync(fs) != 0)
		return;
	if (freed)
		h5fs_log(fs, LOG_INFO, "storage freed: fsync'd, its space given back to the host, %s trimmed to its "
			 "end of allocation", h5_file_path(fs->f));
	else
		h5fs_log(fs, LOG_INFO, "attribute and link changes idle for %u s: fsync'd, %s trimmed to its end "
			 "of allocation", fs->cfg.idle_commit, h5_file_path(fs->f));
}

/* The idle kind's look (the scheduler's, commit/sched.c), once a second:
 * one handle idle for long committed, else the changes made durable. */
static int64_t idle_poll(void *owner, int64_t now)
{
	h5fs *fs = owner;
	int64_t idle = (int64_t)fs->cfg.idle_commit * 1000000000;
	int64_t since = now - idle;
	struct wfile *pick = wfile_find_pin(fs, idle_for_long, &since);

	if (!pick) {
		meta_idle(fs, now, idle);
		return h5fs_now_ns() + 1000000000;
	}
	/* looked at again after another idle period, whatever happens */
	__atomic_store_n(&pick->last_ns, now, __ATOMIC_RELAXED);
	if (wfile_fsync(fs, pick, pick->n->ino) == 0)
		h5fs_log(fs, LOG_INFO, "%s: idle for %u s: committed%s", show_path(pick->n->path),
			 fs->cfg.idle_commit,
			 __atomic_load_n(&pick->holding, __ATOMIC_RELAXED) ? " (a partial row keeps FILE locked)"
									     : ", FILE's lock given back");
	wfile_unpin(fs, pick);
	return h5fs_now_ns();     /* the next idle one at once */
}

/* (periodic: after the batches, which it may flush) */
/* The write descriptors' kind: their pending bytes (overwrites kept, the
 * chunks they touch) committed by the writing request at 64 MiB
 * (H5FS_OVERWRITE_COMMIT_BYTES overrides it: tests), at fsync and close,
 * and here once idle. No flush: a descriptor's bytes are committed by
 * the threads that write it (its requests, or this kind's look once it is
 * idle), never by another request's sync while it writes (a sync that
 * committed every descriptor's rows raced their appends: "allocated
 * without its lock", EBUSY crossing the end in test_procs). */
static const struct commit_kind idle_kind = {
	.name = "write descriptors", .bit = COMMIT_WRITES, .poll = idle_poll,
	.stop = wfile_idler_stop, .max_bytes = WFILE_COMMIT_BYTES,
};

void wfile_idler_start(h5fs *fs)
{
	struct commit_slot *s;
	int err = ENOMEM;

	if (!pager_writes(&fs->pg) || !fs->cfg.idle_commit || fs->idle_slot)
		return;
	if ((s = calloc(1, sizeof(*s))) != NULL) {
		pthread_mutex_lock(&fs->lock);
		err = commit_slot_start_locked(s, fs, &idle_kind, fs);
		if (!err)
			fs->idle_slot = s;
		pthread_mutex_unlock(&fs->lock);
	}
	if (err) {
		free(s);
		h5fs_log(fs, LOG_ERR, "cannot start the idle commit: descriptors left open keep FILE locked");
	}
}

void wfile_idler_stop(h5fs *fs)
{
	struct commit_slot *s = fs->idle_slot;

	if (!s)
		return;
	commit_slot_stop(s);
	fs->idle_slot = NULL;
	free(s);
}

static bool npy_of(const struct wfile *w, const void *arg)
{
	return w->n == arg && w->npy;
}

int wfile_npy_mtime(h5fs *fs, struct node *n, int64_t sec, int *err)
{
	struct npy_stream *s = NULL;
	struct wfile *pick;

	/* the stream read with the pin: a demoted one (write.c npy_bytes) is
	 * let go under fs->lock, and freed once no pin is left */
	pthread_mutex_lock(&fs->lock);
	pick = wfile_find_locked(fs, npy_of, n, true);
	if (pick)
		s = pick->npy;
	pthread_mutex_unlock(&fs->lock);
	if (!pick)
		return 0;
	*err = npy_set_mtime(fs, s, sec);
	wfile_unpin(fs, pick);
	return 1;
}
