/*
 * coll_index.h - a collection's use of its persistent index
 * (coll_index.c; the database is cindex.h, recording and the indexed root
 * root_index.h). Every function does nothing (or answers "unknown") when
 * ci is NULL: a mount with -o noindex, or whose index could not be
 * opened. Private to src/fuse.
 */
#ifndef H5FS_COLL_INDEX_H
#define H5FS_COLL_INDEX_H

#include "root_index.h"

struct slot;

/* A file of the collection as its backend stats it: what keys its record
 * (size, mtime_ns, etag), and what the tree shown of it depends on
 * (permission bits, owner). */
struct member_stamp {
	uint64_t size;
	int64_t mtime_ns;
	char etag[72];          /* objects: the ETag; "" local files */
	int64_t ctime_ns;       /* local files (not in the record's key): */
	uint64_t ino;           /* a live mount's look for changes */
	mode_t mode;
	uid_t uid;
	gid_t gid;
};

struct coll_index;

/* Opens the member at path live (coll_mount.c's one place members are
 * opened), for slot s. 0 or a positive errno. */
typedef int (*coll_open_fn)(void *coll, h5fs **out, const char *path, struct slot *s);
/* Stats the file at path as DIR's backend sees it now (no descriptor
 * opened: fstatat, or an S3 folder listing): 0 or a positive errno. */
typedef int (*coll_stamp_fn)(void *coll, struct member_stamp *ms, const char *path);

/* The index of the collection at dir, by cfg (index_path, noindex), whose
 * files stamp(coll, ...) stats (members, and the files their trees
 * reach): 0 always; *out NULL when there is none (a log line said why,
 * unless -o noindex). */
int coll_index_open(struct coll_index **out, const char *dir, const h5fs_config *cfg, coll_stamp_fn stamp,
		    void *coll);
void coll_index_close(struct coll_index *ci);

/* What the file at path (DIR-relative) was when last seen with this
 * stamp: 1 HDF5, 0 not, -1 unknown (read its signature, then say). */
int coll_index_kind(struct coll_index *ci, const char *path, const struct member_stamp *ms);
void coll_index_set_kind(struct coll_index *ci, const char *path, const struct member_stamp *ms, bool hdf5);
/* A member whose bytes could not be read as HDF5 at this stamp (the
 * backend's EBADMSG): remembered with why, so that a remount answers EIO
 * and logs why without opening it; coll_index_unreadable gives 1 and
 * *why (malloc'd) when so, else 0. */
void coll_index_set_unreadable(struct coll_index *ci, const char *path, const struct member_stamp *ms,
			       const char *why);
int coll_index_unreadable(char **why, struct coll_index *ci, const char *path, const struct member_stamp *ms);

/* Drop what the index holds of folder's files that present(arg, name, f)
 * says are gone (a listing of folder); present sees the kind the index
 * has of each file and the stamp it was said at (cindex_prune). */
void coll_index_prune(struct coll_index *ci, const char *folder,
		      int (*present)(void *arg, const char *name, const cindex_file *f), void *arg);
/* Drop the member's records (it was opened for writing: it changes). */
void coll_index_forget(struct coll_index *ci, const char *path);

/* The indexed root of the member at path when its record matches ms and
 * every file its tree reaches is as recorded (the index's stamp): 0 with
 * *ops and *r (which opens the member with open(coll, ..., s) when a
 * dataset's bytes are wanted, drops the record at the first open for
 * writing, and on a live mount says it is stale (root op changed) when
 * the stamp no longer gives ms, or a file its tree reaches changed),
 * else ENOENT (open it live) or another errno. */
int coll_index_root(struct coll_index *ci, const struct root_ops **ops, void **r, const char *path,
		    const struct member_stamp *ms, coll_open_fn open, struct slot *s);

/* Walk the member just opened live (ops, r; its file f) and record its
 * tree under before, the stamp it was opened at, with the stamps of the
 * files the walk reached (h5_file_related_reached: external links' targets
 * followed in place, VDS sources a lookup opens); after (NULL: not known)
 * is its stamp once walked: a file that changed meanwhile is not
 * recorded, nor is one whose tree reaches a file numbered in the order it
 * was reached or that cannot be stat'ed without opening it. */
void coll_index_record(struct coll_index *ci, const char *path, const struct member_stamp *before,
		       const struct member_stamp *after, const struct root_ops *ops, void *r, h5_file *f);

#endif
