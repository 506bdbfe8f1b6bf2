/*
 * initio.h - FUSE_DIRECT_IO_ALLOW_MMAP asked for on libfuse 3.14 (initio.c).
 */
#ifndef H5FS_INITIO_H
#define H5FS_INITIO_H

struct fuse_session;

/* se's reads and writes of /dev/fuse go through initio.c from now on
 * (after fuse_session_mount, before the loop): 0, or libfuse's -errno.
 * Nothing where libfuse asks for the flag itself or cannot be given its
 * own I/O. */
int initio_attach(struct fuse_session *se);

#endif
