/* root_member.c - the member root class (root.h): one HDF5 file shown as
 * a tree, the ll*.c machinery (struct h5fs). A single-FILE mount is one
 * member root at the mount's root; a collection has one per HDF5 file
 * looked into (root_coll.c). Its lookup, getattr, listing, open and xattrs are
 * views.c's, which add the views of datasets (NAME.npy, ...) to member/read.c's. */
#include "member.h"
#include "batch.h"
#include "npystream.h"
#include "handle.h"

static bool member_writable(void *r)
{
	return fs_writable(r);
}

/* No open directory or write handle: a collection may close it (its
 * nodes then re-resolve by path in the member opened anew, dispatch.c).
 * Requests in flight are counted by the dispatcher. */
static bool member_idle(void *r)
{
	h5fs *fs = r;
	bool idle;

	pthread_mutex_lock(&fs->lock);
	idle = fs->open_dirs.next == &fs->open_dirs && fs->open_wfiles.next == &fs->open_wfiles;
	pthread_mutex_unlock(&fs->lock);
	return idle;
}

static void member_start(void *r, struct fuse_session *se)
{
	h5fs *fs = r;

	h5fs_set_session(fs, se);
	if (!fs->shared_watch) {
		live_start(fs);
		wfile_idler_start(fs);
	}
}

static void member_tick(void *r)
{
	live_tick(r);
}

void h5fs_share_watch(h5fs *fs)
{
	fs->shared_watch = true;
}

/* Before unmounting: what attribute changes committed (ordered, not
 * synced) is made durable. */
static void member_stop(void *r)
{
	h5fs *fs = r;

	int err;

	ahead_stop(fs);         /* (it lists: reads FILE, waits for barriers) */
	h5fs_stop_watching(r);
	/* from here the last commits wait for FILE's lock (node/hold.c) */
	__atomic_store_n(&fs->final_commit, true, __ATOMIC_RELEASE);
	commit_sched_stop(fs);  /* (every kind's stop, then the thread) */
	if ((err = fs_meta_sync(fs)) != 0)
		h5fs_log(fs, LOG_ERR, "unmounting: %s: %s", fs_lost(fs) ? "changes answered earlier were lost, FILE "
			 "is at its last good commit" : "the attribute and link changes could not be fsync'd",
			 strerror(err));
	else if (pager_writes(&fs->pg))
		fs_compact(fs);
}

static void member_free(void *r)
{
	h5fs_free(r);
}

int h5fs_set_label(h5fs *fs, const char *label)
{
	free(fs->label);
	fs->label = label ? strdup(label) : NULL;
	return label && !fs->label ? h5_err_set(H5_ERR_NOMEM, "out of memory") : 0;
}

int h5fs_set_mountpoint(h5fs *fs, const char *path)
{
	free(fs->mnt);
	fs->mnt = path ? strdup(path) : NULL;
	return path && !fs->mnt ? h5_err_set(H5_ERR_NOMEM, "out of memory") : 0;
}

const h5fs_config *h5fs_cfg(const h5fs *fs)
{
	return &fs->cfg;
}

void h5fs_set_ino_map(h5fs *fs, uint64_t (*map)(void *ud, uint64_t local), void *ud)
{
	fs->ino_out = map;
	fs->ino_out_ud = ud;
}

/* ---- reader sections (commit/gate.c) ---- */
static int rd_lookup(void *r, struct root_entry *e, uint64_t parent, const char *name)
{
	struct rd x = commit_rd_begin(r);
	/* "." and "..": the kernel opening a file handle (export.c) */
	bool dot = name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2]));
	int err = dot ? member_lookup_dot(r, e, parent, name[1] == '.') : views_lookup(r, e, parent, name);

	commit_rd_end(&x);
	return err;
}

static int rd_lookup_listed(void *r, struct root_entry *e, uint64_t parent, const char *name, void *dh, size_t i)
{
	struct rd x = commit_rd_begin(r);
	int err = views_lookup_listed(r, e, parent, name, dh, i);

	commit_rd_end(&x);
	return err;
}

static void rd_batch_begin(void *r)
{
	commit_rd_batch_begin(r);
}

static void rd_batch_end(void *r)
{
	commit_rd_batch_end(r);
}

static int rd_getattr(void *r, struct stat *st, double *timeout, uint64_t ino)
{
	struct rd x = commit_rd_begin(r);
	int err = views_getattr(r, st, timeout, ino);

	commit_rd_end(&x);
	return err;
}

static int rd_opendir(void *r, void **dh, bool *keep, uint64_t ino)
{
	struct rd x = commit_rd_begin(r);
	int err = views_opendir(r, dh, keep, ino);

	commit_rd_end(&x);
	return err;
}

static int rd_readdir(void *r, struct root_dirent *d, void *dh, size_t i)
{
	struct rd x = commit_rd_begin(r);
	int err = views_readdir(r, d, dh, i);

	commit_rd_end(&x);
	return err;
}

static int rd_listxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino)
{
	struct rd x = commit_rd_begin(r);
	int err = views_listxattr(r, buf, size, len, ino);

	commit_rd_end(&x);
	return err;
}

static int rd_getxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino, const char *name)
{
	struct rd x = commit_rd_begin(r);
	int err = views_getxattr(r, buf, size, len, ino, name);

	commit_rd_end(&x);
	return err;
}

/* Changes read FILE too (the name looked for, the group's storage
 * walked) while other requests' commits free space and a sync releases it
 * for reuse: a reader section each, as every reading request has (a
 * create's look at the root's dense store met an np.save's bytes written
 * where the store had been: "link message: unsupported version 53",
 * test_tools under ASan and load). Paused while the change holds FILE's
 * lock (commit/gate.c): its own commit's frees are not held back for it. */
