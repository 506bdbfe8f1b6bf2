/*
 * fuzz_walk.h - the mount-like walk shared by the libFuzzer target
 * (fuzz_walk.c) and the plain replay driver (replay.c).
 */
#ifndef H5FUZZ_WALK_H
#define H5FUZZ_WALK_H

#include "h5core.h"

#include <stddef.h>
#include <stdint.h>

typedef struct h5fuzz_opts {
	size_t cache_bytes;     /* engine cache budget (h5_open_opts.cache_bytes) */
	uint64_t max_read;      /* dataset bytes read per input, re-reads included */
	unsigned nthreads;      /* engine decompression threads (0: 1) */
	int verbose;            /* print every engine error to stderr */
} h5fuzz_opts;

typedef struct h5fuzz_stats {
	int open_rc;            /* h5_file_open_mem result (0 when it opened) */
	uint64_t objects, groups, datasets, links, attrs;
	uint64_t bytes_read;
	uint64_t extents, pinned; /* windows h5_dataset_extents / h5_dataset_pin served */
	uint64_t planned;       /* windows h5_dataset_map answered */
	uint64_t errors;        /* engine calls that returned an error */
	uint64_t lookup_mismatch; /* names listed by iterate that look up as another link */
	uint64_t lookup_notfound; /* names listed by iterate that lookup does not find */
} h5fuzz_stats;

void h5fuzz_default_opts(h5fuzz_opts *o);
/* Open data as an HDF5 image and walk it; aborts on a violated invariant.
 * Returns the open error, or 0 once the walk finished. */
int h5fuzz_walk(h5fuzz_stats *st, const uint8_t *data, size_t size, const h5fuzz_opts *opts);
/* The walk alone, over a file already open (several threads may walk the
 * same file at once, as FUSE threads do); seed picks the read windows. */
int h5fuzz_walk_file(h5fuzz_stats *st, h5_file *f, uint64_t seed, const h5fuzz_opts *opts);
uint64_t h5fuzz_seed(const uint8_t *data, size_t size);

#endif
