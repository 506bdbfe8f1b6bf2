/* npystream.h - np.save through the mount (npy.c) and renames to
 * NAME.npy of a dataset holding one NPY stream (npy_rename.c). Renames
 * of bytes over a typed dataset and types set back by xattrs are the
 * member root's (member/retype.h). */
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
/* npy_move.c: a rename of the object at addr (an np.save placeholder,
 * maybe), link name of group, to newname in ngroup. hold: the open
 * stream of that object or of that name (its mu, and kept from being
 * freed), or its placeholder not opened yet (not taken meanwhile), and
 * a stream of the new name, from before the rename looks at the names
 * (names_lock: held around a placeholder's making and registering, and
 * the hold's search); release: told its new place when the object moved (addr)
 * is the placeholder (path, link of group, node parent; NULL: not
 * moved), and let go. */
void npy_names_lock(bool on);
/* npy_move.c: the placeholder this thread made last (member_create
 * notes it), and where it is now while not opened: its directory's node
 * and its name (malloc'd) - a rename may have moved it before its open */
void npy_made_note(uint64_t addr);
bool npy_made_where(h5fs *fs, uint64_t *parent, char **base);
struct npy_pending;
struct npy_hold {
	struct npy_stream *s, *d;       /* the object's (or name's); the new name's */
	struct npy_pending *p;
};
void npy_rename_hold(h5fs *fs, struct npy_hold *h, uint64_t addr, uint64_t group, const char *name, uint64_t ngroup,
		     const char *newname);
void npy_rename_release(h5fs *fs, struct npy_hold *h, uint64_t addr, uint64_t group, uint64_t parent,
			const char *path);
/* The streams' kind (commit/sched.c, registered at the first stream)
 * unregistered at the unmount (member_stop, before the scheduler stops;
 * h5fs_free's call is then nothing): complete streams still open made
 * first, the others given up by their release after it. */
void npy_kind_stop(h5fs *fs);
/* The streams' kind (commit.h struct commit_kind), registered with the
 * mount by member/setup.c */
extern const struct commit_kind npy_kind_desc;
/* npy_rename.c: rename(2) of a dataset (link src in group sgroup, node p)
 * to NAME.npy in dgroup (node np) whose bytes are one NPY stream h5fs
 * takes: dataset NAME made of it (replacing one), the old name removed,
 * *done 1. Else *done 0 (an ordinary rename). An errno, logged. */
int npy_rename(int *done, h5fs *fs, h5_file *f, const struct node *p, uint64_t sgroup, const char *name,
	       const h5_link *src, const struct node *np, uint64_t dgroup, const char *newname);
/* Dataset nm (nlen bytes) in group made of the nbytes bytes of d at
 * data_offset, as h's dtype and shape, d's modification time kept: 0 or
 * an h5_err. chunk: its chunk shape (h->rank of them; NULL: contiguous,
 * or chunked as h5py guesses with -o compress), deflate its gzip level
 * (0: -o compress's filter, if any); a chunked dataset the writer cannot
 * make (an empty one, a row of chunks too large) is made contiguous.
 * Under FILE's lock. */
struct npy_header;
int npy_make_from(uint64_t *made, h5fs *fs, h5_file *f, h5_dataset *d, const struct npy_header *h,
		  const uint64_t *chunk, unsigned deflate, uint64_t group,
		  const char *nm, size_t nlen);
/* The kernel's entries a and b (b may be NULL) of directory parent
 * dropped after the rename being answered (queued for kit/notify.c's
 * thread: the kernel holds the directory until then). */
void npy_inval_after_reply(h5fs *fs, uint64_t parent, const char *a, const char *b);
#endif
