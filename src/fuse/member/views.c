/* views.c - datasets shown as NAME.npy, NAME.csv, NAME.tiff, NAME.png and
 * NAME.frames/ (doc/h5fs.1, VIEWS): the member root's lookup, listing,
 * open and xattrs around member/read.c's (root_member.c's table names these).
 *
 * A view is a node like a dataset's: the dataset opened for it (a handle
 * of its own), its view ops (src/common/views.c, the state kept with that
 * handle) as n->view and the view's size as st_size, so getattr and read
 * are member/read.c's own - spliced extents, pinned chunks, and on a live mount the
 * same checks as any dataset (live/live.c re-resolves a view by its
 * dataset's path, views_make). Its number is its (directory, name)'s; a
 * real link of the name always wins (its lookup comes first). */
#include "member.h"
#include "views.h"
#include "wstate.h"
#include "handle.h"
#include "npystream.h"

static int views_fresh(h5fs *fs, struct node *n);

/* Whether n's dataset may grow under it: a view on a mount that appends
 * (node/node.c gives the dataset the owner's write bit then), of FILE in
 * any generation (not of an external file). Not only the current one: a
 * generation opened again without a change (a racy stamp, live.c) leaves
 * the view in the old one until the watcher's sweep, while appends go
 * through the new one; taken for a view that cannot grow, it was not
 * made again and showed the dataset's old shape (test_views under ASan). */
static bool views_grows(h5fs *fs, struct node *n)
{
	bool g;

	if (!n->vkind || !pager_writes(&fs->pg))
		return false;
	pthread_rwlock_rdlock(&n->lk);
	g = n->gen && n->f == n->gen->f && n->ds && h5_append_check(n->ds) == 0;
	pthread_rwlock_unlock(&n->lk);
	h5_err_clear();
	return g;
}

/* -------- nodes -------- */

/* The node of view `name` (kind k, frame) of the dataset node `base`, in
 * directory p: 0 and *out (referenced), ENOENT when the dataset cannot
 * have it, or an errno (EIO logged). */
static int views_node(struct node **out, h5fs *fs, struct node *p, const char *name, struct node *base,
		      enum vw_kind k, uint64_t frame)
{
	struct node *n, *fresh = NULL;
	h5_file *f;
	uint64_t addr, checked, id = synth_ino(fs, p->ino, name);
	struct gen *g;
	char *path;
	int rc, e;

	if (!id)
		return ENOMEM;
	n = node_ref_existing(fs, id);
	if (n) {
		uint64_t base_addr, view_addr;

		e = node_fresh(fs, n);
		/* a view of the dataset the name holds now: np.save over NAME
		 * replaced it (npy.c), and a view node the kernel had not
		 * forgotten yet still showed the old one, which gone_keep
		 * keeps for its readers (np.load read the old array under
		 * load: test_truncate) */
		pthread_rwlock_rdlock(&base->lk);
		base_addr = base->addr;
		pthread_rwlock_unlock(&base->lk);
		pthread_rwlock_rdlock(&n->lk);
		view_addr = n->addr;
		pthread_rwlock_unlock(&n->lk);
		if (e == 0 && view_addr == base_addr && n->vkind == k && n->vframe == frame &&
		    (e = views_fresh(fs, n)) == 0) {
			*out = n;
			return 0;
		}
		node_unref(fs, id, 1);
		if (e && e != ESTALE)
			return e;
		id = synth_renew(fs, p->ino, name, id);
		if (!id)
			return ENOMEM;
	}
	pthread_rwlock_rdlock(&base->lk);
	f = base->f;
	addr = base->addr;
	g = base->gen;
	checked = base->checked;
	h5_file_hold_related(f);
	if (g)
		gen_hold(g);
	pthread_rwlock_unlock(&base->lk);
	path = h5_path_join(p->path, name);
	if (!path) {
		e = ENOMEM;
		goto out;
	}
	rc = node_make_obj(&fresh, fs, f, addr, id, path);
	if (rc < 0) {
		e = h5err_logged(fs, rc, "lookup", p->path, name, addr);
		goto out;
	}
	rc = views_apply(fs, fresh, k, frame, id);
	if (rc < 0) {
		node_free(fresh);
		if (rc == H5_ERR_NOTFOUND) {
			h5_err_clear();
			e = ENOENT;
		} else {
			e = h5err_logged(fs, rc, "lookup", p->path, name, addr);
		}
		goto out;
	}
	fresh->parent = p->ino;
	fresh->gen = g;
	g = NULL;
	fresh->checked = checked;
	*out = node_publish(fs, fresh);
	e = 0;
out:
	h5_file_release_related(f);
	if (g)
		gen_release(g);
	free(path);
	return e;
}

