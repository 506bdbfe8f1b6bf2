/* write.c - write handles: appending (README "Appending", doc/APPEND.md)
 * and overwriting (member/overwrite.c) through the mount; open.c chooses
 * between them and read handles. Their flush, fsync and release are
 * wclose.c's. */
#include "wfile.h"

/* ---- appending: the write path (README "Appending", doc/APPEND.md) -----------------
 * A dataset that can grow along dimension 0 opens for writing on a writable
 * mount. Writes at its end go to the engine's appender, which streams whole
 * rows to the file and commits them every 64 MiB or 1 s, on fsync() and at
 * close (doc/APPEND.md); whenever rows were committed the node gets a
 * freshly opened dataset (size, allocation, mtime) under the node's lock and
 * the kernel's cached attributes are dropped, so stat shows the new size at
 * once. Descriptors of a dataset that can grow bypass the page cache
 * (direct_io: wqueue.c wfile_reader_cached; mapped all the same where the
 * kernel allows it, mount/initio.c) and read the rows accepted and not yet
 * committed from node/tail.c; those of datasets that cannot grow use it
 * (member/overwrite.c).
 *
 * Write-behind (doc/APPEND.md "When a write's errors are reported"): the
 * kernel sends one file's writes one at a time and waits for each reply, so
 * a write is answered as soon as it is checked, and then applied by the
 * same worker, its request buffer still held: the writer prepares its next
 * bytes while the engine stores these. The writes of a dataset's handles
 * are applied in the order they were accepted (tickets); at most WQ_EARLY
 * of them are answered before they are applied, the others wait as before
 * (libfuse's other workers stay free for readers). The offset check runs
 * against the rows the stream will hold once every accepted write is
 * applied (vrows, and each handle's vplen). An error applying a write that
 * was answered already is logged and kept in its handle: the handle's next
 * write, fsync and close fail with it. flush, fsync and release first wait
 * until every accepted write is applied.
 *
 * FILE's lock (fs_write_begin/end, node/node.c; README "Appending"): open
 * for writing takes it and gives it back at once (a FILE another program
 * holds fails the open with EBUSY before anything is written; one it
 * changed is followed first on a live mount, else ESTALE), and the handle
 * writes through that generation's FILE (w->g): once another program
 * changed FILE its next write, fsync or close fails with ESTALE rather
 * than write from a stale view. A handle then holds it from its first write until its rows
 * are committed and it holds no partial row (fsync, close), and takes it
 * again at its next write. An open descriptor that has not written, or
 * whose rows were fsync'd, holds nothing: libhdf5 opens FILE meanwhile.
 * One that wrote and then sits open is committed after -o idle_commit
 * seconds without a write (the idler, idle.c), as fsync would, and so lets
 * FILE go too, unless a partial row is left (rows are whole or not at
 * all). */
/* A handle's write state: NULL for read handles (fh 0, or on a live
 * mount H5FS_FH_CACHED or a tagged dio ledger, member/member.h). */
struct wfile *wfile_of(const struct fuse_file_info *fi)
{
	return fi->fh && fi->fh != H5FS_FH_CACHED && !fh_dio(fi->fh) ? (struct wfile *)(uintptr_t)fi->fh : NULL;
}

/* w holds accepted bytes not committed yet (FILE's lock with them), or
 * no longer: counted in its node (n->wholders) */
void wfile_hold_set(struct wfile *w, bool v)
{
	if (v == __atomic_load_n(&w->holding, __ATOMIC_RELAXED))
		return;
	if (v)
		__atomic_add_fetch(&w->n->wholders, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&w->holding, v, __ATOMIC_RELAXED);
	if (!v)
		__atomic_sub_fetch(&w->n->wholders, 1, __ATOMIC_RELEASE);
}

void h5fs_set_session(h5fs *fs, struct fuse_session *se)
{
	fs->se = se;
}

/* Show what the appender committed. Called (under q->apply) after every
 * operation that may have committed rows, whether or not it succeeded. */
