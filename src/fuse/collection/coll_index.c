/* coll_index.c - what a collection (root_coll.c, coll_mount.c) asks of its persistent
 * index (cindex.h, root_index.h): which file holds it (-o index=PATH, the
 * default under $XDG_CACHE_HOME/h5fs/, -o noindex), the kind of a file
 * by its stamp, an indexed root for an unchanged member, recording a
 * member opened live (with the stamps of the other files its tree
 * reaches), and dropping files gone from a listed folder. An index that
 * cannot be opened is one log line and a mount without it. */
#include "coll_index.h"
#include "coll_backend.h"

#include <limits.h>

struct coll_index {
	cindex *ix;
	char *root;             /* the collection's canonical path or URL */
	h5fs_config cfg;
	coll_stamp_fn stamp;    /* the backend's stat of a file of the collection */
	void *coll;
};

static void log_line(void *arg, const char *msg)
{
	const struct coll_index *ci = arg;

	h5fs_log_cfg(&ci->cfg, LOG_WARNING, "%s", msg);
}

int coll_index_open(struct coll_index **out, const char *dir, const h5fs_config *cfg, coll_stamp_fn stamp,
		    void *coll)
{
	struct coll_index *ci;
	char *path = NULL;
	int rc;

	*out = NULL;
	if (cfg->noindex)
		return 0;
	ci = calloc(1, sizeof(*ci));
	if (!ci)
		return 0;
	ci->cfg = *cfg;
	ci->stamp = stamp;
	ci->coll = coll;
	ci->root = coll_canonical(dir);
	if (!ci->root) {
		h5fs_log_cfg(cfg, LOG_WARNING, "index: %s: %s; mounting without an index", dir, strerror(errno));
		goto fail;
	}
	if (cfg->index_path && *cfg->index_path)
		path = strdup(cfg->index_path);
	else if (cindex_default_path(&path, ci->root) < 0)
		path = NULL;
	if (!path) {
		h5fs_log_cfg(cfg, LOG_WARNING, "index: %s; mounting without an index", h5_err_msg());
		goto fail;
	}
	rc = cindex_open(&ci->ix, path, log_line, ci);
	if (rc < 0) {
		h5fs_log_cfg(cfg, LOG_WARNING, "%s; mounting without an index", h5_err_msg());
		goto fail;
	}
	free(path);
	h5fs_log_cfg(cfg, LOG_INFO, "index of %s: %s", ci->root, cindex_path(ci->ix));
	*out = ci;
	return 0;
fail:
	h5_err_clear();
	free(path);
	free(ci->root);
	free(ci);
	return 0;
}

void coll_index_close(struct coll_index *ci)
{
	if (!ci)
		return;
	cindex_close(ci->ix);
	free(ci->root);
	free(ci);
}

static cindex_key key_of(const struct coll_index *ci, const char *path, const struct member_stamp *ms, char *view,
			 size_t vsize)
{
	cindex_key k = { .root = ci->root, .member = path, .size = ms->size, .mtime_ns = ms->mtime_ns,
			 .etag = ms->etag, .view = view };

	index_view(view, vsize, &ci->cfg, ms->mode);
	return k;
}

int coll_index_kind(struct coll_index *ci, const char *path, const struct member_stamp *ms)
{
	char view[128];
	cindex_key k;
	int kind;

	if (!ci)
		return -1;
	k = key_of(ci, path, ms, view, sizeof(view));
	kind = cindex_kind(ci->ix, &k);
	h5_err_clear();
	return kind;
}

/* A file's kind recorded at this stamp: 0, 1, or 2 (unreadable, why);
 * an index that cannot take it is only a debug line (asked again). */
static void record_kind(struct coll_index *ci, const char *path, const struct member_stamp *ms, int kind,
			const char *why)
{
	char view[128];
	cindex_key k;
	int rc;

	if (!ci)
		return;
	k = key_of(ci, path, ms, view, sizeof(view));
	rc = kind == 2 ? cindex_set_unreadable(ci->ix, &k, why) : cindex_set_kind(ci->ix, &k, kind);
	if (rc < 0)
		h5fs_log_cfg(&ci->cfg, LOG_DEBUG, "%s", h5_err_msg());
	h5_err_clear();
}

void coll_index_set_unreadable(struct coll_index *ci, const char *path, const struct member_stamp *ms,
			       const char *why)
{
	record_kind(ci, path, ms, 2, why);
}

int coll_index_unreadable(char **why, struct coll_index *ci, const char *path, const struct member_stamp *ms)
{
	char view[128];
	cindex_key k;
	int hit;

	*why = NULL;
	if (!ci)
		return 0;
	k = key_of(ci, path, ms, view, sizeof(view));
	hit = cindex_unreadable(why, ci->ix, &k);
	h5_err_clear();
	return hit;
}

