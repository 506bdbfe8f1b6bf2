/* wfile.c - a write handle's state (wstate.h): FILE's lock held while it
 * keeps bytes not committed, the node refreshed after its commits, the
 * space its answers promise reserved, errors kept, rows appended before
 * the answer (wfile_append_now), the open handles scanned
 * (wfile_find_*); below the write path (write.c), its open and release
 * (wopen.c), flush, fsync and the node's commits (wclose.c), csvin.c and
 * the idle kind (idle.c), which all use it.
 *
 * FILE's lock (commit_begin/end with COMMIT_FILE, node/hold.c; README "Appending"): open
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
 * seconds without a write (the idle kind, idle.c), as fsync would, and so
 * lets FILE go too, unless a partial row is left (rows are whole or not
 * at all).
 * Tests: test_append.py, test_overwrite.py, test_idle_commit.py,
 * test_append_enospc.py. */
#include "wstate.h"
#include "handle.h"

int wfile_append_open(h5fs *fs, h5_appender **a, h5_file *f, uint64_t addr)
{
	struct commit_policy p = commit_policy(fs, COMMIT_WRITES);
	int rc = h5_append_open(a, f, addr);

	if (rc == 0)
		h5_append_set_policy(*a, p.max_bytes, p.max_ms);
	return rc;
}

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
	struct wqueue *q = w->q;
	h5_appender *a = wq_a(q);
	h5_dataset *nd = NULL, *old;
	uint64_t alloc;
	struct timespec now;

	/* (an appender of an old generation commits nothing: ESTALE) */
	if (!a || h5_append_committed(a) == q->seen || !gen_is_current(fs, q->ag))
		return;
	/* opened under n->lk: two refreshes of one node (this handle's
	 * commit, a reader's show of the rows, another handle's) swap in
	 * the states they opened in the order they opened them - else an
	 * older state landed last, the node showed fewer rows than FILE,
	 * and the next write crossing that stale end appended its rest past
	 * the true one (test_fsx growable in CI: size 111256, model 109241) */
	pthread_rwlock_wrlock(&w->n->lk);
	if (h5_dataset_open(&nd, q->ag->f, w->n->addr) < 0) {
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
	q->seen = h5_append_committed(a);
	/* attributes only (offset -1): invalidating pages here could wait on
	 * pages a pending write request holds locked. A changed size makes
	 * the kernel drop the file's cached pages itself. */
	if (fs->se)
		notify_inval_inode(fs->se, fs_ino_out(fs, ino), -1, 0);
}

/* (under q->mu, FILE's lock held) The node's appender in the current
 * generation: opened again once a new generation came and it keeps
 * nothing - one that keeps rows or a partial row has a holder of FILE's
 * lock, under which no generation is made (live/live.c). The old one is
 * retired, not closed: an apply or a reader under q->apply may still use
 * it (it keeps nothing); closed under both locks (wfile_append_apply) or
 * with the queue. 0, or the errno. */
static int q_a_locked(h5fs *fs, struct wqueue *q, struct node *n)
{
	h5_appender *cur = wq_a(q), *a = NULL;
	struct wq_retired *r = NULL;
	struct gen *g;
	int e = 0;

	if (!cur || gen_is_current(fs, q->ag) || h5_append_pending(cur))
		return 0;
	g = gen_current(fs);
	if (!(r = malloc(sizeof(*r))))
		e = ENOMEM;
	else if (wfile_append_open(fs, &a, g->f, __atomic_load_n(&n->addr, __ATOMIC_ACQUIRE)) < 0)
		e = ESTALE;     /* (cannot grow in FILE as it is now) */
	h5_err_clear();
	if (e) {
		free(r);
		gen_release(g);
		return e;
	}
	wq_retire(q, r, NULL, cur, q->ag);
	q->ag = g;
	__atomic_store_n(&q->a, a, __ATOMIC_RELEASE);
	return 0;
}

/* w's generation was replaced by one opened anew without a change of FILE
 * (a stamp too fresh to vouch for its bytes, a failed read's doubt): w,
 * which holds nothing, writes on through the current one (the node's
 * appender and overwriter follow it: q_a_locked, overwrite.c). Another
 * program's change since w was opened (or its object gone) is ESTALE,
 * logged once per descriptor. Under q->mu, FILE's lock held. */