/* On a mount that appends (fs_writable), a dataset grows under its views:
 * the view of n is made again of the dataset as it is now when its size
 * changed since (n's own handle is swapped, under n->lk, as behind/write.c
 * does for the dataset's node). Views there are read without the page
 * cache and their attributes are not cached (views_open, entry_fill), so
 * this is asked at each open, lookup and getattr. 0 or an errno. */
static int views_fresh(h5fs *fs, struct node *n)
{
	const h5_view_ops *ops = NULL;
	h5_dataset *nd = NULL, *old = NULL;
	uint64_t was, size = 0;
	h5_file *f;
	uint64_t addr;
	bool cur;
	int rc, e = 0;

	if (!views_grows(fs, n))
		return 0;
	pthread_rwlock_rdlock(&n->lk);
	cur = gen_is_current(fs, n->gen);
	pthread_rwlock_unlock(&n->lk);
	if (!cur) {
		/* our appends write through the current generation: the view
		 * made again there (node_rebuild), before its size is compared */
		struct use u;

		e = node_use_current(&u, fs, n);
		if (e)
			return e;
		node_use_end(&u);
	}
	pthread_rwlock_rdlock(&n->lk);
	f = n->f;
	addr = n->addr;
	was = n->ds ? h5_view_raw.size(n->ds) : 0;
	h5_file_hold_related(f);
	pthread_rwlock_unlock(&n->lk);
	rc = h5_dataset_open(&nd, f, addr);
	if (rc == 0 && h5_view_raw.size(nd) != was) {
		rc = n->type == NT_DIR ? vw_frame_count(&size, nd) : vw_open(&ops, nd, (enum vw_kind)n->vkind, n->vframe);
		if (rc == 0) {
			pthread_rwlock_wrlock(&n->lk);
			old = n->ds;
			n->ds = nd;
			nd = NULL;
			if (ops) {
				size = ops->size(n->ds);
				n->view = ops;
				n->st.st_size = (off_t)size;
				n->st.st_blocks = blocks_of(size);
			}
			xattr_cache_drop(n);    /* user.h5.shape has grown */
			pthread_rwlock_unlock(&n->lk);
		}
	}
	if (rc == H5_ERR_NOTFOUND) {
		h5_err_clear();
		e = ENOENT;
	} else if (rc < 0) {
		e = h5err_logged(fs, rc, "refresh", n->path, NULL, addr);
	}
	h5_dataset_close(nd);
	h5_dataset_close(old);
	h5_file_release_related(f);
	return e;
}

static uint64_t frames_of(struct node *d)
{
	uint64_t n = 0;

	pthread_rwlock_rdlock(&d->lk);
	if (!d->ds || vw_frame_count(&n, d->ds) < 0) {
		h5_err_clear();
		n = 0;
	}
	pthread_rwlock_unlock(&d->lk);
	return n;
}

static void entry_fill(struct root_entry *e, h5fs *fs, struct node *n)
{
	memset(e, 0, sizeof(*e));
	e->ino = n->ino;
	pthread_rwlock_rdlock(&n->lk);
	e->attr = n->st;
	pthread_rwlock_unlock(&n->lk);
	/* a view of a dataset that may grow is asked again each time */
	e->timeout = views_grows(fs, n) ? 0 : node_timeout(fs);
}

