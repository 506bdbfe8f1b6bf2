/* array.h - the extensible and fixed arrays (spec VII.C, VII.D): the
 * on-disk structures under the "earray" and "farray" chunk indexes
 * (cidx_earray.c, cidx_farray.c), their geometry, the chunk records their
 * data block elements hold (array.c), their decoders, encoders and readers;
 * their writers are write/earray_write.h and write/farray_write.h. */
#ifndef H5_ARRAY_H
#define H5_ARRAY_H

#include "base.h"
#include "cache.h"
#include "file.h"
#include "chunk_rec.h"

/* Extensible array (earray_geom.c): geometry shared by reader and writer. */
typedef struct h5_ea_geom {
	unsigned max_nelmts_bits, idx_blk_elmts, data_blk_min_elmts, sup_blk_min_data_ptrs, max_dblk_page_nelmts_bits;
	unsigned nsblks, iblock_nsblks, ndblk_addrs, nsblk_addrs, arr_off_size;
	uint64_t dblk_page_nelmts;
	uint64_t sb_ndblks[64], sb_dblk_nelmts[64], sb_start_idx[64], sb_start_dblk[64];
} h5_ea_geom;

int h5_ea_geom_init(h5_ea_geom *g, unsigned max_nelmts_bits, unsigned idx_blk_elmts,
		    unsigned data_blk_min_elmts, unsigned sup_blk_min_data_ptrs,
		    unsigned max_dblk_page_nelmts_bits);

/* Chunk-index array elements (VII.C/VII.D "Data Block Element"), shared by
 * the fixed and extensible arrays (chunk.c). Client 0 stores the chunk
 * address; client 1 the address, the chunk size (elmt_size - sizeof_addr - 4
 * bytes) and a 4-byte filter mask. */
enum { H5_ARR_CLIENT_CHUNK = 0, H5_ARR_CLIENT_FILT_CHUNK = 1 };
/* Whether (client, elmt_size) describes a valid element; H5_ERR_FORMAT if not. */
int h5_chunk_elmt_check(const h5_fmt *fmt, unsigned client, unsigned elmt_size);
/* Unfiltered elements decode with size 0 and mask 0: the chunk's size is the
 * dataset's chunk size. (client, elmt_size) must have passed the check. */
void h5_chunk_elmt_decode(h5_chunk_rec *out, const h5_fmt *fmt, unsigned client,
			  unsigned elmt_size, const uint8_t *p);
void h5_chunk_elmt_encode(uint8_t *p, const h5_fmt *fmt, unsigned client,
			  unsigned elmt_size, const h5_chunk_rec *rec);
/* Bytes libhdf5 uses for a filtered chunk's size: 1 + (log2(chunk_bytes) + 8) / 8, at most 8. */
unsigned h5_chunk_size_len(uint64_t chunk_bytes);
/* The bytes of a filtered chunk's size in the chunk index entries (fixed
 * and extensible array elements, v2 B-tree type 11 records) of a layout
 * message of version layout_version: version 4 as above; version 5
 * (format 4.0, HDF5 2.x under libver latest) a fixed "Size of Lengths",
 * so that a filter may grow a chunk past its unfiltered size (the single
 * chunk index's size field, IV.A.2.i, has always been so). */
unsigned h5_chunk_size_len_v(const h5_fmt *fmt, unsigned layout_version, uint64_t chunk_bytes);
/* The element (or record head) size an index over filtered or unfiltered
 * chunks has, and whether the stored one, elmt_size, is it: under layout
 * version 5 the stored width is taken as it is when it is one a filtered
 * element may have (1 to 8 size bytes), the Size of Offsets/Lengths
 * question being the writer's (H5_ERR_FORMAT otherwise, before anything
 * is written). */
int h5_chunk_elmt_size_ok(const h5_fmt *fmt, unsigned layout_version, bool filtered, uint64_t chunk_bytes,
			  unsigned elmt_size);
/* Called for each allocated element of an array index, in index order. */
typedef int (*h5_arr_elmt_cb)(uint64_t idx, const h5_chunk_rec *rec, void *ud);

#define H5_EA_VERSION 0
/* A decoded EAHD (VII.D). The geometry comes from the creation parameters. */
typedef struct h5_ea_hdr {
	uint64_t addr;
	uint8_t client;         /* H5_ARR_CLIENT_* */
	uint8_t elmt_size;      /* raw bytes per element */
	h5_ea_geom g;
	uint64_t nsblks_created, sblks_size, ndblks_created, dblks_size;
	uint64_t max_idx_set;   /* elements at or beyond this index were never set */
	uint64_t nelmts;        /* elements realized */
	uint64_t iblock_addr;   /* UNDEF: empty array */
} h5_ea_hdr;

