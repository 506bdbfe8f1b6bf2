/* npy_int.h - the state of np.save's streams, shared by npy.c (the
 * streams) and npy_move.c (a placeholder renamed while its stream is
 * open). Private to those two. */
#ifndef H5FS_NPY_INT_H
#define H5FS_NPY_INT_H

#include "commit.h"
#include "npy.h"
#include "npystream.h"

#define HEAD_MAX (1 << 20)      /* an NPY header is at most 4 GiB long in 2.0; we take 1 MiB */

struct npy_pending {
	struct npy_pending *next;
	uint64_t addr;          /* the placeholder's object header */
	uint64_t group;         /* its group's */
	uint64_t parent;        /* the group's node */
	char *name;             /* NAME.npy */
	unsigned holds;         /* a rename of it under way (npy_move.c): not taken meanwhile */
};

struct npy_stream {
	bool placeholder_deleted;       /* np.save over NAME: its link went first */
	/* np.save over NAME: the array made under NAME.npy, not yet moved
	 * over NAME (a failure between the two leaves it there: removed with
	 * the placeholder, as its own) */
	bool tmp_made;
	uint64_t tmp_addr;
	uint64_t addr;          /* the placeholder's object header */
	uint64_t group, parent;
	char *name;
	/* in fs->npy_taken (under fs->lock) while open; holds: renames of
	 * its placeholder under way (npy_move.c), waited for before it goes */
	struct npy_stream *tnext;
	unsigned holds;
	uint8_t *head;          /* the first bytes, until the header parses */
	size_t hlen;
	npy_header h;
	bool known, holding, done;
	bool demoted;           /* not a stream h5fs makes a dataset of: bytes (npy_demote) */
	bool has_mtime;         /* a time set on the placeholder: the dataset's (npy_set_mtime) */
	int64_t mtime;
	uint64_t made;          /* the dataset's header, once done */
	char why[160];
	int err;                /* kept: the next write, fsync and close fail with it */
	struct gen *g;          /* the generation it writes through (held) */
	h5_dset_writer *dw;
	uint8_t *fbuf;          /* Fortran order: the data, till all is in */
	uint64_t fgot;
	pthread_mutex_t mu;
	/* in its kind's list (under kind->t.mu): listed; every byte in, the
	 * dataset not made: counted */
	struct npy_kind *kind;
	struct npy_stream *knext;
	bool listed, counted;
};

/* npy_move.c: whether the placeholder (or the array made in its place,
 * tmp_addr) is link base of the stream's group (by its address: a new
 * np.save may hold a name it had) */
bool npy_placeholder_at(struct npy_stream *s, const char *base);
/* npy_move.c: the stream out of fs->npy_taken, once no rename holds it
 * (before it is freed, or demoted to bytes) */
void npy_taken_leave(h5fs *fs, struct npy_stream *s);

#endif
