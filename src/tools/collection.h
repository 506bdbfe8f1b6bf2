/* collection.h - collections as the tools see them (issue 25 item 6,
 * issue 35): a local DIR or an S3 prefix s3://BUCKET/PREFIX/ opened
 * through the collection library's backends (src/coll) and walked by
 * its walk (coll_walk.h: members by the one rule, as h5fs DIR MNT and
 * h5fs s3://... MNT show them), plus the progress line on a terminal.
 * What is printed is h5fs-ls.c's and h5fs-find.c's. */
#ifndef H5FS_COLLECTION_H
#define H5FS_COLLECTION_H

#include "h5core.h"
#include "coll_walk.h"
#include "cindex.h"

#include <stdbool.h>

#include <stdint.h>

struct tool_kinds;

typedef struct ls_visit {
	void *u;
	/* path: relative to the collection's top, '/'-separated */
	void (*folder)(void *u, const char *path);
	/* -R, before a member is opened: 1 when its entries were printed from
	 * the index (it is not opened), else 0 (NULL: none are) */
	int (*listed)(void *u, const char *path, const struct coll_stat *st);
	/* a member: f is open (NULL and rc < 0 when it could not be opened,
	 * the message in h5_err_msg(); transient: for a reason that may pass,
	 * a remote object that could not be fetched, rather than what the
	 * member is); the walk closes f afterwards. Members are opened only
	 * with -R (recursive) or locally, else f is NULL, rc 0. */
	void (*member)(void *u, const char *path, const struct coll_stat *st, h5_file *f, int rc, bool transient);
	void (*plain)(void *u, const char *path, uint64_t size);
	/* a folder that could not be listed (path "" for the top) */
	void (*error)(void *u, const char *path, int rc);
} ls_visit;

typedef struct ls_coll_opts {
	const h5_open_opts *open;  /* how members are opened (S3 endpoint, ...) */
	const char *suffixes;      /* S3: member names (NULL: H5_SUFFIXES_DEFAULT) */
	int recursive;             /* into folders, and members opened */
	struct tool_kinds *tk;     /* the index's kinds (NULL: signatures read) */
} ls_coll_opts;

/* 1 if name is a collection the tools list as one: an existing directory
 * or s3://BUCKET/ with an optional PREFIX/ (ending in '/'). */
int coll_is_collection(const char *name);

/* The backend of top opened with the tools' settings (members read-only,
 * logs to stderr as "prog: ..."): 0 or a negative h5_err with the
 * backend's words. */
int tool_coll_open(const struct coll_backend **be, void **b, const char *top, const h5_open_opts *oo,
		   const char *suffixes, const char *prog);

/* Walks top in name order (h5fs-ls). 0, or the error of listing top
 * itself (the top's error callback was called, folders below give theirs
 * and the walk goes on). */
int ls_coll_walk(const char *top, const ls_coll_opts *o, const ls_visit *v);

/* The progress line: on stderr while a walk lasts more than a second
 * (H5FS_LS_PROGRESS_AFTER_MS moves the second), when stderr is a
 * terminal. tick is called per entry with the counts so far; clear takes
 * the line away before other output. */
void coll_progress_start(const char *prog);
void coll_progress_tick(unsigned long folders, unsigned long files, unsigned long members,
			const char *doing);
void coll_progress_clear(void);

/* The kind cache of a tool's walk: the index's file table (what a mount
 * keeps), read in one query before the walk, so that a known file's
 * signature is not read (the walk's kind hook: tool_kind), and the kinds
 * the walk had to read (set_kind: tool_kind_set), recorded after it in
 * one transaction (tool_kinds_store). */
struct tool_kind_ent {
	char *path;
	struct coll_stat st;
	bool hdf5;
};
typedef struct tool_kinds {
	cindex *ix;
	const char *root;               /* the index's key of the collection */
	const char *prog;               /* for messages */
	struct tool_kind_ent *known;    /* the index's, path order */
	size_t nknown, capn;
	struct tool_kind_ent *read;     /* read by the walk */
	size_t nread, capr;
} tool_kinds;
void tool_kinds_load(tool_kinds *tk, cindex *ix, const char *root, const char *prog);
/* 1 HDF5, 0 not, -1 unknown (not known at this stamp) */
int tool_kind(const tool_kinds *tk, const char *path, const struct coll_stat *st);
void tool_kind_set(tool_kinds *tk, const char *path, const struct coll_stat *st, bool hdf5);
void tool_kinds_store(tool_kinds *tk);
void tool_kinds_free(tool_kinds *tk);
/* The index key of a member of root at stamp st (view ""). */
cindex_key tool_key(const char *root, const char *path, const struct coll_stat *st);

#define TOOL_PARAMS 32   /* byte-source options kept at most */

/* -o a,b=c: what the daemon's -o of the same names does (doc/h5fs.1):
 * the byte-source classes' options (h5_source_param) are kept in order
 * in params[0..TOOL_PARAMS] (arg's pieces), NULL-terminated, for
 * oo->source_params; h5_suffixes= into *suffixes. 0, or -1 with a line
 * on stderr. */
int tool_parse_o(const char *progname, h5_open_opts *oo, char **params, size_t *nparams, char **suffixes,
		 char *arg);

#endif