/* listed: READDIRPLUS's lookup (root.h lookup_listed), else NULL */
static int lookup_as(void *r, struct root_entry *e, uint64_t parent, const char *name, const struct listed *listed)
{
	/* a view's name is listed, but not by member/read.c's listing */
	static const struct listed none = { .addr = UINT64_MAX, .group = -1 };
	h5fs *fs = r;
	struct node *p = node_get(fs, parent), *n = NULL, *b;
	struct root_entry be;
	enum vw_kind k;
	size_t bl;
	char *base;
	uint64_t i;
	int err;

	if (!p)
		return ESTALE;
	if (p->vkind == VW_FRAMES) {
		err = node_fresh(fs, p);
		if (!err)
			err = views_fresh(fs, p);
		if (err)
			return err == ESTALE ? ENOENT : err;
		if (vw_frame_index(&i, name, frames_of(p)) < 0)
			return ENOENT;
		err = views_node(&n, fs, p, name, p, VW_FRAME, i);
		if (!err)
			entry_fill(e, fs, n);
		return err;
	}
	err = member_lookup_as(r, e, parent, name, listed);
	if (err != ENOENT)
		return err;     /* a real link of the name wins */
	k = vw_kind_of_name(name, &bl);
	if (k == VW_NONE || bl == 0)
		return ENOENT;
	base = strndup(name, bl);
	if (!base)
		return ENOMEM;
	err = member_lookup_as(r, &be, parent, base, listed ? &none : NULL);
	free(base);
	if (err)
		return err;
	b = node_get(fs, be.ino);
	/* (its own dataset opened: node_make_obj in views_node) */
	if (b && b->type == NT_FILE && b->kind == H5_OBJ_DATASET && !b->vkind)
		err = views_node(&n, fs, p, name, b, k, 0);
	else
		err = ENOENT;
	member_forget(r, be.ino, 1);     /* the dataset's own entry was ours only */
	if (!err)
		entry_fill(e, fs, n);
	return err;
}

int views_lookup(void *r, struct root_entry *e, uint64_t parent, const char *name)
{
	return lookup_as(r, e, parent, name, NULL);
}

/* -------- listings -------- */

struct vent {
	char *name;
	uint64_t ino;
	mode_t type;
};

struct vdir {
	void *inner;            /* member/read.c's listing (not of a frames directory) */
	size_t ninner;
	struct vent *v;         /* -o views: the views of its datasets */
	size_t n, cap;
	bool frames;
	uint64_t count, dir;
	char name[40];          /* a frame's name, until the next readdir */
};

static int vent_add(struct vdir *d, h5fs *fs, uint64_t dir, const char *name, const char *suffix, mode_t type)
{
	struct vent *e;

	if (d->n == d->cap) {
		size_t nc = d->cap ? d->cap * 2 : 16;
		struct vent *nv = realloc(d->v, nc * sizeof(*nv));

		if (!nv)
			return ENOMEM;
		d->v = nv;
		d->cap = nc;
	}
	e = &d->v[d->n];
	e->name = malloc(strlen(name) + strlen(suffix) + 1);
	if (!e->name)
		return ENOMEM;
	strcpy(e->name, name);
	strcat(e->name, suffix);
	e->ino = synth_ino(fs, dir, e->name);
	e->type = type;
	if (!e->ino) {
		free(e->name);
		return ENOMEM;
	}
	d->n++;
	return 0;
}

/* The views of the datasets of directory n (-o views), after its links. */
static void list_views(struct vdir *d, h5fs *fs, struct node *n, void *r)
{
	struct root_dirent de;
	struct use u;

	if (node_use(&u, fs, n) != 0)
		return;
	for (size_t i = 0; member_readdir(r, &de, d->inner, i) == 0; i++) {
		h5_link l, other;
		h5_dataset *ds = NULL;
		h5_obj_info info;
		unsigned kinds;

		d->ninner = i + 1;
		if (de.type != S_IFREG && de.type != 0)
			continue;
		memset(&l, 0, sizeof(l));
		if (h5_group_lookup(&l, u.f, u.addr, de.name) < 0 || l.type != H5_LINK_HARD ||
		    h5_obj_info_get(&info, u.f, l.addr) < 0 || info.kind != H5_OBJ_DATASET ||
		    h5_dataset_open(&ds, u.f, l.addr) < 0) {
			h5_link_clear(&l);
			h5_err_clear();
			continue;
		}
		kinds = vw_kinds(ds) & fs->cfg.views;
		h5_dataset_close(ds);
		h5_link_clear(&l);
		for (int k = VW_NPY; k <= VW_FRAMES; k++) {
			char *vn;

			if (!(kinds & VW_BIT(k)))
				continue;
			vn = malloc(strlen(de.name) + 8);
			if (!vn)
				break;
			strcpy(vn, de.name);
			strcat(vn, vw_suffix((enum vw_kind)k));
			memset(&other, 0, sizeof(other));
			/* a real link of that name is listed already */
			if (h5_group_lookup(&other, u.f, u.addr, vn) == 0) {
				h5_link_clear(&other);
				free(vn);
				continue;
			}
			h5_err_clear();
			free(vn);
			if (vent_add(d, fs, n->ino, de.name, vw_suffix((enum vw_kind)k),
				     k == VW_FRAMES ? S_IFDIR : S_IFREG) != 0)
				break;
		}
	}
	node_use_end(&u);
}

