/* read.c - the member root's read operations (root.h): directories (a
 * snapshot per handle, at its first readdir: made by dirsnap.c, or taken
 * from ahead.c) and reads. Each translates: request -> engine -> a result
 * the dispatcher (dispatch.c) replies with. lookup.c has the names
 * (lookup, getattr, readlink). */
#include "member.h"
#include "handle.h"
#include "tail.h"
#include "dirsnap.h"

/* The handle's listing, made once (0 or its errno) */
static int listing(struct dirsnap *d, h5fs *fs)
{
	int e;

	pthread_mutex_lock(&d->mu);
	if (!d->built) {
		if (!ahead_take(fs, d))
			d->err = dirsnap_list(d, fs, d->ino, false);
		d->built = true;
		if (!d->err)
			ahead_listed(fs, d);
	}
	e = d->err;
	/* a listing of a generation the sweep already dropped from the
	 * kernel's cache would be cached again from this handle's replies:
	 * dropped again after them (the notification thread waits for
	 * this request's reply, kit/notify.h) */
	if (!e && fs->live && d->gen && !d->told && !gen_is_current(fs, d->gen)) {
		d->told = true;
		notify_inval_inode(fs->se, fs_ino_out(fs, d->ino), 0, 0);
	}
	pthread_mutex_unlock(&d->mu);
	return e;
}

int member_opendir(void *r, void **dh, bool *keep, uint64_t ino)
{
	h5fs *fs = r;
	struct node *n = node_get(fs, ino);
	struct dirsnap *d;
	int e = !n ? ESTALE : node_fresh(fs, n);

	if (!e && n->type != NT_DIR)
		e = ENOTDIR;
	if (e)
		return e;
	d = calloc(1, sizeof(*d));
	if (!d)
		return ENOMEM;
	pthread_mutex_init(&d->mu, NULL);
	d->ino = ino;
	/* The kernel keeps a listing only where it keeps the entries as
	 * long (H5FS_TIMEOUT): a remote live FILE's time out after -o
	 * refresh, and a walk over a kept listing (du after find) then made a
	 * LOOKUP round trip per name; asked again, the listing is
	 * READDIRPLUS, each entry with its attributes (dispatch_tree.c, issue
	 * 64). A local live FILE's listing changes only with a new
	 * generation, whose sweep drops the kernel's copy (node_timeout). */
	*keep = node_timeout(fs) >= H5FS_TIMEOUT;
	handle_add(fs, &fs->open_dirs, &d->link);
	*dh = d;
	return 0;
}

int member_readdir(void *r, struct root_dirent *out, void *dh, size_t i)
{
	struct dirsnap *d = dh;
	const struct dent *e;
	int err = listing(d, r);

	if (err)
		return err;
	if (i >= d->n)
		return ENOENT;
	e = &d->e[i];
	memset(out, 0, sizeof(*out));
	out->name = d->names + e->name;
	out->ino = e->ino;
	out->type = (mode_t)DTTOIF(e->dtype);
	return 0;
}

/* entries ahead whose objects table slots member_listed fetches */
#define LISTED_AHEAD 4

void member_listed(struct listed *out, void *r, void *dh, size_t i)
{
	struct dirsnap *d = dh;
	const struct dent *e;

	out->gen = NULL;
	out->addr = UINT64_MAX;
	out->group = -1;
	out->has_st = false;
	/* (built: member_readdir gave entry i; the kernel serializes a
	 * handle's readdirs, and the listing is never changed once built) */
	pthread_mutex_lock(&d->mu);
	if (d->built && !d->err && i < d->n) {
		e = &d->e[i];
		/* a hard link of FILE's own (links shown in place lead
		 * elsewhere, and a link up the tree is a symlink: DT_LNK) */
		if (!e->link && e->addr != UINT64_MAX && e->dtype != DT_LNK) {
			out->gen = d->gen;
			out->addr = e->addr;
			out->group = e->dtype == DT_UNKNOWN ? -1 : e->dtype == DT_DIR;
			out->has_st = e->has_st;
			out->quiet = d->quiet;
			out->chg = d->chg_mark;
			if (e->has_st) {
				out->st = d->st[i].st;
				out->kind = d->st[i].kind;
				out->tag = d->st[i].tag;
			}
		}
		/* the look-up of entry i probes the objects table (light_ref),
		 * a cold line since the listing: the next ones' fetched ahead
		 * (3.8% of a cold walk's CPU was that miss) */
		if (i + LISTED_AHEAD < d->n && d->e[i + LISTED_AHEAD].ino)
			kind_prefetch(r, d->e[i + LISTED_AHEAD].ino);
	}
	pthread_mutex_unlock(&d->mu);
}

