/*
 * btree2.h - version 2 B-trees (btree2.c; III.A.2).
 */
#ifndef H5_FORMAT_BTREE2_H
#define H5_FORMAT_BTREE2_H

#include "base.h"
#include "file.h"

/* ---- version 2 B-trees (btree2.c) ----------------------------------------- */

typedef struct h5_bt2 h5_bt2;
int h5_bt2_open(h5_bt2 **out, h5_file *f, uint64_t addr);
void h5_bt2_close(h5_bt2 *bt);
uint8_t h5_bt2_type(const h5_bt2 *bt);
uint32_t h5_bt2_record_size(const h5_bt2 *bt);
uint64_t h5_bt2_nrecords(const h5_bt2 *bt);
/* Visit every record in key order; cb returns non-zero to stop. */
typedef int (*h5_bt2_rec_cb)(const uint8_t *rec, size_t len, void *ud);
int h5_bt2_iterate(h5_bt2 *bt, h5_bt2_rec_cb cb, void *ud);
/* The blocks of the tree (III.A.2): its header, then every node with the
 * node size of the header (each node is allocated whole). */
int h5_bt2_blocks(h5_bt2 *bt, h5_block_cb cb, void *ud);
/* The same of the tree at addr, opened and closed here. */
int h5_bt2_blocks_at(h5_file *f, uint64_t addr, h5_block_cb cb, void *ud);
/* Search with cmp(key, rec) < 0 / 0 / > 0 as libhdf5's compare callback
 * (key less than / equal to / greater than the record). On a match, found()
 * is called and its result returned; H5_ERR_NOTFOUND if nothing matched.
 * For hash-keyed records cmp may return 0 on a hash match and found() may
 * return H5_ERR_NOTFOUND to reject a collision; the search then continues
 * over the neighbouring records with the same hash. */
typedef int (*h5_bt2_cmp_fn)(const void *key, const uint8_t *rec, size_t len, void *ud);
int h5_bt2_find(h5_bt2 *bt, h5_bt2_cmp_fn cmp, const void *key, h5_bt2_rec_cb found, void *ud);

/* ---- encoding a whole tree (btree2_enc.c) ---------------------------------- */

/* What a tree is made with (its header's fixed fields). */
typedef struct h5_bt2_params {
	uint8_t type;
	uint32_t node_size;
	uint16_t rec_size;
	uint8_t split_pct, merge_pct;
} h5_bt2_params;

int h5_bt2_params_get(h5_bt2_params *p, const h5_bt2 *bt);
/* The image (*img, malloc'd, *len bytes) of a tree whose header is at base
 * and whose nodes follow it, holding the n records (rec_size bytes each)
 * in recs, which are in key order. */
int h5_bt2_build(uint8_t **img, size_t *len, const h5_bt2_params *p, const h5_fmt *fmt, uint64_t base,
		 const uint8_t *recs, size_t n);

#endif
