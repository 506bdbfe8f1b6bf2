/* read.c - the member root's read operations (root.h): directories (a
 * snapshot per handle, at its first readdir) and reads. Each translates:
 * request -> engine -> a result the dispatcher (dispatch.c) replies with.
 * lookup.c has the names (lookup, getattr, readlink). */
#include "member.h"
#include "handle.h"
#include "tail.h"
#include "batch.h"
#include "dirsnap.h"

void dirsnap_free(struct dirsnap *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n; i++) {
		if (d->e[i].link) {
			h5_link_clear(d->e[i].link);
			free(d->e[i].link);
		}
	}
	free(d->e);
	free(d->st);
	free(d->names);
	gen_release(d->gen);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

static int dirsnap_cb(const h5_link *l, void *ud)
{
	struct dirsnap *d = ud;
	struct dent *e;

	if (!name_ok(l->name, l->name_len) ||
	    (l->type != H5_LINK_HARD && l->type != H5_LINK_SOFT && l->type != H5_LINK_EXTERNAL)) {
		d->skipped++;
		return 0;
	}
	/* (removed with the batch, not yet in FILE: lbatch.c) */
	if (lbatch_removed(d->fs, d->rf, d->raddr, l->name, l->name_len))
		return 0;
	if (d->n == d->cap) {
		size_t ncap = d->cap ? d->cap * 2 : 64;
		struct dent *ne = realloc(d->e, ncap * sizeof(*ne));

		if (!ne) {
			d->nomem = 1;
			return 1;
		}
		d->e = ne;
		d->cap = ncap;
	}
	if (d->names_cap - d->names_len < (size_t)l->name_len + 1) {
		size_t ncap = d->names_cap ? d->names_cap * 2 : 4096;
		char *nn;

		while (ncap - d->names_len < (size_t)l->name_len + 1)
			ncap *= 2;
		nn = realloc(d->names, ncap);
		if (!nn) {
			d->nomem = 1;
			return 1;
		}
		d->names = nn;
		d->names_cap = ncap;
	}
	e = &d->e[d->n];
	memset(e, 0, sizeof(*e));
	e->name = d->names_len;
	memcpy(d->names + d->names_len, l->name, l->name_len);
	d->names[d->names_len + l->name_len] = '\0';
	d->names_len += (size_t)l->name_len + 1;
	e->addr = l->type == H5_LINK_HARD ? l->addr : UINT64_MAX;
	/* (a group that its symbol table entry says is one: no header read
	 * for its d_type, issue 82; its lookup reads it, and says so if the
	 * entry lied) */
	e->dtype = l->type != H5_LINK_HARD ? DT_LNK : l->is_group ? DT_DIR : DT_UNKNOWN;
	if (l->type == H5_LINK_EXTERNAL || (l->type == H5_LINK_SOFT && d->keep_soft)) {
		e->link = calloc(1, sizeof(*e->link));
		if (!e->link || (l->ext_file && !(e->link->ext_file = strdup(l->ext_file))) ||
		    (l->ext_path && !(e->link->ext_path = strdup(l->ext_path))) ||
		    (l->target && !(e->link->target = strdup(l->target)))) {
			d->n++;
			d->nomem = 1;
			return 1;
		}
		e->link->type = l->type;
	}
	d->n++;
	return 0;
}

static unsigned char kind_dtype(h5_obj_kind k)
{
	return k == H5_OBJ_GROUP ? DT_DIR : DT_REG;
}

#define OHDR_AHEAD 4

/* Entry i's kind and d_type from one read of its header, with its stat
 * kept for READDIRPLUS when it is not a group (a group's lookup makes
 * its node): false when that read failed (h5_obj_info_get then says what
 * it can: a dataset that cannot be opened is still listed DT_REG, and its
 * lookup reports the EIO) */
