/* modify.c - the change no root takes: mknod (refused; create, setattr,
 * the xattr changes, mkdir, rmdir, unlink, symlink, rename and link, which
 * depend on the root, are dispatch_io.c's). The operations table is
 * dispatch.c's. */
#include "dispatch.h"

#include <errno.h>

/* ---- everything that would modify the file -------------------------------------- */

void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
	(void)parent; (void)name; (void)mode; (void)rdev;
	fuse_reply_err(req, EROFS);
}
