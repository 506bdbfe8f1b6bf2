/* write.c - the write path of write handles (wfile.c): appending
 * (README "Appending", doc/APPEND.md) and overwriting (behind/overwrite.c)
 * through the mount; open.c chooses between them and read handles. Their
 * flush, fsync and release are wclose.c's. */
#include "wstate.h"
#include "npystream.h"
#include "resize.h"
#include "handle.h"

/* ---- appending: the write path (README "Appending", doc/APPEND.md) -----------------
 * A dataset that can grow along dimension 0 opens for writing on a writable
 * mount. Writes at its end go to the engine's appender, which streams whole
 * rows to the file and commits them every 64 MiB or 1 s, on fsync() and at
 * close (doc/APPEND.md); whenever rows were committed the node gets a
 * freshly opened dataset (size, allocation, mtime) under the node's lock and
 * the kernel's cached attributes are dropped, so stat shows the new size at
 * once. Read-only and write-only descriptors of a dataset that can grow
 * bypass the page cache (direct_io: wqueue.c wfile_reader_cached; mapped
 * all the same where the kernel allows it, mount/initio.c) and read the
 * rows accepted and not yet committed from behind/tail.c; O_RDWR ones, and
 * all those of datasets that cannot grow, use it (behind/overwrite.c;
 * wqueue.c wq_attach).
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
 * A handle's life, FILE's lock and the space its answers promise are
 * wfile.c's. */


/* A write wholly inside the dataset, answered before its bytes are taken
 * (write-behind, as appends: the writer prepares its next write meanwhile;
 * the request buffer stays ours until we return). Tickets keep the
 * order of the node's writes; an error is kept in the handle and reported
 * by its next write, fsync or close. */
