/*
 * lheap.h - local heaps (lheap.c; III.D).
 */
#ifndef H5_FORMAT_LHEAP_H
#define H5_FORMAT_LHEAP_H

#include "base.h"
#include "file.h"

/* ---- local heap (lheap.c) -------------------------------------------------- */

typedef struct h5_lheap {
	uint64_t addr;
	uint64_t data_addr;
	size_t size;
	uint8_t *data;
	uint64_t free_off;
} h5_lheap;

/* Decode the fixed-size header (HEAP signature...data segment address);
 * sets data_addr, size, free_off (UNDEF when none); data stays NULL. */
int h5_lheap_decode(h5_lheap *out, const h5_fmt *fmt, const uint8_t *buf, size_t len);
int h5_lheap_get(h5_lheap **out, h5_file *f, uint64_t addr);   /* cached */
void h5_lheap_release(h5_file *f, h5_lheap *h);
/* The heap's blocks (header, data segment), for the space report. */
int h5_lheap_blocks(h5_file *f, uint64_t addr, h5_block_cb cb, void *ud);
/* The header's bytes (h5_lheap_hdr_size of them): data segment size, the
 * offset of the first free block (H5_LHEAP_FREE_NULL: none) and the data
 * segment's address. libhdf5 ends a free list with 1 (H5HL_FREE_NULL),
 * which no block can start at (blocks are 8-aligned). */
#define H5_LHEAP_FREE_NULL 1
size_t h5_lheap_hdr_size(const h5_fmt *fmt);
void h5_lheap_hdr_encode(uint8_t *buf, const h5_fmt *fmt, uint64_t size, uint64_t free_off, uint64_t data_addr);

/* NUL-terminated string at off, or NULL if off is outside the heap or the
 * string is unterminated. */
const char *h5_lheap_string(const h5_lheap *h, uint64_t off);

#endif
