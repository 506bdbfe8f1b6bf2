/* btree2_int.h - what btree2.c (the reader) shares with btree2_write.c
 * (the appending writer of v2 B-tree chunk indexes): the decoded header and
 * nodes, the per-depth capacities and the node loader. */
#ifndef H5_BTREE2_INT_H
#define H5_BTREE2_INT_H

#include "base.h"
#include "cache.h"
#include "file.h"
#include "btree2.h"

#define BT2_PREFIX_SIZE 10u     /* signature, version, type, checksum */
#define BT2_MAX_NREC 65535u     /* libhdf5 keeps node record counts in 16 bits */

typedef struct bt2_level {
	uint32_t max_nrec;          /* records that fit a node at this depth */
	uint64_t cum_max_nrec;      /* records that fit the subtree (saturating) */
	uint8_t cum_max_nrec_size;  /* bytes of a "total records" field pointing here */
} bt2_level;

/* The decoded header (the cached H5_CK_BT2_HDR object). */
typedef struct bt2_hdr {
	uint64_t addr;
	uint8_t type;
	uint32_t node_size;
	uint16_t rec_size;
	uint16_t depth;
	uint8_t split_pct, merge_pct;
	uint64_t root_addr;
	uint16_t root_nrec;
	uint64_t total_nrec;
	h5_fmt fmt;
	uint8_t max_nrec_size;      /* bytes of a "records in child" field */
	bt2_level lv[H5_MAX_BTREE_DEPTH + 1];
} bt2_hdr;

/* A decoded node (the cached H5_CK_BT2_NODE object). */
typedef struct bt2_node {
	uint64_t addr;
	uint64_t hdr_addr;          /* the tree it was loaded for */
	uint16_t depth;             /* 0 = leaf */
	uint16_t nrec;
	uint32_t rec_size;
	uint64_t total;             /* nrec plus every child's subtree total */
	uint8_t *recs;              /* nrec * rec_size bytes */
	uint64_t *child;            /* internal: nrec + 1 */
	uint16_t *child_nrec;
	uint64_t *child_total;
} bt2_node;

struct h5_bt2 {
	h5_pinned pin;              /* first: the header stays cached while open */
	const bt2_hdr *hdr;
};

/* libhdf5's H5VM_limit_enc_size: bytes needed to store values up to limit. */
uint8_t h5_bt2_enc_size(uint64_t limit);
size_t h5_bt2_hdr_size(const h5_fmt *fmt);
/* Pointer size in an internal node at depth d (H5B2_INT_POINTER_SIZE). */
unsigned h5_bt2_ptr_size(const bt2_hdr *h, unsigned d);
/* h->lv[0..h->depth] from node_size, rec_size and depth (H5B2__hdr_init). */
int h5_bt2_init_levels(bt2_hdr *h);
/* On-disk bytes of a node at depth with nrec records (checksum included). */
uint64_t h5_bt2_node_bytes(const bt2_hdr *h, unsigned depth, unsigned nrec);
/* The node a pointer (addr, depth, nrec, total) leads to, cached and checked. */
int h5_bt2_node_get(const bt2_node **out, h5_cache_ref *ref, h5_bt2 *bt, uint64_t addr, unsigned depth,
		    unsigned nrec, uint64_t total);

/* Encoders (btree2.c), the mirror of the decoders: the header, whole with
 * its checksum; a node's prefix (signature by depth, version, type),
 * returning where its records go; one child pointer of an internal node at
 * depth (address, the child's records, and above the twig level its
 * subtree's); the checksum of node bytes [buf, end), written at end. */
void h5_bt2_hdr_encode(uint8_t *buf, const bt2_hdr *h);
uint8_t *h5_bt2_node_begin(uint8_t *buf, const bt2_hdr *h, unsigned depth);
uint8_t *h5_bt2_ptr_encode(uint8_t *p, const bt2_hdr *h, unsigned depth, uint64_t addr, uint64_t nrec,
			   uint64_t total);
void h5_bt2_node_end(uint8_t *buf, uint8_t *end);

#endif