/* Where element idx lives (H5EA__lookup_elmt). */
typedef struct h5_ea_loc {
	bool in_iblock;         /* idx < idx_blk_elmts: index block element `elmt` */
	unsigned sblk_idx;      /* otherwise: the super block (in the geometry) */
	bool via_sblock;        /* sblk_idx >= iblock_nsblks: through an EASB */
	uint64_t sblk_off;      /* via_sblock: slot in the index block's sblk_addrs */
	uint64_t dblk_idx;      /* slot in iblock dblk_addrs (global) or EASB dblk_addrs (local) */
	uint64_t dblk_nelmts;
	uint64_t elmt;          /* element inside the index block / data block */
	bool paged;             /* the data block is split into pages */
	uint64_t page_idx, page_elmt, page_init_bit;
} h5_ea_loc;

/* H5_ERR_RANGE when idx lies beyond what the geometry can address. */
int h5_ea_locate(h5_ea_loc *out, const h5_ea_geom *g, uint64_t idx);
/* Pages per data block of super block u (0: unpaged) and bitmap bytes per data block. */
uint64_t h5_ea_dblk_npages(const h5_ea_geom *g, unsigned u);
uint64_t h5_ea_page_init_size(const h5_ea_geom *g, unsigned u);
/* The block_offset libhdf5 writes for data block dblk_idx (the slot in its
 * owner's address array) of super block u; a super block's own is start_idx(u). */
uint64_t h5_ea_dblock_off(const h5_ea_geom *g, unsigned u, uint64_t dblk_idx);

/* On-disk sizes (checksums included); 0 on overflow. */
size_t h5_ea_hdr_size(const h5_fmt *fmt);
uint64_t h5_ea_iblock_size(const h5_ea_hdr *h, const h5_fmt *fmt);
uint64_t h5_ea_sblock_size(const h5_ea_hdr *h, const h5_fmt *fmt, unsigned u);
/* The data block image read/written as one piece: the prefix only when paged. */
uint64_t h5_ea_dblock_size(const h5_ea_hdr *h, const h5_fmt *fmt, uint64_t nelmts);
/* The whole allocation of a data block including its pages. */
uint64_t h5_ea_dblock_alloc_size(const h5_ea_hdr *h, const h5_fmt *fmt, uint64_t nelmts);
uint64_t h5_ea_page_size(const h5_ea_hdr *h);
/* Address of page p of the paged data block at dblk_addr. */
uint64_t h5_ea_page_addr(const h5_ea_hdr *h, const h5_fmt *fmt, uint64_t dblk_addr, uint64_t p);

typedef struct h5_ea_iblock {
	uint64_t addr, hdr_addr;
	uint8_t *elmts;         /* idx_blk_elmts raw elements */
	uint64_t *dblk_addrs;   /* g.ndblk_addrs */
	uint64_t *sblk_addrs;   /* g.nsblk_addrs */
} h5_ea_iblock;

typedef struct h5_ea_sblock {
	uint64_t addr, hdr_addr, block_off;
	unsigned sblk_idx;
	uint64_t ndblks;
	uint64_t npages;        /* pages per data block, 0 when unpaged */
	uint64_t page_init_size;/* bitmap bytes per data block */
	uint8_t *page_init;     /* ndblks * page_init_size, MSB first; NULL when unpaged */
	uint64_t *dblk_addrs;
} h5_ea_sblock;

typedef struct h5_ea_dblock {
	uint64_t addr, hdr_addr, block_off;
	uint64_t nelmts, npages;
	uint8_t *elmts;         /* nelmts raw elements; NULL when paged */
} h5_ea_dblock;

/* Decoders verify signature, version, client, checksum and the header
 * back-pointer; sblock/dblock also the block_offset (expect_off). */
int h5_ea_hdr_decode(h5_ea_hdr *out, const h5_fmt *fmt, uint64_t addr, const uint8_t *buf, size_t len);
int h5_ea_iblock_decode(h5_ea_iblock **out, const h5_ea_hdr *h, const h5_fmt *fmt, uint64_t addr,
			const uint8_t *buf, size_t len);
int h5_ea_sblock_decode(h5_ea_sblock **out, const h5_ea_hdr *h, const h5_fmt *fmt, uint64_t addr,
			unsigned sblk_idx, const uint8_t *buf, size_t len);
int h5_ea_dblock_decode(h5_ea_dblock **out, const h5_ea_hdr *h, const h5_fmt *fmt, uint64_t addr,
			uint64_t nelmts, uint64_t expect_off, const uint8_t *buf, size_t len);
