/* ll.c - the FUSE low-level read operations: lookup, attributes,
 * directories, reads. Handlers translate: request -> engine -> one reply. */
#include "ll.h"

/* ---- operations ---------------------------------------------------------------- */

void op_init(void *userdata, struct fuse_conn_info *conn)
{
	h5fs *fs = userdata;

	/* libfuse derives max_pages, and so the largest read the kernel sends
	 * us, from max_write; it clamps this to its own buffer size (1 MiB on
	 * current kernels). */
	conn->max_write = 1U << 20;
	live_start(fs);     /* here: after fuse_daemonize's fork */
	/* libfuse wants the max_read mount option (main.c) repeated here */
	if (fs->cfg.max_read)
		conn->max_read = fs->cfg.max_read;
	/* conn->max_readahead starts at the kernel's maximum: keep it. */
	/* Reads of plain bytes are answered by splicing FILE's pages into
	 * the reply (op_read): no copy through our memory. */
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	if (conn->capable & FUSE_CAP_SPLICE_MOVE)
		conn->want |= FUSE_CAP_SPLICE_MOVE;
}

static void reply_entry_node(fuse_req_t req, h5fs *fs, const struct node *n)
{
	struct fuse_entry_param e;

	memset(&e, 0, sizeof(e));
	e.ino = n->ino;
	/* 0 unless a live FILE's change gave the id to another object
	 * (node_adopt); the root's is always 0 */
	e.generation = n->entry_gen;
	e.attr = n->st;
	e.attr_timeout = node_timeout(fs);
	e.entry_timeout = node_timeout(fs);
	fuse_reply_entry(req, &e);
}

/* A node that a live FILE's change left stale (ESTALE: its path leads
 * elsewhere now) under the (parent, name) number `id`: that number is
 * given up and a new one returned for the name (0: out of memory). A
 * directory's anchors and a symlink's kind are fixed for its life, so
 * the name's new object is a new node, not the old one adopted. */
static uint64_t renew_synth(h5fs *fs, struct node *n, uint64_t parent, const char *name)
{
	uint64_t id = n->ino;

	node_unref(fs, id, 1);
	return synth_renew(fs, parent, name, id);
}

/* The node of object taddr of tf shown as `name` in directory p (at mount
 * path `path`; fpath: its path in tf when a link was followed to it, which
 * makes it an anchor of tf's tree), read in the generation u holds: 0 and
 * *out (referenced), or an errno (EIO logged). */
static int show_object(struct node **out, h5fs *fs, const struct node *p, const struct use *u, const char *name,
		       const char *path, h5_file *tf, uint64_t taddr, const char *fpath)
{
	struct node *n, *fresh = NULL;
	h5_obj_info info;
	h5_obj_kind k = H5_OBJ_UNKNOWN;
	uint64_t id;
	int rc, e, tries = 0;

again:
	if (!kind_lookup(fs, file_ino(fs, tf, taddr), &k)) {
		if (h5_obj_info_get(&info, tf, taddr) == 0)
			k = info.kind;
		h5_err_clear();   /* node_make_obj reports it */
	}
	/* a directory is a node per path: its ancestors are its own */
	id = k == H5_OBJ_GROUP ? synth_ino(fs, p->ino, name) : file_nodeid(fs, tf, taddr);
	if (!id)
		return ENOMEM;
	n = node_ref_existing(fs, id);
	if (n && k == H5_OBJ_GROUP) {
		/* re-resolved by its path, anchors included (ll_live.c) */
		e = node_fresh(fs, n);
		if (e == 0)
			goto found;
		if (e != ESTALE) {
			node_unref(fs, n->ino, 1);
			return e;
		}
		id = renew_synth(fs, n, p->ino, name);
		if (!id)
			return ENOMEM;
		n = NULL;
	} else if (n) {
		/* the object's own node (hard links share it); a stale one
		 * whose id this name leads to now becomes this object */
		e = node_adopt(fs, n, tf, taddr, path, u->g);
		if (e) {
			node_unref(fs, n->ino, 1);
			return e;
		}
	}
	if (!n) {
		rc = node_make_obj(&fresh, fs, tf, taddr, id, path);
		if (rc < 0)
			return h5err_logged(fs, rc, "lookup", p->path, name, taddr);
		if ((fresh->type == NT_DIR) != (k == H5_OBJ_GROUP) && tries++ == 0) {
			/* the kind map was filled from an older generation of a
			 * live FILE as it was refreshed: node_make_obj has put
			 * the kind read now there */
			node_free(fresh);
			fresh = NULL;
			k = H5_OBJ_UNKNOWN;
			goto again;
		}
		if (fresh->type == NT_DIR) {
			fresh->parent = p->ino;
			if (dir_anchor(fresh, u->g->f, p, tf, name, path, fpath) != 0) {
				node_free(fresh);
				return ENOMEM;
			}
		}
		fresh->gen = u->g;
		fresh->checked = u->g->num;
		gen_hold(u->g);
		*out = node_publish(fs, fresh);
		return 0;
	}
found:
	if (n->type != NT_DIR) {
		/* the entry a live FILE's change invalidates (ll_live.c); a
		 * directory's parent is its path's, fixed */
		pthread_mutex_lock(&fs->lock);
		n->parent = p->ino;
		pthread_mutex_unlock(&fs->lock);
	}
	*out = n;
	return 0;
}