void wfile_refresh(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	h5_dataset *nd = NULL, *old;
	uint64_t alloc;
	struct timespec now;

	/* (a handle of an old generation commits nothing: ESTALE) */
	if (!w->a || h5_append_committed(w->a) == w->q->seen || !gen_is_current(fs, w->g))
		return;
	/* opened under n->lk: two refreshes of one node (this handle's
	 * commit, a reader's show of the rows, another handle's) swap in
	 * the states they opened in the order they opened them - else an
	 * older state landed last, the node showed fewer rows than FILE,
	 * and the next write crossing that stale end appended its rest past
	 * the true one (test_fsx growable in CI: size 111256, model 109241) */
	pthread_rwlock_wrlock(&w->n->lk);
	if (h5_dataset_open(&nd, w->g->f, w->n->addr) < 0) {
		pthread_rwlock_unlock(&w->n->lk);
		h5fs_log(fs, LOG_ERR, "append %s: reopening the dataset: %s", show_path(w->n->path), h5_err_msg());
		return;
	}
	alloc = h5_dataset_allocated(nd);
	old = w->n->ds;
	w->n->ds = nd;
	w->n->view = h5_dataset_view(nd);
	tail_committed(w->n, w->n->view->size(nd));   /* the size: what was accepted */
	xattr_cache_drop(w->n);  /* user.h5.shape has grown */
	w->n->st.st_blocks = blocks_of(alloc);
	/* rows were committed just now: the file was modified now (find
	 * -newer, make, rsync), whether or not its header records a time
	 * (our appends leave a recorded one as it was; a remount shows
	 * FILE's mtime, which is later still) */
	clock_gettime(CLOCK_REALTIME, &now);
	w->n->st.st_mtim = w->n->st.st_ctim = now;
	pthread_rwlock_unlock(&w->n->lk);
	h5_dataset_close(old);
	w->q->seen = h5_append_committed(w->a);
	/* attributes only (offset -1): invalidating pages here could wait on
	 * pages a pending write request holds locked. A changed size makes
	 * the kernel drop the file's cached pages itself. */
	if (fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, fs_ino_out(fs, ino), -1, 0);
}

/* w's generation was replaced by one opened anew without a change of FILE
 * (a stamp too fresh to vouch for its bytes, a failed read's doubt): w,
 * which holds nothing, writes on through the current one, its appender
 * and overwriter opened there again. Another program's change since w was
 * opened (or its object gone) is ESTALE, logged once per descriptor.
 * Under q->mu, FILE's lock held. */
static int wfile_follow(h5fs *fs, struct wfile *w)
{
	h5_appender *a = NULL;
	h5_overwriter *ow = NULL;
	struct use u;
	int e;

	if (gen_is_current(fs, w->g))
		return 0;
	e = node_use_current(&u, fs, w->n);
	if (!e && (u.g->ver != w->g->ver || u.f != u.g->f))
		e = ESTALE;
	if (!e && w->a && h5_append_open(&a, u.f, u.addr) < 0)
		e = ESTALE;
	if (!e && w->ow && ow_open(fs, w->n, &ow) != 0)
		e = ESTALE;
	h5_err_clear();
	if (e) {
		h5_append_drop(a);
		if (!w->stale_logged)
			h5fs_log(fs, LOG_ERR, "write %s: ESTALE: %s was changed by another program after this "
				 "descriptor was opened: open it again", show_path(w->n->path), h5_file_path(fs->f));
		w->stale_logged = true;
		goto out;
	}
	/* (nothing of w waits: the old ones have nothing to write, and
	 * could not, their FILE not holding the lock) */
	h5_append_drop(w->a);
	h5_overwrite_close(w->ow);
	h5_err_clear();
	w->a = a;
	w->ow = ow;
	gen_release(w->g);
	w->g = u.g;
	u.g = NULL;
out:
	node_use_end(&u);
	return e;
}

/* (under q->mu) w's first write since it held nothing: FILE's lock (a
 * live FILE another program changed is followed first), and w on the
 * current generation. */
static int wfile_hold(h5fs *fs, struct wfile *w)
{
	int e;

	if (w->holding)
		return 0;
	e = fs_write_begin(fs);   /* EBUSY, ESTALE: logged there */
	if (!e && (e = wfile_follow(fs, w)) != 0)
		fs_write_end(fs);
	wfile_hold_set(w, e == 0);
	return e;
}

/* Disk space for what answering this write promises, allocated before
 * the answer (issue 56): rows not committed yet, this write's included
 * (append), or the chunks a kept overwrite rewrites. A full disk is
 * ENOSPC for this write, logged with the reason; nothing answered is
 * lost for want of space, and once space is freed writes go on. */