void coll_index_set_kind(struct coll_index *ci, const char *path, const struct member_stamp *ms, bool hdf5)
{
	record_kind(ci, path, ms, hdf5, NULL);
}

void coll_index_prune(struct coll_index *ci, const char *folder,
		      int (*present)(void *arg, const char *name, const cindex_file *f), void *arg)
{
	if (!ci)
		return;
	if (cindex_prune(ci->ix, ci->root, folder, present, arg) < 0)
		h5fs_log_cfg(&ci->cfg, LOG_DEBUG, "%s", h5_err_msg());
	h5_err_clear();
}

/* ---- the other files a member's tree reaches ---------------------------------- */

/* The stamp of a file a record reaches, by its name there: a path in the
 * collection through the backend (as the member's own), an absolute path
 * (outside it, -o ext_any) by stat(2). 0 or a positive errno. */
static int related_stamp(struct member_stamp *ms, const struct coll_index *ci, const char *name)
{
	struct stat st;

	if (name[0] != '/')
		return ci->stamp(ci->coll, ms, name);
	if (stat(name, &st) < 0)
		return errno;
	memset(ms, 0, sizeof(*ms));
	ms->size = (uint64_t)st.st_size;
	ms->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	ms->ino = (uint64_t)st.st_ino;
	return 0;
}

/* Whether every file t reaches is still the one recorded (size, mtime_ns,
 * ETag, inode), each looked at now; a file gone, or one that cannot be
 * looked at, is not. */
static bool related_fresh(const struct coll_index *ci, const cindex_tree *t)
{
	for (uint32_t i = 0; i < t->nrelated; i++) {
		const cindex_related *r = &t->related[i];
		struct member_stamp now;

		if (related_stamp(&now, ci, r->path) != 0 || now.size != r->size || now.mtime_ns != r->mtime_ns ||
		    now.ino != r->ino || strcmp(now.etag, r->etag) != 0)
			return false;
	}
	return true;
}

/* The name a record keeps of a file its member reaches: its path in the
 * collection, or its real path when it is a local file outside it; NULL
 * (not recordable) for a remote file elsewhere. */
static const char *related_name(const struct coll_index *ci, const h5_related_info *ri)
{
	size_t n = strlen(ci->root);

	if (strncmp(ri->path, ci->root, n) == 0 && n && ci->root[n - 1] == '/')
		return ri->path + n;                    /* a prefix URL ends in '/' */
	if (strncmp(ri->path, ci->root, n) == 0 && ri->path[n] == '/')
		return ri->path + n + 1;
	return ri->remote || ri->path[0] != '/' ? NULL : ri->path;
}

struct related_walk {
	const struct coll_index *ci;
	cindex_tree *t;
	const char *why;        /* why the member cannot be recorded */
};

/* One file the walk reached, into the tree with its stamp now: a file
 * numbered in the order it was reached (another held its number) would
 * number its objects differently in another opening, and one that
 * changed since it was opened may have shown either version. */
static int related_add(void *arg, const h5_related_info *ri)
{
	struct related_walk *w = arg;
	struct member_stamp ms;
	cindex_related r;
	const char *name = related_name(w->ci, ri);

	if (!ri->home)
		w->why = "another file reached holds the number of its path";
	else if (!name)
		w->why = "it reaches a remote file outside the collection";
	else if (related_stamp(&ms, w->ci, name) != 0)
		w->why = "a file it reaches cannot be stat'ed";
	else if (!ri->remote && (ms.size != ri->size || ms.mtime_ns != ri->mtime_ns || ms.ino != ri->ino))
		w->why = "a file it reaches changed while it was walked";
	if (w->why)
		return 1;
	r = (cindex_related){ .path = (char *)name, .size = ms.size, .mtime_ns = ms.mtime_ns, .etag = ms.etag,
			      .ino = ms.ino };
	if (cindex_tree_related(w->t, &r) < 0) {
		w->why = "out of memory";
		return 1;
	}
	return 0;
}

/* ---- indexed roots ---------------------------------------------------------- */

/* What an indexed root opens its member with (struct index_live). */
struct live_arg {
	struct coll_index *ci;
	coll_open_fn open;
	struct slot *s;
	char *path;
	struct member_stamp at;         /* the file's stamp when the record was loaded */
	const cindex_tree *t;           /* the record (the root's: freed after this) */
};

static int live_arg_open(void *arg, const struct root_ops **ops, void **r)
{
	struct live_arg *a = arg;
	h5fs *fs;
	int e = a->open(a->ci->coll, &fs, a->path, a->s);

	if (!e) {
		*ops = &h5fs_member_ops;
		*r = fs;
	}
	return e;
}

/* The file is not the one recorded (or is gone): the live-file rules'
 * key, size and mtime, for local files ctime and inode too, ETag for
 * objects; or a file its tree reaches is not the one recorded. A stat of
 * the member that fails otherwise (a listing's network error) says
 * nothing: looked at again after the next interval. */
