/* cidx_write.h - the writers' own table of chunk indexes: what an append
 * (append.c) and the ordered commit (txn.c) do to an index, one entry per
 * index type, each beside its writer (btree1_write.c, btree2_write.c,
 * earray_write.c, farray_write.c, single_write.c, implicit_write.c); the
 * read side is dataset/cidx.h's table, which links no writer. */
#ifndef H5_WRITE_CIDX_WRITE_H
#define H5_WRITE_CIDX_WRITE_H

#include "base.h"
#include "file.h"
#include "ohdr.h"
#include "chunk_rec.h"
#include "dataset.h"
#include "freesp.h"

/* The index's part of an append (append.c): the extensible array and v1
 * B-tree writers; an index without one refuses appends (EPERM). */
typedef struct h5_cidx_write_ops {
	/* a writer over the index at idx_addr (UNDEF: create one) */
	int (*open)(void **w, h5_file *f, const h5_dataset *d, uint64_t idx_addr);
	/* the record of the chunk at scaled coordinates `scaled`, whose linear
	 * index is idx (the array order of ci, over the maximum dimensions:
	 * what the arrays use; the trees use the coordinates) */
	int (*set)(void *w, const uint64_t *scaled, uint64_t idx, const h5_chunk_rec *rec);
	/* new and copied index blocks, in new space (h5_space_alloc) */
	int (*write)(void *w);
	/* the index's address now, and whether it is new (the layout message
	 * must then point at it before the commit) */
	uint64_t (*addr)(void *w);
	bool (*addr_is_new)(void *w);
	/* where the layout message holds the index address */
	int (*addr_field)(uint64_t *field, const h5_msg *lay, const h5_fmt *fmt);
	/* NULL, or: where the index itself puts the unfiltered chunk of linear
	 * index idx (implicit, single chunk): 1 and *addr (the chunk is written
	 * there in place), 0 when it goes to new space */
	int (*place)(void *w, uint64_t idx, uint64_t *addr);
	/* NULL, or: the bytes of the switch when more than the address changes
	 * (a filtered single chunk: size, mask, address); may move *field */
	int (*switch_bytes)(void *w, const h5_fmt *fmt, uint64_t *field, uint8_t *v, size_t *len);
	/* after the layout points at a new index: in-place fixes of what the
	 * new index shares with the old (v1 B-tree sibling pointers); NULL:
	 * none */
	int (*switched)(void *w);
	/* the in-place switch to the new blocks (after the fsync) */
	int (*commit)(void *w);
	/* NULL, or: after a commit that succeeded, every block of the old
	 * index the new one no longer references (v1 B-tree nodes copied),
	 * added to `to` with the commit's ticket (space.h h5_space_free_all
	 * frees them) */
	void (*freed)(void *w, h5_freesp *to, uint64_t ticket);
	/* forget cached blocks after a failed commit */
	void (*invalidate)(void *w);
	void (*free)(void *w);
} h5_cidx_write_ops;

/* The write ops of an H5_CIDX_* type, or NULL: an index without them
 * refuses appends (EPERM). */
const h5_cidx_write_ops *h5_cidx_write_ops_of(unsigned type);

extern const h5_cidx_write_ops h5_cidx_write_btree1, h5_cidx_write_single, h5_cidx_write_implicit,
	h5_cidx_write_farray, h5_cidx_write_earray, h5_cidx_write_btree2;

#endif
