/* decode_common.h - the chunk list and the unshuffle the decode floors of
 * bench/ share (decode_floor.c, fuse_decode_floor.c). */
#ifndef H5FS_BENCH_DECODE_COMMON_H
#define H5FS_BENCH_DECODE_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One compressed chunk: where it is in FILE and its bytes, in memory. */
struct dchunk {
	uint64_t off, size;
	uint8_t *z;
};

extern struct dchunk *chunks;
extern size_t nchunks;

/* Read LIST's "OFFSET SIZE" lines (one a chunk, in dataset order) and each
 * chunk's bytes from PATH into `chunks`; 0, or -1 with a message. */
int load_chunks(const char *path, FILE *list);

/* dst[len] = the unshuffle of src[len] for ES-byte elements (HDF5's
 * shuffle filter undone). */
void unshuffle(uint8_t *dst, const uint8_t *src, size_t len, size_t es);

#endif
