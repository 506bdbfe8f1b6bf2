/* collection.h - the walk of a collection for h5fs-ls (issue 25 item 6):
 * a local DIR (members known by their signature, as h5fs DIR MNT shows
 * them) or an S3 prefix s3://BUCKET/PREFIX/ (members known by their
 * suffix, one ListObjectsV2 per folder, as h5fs s3://... MNT shows them).
 * The walk only finds entries; what is printed is h5fs-ls.c's. */
#ifndef H5FS_COLLECTION_H
#define H5FS_COLLECTION_H

#include "h5core.h"

#include <stdint.h>

typedef struct coll_visit {
	void *u;
	/* path: relative to the collection's top, '/'-separated */
	void (*folder)(void *u, const char *path);
	/* a member: f is open (NULL and rc < 0 when it could not be opened,
	 * the message in h5_err_msg()); the walk closes f afterwards. Members
	 * are opened only when opened is set (-R), else f is NULL, rc 0. */
	void (*member)(void *u, const char *path, uint64_t size, h5_file *f, int rc);
	void (*plain)(void *u, const char *path, uint64_t size);
	/* a folder that could not be listed (path "" for the top) */
	void (*error)(void *u, const char *path, int rc);
} coll_visit;

typedef struct coll_opts {
	const h5_open_opts *open;  /* how members are opened (S3 endpoint, ...) */
	const char *suffixes;      /* S3: member names (NULL: H5_SUFFIXES_DEFAULT) */
	int recursive;             /* into folders, and members opened */
} coll_opts;

/* 1 if name is a collection h5fs-ls lists as one: an existing directory
 * or s3://BUCKET/ with an optional PREFIX/ (ending in '/'). */
int coll_is_collection(const char *name);
/* Walks top in name order. 0, or the error of listing top itself (the
 * top's error callback was called, folders below give theirs and the walk
 * goes on). A progress line is kept on stderr while the walk lasts more
 * than a second, when stderr is a terminal; coll_progress_clear() takes
 * it away before other output (h5fs-ls calls it before each line). */
int coll_walk(const char *top, const coll_opts *o, const coll_visit *v);
void coll_progress_clear(void);

#endif
