/* write.c - write handles: appending (README "Appending", doc/APPEND.md)
 * and overwriting (member/overwrite.c) through the mount; open.c chooses
 * between them and read handles. */
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
 * no longer: counted in its node for page-cached reads (ow_read_mark) */
static void hold_set(struct wfile *w, bool v)
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
static void wfile_refresh(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	h5_dataset *nd = NULL, *old;
	uint64_t alloc;
	struct timespec now;

	/* (a handle of an old generation commits nothing: ESTALE) */
	if (!w->a || h5_append_committed(w->a) == w->q->seen || !gen_is_current(fs, w->g))
		return;
	if (h5_dataset_open(&nd, w->g->f, w->n->addr) < 0) {
		h5fs_log(fs, LOG_ERR, "append %s: reopening the dataset: %s", show_path(w->n->path), h5_err_msg());
		return;
	}
	alloc = h5_dataset_allocated(nd);
	pthread_rwlock_wrlock(&w->n->lk);
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
		h5_append_close(a, NULL);
		if (!w->stale_logged)
			h5fs_log(fs, LOG_ERR, "write %s: ESTALE: %s was changed by another program after this "
				 "descriptor was opened: open it again", show_path(w->n->path), h5_file_path(fs->f));
		w->stale_logged = true;
		goto out;
	}
	/* (nothing of w waits: the old ones have nothing to write, and
	 * could not, their FILE not holding the lock) */
	h5_append_close(w->a, NULL);
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
	hold_set(w, e == 0);
	return e;
}

/* Accepted bytes readers were shown will not be rows (a dropped partial
 * row: len; a failed append: everything waiting, UINT64_MAX): the node's
 * size goes back and the kernel forgets its size and what a mapping
 * cached of them (the descriptors of a dataset that grows are direct_io:
 * no page of them waits on us locked). */
static void shown_drop(h5fs *fs, struct node *n, fuse_ino_t ino, uint64_t len)
{
	uint64_t was = tail_drop(n, len), now;

	pthread_rwlock_rdlock(&n->lk);
	now = (uint64_t)n->st.st_size;
	pthread_rwlock_unlock(&n->lk);
	if (now < was && fs->se)
		fuse_lowlevel_notify_inval_inode(fs->se, fs_ino_out(fs, ino), (off_t)now, 0);
}

/* The error of a write answered before it failed, or 0. */
static int wfile_err(struct wfile *w)
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
static void wfile_give_back(h5fs *fs, struct wfile *w)
{
	struct wqueue *q = w->q;

	pthread_mutex_lock(&q->mu);
	if (w->holding && q->turn == q->next && w->vplen == 0 && (!w->a || h5_append_pending(w->a) == 0) &&
	    h5_overwrite_buffered(w->ow) == 0) {
		hold_set(w, false);
		fs_write_end(fs);
	}
	pthread_mutex_unlock(&q->mu);
}

static void wfile_free(struct wfile *w)
{
	gen_release(w->g);
	free(w);
}

