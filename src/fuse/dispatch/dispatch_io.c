/*
 * dispatch_io.c - the handlers of open files (open, read, write, flush,
 * fsync, release), xattrs, and changes of the tree (mkdir, rmdir,
 * unlink, symlink, setattr), each one root operation (root.h) and one
 * reply; statfs.
 */
#include "dispatch_int.h"
#include "caller.h"

#include <linux/falloc.h>       /* FALLOC_FL_* */
#include <sys/statvfs.h>
#include <unistd.h>

static void fi_root(struct fuse_file_info *rfi, const struct fuse_file_info *fi, const struct fhandle *h)
{
	*rfi = *fi;
	rfi->fh = h->fh;
}

/* The root's open of ino, its handle in fi (one root: the root's own;
 * else a dispatcher handle naming the slot, pinned). */
static int open_handle(h5fs_mount *m, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fuse_file_info rfi = *fi;
	struct fhandle *h;
	struct target t;
	int err;

	if (m->identity)
		return m->slots[0]->ops->open(m->slots[0]->r, fi, ino);   /* its handle is the request's */
	h = calloc(1, sizeof(*h));
	err = h ? disp_target(&t, m, ino) : ENOMEM;
	if (!err) {
		rfi.fh = 0;
		err = t.s->ops->open(t.s->r, &rfi, t.local);
		if (!err) {
			h->s = t.s;
			h->fh = rfi.fh;
			h->local = t.local;
			slot_pin(m, t.s, &h->n);
		}
		disp_target_end(m, &t);
	}
	if (err) {
		free(h);
		return err;
	}
	fi->direct_io = rfi.direct_io;
	fi->keep_cache = rfi.keep_cache;
	fi->fh = (uint64_t)(uintptr_t)h;
	return 0;
}

/* The reply could not be sent (interrupted): the handle goes. */
static void open_undo(h5fs_mount *m, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fhandle *h = (struct fhandle *)(uintptr_t)fi->fh;

	if (m->identity)
		m->slots[0]->ops->release(m->slots[0]->r, ino, fi);
	else
		handle_close(m, &h->n, fi);
}

void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	int err;

	caller_begin(req);      /* member_open checks other files' modes for them */
	err = open_handle(m, ino, fi);
	caller_end();

	if (err)
		fuse_reply_err(req, err);
	else if (fuse_reply_open(req, fi) != 0)
		open_undo(m, ino, fi);
}

/* create(2): the root makes NAME (a member file: a new dataset,
 * member/link.c member_create), the dispatcher looks it up and opens it
 * for the writes that follow (O_CREAT, O_EXCL and O_TRUNC done with). */
void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fuse_entry_param fe;
	struct target t;
	int err = disp_name_long(m, "create", name);

	(void)mode;
	if (!err)
		err = disp_target(&t, m, parent);
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	err = t.s->ops->create ? t.s->ops->create(t.s->r, t.local, name) : root_no_write();
	if (!err)
		err = disp_entry_of(&fe, m, &t, parent, name);
	disp_target_end(m, &t);
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	fi->flags &= ~(O_CREAT | O_EXCL | O_TRUNC);
	err = open_handle(m, fe.ino, fi);
	if (err) {
		disp_forget(m, fe.ino, 1);      /* the lookup's reference */
		fuse_reply_err(req, err);
	} else if (fuse_reply_create(req, &fe, fi) != 0) {
		open_undo(m, fe.ino, fi);
		disp_forget(m, fe.ino, 1);
	}
}

/* The slot, local id and root's file info of an open file, held busy
 * until handle_leave: every root op on an open handle goes through here.
 * The handle's pin alone would not do: a read's read_done and a write's
 * work after its reply run after the kernel has the answer, and the
 * handle's RELEASE may come meanwhile (on another thread), unpin it, and
 * let the member close under them (a SIGSEGV in live_fast_end, issue 45:
 * the member freed and its memory already another member's). */
static struct slot *handle_enter(h5fs_mount *m, uint64_t *local, struct fuse_file_info *rfi, uint64_t ino,
				 const struct fuse_file_info *fi)
{
	struct fhandle *h = (struct fhandle *)(uintptr_t)fi->fh;
	struct slot *s;

	*rfi = *fi;
	*local = ino;
	if (m->identity)
		return m->slots[0];
	if (!h)
		return NULL;
	fi_root(rfi, fi, h);
	*local = h->local;
	s = h->s;       /* h is not looked at again: RELEASE frees it */
	pthread_mutex_lock(&m->mu);
	s->busy++;
	m->inflight++;
	pthread_mutex_unlock(&m->mu);
	return s;
}

static void handle_leave(h5fs_mount *m, struct slot *s)
{
	if (s && !m->identity)
		slot_leave(m, s);
}