static int rd_setxattr(void *r, uint64_t ino, const char *name, const char *value, size_t size, int flags)
{
	struct rd x;
	int err;

	commit_rd_change_begin(r, &x);
	err = views_setxattr(r, ino, name, value, size, flags);
	commit_rd_change_end(&x);
	return err;
}

static int rd_removexattr(void *r, uint64_t ino, const char *name)
{
	struct rd x;
	int err;

	commit_rd_change_begin(r, &x);
	err = views_removexattr(r, ino, name);
	commit_rd_change_end(&x);
	return err;
}

static int rd_mkdir(void *r, uint64_t parent, const char *name)
{
	struct rd x;
	int err;

	commit_rd_change_begin(r, &x);
	err = views_mkdir(r, parent, name);
	commit_rd_change_end(&x);
	return err;
}

static int rd_rmdir(void *r, uint64_t parent, const char *name)
{
	struct rd x;
	int err;

	commit_rd_change_begin(r, &x);
	err = views_rmdir(r, parent, name);
	commit_rd_change_end(&x);
	return err;
}

static int rd_unlink(void *r, uint64_t parent, const char *name)
{
	struct rd x;
	int err;

	commit_rd_change_begin(r, &x);
	err = views_unlink(r, parent, name);
	commit_rd_change_end(&x);
	return err;
}

static int rd_symlink(void *r, const char *target, uint64_t parent, const char *name)
{
	struct rd x;
	int err;

	commit_rd_change_begin(r, &x);
	err = views_symlink(r, target, parent, name);
	commit_rd_change_end(&x);
	return err;
}

static int rd_create(void *r, uint64_t parent, const char *name)
{
	struct rd x;
	int err;

	commit_rd_change_begin(r, &x);
	err = views_create(r, parent, name);
	commit_rd_change_end(&x);
	return err;
}

static int rd_rename(void *r, uint64_t parent, const char *name, uint64_t newparent, const char *newname,
		     unsigned flags)
{
	struct rd x;
	int err;

	commit_rd_change_begin(r, &x);
	err = views_rename(r, parent, name, newparent, newname, flags);
	commit_rd_change_end(&x);
	return err;
}

static int rd_link(void *r, uint64_t ino, uint64_t newparent, const char *newname)
{
	struct rd x;
	int err;

	commit_rd_change_begin(r, &x);
	err = views_link(r, ino, newparent, newname);
	commit_rd_change_end(&x);
	return err;
}

/* ---- changes counted (node/hold.c fs_change_begin) ---- */
/* The requests on a descriptor or a node that may change what a stat
 * shows or what is kept to be written (the changes by name are counted
 * by their reader sections above: commit_rd_change_begin) */
static int chg_open(void *r, struct fuse_file_info *fi, uint64_t ino)
{
	int err;

	fs_change_begin(r);
	err = views_open(r, fi, ino);
	fs_change_end(r);
	return err;
}

static int chg_release(void *r, uint64_t ino, struct fuse_file_info *fi)
{
	int err;

	fs_change_begin(r);
	err = member_release(r, ino, fi);
	fs_change_end(r);
	return err;
}

static void chg_write(void *r, fuse_req_t req, uint64_t ino, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	fs_change_begin(r);
	behind_write(r, req, ino, buf, size, off, fi);
	fs_change_end(r);
}

static int chg_flush(void *r, uint64_t ino, struct fuse_file_info *fi)
{
	int err;

	fs_change_begin(r);
	err = behind_flush(r, ino, fi);
	fs_change_end(r);
	return err;
}

static int chg_fsync(void *r, uint64_t ino, struct fuse_file_info *fi)
{
	int err;

	fs_change_begin(r);
	err = behind_fsync(r, ino, fi);
	fs_change_end(r);
	return err;
}

static int chg_fallocate(void *r, uint64_t ino, int mode, uint64_t off, uint64_t len)
{
	int err;

	fs_change_begin(r);
	err = member_fallocate(r, ino, mode, off, len);
	fs_change_end(r);
	return err;
}

static int chg_setattr(void *r, struct stat *out, double *timeout, uint64_t ino, const struct stat *attr,
		       int to_set)
{
	int err;

	fs_change_begin(r);
	err = member_setattr(r, out, timeout, ino, attr, to_set);
	fs_change_end(r);
	return err;
}

const struct root_ops h5fs_member_ops = {
	.name = "member",
	.lookup = rd_lookup,
	.lookup_listed = rd_lookup_listed,
	.batch_begin = rd_batch_begin,
	.batch_end = rd_batch_end,
	.forget = member_forget,
	.getattr = rd_getattr,
	.readlink = member_readlink,
	.opendir = rd_opendir,
	.readdir = rd_readdir,
	.releasedir = views_releasedir,
	.open = chg_open,
	.read = member_read,
	.read_done = member_read_done,
	.release = chg_release,
	.write = chg_write,
	.flush = chg_flush,
	.fsync = chg_fsync,
	.fsyncdir = member_fsyncdir,
	.fallocate = chg_fallocate,
	.listxattr = rd_listxattr,
	.getxattr = rd_getxattr,
	.setxattr = rd_setxattr,
	.removexattr = rd_removexattr,
	.mkdir = rd_mkdir,
	.rmdir = rd_rmdir,
	.unlink = rd_unlink,
	.symlink = rd_symlink,
	.create = rd_create,
	.rename = rd_rename,
	.link = rd_link,
	.setattr = chg_setattr,
	.writable = member_writable,
	.usage = member_usage,
	.idle = member_idle,
	.start = member_start,
	.tick = member_tick,
	.stop = member_stop,
	.free = member_free,
};
