/*
 * h5errno.h - the errno of an engine error (h5errno.c): what the daemon
 * replies and what the collection backends return. The programs' words,
 * not the engine's, as tool_exit.h's exit statuses are.
 */
#ifndef H5ERRNO_H
#define H5ERRNO_H

/* 0 for H5_OK; ENOMEM, ENOENT, ERANGE, EINVAL, EPERM (H5_ERR_PERM), EROFS,
 * EBUSY, ENOSPC; EIO for everything that means "these bytes cannot be
 * produced" (corrupt, checksum, unsupported, loops, limits, I/O). */
int h5fs_errno(int h5err);

#endif
