/* overwrite.h - what overwrite.c (the buffer of written extents, the
 * contiguous and compact layouts, the public calls) shares with
 * chunk_rewrite.c (read-modify-write of the chunks an overwrite touches,
 * committed through the index writers). doc/OVERWRITE.md. */
#ifndef H5_OVERWRITE_H
#define H5_OVERWRITE_H

#include "base.h"
#include "file.h"
#include "dataset.h"
#include "freesp.h"

/* Bytes [off, off + len) of the dataset's stream, written by the user. */
typedef struct h5_ow_ext {
	uint64_t off;
	size_t len, cap;
	uint8_t *p;
} h5_ow_ext;

/* The extents ext[0..n) (in the order written) as m disjoint ranges in
 * offset order, each byte holding its last value; free with h5_ow_free.
 * Written in place, every byte is then written once, with its new value
 * (an extent written over by a later one would otherwise show its bytes
 * to a crash in between); and the bytes a chunk gets can be counted. */
int h5_ow_merge(h5_ow_ext **out, size_t *m, const h5_ow_ext *ext, size_t n);
void h5_ow_free(h5_ow_ext *r, size_t m);

/* Chunked: apply the extents ext[0..n) in order (a later one over an
 * earlier one wins) to the chunks they touch and commit them in one
 * ordered commit (txn.c); called under f->write_lock. *last_end: the
 * allocation end after the previous commit of this writer (reserve
 * sizing), updated. What the commit replaced (chunks, index blocks) is
 * added to gone with the commit's ticket (space.h h5_space_free_all).
 * Returns 0 or a negative h5_err; on an error FILE holds the old state or
 * the complete new one (and nothing is added to gone). */
int h5_ow_chunked_commit(h5_dataset *d, const h5_ow_ext *ext, size_t n, bool durable, uint64_t *last_end,
			 h5_freesp *gone);

/* Whether chunked d can be rewritten (its index has writers, its filters
 * encoders): 0 or H5_ERR_UNSUPPORTED with the reason. */
int h5_ow_chunked_check(const h5_dataset *d);

#endif
