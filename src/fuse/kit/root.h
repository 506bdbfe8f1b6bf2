/*
 * root.h - a root: one tree the mount shows, served through a table of
 * inode operations (the model is squashfuse's sqfs_ll inode strategies).
 *
 * A mount is a table of roots (dispatch.c). A single-FILE mount has one:
 * the member root of FILE (root_member.c, the ll*.c machinery) at the
 * mount's root. A collection (`h5fs DIR MNT`) has the folder root
 * (root_coll.c: DIR's directories and plain files) and one member root
 * per HDF5 file looked into, shown at that file's place in the folders.
 *
 * Every operation works on the root's own node ids ("local" ids; a
 * root's top directory is FUSE_ROOT_ID) and returns 0 or a positive
 * errno and fills a result; it never replies. The FUSE handlers
 * (dispatch.c) translate the request's node id to (root, local id), call
 * the operation, translate every node id and st_ino in the result back
 * to the mount's, and make the one reply. The exception is write: an
 * append answers before it is applied (write-behind, doc/APPEND.md), so
 * a root's write op replies itself (its reply carries no node id).
 */
#ifndef H5FS_ROOT_H
#define H5FS_ROOT_H

#include "fuse_ops.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

/* What a lookup leads to. */
struct root_entry {
	uint64_t ino;           /* local node id */
	uint64_t generation;    /* fuse_entry_param.generation */
	struct stat attr;       /* st_ino local too */
	double timeout;         /* entry and attribute timeout */
	/* The folder root only: the name is an HDF5 member whose tree
	 * (a member root, made by the dispatcher) is shown here. */
	bool member;
};

/* One directory entry (index i of the listing opened by opendir;
 * "." and ".." are the dispatcher's). */
struct root_dirent {
	const char *name;       /* valid until releasedir */
	uint64_t ino;           /* local st_ino */
	mode_t type;            /* S_IFDIR, S_IFREG, S_IFLNK or 0 (unknown) */
	bool member;            /* an HDF5 member (folder root) */
};

/* What a read answers with: pieces of files to splice (next > 0), an
 * iovec into memory held until read_done (niov > 0), or len bytes at
 * buf, or nothing (end of file). priv is the root's. */
struct root_read {
	const h5_extent *ext;
	size_t next;
	const struct iovec *iov;
	int niov;
	const void *buf;
	size_t len;
	void *priv;
	int tid;        /* in: the thread whose read() the request is a piece of */
};