int views_opendir(void *r, void **dh, bool *keep, uint64_t ino)
{
	h5fs *fs = r;
	struct node *n = node_get(fs, ino);
	struct vdir *d;
	int e;

	if (!n)
		return ESTALE;
	d = calloc(1, sizeof(*d));
	if (!d)
		return ENOMEM;
	if (n->vkind == VW_FRAMES) {
		e = node_fresh(fs, n);
		if (!e)
			e = views_fresh(fs, n);
		if (e) {
			free(d);
			return e;
		}
		d->frames = true;
		d->count = frames_of(n);
		d->dir = ino;
		/* a live FILE's, or a growing dataset's: the kernel asks again */
		*keep = !fs->live && !views_grows(fs, n);
		*dh = d;
		return 0;
	}
	e = member_opendir(r, &d->inner, keep, ino);
	if (e) {
		free(d);
		return e;
	}
	if (fs->cfg.views)
		list_views(d, fs, n, r);
	*dh = d;
	return 0;
}

int views_readdir(void *r, struct root_dirent *out, void *dh, size_t i)
{
	struct vdir *d = dh;

	if (d->frames) {
		if (i >= d->count)
			return ENOENT;
		memset(out, 0, sizeof(*out));
		vw_frame_name(d->name, sizeof(d->name), i, d->count);
		out->name = d->name;
		out->ino = synth_ino(r, d->dir, d->name);
		out->type = S_IFREG;
		return out->ino ? 0 : ENOMEM;
	}
	if (!d->n || i < d->ninner)
		return member_readdir(r, out, d->inner, i);
	if (i - d->ninner >= d->n)
		return ENOENT;
	memset(out, 0, sizeof(*out));
	out->name = d->v[i - d->ninner].name;
	out->ino = d->v[i - d->ninner].ino;
	out->type = d->v[i - d->ninner].type;
	return 0;
}

int views_lookup_listed(void *r, struct root_entry *e, uint64_t parent, const char *name, void *dh, size_t i)
{
	struct vdir *d = dh;
	struct listed l = { .addr = UINT64_MAX, .group = -1 };

	/* (the entries member/read.c listed come first: views_readdir) */
	if (d && !d->frames && (!d->n || i < d->ninner))
		member_listed(&l, r, d->inner, i);
	return lookup_as(r, e, parent, name, &l);
}

void views_releasedir(void *r, void *dh)
{
	struct vdir *d = dh;

	if (!d)
		return;
	if (d->inner)
		member_releasedir(r, d->inner);
	for (size_t i = 0; i < d->n; i++)
		free(d->v[i].name);
	free(d->v);
	free(d);
}

/* -------- open and xattrs -------- */

/* np.save over dataset NAME: its view NAME.npy opened to be written anew
 * (O_TRUNC) on a mount that writes. The placeholder np.save's create
 * makes (member_create: an empty dataset NAME.npy, a real link, which
 * wins the name from now) takes the stream; the handle writes there
 * (held: the kernel holds the view's inode, not the placeholder's), and
 * close makes dataset NAME of it, replacing the old one (npy.c). */
