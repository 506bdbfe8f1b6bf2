/* wclose.c - a write handle's flush (close), fsync, the commits a reader
 * asks for (show), and its release: the rows and kept bytes it was
 * answered for committed, durably, each error told to its program, a
 * failed replacement put back (write.c has the handle's open and the
 * write path; wstate.h what they share). */
#include "wstate.h"
#include "npystream.h"
#include "resize.h"
#include "handle.h"
#include "batch.h"

/* Whether the handle has rows to commit: only one that holds FILE's lock
 * does (it takes the lock at its first write and gives it back once its
 * rows are committed and durable, wfile_give_back). One that has not
 * written, or whose rows fsync or the idle commit made durable, has
 * nothing: its flush commits nothing, and takes no lock (a durable commit
 * of nothing may still write, the EOF address dropping back from an
 * earlier commit's reserve: cp /dev/null gave EBUSY, "written without
 * its lock"; unmounting gives the reserve back). */
static bool has_rows(const struct wfile *w)
{
	return __atomic_load_n(&w->holding, __ATOMIC_RELAXED);
}

/* (under q->apply) w's rows committed durably, the node shown what was
 * committed; when that failed, the rows readers were shown will not be:
 * the size goes back (else every later read waits for them, then EIO).
 * One that holds nothing has nothing to commit (has_rows). */
static int commit_rows(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	int rc = w->a && has_rows(w) ? h5_append_flush(w->a) : 0;

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
		if (h5_append_committed(w->a) >= end) {
			h5_err_clear();
			rc = 0;
		}
	}

	if (rc < 0)
		wfile_shown_drop(fs, w->n, ino, UINT64_MAX);
	wfile_refresh(fs, w, ino);
	return rc;
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
	wq_drain(w->q);
	pthread_mutex_lock(&w->q->apply);
	rc = commit_rows(fs, w, ino);
	e = rc < 0 ? 0 : wfile_err(w);
	if (rc == 0 && !e)
		e = wfile_ow_flush(fs, w, ino);
	/* (a handle that holds nothing has no partial row: the stream's rows
	 * pending then are other handles', issue 53) */
	partial = rc < 0 || e || !w->a || !has_rows(w) ? 0 : h5_append_pending(w->a);
	if (partial) {
		h5fs_log(fs, LOG_NOTICE, "append %s: %zu trailing bytes are not a whole row of %llu bytes: "
		       "not appended", show_path(w->n->path), partial,
		       (unsigned long long)h5_append_row_bytes(w->a));
		h5_append_discard(w->a);
		pthread_mutex_lock(&w->q->mu);
		/* readers were shown it, last (no one appends after a partial row) */
		wfile_shown_drop(fs, w->n, ino, w->vplen);
		w->vplen = 0;
		if (w->q->partial == w)
			w->q->partial = NULL;
		pthread_mutex_unlock(&w->q->mu);
		e = EINVAL;
	}
	pthread_mutex_unlock(&w->q->apply);
	wfile_give_back(fs, w);
	ow_pages_settle(fs, w->n, ino);
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
	int rc, e;

	if (!w) {
		/* no rows of ours: what attribute and link changes wrote is
		 * made durable (they commit ordered, not synced) */
		return fs_meta_sync(fs);        /* (nothing unsynced on a read-only mount) */
	}
	if (w->npy)
		return npy_flush(fs, w->npy, false);
	wq_drain(w->q);
	pthread_mutex_lock(&w->q->apply);
	rc = commit_rows(fs, w, ino);   /* committed rows are on disk (fsync'd) */
	e = rc < 0 ? 0 : wfile_err(w);
	if (rc == 0 && !e)
		e = wfile_ow_flush(fs, w, ino);
	pthread_mutex_unlock(&w->q->apply);
	if (rc == 0 && !e)
		wfile_give_back(fs, w);
	ow_pages_settle(fs, w->n, ino);
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
	rc = h5_append_show(w->a);
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
	int err = wfile_fsync(r, wfile_of(fi), ino), e2 = fs_meta_sync(r);

	if (err && wfile_of(fi))
		__atomic_store_n(&wfile_of(fi)->failed, true, __ATOMIC_RELAXED);
	return err ? err : e2;
}

/* A new file whose writes a full disk refused and that holds nothing
 * (cp -r on a full disk: "error writing", then close): its name was never
 * linked (lbatch.c) and is given up, so no empty name is left behind
 * (issue 69 item 5; it was 20-368 empty datasets of 1,000 files). One a
 * descriptor still writes, or linked already, stays. */