static bool listing_stat(struct dirsnap *d, size_t i, h5fs *fs, h5_file *f, h5_window *w)
{
	struct dent *e = &d->e[i];
	struct dstat ds;

	if (node_obj_stat(&ds.st, &ds.kind, &ds.tag, fs, f, e->addr, w) != 0) {
		h5_err_clear();
		return false;
	}
	e->dtype = kind_dtype(ds.kind);
	if (ds.kind == H5_OBJ_GROUP)
		return true;
	/* (out of memory: no stat kept; the lookup reads it) */
	if (!d->st)
		d->st = malloc(d->n * sizeof(*d->st));
	if (d->st) {
		d->st[i] = ds;
		e->has_st = true;
	}
	return true;
}

#define LISTING_UP 64

/* ino is the directory n or one above it on its path: in up (its nup
 * ancestors' numbers, ancestor_chain), or walked up to when they were too
 * many to keep (nup < 0) */
static bool listing_up(h5fs *fs, const struct node *n, const uint64_t *up, int nup, uint64_t ino)
{
	if (nup < 0)
		return ancestor_depth(fs, n, ino) >= 0;
	for (int k = 0; k < nup; k++)
		if (up[k] == ino)
			return true;
	return false;
}

/* A snapshot of the directory's entries (the kinds and inode numbers of
 * what they lead to): 0 and *out, or an errno (EIO logged). */