static int npy_over(h5fs *fs, struct fuse_file_info *fi, struct node *v)
{
	const char *name = strrchr(v->path, '/');
	struct root_entry ent;
	struct node *n;
	int e;

	name = name ? name + 1 : v->path;
	e = member_create(fs, v->parent, name);
	if (!e && (e = member_lookup(fs, &ent, v->parent, name)) == ENOENT) {
		/* renamed between its making and this lookup (mv racing
		 * np.save): opened where it went, as a local file's open is */
		uint64_t parent;
		char *base;

		if (npy_made_where(fs, &parent, &base))
			e = member_lookup(fs, &ent, parent, base);
		free(base);
		/* replaced by a rename over it before this open took it: the
		 * kernel looks the name up again (ESTALE, as member_open's) */
		if (e == ENOENT)
			e = ESTALE;
	}
	if (e)
		return e;
	n = node_get(fs, ent.ino);
	if (!n) {
		member_forget(fs, ent.ino, 1);
		return ESTALE;
	}
	fi->flags &= ~O_TRUNC;
	e = wfile_open(fs, n, fi);
	if (e) {
		member_forget(fs, ent.ino, 1);
		return e;
	}
	wfile_of(fi)->held = true;
	return 0;
}

/* NAME.csv opened for writing on a mount that writes: a write handle of
 * dataset NAME whose writes are text rows (behind/csvin.c), held as
 * npy_over's. O_APPEND appends (echo >> NAME.csv); O_TRUNC replaces the
 * rows (cp x.csv NAME.csv, cat x.csv > NAME.csv: the dataset emptied as
 * for its own name, put back when the text is refused); the text must
 * come in order. Writing only: the handle reads nothing. */
static int csv_over(h5fs *fs, struct fuse_file_info *fi, struct node *v)
{
	const char *name = strrchr(v->path, '/');
	struct root_entry ent;
	struct node *n;
	char *base;
	int e;

	name = name ? name + 1 : v->path;
	if ((fi->flags & O_ACCMODE) != O_WRONLY || !(fi->flags & (O_APPEND | O_TRUNC))) {
		h5fs_log(fs, LOG_NOTICE, "open %s for writing: EPERM: a CSV view takes rows appended (>>, O_APPEND) "
			 "or in place of its rows (>, O_TRUNC), opened write-only", show_path(v->path));
		return EPERM;
	}
	base = strndup(name, strlen(name) - strlen(".csv"));
	if (!base)
		return ENOMEM;
	e = member_lookup(fs, &ent, v->parent, base);
	free(base);
	if (e)
		return e;
	n = node_get(fs, ent.ino);
	if (!n || n->vkind || n->type != NT_FILE || n->kind != H5_OBJ_DATASET) {
		member_forget(fs, ent.ino, 1);
		return n ? EPERM : ESTALE;
	}
	e = wfile_open(fs, n, fi);
	if (!e) {
		wfile_of(fi)->held = true;
		e = csvin_open(fs, wfile_of(fi));
		if (e) {
			/* (its release lets the node go, and puts back what an
			 * O_TRUNC emptied: a refusal changes nothing) */
			__atomic_store_n(&wfile_of(fi)->failed, true, __ATOMIC_RELAXED);
			wfile_release(fs, wfile_of(fi), v->ino);
			fi->fh = 0;
		}
		return e;
	}
	member_forget(fs, ent.ino, 1);
	return e;
}

int views_open(void *r, struct fuse_file_info *fi, uint64_t ino)
{
	h5fs *fs = r;
	struct node *n = node_get(fs, ino);
	int e;

	if (!n || !n->vkind)
		return member_open(r, fi, ino);
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		if (n->vkind == VW_NPY && (fi->flags & O_TRUNC) && pager_writes(&fs->pg)) {
			/* (its release closes this node: counted as member_open does) */
			e = npy_over(fs, fi, n);
			if (!e)
				__atomic_add_fetch(&n->opens, 1, __ATOMIC_ACQ_REL);
			return e;
		}
		if (n->vkind == VW_CSV && fs_writable(fs)) {
			e = csv_over(fs, fi, n);
			if (!e)
				__atomic_add_fetch(&n->opens, 1, __ATOMIC_ACQ_REL);
			return e;
		}
		return commit_admit(fs, PAGER_VIEW, "open for writing", n->path);
	}
	e = views_fresh(fs, n);
	if (!e)
		e = member_open(r, fi, ino);
	if (!e && views_grows(fs, n)) {
		/* its dataset may grow: no pages kept of this size */
		fi->direct_io = 1;
		fi->keep_cache = 0;
	}
	return e;
}

