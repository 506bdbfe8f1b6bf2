/*
 * fheap_int.h - what fheap.c (heap IDs: tiny, huge and managed objects,
 * the walk down the doubling table) shares with fheap_block.c (the
 * header, indirect and direct blocks: decoders on (buf, len) and their
 * cached loaders), spec III.G "Disk Format: Level 1G - Fractal Heap".
 */
#ifndef H5_FHEAP_INT_H
#define H5_FHEAP_INT_H

#include "base.h"
#include "file.h"
#include "pline.h"
#include "fheap.h"

#define FH_TINY_LEN_SHORT 16u       /* longest tiny object of the 'normal' form */
#define FH_FLAG_CHECKSUM_DBLOCKS 0x02
#define FH_MAX_ROWS 65              /* max_heap_bits <= 64 */
#define FH_MAX_DIRECT_SIZE ((uint64_t)1 << 31) /* libhdf5's H5HF_MAX_DIRECT_SIZE_LIMIT */


/* The decoded header (the cached H5_CK_FHEAP_HDR object). */
typedef struct fh_hdr {
	uint64_t addr;
	h5_fmt fmt;
	uint16_t id_len;
	uint16_t filter_len;
	uint8_t flags;
	uint32_t max_man_size;
	uint64_t next_huge_id;
	uint64_t huge_bt2_addr;
	uint64_t man_size;          /* size of the managed linear address space */
	uint64_t man_alloc, man_free;       /* bytes of its direct blocks, free in them */
	uint64_t man_nobjs, huge_nobjs, tiny_nobjs;
	uint64_t huge_size;
	uint16_t width;
	uint64_t start_block_size;
	uint64_t max_direct_size;
	uint16_t max_heap_bits;
	uint16_t start_root_rows;
	uint64_t root_addr;
	uint16_t curr_root_rows;    /* 0: root_addr is a direct block */
	uint64_t root_filt_size;    /* filtered heaps: root direct block on disk */
	uint64_t hdr_size;          /* bytes of the header, filter information included */
	uint64_t fs_addr;           /* the heap's free-space manager (III.H), or UNDEF */
	uint32_t root_filt_mask;
	bool filtered;
	h5_pline pline;
	/* derived, as libhdf5's H5HF__hdr_finish_init and H5HF__dtable_init */
	unsigned heap_off_size;     /* bytes of a heap offset (IDs and block prefixes) */
	unsigned heap_len_size;     /* bytes of a managed object length in IDs */
	unsigned start_bits, first_row_bits;
	unsigned max_root_rows, max_direct_rows;
	uint64_t num_id_first_row;  /* heap bytes addressed by row 0 */
	uint64_t row_block_size[FH_MAX_ROWS];
	uint64_t row_block_off[FH_MAX_ROWS];
	unsigned dblock_overhead;   /* direct block prefix bytes */
	bool tiny_extended;
	bool huge_direct;
	unsigned huge_id_size;
} fh_hdr;

/* What a cached indirect or direct block was loaded for. Both start with
 * it, so one check (fheap_block.c) tells a pointer that disagrees. */
typedef struct fh_blk {
	uint64_t addr;
	uint64_t heap_addr;
	uint64_t block_off;         /* the block's offset in the heap's address space */
	uint64_t extent;            /* rows (FHIB) or bytes (FHDB) */
} fh_blk;

/* A decoded indirect block (H5_CK_FHEAP_IBLOCK). */
typedef struct fh_iblock {
	fh_blk b;                   /* first */
	unsigned nrows;
	size_t nents;               /* nrows * width */
	uint64_t *child;            /* nents addresses (UNDEF: not allocated) */
	uint64_t *filt_size;        /* filtered heaps: direct entries only */
	uint32_t *filt_mask;
} fh_iblock;

/* A verified, unfiltered direct block (H5_CK_FHEAP_DBLOCK). */
typedef struct fh_dblock {
	fh_blk b;                   /* first */
	size_t size;
	uint8_t *data;              /* the whole block, prefix included */
} fh_dblock;

struct h5_fheap {
	h5_pinned pin;              /* first: the header stays cached while open */
	const fh_hdr *hdr;
};

static inline unsigned fh_log2(uint64_t v)
{
	unsigned b = 0;

	while (v >>= 1)
		b++;
	return b;
}

/* The doubling-table geometry and ID layout of a header whose stored
 * parameters are set (its decoder's last step; fheap_enc.c's first). */
int h5_fh_hdr_derive(fh_hdr *h);
/* Bytes of a header (without its I/O filter information), and of an
 * indirect block of nrows rows: what the decoders check and the encoder
 * (fheap_enc.c) lays out. */
size_t h5_fh_hdr_fixed_size(const h5_fmt *fmt);
uint64_t h5_fh_iblock_bytes(const fh_hdr *h, unsigned nrows);

/* The header's cache loader and destructor (an h5_cache_load_fn whose ud is
 * an h5_block_load), for h5_pinned_open(). */
int h5_fh_hdr_load(void **obj, size_t *cost, void *udp);
void h5_fh_hdr_free(void *obj);

/* The cached indirect block at addr with nrows rows / direct block of size
 * bytes, checked against what the pointer reaching it expects (the heap,
 * rows or size, and the block's heap offset); *ref is released by the
 * caller (h5_cache_release). disk_size and mask: filtered heaps only. */
int h5_fh_iblock_get(const fh_iblock **out, h5_cache_ref *ref, h5_fheap *fh, uint64_t addr, unsigned nrows,
		     uint64_t block_off);
int h5_fh_dblock_get(const fh_dblock **out, h5_cache_ref *ref, h5_fheap *fh, uint64_t addr, uint64_t size,
		     uint64_t block_off, uint64_t disk_size, uint32_t mask);

#endif
