/* chunk_int.h - what the chunk files share (chunk.c: the grid and decoded
 * chunks; chunk_walk.c: windows over them; layout_chunked.c). */
#ifndef H5_CHUNK_INT_H
#define H5_CHUNK_INT_H

#include "cidx.h"

/* Whether chunk `scaled` is stored filtered: libhdf5 stores partial edge
 * chunks unfiltered when the layout asks for it. */
bool h5_chunk_is_filtered(const h5_chunk_index *ci, const uint64_t *scaled);
/* The decoded chunk rec (allocated, filtered) in f->chunks, decoded now if
 * missing, held in *ref (h5_cache_release); *data its chunk_bytes bytes. */
int h5_chunk_get(h5_cache_ref *ref, const uint8_t **data, h5_chunk_index *ci, const h5_chunk_rec *rec);
/* The chunked layout's map op (chunk_walk.c): b's window cut into
 * pieces in one walk of the index. */
struct h5_plan_build;
int h5_chunk_cut(struct h5_plan_build *b);

#endif
