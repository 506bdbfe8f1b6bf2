/*
 * chunk_rec.h - one chunk as an index records it.
 */
#ifndef H5_INDEX_CHUNK_REC_H
#define H5_INDEX_CHUNK_REC_H

#include "base.h"

typedef struct h5_chunk_rec {
	uint64_t addr;          /* UNDEF: not allocated (reads as fill) */
	uint64_t size;          /* bytes on disk */
	uint32_t filter_mask;
} h5_chunk_rec;

#endif
