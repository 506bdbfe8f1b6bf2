/* retype.h - a byte dataset made a typed one again: renamed over a
 * dataset of another type (rename_keep.c, sed -i, an editor's save) or
 * given its type back by the user.h5.* xattrs a copy sets (retype.c).
 * Both make the dataset as np.save's stream does (behind/npystream.h
 * npy_make_from). */
#ifndef H5FS_RETYPE_H
#define H5FS_RETYPE_H

#include "commit.h"

/* rename_keep.c: a byte dataset (src, in group sgroup of node p) renamed
 * over dataset dst (newname in nu's group, node np) of another type:
 * made that type again from its bytes, dst's attributes kept (*done 1),
 * or refused with EPERM and a log line, FILE unchanged; 0 and *done 0:
 * an ordinary rename. Under FILE's lock. */
int rename_keep(int *done, h5fs *fs, const struct use *nu, const struct node *p, uint64_t sgroup, const char *name,
		const h5_link *src, const struct node *np, const char *newname, const h5_link *dst);
/* rename_keep.c: the attributes of dataset from made again on dataset to
 * (scalar strings, numbers of a NumPy type), but those named in skip (a
 * NULL-ended list: attributes the caller makes itself); 0, or an h5_err
 * (an attribute h5fs cannot make again: H5_ERR_UNSUPPORTED, why in
 * h5_err_msg). Under FILE's lock. */
int keep_attrs_copy(h5_file *f, uint64_t from, uint64_t to, const char *const *skip);
/* rename_keep.c: the text of byte dataset sd made a dataset of
 * variable-length UTF-8 strings (h5py's string_dtype), one per line (1-D:
 * as many as there are lines, *count), of shape dims[0..rank), linked as
 * name in group grp (*made); 0, or an h5_err (why in h5_err_msg: a NUL
 * byte, another count of lines). Under FILE's lock. */
int keep_strings_make(uint64_t *made, uint64_t *count, h5_file *f, h5_dataset *sd, unsigned rank, const uint64_t *dims,
		      uint64_t grp, const char *name, size_t nlen);
/* retype.c: user.h5.KEY (dtype, shape, descr, the other storage keys)
 * set to value (NULL: removed) on node n (bytes: a 1-D |u1 dataset of
 * one link, on which any key starts a request): recorded, made when
 * complete on a dataset no descriptor has open; 0 or an errno (logged,
 * decided before the answer), -1: not a type set back (the caller's
 * rules). retype_closed:
 * at the release of n's last descriptor, the request made when none
 * writes it. */
int retype_note(h5fs *fs, struct node *n, const char *key, const char *value, size_t size, bool bytes);
void retype_closed(h5fs *fs, struct node *n);
/* Whether retype.c made the dataset at addr of f lately: its rename
 * drops the kernel's entry of the new name after the answer. */
bool retype_made(const h5_file *f, uint64_t addr);
/* Whether retype.c made the dataset at addr of fs lately from a shape
 * alone (|u1, no user.h5.dtype came before it on a closed file): a dtype
 * of that size set after it makes it again with that dtype (setfattr
 * of the shape, then of |i1 or |b1). */
bool retype_provisional(const h5fs *fs, uint64_t addr);
/* Renames and removals hold this (shared, before commit_begin) while a
 * request is made; an open of a node with a request (after counting
 * itself in n->opens) waits for one being made. */
void retype_names_hold(bool on);
/* Whether n's bytes were made a typed dataset (a new object under its
 * name): its xattr requests answer ESTALE, so that the kernel, whose
 * entry of the name is dropped only after the reply that made it, looks
 * the name up again and asks the new dataset (setfattr of the dtype
 * after the shape made it, rsync -X's user.* names after the shape). */
bool retype_gone(struct node *n);
void retype_open_wait(struct node *n);

#endif