/* The symlink node `name` of directory p shows (l as link_place answered
 * rc; depth >= 0: a link up the path, "." / ".."...), read in the
 * generation u holds: 0 and *out (referenced), or an errno. */
static int show_symlink(struct node **out, h5fs *fs, const struct node *p, const struct use *u, const char *name,
			const char *path, const h5_link *l, int rc, int depth)
{
	struct node *n, *fresh = NULL;
	h5_link shown;
	char *mtarget = NULL;
	uint64_t ino = synth_ino(fs, p->ino, name);
	int e;

	if (!ino)
		return ENOMEM;
	n = node_ref_existing(fs, ino);
	if (n) {
		e = node_fresh(fs, n);
		if (e == 0) {
			*out = n;
			return 0;
		}
		if (e != ESTALE) {
			node_unref(fs, n->ino, 1);
			return e;
		}
		/* the name was something else in the generation n was read in */
		ino = renew_synth(fs, n, p->ino, name);
		if (!ino)
			return ENOMEM;
	}
	e = link_shown(&shown, &mtarget, p, u->f, l, rc);
	if (e)
		return e;
	rc = node_make_link(&fresh, fs, ino, path, p->path, depth >= 0 ? NULL : &shown, depth);
	free(mtarget);
	if (rc < 0)
		return h5err_logged(fs, rc, "lookup", p->path, name, UINT64_MAX);
	fresh->gen = u->g;
	fresh->checked = u->g->num;
	gen_hold(u->g);
	*out = node_publish(fs, fresh);
	return 0;
}

/* The node a name of a directory leads to: 0 and *out (referenced), or an
 * errno (EIO logged). */
