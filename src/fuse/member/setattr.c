/* setattr.c - chmod, chown, utimens and truncate on the member root
 * (issue 47 item 1; man h5fs MODIFYING "Times, modes and owners").
 *
 * What copying tools ask after writing a file (cp -p/-a, rsync -a, tar x,
 * install, shutil.copy2, touch) must succeed, or they exit non-zero:
 *   - times: the modification time is stored where HDF5 has a place for it
 *     (engine write/obj_time.c: the Modification Time message, the old
 *     one, a version 2 header's times, or a new message in a version 1
 *     header), to the second, and shown by stat (to the nanosecond given,
 *     for as long as the kernel keeps the node); the access time and a
 *     header with no place (a version 2 one without times, a soft link)
 *     are accepted and not stored;
 *   - modes and owners: accepted, not stored (HDF5 has no place for
 *     them; what is shown comes from FILE and -o umask/uid/gid);
 *   - the size: the size shown succeeds; any other is EPERM with a log
 *     line (datasets change size by appending rows).
 * On a read-only mount only what changes nothing succeeds (shutil.copy
 * chmods to the mode a file has): else EROFS, logged.
 * A dataset with rows accepted and not committed is committed first
 * (behind/wclose.c wfile_commit_node): the appender's commit sets the header's
 * time to now, which would undo a time set before it (cp -p sets times
 * on its descriptor before closing it). */
#include "member.h"
#include "resize.h"
#include "handle.h"

/* Whether the request changes nothing of what st shows. */
static bool changes_nothing(const struct stat *st, const struct stat *attr, int to_set)
{
	if (to_set & ~(FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_CTIME))
		return false;
	return (!(to_set & FUSE_SET_ATTR_MODE) || (attr->st_mode & 07777) == (st->st_mode & 07777)) &&
	       (!(to_set & FUSE_SET_ATTR_SIZE) || attr->st_size == st->st_size);
}

/* The modification time asked (now, or the one given). */
static struct timespec mtime_of(const struct stat *attr, int to_set)
{
	struct timespec t;

	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		clock_gettime(CLOCK_REALTIME, &t);
	else
		t = attr->st_mtim;
	return t;
}

/* The time stored in n's object header (FILE's own objects): 0, or an
 * errno (logged). A header without a place: 0, nothing stored. */
static int store_mtime(h5fs *fs, struct node *n, struct timespec t)
{
	struct use u;
	int e, rc;

	if (n->type == NT_LINK)
		return 0;       /* a soft link has no header */
	/* an np.save placeholder being written: the dataset it makes */
	if (n->type == NT_FILE && wfile_npy_mtime(fs, n, (int64_t)t.tv_sec, &e))
		return e;
	if (n->type == NT_FILE)
		wfile_commit_node(fs, n);
	e = commit_begin(&u, fs, n, COMMIT_ATTRS, "utimens");
	if (e)
		return e;
	rc = h5_obj_mtime_set(u.f, u.addr, (int64_t)t.tv_sec);
	if (rc == H5_ERR_UNSUPPORTED || rc == H5_ERR_RANGE) {
		h5fs_log(fs, LOG_DEBUG, "utimens %s: not stored: %s", show_path(n->path), h5_err_msg());
		h5_err_clear();
	} else if (rc < 0) {
		e = h5err_logged(fs, rc, "utimens", n->path, NULL, u.addr);
	}
	commit_end(fs, &u, true);
	return e;
}

int member_setattr(void *r, struct stat *out, double *timeout, uint64_t ino, const struct stat *attr, int to_set)
{
	h5fs *fs = r;
	struct node *n = node_get(fs, ino);
	struct stat cur;
	int e = views_getattr(r, &cur, timeout, ino);

	if (!n)
		return ESTALE;
	if (e)
		return e;
	if (changes_nothing(&cur, attr, to_set)) {
		*out = cur;
		return 0;
	}
	e = commit_admit(fs, PAGER_CHANGE, "setattr", n->path);
	if (e)
		return e;
	if ((to_set & FUSE_SET_ATTR_SIZE) && attr->st_size != cur.st_size) {
		e = trunc_set_size(fs, n, (uint64_t)attr->st_size, "truncate");
		if (e)
			return e;
	}
	if (to_set & (FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW)) {
		struct timespec t = mtime_of(attr, to_set);

		e = store_mtime(fs, n, t);
		if (e)
			return e;
		pthread_rwlock_wrlock(&n->lk);
		n->st.st_mtim = t;
		clock_gettime(CLOCK_REALTIME, &n->st.st_ctim);
		pthread_rwlock_unlock(&n->lk);
	}
	if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_ATIME_NOW)) {
		pthread_rwlock_wrlock(&n->lk);
		if (to_set & FUSE_SET_ATTR_ATIME_NOW)
			clock_gettime(CLOCK_REALTIME, &n->st.st_atim);
		else
			n->st.st_atim = attr->st_atim;
		/* a change of any time is one of the inode: its ctime too
		 * (futimens of the atime alone, xfstests generic/221) */
		clock_gettime(CLOCK_REALTIME, &n->st.st_ctim);
		pthread_rwlock_unlock(&n->lk);
	}
	/* modes and owners: accepted, nothing to store (HDF5 has no place) */
	if (to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))
		h5fs_log(fs, LOG_DEBUG, "setattr %s: modes and owners are not stored", show_path(n->path));
	return views_getattr(r, out, timeout, ino);
}
