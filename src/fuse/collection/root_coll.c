/*
 * root_coll.c - a collection (`h5fs DIR MNT`): the folder root (root.h),
 * which shows DIR's directories as directories, its HDF5 files as
 * directories whose trees are member roots (opened by the dispatcher on
 * the first lookup inside them, dispatch_slot.c), and its other files as
 * read-only regular files with their own bytes. The mount and the hooks
 * the dispatcher opens members with are coll_mount.c's. Where the files
 * come from is a backend (coll_backend.h).
 *
 * A file is HDF5 when the format signature is at 0, 512, 1024, 2048, ...
 * (coll_detect.c, the collection library's one rule), whatever its
 * name. The answer is kept per (path, size, mtime), so a listing reads each file's signature once and opens
 * no HDF5 file. Folder ids are fixed per path for the mount's life; the
 * folder root keeps no lookup counts.
 */
#include "root_coll.h"
#include "h5util.h"
#include "hash.h"

/* ---- folder nodes ---------------------------------------------------------- */

static void grow_locked(struct coll *c)
{
	size_t ncap = c->cap * 2, i;
	struct fnode **bp, **bi;

	if (c->n < c->cap)
		return;
	bp = calloc(ncap, sizeof(*bp));
	bi = calloc(ncap, sizeof(*bi));
	if (!bp || !bi) {
		free(bp);
		free(bi);
		return;
	}
	for (i = 0; i < c->cap; i++) {
		struct fnode *x, *nx;

		for (x = c->by_path[i]; x; x = nx) {
			nx = x->next_p;
			x->next_p = bp[hash_name(0, x->path, ncap)];
			bp[hash_name(0, x->path, ncap)] = x;
		}
		for (x = c->by_ino[i]; x; x = nx) {
			nx = x->next_i;
			x->next_i = bi[hash_u64(x->ino, ncap)];
			bi[hash_u64(x->ino, ncap)] = x;
		}
	}
	free(c->by_path);
	free(c->by_ino);
	c->by_path = bp;
	c->by_ino = bi;
	c->cap = ncap;
}

struct fnode *coll_fnode_by_ino(struct coll *c, uint64_t ino)
{
	struct fnode *x;

	pthread_mutex_lock(&c->mu);
	for (x = c->by_ino[hash_u64(ino, c->cap)]; x && x->ino != ino; x = x->next_i)
		;
	pthread_mutex_unlock(&c->mu);
	return x;
}

/* The node of path, made when new (never freed before the mount). */
struct fnode *coll_fnode_get(struct coll *c, const char *path)
{
	struct fnode *x;

	pthread_mutex_lock(&c->mu);
	for (x = c->by_path[hash_name(0, path, c->cap)]; x && strcmp(x->path, path) != 0; x = x->next_p)
		;
	if (!x && (x = calloc(1, sizeof(*x))) != NULL) {
		x->path = strdup(path);
		if (!x->path) {
			free(x);
			x = NULL;
		} else {
			grow_locked(c);
			x->ino = c->next_ino++;
			x->next_p = c->by_path[hash_name(0, path, c->cap)];
			c->by_path[hash_name(0, path, c->cap)] = x;
			x->next_i = c->by_ino[hash_u64(x->ino, c->cap)];
			c->by_ino[hash_u64(x->ino, c->cap)] = x;
			c->n++;
		}
	}
	pthread_mutex_unlock(&c->mu);
	return x;
}

/* ---- what a file is --------------------------------------------------------- */

static void fds_add(struct coll *c, int d)
{
	__atomic_add_fetch(&c->fds, (unsigned)d, __ATOMIC_SEQ_CST);
	if (d < 0 && __atomic_load_n(&c->m->waiters, __ATOMIC_SEQ_CST)) {
		pthread_mutex_lock(&c->m->mu);
		pthread_cond_broadcast(&c->m->cv);
		pthread_mutex_unlock(&c->m->mu);
	}
}

/* The descriptor gate of members' related files (h5_open_opts.fd_gate):
 * room is made as for a plain file. */
int coll_gate(void *ud, int delta)
{
	struct coll *c = ud;

	if (delta == H5_GATE_SHED)      /* the kernel's limit: an idle member closed */
		return slots_shed(c->m, true) == 0 ? 0 : h5_err_set(H5_ERR_NOFD, "no descriptor left, no member idle");
	if (delta > 0) {
		if (slots_reserve(c->m, delta != H5_GATE_TRY) != 0)
			return h5_err_set(H5_ERR_LIMIT, "-o max_files=%u: every descriptor is in use",
					  c->m->max_files);
		fds_add(c, 1);
	} else {
		fds_add(c, -1);
	}
	return 0;
}