static int do_lookup(struct node **out, h5fs *fs, fuse_ino_t parent, const char *name)
{
	struct node *p = node_get(fs, parent);
	struct use u;
	h5_link l;
	h5_file *tf = NULL;
	uint64_t taddr = UINT64_MAX;
	char *path = NULL, *fpath = NULL;
	int rc, e = 0, depth = -1;

	memset(&l, 0, sizeof(l));
	if (!p)
		return ESTALE;
	if (p->type != NT_DIR)
		return ENOTDIR;
	if (!name_ok(name, strlen(name)))
		return ENOENT;
	/* a group a live FILE no longer has holds no names */
	e = node_use(&u, fs, p);
	if (e)
		return e == ESTALE ? ENOENT : e;
	rc = h5_group_lookup(&l, u.f, u.addr, name);
	if (rc < 0) {
		e = h5err_logged(fs, rc, "lookup", p->path, name, UINT64_MAX);
		goto out;
	}
	/* Names readdir would skip must not be reachable by lookup either. */
	if (!name_ok(l.name, l.name_len) || strcmp(l.name, name) != 0) {
		e = ENOENT;
		goto out;
	}
	path = path_join(p->path, name);
	if (!path) {
		e = ENOMEM;
		goto out;
	}
	switch (l.type) {
	case H5_LINK_HARD:
		tf = u.f;
		h5_file_hold_related(tf);
		taddr = l.addr;
		rc = 0;
		break;
	case H5_LINK_SOFT:
	case H5_LINK_EXTERNAL:
		rc = link_place(&tf, &taddr, &fpath, p, u.f, &l);
		if (rc < 0)
			h5fs_log(fs, LOG_NOTICE, "lookup %s: %s link not followed, shown as a symlink: %s",
				 show_path(path), l.type == H5_LINK_SOFT ? "soft" : "external", h5_err_msg());
		break;
	default:
		/* user-defined link types (65..255) have no meaning to us */
		h5fs_log(fs, LOG_INFO, "lookup %s/%s: link type %d not shown", show_path(p->path), name,
		       (int)l.type);
		e = ENOENT;
		goto out;
	}
	if (rc == 0) {
		/* a link up to this group or one of its ancestors on this path:
		 * a symlink there */
		depth = ancestor_depth(fs, p, file_ino(fs, tf, taddr));
		if (depth < 0) {
			e = show_object(out, fs, p, &u, name, path, tf, taddr, fpath);
			goto out;
		}
	}
	e = show_symlink(out, fs, p, &u, name, path, &l, rc, depth);
out:
	h5_file_release_related(tf);
	node_use_end(&u);
	free(path);
	free(fpath);
	h5_link_clear(&l);
	return e;
}

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	h5fs *fs = fuse_req_userdata(req);
	struct node *n = NULL;
	int e;

	for (int attempt = 0; (e = do_lookup(&n, fs, parent, name)) == EIO && live_retry(fs, attempt); attempt++)
		;

	if (e)
		fuse_reply_err(req, e);
	else
		reply_entry_node(req, fuse_req_userdata(req), n);
}

void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	node_unref(fuse_req_userdata(req), ino, nlookup);
	fuse_reply_none(req);
}

void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
	h5fs *fs = fuse_req_userdata(req);
	size_t i;

	for (i = 0; i < count; i++)
		node_unref(fs, forgets[i].ino, forgets[i].nlookup);
	fuse_reply_none(req);
}

static int do_getattr(struct stat *st, h5fs *fs, fuse_ino_t ino)
{
	struct node *n = node_get(fs, ino);

	int e;

	if (!n)
		return ESTALE;
	e = node_fresh(fs, n);
	if (e)
		return e;
	/* an append or a refresh may be updating st */
	pthread_rwlock_rdlock(&n->lk);
	*st = n->st;
	pthread_rwlock_unlock(&n->lk);
	return 0;
}

void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs *fs = fuse_req_userdata(req);
	struct stat st;
	int e = do_getattr(&st, fs, ino);

	(void)fi;
	if (e)
		fuse_reply_err(req, e);
	else
		fuse_reply_attr(req, &st, node_timeout(fs));
}

static int do_readlink(const char **target, h5fs *fs, fuse_ino_t ino)
{
	struct node *n = node_get(fs, ino);
	int e;

	if (!n)
		return ESTALE;
	e = node_fresh(fs, n);
	if (e)
		return e;
	if (n->type != NT_LINK)
		return EINVAL;
	pthread_rwlock_rdlock(&n->lk);   /* a live refresh may replace it */
	*target = n->target;             /* (the old text is kept: ll_live.c) */
	pthread_rwlock_unlock(&n->lk);
	/* The kernel takes at most PATH_MAX - 1 bytes: /dev/fuse refuses a
	 * longer reply, and the caller would see an EIO nobody logged. */
	if (strlen(*target) >= PATH_MAX) {
		h5fs_log(fs, LOG_WARNING, "readlink %s: target of %zu bytes is longer than PATH_MAX",
			 show_path(n->path), strlen(*target));
		return ENAMETOOLONG;
	}
	return 0;
}

void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	const char *target = NULL;
	int e = do_readlink(&target, fuse_req_userdata(req), ino);

	if (e)
		fuse_reply_err(req, e);
	else
		fuse_reply_readlink(req, target);
}

