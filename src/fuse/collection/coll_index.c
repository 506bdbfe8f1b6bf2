/* coll_index.c - what a collection (root_coll.c, coll_mount.c) asks of its persistent
 * index (cindex.h, root_index.h): which file holds it (-o index=PATH, the
 * default under $XDG_CACHE_HOME/h5fs/, -o noindex), the kind of a file
 * by its stamp, an indexed root for an unchanged member, recording a
 * member opened live, and dropping files gone from a listed folder. An
 * index that cannot be opened is one log line and a mount without it. */
#include "coll_index.h"
#include "coll_backend.h"

#include <limits.h>

struct coll_index {
	cindex *ix;
	char *root;             /* the collection's canonical path or URL */
	h5fs_config cfg;
};

static void log_line(void *arg, const char *msg)
{
	const struct coll_index *ci = arg;

	h5fs_log_cfg(&ci->cfg, LOG_WARNING, "%s", msg);
}

int coll_index_open(struct coll_index **out, const char *dir, const h5fs_config *cfg)
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

/* What an indexed root opens its member with (struct index_live). */
struct live_arg {
	struct coll_index *ci;
	coll_open_fn open;
	coll_stamp_fn stamp;
	void *coll;
	struct slot *s;
	char *path;
	struct member_stamp at;         /* the file's stamp when the record was loaded */
};

static int live_arg_open(void *arg, const struct root_ops **ops, void **r)
{
	struct live_arg *a = arg;
	h5fs *fs;
	int e = a->open(a->coll, &fs, a->path, a->s);

	if (!e) {
		*ops = &h5fs_member_ops;
		*r = fs;
	}
	return e;
}

/* The file is not the one recorded (or is gone): the live-file rules'
 * key, size and mtime, for local files ctime and inode too, ETag for
 * objects. A stat that fails otherwise (a listing's network error) says
 * nothing: looked at again after the next interval. */
static bool live_arg_changed(void *arg)
{
	struct live_arg *a = arg;
	struct member_stamp now;
	int e = a->stamp(a->coll, &now, a->path);

	if (e)
		return e == ENOENT || e == ENOTDIR;
	return now.size != a->at.size || now.mtime_ns != a->at.mtime_ns || now.ctime_ns != a->at.ctime_ns ||
	       now.ino != a->at.ino || strcmp(now.etag, a->at.etag) != 0;
}

static void live_arg_written(void *arg)
{
	struct live_arg *a = arg;

	coll_index_forget(a->ci, a->path);
}

static void live_arg_free(void *arg)
{
	struct live_arg *a = arg;

	if (a)
		free(a->path);
	free(a);
}

int coll_index_root(struct coll_index *ci, const struct root_ops **ops, void **r, const char *path,
		    const struct member_stamp *ms, coll_open_fn open, coll_stamp_fn stamp, void *coll,
		    struct slot *s)
{
	struct index_live lv = { live_arg_open, live_arg_written, live_arg_changed, live_arg_free, NULL };
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
	a = calloc(1, sizeof(*a));
	if (!a || !(a->path = strdup(path))) {
		free(a);
		cindex_tree_free(t);
		return ENOMEM;
	}
	a->ci = ci;
	a->open = open;
	a->stamp = stamp;
	a->at = *ms;
	a->coll = coll;
	a->s = s;
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
		       const struct member_stamp *after, const struct root_ops *ops, void *r)
{
	cindex_tree *t = NULL;
	char view[128];
	cindex_key k;
	int e;

	if (!ci)
		return;
	k = key_of(ci, path, before, view, sizeof(view));
	e = index_record(&t, ops, r, INDEX_MAX_NODES);
	if (e) {
		/* an object that gives an error, a tree too big or too deep:
		 * the member stays live, its errors its own to give */
		h5fs_log_cfg(&ci->cfg, LOG_DEBUG, "index: %s not recorded: %s", path, strerror(e));
		h5_err_clear();
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