static bool live_arg_changed(void *arg)
{
	struct live_arg *a = arg;
	struct member_stamp now;
	int e = a->ci->stamp(a->ci->coll, &now, a->path);

	if (e)
		return e == ENOENT || e == ENOTDIR;
	return now.size != a->at.size || now.mtime_ns != a->at.mtime_ns || now.ctime_ns != a->at.ctime_ns ||
	       now.ino != a->at.ino || strcmp(now.etag, a->at.etag) != 0 || !related_fresh(a->ci, a->t);
}

static void live_arg_written(void *arg)
{
	struct live_arg *a = arg;

	coll_index_forget(a->ci, a->path);
}

static void live_arg_eio(void *arg, const char *path, const char *why)
{
	struct live_arg *a = arg;

	h5fs_log_cfg(&a->ci->cfg, LOG_ERR, "%s: lookup %s: EIO: %s (as when last read at this size and mtime, "
		     "by the index)", a->path, path, why);
}

static void live_arg_free(void *arg)
{
	struct live_arg *a = arg;

	if (a)
		free(a->path);
	free(a);
}

int coll_index_root(struct coll_index *ci, const struct root_ops **ops, void **r, const char *path,
		    const struct member_stamp *ms, coll_open_fn open, struct slot *s)
{
	struct index_live lv = { .open = live_arg_open, .on_write = live_arg_written, .changed = live_arg_changed,
				 .free = live_arg_free, .eio = live_arg_eio };
	struct live_arg *a;
	cindex_tree *t = NULL;
	char view[128];
	cindex_key k;
	int rc;

	*r = NULL;
	if (!ci)
		return ENOENT;
	k = key_of(ci, path, ms, view, sizeof(view));
	rc = cindex_load(&t, ci->ix, &k);
	h5_err_clear();
	if (rc != 0)
		return ENOENT;
	/* the member is unchanged, but a file its tree reaches may not be */
	if (!related_fresh(ci, t)) {
		cindex_tree_free(t);
		return ENOENT;
	}
	a = calloc(1, sizeof(*a));
	if (!a || !(a->path = strdup(path))) {
		free(a);
		cindex_tree_free(t);
		return ENOMEM;
	}
	a->ci = ci;
	a->open = open;
	a->at = *ms;
	a->s = s;
	a->t = t;
	lv.arg = a;
	/* on failure index_root_new freed t and a */
	rc = index_root_new(r, t, &ci->cfg, ci->cfg.uid_set ? ci->cfg.uid : ms->uid,
			    ci->cfg.gid_set ? ci->cfg.gid : ms->gid, &lv);
	if (rc)
		return rc;
	*ops = &h5fs_indexed_ops;
	return 0;
}

void coll_index_forget(struct coll_index *ci, const char *path)
{
	if (!ci)
		return;
	if (cindex_forget(ci->ix, ci->root, path) < 0)
		h5fs_log_cfg(&ci->cfg, LOG_DEBUG, "%s", h5_err_msg());
	h5_err_clear();
}

void coll_index_record(struct coll_index *ci, const char *path, const struct member_stamp *before,
		       const struct member_stamp *after, const struct root_ops *ops, void *r, h5_file *f)
{
	struct related_walk rw = { .ci = ci };
	cindex_tree *t = NULL;
	char view[128];
	cindex_key k;
	int e;

	if (!ci)
		return;
	k = key_of(ci, path, before, view, sizeof(view));
	e = index_record(&t, ops, r, INDEX_MAX_NODES);
	if (e) {
		/* an object that gives an error other than its bytes' (which
		 * are error nodes), a tree too big or too deep: the member
		 * stays live, its errors its own to give */
		h5fs_log_cfg(&ci->cfg, LOG_DEBUG, "index: %s not recorded: %s", path, strerror(e));
		h5_err_clear();
		return;
	}
	/* the files its tree reached (external links followed in place),
	 * stamped now: the record holds while they do */
	rw.t = t;
	if (h5_file_related_reached(f, related_add, &rw) != 0) {
		h5fs_log_cfg(&ci->cfg, LOG_DEBUG, "index: %s not recorded: %s", path, rw.why);
		cindex_tree_free(t);
		return;
	}
	/* a file that changed while it was walked: its tree may be of
	 * either version, not to be kept under either key */
	if (after && (after->size != before->size || after->mtime_ns != before->mtime_ns ||
		      strcmp(after->etag, before->etag) != 0)) {
		cindex_tree_free(t);
		return;
	}
	if (cindex_store(ci->ix, &k, t) < 0)
		h5fs_log_cfg(&ci->cfg, LOG_WARNING, "%s", h5_err_msg());
	h5_err_clear();
	cindex_tree_free(t);
}
