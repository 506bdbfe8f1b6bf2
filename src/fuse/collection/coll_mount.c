/*
 * coll_mount.c - a collection's mount (`h5fs DIR MNT`, `h5fs
 * s3://BUCKET/PREFIX/ MNT`): the table of roots with the folder root
 * (root_coll.c) in slot 0, the backend and the index, and the hooks the
 * dispatcher opens members with (dispatch_slot.c): an indexed root when
 * the member's record matches its file, else the live root, recorded.
 */
#define _GNU_SOURCE /* O_PATH */
#include "root_coll.h"

#include <fcntl.h>
#include <unistd.h>

/* ---- the dispatcher's hooks --------------------------------------------------- */

/* A member that cannot be shown (no HDF5, unreadable): EIO, with one log
 * line per stamp (the folder node remembers it was said). */
static int member_eio(struct coll *c, struct slot *s, const char *path, const char *why)
{
	struct fnode *n = coll_fnode_by_ino(c, s->folder_ino);
	bool log;

	pthread_mutex_lock(&c->mu);
	log = n && !n->logged;
	if (n)
		n->logged = true;
	pthread_mutex_unlock(&c->mu);
	if (log)
		h5fs_log_cfg(&c->cfg, LOG_ERR, "%s: cannot be opened as HDF5: EIO: %s", path, why);
	h5_err_clear();
	return EIO;
}

/* The one place a collection opens a member's file (the engine context,
 * the collection's tree for related files, the mount's options): its
 * live root, *out. EIO with one log line per stamp when it cannot be
 * opened; EMEDIUMTYPE (logged the same) when it is no HDF5 at all, and
 * EBADMSG when its bytes cannot be read as HDF5 (why: the reason), so
 * that the index can remember them (coll_backend.h). */
static int open_live(struct coll *c, h5fs **out, h5_file **file, const char *path, struct slot *s, char *why,
		     size_t whylen)
{
	h5_file *f = NULL;
	h5fs *fs = NULL;
	int e, rc;

	*out = NULL;
	if (file)
		*file = NULL;
	if (whylen)
		why[0] = 0;
	e = c->be->open_member(c->b, &f, path, &c->oo);
	if (!e) {
		rc = h5fs_new(&fs, f, &c->cfg);
		if (rc < 0) {
			h5_file_close(f);
			/* its root group unreadable (bad/badroot.h5): the file's
			 * bytes, which the index remembers at this stamp, so that
			 * an indexed remount does not open it again */
			e = index_bytes_err(rc) ? EBADMSG : EIO;
		}
	}
	if (e == EMFILE)
		return e;       /* the dispatcher closes an idle member, tries again */
	if (e) {
		if (whylen)
			snprintf(why, whylen, "%s", h5_err_msg());
		member_eio(c, s, path, h5_err_msg());
		return e == EMEDIUMTYPE || e == EBADMSG ? e : EIO;
	}
	/* opened read-only because another process holds the file (the
	 * backend's fallback): shown as writable all the same, as every
	 * mount of the collection shows it (and records it in the index) */
	if (c->oo.writable && !h5_file_writable(f) && c->be->may_write && c->be->may_write(c->b, path))
		h5fs_set_write_busy(fs);
	h5fs_set_ino_map(fs, dispatch_ino_out, s);
	/* its indexed root saw the file change: datasets keep their numbers,
	 * and the kernel may hold pages of the old file until the watcher
	 * drops them (dispatch_slot.c) */
	if (s->changed)
		h5fs_set_changed(fs);
	/* one thread looks at every open member (dispatch_slot.c ticker):
	 * a thread per member made opening and closing them cost a thread's
	 * start and join each (15 ms on a loaded machine) */
	h5fs_share_watch(fs);
	if (h5fs_set_label(fs, path) < 0) {
		h5_err_clear();         /* lines without the path: still lines */
	}
	*out = fs;
	if (file)
		*file = f;      /* fs's: the one a record's walk reaches others from */
	return 0;
}

static int open_live_cb(void *cv, h5fs **out, const char *path, struct slot *s)
{
	int e = open_live(cv, out, NULL, path, s, NULL, 0);

	return e == EMEDIUMTYPE || e == EBADMSG ? EIO : e;
}

/* An indexed root's look for a change of its file (coll_index.c): the
 * backend's stat, no descriptor. */
