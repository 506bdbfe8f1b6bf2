/*
 * layout.h - the data layout message (layout.c; IV.A.2.i).
 */
#ifndef H5_FORMAT_LAYOUT_H
#define H5_FORMAT_LAYOUT_H

#include "base.h"
#include "ohdr.h"

enum { H5_LAYOUT_COMPACT = 0, H5_LAYOUT_CONTIGUOUS = 1, H5_LAYOUT_CHUNKED = 2, H5_LAYOUT_VIRTUAL = 3 };
enum {
	H5_CIDX_BTREE1 = 0,     /* layout v1-v3 (v4 never stores 0) */
	H5_CIDX_SINGLE = 1,
	H5_CIDX_IMPLICIT = 2,
	H5_CIDX_FARRAY = 3,
	H5_CIDX_EARRAY = 4,
	H5_CIDX_BTREE2 = 5
};
#define H5_LAYOUT_FLAG_NO_FILTER_EDGE 0x01   /* v4 "don't filter partial edge chunks" */
#define H5_LAYOUT_FLAG_SINGLE_FILTERED 0x02

typedef struct h5_layout {
	uint8_t version;
	uint8_t cls;            /* H5_LAYOUT_* */
	/* compact */
	uint8_t *compact;       /* copy of the raw data */
	size_t compact_size;
	/* contiguous */
	uint64_t addr;          /* UNDEF when never allocated */
	uint64_t size;
	/* chunked */
	unsigned ndims;                 /* dataset rank (the element-size dim of v1-v3 removed) */
	uint64_t chunk[H5_MAX_RANK];    /* chunk dims in elements */
	uint32_t chunk_elem_size;       /* v1-v3: trailing dimension (element size) */
	uint8_t flags;                  /* v4 flags */
	uint8_t idx_type;               /* H5_CIDX_* */
	uint64_t idx_addr;              /* index address (single: the chunk) */
	uint64_t single_size;           /* single, filtered: chunk size on disk */
	uint32_t single_mask;           /* single, filtered: filter mask */
	uint8_t fa_page_bits;
	uint8_t ea_max_bits, ea_idx_elmts, ea_min_ptrs, ea_min_elmts, ea_page_bits;
	uint32_t bt2_node_size;
	uint8_t bt2_split, bt2_merge;
	uint8_t dim_enc_size;           /* v4: bytes per chunk dimension */
	/* virtual (v4+): global heap object holding the VDS mapping */
	uint64_t vds_heap_addr;
	uint32_t vds_heap_index;
} h5_layout;

int h5_layout_decode(h5_layout *out, const h5_fmt *fmt, const uint8_t *buf, size_t len);
void h5_layout_clear(h5_layout *l);
/* The one vocabulary of layout and chunk index names (user.h5.layout,
 * user.h5.index, h5fs-ls): "compact", ...; "btree1", "single", "implicit",
 * "farray", "earray", "btree2"; "unknown" for other values. */
const char *h5_layout_class_name(unsigned cls);
/* (h5_layout_index_name is the index table's: dataset/cidx.h) */
/* File address of the extensible array index address inside the stored
 * layout message lay (v4, chunked, earray), for appends. */
int h5_layout_bt1_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt);
int h5_layout_ea_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt);
int h5_layout_bt2_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt);
int h5_layout_fa_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt);
int h5_layout_single_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt);

#endif