struct root_ops {
	const char *name;
	int (*lookup)(void *r, struct root_entry *e, uint64_t parent, const char *name);
	/* the lookup READDIRPLUS makes of entry i of listing dh (name, as
	 * readdir gave it): as lookup, but a failure of the object's bytes
	 * (EIO) is not logged - the entry goes without attributes, and the
	 * kernel's own LOOKUP of it then fails and logs its one line - and
	 * what the listing knew of the entry may answer without looking the
	 * name up again; NULL: lookup */
	int (*lookup_listed)(void *r, struct root_entry *e, uint64_t parent, const char *name, void *dh, size_t i);
	/* around one READDIRPLUS reply's readdir and lookup_listed calls,
	 * by the thread that makes them (the member root: one reader
	 * section for them all); NULL: none */
	void (*batch_begin)(void *r);
	void (*batch_end)(void *r);
	void (*forget)(void *r, uint64_t ino, uint64_t nlookup);
	int (*getattr)(void *r, struct stat *st, double *timeout, uint64_t ino);
	/* *target malloc'd, the caller frees it */
	int (*readlink)(void *r, char **target, uint64_t ino);
	/* *keep: the kernel may cache the listing */
	int (*opendir)(void *r, void **dh, bool *keep, uint64_t ino);
	/* entry i of the listing: 0, or ENOENT past its end */
	int (*readdir)(void *r, struct root_dirent *d, void *dh, size_t i);
	void (*releasedir)(void *r, void *dh);
	/* fills fi (fh, direct_io, keep_cache) */
	int (*open)(void *r, struct fuse_file_info *fi, uint64_t ino);
	int (*read)(void *r, struct root_read *a, uint64_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
	void (*read_done)(void *r, struct root_read *a);
	int (*release)(void *r, uint64_t ino, struct fuse_file_info *fi);
	/* replies itself (write-behind); NULL: EROFS */
	void (*write)(void *r, fuse_req_t req, uint64_t ino, const char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi);
	int (*flush)(void *r, uint64_t ino, struct fuse_file_info *fi);
	int (*fsync)(void *r, uint64_t ino, struct fuse_file_info *fi);
	int (*fsyncdir)(void *r, uint64_t ino);                /* NULL: 0 */
	/* fallocate(2) of an open file, mode 0 or FALLOC_FL_PUNCH_HOLE |
	 * FALLOC_FL_KEEP_SIZE (the dispatcher refuses every other mode);
	 * NULL: EOPNOTSUPP */
	int (*fallocate)(void *r, uint64_t ino, int mode, uint64_t off, uint64_t len);
	/* *len the full length; buf filled when it fits in size */
	int (*listxattr)(void *r, char *buf, size_t size, size_t *len, uint64_t ino);
	int (*getxattr)(void *r, char *buf, size_t size, size_t *len, uint64_t ino, const char *name);
	/* an errno; value NULL: remove. NULL op: ENOTSUP */
	int (*setxattr)(void *r, uint64_t ino, const char *name, const char *value, size_t size, int flags);
	int (*removexattr)(void *r, uint64_t ino, const char *name);
	/* an errno; NULL op: EROFS. mkdir/symlink: the dispatcher looks the
	 * new name up for its reply */
	int (*mkdir)(void *r, uint64_t parent, const char *name);
	int (*rmdir)(void *r, uint64_t parent, const char *name);
	int (*unlink)(void *r, uint64_t parent, const char *name);
	int (*symlink)(void *r, const char *target, uint64_t parent, const char *name);
	/* create(2): NAME made, to be looked up and opened for writing by
	 * the dispatcher */
	int (*create)(void *r, uint64_t parent, const char *name);
	/* rename(2) within the root (flags: RENAME_NOREPLACE, ...); link(2):
	 * the dispatcher looks the new name up for its reply */
	int (*rename)(void *r, uint64_t parent, const char *name, uint64_t newparent, const char *newname,
		      unsigned flags);
	int (*link)(void *r, uint64_t ino, uint64_t newparent, const char *newname);
	/* setattr (FUSE_SET_ATTR_* in to_set): out the stat shown after it.
	 * NULL: only what changes nothing succeeds, else EROFS */
	int (*setattr)(void *r, struct stat *out, double *timeout, uint64_t ino, const struct stat *attr,
		       int to_set);
	/* setattr of the size: EPERM where datasets may grow, else EROFS */
	bool (*writable)(void *r);
	/* bytes and objects shown (statfs) */
	void (*usage)(void *r, uint64_t *bytes, uint64_t *objects);
	/* not used by any request in flight or open handle: may be closed */
	bool (*idle)(void *r);
	void (*start)(void *r, struct fuse_session *se);   /* after daemonizing */
	/* a collection's one watcher thread: look for changes now (NULL: none) */
	void (*tick)(void *r);
	void (*stop)(void *r);                             /* before unmounting */
	/* The root shows a file that has changed since it was made (an
	 * indexed root whose record is stale): the dispatcher closes it
	 * when nothing uses it and opens the member anew. access: asked by a
	 * request (else by the watcher). NULL: never. */
	bool (*changed)(void *r, bool access);
	void (*free)(void *r);
};

/* ---- what every root shares ---- */

/* A frozen mount (-o refresh=0, or a read-write one) changes only by its
 * own appends (which tell the kernel, behind/write.c), so the kernel may cache
 * names and attributes for long; a live one says "refresh seconds"
 * (node_timeout, live/live.c). */
#define H5FS_TIMEOUT 3600.0
#define H5FS_SYNTH_BIT ((uint64_t)1 << 63)
/* with H5FS_SYNTH_BIT: the node id of a group that it and every group
 * above it have one link (a single path), its header address + 2 below
 * (member/lookup.c show_object): the same in every mount, so a file
 * handle of it opens after the kernel dropped it (member/export.c) */
#define H5FS_DIRADDR_BIT ((uint64_t)1 << 61)
#define H5FS_NAME_MAX 255
#define H5FS_XATTR_MAX 65536    /* the kernel's XATTR_SIZE_MAX: the largest value or list it passes */
#define H5FS_BLKSIZE 131072

/* st_blocks: 512-byte units of storage, rounded up */
static inline blkcnt_t blocks_of(uint64_t bytes)
{
	return (blkcnt_t)(bytes / 512 + (bytes % 512 != 0));
}

/* Whether a name may be shown as a directory entry: 1..H5FS_NAME_MAX
 * bytes, no NUL or '/', not "." or "..". */
static inline bool name_ok(const char *name, size_t name_len)
{
	if (!name || name_len == 0 || name_len > H5FS_NAME_MAX)
		return false;
	if (strlen(name) != name_len)   /* embedded NUL */
		return false;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return false;
	return strchr(name, '/') == NULL;
}

/* A write of a root that has none (a collection's folders and plain
 * files, an operation missing from a root's table): EROFS, the one place
 * outside the pager's admission table (state/pager.c) where a write is
 * refused as read-only (root.c). */
int root_no_write(void);

/* The member root class (root_member.c): the single-FILE machinery. */
extern const struct root_ops h5fs_member_ops;

#endif