int wfile_open(h5fs *fs, struct node *n, struct fuse_file_info *fi)
{
	struct wfile *w = NULL;
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
	xbatch_flush(fs);
	rc = fs_write_begin(fs);
	if (rc)
		return rc;
	rc = node_use_current(&u, fs, n);
	if (rc) {
		fs_write_end(fs);
		return rc;
	}
	/* n->ds is replaced by wfile_refresh() under n->lk after appends */
	pthread_rwlock_rdlock(&n->lk);
	rc = u.f != fs->f ? EROFS : n->type == NT_FILE && n->ds ? 0 : EPERM;
	pthread_rwlock_unlock(&n->lk);
	/* O_TRUNC (cat x > d, cp x d): the dataset emptied, the new bytes
	 * then its rows (member/truncate.c) */
	if (!rc && (fi->flags & O_TRUNC))
		rc = member_resize(fs, n, &u, 0, "open with O_TRUNC");
	if (!rc && !(w = calloc(1, sizeof(*w))))
		rc = ENOMEM;
	if (rc) {
		fs_write_end(fs);
		node_use_end(&u);
		return rc;
	}
	w->g = u.g;             /* (the use's reference, kept) */
	u.g = NULL;
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
		h5_append_close(w->a, NULL);
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
	e = ow_put(fs, w->n, w->ow, ino, (uint64_t)off, buf, size, w->cached);
	pthread_mutex_unlock(&q->apply);
	pthread_mutex_lock(&q->mu);
	if (e && early && !w->err)
		w->err = e;
	if (early)
		q->early--;
	q->turn++;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
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
	if (!e && (uint64_t)off >= lim) {
		if (w->a)
			return false;
		h5fs_log(fs, LOG_NOTICE, "write %s at %lld: EFBIG: past the end (%llu) of a dataset that cannot grow",
			 show_path(w->n->path), (long long)off, (unsigned long long)lim);
		e = EFBIG;
	}
	if (e) {
		fuse_reply_err(req, e);
		return true;
	}
	n = size < lim - (uint64_t)off ? size : lim - (uint64_t)off;
	if (n == size)
		return overwrite_behind(fs, w, req, ino, buf, size, off);
	/* earlier writes of this dataset's handles go first */
	wq_drain(q);
	pthread_mutex_lock(&q->apply);
	if (w->a && (uint64_t)off + size > lim && end != lim) {
		/* rows accepted, not committed: the rest cannot append yet */
		e = EBUSY;
	} else {
		e = ow_put(fs, w->n, w->ow, ino, (uint64_t)off, buf, (size_t)n, w->cached);
	}
	if (!e && n < size && w->a) {
		/* the rest appends, here and now (nothing else is waiting) */
		int rc;

		pthread_mutex_lock(&q->mu);
		e = q->partial && q->partial != w ? EBUSY : tail_accept(w->n, buf + n, size - n, q->row_bytes);
		pthread_mutex_unlock(&q->mu);
		rc = e ? 0 : h5_append_write(w->a, buf + n, size - n);
		if (rc < 0) {
			e = h5err_logged(fs, rc, "append", w->n->path, NULL, w->n->addr);
			shown_drop(fs, w->n, ino, UINT64_MAX);
		} else if (!e) {
			pthread_mutex_lock(&q->mu);
			vplen_add(q, w, size - n);
			pthread_mutex_unlock(&q->mu);
			n = size;
		}
		wfile_refresh(fs, w, ino);
	}
	pthread_mutex_unlock(&q->apply);
	if (e)
		fuse_reply_err(req, e);
	else
		fuse_reply_write(req, (size_t)n);
	return true;
}