/* Is the format signature there (coll_detect.c)? Counted as a
 * descriptor of the mount's while it is read. */
static int sig_read(bool *hdf5, struct coll *c, const char *path, uint64_t size)
{
	int e;

	*hdf5 = false;
	e = slots_reserve(c->m, true);
	if (e)
		return e;
	fds_add(c, 1);
	e = coll_detect(hdf5, c->be, c->b, path, size);
	fds_add(c, -1);
	return e;
}

void coll_stamp_of(struct member_stamp *ms, const struct coll_stat *cs)
{
	memset(ms, 0, sizeof(*ms));
	ms->size = cs->size;
	ms->mtime_ns = cs->mtime_ns;
	snprintf(ms->etag, sizeof(ms->etag), "%s", cs->etag);
	ms->mode = cs->mode;
	ms->uid = cs->uid;
	ms->gid = cs->gid;
	ms->ctime_ns = cs->ctime_ns;
	ms->ino = cs->ino;
}

/* The kind of the entry at n with stat cs: the cached answer while its
 * size and mtime are those it was read at; else the index's answer for
 * that stamp (a remount reads no signature: `hint`, the answer of the
 * folder's one query, when >= 0; -2 when that query did not know the
 * file; -1 ask the index now); else the signature. */
static int kind_of(enum fkind *k, struct coll *c, struct fnode *n, const struct coll_stat *cs, int hint)
{
	struct member_stamp ms;
	bool hdf5;
	int e, known;

	if (cs->is_dir) {
		*k = FK_DIR;
		return 0;
	}
	if (!cs->is_file)
		return ENOENT;
	if (cs->by_name) {
		/* the backend knows by the name (S3 suffixes): no read */
		*k = cs->member ? FK_MEMBER : FK_PLAIN;
		pthread_mutex_lock(&c->mu);
		if (n->sig_size != cs->size || n->sig_mtime != cs->mtime_ns)
			n->logged = false;      /* another object now: log its failure again */
		n->sig_size = cs->size;
		n->sig_mtime = cs->mtime_ns;
		pthread_mutex_unlock(&c->mu);
		return 0;
	}
	pthread_mutex_lock(&c->mu);
	*k = n->sig_size == cs->size && n->sig_mtime == cs->mtime_ns ? n->kind : FK_UNKNOWN;
	pthread_mutex_unlock(&c->mu);
	if (*k == FK_MEMBER || *k == FK_PLAIN)
		return 0;
	coll_stamp_of(&ms, cs);
	known = hint == -1 ? coll_index_kind(c->ci, n->path, &ms) : hint;
	if (known >= 0) {
		hdf5 = known;
	} else {
		e = sig_read(&hdf5, c, n->path, cs->size);
		if (e)
			return e;
		coll_index_set_kind(c->ci, n->path, &ms, hdf5);
	}
	*k = hdf5 ? FK_MEMBER : FK_PLAIN;
	pthread_mutex_lock(&c->mu);
	if (n->sig_size != cs->size || n->sig_mtime != cs->mtime_ns)
		n->logged = false;      /* another file now: log its failure again */
	n->kind = *k;
	n->sig_size = cs->size;
	n->sig_mtime = cs->mtime_ns;
	pthread_mutex_unlock(&c->mu);
	return 0;
}

/* The stat shown for an entry: directories (and HDF5 files, shown as
 * directories) readable and searchable where the entry is readable,
 * plain files read-only; -o uid, gid, umask as for a single FILE. An
 * HDF5 file this mount may write shows its write bits too, as a single
 * FILE's root group does (member/setup.c): the kernel checks them for
 * mkdir, np.save and cp into the member's root (issue 63: it was
 * dr-xr-xr-x, and its owner got EACCES there). */
