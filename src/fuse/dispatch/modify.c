/* modify.c - mknod (create, setattr, the xattr changes, mkdir, rmdir,
 * unlink, symlink, rename and link are dispatch_io.c's). The operations
 * table is dispatch.c's. */
#include "dispatch_int.h"

#include <errno.h>
#include <sys/stat.h>

/* ---- mknod ------------------------------------------------------------------------ */

/* An HDF5 file holds no FIFO, socket or device: EPERM, as mknod(2) says
 * of "the type of node requested" a file system does not support, where
 * the root can make files (a read-write mount: EROFS would say the mount
 * is read-only, which it is not; issue 63); EROFS where it cannot. A
 * regular file (mknod(1) ... p aside, what the kernel asks when create
 * is not used) is made as create makes one. */
void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	h5fs_mount *m = fuse_req_userdata(req);
	struct fuse_entry_param fe;
	struct target t;
	int err = disp_name_long(m, "mknod", name);

	(void)rdev;
	if (!err)
		err = disp_target(&t, m, parent);
	if (err) {
		fuse_reply_err(req, err);
		return;
	}
	if (!t.s->ops->create)
		err = root_no_write();
	else if (!S_ISREG(mode))
		err = EPERM;
	else
		err = t.s->ops->create(t.s->r, t.local, name);
	if (!err)
		err = disp_entry_of(&fe, m, &t, parent, name);
	disp_target_end(m, &t);
	if (err)
		fuse_reply_err(req, err);
	else
		fuse_reply_entry(req, &fe);
}