int dirsnap_list(struct dirsnap *d, h5fs *fs, fuse_ino_t ino, bool ahead)
{
	struct node *n = node_get(fs, ino);
	struct use u;
	uint64_t *keys = NULL;
	size_t *at = NULL, nk = 0, i;
	uint8_t *kinds = NULL;
	struct kind_at *kat = NULL;     /* (the slots kind_lookup_many made) */
	uint64_t up[LISTING_UP];        /* n and the directories above it */
	int rc, err = 0, nup = -1;
	bool want_st;
	/* the children's headers, read a window at a time (h5_window) */
	h5_window win = { 0 };

	if (!n)
		return ESTALE;
	if (n->type != NT_DIR)
		return ENOTDIR;
	/* new files not linked yet are listed too (made ahead: by the
	 * readdir that takes it, ahead_take) */
	err = ahead ? 0 : commit_barrier(fs, COMMIT_NAMES);
	if (err)
		return err;
	/* (after the barrier's own commit: marked before anything is read) */
	d->quiet = fs_change_mark(fs, &d->chg_mark);
	/* READDIRPLUS's entries are answered from the listing's read where
	 * its lookup takes the listing's word for the name (do_lookup: a
	 * mount that does not write, or one none of whose changes ran
	 * since the mark) and a dataset's mode does not depend on its
	 * dataset's state (write_busy: node.c obj_fill) */
	want_st = (!pager_writes(&fs->pg) || d->quiet) && !fs->write_busy;
	err = node_use(&u, fs, n);
	if (err)
		return err;
	d->keep_soft = n->fpath != NULL;
	d->gen = u.g;
	if (d->gen)
		gen_hold(d->gen);
	d->fs = fs;
	d->rf = u.f;
	d->raddr = u.addr;
	rc = h5_group_iterate(u.f, u.addr, dirsnap_cb, d);
	if (d->nomem) {
		err = ENOMEM;
		goto fail;
	}
	if (rc < 0) {
		err = h5err_logged(fs, rc, "readdir", n->path, NULL, u.addr);
		goto fail;
	}
	if (d->skipped)
		h5fs_log(fs, LOG_WARNING, "readdir %s: %zu link(s) with names that cannot be shown were skipped",
		       show_path(n->path), d->skipped);
	/* Hard links: d_type from the kind (cached per address; one header
	 * decode the first time) so find/ls need not stat every entry. A child
	 * that cannot be decoded stays DT_UNKNOWN: its lookup reports the EIO.
	 * FILE's own children (all but links shown in place) are looked up in
	 * the kind map together, and the kinds decoded remembered together:
	 * one lock each per listing, not two per name (kind_lookup_many) */
	if (d->n) {
		keys = malloc(d->n * (sizeof(*keys) + sizeof(*kat) + sizeof(*at) + 1));
		if (!keys) {
			err = ENOMEM;
			goto fail;
		}
		kat = (struct kind_at *)(keys + d->n);
		at = (size_t *)(kat + d->n);
		kinds = (uint8_t *)(at + d->n);
		nup = ancestor_chain(fs, n, up, LISTING_UP);
	}
	for (i = 0; i < d->n; i++) {
		struct dent *e = &d->e[i];
		h5_file *tf = u.f;
		uint64_t taddr = e->addr;
		h5_obj_kind k;

		/* links shown in place show what they lead to (link_place) */
		if (e->link) {
			char *fp = NULL;

			if (link_place(&tf, &taddr, &fp, n, u.f, e->link) != 0) {
				h5_err_clear();
				tf = NULL;
				taddr = UINT64_MAX;
			}
			free(fp);
		}
		if (taddr != UINT64_MAX && listing_up(fs, n, up, nup, file_ino(tf, taddr))) {
			taddr = UINT64_MAX;      /* a link up the tree: a symlink */
			e->dtype = DT_LNK;
		}
		if (taddr != UINT64_MAX && !e->link) {
			e->ino = file_ino(tf, taddr);
			keys[nk] = e->ino;
			at[nk++] = i;
		} else if (taddr != UINT64_MAX) {
			h5_obj_info info;
			uint64_t key = file_ino(tf, taddr);

			e->ino = key;
			if (kind_lookup(fs, key, &k)) {
				e->dtype = kind_dtype(k);
			} else if (h5_obj_info_get(&info, tf, taddr) == 0) {
				kind_remember(fs, key, info.kind);
				e->dtype = kind_dtype(info.kind);
			}
		} else {
			e->ino = synth_ino(fs, n->ino, d->names + e->name);
		}
		if (e->link && tf)
			h5_file_release_related(tf);
		if (!e->ino) {
			err = ENOMEM;
			goto fail;
		}
	}
	kind_lookup_many(fs, keys, kinds, kat, nk);
	/* the headers to decode: the engine's cache look-up of the ones a
	 * few places ahead fetched meanwhile (h5_obj_prefetch; want_st reads
	 * them past the cache) */
	for (i = 0; i < nk && i < OHDR_AHEAD && !want_st; i++)
		if (kinds[i] == KIND_NONE)
			h5_obj_prefetch(u.f, d->e[at[i]].addr);
	for (i = 0; i < nk; i++) {
		struct dent *e = &d->e[at[i]];
		h5_obj_info info;

		if (!want_st && i + OHDR_AHEAD < nk && kinds[i + OHDR_AHEAD] == KIND_NONE)
			h5_obj_prefetch(u.f, d->e[at[i + OHDR_AHEAD]].addr);
		if (kinds[i] != KIND_NONE) {
			/* known, and no record kept of it (the kernel forgot
			 * it): its stat read in this pass too, for READDIRPLUS */
			if (want_st && kinds[i] != H5_OBJ_GROUP && !kat[i].named)
				(void)listing_stat(d, at[i], fs, u.f, &win);
			e->dtype = kind_dtype((h5_obj_kind)kinds[i]);
			kinds[i] = KIND_NONE;   /* known: nothing to remember */
		} else if (e->dtype == DT_DIR) {
			kinds[i] = H5_OBJ_GROUP;        /* (dirsnap_cb: the link said) */
		} else if (want_st && listing_stat(d, at[i], fs, u.f, &win)) {
			kinds[i] = (uint8_t)(e->has_st ? d->st[at[i]].kind : H5_OBJ_GROUP);
		} else if (h5_obj_info_get(&info, u.f, e->addr) == 0) {
			e->dtype = kind_dtype(info.kind);
			kinds[i] = (uint8_t)info.kind;
		}
	}
	kind_remember_many(fs, keys, kinds, kat, nk);
	h5_err_clear();
	h5_window_clear(&win);
	free(keys);
	node_use_end(&u);
	return 0;
fail:
	h5_window_clear(&win);
	free(keys);
	node_use_end(&u);
	return err;
}

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