static void forget_refused(h5fs *fs, struct wfile *w)
{
	struct node *n = w->n;
	uint64_t size, pino;
	char *name = NULL;

	if (!__atomic_load_n(&w->nospc, __ATOMIC_RELAXED) || w->undo.valid || wfile_writing_addr(fs, n->addr))
		return;
	pthread_rwlock_rdlock(&n->lk);
	size = (uint64_t)n->st.st_size;
	pthread_rwlock_unlock(&n->lk);
	if (size || !lbatch_forget(fs, n->f, n->addr, &name, &pino))
		return;
	h5fs_log(fs, LOG_DEBUG, "create %s: no space for its bytes: the new empty file is not kept", show_path(n->path));
	/* queued for the one notification thread, as every notification
	 * (kit/notify.h): a notification waits in the kernel for the locks
	 * of what it names, which a request of that directory may hold while
	 * it waits for this release's thread */
	notify_inval_entry(fs->se, fs_ino_out(fs, pino), name, strlen(name));
	free(name);
}

void wfile_release(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	size_t partial = 0;
	bool told;
	int rc, e;

	/* a new file's name is not linked while its rows are committed
	 * below and forget_refused decides (lbatch.c) */
	lbatch_busy(fs, w->n, true);
	handle_del(fs, &w->link);
	pthread_mutex_lock(&fs->lock);   /* the idler may be committing it */
	while (w->pins)
		pthread_cond_wait(&fs->idle_cv, &fs->lock);
	pthread_mutex_unlock(&fs->lock);
	/* flush normally applied everything; bytes written after it (through
	 * a dup'd descriptor closed later) are handled the same way here, but
	 * release cannot report errors any more: they are logged */
	if (w->npy)
		npy_release(fs, w->npy);
	/* (text after the last flush, through a dup'd descriptor: logged) */
	if (w->csv && csvin_flush(fs, w, ino) != 0)
		__atomic_store_n(&w->failed, true, __ATOMIC_RELAXED);
	wq_quiesce(w->q);
	pthread_mutex_lock(&w->q->apply);
	rc = commit_rows(fs, w, ino);
	/* Rows or bytes answered and not written: never only a log line.
	 * When close or fsync told the caller already (ext4's model: the
	 * error reaches the program, the file system goes on), the mount
	 * stays writable; else later writes, fsync and unmount report it. */
	told = __atomic_load_n(&w->failed, __ATOMIC_RELAXED);
	if (rc < 0) {
		h5fs_log(fs, LOG_ERR, "append %s: rows answered earlier are lost%s: %s", show_path(w->n->path),
			 told ? " (the error was returned to the program)" : "", h5_err_msg());
		if (!told)
			fs_lost_set(fs, h5fs_errno(rc));
	}
	if ((e = wfile_ow_flush(fs, w, ino)) != 0 && !told)
		fs_lost_set(fs, e);     /* bytes answered, not written (logged) */
	h5_overwrite_close(w->ow);
	/* A handle that holds nothing had its rows committed durably (flush,
	 * fsync or the idler gave FILE's lock back only then): it writes
	 * nothing now. Closing its appender would commit - at least give the
	 * reserve back, a superblock write - without FILE's lock, after
	 * another handle let it go: refused, and the shared stream failed for
	 * every appender of the dataset (issue 56: three writers). */
	if (has_rows(w)) {
		rc = h5_append_close(w->a, &partial);
	} else {
		h5_append_drop(w->a);
		rc = 0;
	}
	pthread_mutex_lock(&w->q->mu);
	if (w->vplen)
		wfile_shown_drop(fs, w->n, ino, w->vplen);
	if (w->q->partial == w)
		w->q->partial = NULL;
	pthread_mutex_unlock(&w->q->mu);
	pthread_mutex_unlock(&w->q->apply);
	if (rc < 0 && partial)
		h5fs_log(fs, LOG_NOTICE, "append %s: %zu trailing bytes dropped at release", show_path(w->n->path),
		       partial);
	if (w->holding) {
		wfile_hold_set(w, false);
		commit_end(fs, NULL, false);      /* committed (or failed): FILE is given back */
		fs_meta_changed(fs);   /* (the room its commit kept: wfile_give_back) */
	}
	/* cp or `cat x >` over the dataset: a failure its caller was told
	 * of (or that only this release met) puts the old rows back */
	if (w->undo.valid && (w->err || rc < 0 || __atomic_load_n(&w->failed, __ATOMIC_RELAXED)))
		trunc_unempty(fs, w->n, ino, w->g, &w->undo);
	else if (w->undo.valid)
		h5_dataset_empty_done(w->g->f, &w->undo);   /* the old chunks freed */
	ow_pages_settle(fs, w->n, ino);
	wq_detach(fs, w);
	forget_refused(fs, w);
	lbatch_busy(fs, w->n, false);
	if (w->held)
		node_unref(fs, w->n->ino, 1);
	wfile_free(w);
}