/* A data block page is elements + checksum; this only verifies it. */
int h5_ea_page_verify(const h5_ea_hdr *h, uint64_t addr, const uint8_t *buf, size_t len);
/* Encoders fill exactly the size above (len must match) and add the checksum. */
int h5_ea_hdr_encode(uint8_t *buf, size_t len, const h5_fmt *fmt, const h5_ea_hdr *h);
int h5_ea_iblock_encode(uint8_t *buf, size_t len, const h5_ea_hdr *h, const h5_fmt *fmt, const h5_ea_iblock *b);
int h5_ea_sblock_encode(uint8_t *buf, size_t len, const h5_ea_hdr *h, const h5_fmt *fmt, const h5_ea_sblock *b);
int h5_ea_dblock_encode(uint8_t *buf, size_t len, const h5_ea_hdr *h, const h5_fmt *fmt, const h5_ea_dblock *b);
int h5_ea_page_encode(uint8_t *buf, size_t len, const h5_ea_hdr *h, const uint8_t *elmts);
void h5_ea_iblock_free(h5_ea_iblock *b);
void h5_ea_sblock_free(h5_ea_sblock *b);
void h5_ea_dblock_free(h5_ea_dblock *b);

/* Cached header (f->meta, H5_CK_EA_HDR); release with h5_cache_release(f->meta, ref). */
int h5_ea_hdr_get(const h5_ea_hdr **out, h5_cache_ref *ref, h5_file *f, uint64_t addr);
/* Element idx: out->addr UNDEF when the element was never set or its block
 * or page is not allocated. */
int h5_ea_lookup(h5_chunk_rec *out, h5_file *f, uint64_t hdr_addr, uint64_t idx);
/* Every allocated element below max_idx_set, in index order. */
int h5_ea_iterate(h5_file *f, uint64_t hdr_addr, h5_arr_elmt_cb cb, void *ud);
/* Every block of the array (header, index, super and data blocks with
 * their pages), for the space report. */
int h5_ea_blocks(h5_file *f, uint64_t hdr_addr, h5_block_cb cb, void *ud);

/* Fixed array (farray.c, VII.C). */
#define H5_FA_VERSION 0
typedef struct h5_fa_hdr {
	uint64_t addr;
	uint8_t client, elmt_size, page_bits;
	uint64_t nelmts;        /* entries in the array */
	uint64_t dblk_addr;     /* UNDEF: nothing allocated */
	/* derived (H5FA__dblock_alloc) */
	uint64_t page_nelmts;   /* 1 << page_bits */
	uint64_t npages;        /* 0: the data block holds the elements itself */
	uint64_t page_init_size;/* bytes of the page-init bitmap */
} h5_fa_hdr;

typedef struct h5_fa_dblock {
	uint64_t addr, hdr_addr;
	uint8_t *page_init;     /* page_init_size bytes, MSB first; NULL when unpaged */
	uint8_t *elmts;         /* nelmts raw elements; NULL when paged */
} h5_fa_dblock;

size_t h5_fa_hdr_size(const h5_fmt *fmt);
/* The data block image (the prefix with the bitmap only, when paged). */
uint64_t h5_fa_dblock_size(const h5_fa_hdr *h, const h5_fmt *fmt);
/* The whole allocation including pages. */
uint64_t h5_fa_dblock_alloc_size(const h5_fa_hdr *h, const h5_fmt *fmt);
uint64_t h5_fa_page_nelmts(const h5_fa_hdr *h, uint64_t p);
uint64_t h5_fa_page_addr(const h5_fa_hdr *h, const h5_fmt *fmt, uint64_t p);
int h5_fa_hdr_decode(h5_fa_hdr *out, const h5_fmt *fmt, uint64_t addr, const uint8_t *buf, size_t len);
int h5_fa_dblock_decode(h5_fa_dblock **out, const h5_fa_hdr *h, const h5_fmt *fmt, uint64_t addr,
			const uint8_t *buf, size_t len);
int h5_fa_page_verify(const h5_fa_hdr *h, uint64_t addr, uint64_t p, const uint8_t *buf, size_t len);
int h5_fa_hdr_encode(uint8_t *buf, size_t len, const h5_fmt *fmt, const h5_fa_hdr *h);
int h5_fa_dblock_encode(uint8_t *buf, size_t len, const h5_fa_hdr *h, const h5_fmt *fmt, const h5_fa_dblock *b);
int h5_fa_page_encode(uint8_t *buf, size_t len, const h5_fa_hdr *h, uint64_t p, const uint8_t *elmts);
void h5_fa_dblock_free(h5_fa_dblock *b);
int h5_fa_hdr_get(const h5_fa_hdr **out, h5_cache_ref *ref, h5_file *f, uint64_t addr);
int h5_fa_lookup(h5_chunk_rec *out, h5_file *f, uint64_t hdr_addr, uint64_t idx);
int h5_fa_iterate(h5_file *f, uint64_t hdr_addr, h5_arr_elmt_cb cb, void *ud);
/* The header and the data block (its pages included), for the space report. */
int h5_fa_blocks(h5_file *f, uint64_t hdr_addr, h5_block_cb cb, void *ud);

#endif