/* Bytes of rows not committed once add more follow the dataset's `end`
 * bytes: the daemon's count (end) may lag behind a resize through another
 * descriptor, whose commit the stream saw already - at least add then
 * (2^64 - 64 KiB was asked of the disk: a spurious EIO, test_procs). */
static uint64_t uncommitted(struct wfile *w, uint64_t end, uint64_t add)
{
	uint64_t c = h5_append_committed(w->a);

	return end + add > c + add ? end + add - c : add;
}

static int wfile_reserve(h5fs *fs, struct wfile *w, uint64_t append_bytes, uint64_t ow_bytes)
{
	int rc = 0, e;

	if (append_bytes && w->a)
		rc = h5_append_reserve(w->a, append_bytes);
	if (rc == 0 && ow_bytes && w->ow)
		rc = h5_overwrite_reserve(w->ow, ow_bytes);
	if (rc == 0)
		return 0;
	e = h5fs_errno(rc);
	h5fs_log(fs, e == ENOSPC ? LOG_NOTICE : LOG_ERR, "write %s: refused (%s) before its answer: %s",
		 show_path(w->n->path), strerror(e), h5_err_msg());
	h5_err_clear();
	return e;
}

/* Accepted bytes readers were shown will not be rows (a dropped partial
 * row: len; a failed append: everything waiting, UINT64_MAX): the node's
 * size goes back and the kernel forgets its size and what a mapping
 * cached of them (the descriptors of a dataset that grows are direct_io:
 * no page of them waits on us locked). */
void wfile_shown_drop(h5fs *fs, struct node *n, fuse_ino_t ino, uint64_t len)
{
	uint64_t was = tail_drop(n, len), now;

	pthread_rwlock_rdlock(&n->lk);
	now = (uint64_t)n->st.st_size;
	pthread_rwlock_unlock(&n->lk);
	if (now < was && fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, fs_ino_out(fs, ino), (off_t)now, 0);
}

/* The error of a write answered before it failed, or 0. */
int wfile_err(struct wfile *w)
{
	int e;

	pthread_mutex_lock(&w->q->mu);
	e = w->err;
	pthread_mutex_unlock(&w->q->mu);
	return e;
}

/* After a commit (flush, fsync): w's rows are in FILE; when nothing of w
 * waits (no accepted write, no partial row), its hold on FILE's lock
 * ends. Under q->mu, so a write accepted meanwhile keeps it. */
void wfile_give_back(h5fs *fs, struct wfile *w)
{
	struct wqueue *q = w->q;
	bool done = false;

	pthread_mutex_lock(&q->mu);
	if (w->holding && q->turn == q->next && w->vplen == 0 && (!w->a || h5_append_pending(w->a) == 0) &&
	    h5_overwrite_buffered(w->ow) == 0) {
		wfile_hold_set(w, false);
		fs_write_end(fs);
		done = true;
	}
	pthread_mutex_unlock(&q->mu);
	/* its durable commit kept the room reserved past the end (txn.c):
	 * given back with the idle sync of changes (idle.c), or at unmount */
	if (done)
		fs_meta_changed(fs);
}

void wfile_free(struct wfile *w)
{
	/* (an emptying nothing can undo any more: its old chunks freed) */
	if (w->undo.valid && w->g)
		h5_dataset_empty_done(w->g->f, &w->undo);
	gen_release(w->g);
	free(w);
}