static void attr_of(struct stat *st, const struct coll *c, const struct fnode *n, const struct coll_stat *cs,
		    enum fkind k)
{
	mode_t r = cs->mode & 0444;
	bool dir = k == FK_DIR || k == FK_MEMBER;

	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)n->ino;
	if (c->cfg.umask_set)
		st->st_mode = (dir ? 0555 : 0444) & ~c->cfg.umask;
	else
		st->st_mode = dir ? r | (r >> 2) : r;
	if (k == FK_MEMBER && c->oo.writable && (cs->mode & 0222) && c->be->may_write &&
	    c->be->may_write(c->b, n->path))
		st->st_mode |= c->cfg.umask_set ? 0222 & ~c->cfg.umask : cs->mode & 0222;
	st->st_mode |= dir ? S_IFDIR : S_IFREG;
	st->st_nlink = dir ? 2 : 1;
	st->st_uid = c->cfg.uid_set ? c->cfg.uid : cs->uid;
	st->st_gid = c->cfg.gid_set ? c->cfg.gid : cs->gid;
	st->st_size = (off_t)cs->size;
	st->st_blksize = H5FS_BLKSIZE;
	st->st_blocks = blocks_of(cs->size);
	st->st_mtim.tv_sec = (time_t)(cs->mtime_ns / 1000000000LL);
	st->st_mtim.tv_nsec = (long)(cs->mtime_ns % 1000000000LL);
	st->st_atim = st->st_ctim = st->st_mtim;
}

/* ---- the folder root's operations ------------------------------------------ */

static int coll_getattr_node(struct stat *st, enum fkind *kind, struct coll *c, struct fnode *n)
{
	struct coll_stat cs;
	enum fkind k;
	int e = c->be->stat(c->b, &cs, n->path);

	if (!e && !*n->path && !cs.is_dir)
		e = ENOTDIR;
	if (!e)
		e = kind_of(&k, c, n, &cs, -1);
	if (e)
		return e;
	attr_of(st, c, n, &cs, k);
	if (kind)
		*kind = k;
	return 0;
}

static int coll_lookup(void *r, struct root_entry *e, uint64_t parent, const char *name)
{
	struct coll *c = r;
	struct fnode *p = coll_fnode_by_ino(c, parent), *n;
	enum fkind k = FK_UNKNOWN;
	char *path;
	int err;

	memset(e, 0, sizeof(*e));
	if (!p)
		return ESTALE;
	if (!name_ok(name, strlen(name)))
		return ENOENT;
	path = coll_path_join(p->path, name);
	if (!path)
		return ENOMEM;
	n = coll_fnode_get(c, path);
	free(path);
	if (!n)
		return ENOMEM;
	err = coll_getattr_node(&e->attr, &k, c, n);
	if (err)
		return err == ENOTDIR ? ENOENT : err;
	e->ino = n->ino;
	e->timeout = c->timeout;
	e->member = k == FK_MEMBER;
	return 0;
}

static void coll_forget(void *r, uint64_t ino, uint64_t nlookup)
{
	(void)r; (void)ino; (void)nlookup;   /* ids are fixed per path */
}

static int coll_getattr(void *r, struct stat *st, double *timeout, uint64_t ino)
{
	struct coll *c = r;
	struct fnode *n = coll_fnode_by_ino(c, ino);
	int e;

	if (!n)
		return ESTALE;
	*timeout = c->timeout;
	e = coll_getattr_node(st, NULL, c, n);
	return e == ENOENT ? ESTALE : e;
}

struct fdir {
	size_t n;
	struct root_dirent *e;
	struct coll_dirent *raw;
	size_t nraw;
};

static void fdir_free(struct fdir *d)
{
	if (!d)
		return;
	coll_dirents_free(d->raw, d->nraw);
	free(d->e);
	free(d);
}

/* A folder's listing as the index's one query of it sees it: the
 * entries sorted by name, and per entry (in listing order) the kind the
 * index has for its current stamp (-2: none). */
struct listed {
	struct coll_dirent **ents;
	size_t n;
	const struct coll_dirent *raw;
	int *kind;
};

static int cmp_ent(const void *a, const void *b)
{
	return strcmp((*(struct coll_dirent *const *)a)->name, (*(struct coll_dirent *const *)b)->name);
}

/* cindex_prune's question (is name still listed?), which also hands us
 * the file's row: its kind counts when its stamp is the listing's. No
 * lock taken (the index's is held). */
static int listed_has(void *arg, const char *name, const cindex_file *f)
{
	const struct listed *l = arg;
	struct coll_dirent key, *kp = &key, **hit;
	const struct coll_dirent *x;

	if (!l->n)
		return 0;
	key.name = (char *)name;
	hit = bsearch(&kp, l->ents, l->n, sizeof(*l->ents), cmp_ent);
	if (!hit)
		return 0;
	x = *hit;
	if (x->st.size == f->size && x->st.mtime_ns == f->mtime_ns && strcmp(x->st.etag, f->etag) == 0)
		l->kind[x - l->raw] = f->hdf5;
	return 1;
}

