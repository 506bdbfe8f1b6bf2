/*
 * ccat.h - the catalog of a collection (issue 35): per HDF5 member, what
 * h5fs-find asks of it - every object's path in the member, its type
 * (group, dataset, named datatype, soft or external link), a dataset's
 * user.h5.dtype and user.h5.shape, and every HDF5 attribute's text as
 * getfattr shows it through a mount (src/common/xattrs.c, text mode).
 *
 * ccat_read builds a member's catalog from the open file (no FUSE, no
 * index); ccat_store and ccat_load keep it in the collection's index
 * (cindex.h: the same SQLite file a mount uses, its tables cat_member,
 * cat_object, cat_attr, and the documented views datasets, groups,
 * attributes, files: doc/h5fs-find.1), keyed by the member file's size,
 * mtime_ns and ETag as the mount's records are.
 *
 * Functions return 0 or a negative h5_err with a message.
 */
#ifndef H5FS_CCAT_H
#define H5FS_CCAT_H

#include "cindex.h"
#include "h5core.h"

enum ccat_type { CCAT_GROUP = 0, CCAT_DATASET = 1, CCAT_DATATYPE = 2, CCAT_SOFTLINK = 3, CCAT_EXTLINK = 4 };

typedef struct ccat_attr {
	char *name;             /* the HDF5 attribute's name (xattr user.NAME) */
	char *value;            /* its text as getfattr shows it (NUL-terminated) */
	size_t len;
} ccat_attr;

typedef struct ccat_obj {
	char *path;             /* in the member, as a mount shows it: "" the file's root, "g/ds" */
	int type;               /* enum ccat_type */
	char *dtype;            /* datasets: user.h5.dtype; else NULL */
	char *shape;            /* datasets: user.h5.shape ("3,4", "" scalar, "null") */
	int ndim;               /* datasets: the rank (-1 a null dataspace); else -1 */
	char *target;           /* links: soft "path", external "FILE::/path" */
	ccat_attr *attrs;
	uint32_t nattrs;
} ccat_obj;

typedef struct ccat_member {
	ccat_obj *v;
	size_t n, cap;
	char *error;            /* the file could not be read whole: why (objects read before are kept) */
} ccat_member;

/* Walk the member f from its root: objects in walk order. A group reached
 * again through a hard link to one of its own ancestors is a link (as
 * the mount shows it: a symbolic link), not walked again; names a mount
 * cannot show are skipped. An object that cannot be read sets m->error
 * and the walk goes on; only running out of memory fails. */
int ccat_read(ccat_member **out, h5_file *f);
void ccat_member_free(ccat_member *m);

/* Record m[i] for k[i] (i < n; k's view is not used), each replacing
 * that member's catalog, in one transaction. */
int ccat_store(cindex *ix, const cindex_key *k, ccat_member *const *m, size_t n);
/* Drop the catalog of each member[i] (gone from the collection), in one
 * transaction. */
int ccat_forget(cindex *ix, const char *root, const char *const *member, size_t n);

/* Every member with a catalog under root, with the stamp it was read at:
 * cb(arg, member path, stamp (key.root, .member, .size, .mtime_ns, .etag
 * set)), in the order of member paths. The strings are valid during the
 * call; ix is locked (cb must not call into it). */
int ccat_stamps(cindex *ix, const char *root, void (*cb)(void *arg, const cindex_key *k), void *arg);
/* Every catalog under root, whole: cb(arg, member path, m), m the
 * callee's to free (ccat_member_free). ix is locked during the calls. */
int ccat_load_all(cindex *ix, const char *root, void (*cb)(void *arg, const char *path, ccat_member *m),
		  void *arg);

#endif
