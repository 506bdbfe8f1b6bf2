/* earray_write.h - the appending writer of extensible array chunk indexes
 * (earray_write.c; the structure is format/array.h's). */
#ifndef H5_WRITE_EARRAY_WRITE_H
#define H5_WRITE_EARRAY_WRITE_H

#include "base.h"
#include "file.h"
#include "array.h"
#include "chunk_rec.h"

/* Appending writer (earray_write.c; used by append.c, doc/APPEND.md). Elements are
 * set on private copies of the blocks; h5_eaw_write() then places every
 * changed block as a NEW block in new space (space.c) and writes it, and
 * h5_eaw_commit() rewrites the header in place - the one switch from
 * the old array to the new. A new array (hdr_addr UNDEF) gets its header
 * written by h5_eaw_write(); the caller then points the layout at it. */
typedef struct h5_ea_cparam {
	uint8_t client, elmt_size;
	uint8_t max_nelmts_bits, idx_blk_elmts, data_blk_min_elmts, sup_blk_min_data_ptrs,
		max_dblk_page_nelmts_bits;
} h5_ea_cparam;
typedef struct h5_eaw h5_eaw;
int h5_eaw_open(h5_eaw **out, h5_file *f, uint64_t hdr_addr, const h5_ea_cparam *cp);
int h5_eaw_set(h5_eaw *w, uint64_t idx, const h5_chunk_rec *rec);
int h5_eaw_write(h5_eaw *w);
int h5_eaw_commit(h5_eaw *w);
/* Drop the cache entries of the header and of every block replaced. */
void h5_eaw_invalidate(h5_eaw *w);
/* After a commit that succeeded: the blocks it copied into `to` with the
 * commit's ticket (cidx_write.h freed). */
void h5_eaw_freed(h5_eaw *w, h5_freesp *to, uint64_t ticket);
const h5_ea_hdr *h5_eaw_hdr(const h5_eaw *w);
bool h5_eaw_hdr_is_new(const h5_eaw *w);
void h5_eaw_free(h5_eaw *w);

#endif
