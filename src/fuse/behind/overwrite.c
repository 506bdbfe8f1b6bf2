/* overwrite.c - writing bytes inside datasets through the mount
 * (doc/OVERWRITE.md; man h5fs MODIFYING): pwrite, dd conv=notrunc,
 * numpy.memmap(mode="r+").
 *
 * A write handle's bytes inside the dataset go to its node's one
 * overwriter (engine overwrite.c; wstate.h struct wqueue's ow: the
 * writeback of the node's handles, issue 81 item 3), which keeps them in
 * memory; they are committed in one
 * ordered commit at close (flush) and fsync (msync), durably, and -
 * without fsync - whenever the write descriptors' kind's max_bytes wait
 * (64 MiB; behind/idle.c, commit/sched.c commit_policy), keeping a trailing
 * partial element back for the rest of it (bytes the
 * engine wrote in place at once, whole elements of contiguous storage,
 * count for none of it: they wait only to be made durable). After a
 * commit the node gets a freshly opened dataset (the index may have
 * moved).
 *
 * Page cache. O_RDWR handles write through the kernel's page cache (no
 * direct_io; of a dataset that grows too: wqueue.c wq_attach), so shared
 * writable mappings work, beside write() as well:
 * the kernel copies each write() into its pages, and dirty mapped pages
 * come back as writes at msync, munmap and writeback. The cache then holds
 * the new bytes before FILE does, which is right; a page the kernel did
 * not hold whole (a write of part of it) is read from us when next
 * wanted, and answered with FILE's bytes under the bytes the node's write
 * handles keep (behind/pending.c, issue 53). A commit's page drop waits
 * until its caller holds no ticket and no apply lock (ow_pages_settle):
 * a WRITE handler's pages, or a reader's, may be locked by the kernel
 * while it waits for those.
 * Write-only handles use direct_io
 * (behind/write.c): the kernel caches none of their bytes, and their
 * commit drops the pages read handles may hold, after (above). */
#include "wstate.h"

/* An overwriter of n in f: 0, or the errno (logged) */
static int ow_open(h5fs *fs, h5_file *f, struct node *n, h5_overwriter **out)
{
	int rc = h5_overwrite_open(out, f, __atomic_load_n(&n->addr, __ATOMIC_ACQUIRE));

	if (rc == 0)
		return 0;
	/* what cannot be written in place or by chunk: one line, its own errno */
	if (rc == H5_ERR_UNSUPPORTED) {
		h5fs_log(fs, LOG_NOTICE, "open %s for writing (object header 0x%llx): EOPNOTSUPP: %s",
			 show_path(n->path), (unsigned long long)n->addr, h5_err_msg());
		return EOPNOTSUPP;
	}
	return h5err_logged(fs, rc, "open for writing", n->path, NULL, n->addr);
}

int ow_check(h5fs *fs, struct node *n)
{
	struct gen *g = gen_current(fs);
	h5_overwriter *ow = NULL;
	int e = ow_open(fs, g->f, n, &ow);

	h5_overwrite_close(ow);
	gen_release(g);
	return e;
}

/* (under q->mu) The node's overwriter in the current generation:
 * opened at the first use, and again once a new generation came and it
 * keeps nothing (one that keeps bytes has a holder of FILE's lock, under
 * which no generation is made: live/live.c); bytes it committed and did
 * not sync are the new one's durable commit's (a durable commit with
 * nothing to write syncs FILE), as wfile_follow did for a handle's own.
 * Its space is reserved on its FILE, whose lock the new generation's
 * holds (an old one's: EBUSY "allocated without its lock", stress-ng
 * aiol). The old one is retired, not closed: a reader under q->apply
 * may still look into it (empty), and it is closed under both locks
 * (q_ow) or with the queue. q->mu is where the admission reserves
 * (wfile.c, under q->mu, with or without q->apply). NULL and *e: the
 * errno. */
static h5_overwriter *q_ow_locked(h5fs *fs, struct wqueue *q, struct node *n, int *e)
{
	struct gen *g = gen_current(fs);
	struct wq_retired *r = NULL;
	h5_overwriter *cur = __atomic_load_n(&q->ow, __ATOMIC_ACQUIRE), *ow = NULL;

	*e = 0;
	if (cur && (q->owg == g || h5_overwrite_buffered(cur))) {
		gen_release(g);
		return cur;
	}
	if (cur && !(r = malloc(sizeof(*r)))) {
		gen_release(g);
		*e = ENOMEM;
		return NULL;
	}
	*e = ow_open(fs, g->f, n, &ow);
	if (*e) {
		free(r);
		gen_release(g);
		return NULL;
	}
	if (r)
		wq_retire(q, r, cur, NULL, q->owg);
	q->owg = g;
	__atomic_store_n(&q->ow, ow, __ATOMIC_RELEASE);
	return ow;
}