void member_releasedir(void *r, void *dh)
{
	struct dirsnap *d = dh;

	if (d)
		handle_del(r, &d->link);
	dirsnap_free(d);
}

/* The longest a read waits for a closing writer's commit of the rows it
 * reaches (tail.c; then EIO, logged) */
#define TAIL_WAIT_MS 10000

/* What a read answers with: the read plan (h5_dataset_map) - pieces of
 * files to splice (H5_PLAN_EXTENTS), pieces of decoded chunks or remote
 * blocks held in the engine's or the byte source's cache (H5_PLAN_PINNED),
 * bytes in a buffer (H5_PLAN_BUFFER), or nothing (end of file). */
struct read_answer {
	h5_read_plan plan;
	struct gen *g;          /* held until the reply is written, */
	h5_file *rf;            /* with the related file read (its cache view) */
	struct pc_answer pa;    /* a cached handle's answer (live/pcache.c) */
	struct dio_answer da;   /* a live direct_io handle's (live/dio.c) */
	bool fast;              /* answered unchecked: a live FILE not changed
				 * yet (live_fast_begin; ended once replied) */
	uint64_t tail_end;      /* rows not committed wanted: the size when
				 * the read came, committed since (tail.c) */
	bool tail_wait;         /* this attempt needs them committed first */
	struct pending *wq;     /* the node's writers while the answer is
				 * made: kept bytes answered (behind/pending.c) */
	struct rd sec;          /* a reader section until the reply is
				 * written: its extents are spliced then */
};

static void answer_clear(struct read_answer *a)
{
	h5_read_plan_release(&a->plan); /* the reply is written: unpin */
	h5_file_release_related(a->rf);
	a->rf = NULL;
	gen_release(a->g);
	a->g = NULL;
	pcache_answer_clear(&a->pa);
	dio_answer_clear(&a->da);
}

/* One attempt at the answer, on the generation n shows now; *failed: the
 * engine could not read it (which a live FILE's change may explain).
 * fh: the handle's (H5FS_FH_CACHED: on a live mount, the page cache holds
 * what it reads, live/pcache.c; H5FS_FH_DIO: a live direct_io handle, whose
 * read()s of several requests live/dio.c keeps to one version); tid: the
 * thread reading. */
