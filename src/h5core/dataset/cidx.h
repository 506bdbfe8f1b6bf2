/* cidx.h - chunk indexes as a table of operations, like libhdf5's
 * H5D_chunk_ops_t: one file per index (cidx_<name>.c) with one
 * h5_cidx_ops, the table in cidx.c. chunk.c keeps the chunk grid, the
 * dispatch and the read machinery; earray.c, farray.c, btree1.c and
 * btree2.c stay the on-disk structures the indexes sit on.
 *
 * Adding an index: a new cidx_<name>.c with its h5_cidx_ops, one line in
 * cidx.c's table, and its H5_CIDX_* value decoded in layout.c; appends to
 * it are its writer's h5_cidx_write_ops (write/cidx_write.h).
 */
#ifndef H5_CIDX_H
#define H5_CIDX_H

#include "array.h"
#include "base.h"
#include "file.h"
#include "ohdr.h"
#include "btree2.h"
#include "chunk_rec.h"
#include "dataset.h"

#include <pthread.h>

#define CHUNK_DROP_MAX 256

struct h5_chunk_index {
	h5_dataset *d;
	h5_file *f;
	uint8_t type;               /* H5_CIDX_* */
	const struct h5_cidx_ops *ops; /* the table entry of that type (cidx.c) */
	unsigned rank;
	uint32_t esize;             /* element bytes */
	uint64_t chunk_bytes;
	bool filtered;              /* the dataset has a filter pipeline */
	uint64_t chunk[H5_MAX_RANK];
	uint64_t dims[H5_MAX_RANK];
	uint64_t nchunks[H5_MAX_RANK];      /* over the current dimensions */
	uint64_t max_chunks[H5_MAX_RANK];   /* over the maximum ones (H5_UNLIMITED kept) */
	/* linear index = sum scaled[perm[i]] * down[i] (FA, EA, implicit) */
	unsigned perm[H5_MAX_RANK];
	uint64_t down[H5_MAX_RANK];
	uint64_t max_nchunks;       /* FA, implicit: entries of the array */
	h5_bt2 *bt2;                /* BTREE2 */
	unsigned bt2_size_len;      /* type 11: bytes of the chunk size */
	unsigned bt1_elem;          /* BTREE1: last key dimension (the element size) */
	/* sequential streams (under stream_lock) */
	pthread_mutex_t stream_lock;
	uint64_t pf_last_off, pf_last_end;  /* the stream's furthest read */
	uint64_t pf_hole_lo, pf_hole_hi;    /* what it skipped, not read yet */
	uint64_t drop[CHUNK_DROP_MAX];      /* chunks a stream has read to their end, */
	unsigned drop_head, drop_len, drop_keep; /* oldest first: dropped from the cache
					     * when more than drop_keep wait (chunk.c) */
	/* remote read-ahead (chunk_stream.c, under stream_lock): chunks in
	 * row-major order below ra_next were hinted to the byte source;
	 * ra_win chunks from ra_cur (the first of the row the stream reads)
	 * are wanted (0: no stream yet) */
	uint64_t ra_next, ra_win, ra_cur;
	/* prefetching (under the lock of f->pool, pool.h) */
	uint64_t pf_upto;           /* stream bytes below this were scheduled */
	unsigned pf_active;         /* jobs of this index queued or running */
};

/* One allocated chunk met by an index walk: its scaled coordinates (rank
 * entries) and its record (unfiltered chunks: size may be 0). */
typedef int (*h5_cidx_iter_cb)(const uint64_t *scaled, const h5_chunk_rec *rec, void *ud);

typedef struct h5_cidx_ops {
	uint8_t type;           /* H5_CIDX_* (layout.c) */
	const char *name;       /* h5_layout_index_name(): "btree1", "earray", ... */
	/* Validate the index against the dataset (ci's grid is set) and open
	 * what lookups need; the index address may be undefined (no chunk yet).
	 * nunlim: unlimited dimensions, unlim: the last of them or -1. */
	int (*open)(h5_chunk_index *ci, int nunlim, int unlim);
	/* The record of the chunk at scaled coordinates (out preset to "never
	 * written"); called only with a defined index address. */
	int (*lookup)(h5_chunk_rec *out, h5_chunk_index *ci, const uint64_t *scaled);
	/* Bytes of the allocated chunks (st_blocks), with a defined address. */
	int (*allocated)(uint64_t *out, h5_chunk_index *ci);
	/* Every allocated chunk, in the index's own order, with a defined
	 * address; cb returns non-zero to stop (that value is returned). */
	int (*iterate)(h5_chunk_index *ci, h5_cidx_iter_cb cb, void *ud);
	/* The index's own blocks (B-tree nodes, array blocks and pages, not
	 * the chunks), with a defined address; NULL: it has none (single,
	 * implicit). For the space report (space_report.c). */
	int (*blocks)(h5_chunk_index *ci, h5_block_cb cb, void *ud);
	void (*close)(h5_chunk_index *ci);      /* NULL: nothing to release */
} h5_cidx_ops;

/* The table entry of an H5_CIDX_* type, or NULL. */
const h5_cidx_ops *h5_cidx_ops_of(unsigned type);
/* Its name ("btree1", "earray", ...; "unknown"): what describe.c, meta.c
 * and the append refusals print. */
const char *h5_layout_index_name(unsigned idx_type);

extern const h5_cidx_ops h5_cidx_btree1, h5_cidx_single, h5_cidx_implicit, h5_cidx_farray, h5_cidx_earray,
	h5_cidx_btree2;

/* ---- shared by the index files (cidx.c) ---- */
/* The array headers must agree with the dataset (client 1 = filtered). */
int h5_cidx_check_client(const h5_chunk_index *ci, unsigned client, const char *what, uint64_t addr);
/* Linearisation for the array indexes; unlim first when >= 0 (EA). */
int h5_cidx_set_down(h5_chunk_index *ci, int unlim);
int h5_cidx_linear(uint64_t *out, const h5_chunk_index *ci, const uint64_t *scaled);
/* The inverse: scaled coordinates of linear index idx (FA, EA, implicit). */
void h5_cidx_unlinear(uint64_t *scaled, const h5_chunk_index *ci, uint64_t idx);
/* The iterate op of the array indexes over h5_fa_iterate / h5_ea_iterate. */
typedef int (*h5_arr_iterate_fn)(h5_file *f, uint64_t hdr_addr, h5_arr_elmt_cb cb, void *ud);
int h5_cidx_arr_iterate(h5_chunk_index *ci, h5_arr_iterate_fn walk, h5_cidx_iter_cb cb, void *ud);
/* The allocated op of the array indexes: the bytes of every chunk walk
 * finds (stored sizes when filtered). */
int h5_cidx_arr_allocated(uint64_t *out, h5_chunk_index *ci, h5_arr_iterate_fn walk);

struct alloc_sum {
	const h5_chunk_index *ci;
	uint64_t total;
};

static inline void sum_add(struct alloc_sum *s, uint64_t n)
{
	s->total = s->total > UINT64_MAX - n ? UINT64_MAX : s->total + n;
}

#endif