/* A directory listing, taken at opendir so that readdir offsets stay
 * meaningful however the kernel splits the reads. */
struct dent {
	char *name;
	uint64_t ino;
	uint64_t addr;          /* hard links: to find the kind */
	unsigned char dtype;    /* DT_* */
	h5_link *link;          /* links that may be shown in place (link_place) */
};

struct dirsnap {
	struct hlink link;      /* first: fs->open_dirs */
	size_t n, cap;
	struct dent *e;
	size_t skipped;
	int nomem;
	bool keep_soft;         /* a directory of another file: soft links may lead out */
};

void handle_add(h5fs *fs, struct hlink *list, struct hlink *h)
{
	pthread_mutex_lock(&fs->lock);
	h->prev = list;
	h->next = list->next;
	list->next->prev = h;
	list->next = h;
	pthread_mutex_unlock(&fs->lock);
}

void handle_del(h5fs *fs, struct hlink *h)
{
	pthread_mutex_lock(&fs->lock);
	h->prev->next = h->next;
	h->next->prev = h->prev;
	h->prev = h->next = h;
	pthread_mutex_unlock(&fs->lock);
}

void dirsnap_free(struct dirsnap *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n; i++) {
		free(d->e[i].name);
		if (d->e[i].link) {
			h5_link_clear(d->e[i].link);
			free(d->e[i].link);
		}
	}
	free(d->e);
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
	e = &d->e[d->n];
	memset(e, 0, sizeof(*e));
	e->name = strdup(l->name);
	if (!e->name) {
		d->nomem = 1;
		return 1;
	}
	e->addr = l->type == H5_LINK_HARD ? l->addr : UINT64_MAX;
	e->dtype = l->type == H5_LINK_HARD ? DT_UNKNOWN : DT_LNK;
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

/* A snapshot of the directory's entries (the kinds and inode numbers of
 * what they lead to): 0 and *out, or an errno (EIO logged). */
static int do_opendir(struct dirsnap **out, h5fs *fs, fuse_ino_t ino)
{
	struct node *n = node_get(fs, ino);
	struct dirsnap *d;
	struct use u;
	size_t i;
	int rc, err = 0;

	if (!n)
		return ESTALE;
	if (n->type != NT_DIR)
		return ENOTDIR;
	err = node_use(&u, fs, n);
	if (err)
		return err;
	d = calloc(1, sizeof(*d));
	if (!d) {
		node_use_end(&u);
		return ENOMEM;
	}
	d->keep_soft = n->fpath != NULL;
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
	 * that cannot be decoded stays DT_UNKNOWN: its lookup reports the EIO. */
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
		if (taddr != UINT64_MAX && ancestor_depth(fs, n, file_ino(fs, tf, taddr)) >= 0) {
			taddr = UINT64_MAX;      /* a link up the tree: a symlink */
			e->dtype = DT_LNK;
		}
		if (taddr != UINT64_MAX) {
			h5_obj_info info;
			uint64_t key = file_ino(fs, tf, taddr);

			e->ino = key;
			if (kind_lookup(fs, key, &k)) {
				e->dtype = kind_dtype(k);
			} else if (h5_obj_info_get(&info, tf, taddr) == 0) {
				kind_remember(fs, key, info.kind);
				e->dtype = kind_dtype(info.kind);
			}
		} else {
			e->ino = synth_ino(fs, n->ino, e->name);
		}
		if (e->link && tf)
			h5_file_release_related(tf);
		if (!e->ino) {
			err = ENOMEM;
			goto fail;
		}
	}
	node_use_end(&u);
	*out = d;
	return 0;
fail:
	node_use_end(&u);
	dirsnap_free(d);
	return err;
}

void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs *fs = fuse_req_userdata(req);
	struct dirsnap *d = NULL;
	int e = do_opendir(&d, fs, ino);

	if (e) {
		fuse_reply_err(req, e);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)d;
	/* a live FILE's listing may change: the kernel asks again */
	fi->keep_cache = !fs->live;
	fi->cache_readdir = !fs->live;
	handle_add(fs, &fs->open_dirs, &d->link);
	if (fuse_reply_open(req, fi) != 0) {
		handle_del(fs, &d->link);
		dirsnap_free(d);   /* interrupted: no releasedir will come */
	}
}