void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fuse_file_info rfi;
	struct root_read a;
	uint64_t local;
	struct slot *s = handle_enter(m, &local, &rfi, ino, fi);
	int err;

	memset(&a, 0, sizeof(a));
	if (!s) {
		fuse_reply_err(req, EBADF);
		return;
	}
	a.tid = fuse_req_ctx(req)->pid;
	err = s->ops->read(s->r, &a, local, size, off, &rfi);
	if (err)
		fuse_reply_err(req, err);
	else if (a.next)
		reply_extents(req, a.ext, a.next);
	else if (a.niov)
		fuse_reply_iov(req, a.iov, a.niov);
	else
		fuse_reply_buf(req, (const char *)a.buf, a.len);
	if (s->ops->read_done)
		s->ops->read_done(s->r, &a);
	handle_leave(m, s);
}

void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fuse_file_info rfi;
	uint64_t local;
	struct slot *s = handle_enter(m, &local, &rfi, ino, fi);

	if (!s)
		fuse_reply_err(req, EBADF);
	else if (!s->ops->write)
		fuse_reply_err(req, root_no_write());
	else
		s->ops->write(s->r, req, local, buf, size, off, &rfi);
	handle_leave(m, s);
}

void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fuse_file_info rfi;
	uint64_t local;
	struct slot *s = handle_enter(m, &local, &rfi, ino, fi);
	int err = !s ? EBADF : s->ops->flush ? s->ops->flush(s->r, local, &rfi) : 0;

	handle_leave(m, s);
	fuse_reply_err(req, err);
}

void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fuse_file_info rfi;
	uint64_t local;
	struct slot *s = handle_enter(m, &local, &rfi, ino, fi);
	int err;

	(void)datasync;
	err = !s ? EBADF : s->ops->fsync ? s->ops->fsync(s->r, local, &rfi) : 0;
	handle_leave(m, s);
	fuse_reply_err(req, err);
}

/* fallocate(2): mode 0 (posix_fallocate, fallocate(1) without options),
 * which a root that writes honours by growing the dataset sparsely -
 * nothing holds only the fill value on disk -, and PUNCH_HOLE with
 * KEEP_SIZE (fallocate -p), the range reading zeros after it, whole
 * chunks freed where the index allows (issue 65). Every other mode is
 * EOPNOTSUPP up front: keeping space past the end, zeroing ranges,
 * collapsing and inserting have no HDF5 counterpart here, and glibc's
 * posix_fallocate would otherwise emulate mode 0 by writing a byte every
 * block (a 1 PB request filled the host's disk). */
static int do_fallocate(h5fs_mount *m, fuse_ino_t ino, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	struct fuse_file_info rfi;
	uint64_t local;
	struct slot *s;
	int err;

	if (mode != 0 && mode != (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE))
		return EOPNOTSUPP;
	if (off < 0 || len <= 0 || (uint64_t)len > (uint64_t)INT64_MAX - (uint64_t)off)
		return EINVAL;
	s = handle_enter(m, &local, &rfi, ino, fi);
	if (!s)
		return EBADF;
	err = s->ops->fallocate ? s->ops->fallocate(s->r, local, mode, (uint64_t)off, (uint64_t)len) : EOPNOTSUPP;
	handle_leave(m, s);
	return err;
}

void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	fuse_reply_err(req, do_fallocate(fuse_req_userdata(req), ino, mode, off, len, fi));
}

void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fhandle *h = (struct fhandle *)(uintptr_t)fi->fh;

	if (m->identity)
		m->slots[0]->ops->release(m->slots[0]->r, ino, fi);
	else if (h)
		handle_close(m, &h->n, fi);
	fuse_reply_err(req, 0);
}

