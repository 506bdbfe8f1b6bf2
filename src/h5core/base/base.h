/*
 * base.h - what every file of the engine uses: limits, address and overflow
 * helpers, the sizes of offsets and lengths (h5_fmt).
 *
 * Conventions (see doc/DESIGN.md):
 *  - functions return 0 or a negative h5_err code, set via h5_err_set();
 *  - outputs come first (`**out`), one `goto out` cleanup path;
 *  - decoders (h5_*_decode) take (buf, len) and never do I/O; loaders
 *    (h5_*_load / _open) do the I/O, verify, and go through the cache;
 *  - every size, count and address from disk is bounds/overflow checked.
 *  - a module's exported symbols carry its prefix; everything else is static.
 */
#ifndef H5_BASE_BASE_H
#define H5_BASE_BASE_H

#include "h5core.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define H5_ADDR_UNDEF UINT64_MAX
#define H5_UNLIMITED UINT64_MAX
#define H5_MAX_RANK 32
/* Limits that keep hostile files from recursing or allocating without bound. */
#define H5_MAX_DTYPE_DEPTH 16
#define H5_MAX_BTREE_DEPTH 64
#define H5_MAX_OHDR_CHUNKS 4096
#define H5_MAX_NAME 65535

static inline bool h5_addr_defined(uint64_t a) { return a != H5_ADDR_UNDEF; }

/* Overflow-checked arithmetic: return true on overflow. */
static inline bool h5_add_overflow(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_add_overflow(a, b, r); }
static inline bool h5_mul_overflow(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_mul_overflow(a, b, r); }
/* n rounded up to a multiple of 8 (v1 object header messages, global heap
 * objects, local heap names: the format's 8-byte alignment). */
static inline uint64_t h5_align8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }
/* The character set a new link or attribute name is stored with (IV.A.2.g,
 * IV.A.2.m): 0 ASCII, 1 UTF-8 when any byte is past 0x7f. */
static inline uint8_t h5_name_cset(const char *name, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)name[i] >= 0x80)
			return 1;
	return 0;
}

/* ---- sizes of offsets/lengths from the superblock ---------------------- */

typedef struct h5_fmt {
	uint8_t sizeof_addr;  /* 2, 4 or 8 */
	uint8_t sizeof_size;  /* 2, 4 or 8 */
} h5_fmt;

#endif
