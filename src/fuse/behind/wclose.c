/* wclose.c - a write handle's flush (close) and fsync, the commits a
 * reader asks for (show), and those of a node's handles other requests
 * ask for (wfile_commit_node before a time or size is set, trunc_set_size;
 * wfile_show_addr for a new file's name, lbatch.c): the rows and kept
 * bytes it was answered for committed, durably, each error told to its
 * program (wfile.c has the handle's state, wopen.c its open and release,
 * write.c the write path; wstate.h what they share). Below lbatch.c and
 * wopen.c, above wfile.c and truncate.c. */
#include "wstate.h"
#include "npystream.h"
#include "resize.h"
#include "handle.h"

/* Whether the handle has rows to commit: only one that holds FILE's lock
 * does (it takes the lock at its first write and gives it back once its
 * rows are committed and durable, wfile_give_back). One that has not
 * written, or whose rows fsync or the idle commit made durable, has
 * nothing: its flush commits nothing, and takes no lock (a durable commit
 * of nothing may still write, the EOF address dropping back from an
 * earlier commit's reserve: cp /dev/null gave EBUSY, "written without
 * its lock"; unmounting gives the reserve back). */
bool wfile_has_rows(const struct wfile *w)
{
	return __atomic_load_n(&w->holding, __ATOMIC_RELAXED);
}

/* (under q->apply) w's rows committed durably, the node shown what was
 * committed; when that failed, the rows readers were shown will not be:
 * the size goes back (else every later read waits for them, then EIO).
 * One that holds nothing has nothing to commit (wfile_has_rows). */
static int commit_rows(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	h5_appender *a = wq_a(w->q);
	int rc = a && w->grows && wfile_has_rows(w) ? h5_append_flush(a) : 0;

	/* The stream is the dataset's: it may have failed with another
	 * descriptor's rows, whose writer is told. Nothing of this handle's
	 * was in it when every byte it accepted was committed before (or it
	 * wrote inside the dataset only): not its loss - an overwriter's
	 * release marked the mount lost for an appender's injected fault
	 * (test_concurrent_fault) */
	if (rc < 0) {
		uint64_t end;

		pthread_mutex_lock(&w->q->mu);
		end = w->rows_end;
		pthread_mutex_unlock(&w->q->mu);
		if (h5_append_committed(a) >= end) {
			h5_err_clear();
			rc = 0;
		}
	}

	if (rc < 0)
		wfile_shown_drop(fs, w->n, ino, UINT64_MAX);
	wfile_refresh(fs, w, ino);
	return rc;
}

/* (under q->apply) The bytes of w's partial row in the node's appender:
 * only q->partial's are w's (a handle that holds nothing has none: the
 * rows pending then are other handles', issue 53) */
static size_t partial_of(struct wfile *w)
{
	struct wqueue *q = w->q;
	bool mine;

	pthread_mutex_lock(&q->mu);
	mine = q->partial == w;
	pthread_mutex_unlock(&q->mu);
	return mine && wq_a(q) && wfile_has_rows(w) ? h5_append_pending(wq_a(q)) : 0;
}

/* The node's writeback committed for w, durably, as close (WB_CLOSE),
 * fsync (WB_FSYNC) and release (WB_RELEASE) need it - the one place they
 * commit: every write accepted applied first, then under q->apply the
 * rows of the node's appender, then the bytes its overwriter keeps (rows
 * first: an overwrite commits over a stream with nothing waiting). At
 * close and release w's partial row is dropped (*partial: its size;
 * readers were shown it, last: no one appends after a partial row); then
 * w's hold of FILE is given back once nothing of it waits (fsync: only
 * when everything was committed). Returns the rows' engine error (< 0),
 * or 0 and *e: an earlier write's errno, the overwriter's (logged). */
enum wb_how { WB_CLOSE, WB_FSYNC, WB_RELEASE };