/* (under q->apply) the same, taking q->mu; the retired ones closed */
static h5_overwriter *q_ow(h5fs *fs, struct wqueue *q, struct node *n, int *e)
{
	h5_overwriter *ow;

	pthread_mutex_lock(&q->mu);
	ow = q_ow_locked(fs, q, n, e);
	pthread_mutex_unlock(&q->mu);
	wq_retired_close(q);
	return ow;
}

/* Show what a commit changed: the node's dataset reopened (a chunk index
 * may have a new root), its allocation and mtime; cached attributes
 * dropped, and the pages of read handles when the writer bypassed them
 * (pages: the caller holds no page the kernel could have locked). */
static void ow_refresh(h5fs *fs, struct node *n, fuse_ino_t ino, bool pages)
{
	h5_dataset *nd = NULL, *old;
	int64_t mt;

	/* (opened under n->lk: refreshes land in the order of the states
	 * they opened, write.c wfile_refresh) */
	pthread_rwlock_wrlock(&n->lk);
	if (h5_dataset_open(&nd, fs->f, n->addr) < 0) {
		pthread_rwlock_unlock(&n->lk);
		h5fs_log(fs, LOG_ERR, "write %s: reopening the dataset: %s", show_path(n->path), h5_err_msg());
		return;
	}
	old = n->ds;
	n->ds = nd;
	n->view = h5_dataset_view(nd);
	tail_committed(n, n->view->size(nd));   /* rows accepted after it stay shown */
	n->st.st_blocks = blocks_of(h5_dataset_allocated(nd));
	xattr_cache_drop(n);
	if (h5_dataset_mtime(nd, &mt) == 0)
		n->st.st_mtime = n->st.st_ctime = (time_t)mt;
	else    /* none stored: now, within the mount (issue 72 item 7) */
		clock_gettime(CLOCK_REALTIME, &n->st.st_mtim), n->st.st_ctim = n->st.st_mtim;
	pthread_rwlock_unlock(&n->lk);
	h5_dataset_close(old);
	/* The pages are dropped after (ow_pages_settle), once the caller holds
	 * neither its ticket nor the apply lock: a page-cached writer of the
	 * node may hold a page locked while its write waits for those, and so
	 * may a reader (behind/pending.c: a read waits for the writes answered
	 * before it) - dropping them here would wait forever. */
	if (pages)
		__atomic_store_n(&n->pages_stale, true, __ATOMIC_RELEASE);
	if (fs->se)
		notify_inval_inode(fs->se, fs_ino_out(fs, ino), -1, 0);
}

/* After a commit of q->ow: every handle of the node told. Done (rc 0):
 * those whose bytes it took no longer keep any (kept: bytes are left,
 * undurable: some are not durable yet). Failed: the error is each one's
 * that kept bytes in it (answered earlier: its next write, fsync and
 * close report it). Under q->apply. */