static int read_once(struct read_answer *a, bool *failed, int *unlogged, h5fs *fs, struct node *n, size_t size,
		     off_t off, int attempt, uint64_t fh, pid_t tid)
{
	bool checked = fs->live && !a->fast;
	bool cached = checked && fh == H5FS_FH_CACHED;
	struct dio_ledger *dio = checked ? fh_dio(fh) : NULL;
	uint64_t fsize, len;
	int rc, e = 0;

	*failed = false;
	*unlogged = 0;
	/* an append or a refresh may replace n->ds and n->st meanwhile */
	pthread_rwlock_rdlock(&n->lk);
	a->g = n->gen;
	if (a->g)
		gen_hold(a->g);
	a->rf = n->f;
	h5_file_hold_related(a->rf);
	if (n->stale) {
		e = ESTALE;
		goto out;
	}
	fsize = (uint64_t)n->st.st_size;
	/* rows accepted after a commit for this read are not waited for:
	 * they came after the read (tail.c) */
	if (a->tail_end && fsize > a->tail_end)
		fsize = a->tail_end;
	if (!n->ds || (uint64_t)off >= fsize || size == 0)
		goto out;
	len = fsize - (uint64_t)off;
	if (len > size)
		len = size;
	/* One plan (the view's map: h5_dataset_map for raw bytes, plan.c; a
	 * buffer of text for vlen data, view.c): plain bytes of FILE (contiguous
	 * storage, unfiltered chunks; a virtual dataset's sources) as
	 * extents to splice - they stay valid after the lock is dropped:
	 * an append writes new bytes elsewhere, and space a commit frees is
	 * not reused while this read's section (a->sec) lasts, and a.g keeps
	 * the descriptors open; decoded chunks or a
	 * remote FILE's cached blocks pinned, written to /dev/fuse from the
	 * cache itself with no copy into a reply buffer (issues 16, 15); the
	 * rest read into a buffer. Never spliced once a live mount checks its
	 * reads (live/live.c): libfuse splices FILE's pages while it writes the
	 * reply, after live_read_check, so a write in that instant would go
	 * unseen; there the bytes are copied, then checked. */
	if (tail_covers(n, (uint64_t)off, (size_t)len)) {  /* rows written, not committed yet */
		rc = tail_read(&a->plan, n, (uint64_t)off, (size_t)len);
		if (rc == 0 && n->view == &h5_view_raw) {  /* bytes written over committed ones */
			int pk = pending_peek(a->wq, (uint64_t)off, a->plan.buf, a->plan.len);

			if (pk < 0)
				rc = pk;
		}
		if (rc == 1) {
			/* whole rows among them: committed first (do_read) */
			if (!a->tail_end)
				a->tail_end = fsize;
			a->tail_wait = true;
			e = EAGAIN;
			goto out;
		}
	} else if ((rc = pending_read(&a->plan, a->wq, n, (uint64_t)off, (size_t)len)) == 1) {
		/* (no byte written and not committed lies there) */
		rc = n->view->map(&a->plan, n->ds, (uint64_t)off, (size_t)len, checked ? H5_MAP_NO_SPLICE : 0);
	}
	if (rc < 0) {
		char what[64];

		snprintf(what, sizeof(what), "read [%lld+%llu]", (long long)off, (unsigned long long)len);
		if (fs->live && attempt + 1 < H5FS_LIVE_READ_TRIES && h5fs_errno(rc) == EIO) {
			/* maybe a writer's doing: do_read logs it unless a
			 * new generation answers */
			*unlogged = rc;
			e = EIO;
		} else {
			e = h5err_logged(fs, rc, what, n->path, NULL, n->addr);
		}
		*failed = e == EIO;
		goto out;
	}
	if (a->fast && fh == H5FS_FH_CACHED) {
		/* unchecked bytes a descriptor may read on from after the
		 * first change (pcache_keep_old), once made; under n->lk, so node_swap
		 * sees every answer of the generation it replaces */
		uint64_t end = (uint64_t)off + len, was = __atomic_load_n(&n->fast_end, __ATOMIC_RELAXED);

		while (was < end && !__atomic_compare_exchange_n(&n->fast_end, &was, end, true, __ATOMIC_RELAXED,
								 __ATOMIC_RELAXED))
			;
	}
	if (cached && a->plan.kind == H5_PLAN_PINNED) {
		e = pcache_prepare(&a->pa, fs, n, a->g, (uint64_t)off, a->plan.pin.iov, a->plan.pin.niov);
	} else if (cached && a->plan.kind == H5_PLAN_BUFFER) {
		struct iovec one = { a->plan.buf, a->plan.len };

		e = pcache_prepare(&a->pa, fs, n, a->g, (uint64_t)off, &one, 1);
	}
out:
	if (dio && !e && !n->stale) {
		/* every answer, the empty one too: it ends the read() */
		struct iovec one = { a->plan.buf, a->plan.len };

		if (a->plan.kind == H5_PLAN_PINNED)
			e = dio_prepare(&a->da, dio, n, a->g, tid, (uint64_t)off, size, a->plan.pin.iov,
					a->plan.pin.niov);
		else
			e = dio_prepare(&a->da, dio, n, a->g, tid, (uint64_t)off, size, &one, a->plan.len ? 1 : 0);
	}
	pthread_rwlock_unlock(&n->lk);
	return e;
}

/* The answer, made again while a live FILE changes under it (live/live.c):
 * the bytes of one version or an error, never a mix. */
