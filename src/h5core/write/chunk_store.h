/* chunk_store.h - the one place a chunk's new bytes reach FILE and its
 * record reaches the index writer (issue 81 item 3): every writer of
 * chunked data goes through it - the append stream (append_stage.c), the
 * overwriter's commit and its whole chunks (chunk_rewrite.c,
 * chunk_whole.c) and np.save's compressed arrays (dset_create.c). (The
 * unmount's move of the last chunk, chunk_rewrite.c h5_file_compact,
 * copies a stored chunk only where freed space lies below it: a move, no
 * new bytes.)
 *
 * Where the bytes go: an unfiltered chunk the index places itself
 * (implicit, single chunk: wops->place) is written there; the others
 * take new space, written whole before anything references it (space.c
 * h5_space_take: freed space first, else the end; or the end alone,
 * h5_space_alloc, for a writer that reserved its batch there). Then each
 * record is set on the index writer, in the items' order, when one is
 * given; the caller's ordered commit (txn.c) makes them reachable. */
#ifndef H5_WRITE_CHUNK_STORE_H
#define H5_WRITE_CHUNK_STORE_H

#include "base.h"
#include "file.h"
#include "chunk_rec.h"
#include "cidx_write.h"

typedef struct h5_cstore_item {
	const uint8_t *img;     /* the chunk as stored (encoded when filtered) */
	size_t len;
	uint32_t mask;          /* its filter mask */
	const uint64_t *scaled; /* its scaled coordinates (set) */
	uint64_t idx;           /* its linear index, the arrays' order (place, set) */
	h5_chunk_rec rec;       /* out: where it went, as the index records it */
} h5_cstore_item;

typedef struct h5_cstore {
	h5_file *f;
	const h5_cidx_write_ops *wops;
	void *w;                /* the index writer; NULL: the records are only made */
	uint64_t cb;            /* an unfiltered chunk's bytes */
	bool filtered;
	/* the items in one extent (one write: the appends' and np.save's
	 * runs), else each where it fits (an overwrite's scattered chunks
	 * reuse freed holes) */
	bool run;
	bool at_end;            /* new space at the allocation end only */
	bool locked;            /* the caller holds f->write_lock */
} h5_cstore;

/* Items [0, n) written and recorded: 0, or a negative h5_err with *done
 * (may be NULL) the items fully recorded before it. A record an index
 * carries: filtered, the stored size and mask; placed, the chunk's size;
 * else size 0, as the appends record it. */
int h5_cstore_put(size_t *done, const h5_cstore *s, h5_cstore_item *it, size_t n);

#endif