static int wfile_follow(h5fs *fs, struct wfile *w)
{
	struct use u;
	int e;

	if (gen_is_current(fs, w->g))
		return 0;
	e = node_use_current(&u, fs, w->n);
	if (!e && (u.g->ver != w->g->ver || u.f != u.g->f))
		e = ESTALE;
	h5_err_clear();
	if (e) {
		if (!w->stale_logged)
			h5fs_log(fs, LOG_ERR, "write %s: ESTALE: %s was changed by another program after this "
				 "descriptor was opened: open it again", show_path(w->n->path), h5_file_path(fs->f));
		w->stale_logged = true;
		goto out;
	}
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
	e = commit_begin(NULL, fs, NULL, COMMIT_FILE, NULL);   /* EBUSY, ESTALE: logged there */
	if (!e && (e = wfile_follow(fs, w)) != 0)
		commit_end(fs, NULL, false);
	/* (w current, the node's appender maybe of an older generation: one
	 * that kept nothing when it came) */
	if (!e && w->grows && (e = q_a_locked(fs, w->q, w->n)) != 0) {
		h5fs_log(fs, LOG_ERR, "write %s: ESTALE: the dataset cannot be appended to as %s is now: open it "
			 "again", show_path(w->n->path), h5_file_path(fs->f));
		commit_end(fs, NULL, false);
	}
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
uint64_t wfile_uncommitted(struct wfile *w, uint64_t end, uint64_t add)
{
	uint64_t c = h5_append_committed(wq_a(w->q));

	return end + add > c + add ? end + add - c : add;
}

static int wfile_reserve(h5fs *fs, struct wfile *w, uint64_t append_bytes, uint64_t ow_bytes)
{
	int rc = 0;

	if (append_bytes && w->grows)
		rc = h5_append_reserve(wq_a(w->q), append_bytes);
	if (rc == 0 && ow_bytes && w->can_ow)
		rc = ow_reserve(fs, w, ow_bytes);
	if (rc == H5_ERR_NOSPC)
		__atomic_store_n(&w->nospc, true, __ATOMIC_RELAXED);
	return rc == 0 ? 0 : commit_refuse(fs, rc, "write", w->n->path, NULL);
}

/* The write descriptors' kind's admission (commit.h struct commit_kind
 * admit; commit_ask after the pager's table), under q->mu: every refusal
 * of a write before its answer, in the order the write path meets them -
 * an earlier write's error (told once more), what the dataset's storage
 * cannot take (EFBIG past the end of one that cannot grow; EPERM rows
 * but at the end; EBUSY into another descriptor's partial row, or across
 * an end other descriptors' bytes are still moving), then FILE's lock
 * (EBUSY, ESTALE, EIO: node/hold.c) and the space the answer promises
 * (ENOSPC: the engine's reserve). The caller takes the write's ticket
 * (or accepts its rows) under the same q->mu. */
int wfile_admit(h5fs *fs, const struct commit_ask *cq)
{
	const struct wfile_ask *a = cq->arg;
	struct wfile *w = a->w;
	struct wqueue *q = w->q;
	int e = w->err;

	if (e)
		return e;
	switch (a->stage) {
	case WFILE_INSIDE:
		if (a->off >= 0 && (uint64_t)a->off >= a->lim) {
			h5fs_log(fs, LOG_NOTICE, "write %s at %lld: EFBIG: past the end (%llu) of a dataset that "
				 "cannot grow", show_path(w->n->path), (long long)a->off, (unsigned long long)a->lim);
			e = EFBIG;
		}
		break;
	case WFILE_CROSS:
		if (a->others) {
			h5fs_log(fs, LOG_NOTICE, "write %s at %lld crossing the end: EBUSY: other descriptors' writes "
				 "kept coming", show_path(w->n->path), (long long)a->off);
			e = EBUSY;
		} else if (w->grows && a->n < a->size && a->end != a->lim) {
			/* (a partial row another descriptor wrote) */
			h5fs_log(fs, LOG_NOTICE, "write %s at %lld crossing the end (%llu): EBUSY: %llu bytes other "
				 "descriptors wrote are not committed yet", show_path(w->n->path), (long long)a->off,
				 (unsigned long long)a->lim, (unsigned long long)(a->end - a->lim));
			e = EBUSY;
		} else if (w->grows && (uint64_t)a->off > a->lim) {
			/* the dataset shrank meanwhile (another descriptor's truncate) */
			h5fs_log(fs, LOG_NOTICE, "write %s at %lld: EPERM: past the end (%llu): only appending at the "
				 "end is possible", show_path(w->n->path), (long long)a->off, (unsigned long long)a->lim);
			e = EPERM;
		} else if (w->grows && a->n < a->size && q->partial && q->partial != w) {
			e = EBUSY;
		}
		break;
	case WFILE_APPEND:
		/* (overwrite() answers a fixed size's writes; it cannot grow) */
		if (!w->grows) {
			e = EFBIG;
		} else if (a->off < 0 || (!w->append && (uint64_t)a->off != a->end)) {
			/* Rows only go at the end: O_APPEND writes wherever the
			 * kernel thinks the end is (its size may lag behind
			 * bytes of an unfinished row); others write at the end
			 * (before it they overwrote: write.c) */
			h5fs_log(fs, LOG_NOTICE, "write %s at %lld: EPERM: only appending at %llu is possible",
				 show_path(w->n->path), (long long)a->off, (unsigned long long)a->end);
			e = EPERM;
		}
		/* fall through */
	case WFILE_NOW:
		/* rows are whole: another descriptor's partial row must be
		 * ended first (and readers are shown the rows in the order
		 * they come) */
		if (!e && q->partial && q->partial != w) {
			h5fs_log(fs, LOG_NOTICE, "append %s: another descriptor has written part of a row: EBUSY "
				 "until it writes the rest or is closed", show_path(w->n->path));
			e = EBUSY;
		}
		break;
	}
	if (!e)
		e = wfile_hold(fs, w);
	if (!e && (a->append_bytes || a->ow_bytes))
		e = wfile_reserve(fs, w, a->append_bytes, a->ow_bytes);
	return e;
}

int wfile_ask(h5fs *fs, struct wfile_ask *a)
{
	return commit_ask(fs, &(struct commit_ask){ .op = PAGER_WRITE, .kind = COMMIT_WRITES, .what = "write",
						    .path = a->w->n->path, .arg = a });
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
		notify_inval_inode(fs->se, fs_ino_out(fs, ino), (off_t)now, 0);
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
 * ends. Called under q->apply, and decided under q->mu: a write that
 * took the hold either has its ticket (accepted, under q->mu with the
 * hold and its reserve: write.c) or holds q->apply until its bytes are
 * in (a write crossing the end), so none is left writing without the
 * lock (a commit of every descriptor from another request, fs_meta_sync,
 * gave the hold back between a write's hold and its reserve: "allocated
 * without its lock" in test_procs). */
void wfile_give_back(h5fs *fs, struct wfile *w)
{
	struct wqueue *q = w->q;
	bool done = false;

	pthread_mutex_lock(&q->mu);
	if (w->holding && q->turn == q->next && w->vplen == 0 && (!wq_a(q) || h5_append_pending(wq_a(q)) == 0) &&
	    !__atomic_load_n(&w->ow_kept, __ATOMIC_ACQUIRE)) {
		wfile_hold_set(w, false);
		commit_end(fs, NULL, false);
		done = true;
	}
	pthread_mutex_unlock(&q->mu);
	/* its durable commit kept the room reserved past the end (txn.c):
	 * given back with the idle sync of changes (idle.c), or at unmount */
	if (done)
		fs_meta_changed(fs);
}

/* Bytes written inside the dataset are committed (all of them, durably). */
int wfile_ow_flush(h5fs *fs, struct wfile *w, fuse_ino_t ino)
{
	int e, rc;

	/* nothing kept, written in place or committed unsynced: nothing of
	 * this handle to commit (a cp's handle appended only: its rows'
	 * commit was durable - an fsync more per file, issue 55) */
	if (!w->can_ow || !__atomic_load_n(&w->ow_undurable, __ATOMIC_ACQUIRE))
		return 0;
	e = commit_begin(NULL, fs, NULL, COMMIT_FILE, NULL);
	if (e)
		return e;
	/* an overwrite commits over a stream with no rows waiting: other
	 * handles' rows are committed first (else EBUSY, issue 53) */
	if (wq_a(w->q) && wq_ow(w->q) && h5_overwrite_buffered(wq_ow(w->q)) && (rc = h5_append_show(wq_a(w->q))) < 0)
		e = h5err_logged(fs, rc, "commit of rows appended", w->n->path, NULL, w->n->addr);
	if (!e)
		e = ow_commit(fs, w->q, w->n, ino, true, true);
	commit_end(fs, NULL, false);
	return e;
}

/* The first open write handle that match takes, under fs->lock; pinned
 * when pin (its release waits until unpin, idle_cv). */
struct wfile *wfile_find_locked(h5fs *fs, bool (*match)(const struct wfile *w, const void *arg), const void *arg,
				       bool pin)
{
	for (struct hlink *h = fs->open_wfiles.next; h != &fs->open_wfiles; h = h->next) {
		struct wfile *w = (struct wfile *)(void *)h;

		if (!match(w, arg))
			continue;
		if (pin)
			w->pins++;
		return w;
	}
	return NULL;
}

struct wfile *wfile_find_pin(h5fs *fs, bool (*match)(const struct wfile *w, const void *arg), const void *arg)
{
	struct wfile *w;

	pthread_mutex_lock(&fs->lock);
	w = wfile_find_locked(fs, match, arg, true);
	pthread_mutex_unlock(&fs->lock);
	return w;
}

void wfile_unpin(h5fs *fs, struct wfile *w)
{
	pthread_mutex_lock(&fs->lock);
	w->pins--;
	pthread_cond_broadcast(&fs->idle_cv);
	pthread_mutex_unlock(&fs->lock);
}

/* Bytes appended now, before the answer (write.c npy_bytes, csvin.c): 0
 * or an errno, kept in the handle too. A ticket from their acceptance
 * until they are in the stream, as behind_write's: without it a commit meanwhile (the
 * idle commit, a utime's or a truncate's, wclose.c wfile_fsync) found
 * every ticket applied and nothing pending, gave FILE's lock back, and
 * the bytes then written were never committed - close commits only a
 * handle that holds the lock, release dropped them (an np.save name
 * whose stream is no NPY, copied in by copytree or mv: an empty dataset,
 * its bytes answered and lost; test_tools, 1 run in 10 under load). */
int wfile_append_accept(h5fs *fs, struct wfile_ask *a, uint64_t *t, const void *buf)
{
	struct wfile *w = a->w;
	struct wqueue *q = w->q;
	size_t len = a->size;
	int e;

	e = wfile_ask(fs, a);
	/* kept and shown from now on (behind/tail.c) */
	if (!e)
		e = tail_accept(w->n, buf, len, q->row_bytes);
	if (e)
		return e;
	*t = q->next++;
	vplen_add(q, w, len);
	return 0;
}

int wfile_append_apply(h5fs *fs, struct wfile *w, fuse_ino_t ino, uint64_t t, const void *buf, size_t len,
		       bool early)
{
	struct wqueue *q = w->q;
	int rc, e = 0;

	pthread_mutex_lock(&q->mu);
	while (q->turn != t)
		pthread_cond_wait(&q->cv, &q->mu);
	pthread_mutex_unlock(&q->mu);
	pthread_mutex_lock(&q->apply);
	wq_retired_close(q);    /* (an earlier generation's appender: q_a_locked) */
	rc = h5_append_write(wq_a(q), buf, len);
	if (rc < 0) {
		e = h5err_logged(fs, rc, early ? "append (reported by the next write, fsync or close)" : "append",
				 w->n->path, NULL, w->n->addr);
		/* (before the answer: the kernel must not keep the size) */
		wfile_shown_drop(fs, w->n, ino, UINT64_MAX);
	}
	wfile_refresh(fs, w, ino);
	pthread_mutex_unlock(&q->apply);
	pthread_mutex_lock(&q->mu);
	/* the stream did not take the bytes: the handle takes no more */
	if (e && !w->err)
		w->err = e;
	if (early)
		q->early--;
	q->turn++;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	return e;
}

int wfile_append_now(h5fs *fs, struct wfile *w, fuse_ino_t ino, const void *buf, size_t len)
{
	struct wqueue *q = w->q;
	uint64_t t = 0;
	int e;

	pthread_mutex_lock(&q->mu);
	e = wfile_append_accept(fs, &(struct wfile_ask){ .w = w, .stage = WFILE_NOW, .size = len,
							 .append_bytes = wfile_uncommitted(w, q->vrows * q->row_bytes +
											   w->vplen, len) }, &t, buf);
	pthread_mutex_unlock(&q->mu);
	return e ? e : wfile_append_apply(fs, w, ino, t, buf, len, false);
}