static int do_read(struct read_answer *a, h5fs *fs, fuse_ino_t ino, size_t size, off_t off, uint64_t fh,
		   pid_t tid)
{
	struct node *n = node_get(fs, ino);
	const char *path;
	bool failed;
	int e, unlogged;

	if (!n)
		return ESTALE;
	/* (a rename replaces it meanwhile, atomically: node/fresh.c
	 * node_moved; the old one is retired, not freed, while we run) */
	path = __atomic_load_n(&n->path, __ATOMIC_ACQUIRE);
	if (off < 0)
		return EINVAL;
	for (int attempt = 0, shows = 0, waited_ms = 0;; attempt++) {
		int c;

		e = node_fresh(fs, n);
		if (e)
			return e;
		a->wq = pending_begin(fs, n);
		e = read_once(a, &failed, &unlogged, fs, n, size, off, attempt, fh, tid);
		pending_end(fs, n, a->wq);
		a->wq = NULL;
		if (a->tail_wait && shows < 4 && waited_ms < TAIL_WAIT_MS) {
			/* rows not committed: committed now, then read (a
			 * writer going on may need another: bounded); no
			 * handle to commit them through: the writer's is being
			 * closed, and its release commits them (waited for) */
			answer_clear(a);
			a->tail_wait = false;
			if (wfile_show_node(fs, n)) {
				shows++;
			} else {
				struct timespec ts = { 0, 5 * 1000000 };

				nanosleep(&ts, NULL);
				waited_ms += 5;
			}
			attempt--;
			continue;
		}
		if (a->tail_wait) {
			h5fs_log(fs, LOG_ERR, "read %s: rows written could not be committed for the read: EIO",
				 show_path(path));
			return EIO;
		}
		if (e && !failed)
			return e;
		c = live_read_check(fs, a->g, attempt, failed, path);
		if (c == 0 && unlogged)  /* no change explains it */
			return h5err_logged(fs, unlogged, "read", path, NULL, n->addr);
		if (c == 0 && !e && a->pa.npages) {
			/* checked: the kernel may now be given these pages */
			c = pcache_commit(fs, n, &a->pa, path);
			if (c == EAGAIN && (attempt + 1 >= H5FS_LIVE_READ_TRIES ||
					    (a->pa.verdict == PC_UNREADABLE && !live_retry(fs, attempt)))) {
				h5fs_log(fs, LOG_ERR, "read %s: the pages the kernel caches could not be checked "
					 "against FILE's new state: EIO", show_path(path));
				c = EIO;
			}
		}
		if (c == 0 && !e && a->da.used) {
			/* checked: a piece of a read() that began in another
			 * generation is answered only if that is one version */
			c = dio_commit(fs, fh_dio(fh), &a->da, path);
			if (c == EAGAIN && (attempt + 1 >= H5FS_LIVE_READ_TRIES || !live_retry(fs, attempt))) {
				h5fs_log(fs, LOG_ERR, "read %s: the read() under way could not be checked "
					 "against FILE's new state: EIO", show_path(path));
				c = EIO;
			}
		}
		if (c != EAGAIN)
			return c ? c : e;
		answer_clear(a);
	}
}

int member_read(void *r, struct root_read *out, uint64_t ino, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	struct read_answer *a = calloc(1, sizeof(*a));
	pid_t tid = out->tid;
	int e;

	memset(out, 0, sizeof(*out));
	if (!a)
		return ENOMEM;
	a->sec = commit_rd_begin(r);
	a->fast = live_fast_begin(r);
	e = do_read(a, r, ino, size, off, fi ? fi->fh : 0, tid);
	out->priv = a;
	if (e)
		return e;
	out->ext = a->plan.ext;
	out->next = a->plan.next;
	out->iov = a->plan.pin.iov;
	out->niov = (int)a->plan.pin.niov;
	out->buf = a->plan.buf;
	out->len = a->plan.len;
	return 0;
}

void member_read_done(void *r, struct root_read *out)
{
	struct read_answer *a = out->priv;

	if (a && a->fast)
		live_fast_end(r);  /* the reply is written: the sweep may drop its pages */
	if (a)
		answer_clear(a);   /* the reply is written: unpin */
	if (a)
		commit_rd_end(&a->sec);
	free(a);
	out->priv = NULL;
}

void member_usage(void *r, uint64_t *bytes, uint64_t *objects)
{
	h5fs *fs = r;

	*bytes = __atomic_load_n(&fs->file_size, __ATOMIC_RELAXED);
	pthread_mutex_lock(&fs->lock);
	*objects = fs->nnodes;
	pthread_mutex_unlock(&fs->lock);
}