static int wb_commit(h5fs *fs, struct wfile *w, fuse_ino_t ino, enum wb_how how, int *e, size_t *partial)
{
	struct wqueue *q = w->q;
	int rc;

	*partial = 0;
	if (how == WB_RELEASE)
		wq_quiesce(q);
	else
		wq_drain(q);
	pthread_mutex_lock(&q->apply);
	rc = commit_rows(fs, w, ino);
	/* (release: bytes inside are committed whatever the rows met) */
	*e = rc < 0 || how == WB_RELEASE ? 0 : wfile_err(w);
	if ((rc == 0 || how == WB_RELEASE) && !*e)
		*e = wfile_ow_flush(fs, w, ino);
	if (how != WB_FSYNC && rc == 0 && (how == WB_RELEASE || !*e) && (*partial = partial_of(w)) != 0)
		h5_append_discard(wq_a(q));
	if (how != WB_FSYNC) {
		pthread_mutex_lock(&q->mu);
		if (w->vplen && (*partial || how == WB_RELEASE))
			wfile_shown_drop(fs, w->n, ino, w->vplen);
		if (*partial || how == WB_RELEASE) {
			w->vplen = 0;
			if (q->partial == w)
				q->partial = NULL;
		}
		pthread_mutex_unlock(&q->mu);
	}
	if (how == WB_CLOSE || (how == WB_FSYNC && rc == 0 && !*e))
		wfile_give_back(fs, w);
	pthread_mutex_unlock(&q->apply);
	ow_pages_settle(fs, w->n, ino);
	return rc;
}

int wfile_commit_release(h5fs *fs, struct wfile *w, fuse_ino_t ino, int *e, size_t *partial)
{
	return wb_commit(fs, w, ino, WB_RELEASE, e, partial);
}

/* close() (and fsync()) commit every complete row, durably. At close a trailing
 * partial row is dropped and reported as EINVAL. */
static int do_flush(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	size_t partial;
	int rc, e, ce = 0;

	if (!w)
		return 0;
	if (w->npy)
		return npy_flush(fs, w->npy, true);
	/* a text record without its line end is the last one */
	if (w->csv)
		ce = csvin_flush(fs, w, ino);
	rc = wb_commit(fs, w, ino, WB_CLOSE, &e, &partial);
	if (partial) {
		h5fs_log(fs, LOG_NOTICE, "append %s: %zu trailing bytes are not a whole row of %llu bytes: "
		       "not appended", show_path(w->n->path), partial, (unsigned long long)w->q->row_bytes);
		e = EINVAL;
	}
	return rc < 0 ? h5err_logged(fs, rc, "append", w->n->path, NULL, w->n->addr) : e ? e : ce;
}

int behind_flush(void *r, uint64_t ino, struct fuse_file_info *fi)
{
	struct wfile *w = wfile_of(fi);
	int e = do_flush(r, w, ino);

	if (e && w)
		__atomic_store_n(&w->failed, true, __ATOMIC_RELAXED);
	return e;
}

int wfile_fsync(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	size_t partial;
	int rc, e;

	if (!w) {
		/* no rows of ours: what attribute and link changes wrote is
		 * made durable (they commit ordered, not synced) */
		return fs_meta_sync(fs);        /* (nothing unsynced on a read-only mount) */
	}
	if (w->npy)
		return npy_flush(fs, w->npy, false);
	rc = wb_commit(fs, w, ino, WB_FSYNC, &e, &partial);   /* committed rows are on disk (fsync'd) */
	return rc < 0 ? h5err_logged(fs, rc, "fsync", w->n->path, NULL, w->n->addr) : e;
}

uint64_t wfile_show_rows(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	uint64_t lim;

	wfile_show(fs, w, ino);
	pthread_rwlock_rdlock(&w->n->lk);
	lim = tail_base(w->n);
	pthread_rwlock_unlock(&w->n->lk);
	return lim;
}

void wfile_show(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	int rc;

	wq_drain(w->q);
	pthread_mutex_lock(&w->q->apply);
	rc = wq_a(w->q) ? h5_append_show(wq_a(w->q)) : 0;
	if (rc < 0) {
		/* the stream takes no more rows (as a failed write's apply) */
		int e = h5err_logged(fs, rc, "commit for a reader", w->n->path, NULL, w->n->addr);

		/* the size goes back, the kernel's attributes only: a reader's
		 * page fault may hold a page of these locked while it waits for
		 * us (shown_drop's page drop would wait for it) */
		(void)tail_drop(w->n, UINT64_MAX);
		if (fs->se)
			notify_inval_inode(fs->se, fs_ino_out(fs, ino), -1, 0);
		pthread_mutex_lock(&w->q->mu);
		if (!w->err)
			w->err = e;
		pthread_mutex_unlock(&w->q->mu);
	}
	wfile_refresh(fs, w, ino);
	pthread_mutex_unlock(&w->q->apply);
}

/* The handle's rows, then what setfattr, mkdir, ... committed (xbatch
 * included), and the errno of a change answered earlier and lost. */
int behind_fsync(void *r, uint64_t ino, struct fuse_file_info *fi)
{
	/* (a descriptor without bytes of its own: everything, wfile_fsync) */
	int err = wfile_fsync(r, wfile_of(fi), ino), e2 = wfile_of(fi) ? fs_meta_settle(r) : 0;

	if (err && wfile_of(fi))
		__atomic_store_n(&wfile_of(fi)->failed, true, __ATOMIC_RELAXED);
	return err ? err : e2;
}