int wfile_open(h5fs *fs, struct node *n, struct fuse_file_info *fi)
{
	struct wfile *w = NULL;
	h5_empty_undo undo = { 0 };
	struct use u;
	bool ext;
	int rc, e;

	/* files reached by external links (not their generation's FILE)
	 * are opened read-only */
	pthread_rwlock_rdlock(&n->lk);
	ext = n->gen && n->f != n->gen->f;
	pthread_rwlock_unlock(&n->lk);
	if (!fs_writable(fs) || ext) {
		h5fs_log(fs, LOG_NOTICE, "open %s for writing: EROFS: %s", show_path(n->path),
			 ext ? "an object of another file (external link)" : "the mount is read-only");
		return EROFS;
	}
	/* FILE free now (else EBUSY, logged), n as FILE is now (a live
	 * mount follows another program's change first): the first write
	 * takes the lock again. Attributes accepted before are committed
	 * first (member/xbatch.c). */
	commit_barrier(fs, COMMIT_ATTRS);
	rc = fs_write_begin(fs);
	if (rc)
		return rc;
	rc = node_use_current(&u, fs, n);
	if (rc) {
		fs_write_end(fs);
		return rc;
	}
	/* (a node made of a stat-only object has none yet: node.c) */
	rc = node_ds_need(fs, n);
	if (rc) {
		fs_write_end(fs);
		node_use_end(&u);
		return rc;
	}
	/* n->ds is replaced by wfile_refresh() under n->lk after appends */
	pthread_rwlock_rdlock(&n->lk);
	rc = u.f != fs->f ? EROFS : n->type == NT_FILE && n->ds ? 0 : EPERM;
	pthread_rwlock_unlock(&n->lk);
	/* O_TRUNC (cat x > d, cp x d): the dataset emptied, the new bytes
	 * then its rows (member/truncate.c) */
	if (!rc && (fi->flags & O_TRUNC))
		rc = member_resize_undoable(fs, n, &u, 0, &undo, "open with O_TRUNC");
	if (!rc && !(w = calloc(1, sizeof(*w)))) {
		h5_dataset_empty_done(u.f, &undo);
		rc = ENOMEM;
	}
	if (rc) {
		fs_write_end(fs);
		node_use_end(&u);
		return rc;
	}
	w->g = u.g;             /* (the use's reference, kept) */
	u.g = NULL;
	w->undo = undo;
	/* bytes inside the dataset (member/overwrite.c), rows after its end */
	/* O_APPEND only appends: no overwriter (its refusal is the append's) */
	e = fi->flags & O_APPEND ? EPERM : ow_open(fs, n, &w->ow);
	rc = h5_append_open(&w->a, u.f, u.addr);
	fs_write_end(fs);
	node_use_end(&u);
	if (rc < 0 && w->ow) {
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
	 * cache (member/overwrite.c), as its read handles read it; one that
	 * grows as its other descriptors do, the first deciding (wq_attach).
	 * Write-only descriptors (dd, cat >>, shell redirections) bypass it
	 * and save the kernel a copy of every byte (1 GiB of dd: 0.24-0.46x
	 * of a plain file through the cache, bench/README.md); so does
	 * np.save's stream. */
	rc = wq_attach(fs, w, w->ow && !w->npy && (fi->flags & O_ACCMODE) == O_RDWR);
	if (rc) {
		h5_append_drop(w->a);
		h5_overwrite_close(w->ow);
		wfile_free(w);
		return rc;
	}
	fi->fh = (uint64_t)(uintptr_t)w;
	fi->direct_io = !w->cached;
	fi->keep_cache = w->cached;
	/* (a reply the kernel does not take is released by the dispatcher) */
	handle_add(fs, &fs->open_wfiles, &w->link);
	return 0;
}

/* A write wholly inside the dataset, answered before its bytes are taken
 * (write-behind, as appends: the writer prepares its next write meanwhile;
 * the request buffer stays ours until we return). Tickets keep the
 * order of the node's writes; an error is kept in the handle and reported
 * by its next write, fsync or close. */
static bool overwrite_behind(h5fs *fs, struct wfile *w, fuse_req_t req, fuse_ino_t ino, const char *buf,
			     size_t size, off_t off)
{
	struct wqueue *q = w->q;
	struct node *n = w->n;
	bool settle = !w->cached;
	uint64_t t;
	bool early;
	int e;

	pthread_mutex_lock(&q->mu);
	t = q->next++;
	early = q->early < WQ_EARLY;
	if (early)
		q->early++;
	pthread_mutex_unlock(&q->mu);
	if (early)
		fuse_reply_write(req, size);
	pthread_mutex_lock(&q->mu);
	while (q->turn != t)
		pthread_cond_wait(&q->cv, &q->mu);
	pthread_mutex_unlock(&q->mu);
	pthread_mutex_lock(&q->apply);
	e = pending_supersede(fs, w, ino, (uint64_t)off, size);
	if (!e)
		e = ow_put(fs, w->n, w->ow, ino, (uint64_t)off, buf, size, w->cached);
	pthread_mutex_unlock(&q->apply);
	pthread_mutex_lock(&q->mu);
	if (e && early && !w->err)
		w->err = e;
	if (early)
		q->early--;
	/* Answered early, w may be released as soon as the ticket is given
	 * back: w is not touched after, and release waits for the page drop
	 * below (wq_quiesce), which keeps n, w's node, held by the kernel. */
	if (settle)
		q->settling++;
	q->turn++;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	if (settle) {           /* a commit's page drop, no lock held (pending.c) */
		ow_pages_settle(fs, n, ino);
		pthread_mutex_lock(&q->mu);
		q->settling--;
		pthread_cond_broadcast(&q->cv);
		pthread_mutex_unlock(&q->mu);
	}
	if (!early) {
		if (e)
			fuse_reply_err(req, e);
		else
			fuse_reply_write(req, size);
	}
	return true;
}

/* A write inside the dataset (before the committed end; with an appender,
 * the rest of it appends): answered here, and true. False for a write at
 * the end of a dataset that grows, which appends (member_write). Past the
 * end of one that cannot grow: EFBIG; a write crossing that end writes
 * what fits (a short write, as a full file system gives). */
static bool overwrite(h5fs *fs, struct wfile *w, fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		      off_t off)
{
	struct wqueue *q = w->q;
	uint64_t lim, end, n;
	bool accepted = false;
	int e;

	if (!w->ow || off < 0)
		return false;
	pthread_mutex_lock(&q->mu);
	e = w->err;
	end = w->a ? q->vrows * q->row_bytes + w->vplen : 0;
	/* FILE's lock from the first write until the bytes are committed
	 * (wfile_give_back) */
	if (!e)
		e = wfile_hold(fs, w);
	pthread_mutex_unlock(&q->mu);
	pthread_rwlock_rdlock(&w->n->lk);
	lim = tail_base(w->n);       /* committed bytes */
	pthread_rwlock_unlock(&w->n->lk);
	/* over rows accepted, not committed yet: they are committed first
	 * (as for a reader), then overwritten (issue 53) */
	if (!e && w->a && (uint64_t)off < end && (uint64_t)off + size > lim && lim < end)
		lim = wfile_show_rows(fs, w, ino);
	if (!e && (uint64_t)off >= lim) {
		if (w->a)
			return false;
		h5fs_log(fs, LOG_NOTICE, "write %s at %lld: EFBIG: past the end (%llu) of a dataset that cannot grow",
			 show_path(w->n->path), (long long)off, (unsigned long long)lim);
		e = EFBIG;
	}
	n = !e && size < lim - (uint64_t)off ? size : lim - (uint64_t)off;
	if (!e)
		e = wfile_reserve(fs, w, w->a && n < size ? uncommitted(w, end, size - n) : 0, n);
	if (e) {
		__atomic_store_n(&w->failed, true, __ATOMIC_RELAXED);
		fuse_reply_err(req, e);
		return true;
	}
	if (n == size)
		return overwrite_behind(fs, w, req, ino, buf, size, off);
	/* Earlier writes of this dataset's handles go first, those accepted
	 * while we waited too (they checked their offsets against the end
	 * before this write's rows: issue 53, 4 processes); then, q->mu held,
	 * none is accepted until this write's rows count in vrows. */
	for (int tries = 0;; tries++) {
		wq_drain(q);
		pthread_mutex_lock(&q->apply);
		pthread_mutex_lock(&q->mu);
		if (q->turn == q->next || tries >= 100)
			break;
		pthread_mutex_unlock(&q->mu);
		pthread_mutex_unlock(&q->apply);
	}
	e = w->err;
	if (!e && q->turn != q->next) {
		h5fs_log(fs, LOG_NOTICE, "write %s at %lld crossing the end: EBUSY: other descriptors' writes kept "
			 "coming", show_path(w->n->path), (long long)off);
		e = EBUSY;
	}
	end = w->a ? q->vrows * q->row_bytes + w->vplen : 0;
	pthread_rwlock_rdlock(&w->n->lk);
	lim = tail_base(w->n);
	pthread_rwlock_unlock(&w->n->lk);
	if (!e && w->a && end != lim) {
		/* rows applied, not committed: committed now (as wfile_show) */
		int rc = h5_append_show(w->a);

		if (rc < 0)
			e = h5err_logged(fs, rc, "commit of rows appended", w->n->path, NULL, w->n->addr);
		wfile_refresh(fs, w, ino);
	}
	pthread_rwlock_rdlock(&w->n->lk);
	lim = tail_base(w->n);
	pthread_rwlock_unlock(&w->n->lk);
	n = (uint64_t)off >= lim ? 0 : size < lim - (uint64_t)off ? size : lim - (uint64_t)off;
	if (!e && w->a && end != lim && !q->partial && h5_append_pending(w->a) == 0) {
		/* the stream holds nothing waiting: the dataset was resized
		 * through another descriptor and wq_resized is on its way */
		q->vrows = lim / q->row_bytes;
		end = lim;
	}
	if (!e && w->a && n < size && end != lim) {
		/* (a partial row another descriptor wrote) */
		h5fs_log(fs, LOG_NOTICE, "write %s at %lld crossing the end (%llu): EBUSY: %llu bytes other "
			 "descriptors wrote are not committed yet", show_path(w->n->path), (long long)off,
			 (unsigned long long)lim, (unsigned long long)(end - lim));
		e = EBUSY;
	}
	if (!e && w->a && (uint64_t)off > lim) {
		/* the dataset shrank meanwhile (another descriptor's truncate) */
		h5fs_log(fs, LOG_NOTICE, "write %s at %lld: EPERM: past the end (%llu): only appending at the end "
			 "is possible", show_path(w->n->path), (long long)off, (unsigned long long)lim);
		e = EPERM;
	}
	if (!e && w->a && n < size) {
		/* the rest appends, here and now (nothing else is waiting);
		 * accepted first, so later writes go after it */
		if (q->partial && q->partial != w)
			e = EBUSY;
		else if (!(e = tail_accept(w->n, buf + n, size - n, q->row_bytes)))
			vplen_add(q, w, size - n);
		accepted = !e;
	}
	pthread_mutex_unlock(&q->mu);
	if (!e && n)
		e = pending_supersede(fs, w, ino, (uint64_t)off, (size_t)n);
	if (!e && n)
		e = ow_put(fs, w->n, w->ow, ino, (uint64_t)off, buf, (size_t)n, w->cached);
	if (accepted) {
		int rc = h5_append_write(w->a, buf + n, size - n);

		if (rc < 0) {
			int ae = h5err_logged(fs, rc, "append", w->n->path, NULL, w->n->addr);

			wfile_shown_drop(fs, w->n, ino, UINT64_MAX);
			pthread_mutex_lock(&q->mu);
			if (!w->err)
				w->err = ae;    /* the stream takes no more (as member_write) */
			pthread_mutex_unlock(&q->mu);
			if (!e)
				e = ae;
		} else if (!e) {
			n = size;
		}
		wfile_refresh(fs, w, ino);
	}
	pthread_mutex_unlock(&q->apply);
	if (!w->cached)         /* a commit's page drop, no lock held (pending.c) */
		ow_pages_settle(fs, w->n, ino);
	if (e) {
		__atomic_store_n(&w->failed, true, __ATOMIC_RELAXED);
		fuse_reply_err(req, e);
	} else {
		fuse_reply_write(req, (size_t)n);
	}
	return true;
}

/* Bytes written inside the dataset are committed (all of them, durably). */
int wfile_ow_flush(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	int e, rc;

	/* nothing kept, written in place or committed unsynced: nothing of
	 * this handle to commit (a cp's handle appended only: its rows'
	 * commit was durable - an fsync more per file, issue 55) */
	if (!w->ow || !h5_overwrite_pending(w->ow))
		return 0;
	e = fs_write_begin(fs);
	if (e)
		return e;
	/* an overwrite commits over a stream with no rows waiting: other
	 * handles' rows are committed first (else EBUSY, issue 53) */
	if (w->a && h5_overwrite_buffered(w->ow) && (rc = h5_append_show(w->a)) < 0)
		e = h5err_logged(fs, rc, "commit of rows appended", w->n->path, NULL, w->n->addr);
	if (!e)
		e = ow_commit(fs, w->n, w->ow, ino, true, true, w->cached);
	fs_write_end(fs);
	return e;
}

/* The one handler with two possible reply points, by design (write-behind,
 * doc/APPEND.md): a checked write is answered at once while fewer than
 * WQ_EARLY are ahead, and applied after; otherwise it is answered once
 * applied. Either way each request gets exactly one reply. */
/* Bytes appended now, before the answer (npy_bytes): 0 or an errno,
 * kept in the handle too. */
static int append_now(h5fs *fs, struct wfile *w, fuse_ino_t ino, const void *buf, size_t len)
{
	struct wqueue *q = w->q;
	int e, rc;

	pthread_mutex_lock(&q->mu);
	e = w->err;
	if (!e)
		e = wfile_hold(fs, w);
	if (!e)
		e = wfile_reserve(fs, w, uncommitted(w, q->vrows * q->row_bytes + w->vplen, len), 0);
	if (!e)
		e = tail_accept(w->n, buf, len, q->row_bytes);
	if (!e)
		vplen_add(q, w, len);
	pthread_mutex_unlock(&q->mu);
	if (e)
		return e;
	wq_drain(q);
	pthread_mutex_lock(&q->apply);
	rc = h5_append_write(w->a, buf, len);
	if (rc < 0) {
		e = h5err_logged(fs, rc, "append", w->n->path, NULL, w->n->addr);
		wfile_shown_drop(fs, w->n, ino, UINT64_MAX);
	}
	wfile_refresh(fs, w, ino);
	pthread_mutex_unlock(&q->apply);
	if (e) {
		pthread_mutex_lock(&q->mu);
		if (!w->err)
			w->err = e;
		pthread_mutex_unlock(&q->mu);
	}
	return e;
}

/* An np.save placeholder's stream that is no NPY h5fs takes (npy.c
 * npy_demote): the bytes held so far, then the rest of this write (what
 * lies past them), appended to the placeholder now, as any file's bytes
 * are (it is a growable uint8 dataset); later writes append as usual. */
static int npy_bytes(h5fs *fs, struct wfile *w, fuse_ino_t ino, const char *buf, size_t size, off_t off)
{
	uint8_t *head = NULL;
	size_t hlen = 0, skip;
	int e;

	npy_demote(fs, w->npy, &head, &hlen);
	w->npy = NULL;
	skip = hlen - (size_t)off;      /* of this write, held already */
	e = hlen ? append_now(fs, w, ino, head, hlen) : 0;
	if (!e && size > skip)
		e = append_now(fs, w, ino, buf + skip, size - skip);
	free(head);
	return e;
}

/* A write past the end (a hole, as a plain file allows: stress-ng's seek,
 * dd seek=): the dataset grows to the write's offset first, rows of the
 * fill value appended as truncate(2) up does (truncate.c: whole rows, its
 * own commit), then the write appends at the new end. The handle's bytes
 * written before go first (member_set_size commits them). 0, or an errno
 * (logged): EPERM while another descriptor's appended rows stay
 * uncommitted or after a partial row of this one, EINVAL for not whole
 * rows. */
static int past_end(h5fs *fs, struct wfile *w, uint64_t off)
{
	struct wqueue *q = w->q;
	uint64_t end;
	size_t vplen;
	int e;

	pthread_mutex_lock(&q->mu);
	e = w->a ? w->err : 0;
	end = q->vrows * q->row_bytes + w->vplen;
	vplen = w->vplen;
	pthread_mutex_unlock(&q->mu);
	if (e || !w->a || off <= end)
		return e;
	if (vplen % q->row_bytes) {
		h5fs_log(fs, LOG_NOTICE, "write %s at %llu: EPERM: past the end (%llu), after part of a row",
			 show_path(w->n->path), (unsigned long long)off, (unsigned long long)end);
		return EPERM;
	}
	/* (rows another descriptor appends meanwhile are committed by the
	 * next try; a hole is never EBUSY, a truncate's errno) */
	for (int tries = 0;; tries++) {
		wq_drain(q);
		e = member_set_size(fs, w->n, off, "write past the end");
		if (e != EBUSY || tries >= 3)
			break;
	}
	if (e == EBUSY) {
		h5fs_log(fs, LOG_NOTICE, "write %s at %llu: EPERM: past the end, while rows other descriptors "
			 "append are not committed", show_path(w->n->path), (unsigned long long)off);
		e = EPERM;
	}
	return e;
}

void member_write(void *r, fuse_req_t req, uint64_t ino, const char *buf, size_t size, off_t off,
		  struct fuse_file_info *fi)
{
	h5fs *fs = r;
	struct wfile *w = wfile_of(fi);
	struct wqueue *q;
	uint64_t end, t;
	bool early;
	int rc, e;

	if (!w) {
		fuse_reply_err(req, EBADF);
		return;
	}
	if (w->npy) {
		e = npy_write(fs, w->npy, buf, size, off);
		if (e == NPY_DEMOTE)
			e = npy_bytes(fs, w, ino, buf, size, off);
		if (e)
			fuse_reply_err(req, e);
		else
			fuse_reply_write(req, size);
		return;
	}
	__atomic_store_n(&w->last_ns, member_now_ns(), __ATOMIC_RELAXED);
	q = w->q;
	if (!w->append && overwrite(fs, w, req, ino, buf, size, off))
		return;
	if (!w->append && off > 0 && (e = past_end(fs, w, (uint64_t)off)) != 0) {
		__atomic_store_n(&w->failed, true, __ATOMIC_RELAXED);
		fuse_reply_err(req, e);
		return;
	}
	pthread_mutex_lock(&q->mu);
	e = w->err;
	if (!w->a && !e)
		e = EFBIG;      /* (overwrite() answers these; a fixed size cannot grow) */
	/* Rows only go at the end: O_APPEND writes wherever the kernel thinks
	 * the end is (its size may lag behind bytes of an unfinished row);
	 * others must write exactly at the end, accepted writes included. */
	end = q->vrows * q->row_bytes + w->vplen;
	if (!e && (off < 0 || (!w->append && (uint64_t)off != end)))
		e = EPERM;
	/* rows are whole: another descriptor's partial row must be ended
	 * first (and readers are shown the rows in the order they come) */
	if (!e && q->partial && q->partial != w) {
		h5fs_log(fs, LOG_NOTICE, "append %s: another descriptor has written part of a row: EBUSY until it "
			 "writes the rest or is closed", show_path(w->n->path));
		e = EBUSY;
	}
	if (!e)
		e = wfile_hold(fs, w);
	if (!e)
		e = wfile_reserve(fs, w, uncommitted(w, end, size), 0);
	/* kept and shown from now on (node/tail.c) */
	if (!e)
		e = tail_accept(w->n, buf, size, q->row_bytes);
	if (e) {
		pthread_mutex_unlock(&q->mu);
		if (e == EPERM)
			h5fs_log(fs, LOG_NOTICE, "write %s at %lld: EPERM: only appending at %llu is possible",
			       show_path(w->n->path), (long long)off, (unsigned long long)end);
		__atomic_store_n(&w->failed, true, __ATOMIC_RELAXED);
		fuse_reply_err(req, e);
		return;
	}
	t = q->next++;
	vplen_add(q, w, size);
	early = q->early < WQ_EARLY;
	if (early)
		q->early++;
	pthread_mutex_unlock(&q->mu);
	if (early)
		fuse_reply_write(req, size);

	pthread_mutex_lock(&q->mu);
	while (q->turn != t)
		pthread_cond_wait(&q->cv, &q->mu);
	pthread_mutex_unlock(&q->mu);
	pthread_mutex_lock(&q->apply);
	rc = h5_append_write(w->a, buf, size);
	if (rc < 0) {
		if (early)
			h5fs_log(fs, LOG_ERR, "append %s (object header 0x%llx): %s: reported by the next write, "
			       "fsync or close", show_path(w->n->path), (unsigned long long)w->n->addr, h5_err_msg());
		/* (before the answer: the kernel must not keep the size) */
		wfile_shown_drop(fs, w->n, ino, UINT64_MAX);
		if (!early)
			reply_h5err_obj(fs, req, rc, "append", w->n->path, NULL, w->n->addr);
	}
	wfile_refresh(fs, w, ino);
	pthread_mutex_unlock(&q->apply);
	pthread_mutex_lock(&q->mu);
	if (rc < 0) {
		/* the stream did not take the bytes: the handle takes no more */
		if (!w->err)
			w->err = h5fs_errno(rc);
	}
	if (early)
		q->early--;
	q->turn++;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	if (!early && rc == 0)
		fuse_reply_write(req, size);
}

