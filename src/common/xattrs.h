/*
 * xattrs.h - HDF5 attributes and dataset metadata as extended attributes
 * (naming and text rules: doc/h5fs.1, ATTRIBUTES), made from the engine's
 * data (h5_attr_value_get, h5_attr_all, h5_dataset_meta) for the daemon
 * (member/xattr.c) and the tools.
 *
 * An HDF5 attribute NAME is "user.NAME", or "user.h5.attr.NAME" when NAME
 * starts with "h5."; every other "user.h5.*" name is reserved dataset
 * metadata (user.h5.dtype, .shape, ...), so that it can never hide, or be
 * hidden by, a real attribute.
 */
#ifndef XATTRS_H
#define XATTRS_H

#include <stdbool.h>

#include "h5core.h"

/* NUL-separated list "user.a\0user.b\0..." of all xattr names for the
 * object (*out malloc'd, *len bytes including every NUL). */
int xa_list(char **out, size_t *len, h5_file *f, uint64_t addr);
/* user.h5.dtype of a number NumPy has no typestr of (h5_num_form): the
 * ml_dtypes name ("bfloat16", "float8_e4m3fn", "float8_e5m2",
 * "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn") or
 * "complex32"; NULL for H5_FORM_PLAIN. */
const char *xa_form_name(h5_num_form form);
/* Value of one xattr by full name ("user.x"); raw=1: stored bytes instead
 * of text. H5_ERR_NOTFOUND for unknown names. The result is deterministic,
 * so a size query and the read that follows agree. */
int xa_get(void **out, size_t *len, h5_file *f, uint64_t addr, const char *name, int raw);
/* Every xattr of the object at once (for a daemon that answers a walk's
 * listxattr and getxattr from memory): the list as xa_list gives it and,
 * in its order, each value as xa_get(raw) gives it, or val NULL when that
 * must be asked of xa_get (an error, which it reports; stored data or text
 * over max_value bytes; a value that does not depend on FILE alone, the
 * shape of a virtual dataset). bytes: the memory the set holds.
 * H5_ERR_LIMIT for an object of more than max_names xattrs. */
typedef struct xa_ent {
	const char *name;       /* into list */
	void *val;              /* len bytes and a NUL, or NULL */
	size_t len;
} xa_ent;
typedef struct xa_set {
	char *list;
	size_t list_len;
	xa_ent *v;
	size_t n;
	size_t bytes;
} xa_set;
int xa_all(xa_set **out, h5_file *f, uint64_t addr, int raw, size_t max_value, size_t max_names);
void xa_set_free(xa_set *s);

/* What a write (setxattr, removexattr) of xattr name means (doc/h5fs.1,
 * MODIFYING): attribute attr (*len bytes and a NUL; room for XATTR_NAME_MAX) of
 * "user.NAME" / "user.h5.attr.NAME"; XA_W_TYPED for
 * "user.h5.new.TYPE.NAME" (a new attribute of NumPy number type TYPE, into
 * typestr); XA_W_RESERVED for every other user.h5.* name (read-only
 * metadata); XA_W_OTHER for names outside user. (or an empty NAME). */
enum xa_write_kind { XA_W_ATTR, XA_W_TYPED, XA_W_RESERVED, XA_W_OTHER };
enum xa_write_kind xa_write_name(const char *name, char attr[256], size_t *len, char typestr[8]);
/* Whether KEY (of user.h5.KEY) is one of a dataset's description keys
 * (dtype, shape, maxshape, chunks, filters, fill, layout, descr, text). */
bool xa_meta_key(const char *key);

#endif
