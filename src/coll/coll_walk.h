/*
 * coll_walk.h - the walk of a collection (coll_walk.c; the collection
 * library, no FUSE): every folder and file under the top of a backend
 * (coll_backend.h), in name order (bytewise), folders entered as they
 * are met, each file's kind decided by the one rule (by name where the
 * backend says so, S3; else the signature, coll_detect.c) unless the
 * caller's kind cache knows it (the index: a remount reads no
 * signature). Used by the tools (h5fs-ls -R, h5fs-find); the daemon
 * lists one folder at a time through the same backends.
 */
#ifndef H5FS_COLL_WALK_H
#define H5FS_COLL_WALK_H

#include "coll_backend.h"

#define COLL_WALK_MAX_DEPTH 256 /* folders inside folders: deeper is a loop or a joke */

typedef struct coll_visit {
	void *u;
	/* path: relative to the top, '/'-separated; st as the backend gave it */
	void (*folder)(void *u, const char *path, const struct coll_stat *st);
	/* a regular file (object): hdf5 says whether it is a member */
	void (*file)(void *u, const char *path, const struct coll_stat *st, bool hdf5);
	/* a folder that could not be listed ("" the top), a file whose kind
	 * could not be read: a positive errno, the words in h5_err_msg() */
	void (*error)(void *u, const char *path, int e);
	/* the kind cache (both NULL: none): kind answers 1 HDF5, 0 not, -1
	 * unknown for the file at path as st stamps it; set_kind is told
	 * each answer the walk had to read */
	int (*kind)(void *u, const char *path, const struct coll_stat *st);
	void (*set_kind)(void *u, const char *path, const struct coll_stat *st, bool hdf5);
	/* 0 walks into folders; 1 lists the top only */
	int top_only;
	/* 1: file() needs no regular file's stamp (no kind cache: every
	 * member is opened, which reads its stat then), so the backend may
	 * list without a stat per file (list_kinds; st->unstamped) */
	int unstamped;
} coll_visit;

/* Walk (be, b) from its top. 0, or the errno of listing the top itself
 * (error was called for it; folders below give theirs and the walk goes
 * on). */
int coll_walk(const struct coll_backend *be, void *b, const coll_visit *v);

/* "dir" + "/" + "name" (dir "" gives name): malloc'd, NULL when out of
 * memory. */
char *coll_path_join(const char *dir, const char *name);

#endif