static void op_xattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	h5fs_mount *m = fuse_req_userdata(req);
	char *buf = NULL;
	size_t len = 0;
	struct target t;
	int err;

	/* the daemon's process id, for `h5fs -u` (mount/unmount.c), which
	 * waits for it to exit: asked of the mount's top only, never listed */
	if (name && ino == FUSE_ROOT_ID && strcmp(name, H5FS_PID_XATTR) == 0) {
		char pid[24];
		int n = snprintf(pid, sizeof(pid), "%ld", (long)getpid());

		if (size == 0)
			fuse_reply_xattr(req, (size_t)n);
		else if ((size_t)n > size)
			fuse_reply_err(req, ERANGE);
		else
			fuse_reply_buf(req, pid, (size_t)n);
		return;
	}
	err = disp_target(&t, m, ino);

	if (!err && size && !(buf = malloc(size)))
		err = ENOMEM;
	if (!err && name)
		err = t.s->ops->getxattr ? t.s->ops->getxattr(t.s->r, buf, size, &len, t.local, name) : ENODATA;
	else if (!err)
		err = t.s->ops->listxattr ? t.s->ops->listxattr(t.s->r, buf, size, &len, t.local) : 0;
	disp_target_end(m, &t);
	/* more than the kernel passes (XATTR_SIZE_MAX): E2BIG, which
	 * getxattr(2) gives for a value too large to return, rather than a
	 * size no buffer can take (ERANGE for ever) */
	if (!err && len > H5FS_XATTR_MAX) {
		h5fs_log_cfg(&m->cfg, LOG_NOTICE, "%s of node %llu%s%s: E2BIG: %zu bytes, more than the %d an xattr "
			     "may hold", name ? "getxattr" : "listxattr", (unsigned long long)ino, name ? " " : "",
			     name ? name : "", len, H5FS_XATTR_MAX);
		err = E2BIG;
	}
	if (err)
		fuse_reply_err(req, err);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
}

void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	op_xattr(req, ino, NULL, size);
}

void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	op_xattr(req, ino, name, size);
}

/* Attributes change on roots that can (a member file: member/xattr.c); others
 * cannot: ENOTSUP says "this filesystem cannot do that". */
static void op_xattr_change(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
			    int flags)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct target t;
	int err = disp_target(&t, m, ino);

	if (!err && value)
		err = t.s->ops->setxattr ? t.s->ops->setxattr(t.s->r, t.local, name, value, size, flags) : ENOTSUP;
	else if (!err)
		err = t.s->ops->removexattr ? t.s->ops->removexattr(t.s->r, t.local, name) : ENOTSUP;
	disp_target_end(m, &t);
	fuse_reply_err(req, err);
}

void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
			int flags)
{
	op_xattr_change(req, ino, name, value ? value : "", size, flags);
}

void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	op_xattr_change(req, ino, name, NULL, 0, 0);
}

/* Groups and links change on roots that can (a member file: member/link.c);
 * others cannot: EROFS. mkdir and symlink reply with the new entry. */
enum link_op { LO_MKDIR, LO_RMDIR, LO_UNLINK, LO_SYMLINK };

static void op_link_change(fuse_req_t req, enum link_op op, fuse_ino_t parent, const char *name, const char *dest)
{
	h5fs_mount *m = fuse_req_userdata(req);
	static const char *const what[] = { "mkdir", "rmdir", "unlink", "symlink" };
	const struct root_ops *o;
	struct fuse_entry_param fe;
	struct target t;
	int err = disp_name_long(m, what[op], name);

	if (!err)
		err = disp_target(&t, m, parent);

	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	o = t.s->ops;
	switch (op) {
	case LO_MKDIR: err = o->mkdir ? o->mkdir(t.s->r, t.local, name) : root_no_write(); break;
	case LO_RMDIR: err = o->rmdir ? o->rmdir(t.s->r, t.local, name) : root_no_write(); break;
	case LO_UNLINK: err = o->unlink ? o->unlink(t.s->r, t.local, name) : root_no_write(); break;
	case LO_SYMLINK: err = o->symlink ? o->symlink(t.s->r, dest, t.local, name) : root_no_write(); break;
	}
	if (!err && (op == LO_MKDIR || op == LO_SYMLINK))
		err = disp_entry_of(&fe, m, &t, parent, name);
	disp_target_end(m, &t);
	if (err)
		fuse_reply_err(req, err);
	else if (op == LO_MKDIR || op == LO_SYMLINK)
		fuse_reply_entry(req, &fe);
	else
		fuse_reply_err(req, 0);
}

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	(void)mode;
	op_link_change(req, LO_MKDIR, parent, name, NULL);
}

void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	op_link_change(req, LO_RMDIR, parent, name, NULL);
}

void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	op_link_change(req, LO_UNLINK, parent, name, NULL);
}

void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	op_link_change(req, LO_SYMLINK, parent, name, link);
}

/* Two ids of one request entered: both must be in one root (a collection's
 * members are separate files: EXDEV, so mv copies). */
static int two_targets(struct target *a, struct target *b, h5fs_mount *m, fuse_ino_t ga, fuse_ino_t gb)
{
	int err = disp_target(a, m, ga);

	if (err)
		return err;
	err = disp_target(b, m, gb);
	if (err) {
		disp_target_end(m, a);
		return err;
	}
	if (a->s != b->s) {
		disp_target_end(m, b);
		disp_target_end(m, a);
		return EXDEV;
	}
	return 0;
}