static int stamp_cb(void *cv, struct member_stamp *ms, const char *path)
{
	struct coll *c = cv;
	struct coll_stat cs;
	int e = c->be->stat(c->b, &cs, path);

	if (!e && cs.is_file)
		coll_stamp_of(ms, &cs);
	return e ? e : cs.is_file ? 0 : ENOENT;
}

/* The member's file is stamped st as s opens: another file than at its
 * last opening (replaced or rewritten while s was closed, max_files)
 * means the kernel may still hold the old file's pages and attributes
 * under ids that keep their numbers (datasets): nothing looked at a
 * closed member, so nobody told it (a live collection showed the old
 * bytes for good). A live mount's only: a frozen one shows what it
 * first read. */
static void note_opened(struct coll *c, struct slot *s, const struct member_stamp *st)
{
	struct fnode *n = coll_fnode_by_ino(c, s->folder_ino);
	bool ch = false;

	if (!n)
		return;
	pthread_mutex_lock(&c->mu);
	if (n->opened_set)
		ch = n->opened.size != st->size || n->opened.mtime_ns != st->mtime_ns ||
		     n->opened.ctime_ns != st->ctime_ns || n->opened.ino != st->ino ||
		     strcmp(n->opened.etag, st->etag) != 0;
	n->opened = *st;
	n->opened_set = true;
	pthread_mutex_unlock(&c->mu);
	if (ch && c->cfg.read_only && c->cfg.refresh)
		slot_file_changed(c->m, s);
}

/* A member opened by the dispatcher (s->opening: no request uses s->ops
 * meanwhile). Unchanged since its record (the stamp DIR's backend gives
 * now): an indexed root, no file opened. Else the live root, walked and
 * recorded before the first answer: synchronously, so that a cold walk
 * (find, getfattr -R) leaves a complete index behind, and the member's
 * metadata is read once for both (the walk warms the caches the
 * request then uses). */
static int hook_open_member(void *cv, void **out, const char *path, struct slot *s)
{
	struct coll *c = cv;
	struct member_stamp before, after;
	struct coll_stat cs;
	bool stamped = false;
	char why[512];
	h5_file *f;
	h5fs *fs;
	int e;

	*out = NULL;
	s->ops = &h5fs_member_ops;
	/* stamped before it opens: with the index (its record's key), and
	 * on a live mount (note_opened) */
	if (c->ci || (c->cfg.read_only && c->cfg.refresh)) {
		e = c->be->stat(c->b, &cs, path);
		if (e == ENOENT || (!e && !cs.is_file))
			return ENOENT;  /* gone since listed: a removed file of DIR */
		if (!e) {
			stamped = true;
			coll_stamp_of(&before, &cs);
			note_opened(c, s, &before);
		}
	}
	if (c->ci) {
		const struct root_ops *ops;

		if (stamped) {
			if (coll_index_root(c->ci, &ops, out, path, &before, open_live_cb, s) == 0) {
				s->ops = ops;
				return 0;
			}
			/* a member by its name (an S3 object named .h5) found to
			 * be no HDF5 at this stamp (ETag): not fetched again */
			if (cs.by_name && coll_index_kind(c->ci, path, &before) == 0)
				return member_eio(c, s, path, "no HDF5 signature (as when last fetched, by the index)");
			/* one found unreadable at this stamp: not opened again */
			if (!cs.by_name) {
				char *w = NULL;

				if (coll_index_unreadable(&w, c->ci, path, &before)) {
					snprintf(why, sizeof(why), "%s (as when last opened at this size and "
						 "mtime, by the index)", w);
					free(w);
					return member_eio(c, s, path, why);
				}
			}
		}
	}
	h5_err_clear();
	e = open_live(c, &fs, &f, path, s, why, sizeof(why));
	if (e == EMEDIUMTYPE && c->ci && stamped && cs.by_name)
		coll_index_set_kind(c->ci, path, &before, false);
	if (e == EBADMSG && c->ci && stamped && !cs.by_name)
		coll_index_set_unreadable(c->ci, path, &before, why);
	if (e)
		return e == EMEDIUMTYPE || e == EBADMSG ? EIO : e;
	if (c->ci && stamped && c->be->stat(c->b, &cs, path) == 0) {
		coll_stamp_of(&after, &cs);
		coll_index_record(c->ci, path, &before, &after, &h5fs_member_ops, fs, f);
	}
	*out = fs;
	return 0;
}

static char *hook_member_path(void *cv, uint64_t folder_ino)
{
	struct fnode *n = coll_fnode_by_ino(cv, folder_ino);

	return n ? strdup(n->path) : NULL;
}

