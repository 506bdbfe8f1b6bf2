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

/* Attribute and link changes idle for idle ns: made durable, FILE trimmed
 * (the batches and streams flushed first: fs_meta_settle; descriptors
 * are this kind's look's, one at a time, idle_poll). */
static void meta_idle(h5fs *fs, int64_t now, int64_t idle)
{
	struct gen *g;
	bool due, freed;

	pthread_mutex_lock(&fs->wmu);
	/* (storage freed: at once, so its space goes back to the host) */
	freed = fs->meta_freed;
	due = pager_unsynced(&fs->pg) && (now - fs->meta_ns >= idle || freed);
	if (due)
		fs->meta_freed = false;
	pthread_mutex_unlock(&fs->wmu);
	if (!due || fs_meta_settle(fs) != 0)
		return;
	/* (FILE's name through a generation held: a live refresh may put a
	 * new one in fs->f meanwhile, TSan) */
	g = gen_current(fs);
	if (freed)
		h5fs_log(fs, LOG_INFO, "storage freed: fsync'd, its space given back to the host, %s trimmed to its "
			 "end of allocation", h5_file_path(g->f));
	else
		h5fs_log(fs, LOG_INFO, "attribute and link changes idle for %lld ms: fsync'd, %s trimmed to its end "
			 "of allocation", (long long)(idle / 1000000), h5_file_path(g->f));
	gen_release(g);
}

/* The idle kind's look (the scheduler's, commit/sched.c), once a second:
 * one handle idle for the kind's idle_ms committed, else the changes
 * made durable. idle_ms 0 (-o idle_commit=0): never. */
static int64_t idle_poll(void *owner, int64_t now)
{
	h5fs *fs = owner;
	int64_t idle = (int64_t)commit_policy(fs, COMMIT_WRITES).idle_ms * 1000000;
	int64_t since = now - idle;
	struct wfile *pick;

	if (!idle)
		return INT64_MAX;
	pick = wfile_find_pin(fs, idle_for_long, &since);
	if (!pick) {
		meta_idle(fs, now, idle);
		return h5fs_now_ns() + 1000000000;
	}
	/* looked at again after another idle period, whatever happens */
	__atomic_store_n(&pick->last_ns, now, __ATOMIC_RELAXED);
	if (wfile_fsync(fs, pick, pick->n->ino) == 0)
		h5fs_log(fs, LOG_INFO, "%s: idle for %lld ms: committed%s", show_path(pick->n->path),
			 (long long)(idle / 1000000),
			 __atomic_load_n(&pick->holding, __ATOMIC_RELAXED) ? " (a partial row keeps FILE locked)"
									     : ", FILE's lock given back");
	wfile_unpin(fs, pick);
	return h5fs_now_ns();     /* the next idle one at once */
}

/* The kind's flush (fs_meta_sync: fsyncdir, fsync of a descriptor without
 * bytes of its own; its stop at the unmount): every descriptor holding
 * rows or bytes not committed, committed as its fsync commits it (the
 * rows whole, the kept bytes, durably; its hold given back when nothing
 * of it waits). Pinned meanwhile: its release waits. A write of it under
 * way is safe beside this: its admission and ticket are taken under one
 * q->mu, and its hold is given back only under q->apply and q->mu with
 * nothing of it waiting (wfile.c wfile_give_back). The first error is
 * returned, each kept in its handle too. */
static int idle_flush(void *owner)
{
	h5fs *fs = owner;
	struct wfile **v = NULL;
	size_t n = 0, cap = 0;
	int err = 0;

	pthread_mutex_lock(&fs->lock);
	for (struct hlink *h = fs->open_wfiles.next; h != &fs->open_wfiles; h = h->next) {
		struct wfile *w = (struct wfile *)(void *)h;

		if (!__atomic_load_n(&w->holding, __ATOMIC_RELAXED))
			continue;
		if (n == cap) {
			struct wfile **nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));

			if (!nv) {
				err = ENOMEM;
				break;
			}
			v = nv;
		}
		w->pins++;
		v[n++] = w;
	}
	pthread_mutex_unlock(&fs->lock);
	for (size_t i = 0; i < n; i++) {
		int e = wfile_fsync(fs, v[i], v[i]->n->ino);

		if (e && !err)
			err = e;
		wfile_unpin(fs, v[i]);
	}
	free(v);
	return err;
}

/* The write descriptors' kind (periodic: after the batches, which its
 * flush and look may flush). Its policy (commit/sched.c commit_policy;
 * H5FS_COMMIT_WRITES_BYTES, _MS, _IDLE_MS override it): a descriptor's
 * pending bytes - kept overwrites (overwrite.c) and appended rows (the
 * engine's append stream, given it at open: wfile_append_open) - are
 * committed by the writing request once max_bytes (64 MiB) wait, rows
 * also max_ms (1 s) after the oldest came; a descriptor idle for idle_ms
 * (-o idle_commit) by the look above; all at fsync, close, fs_meta_sync
 * (its flush) and the unmount (its stop). Its admit (wfile.c
 * wfile_admit) decides every refusal of a write before its answer. */
const struct commit_kind idle_kind = {
	.name = "write descriptors", .key = "WRITES", .bit = COMMIT_WRITES,
	.policy = { .max_ms = 1000, .max_bytes = (uint64_t)64 << 20 },
	.poll = idle_poll, .flush = idle_flush, .stop = wfile_idler_stop, .admit = wfile_admit,
};

void wfile_idler_start(h5fs *fs)
{
	struct commit_slot *s;
	int err = ENOMEM;

	if (!pager_writes(&fs->pg) || fs->idle_slot)
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

/* The unmount (commit_sched_stop): what descriptors still hold committed
 * (the kernel released them all but after a forced unmount), then the
 * slot unregistered. */
void wfile_idler_stop(h5fs *fs)
{
	struct commit_slot *s = fs->idle_slot;

	if (!s)
		return;
	if (idle_flush(fs) != 0)
		h5fs_log(fs, LOG_ERR, "unmounting: bytes a write descriptor left could not be committed");
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
