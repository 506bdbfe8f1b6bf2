/*
 * dispatch_int.h - what the dispatcher's three files share: a request's
 * target in its slot (dispatch.c) and the handlers of the tree
 * (dispatch_tree.c: lookup, forget, getattr, readlink, directories) and of
 * open files, xattrs and changes (dispatch_io.c), which h5fs_ll_ops
 * (dispatch.c) lists.
 */
#ifndef H5FS_DISPATCH_INT_H
#define H5FS_DISPATCH_INT_H

#include "dispatch.h"

/* global id g entered: its slot in use and local id, or an errno */
int disp_target(struct target *t, h5fs_mount *m, uint64_t g);
/* the slot let go */
void disp_target_end(h5fs_mount *m, struct target *t);
/* st of t, its ids made global */
int disp_attr_out(h5fs_mount *m, struct stat *st, const struct target *t);

/* the entry of name in parent: fe filled, one kernel reference made
 * (LOOKUP, READDIRPLUS, a change's new entry) */
int disp_entry_of(struct fuse_entry_param *fe, h5fs_mount *m, const struct target *t, fuse_ino_t parent, const char *name);
/* ENAMETOOLONG, logged (op and the name's start), for a name longer
 * than a directory entry may be (H5FS_NAME_MAX): refused before any
 * root sees it, so nothing is made under a name no lookup could find */
int disp_name_long(h5fs_mount *m, const char *op, const char *name);
/* n kernel references to the global id g given back (FORGET) */
void disp_forget(h5fs_mount *m, uint64_t g, uint64_t n);

/* An open file: the root's handle (fi->fh as the root set it) and the
 * slot it is held in. */
struct fhandle {
	struct hnode n;
	struct slot *s;
	uint64_t fh;
	uint64_t local;
};

/* A dispatcher handle's end: its root's release or releasedir (fi: the
 * request's, or NULL), its slot let go, the handle freed (RELEASE,
 * RELEASEDIR, an interrupted open, the unmount's leftovers). */
void handle_close(h5fs_mount *m, struct hnode *n, const struct fuse_file_info *fi);

/* An open directory: its root's listing, held in its slot (a member
 * with open directories is not closed). */
struct dhandle {
	struct hnode n;
	struct slot *s;
	void *dh;
	uint64_t g;
	uint64_t local;         /* the directory's (the slot is pinned: same epoch) */
};

void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_readlink(fuse_req_t req, fuse_ino_t ino);
void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void op_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off, struct fuse_file_info *fi);
void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len, struct fuse_file_info *fi);
void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size, int flags);
void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);
void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void op_statfs(fuse_req_t req, fuse_ino_t ino);
void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi);

#endif
