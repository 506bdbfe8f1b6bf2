/*
 * root_index.h - the collection index on the daemon's side
 * (root_index.c): recording a member root's tree through its ops, and
 * the indexed root class that answers from a recorded tree. The database
 * itself is cindex.h. Private to src/fuse.
 */
#ifndef H5FS_ROOT_INDEX_H
#define H5FS_ROOT_INDEX_H

#include "root.h"
#include "cindex.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

/* Deeper than any tree worth indexing (a walk deeper gives up: the member
 * is then served live, unrecorded). */
#define INDEX_MAX_DEPTH 256
/* Nodes of one member's record at most (a bigger member is served live). */
#define INDEX_MAX_NODES 2000000

/* Walk the member root (ops, r) from its top as find and getfattr do and
 * return its tree (sealed). 0 or a positive errno. A name whose lookup
 * gives EIO for the file's bytes (index_bytes_err: a corrupt object
 * header, a cycle) is recorded as an error node with the engine's reason,
 * answered EIO by the indexed root without opening the member; any other
 * error of the walk (EIO of a failed read, an xattr or a listing that
 * fails, ENOMEM) leaves the member unrecorded, so that the error is the
 * live root's to give, every time. Objects of other files (external links
 * shown in place) are recorded as shown; the caller keeps those files'
 * stamps with the record (coll_index_record). */
int index_record(cindex_tree **out, const struct root_ops *ops, void *r, size_t max_nodes);

/* Whether an engine error code (h5_err_code) is about the file's bytes,
 * the same at every reading of them at one stamp (corrupt, a checksum, a
 * feature not supported, a cycle), not a failed read or a lack of memory:
 * what the index may remember as the file's answer. */
bool index_bytes_err(int h5code);

/* The key's view: what of the mount (and of the member file, file_mode)
 * changes the tree shown. */
void index_view(char *buf, size_t size, const h5fs_config *cfg, mode_t file_mode);

/* How an indexed root gets at its member when it needs the file: open
 * gives the live root (a dataset opened for its bytes); on_write (may be
 * NULL) is told of the first open for writing (the record is stale from
 * then: drop it); changed (may be NULL: never) says whether the member's
 * file is no longer the one recorded (or is gone), asked by a live mount
 * at most once per refresh interval; free releases arg with the root. */
struct index_live {
	int (*open)(void *arg, const struct root_ops **ops, void **r);
	void (*on_write)(void *arg);
	bool (*changed)(void *arg);
	void (*free)(void *arg);
	/* logs one line for an EIO answered from an error node (may be
	 * NULL): path the node's in the member, why its recorded reason */
	void (*eio)(void *arg, const char *path, const char *why);
	void *arg;
};

/* An indexed root over t (which it then owns, as it owns live->arg),
 * showing uid and gid. 0 or a positive errno (t and arg then freed). */
int index_root_new(void **out, cindex_tree *t, const h5fs_config *cfg, uid_t uid, gid_t gid,
		   const struct index_live *live);

extern const struct root_ops h5fs_indexed_ops;

#endif
