/*
 * btree1.h - version 1 B-trees (btree1.c; III.A.1).
 */
#ifndef H5_FORMAT_BTREE1_H
#define H5_FORMAT_BTREE1_H

#include "base.h"
#include "file.h"

/* ---- version 1 B-trees (btree1.c) ----------------------------------------- */

typedef struct h5_bt1_node {
	uint64_t addr;
	uint8_t type;           /* 0 group, 1 raw data chunks */
	uint8_t level;
	uint16_t n;             /* entries used */
	uint64_t left, right;
	uint64_t *child;        /* n */
	/* type 0: n+1 keys, heap offsets of names */
	uint64_t *name_off;
	/* type 1: n+1 keys */
	uint32_t *chunk_size;
	uint32_t *filter_mask;
	uint64_t *offsets;      /* (n+1) * ndims offsets: key i at offsets[i * ndims] */
	unsigned ndims;         /* offsets per key = dataset rank + 1 (as stored; last is 0) */
} h5_bt1_node;

/* chunk_ndims_plus1 == 0: the caller expects a group node (type 0); else a
 * chunk node (type 1) with that many 64-bit offsets per key. A node of the
 * other type is H5_ERR_FORMAT. h5_bt1_get also checks entries used <= 2K. */
int h5_bt1_decode(h5_bt1_node **out, const h5_fmt *fmt, unsigned chunk_ndims_plus1,
		  const uint8_t *buf, size_t len);
int h5_bt1_get(h5_bt1_node **out, h5_file *f, uint64_t addr, unsigned chunk_ndims_plus1);
void h5_bt1_release(h5_file *f, h5_bt1_node *n);
void h5_bt1_free(h5_bt1_node *n);

/* The encoder of a group node (type 0; write/link_stab.c): n children and
 * n + 1 keys (local heap offsets of names), into a buffer of
 * h5_bt1_group_size bytes, the room for 2K children as libhdf5 allocates
 * every node; the rest zero. */
size_t h5_bt1_group_size(const h5_fmt *fmt, unsigned k);
/* Bytes of any node as libhdf5 allocates it (III.A.1: room for 2K
 * children and 2K + 1 keys, H5B__create): K is the superblock's group
 * internal node K for group nodes (chunk_ndims_plus1 == 0), its indexed
 * storage K for chunk nodes. */
size_t h5_bt1_node_size(const h5_fmt *fmt, unsigned k, unsigned chunk_ndims_plus1);
int h5_bt1_group_encode(uint8_t *buf, size_t len, const h5_fmt *fmt, unsigned k, unsigned level, uint64_t left,
			uint64_t right, const uint64_t *keys, const uint64_t *child, unsigned n);

#endif
