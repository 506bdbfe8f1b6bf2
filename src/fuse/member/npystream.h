/* npystream.h - np.save through the mount (npy.c) and renames to
 * NAME.npy of a dataset holding one NPY stream (npy_rename.c). */
#ifndef H5FS_NPYSTREAM_H
#define H5FS_NPYSTREAM_H

#include "commit.h"

/* npy.c: np.save through the mount. A placeholder registered by create,
 * taken by the handle that opens it (NULL: none; g: the generation it
 * writes through), its writes, close's
 * flush and fsync (the dataset made once every byte is in), the last
 * close. */
struct npy_stream;
void npy_pending_add(h5fs *fs, uint64_t addr, uint64_t group, uint64_t parent, const char *path);
struct npy_stream *npy_stream_take(h5fs *fs, uint64_t addr, struct gen *g);
void npy_pending_free(h5fs *fs);
/* npy_write: 0, an errno, or NPY_DEMOTE: the stream is no NPY h5fs
 * makes a dataset of (not NPY, Fortran order, a structured dtype, ...)
 * and is the bytes themselves, which npy_demote hands back (the first
 * *hlen bytes written, malloc'd; the rest of the write is past them) as
 * it frees s: the placeholder, a uint8 dataset NAME.npy, takes them as
 * cp's new files do. */
#define NPY_DEMOTE (-1)
int npy_write(h5fs *fs, struct npy_stream *s, const char *buf, size_t size, off_t off);
void npy_demote(h5fs *fs, struct npy_stream *s, uint8_t **head, size_t *hlen);
/* A modification time set on a placeholder whose stream is open (cp -p
 * sets it before close): kept for the dataset the stream makes, or set
 * on it when made already. 0 or an errno (logged). */
int npy_set_mtime(h5fs *fs, struct npy_stream *s, int64_t sec);
int npy_flush(h5fs *fs, struct npy_stream *s, bool closing);
void npy_release(h5fs *fs, struct npy_stream *s);
/* npy_rename.c: rename(2) of a dataset (link src in group sgroup, node p)
 * to NAME.npy in dgroup (node np) whose bytes are one NPY stream h5fs
 * takes: dataset NAME made of it (replacing one), the old name removed,
 * *done 1. Else *done 0 (an ordinary rename). An errno, logged. */
int npy_rename(int *done, h5fs *fs, h5_file *f, const struct node *p, uint64_t sgroup, const char *name,
	       const h5_link *src, const struct node *np, uint64_t dgroup, const char *newname);
/* Dataset nm (nlen bytes) in group made of the nbytes bytes of d at
 * data_offset, as h's dtype and shape, d's modification time kept: 0 or
 * an h5_err. Under FILE's lock. */
struct npy_header;
int npy_make_from(uint64_t *made, h5fs *fs, h5_file *f, h5_dataset *d, const struct npy_header *h, uint64_t group,
		  const char *nm, size_t nlen);
/* The kernel's entries a and b (b may be NULL) of directory parent
 * dropped after the rename being answered (queued for kit/notify.c's
 * thread: the kernel holds the directory until then). */
void npy_inval_after_reply(h5fs *fs, uint64_t parent, const char *a, const char *b);
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
/* retype.c: user.h5.KEY (dtype, shape, descr, the other storage keys)
 * set to value (NULL: removed) on node n (bytes: a 1-D |u1 dataset of
 * one link, on which a dtype or descr starts a request): recorded, made
 * when complete on a dataset no descriptor has open; 0 or an errno
 * (logged), -1: not a type set back (the caller's rules). retype_closed:
 * at the release of n's last descriptor, the request made when none
 * writes it. */
int retype_note(h5fs *fs, struct node *n, const char *key, const char *value, size_t size, bool bytes);
void retype_closed(h5fs *fs, struct node *n);
/* Whether retype.c made the dataset at addr of f lately: its rename
 * drops the kernel's entry of the new name after the answer. */
bool retype_made(const h5_file *f, uint64_t addr);
/* Renames and removals hold this (shared, before commit_begin) while a
 * request is made; an open of a node with a request (after counting
 * itself in n->opens) waits for one being made. */
void retype_names_hold(bool on);
void retype_open_wait(struct node *n);

#endif
