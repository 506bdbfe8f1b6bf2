/*
 * coll_backend.h - where a collection's files come from (the collection
 * library, src/coll: no FUSE): a table of backends (coll_backend.c), one
 * file per backend: coll_local.c (a local DIR: readdir + fstatat),
 * coll_s3.c (s3://BUCKET/PREFIX/: ListObjectsV2 per folder).
 * Transport-free: a backend lists one directory, stats one entry, and
 * opens a file's bytes as a byte source or as an HDF5 file; what a file
 * is (coll_detect.c) and the walk (coll_walk.h) are the library's, what
 * is shown the daemon's (root_coll.c) and the tools'. Paths are relative
 * to the collection's top ("" is the top, "a/b.h5" a file two levels
 * down). Every call returns 0 or a positive errno (h5fs_errno of
 * src/common/h5errno.h: the one mapping of engine errors).
 */
#ifndef H5FS_COLL_BACKEND_H
#define H5FS_COLL_BACKEND_H

#include "h5core.h"
#include "source.h"
#include "h5errno.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Where a backend's notices go (syslog priorities): the daemon's log, a
 * tool's stderr. */
typedef void (*coll_log_fn)(void *arg, int prio, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* What of a mount's (or a tool's) settings a backend follows. */
struct coll_settings {
	unsigned refresh;       /* s: how long a listing is kept; 0 for good */
	const char *h5_suffixes;        /* S3 member names; NULL or "": H5_SUFFIXES_DEFAULT */
	coll_log_fn log;        /* NULL: no notices */
	void *log_arg;
};

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
	uint64_t dev;           /* local: with ino, a folder met twice (a symlink loop) */
	/* The backend tells HDF5 members by their name (S3: a signature
	 * read would be a GET per object): member says which. false: the
	 * signature decides (root_coll.c reads it). */
	bool by_name;
	bool member;
	/* listed by list_kinds without a stat: a regular file whose size,
	 * mtime, mode, owner and inode are unknown (0) */
	bool unstamped;
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
	/* the same, for a caller that needs no regular file's stamp (a
	 * tool's walk that opens every member anyway): regular files as the
	 * listing itself tells them (local: getdents' d_type), unstamped, no
	 * stat each; others as list gives them. NULL: list */
	int (*list_kinds)(void *b, struct coll_dirent **out, size_t *n, const char *path);
	int (*stat)(void *b, struct coll_stat *st, const char *path);
	/* the file's bytes (plain files, the signature search) */
	int (*open_source)(void *b, h5_source **out, const char *path);
	/* the file as HDF5, with the collection's open options (context,
	 * tree of related files, writability): EMEDIUMTYPE when it is no
	 * HDF5 at all (no signature: an index remembers that), EBADMSG when
	 * its bytes are no HDF5 h5fs reads (corrupt, cut short, unsupported:
	 * what the file is, which an index may remember too), EIO when it
	 * cannot be read now; the reason in h5_err_msg() */
	int (*open_member)(void *b, h5_file **out, const char *path, const h5_open_opts *oo);
	/* whether this process may write the file (local: access W_OK);
	 * NULL: never (objects) */
	bool (*may_write)(void *b, const char *path);
	/* where related files of a member may lie (ext_root), or NULL */
	const char *(*tree)(void *b);
	/* the mount's (tool's) settings, once it has them (-o refresh: how
	 * long a listing is kept; -o h5_suffixes; the logger). st is copied.
	 * NULL: none needed */
	void (*configure)(void *b, const struct coll_settings *st);
};

/* The backend serving spec (never NULL: the local one). */
const struct coll_backend *coll_backend_of(const char *spec);
void coll_dirents_free(struct coll_dirent *d, size_t n);
/* The collection's identity (its index's root key, the default index
 * file's name): a URL as given with one trailing '/', a local folder by
 * its real path. malloc'd; NULL with errno. */
char *coll_canonical(const char *spec);
/* The engine error of an errno, for a message kept with h5_err_set. */
int coll_h5err(int e);

/* Is the file HDF5 (coll_detect.c)? The format signature at 0, 512, 1024,
 * 2048, ... below size (II.A "Format Signature": a user block before the
 * superblock), read from src: the one rule of the daemon and the tools. */
bool coll_sig_hdf5(h5_source *src, uint64_t size);
/* The same for the file at path of backend (be, b): opens its bytes. 0 or
 * a positive errno (the file could not be read at all). */
int coll_detect(bool *hdf5, const struct coll_backend *be, void *b, const char *path, uint64_t size);

extern const struct coll_backend coll_local;
extern const struct coll_backend coll_s3;

/* A member's file just opened by a backend's open_member (rc: its
 * h5_file_open's): a copy cut short (the superblock's end-of-file address
 * past the file's end) is closed and H5_ERR_FORMAT, as libhdf5 and a
 * single-file mount refuse it, so the member is listed and shown as not
 * readable with that reason rather than failing object by object. */
int coll_member_checked(h5_file **f, int rc);

#endif