void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct dirsnap *d = (struct dirsnap *)(uintptr_t)fi->fh;
	char *buf;
	size_t pos = 0;
	uint64_t i;

	if (!d) {
		fuse_reply_err(req, EBADF);
		return;
	}
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* offsets: 0 ".", 1 "..", 2+i entry i; each entry's d_off is the next */
	for (i = off < 0 ? 0 : (uint64_t)off; i < d->n + 2; i++) {
		struct stat st;
		const char *name;
		size_t len;

		memset(&st, 0, sizeof(st));
		if (i == 0) {
			name = ".";
			st.st_ino = ino;
			st.st_mode = S_IFDIR;
		} else if (i == 1) {
			/* the parent is not tracked (a group may have several) */
			name = "..";
			st.st_ino = FUSE_ROOT_ID;
			st.st_mode = S_IFDIR;
		} else {
			const struct dent *e = &d->e[i - 2];

			name = e->name;
			st.st_ino = e->ino;
			st.st_mode = (mode_t)DTTOIF(e->dtype);
		}
		len = fuse_add_direntry(req, buf + pos, size - pos, name, &st, (off_t)(i + 1));
		if (len > size - pos)
			break;
		pos += len;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
}

void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct dirsnap *d = (struct dirsnap *)(uintptr_t)fi->fh;

	(void)ino;
	if (d)
		handle_del(fuse_req_userdata(req), &d->link);
	dirsnap_free(d);
	fuse_reply_err(req, 0);
}


/* A read window mapped to FILE (h5_dataset_extents) is answered from
 * the descriptors of FILE (or of a virtual dataset's source files): libfuse splices the pages into /dev/fuse when the
 * kernel allows it (else it preads them into one buffer itself). A window
 * needing more pieces than this is read the ordinary way. */
#define H5FS_MAX_EXTENTS 64

