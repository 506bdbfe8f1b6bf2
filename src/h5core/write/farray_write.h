/* farray_write.h - the appending writer of fixed array chunk indexes
 * (farray_write.c; the structure is format/array.h's). */
#ifndef H5_WRITE_FARRAY_WRITE_H
#define H5_WRITE_FARRAY_WRITE_H

#include "base.h"
#include "file.h"
#include "array.h"
#include "chunk_rec.h"
#include "dataset.h"

/* The appending writer of fixed array chunk indexes (farray_write.c): the
 * elements in memory, set by linear index; h5_faw_write places a new data
 * block (and a new header for a dataset without one), h5_faw_commit
 * rewrites the header in place. */
typedef struct h5_faw h5_faw;
int h5_faw_open(h5_faw **out, h5_file *f, const h5_dataset *d, uint64_t idx_addr);
int h5_faw_set(h5_faw *w, uint64_t idx, const h5_chunk_rec *rec);
int h5_faw_write(h5_faw *w);
uint64_t h5_faw_addr(const h5_faw *w);
bool h5_faw_addr_is_new(const h5_faw *w);
int h5_faw_commit(h5_faw *w);
void h5_faw_invalidate(h5_faw *w);
/* After a commit that succeeded: the replaced data block into `to` with
 * the commit's ticket (cidx_write.h freed). */
void h5_faw_freed(h5_faw *w, h5_freesp *to, uint64_t ticket);
void h5_faw_free(h5_faw *w);

#endif
