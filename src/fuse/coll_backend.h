/*
 * coll_backend.h - where a collection's files come from: a table of
 * backends (coll_backend.c), one file per backend: coll_local.c (a local
 * DIR: readdir + fstatat), coll_s3.c (s3://BUCKET/PREFIX/: ListObjectsV2
 * per folder). Transport-free: a backend lists one directory,
 * stats one entry, and opens a file's bytes as a byte source or as an
 * HDF5 file; root_coll.c decides what is shown. Paths are relative to the
 * collection's top ("" is the top, "a/b.h5" a file two levels down).
 * Every call returns 0 or a positive errno.
 */
#ifndef H5FS_COLL_BACKEND_H
#define H5FS_COLL_BACKEND_H

#include "h5core.h"
#include "source.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct h5fs_config;     /* fuse_ops.h */
/* h5fs_log_cfg (ll_log.c) */
typedef void (*coll_log_fn)(const struct h5fs_config *cfg, int prio, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

struct coll_stat {
	bool is_dir;
	bool is_file;           /* a regular file (or object); neither: not shown */
	uint64_t size;
	int64_t mtime_ns;
	mode_t mode;            /* permission bits, as stored (0 when none) */
	uid_t uid;
	gid_t gid;
	char etag[72];          /* objects: the ETag ("" for local files) */
	/* local files: what else says the file changed (a rewrite by rename
	 * keeps size and mtime but not the inode; the live-file rules); 0
	 * for objects */
	int64_t ctime_ns;
	uint64_t ino;
	/* The backend tells HDF5 members by their name (S3: a signature
	 * read would be a GET per object): member says which. false: the
	 * signature decides (root_coll.c reads it). */
	bool by_name;
	bool member;
};

struct coll_dirent {
	char *name;
	struct coll_stat st;
};

struct coll_backend {
	const char *name;
	/* true if this backend serves spec (a path, s3://bucket/prefix/, ...);
	 * the local one takes everything, so it is last in the table */
	bool (*matches)(const char *spec);
	int (*open)(void **b, const char *spec, const h5_open_opts *oo);
	void (*close)(void *b);
	/* the entries of directory path (malloc'd array and names) */
	int (*list)(void *b, struct coll_dirent **out, size_t *n, const char *path);
	int (*stat)(void *b, struct coll_stat *st, const char *path);
	/* the file's bytes (plain files, the signature search) */
	int (*open_source)(void *b, h5_source **out, const char *path);
	/* the file as HDF5, with the collection's open options (context,
	 * tree of related files, writability) */
	int (*open_member)(void *b, h5_file **out, const char *path, const h5_open_opts *oo);
	/* where related files of a member may lie (ext_root), or NULL */
	const char *(*tree)(void *b);
	/* the mount's settings, once it has them (-o refresh: how long a
	 * listing is kept; -o h5_suffixes) and the daemon's logger (passed,
	 * so that a backend links without the daemon: test_collection).
	 * NULL: none needed */
	void (*configure)(void *b, const struct h5fs_config *cfg, coll_log_fn log);
};

/* The backend serving spec (never NULL: the local one). */
const struct coll_backend *coll_backend_of(const char *spec);
void coll_dirents_free(struct coll_dirent *d, size_t n);

extern const struct coll_backend coll_local;
extern const struct coll_backend coll_s3;

#endif