/* One query of the index for the folder: the kinds of its files (a
 * remount's listing then makes no query per file) and the files gone
 * from it dropped (sorted names: one binary search per file the index
 * knows here). ENOMEM only. */
static int listed_index(struct listed *l, struct coll *c, const struct fdir *d, const char *folder)
{
	size_t i;

	memset(l, 0, sizeof(*l));
	l->raw = d->raw;
	if (d->nraw) {
		l->ents = calloc(d->nraw, sizeof(*l->ents));
		l->kind = calloc(d->nraw, sizeof(*l->kind));
		if (!l->ents || !l->kind) {
			free(l->ents);
			free(l->kind);
			return ENOMEM;
		}
	}
	for (i = 0; i < d->nraw; i++) {
		l->ents[l->n++] = &d->raw[i];
		l->kind[i] = -2;
	}
	if (l->n > 1)   /* (an empty folder: no array, which qsort must not get) */
		qsort(l->ents, l->n, sizeof(*l->ents), cmp_ent);
	coll_index_prune(c->ci, folder, listed_has, l);
	return 0;
}

/* The listing as DIR has it now (a new file shows at the next listing):
 * each regular file's kind from its signature (cached by stamp). */
static int coll_opendir(void *r, void **dh, bool *keep, uint64_t ino)
{
	struct coll *c = r;
	struct fnode *n = coll_fnode_by_ino(c, ino);
	struct fdir *d;
	struct listed l;
	size_t i;
	int e;

	*keep = false;
	if (!n)
		return ESTALE;
	d = calloc(1, sizeof(*d));
	if (!d)
		return ENOMEM;
	/* the listing holds a descriptor on the folder meanwhile */
	e = slots_reserve(c->m, true);
	if (e) {
		free(d);
		return e;
	}
	fds_add(c, 1);
	e = c->be->list(c->b, &d->raw, &d->nraw, n->path);
	fds_add(c, -1);
	if (!e && d->nraw && !(d->e = calloc(d->nraw, sizeof(*d->e))))
		e = ENOMEM;
	memset(&l, 0, sizeof(l));
	if (!e && c->ci)
		e = listed_index(&l, c, d, n->path);
	for (i = 0; !e && i < d->nraw; i++) {
		struct coll_dirent *x = &d->raw[i];
		struct fnode *cn;
		enum fkind k;
		char *path;

		if (!name_ok(x->name, strlen(x->name)) || (!x->st.is_dir && !x->st.is_file))
			continue;
		path = coll_path_join(n->path, x->name);
		cn = path ? coll_fnode_get(c, path) : NULL;
		free(path);
		if (!cn) {
			e = ENOMEM;
			break;
		}
		if (kind_of(&k, c, cn, &x->st, l.kind ? l.kind[i] : -1) != 0) {
			h5_err_clear();
			continue;       /* gone, or unreadable: its lookup says why */
		}
		d->e[d->n].name = x->name;
		d->e[d->n].ino = cn->ino;
		d->e[d->n].type = k == FK_PLAIN ? S_IFREG : S_IFDIR;
		d->e[d->n].member = k == FK_MEMBER;
		d->n++;
	}
	free(l.ents);
	free(l.kind);
	if (e) {
		fdir_free(d);
		return e;
	}
	*dh = d;
	return 0;
}

static int coll_readdir(void *r, struct root_dirent *out, void *dh, size_t i)
{
	struct fdir *d = dh;

	(void)r;
	if (i >= d->n)
		return ENOENT;
	*out = d->e[i];
	return 0;
}

static void coll_releasedir(void *r, void *dh)
{
	(void)r;
	fdir_free(dh);
}

/* An open plain file: its bytes through the backend's byte source. */
struct fopen {
	h5_source *src;
	uint64_t size;
	/* reads done with the handle before its release: the kernel orders
	 * them, TSan cannot see it (a reply's splice, then RELEASE on another
	 * thread); each read's end and the release meet here */
	pthread_mutex_t mu;
};