static void reply_extents(fuse_req_t req, const h5_extent *ext, size_t n)
{
	struct fuse_bufvec one = FUSE_BUFVEC_INIT(0), *bv = &one;
	size_t i;

	if (n > 1) {
		bv = calloc(1, sizeof(*bv) + (n - 1) * sizeof(bv->buf[0]));
		if (!bv) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	bv->count = n;
	bv->idx = 0;
	bv->off = 0;
	for (i = 0; i < n; i++) {
		bv->buf[i].size = (size_t)ext[i].len;
		bv->buf[i].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
		bv->buf[i].mem = NULL;
		bv->buf[i].fd = ext[i].fd;
		bv->buf[i].pos = (off_t)ext[i].file_off;
	}
	/* on failure libfuse has answered with the errno (or the request was
	 * interrupted): nothing left to do */
	fuse_reply_data(req, bv, FUSE_BUF_SPLICE_MOVE);
	if (bv != &one)
		free(bv);
}

/* What a read answers with: pieces of files to splice (next > 0), or
 * pieces of decoded chunks or remote blocks held in the engine's or the
 * byte source's cache (pin.niov > 0), or
 * len bytes in buf (h5_buf_alloc'd), or nothing (end of file). */
struct read_answer {
	h5_extent ext[H5FS_MAX_EXTENTS];
	size_t next;
	h5_pin pin;
	uint8_t *buf;
	size_t len;
	struct gen *g;          /* held until the reply is written, */
	h5_file *rf;            /* with the related file read (its cache view) */
};

static void answer_clear(struct read_answer *a)
{
	h5_pin_release(&a->pin);        /* the reply is written: unpin */
	memset(&a->pin, 0, sizeof(a->pin));
	h5_buf_free(a->buf);
	a->buf = NULL;
	a->len = 0;
	a->next = 0;
	h5_file_release_related(a->rf);
	a->rf = NULL;
	gen_release(a->g);
	a->g = NULL;
}

/* One attempt at the answer, on the generation n shows now; *failed: the
 * engine could not read it (which a live FILE's change may explain). */
static int read_once(struct read_answer *a, bool *failed, int *unlogged, h5fs *fs, struct node *n, size_t size,
		     off_t off, int attempt)
{
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
	if (!n->ds || (uint64_t)off >= fsize || size == 0)
		goto out;
	len = fsize - (uint64_t)off;
	if (len > size)
		len = size;
	/* Plain bytes of FILE (contiguous storage, unfiltered chunks; a
	 * virtual dataset's sources): the extents stay valid after the lock is
	 * dropped, since an append writes new bytes elsewhere and never
	 * rewrites bytes in use, and a.g keeps the descriptors open. */
	/* (not for a live FILE that has changed: the pages are spliced while
	 * the reply is written, after live_read_check) */
	if (h5_file_fd(n->f) >= 0 && !live_direct(fs)) {
		if (h5_dataset_extents(a->ext, H5FS_MAX_EXTENTS, &a->next, n->ds, (uint64_t)off, (size_t)len) == 0 &&
		    a->next > 0)
			goto out;
		a->next = 0;
		h5_err_clear();  /* not mappable: read it (which reports real errors) */
	}
	/* Decoded chunks, or a remote FILE's cached blocks: written to
	 * /dev/fuse from the cache itself, with no copy into a reply buffer
	 * (issues 16, 15). */
	if (h5_dataset_pin(&a->pin, n->ds, (uint64_t)off, (size_t)len) == 0 && a->pin.niov > 0)
		goto out;
	h5_err_clear();  /* not pinnable: read it (which reports real errors) */
	a->buf = h5_buf_alloc((size_t)len);
	if (!a->buf) {
		e = ENOMEM;
		goto out;
	}
	rc = h5_dataset_read(n->ds, a->buf, (uint64_t)off, (size_t)len);
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
	a->len = (size_t)len;
out:
	pthread_rwlock_unlock(&n->lk);
	return e;
}

/* The answer, made again while a live FILE changes under it (ll_live.c):
 * the bytes of one version or an error, never a mix. */
static int do_read(struct read_answer *a, h5fs *fs, fuse_ino_t ino, size_t size, off_t off)
{
	struct node *n = node_get(fs, ino);
	bool failed;
	int e, unlogged;

	if (!n)
		return ESTALE;
	if (off < 0)
		return EINVAL;
	for (int attempt = 0;; attempt++) {
		int c;

		e = node_fresh(fs, n);
		if (e)
			return e;
		e = read_once(a, &failed, &unlogged, fs, n, size, off, attempt);
		if (e && !failed)
			return e;
		c = live_read_check(fs, a->g, attempt, failed, n->path);
		if (c == 0 && unlogged)  /* no change explains it */
			return h5err_logged(fs, unlogged, "read", n->path, NULL, n->addr);
		if (c != EAGAIN)
			return c ? c : e;
		answer_clear(a);
	}
}

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct read_answer *a = calloc(1, sizeof(*a));
	int e = a ? do_read(a, fuse_req_userdata(req), ino, size, off) : ENOMEM;

	(void)fi;
	if (e)
		fuse_reply_err(req, e);
	else if (a->next)
		reply_extents(req, a->ext, a->next);
	else if (a->pin.niov)
		fuse_reply_iov(req, a->pin.iov, (int)a->pin.niov);
	else
		fuse_reply_buf(req, (const char *)a->buf, a->len);
	if (a)
		answer_clear(a);
	free(a);
}


void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	h5fs *fs = fuse_req_userdata(req);
	struct statvfs sv;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = H5FS_BLKSIZE;
	sv.f_frsize = 512;
	sv.f_blocks = (fsblkcnt_t)((fs->file_size + 511) / 512);
	pthread_mutex_lock(&fs->lock);
	sv.f_files = (fsfilcnt_t)fs->nnodes;
	pthread_mutex_unlock(&fs->lock);
	sv.f_namemax = H5FS_NAME_MAX;
	sv.f_flag = ST_RDONLY;
	fuse_reply_statfs(req, &sv);
}