/* (node_peek: a stat-only object is never a view, and stays one) */
int views_getattr(void *r, struct stat *st, double *timeout, uint64_t ino)
{
	h5fs *fs = r;
	struct node *n = node_peek(fs, ino);
	int e = n && n->vkind ? views_fresh(fs, n) : 0;

	if (e)
		return e;
	e = member_getattr(r, st, timeout, ino);
	if (n && views_grows(fs, n))
		*timeout = 0;
	return e;
}

#define VIEW_XATTR "user.h5.view"

int views_listxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino)
{
	struct node *n = node_peek(r, ino);
	size_t l0 = 0;
	int e;

	if (!n || !n->vkind)
		return member_listxattr(r, buf, size, len, ino);
	e = member_listxattr(r, buf, size, &l0, ino);
	if (e)
		return e;
	*len = l0 + sizeof(VIEW_XATTR);
	if (size >= *len)
		memcpy(buf + l0, VIEW_XATTR, sizeof(VIEW_XATTR));
	return 0;
}

int views_getxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino, const char *name)
{
	struct node *n = node_peek(r, ino);
	const char *v;

	if (!n || !n->vkind || strcmp(name, VIEW_XATTR) != 0)
		return member_getxattr(r, buf, size, len, ino, name);
	v = vw_name((enum vw_kind)n->vkind);
	*len = strlen(v);
	if (size >= *len)
		memcpy(buf, v, *len);
	return 0;
}

/* Views are read-only: their xattrs are the dataset's, which a change
 * through the view's name would reach, and a frames folder holds no
 * links. A real link named like a view is a real node (vkind 0). */
/* A change of a view (or in one: NAME.frames/) refused, logged
 * (commit_admit: the pager's table); 0 for anything else. */
static int view_refused(void *r, uint64_t ino, const char *op)
{
	struct node *n = node_peek(r, ino);

	return n && n->vkind ? commit_admit(r, PAGER_VIEW, op, n->path) : 0;
}

int views_setxattr(void *r, uint64_t ino, const char *name, const char *value, size_t size, int flags)
{
	int e = view_refused(r, ino, "setxattr");

	return e ? e : member_setxattr(r, ino, name, value, size, flags);
}

int views_removexattr(void *r, uint64_t ino, const char *name)
{
	int e = view_refused(r, ino, "removexattr");

	return e ? e : member_removexattr(r, ino, name);
}

int views_mkdir(void *r, uint64_t parent, const char *name)
{
	int e = view_refused(r, parent, "mkdir");

	return e ? e : member_mkdir(r, parent, name);
}

int views_rmdir(void *r, uint64_t parent, const char *name)
{
	int e = view_refused(r, parent, "rmdir");

	return e ? e : member_rmdir(r, parent, name);
}

int views_unlink(void *r, uint64_t parent, const char *name)
{
	int e = view_refused(r, parent, "unlink");

	return e ? e : member_unlink(r, parent, name);
}

int views_symlink(void *r, const char *target, uint64_t parent, const char *name)
{
	int e = view_refused(r, parent, "symlink");

	return e ? e : member_symlink(r, target, parent, name);
}

int views_create(void *r, uint64_t parent, const char *name)
{
	int e = view_refused(r, parent, "create");

	return e ? e : member_create(r, parent, name);
}

int views_rename(void *r, uint64_t parent, const char *name, uint64_t newparent, const char *newname, unsigned flags)
{
	int e = view_refused(r, parent, "rename");

	if (!e)
		e = view_refused(r, newparent, "rename");
	return e ? e : member_rename(r, parent, name, newparent, newname, flags);
}

int views_link(void *r, uint64_t ino, uint64_t newparent, const char *newname)
{
	int e = view_refused(r, ino, "link");

	if (!e)
		e = view_refused(r, newparent, "link");
	return e ? e : member_link(r, ino, newparent, newname);
}