static int coll_open(void *r, struct fuse_file_info *fi, uint64_t ino)
{
	struct coll *c = r;
	struct fnode *n = coll_fnode_by_ino(c, ino);
	struct fopen *h;
	struct stat st;
	enum fkind k;
	int e;

	if (!n)
		return ESTALE;
	e = coll_getattr_node(&st, &k, c, n);
	if (e)
		return e == ENOENT ? ESTALE : e;
	if (k != FK_PLAIN)
		return EISDIR;
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
		return root_no_write();        /* DIR's other files are shown read-only */
	h = calloc(1, sizeof(*h));
	if (h)
		pthread_mutex_init(&h->mu, NULL);
	if (!h)
		return ENOMEM;
	e = slots_reserve(c->m, true);
	if (e) {
		free(h);
		return e;
	}
	fds_add(c, 1);
	e = c->be->open_source(c->b, &h->src, n->path);
	if (e) {
		fds_add(c, -1);
		free(h);
		return e;
	}
	if (h->src->ops->size(h->src, &h->size) < 0) {
		h5_err_clear();
		h->size = h->src->size;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	fi->keep_cache = 0;     /* DIR's file may have changed since */
	return 0;
}

struct fread {
	h5_extent ext;
	uint8_t *buf;
};

static int coll_read(void *r, struct root_read *a, uint64_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct fopen *h = (struct fopen *)(uintptr_t)fi->fh;
	struct fread *x;
	uint64_t len;
	int fd, rc;

	(void)r; (void)ino;
	memset(a, 0, sizeof(*a));
	if (!h)
		return EBADF;
	if (off < 0)
		return EINVAL;
	if ((uint64_t)off >= h->size || size == 0)
		return 0;
	len = h->size - (uint64_t)off;
	if (len > size)
		len = size;
	x = calloc(1, sizeof(*x));
	if (!x)
		return ENOMEM;
	a->priv = x;
	fd = h->src->ops->fd ? h->src->ops->fd(h->src) : -1;
	if (fd >= 0) {
		pthread_mutex_lock(&h->mu);     /* (h's last use: see struct fopen) */
		pthread_mutex_unlock(&h->mu);
		/* spliced from the file's pages, as a dataset's plain bytes */
		x->ext.fd = fd;
		x->ext.file_off = (uint64_t)off;
		x->ext.len = len;
		a->ext = &x->ext;
		a->next = 1;
		return 0;
	}
	x->buf = malloc((size_t)len);
	if (!x->buf)
		return ENOMEM;
	rc = h->src->ops->read(h->src, (uint64_t)off, x->buf, (size_t)len);
	pthread_mutex_lock(&h->mu);             /* (h's last use: see struct fopen) */
	pthread_mutex_unlock(&h->mu);
	if (rc < 0) {
		h5fs_log_cfg(&((struct coll *)r)->cfg, LOG_ERR, "read [%lld+%llu]: EIO: %s", (long long)off,
			     (unsigned long long)len, h5_err_msg());
		return EIO;
	}
	a->buf = x->buf;
	a->len = (size_t)len;
	return 0;
}

static void coll_read_done(void *r, struct root_read *a)
{
	struct fread *x = a->priv;

	(void)r;

	if (x)
		free(x->buf);
	free(x);
	a->priv = NULL;
}

static int coll_release(void *r, uint64_t ino, struct fuse_file_info *fi)
{
	struct fopen *h = (struct fopen *)(uintptr_t)fi->fh;

	(void)ino;
	if (!h)
		return 0;
	pthread_mutex_lock(&h->mu);
	pthread_mutex_unlock(&h->mu);
	pthread_mutex_destroy(&h->mu);
	h5_source_close(h->src);
	free(h);
	fds_add(r, -1);
	return 0;
}

static int coll_listxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino)
{
	(void)r; (void)buf; (void)size; (void)ino;
	*len = 0;               /* DIR's own files and folders carry none */
	return 0;
}

static int coll_getxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino, const char *name)
{
	(void)r; (void)buf; (void)size; (void)ino; (void)name;
	*len = 0;
	return ENODATA;
}

static bool coll_writable(void *r)
{
	(void)r;
	return false;
}

static bool coll_idle(void *r)
{
	(void)r;
	return false;           /* the folders are never closed */
}

static void coll_free(void *r)
{
	(void)r;                /* freed with the mount (coll_destroy) */
}

const struct root_ops coll_folder_ops = {
	.name = "folders",
	.lookup = coll_lookup,
	.forget = coll_forget,
	.getattr = coll_getattr,
	.opendir = coll_opendir,
	.readdir = coll_readdir,
	.releasedir = coll_releasedir,
	.open = coll_open,
	.read = coll_read,
	.read_done = coll_read_done,
	.release = coll_release,
	.listxattr = coll_listxattr,
	.getxattr = coll_getxattr,
	.writable = coll_writable,
	.idle = coll_idle,
	.free = coll_free,
};