void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent, const char *newname,
	       unsigned int flags)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct target t, nt;
	int err = disp_name_long(m, "rename", newname);

	if (!err)
		err = two_targets(&t, &nt, m, parent, newparent);
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	err = t.s->ops->rename ? t.s->ops->rename(t.s->r, t.local, name, nt.local, newname, flags) : root_no_write();
	disp_target_end(m, &nt);
	disp_target_end(m, &t);
	fuse_reply_err(req, err);
}

void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fuse_entry_param fe;
	struct target t, nt;
	int err = disp_name_long(m, "link", newname);

	if (!err)
		err = two_targets(&t, &nt, m, ino, newparent);

	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	err = t.s->ops->link ? t.s->ops->link(t.s->r, t.local, nt.local, newname) : root_no_write();
	if (!err)
		err = disp_entry_of(&fe, m, &nt, newparent, newname);
	disp_target_end(m, &nt);
	disp_target_end(m, &t);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_entry(req, &fe);
}

void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct statvfs sv;
	uint64_t bytes = 0, objects = 0;

	(void)ino;
	slots_usage(m, &bytes, &objects);
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = H5FS_BLKSIZE;
	sv.f_frsize = 512;
	sv.f_blocks = (fsblkcnt_t)((bytes + 511) / 512);
	sv.f_files = (fsfilcnt_t)objects;
	sv.f_namemax = H5FS_NAME_MAX;
	sv.f_flag = ST_RDONLY;
	/* A read-write mount: the room of the file system holding FILE (or
	 * DIR), less the margin -o min_free keeps (file_space.c keep_margin),
	 * as free blocks, so df does not show the mount full (issue 72 item 7:
	 * xfstests generic/103) and tools that check for room before writing
	 * find it. */
	if (!m->cfg.read_only && m->cfg.space_path) {
		struct statvfs fv;

		if (statvfs(m->cfg.space_path, &fv) == 0) {
			uint64_t fr = fv.f_frsize ? fv.f_frsize : fv.f_bsize;
			uint64_t avail = (uint64_t)fv.f_bavail * fr, margin = 0;

			if (m->cfg.min_free_pct)
				margin = (uint64_t)fv.f_blocks * fr / 100 * m->cfg.min_free_pct;
			if (m->cfg.min_free_bytes && (!m->cfg.min_free_pct || m->cfg.min_free_bytes < margin))
				margin = m->cfg.min_free_bytes;
			avail = avail > margin ? avail - margin : 0;
			sv.f_bfree = sv.f_bavail = (fsblkcnt_t)(avail / 512);
			sv.f_blocks += sv.f_bfree;
			sv.f_flag = 0;      /* (f_files stays the objects shown: test_links) */
		}
	}
	fuse_reply_statfs(req, &sv);
}

/* chmod, chown, utimens, truncate: the root's (a member file:
 * member/setattr.c); a root without: only what changes nothing (chmod to
 * the mode a file has, a size it has: shutil.copy chmods its copy to the
 * source's mode) succeeds, else EPERM for a size where datasets may grow,
 * EROFS otherwise, logged. */
static int do_setattr(h5fs_mount *m, struct stat *out, double *timeout, fuse_ino_t ino, const struct stat *attr,
		      int to_set)
{
	struct target t;
	bool w, same = false;
	int err = disp_target(&t, m, ino);

	if (err)
		return err;
	if (t.s->ops->setattr) {
		err = t.s->ops->setattr(t.s->r, out, timeout, t.local, attr, to_set);
		if (!err)
			err = disp_attr_out(m, out, &t);
		disp_target_end(m, &t);
		return err;
	}
	w = t.s->ops->writable && t.s->ops->writable(t.s->r);
	if (!(to_set & ~(FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_SIZE | FUSE_SET_ATTR_CTIME)) &&
	    t.s->ops->getattr(t.s->r, out, timeout, t.local) == 0 && disp_attr_out(m, out, &t) == 0)
		same = (!(to_set & FUSE_SET_ATTR_MODE) || (attr->st_mode & 07777) == (out->st_mode & 07777)) &&
		       (!(to_set & FUSE_SET_ATTR_SIZE) || attr->st_size == out->st_size);
	disp_target_end(m, &t);
	if (same)
		return 0;
	err = (to_set & FUSE_SET_ATTR_SIZE) && w ? EPERM : root_no_write();
	h5fs_log_cfg(&m->cfg, LOG_NOTICE, "setattr of node %llu (%s root): %s: its files cannot change so",
		     (unsigned long long)ino, t.s->ops->name, strerror(err));
	return err;
}

void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct stat st;
	double timeout = 0;
	int err;

	(void)fi;
	memset(&st, 0, sizeof(st));
	err = do_setattr(m, &st, &timeout, ino, attr, to_set);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_attr(req, &st, timeout);
}
