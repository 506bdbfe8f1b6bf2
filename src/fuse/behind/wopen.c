/* wopen.c - a write handle's open and release (the member root's, through
 * handle.h): open takes FILE's lock for a moment (EBUSY, ESTALE), empties
 * the dataset for O_TRUNC (truncate.c) and opens the append stream and the
 * overwriter; release commits what is left (wclose.c), puts a failed
 * replacement back, gives a refused new file's name up (lbatch.c) and
 * frees the handle (wfile.c has its state, wstate.h what they share). */
#include "wstate.h"
#include "npystream.h"
#include "resize.h"
#include "handle.h"
#include "batch.h"

void wfile_free(struct wfile *w)
{
	/* (an emptying nothing can undo any more: its old chunks freed) */
	if (w->undo.valid && w->g)
		h5_dataset_empty_done(w->g->f, &w->undo);
	csvin_free(w->csv);
	gen_release(w->g);
	free(w);
}

int wfile_open(h5fs *fs, struct node *n, struct fuse_file_info *fi)
{
	struct wfile *w = NULL;
	h5_appender *a = NULL;
	h5_empty_undo undo = { 0 };
	struct use u;
	bool ext, conv;
	int rc, e;

	/* files reached by external links (not their generation's FILE)
	 * are opened read-only */
	pthread_rwlock_rdlock(&n->lk);
	ext = n->gen && n->f != n->gen->f;
	pthread_rwlock_unlock(&n->lk);
	rc = commit_admit(fs, ext ? PAGER_FOREIGN : PAGER_OPEN_WRITE, "open for writing", n->path);
	if (rc)
		return rc;
	/* n-bit numbers read as values (engine view.c): no write puts bits
	 * back, and O_TRUNC must not empty what no write can then fill.
	 * Said before FILE's lock is asked for: the reason, whoever holds it */
	rc = node_ds_need(fs, n);
	if (rc)
		return rc;
	pthread_rwlock_rdlock(&n->lk);
	rc = n->ds && h5_dataset_converted(n->ds) ? EOPNOTSUPP : 0;
	pthread_rwlock_unlock(&n->lk);
	if (rc) {
		h5fs_log(fs, LOG_NOTICE, "open %s for writing (object header 0x%llx): EOPNOTSUPP: numbers at a "
			 "bit offset or precision (n-bit datatype) read converted; h5fs writes no bits back",
			 show_path(n->path), (unsigned long long)n->addr);
		return rc;
	}
	/* FILE free now (else EBUSY, logged), n as FILE is now (a live
	 * mount follows another program's change first): the first write
	 * takes the lock again. Attributes accepted before are committed
	 * first (behind/xbatch.c). */
	commit_barrier(fs, COMMIT_ATTRS);
	rc = commit_begin(NULL, fs, NULL, COMMIT_FILE, NULL);
	if (rc)
		return rc;
	rc = node_use_current(&u, fs, n);
	if (rc) {
		commit_end(fs, NULL, false);
		return rc;
	}
	/* (a node made of a stat-only object has none yet: node.c) */
	rc = node_ds_need(fs, n);
	if (rc) {
		commit_end(fs, NULL, false);
		node_use_end(&u);
		return rc;
	}
	/* n->ds is replaced by wfile_refresh() under n->lk after appends */
	pthread_rwlock_rdlock(&n->lk);
	ext = u.f != fs->f;
	rc = n->type == NT_FILE && n->ds ? 0 : EPERM;
	/* (converted since the check above: a live FILE's new generation) */
	conv = !rc && h5_dataset_converted(n->ds);
	pthread_rwlock_unlock(&n->lk);
	if (ext)
		rc = commit_admit(fs, PAGER_FOREIGN, "open for writing", n->path);
	if (!rc && conv)
		rc = EOPNOTSUPP;
	/* O_TRUNC (cat x > d, cp x d): the dataset emptied, the new bytes
	 * then its rows (behind/truncate.c) */
	if (!rc && (fi->flags & O_TRUNC))
		rc = trunc_resize_undoable(fs, n, &u, 0, &undo, "open with O_TRUNC");
	if (!rc && !(w = calloc(1, sizeof(*w)))) {
		h5_dataset_empty_done(u.f, &undo);
		rc = ENOMEM;
	}
	if (rc) {
		commit_end(fs, NULL, false);
		node_use_end(&u);
		return rc;
	}
	w->g = u.g;             /* (the use's reference, kept) */
	u.g = NULL;
	w->undo = undo;
	/* bytes inside the dataset (behind/overwrite.c), rows after its end */
	/* O_APPEND only appends: no overwriter (its refusal is the append's) */
	e = fi->flags & O_APPEND ? EPERM : ow_check(fs, n);
	w->can_ow = e == 0;
	rc = wfile_append_open(fs, &a, u.f, u.addr);
	commit_end(fs, NULL, false);
	node_use_end(&u);
	if (rc < 0 && w->can_ow) {
		rc = 0;         /* cannot grow: writes past the end are EFBIG */
	} else if (rc < 0 && e && !(fi->flags & O_APPEND)) {
		/* neither: the overwriter said why (logged) */
		wfile_free(w);
		return e;
	}
	if (rc < 0) {
		e = h5fs_errno(rc);

		h5fs_log(fs, e == EIO ? LOG_ERR : LOG_NOTICE, "open %s for writing (object header 0x%llx): %s%s",
		       show_path(n->path), (unsigned long long)n->addr, e == EIO ? "EIO: " : "", h5_err_msg());
		wfile_free(w);
		return e;
	}
	w->n = n;
	w->append = (fi->flags & O_APPEND) != 0;
	w->npy = npy_stream_take(fs, n->addr, w->g);
	/* Opened to read and write (a shared writable mapping needs both:
	 * numpy.memmap's default r+), a dataset is written through the page
	 * cache (behind/overwrite.c), as its read handles read it; one that
	 * grows too (wq_attach says why).
	 * Write-only descriptors (dd, cat >>, shell redirections) bypass it
	 * and save the kernel a copy of every byte (1 GiB of dd: 0.24-0.46x
	 * of a plain file through the cache, bench/README.md); so does
	 * np.save's stream. */
	/* (the node's appender: a, or the one it has; wstate.h) */
	rc = wq_attach(fs, w, w->can_ow && !w->npy && (fi->flags & O_ACCMODE) == O_RDWR, a);
	if (rc) {
		wfile_free(w);
		return rc;
	}
	fi->fh = (uint64_t)(uintptr_t)w;
	fi->direct_io = !w->cached;
	fi->keep_cache = w->cached;
	/* (a reply the kernel does not take is released by the dispatcher) */
	handle_add(fs, &fs->open_wfiles, &w->link);
	/* a new file's name waits no more for this open (lbatch.c) */
	lbatch_busy(fs, n, false);
	return 0;
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
	/* its rows and bytes committed (wclose.c), its partial row dropped.
	 * A handle that holds nothing had its rows committed durably (flush,
	 * fsync or the idler gave FILE's lock back only then): it commits
	 * nothing now - a commit would at least give the reserve back, a
	 * superblock write, without FILE's lock, after another handle let it
	 * go: refused, and the shared stream failed for every appender of
	 * the dataset (issue 56: three writers). The node's appender is
	 * closed with its queue (wqueue.c). */
	rc = wfile_commit_release(fs, w, ino, &e, &partial);
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
	if (e && !told)
		fs_lost_set(fs, e);     /* bytes answered, not written (logged) */
	if (partial)
		rc = H5_ERR_INVAL;      /* (a replacement's old rows come back, below) */
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

/* Handles whose release never came (FILE unmounted while they were
 * open): freed at exit, after the session loop (member/setup.c
 * handles_free). Only a handle holding FILE's lock writes it. */
void wfile_free_all(h5fs *fs)
{
	while (fs->open_wfiles.next != &fs->open_wfiles) {
		struct wfile *w = (struct wfile *)(void *)fs->open_wfiles.next;

		handle_del(fs, &w->link);
		if (w->npy)
			npy_release(fs, w->npy);
		/* (the node's rows: its appender is dropped with the queue) */
		if (w->holding && wq_a(w->q) && h5_append_flush(wq_a(w->q)) < 0)
			h5_err_clear();
		if (w->holding) {
			wfile_hold_set(w, false);
			commit_end(fs, NULL, false);
		}
		wq_detach(fs, w);
		wfile_free(w);
	}
}