/* Bytes written inside the dataset are committed (all of them, durably). */
static int ow_flush(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	int e;

	/* nothing kept and no hold: nothing of this handle to commit */
	if (!w->ow || (h5_overwrite_buffered(w->ow) == 0 && !w->holding))
		return 0;
	e = fs_write_begin(fs);
	if (e)
		return e;
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
		shown_drop(fs, w->n, ino, UINT64_MAX);
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
	if (!w->append && overwrite(fs, w, req, ino, buf, size, off))
		return;
	q = w->q;
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
	/* kept and shown from now on (node/tail.c) */
	if (!e)
		e = tail_accept(w->n, buf, size, q->row_bytes);
	if (e) {
		pthread_mutex_unlock(&q->mu);
		if (e == EPERM)
			h5fs_log(fs, LOG_DEBUG, "write %s at %lld: only appending at %llu is possible",
			       show_path(w->n->path), (long long)off, (unsigned long long)end);
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
		shown_drop(fs, w->n, ino, UINT64_MAX);
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

/* close() (and fsync()) commit every complete row, durably. At close a trailing
 * partial row is dropped and reported as EINVAL. */
static int do_flush(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	size_t partial;
	int rc, e;

	if (!w)
		return 0;
	if (w->npy)
		return npy_flush(fs, w->npy, true);
	wq_drain(w->q);
	pthread_mutex_lock(&w->q->apply);
	rc = w->a && has_rows(w) ? h5_append_flush(w->a) : 0;
	wfile_refresh(fs, w, ino);
	e = rc < 0 ? 0 : wfile_err(w);
	if (rc == 0 && !e)
		e = ow_flush(fs, w, ino);
	partial = rc < 0 || e || !w->a ? 0 : h5_append_pending(w->a);
	if (partial) {
		h5fs_log(fs, LOG_NOTICE, "append %s: %zu trailing bytes are not a whole row of %llu bytes: "
		       "not appended", show_path(w->n->path), partial,
		       (unsigned long long)h5_append_row_bytes(w->a));
		h5_append_discard(w->a);
		pthread_mutex_lock(&w->q->mu);
		/* readers were shown it, last (no one appends after a partial row) */
		shown_drop(fs, w->n, ino, w->vplen);
		w->vplen = 0;
		if (w->q->partial == w)
			w->q->partial = NULL;
		pthread_mutex_unlock(&w->q->mu);
		e = EINVAL;
	}
	pthread_mutex_unlock(&w->q->apply);
	wfile_give_back(fs, w);
	ow_pages_settle(fs, w->n, ino);
	return rc < 0 ? h5err_logged(fs, rc, "append", w->n->path, NULL, w->n->addr) : e;
}

int member_flush(void *r, uint64_t ino, struct fuse_file_info *fi)
{
	return do_flush(r, wfile_of(fi), ino);
}

int wfile_fsync(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	int rc, e;

	if (!w) {
		/* no rows of ours: what attribute and link changes wrote is
		 * made durable (they commit ordered, not synced) */
		return fs_writable(fs) ? fs_meta_sync(fs) : 0;
	}
	if (w->npy)
		return npy_flush(fs, w->npy, false);
	wq_drain(w->q);
	pthread_mutex_lock(&w->q->apply);
	/* committed rows are on disk (fsync'd) */
	rc = w->a && has_rows(w) ? h5_append_flush(w->a) : 0;
	wfile_refresh(fs, w, ino);
	e = rc < 0 ? 0 : wfile_err(w);
	if (rc == 0 && !e)
		e = ow_flush(fs, w, ino);
	pthread_mutex_unlock(&w->q->apply);
	if (rc == 0 && !e)
		wfile_give_back(fs, w);
	ow_pages_settle(fs, w->n, ino);
	return rc < 0 ? h5err_logged(fs, rc, "fsync", w->n->path, NULL, w->n->addr) : e;
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
			fuse_lowlevel_notify_inval_inode(fs->se, fs_ino_out(fs, ino), -1, 0);
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
int member_fsync(void *r, uint64_t ino, struct fuse_file_info *fi)
{
	int err = wfile_fsync(r, wfile_of(fi), ino), e2 = fs_writable(r) ? fs_meta_sync(r) : 0;

	return err ? err : e2;
}

/* Handles whose release never came (FILE unmounted while they were
 * open): free them at exit, after the session loop. */
void handles_free(h5fs *fs)
{
	if (!fs->open_dirs.next)
		return;         /* h5fs_new failed before the lists existed */
	while (fs->open_dirs.next != &fs->open_dirs) {
		struct hlink *h = fs->open_dirs.next;   /* the first member of a dirsnap */

		handle_del(fs, h);
		dirsnap_free((struct dirsnap *)(void *)h);
	}
	while (fs->open_wfiles.next != &fs->open_wfiles) {
		struct wfile *w = (struct wfile *)(void *)fs->open_wfiles.next;

		handle_del(fs, &w->link);
		if (w->npy)
			npy_release(fs, w->npy);
		h5_append_close(w->a, NULL);
		h5_overwrite_close(w->ow);
		if (w->holding) {
			hold_set(w, false);
			fs_write_end(fs);
		}
		wq_detach(fs, w);
		wfile_free(w);
	}
}

void wfile_release(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	size_t partial = 0;
	int rc, e;

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
	wq_drain(w->q);
	pthread_mutex_lock(&w->q->apply);
	rc = w->a && has_rows(w) ? h5_append_flush(w->a) : 0;
	wfile_refresh(fs, w, ino);
	if (rc < 0) {
		/* rows answered and not written: never only a log line */
		h5fs_log(fs, LOG_ERR, "append %s: rows answered earlier are lost: %s", show_path(w->n->path),
			 h5_err_msg());
		fs_lost_set(fs, h5fs_errno(rc));
	}
	if ((e = ow_flush(fs, w, ino)) != 0)
		fs_lost_set(fs, e);     /* bytes answered, not written (logged) */
	h5_overwrite_close(w->ow);
	rc = h5_append_close(w->a, &partial);
	pthread_mutex_lock(&w->q->mu);
	if (w->vplen)
		shown_drop(fs, w->n, ino, w->vplen);
	if (w->q->partial == w)
		w->q->partial = NULL;
	pthread_mutex_unlock(&w->q->mu);
	pthread_mutex_unlock(&w->q->apply);
	if (rc < 0 && partial)
		h5fs_log(fs, LOG_NOTICE, "append %s: %zu trailing bytes dropped at release", show_path(w->n->path),
		       partial);
	if (w->holding) {
		hold_set(w, false);
		fs_write_end(fs);      /* committed (or failed): FILE is given back */
	}
	ow_pages_settle(fs, w->n, ino);
	wq_detach(fs, w);
	if (w->held)
		node_unref(fs, w->n->ino, 1);
	wfile_free(w);
}