static unsigned hook_fds(void *cv)
{
	struct coll *c = cv;

	return __atomic_load_n(&c->fds, __ATOMIC_SEQ_CST);
}

static const struct coll_hooks hooks = {
	.open_member = hook_open_member,
	.member_path = hook_member_path,
	.fds = hook_fds,
};

/* A backend's notice, by the mount's logging options (arg: its config). */
static void coll_log(void *arg, int prio, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	h5fs_log_cfg(arg, prio, "%s", msg);
}

static void coll_destroy(void *cv)
{
	struct coll *c = cv;
	size_t i;

	if (!c)
		return;
	for (i = 0; c->by_path && i < c->cap; i++) {
		struct fnode *x, *nx;

		for (x = c->by_path[i]; x; x = nx) {
			nx = x->next_p;
			free(x->path);
			free(x);
		}
	}
	coll_index_close(c->ci);
	if (c->be && c->b)
		c->be->close(c->b);
	if (c->tree_fd >= 0)
		close(c->tree_fd);      /* after every member (closed with the slots) */
	free(c->by_path);
	free(c->by_ino);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

int h5fs_mount_collection(h5fs_mount **out, const char *dir, const h5fs_config *cfg, unsigned max_files)
{
	h5fs_mount *m = NULL;
	struct coll *c;
	struct slot *s;
	int rc, e;

	*out = NULL;
	rc = mount_new(&m, cfg, false);
	if (rc < 0)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c) {
		h5fs_mount_free(m);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	pthread_mutex_init(&c->mu, NULL);
	c->tree_fd = -1;
	m->coll = c;
	m->coll_free = coll_destroy;
	m->hooks = &hooks;
	m->max_files = max_files ? max_files : h5fs_default_max_files();
	c->m = m;
	c->cfg = *cfg;
	c->oo = *cfg->open_opts;
	c->timeout = cfg->refresh ? (double)cfg->refresh : H5FS_TIMEOUT;
	c->next_ino = FUSE_ROOT_ID;
	c->cap = 1024;
	c->by_path = calloc(c->cap, sizeof(*c->by_path));
	c->by_ino = calloc(c->cap, sizeof(*c->by_ino));
	c->be = coll_backend_of(dir);
	if (!c->by_path || !c->by_ino || !coll_fnode_get(c, "")) {
		h5fs_mount_free(m);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	h5_err_clear();
	e = c->be->open(&c->b, dir, cfg->open_opts);
	if (e) {
		/* the backend's own words when it has some (an S3 listing's
		 * NoSuchBucket), else the errno's */
		char msg[512];

		snprintf(msg, sizeof(msg), "%s", *h5_err_msg() ? h5_err_msg() : strerror(e));
		c->b = NULL;
		h5fs_mount_free(m);
		return h5_err_set(coll_h5err(e), "%s", msg);
	}
	/* related files of a member may lie anywhere in the collection's
	 * tree, not only beside it (unless -o ext_any: anywhere) */
	c->oo.ext_root = c->be->tree ? c->be->tree(c->b) : NULL;
	/* and opened once: members' related files are opened beneath it
	 * (h5_open_opts.dir_fd), never through a path swapped since */
	if (c->oo.ext_root && (c->tree_fd = open(c->oo.ext_root, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0)
		c->oo.dir_fd = &c->tree_fd;
	c->oo.writable = !cfg->read_only;
	c->oo.min_free_bytes = cfg->min_free_bytes;
	c->oo.min_free_pct = cfg->min_free_pct;
	c->oo.related_idle = -1;        /* closed when unused: max_files counts them */
	c->oo.fd_gate = coll_gate;
	c->oo.fd_gate_ud = c;
	c->cfg.open_opts = &c->oo;      /* a live member opens anew with them */
	if (c->be->configure) {
		struct coll_settings st = {
			.refresh = c->cfg.refresh, .h5_suffixes = c->cfg.h5_suffixes,
			.log = coll_log, .log_arg = &c->cfg,
		};

		c->be->configure(c->b, &st);
	}
	/* the persistent index: none is a log line, never a failed mount */
	coll_index_open(&c->ci, dir, &c->cfg, stamp_cb, c);
	if (slot_add(&s, m, &coll_folder_ops, c) != 0 || dispatch_global(m, 0, FUSE_ROOT_ID, 0, NULL, true) != FUSE_ROOT_ID) {
		h5fs_mount_free(m);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	*out = m;
	return 0;
}
