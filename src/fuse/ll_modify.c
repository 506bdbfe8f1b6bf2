/* ll_modify.c - everything that would modify FILE (refused), and the
 * operations table. */
#include "ll.h"

/* ---- everything that would modify the file -------------------------------------- */

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
		       struct fuse_file_info *fi)
{
	h5fs *fs = fuse_req_userdata(req);

	(void)ino; (void)attr; (void)fi;
	/* datasets only grow by appending: truncate is not permitted */
	fuse_reply_err(req, (to_set & FUSE_SET_ATTR_SIZE) && fs_writable(fs) ? EPERM : EROFS);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)parent; (void)name; (void)mode; (void)rdev;
	fuse_reply_err(req, EROFS);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
	(void)parent; (void)name; (void)mode;
	fuse_reply_err(req, EROFS);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	(void)parent; (void)name;
	fuse_reply_err(req, EROFS);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
	(void)link; (void)parent; (void)name;
	fuse_reply_err(req, EROFS);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
		      const char *newname, unsigned int flags)
{
	(void)parent; (void)name; (void)newparent; (void)newname; (void)flags;
	fuse_reply_err(req, EROFS);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
	(void)ino; (void)newparent; (void)newname;
	fuse_reply_err(req, EROFS);
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
		      struct fuse_file_info *fi)
{
	(void)parent; (void)name; (void)mode; (void)fi;
	fuse_reply_err(req, EROFS);
}

/* Attributes are read-only in this version whatever the mount mode:
 * ENOTSUP says "this filesystem cannot do that" rather than "mounted ro". */
static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
			size_t size, int flags)
{
	(void)ino; (void)name; (void)value; (void)size; (void)flags;
	fuse_reply_err(req, ENOTSUP);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino; (void)name;
	fuse_reply_err(req, ENOTSUP);
}

const struct fuse_lowlevel_ops h5fs_ll_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
	.getattr = op_getattr,
	.readlink = op_readlink,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.releasedir = op_releasedir,
	.open = op_open,
	.read = op_read,
	.release = op_release,
	.write = op_write,
	.flush = op_flush,
	.fsync = op_fsync,
	.statfs = op_statfs,
	.listxattr = op_listxattr,
	.getxattr = op_getxattr,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_unlink,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.create = op_create,
	.setxattr = op_setxattr,
	.removexattr = op_removexattr,
};