static void ow_told(h5fs *fs, struct wqueue *q, int e, bool kept, bool undurable)
{
	pthread_mutex_lock(&q->mu);
	pthread_mutex_lock(&fs->lock);
	for (struct hlink *h = fs->open_wfiles.next; h != &fs->open_wfiles; h = h->next) {
		struct wfile *o = (struct wfile *)(void *)h;

		if (o->q != q)
			continue;
		if (e && __atomic_load_n(&o->ow_kept, __ATOMIC_ACQUIRE)) {
			if (!o->err)
				o->err = e;
			__atomic_store_n(&o->failed, true, __ATOMIC_RELAXED);
		}
		if (!e && !kept)
			__atomic_store_n(&o->ow_kept, false, __ATOMIC_RELEASE);
		if (!e && !undurable)
			__atomic_store_n(&o->ow_undurable, false, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_unlock(&q->mu);
}

int ow_commit(h5fs *fs, struct wqueue *q, struct node *n, fuse_ino_t ino, bool all, bool durable)
{
	h5_overwriter *ow = wq_ow(q);
	bool any, left;
	int rc, e = 0;

	if (!ow)
		return 0;
	any = h5_overwrite_buffered(ow) != 0;
	rc = h5_overwrite_commit(ow, all, durable);
	left = h5_overwrite_buffered(ow) != 0;
	if (any)
		ow_refresh(fs, n, ino, q->ow_pages);
	/* the kernel's pages may hold what FILE did not take */
	if (rc < 0 && __atomic_load_n(&n->cached_writers, __ATOMIC_ACQUIRE))
		__atomic_store_n(&n->pages_stale, true, __ATOMIC_RELEASE);
	if (rc < 0)
		e = h5err_logged(fs, rc, "write", n->path, NULL, n->addr);
	else if (!left)
		q->ow_pages = false;
	ow_told(fs, q, e, left, h5_overwrite_pending(ow) != 0);
	return e;
}

int ow_punch(h5fs *fs, struct node *n, const struct use *u, fuse_ino_t ino, uint64_t off, uint64_t len)
{
	h5_overwriter *ow = NULL;
	int rc = h5_overwrite_open(&ow, u->f, u->addr), e = 0;

	if (rc == 0)
		rc = h5_overwrite_reserve(ow, 0);
	if (rc == 0)
		rc = h5_overwrite_punch(ow, off, len);
	if (rc == 0)
		rc = h5_overwrite_commit(ow, 1, 1);
	if (rc == H5_ERR_UNSUPPORTED) {
		h5fs_log(fs, LOG_NOTICE, "fallocate %s: punching a hole: EOPNOTSUPP: %s", show_path(n->path),
			 h5_err_msg());
		h5_err_clear();
		e = EOPNOTSUPP;
	} else if (rc < 0) {
		e = h5err_logged(fs, rc, "fallocate", n->path, NULL, u->addr);
	}
	/* reopened before the close frees what the commit replaced: no
	 * reader follows an old address into reused space */
	if (ow)
		ow_refresh(fs, n, ino, true);
	h5_overwrite_close(ow);
	return e;
}

/* The bound of a descriptor's pending bytes: the write descriptors'
 * kind's max_bytes (idle.c; commit/sched.c commit_policy: 64 MiB,
 * H5FS_COMMIT_WRITES_BYTES overrides it), the bound of its appended rows
 * too (wfile_append_open): the writing request commits them once they
 * reach it */
static uint64_t commit_bytes(h5fs *fs)
{
	uint64_t x = commit_policy(fs, COMMIT_WRITES).max_bytes;

	return x ? x : UINT64_MAX;
}

int ow_put(h5fs *fs, struct wfile *w, fuse_ino_t ino, uint64_t off, const char *buf, size_t len)
{
	struct wqueue *q = w->q;
	struct node *n = w->n;
	h5_overwriter *ow;
	int rc, e;

	if (!(ow = q_ow(fs, q, n, &e)))
		return e;
	rc = h5_overwrite_put(ow, off, buf, len);
	if (rc < 0) {
		if (w->cached)
			__atomic_store_n(&n->pages_stale, true, __ATOMIC_RELEASE);
		return h5err_logged(fs, rc, "write", n->path, NULL, n->addr);
	}
	__atomic_store_n(&w->ow_kept, true, __ATOMIC_RELEASE);
	__atomic_store_n(&w->ow_undurable, true, __ATOMIC_RELEASE);
	if (!w->cached)
		q->ow_pages = true;
	/* kept bytes only: those written in place are FILE's already, and
	 * committing them (header time, fsync, the node reopened) every
	 * 64 MiB stalled a dd in place at 0.6x a plain file (issue 44);
	 * close and fsync still make them durable */
	if (h5_overwrite_kept(ow) >= commit_bytes(fs) || h5_overwrite_dirty(ow) >= commit_bytes(fs))
		return ow_commit(fs, q, n, ino, false, false);
	return 0;
}

int ow_reserve(h5fs *fs, struct wfile *w, uint64_t len)
{
	h5_overwriter *ow;
	int e;

	ow = q_ow_locked(fs, w->q, w->n, &e);
	return ow ? h5_overwrite_reserve(ow, len) : h5_err_set(H5_ERR_IO, "%s", strerror(e));
}

void ow_pages_settle(h5fs *fs, struct node *n, fuse_ino_t ino)
{
	if (!__atomic_exchange_n(&n->pages_stale, false, __ATOMIC_ACQ_REL))
		return;
	/* dirty mapped pages among them are written back to us first (the
	 * kernel's launder), taken by another worker */
	if (fs->se)
		notify_inval_inode(fs->se, fs_ino_out(fs, ino), 0, 0);
}
