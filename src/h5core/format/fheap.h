/*
 * fheap.h - fractal heaps (fheap.c; III.G).
 */
#ifndef H5_FORMAT_FHEAP_H
#define H5_FORMAT_FHEAP_H

#include "base.h"
#include "file.h"

/* ---- fractal heap (fheap.c) ------------------------------------------------ */

typedef struct h5_fheap h5_fheap;
int h5_fheap_open(h5_fheap **out, h5_file *f, uint64_t addr);
void h5_fheap_close(h5_fheap *h);
/* Object bytes for a heap ID (tiny, managed or huge). *out is malloc'd. */
int h5_fheap_read(uint8_t **out, size_t *out_len, h5_fheap *h, const uint8_t *id, size_t id_len);
size_t h5_fheap_id_len(const h5_fheap *h);
/* Every block of the heap for the space report: the header, its
 * free-space manager, the managed direct and indirect blocks, the
 * huge-object B-tree and the huge objects it indexes. */
int h5_fheap_blocks(h5_fheap *h, h5_block_cb cb, void *ud);
/* A huge object whose ID holds its address ("directly accessed", no
 * B-tree): its extent; *addr UNDEF for every other ID (their storage is
 * h5_fheap_blocks'). */
int h5_fheap_id_extent(uint64_t *addr, uint64_t *len, h5_fheap *h, const uint8_t *id, size_t id_len);

/* ---- encoding a whole heap (fheap_enc.c) ------------------------------------ */

/* What a heap is made with (its header's parameters), and the huge
 * objects a replacement heap carries over from the heap it replaces (their
 * IDs and their v2 B-tree stay valid: the objects are not moved). */
typedef struct h5_fheap_params {
	uint16_t id_len, width, max_heap_bits, start_root_rows;
	uint32_t max_man_size;
	uint64_t start_block_size, max_direct_size;
	bool checksum_dblocks, filtered;
	uint64_t next_huge_id, huge_bt2_addr, huge_nobjs, huge_size;
} h5_fheap_params;

int h5_fheap_params_get(h5_fheap_params *p, const h5_fheap *h);
/* An upper bound of the bytes h's managed objects take, block prefixes
 * included (III.G: "Amount of Allocated Managed Space in Heap" less "Free
 * Space in Managed Blocks", within the managed address space). */
uint64_t h5_fheap_managed_bytes(const h5_fheap *h);
/* A lower bound of the object bytes h5_fheap_build places in a heap made
 * with p when no object is longer than max_obj: what the blocks it may
 * use hold, less max_obj - 1 per block (an object does not span blocks).
 * 0 when p cannot make a heap. */
uint64_t h5_fheap_capacity(const h5_fheap_params *p, const h5_fmt *fmt, size_t max_obj);
/* The image (*img, malloc'd, *len bytes) of a heap whose header is at base
 * and whose blocks follow it, holding the n objects objs[i] (lens[i]
 * bytes, each a managed object); their heap IDs (id_len bytes each) into
 * ids. */
int h5_fheap_build(uint8_t **img, size_t *len, uint8_t *ids, const h5_fheap_params *p, const h5_fmt *fmt,
		   uint64_t base, const uint8_t *const *objs, const size_t *lens, size_t n);

#endif
