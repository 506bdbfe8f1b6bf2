/*
 * chunk.h - chunked datasets (chunk.c) and their streams (chunk_stream.c).
 */
#ifndef H5_DATASET_CHUNK_H
#define H5_DATASET_CHUNK_H

#include "base.h"
#include "chunk_rec.h"
#include "dataset.h"

/* Look up chunk `scaled` (chunk coordinates, dataset rank entries). */
int h5_chunk_index_open(h5_chunk_index **out, h5_dataset *d);
void h5_chunk_index_close(h5_chunk_index *ci);
int h5_chunk_lookup(h5_chunk_rec *out, h5_chunk_index *ci, const uint64_t *scaled);
/* Total bytes of allocated chunks (st_blocks). */
int h5_chunk_allocated(uint64_t *out, h5_chunk_index *ci);
/* Read [off, off+len) of a chunked dataset. */
int h5_chunk_read(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len);
/* Decode chunk `scaled` into f->chunks unless it is there (no-op for
 * unallocated or unfiltered chunks): what a prefetch worker does. */
int h5_chunk_decode(h5_chunk_index *ci, const uint64_t *scaled);
/* Sequential streams (chunk_stream.c). note: whether a read of [off,
 * off+len) continues a stream of a filtered dataset, scheduling the chunks
 * ahead if so; drop: chunks such a read has passed (drop-behind); forget:
 * the index is being closed (queued jobs dropped, running ones waited for). */
bool h5_chunk_stream_note(h5_dataset *d, uint64_t off, size_t len);
void h5_chunk_stream_drop(h5_chunk_index *ci, const uint64_t *passed, unsigned n);
/* keep: how many passed chunks drop-behind keeps (ci's geometry set). */
unsigned h5_chunk_stream_keep(const h5_chunk_index *ci);
void h5_chunk_stream_forget(h5_chunk_index *ci);

#endif