static bool overwrite_behind(h5fs *fs, struct wfile *w, fuse_req_t req, fuse_ino_t ino, const char *buf,
			     size_t size, off_t off, uint64_t lim)
{
	struct wqueue *q = w->q;
	struct node *n = w->n;
	bool settle = !w->cached;
	struct wfile_ask wa = { .w = w, .stage = WFILE_INSIDE, .off = off, .size = size, .lim = lim,
				.ow_bytes = size };
	uint64_t t;
	bool early;
	int e;

	/* admitted (FILE's lock, the chunks it rewrites reserved) and its
	 * ticket taken under one q->mu: a commit of w's bytes meanwhile
	 * (fsync, the sync of every descriptor) sees it pending and keeps
	 * the lock (wfile_give_back) */
	pthread_mutex_lock(&q->mu);
	e = wfile_ask(fs, &wa);
	if (e) {
		pthread_mutex_unlock(&q->mu);
		__atomic_store_n(&w->failed, true, __ATOMIC_RELAXED);
		fuse_reply_err(req, e);
		return true;
	}
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
	/* (the node's one overwriter: a later put over an earlier one wins) */
	e = ow_put(fs, w, ino, (uint64_t)off, buf, size);
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
 * the end of a dataset that grows, which appends (behind_write). Past the
 * end of one that cannot grow: EFBIG; a write crossing that end writes
 * what fits (a short write, as a full file system gives). */
static bool overwrite(h5fs *fs, struct wfile *w, fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size,
		      off_t off)
{
	struct wqueue *q = w->q;
	struct wfile_ask wa = { .w = w, .stage = WFILE_CROSS, .off = off, .size = size };
	uint64_t lim, end, n;
	bool accepted = false;
	int e;

	if (!w->can_ow || off < 0)
		return false;
	pthread_mutex_lock(&q->mu);
	e = w->err;
	end = w->grows ? q->vrows * q->row_bytes + w->vplen : 0;
	pthread_mutex_unlock(&q->mu);
	pthread_rwlock_rdlock(&w->n->lk);
	lim = tail_base(w->n);       /* committed bytes */
	pthread_rwlock_unlock(&w->n->lk);
	/* over rows accepted, not committed yet: they are committed first
	 * (as for a reader), then overwritten (issue 53) */
	if (!e && w->grows && (uint64_t)off < end && (uint64_t)off + size > lim && lim < end)
		lim = wfile_show_rows(fs, w, ino);
	if (!e && (uint64_t)off >= lim && w->grows)
		return false;   /* at or past the end of a dataset that grows: it appends */
	/* wholly inside, or past the end of one that cannot grow (EFBIG):
	 * the write descriptors' kind decides (wfile_ask) */
	if (e || (uint64_t)off >= lim || size <= lim - (uint64_t)off)
		return overwrite_behind(fs, w, req, ino, buf, size, off, lim);
	/* Earlier writes of this dataset's handles go first, those accepted
	 * while we waited too (they checked their offsets against the end
	 * before this write's rows: issue 53, 4 processes); then, q->mu held,
	 * none is accepted until this write's rows count in vrows. */
	pthread_mutex_lock(&q->grow);   /* (behind_write: no growth meanwhile) */
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
	wa.others = q->turn != q->next;
	end = w->grows ? q->vrows * q->row_bytes + w->vplen : 0;
	pthread_rwlock_rdlock(&w->n->lk);
	lim = tail_base(w->n);
	pthread_rwlock_unlock(&w->n->lk);
	if (!e && !wa.others && w->grows && end != lim) {
		/* rows applied, not committed: committed now (as wfile_show) */
		int rc = h5_append_show(wq_a(q));

		if (rc < 0)
			e = h5err_logged(fs, rc, "commit of rows appended", w->n->path, NULL, w->n->addr);
		wfile_refresh(fs, w, ino);
	}
	pthread_rwlock_rdlock(&w->n->lk);
	lim = tail_base(w->n);
	pthread_rwlock_unlock(&w->n->lk);
	n = (uint64_t)off >= lim ? 0 : size < lim - (uint64_t)off ? size : lim - (uint64_t)off;
	if (!e && !wa.others && w->grows && end != lim && !q->partial && h5_append_pending(wq_a(q)) == 0) {
		/* the stream holds nothing waiting: the dataset was resized
		 * through another descriptor and wq_resized is on its way */
		q->vrows = lim / q->row_bytes;
		end = lim;
	}
	/* admitted (the kind's checks, FILE's lock, the space of both parts
	 * reserved), and the rest accepted, under this one q->mu */
	wa.end = end;
	wa.lim = lim;
	wa.n = n;
	wa.ow_bytes = n;
	wa.append_bytes = w->grows && n < size ? wfile_uncommitted(w, end, size - n) : 0;
	if (!e)
		e = wfile_ask(fs, &wa);
	if (!e && w->grows && n < size) {
		/* the rest appends, here and now (nothing else is waiting);
		 * accepted first, so later writes go after it */
		if (!(e = tail_accept(w->n, buf + n, size - n, q->row_bytes)))
			vplen_add(q, w, size - n);
		accepted = !e;
	}
	pthread_mutex_unlock(&q->mu);
	pthread_mutex_unlock(&q->grow);
	if (!e && n)
		e = ow_put(fs, w, ino, (uint64_t)off, buf, (size_t)n);
	if (accepted) {
		int rc = h5_append_write(wq_a(q), buf + n, size - n);

		if (rc < 0) {
			int ae = h5err_logged(fs, rc, "append", w->n->path, NULL, w->n->addr);

			wfile_shown_drop(fs, w->n, ino, UINT64_MAX);
			pthread_mutex_lock(&q->mu);
			if (!w->err)
				w->err = ae;    /* the stream takes no more (as behind_write) */
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

/* An np.save placeholder's stream that is no NPY h5fs takes (npy.c
 * npy_demote): the bytes held so far, then the rest of this write (what
 * lies past them), appended to the placeholder now, as any file's bytes
 * are (it is a growable uint8 dataset); later writes append as usual. */
static int npy_bytes(h5fs *fs, struct wfile *w, fuse_ino_t ino, const char *buf, size_t size, off_t off)
{
	struct npy_stream *s;
	uint8_t *head = NULL;
	size_t hlen = 0, skip;
	int e;

	/* (no longer found by a utime's wfile_npy_mtime, idle.c, which
	 * pins the handle and sets the stream's time: waited for, the stream
	 * is freed) */
	pthread_mutex_lock(&fs->lock);
	s = w->npy;
	w->npy = NULL;
	while (w->pins)
		pthread_cond_wait(&fs->idle_cv, &fs->lock);
	pthread_mutex_unlock(&fs->lock);
	npy_demote(fs, s, &head, &hlen);
	skip = hlen - (size_t)off;      /* of this write, held already */
	e = hlen ? wfile_append_now(fs, w, ino, head, hlen) : 0;
	if (!e && size > skip)
		e = wfile_append_now(fs, w, ino, buf + skip, size - skip);
	free(head);
	return e;
}

/* A write past the end (a hole, as a plain file allows: stress-ng's seek,
 * dd seek=): the dataset grows to the write's offset first, as truncate(2)
 * up does (truncate.c: whole rows, dims[0] raised in its own commit, the
 * new rows reading the fill value), then the write appends at the new end. The handle's bytes
 * written before go first (trunc_set_size commits them). 0, or an errno
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
	e = w->grows ? w->err : 0;
	end = q->vrows * q->row_bytes + w->vplen;
	vplen = w->vplen;
	pthread_mutex_unlock(&q->mu);
	if (e || !w->grows || off <= end)
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
		e = trunc_set_size(fs, w->n, off, "write past the end");
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

/* Turns of behind_write before a write the end keeps overtaking is
 * refused (EPERM, logged): other descriptors appending without pause */
#define WRITE_TRIES 16

/* The one handler with two possible reply points, by design (write-behind,
 * doc/APPEND.md): a checked write is answered at once while fewer than
 * WQ_EARLY are ahead, and applied after; otherwise it is answered once
 * applied. Either way each request gets exactly one reply. */
void behind_write(void *r, fuse_req_t req, uint64_t ino, const char *buf, size_t size, off_t off,
		  struct fuse_file_info *fi)
{
	h5fs *fs = r;
	struct wfile *w = wfile_of(fi);
	struct wqueue *q;
	uint64_t end, t = 0;
	bool early;
	int e;

	if (!w) {
		fuse_reply_err(req, EBADF);
		return;
	}
	/* (the idle commit takes a handle idle for -o idle_commit s: one whose
	 * np.save stream was demoted appends, write after write, too) */
	__atomic_store_n(&w->last_ns, h5fs_now_ns(), __ATOMIC_RELAXED);
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
	if (w->csv) {
		/* rows as text (csvin.c): parsed, then appended, then answered */
		e = csvin_write(fs, w, ino, buf, size, off);
		if (e) {
			__atomic_store_n(&w->failed, true, __ATOMIC_RELAXED);
			fuse_reply_err(req, e);
		} else {
			fuse_reply_write(req, size);
		}
		return;
	}
	q = w->q;
	/* A write at any offset, in any order (io_uring, AIO, several
	 * threads: issue 71): inside the dataset it overwrites; past the end
	 * the dataset grows to its offset first (past_end), then it appends.
	 * Another write may grow the end past this one's offset meanwhile:
	 * it is then inside, and overwrites (again from the top). Each turn
	 * commits what was accepted before it (overwrite's show), so the
	 * first ones settle it; the node's other handles' rows are committed
	 * too from the second. */
	for (int tries = 0;; tries++) {
		if (!w->append && overwrite(fs, w, req, ino, buf, size, off))
			return;
		/* the end grown and the rows accepted with no other growth
		 * between (q->grow): a write past the end decided against an
		 * end another one has grown since shrank the dataset */
		pthread_mutex_lock(&q->grow);
		if (!w->append && off > 0 && (e = past_end(fs, w, (uint64_t)off)) != 0) {
			pthread_mutex_unlock(&q->grow);
			__atomic_store_n(&w->failed, true, __ATOMIC_RELAXED);
			fuse_reply_err(req, e);
			return;
		}
		pthread_mutex_lock(&q->mu);
		end = q->vrows * q->row_bytes + w->vplen;
		if (w->append || off < 0 || (uint64_t)off >= end || tries >= WRITE_TRIES)
			break;
		pthread_mutex_unlock(&q->mu);
		pthread_mutex_unlock(&q->grow);
		if (tries)
			wfile_show_node(fs, w->n);
	}
	/* admitted by the write descriptors' kind (rows at the end only, whole,
	 * FILE's lock, their space reserved: wfile_ask), then kept, shown and
	 * given their ticket (wfile_append_accept) */
	e = wfile_append_accept(fs, &(struct wfile_ask){ .w = w, .stage = WFILE_APPEND, .off = off, .size = size,
							 .end = end,
							 .append_bytes = w->grows ? wfile_uncommitted(w, end, size) : 0 },
				&t, buf);
	if (e) {
		pthread_mutex_unlock(&q->mu);
		pthread_mutex_unlock(&q->grow);
		__atomic_store_n(&w->failed, true, __ATOMIC_RELAXED);
		fuse_reply_err(req, e);
		return;
	}
	early = q->early < WQ_EARLY;
	if (early)
		q->early++;
	pthread_mutex_unlock(&q->mu);
	pthread_mutex_unlock(&q->grow);
	if (early)
		fuse_reply_write(req, size);
	e = wfile_append_apply(fs, w, ino, t, buf, size, early);
	if (!early) {
		if (e)
			fuse_reply_err(req, e);
		else
			fuse_reply_write(req, size);
	}
}