/* Every write handle of n holding rows or bytes not committed, committed
 * as fsync commits it (setattr.c: before a time is set, which the
 * appender's commit would set to now), or only n's whole rows, without
 * the last fsync (show: a reader wants them, tail.c; the stream is the
 * node's, so one handle's commit is all of them). Pinned while in use,
 * as above. */
static bool commit_node(h5fs *fs, struct node *n, bool show)
{
	bool any = false, still;

	for (;;) {
		struct wfile *pick = NULL;
		bool busy;

		pthread_mutex_lock(&fs->lock);
		do {
			busy = false;
			for (struct hlink *h = fs->open_wfiles.next; h != &fs->open_wfiles && !pick; h = h->next) {
				struct wfile *w = (struct wfile *)(void *)h;

				if (w->n != n || !__atomic_load_n(&w->holding, __ATOMIC_RELAXED))
					continue;
				/* (a reader does not wait for the idler's or another
				 * reader's use of a handle to end: pinned ones do
				 * too) */
				if (show ? w->grows : !w->pins)
					pick = w;
				else
					busy = true;
			}
			/* A commit before a size change waits for a pinned
			 * handle (a reader's show, the idler): skipping it let
			 * truncate count the rows from before that handle's
			 * commit, and its rows landed after the new end -
			 * fsx: append, mapread (readahead reads it shows them
			 * for), ftruncate up left the dataset larger (issue 65) */
			if (!pick && busy)
				pthread_cond_wait(&fs->idle_cv, &fs->lock);
		} while (!pick && busy);
		if (pick)
			pick->pins++;
		pthread_mutex_unlock(&fs->lock);
		if (!pick)
			return any;
		any = true;
		if (show)
			wfile_show(fs, pick, pick->n->ino);     /* an error stays in the handle */
		else
			(void)wfile_fsync(fs, pick, pick->n->ino);
		pthread_mutex_lock(&fs->lock);
		/* (read while pinned: once let go, its release may free it -
		 * ASan, test_procs) */
		still = __atomic_load_n(&pick->holding, __ATOMIC_RELAXED);
		pick->pins--;
		pthread_cond_broadcast(&fs->idle_cv);
		pthread_mutex_unlock(&fs->lock);
		if (show || still)
			return any;     /* a partial row stays: nothing more to commit */
	}
}

void wfile_commit_node(h5fs *fs, struct node *n)
{
	(void)commit_node(fs, n, false);
}

bool wfile_show_node(h5fs *fs, struct node *n)
{
	return commit_node(fs, n, true);
}

static bool appends_to(const struct wfile *w, const void *arg)
{
	return w->n->addr == *(const uint64_t *)arg && w->grows;
}

static bool appends_holding(const struct wfile *w, const void *arg)
{
	return appends_to(w, arg) && __atomic_load_n(&w->holding, __ATOMIC_RELAXED);
}

bool wfile_writing_addr(h5fs *fs, uint64_t addr)
{
	bool any;

	pthread_mutex_lock(&fs->lock);
	any = wfile_find_locked(fs, appends_to, &addr, false) != NULL;
	pthread_mutex_unlock(&fs->lock);
	return any;
}

void wfile_show_addr(h5fs *fs, uint64_t addr)
{
	struct wfile *pick = wfile_find_pin(fs, appends_holding, &addr);

	if (!pick)
		return;
	/* the stream is the node's: one handle's commit is all of them; an
	 * error stays in the handle (its next write, fsync or close) */
	wfile_show(fs, pick, pick->n->ino);
	wfile_unpin(fs, pick);
}

/* truncate(2), fallocate's growth, a write past the end (member/setattr.c,
 * size.c; write.c): the dataset's rows, FILE held for writing as every
 * write is; rows of it not committed yet first. */
int trunc_set_size(h5fs *fs, struct node *n, uint64_t size, const char *op)
{
	struct use u;
	int e;

	if (n->type != NT_FILE || n->vkind) {
		h5fs_log(fs, LOG_NOTICE, "%s %s: EPERM: not a dataset", op, show_path(n->path));
		return EPERM;
	}
	wfile_commit_node(fs, n);
	e = commit_begin(&u, fs, n, COMMIT_ATTRS, op);
	if (e)
		return e;
	e = trunc_resize_undoable(fs, n, &u, size, NULL, op);
	commit_end(fs, &u, true);
	return e;
}
