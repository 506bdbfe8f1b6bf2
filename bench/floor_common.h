/* floor_common.h - what the FUSE floor programs of bench/ share (fuse_floor,
 * fuse_read_floor, tree_floor): the session set up and looped as h5fs's
 * daemon does it, and the sized reply of xattr requests. Each floor is
 * built with it: cc -O2 FLOOR.c floor_common.c $(pkg-config --cflags --libs fuse3)
 */
#ifndef H5FS_BENCH_FLOOR_COMMON_H
#define H5FS_BENCH_FLOOR_COMMON_H

#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>

/* Mount a session answering with `ops` on `mnt`, with the FUSE options
 * `opts` (as after -o; NULL for none), call `mounted(mnt)` once it is
 * mounted (NULL for nothing), and loop as h5fs does (multithreaded, 10 idle
 * threads, no clone_fd) until unmounted or signalled. `prog` is argv[0].
 * Returns main()'s exit status: 0, or 1 when the session failed. */
int floor_run(const char *prog, const struct fuse_lowlevel_ops *ops, const char *opts, const char *mnt,
	      void (*mounted)(const char *mnt));

/* Answer a getxattr or listxattr of `size` bytes whose value is buf[len]:
 * the length when size is 0, ERANGE when too small, else the bytes. */
void floor_reply_xattr(fuse_req_t req, const char *buf, size_t len, size_t size);

/* max_read of the read floors (fuse_read_floor, fuse_decode_floor), as
 * h5fs's */
#define FLOOR_MAX_READ 1024000u

/* floor_run's `mounted` for the read floors: the mount's read_ahead_kb
 * raised to four FLOOR_MAX_READ requests, as h5fs's main.c does */
void floor_raise_readahead(const char *mnt);

#endif
