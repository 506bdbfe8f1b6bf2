/* dense.h - dense storage of links and attributes: objects in a fractal
 * heap (III.G) indexed by the lookup3 hash of their names in a v2 B-tree
 * (III.A.2 record type 5 for links, type 8 for attributes). Groups
 * (group.c) and attributes (attr.c) decode the objects; this module finds
 * and walks them. */
#ifndef H5_DENSE_H
#define H5_DENSE_H

#include "base.h"
#include "file.h"
#include "fheap.h"
#include "btree2.h"

typedef enum h5_dense_kind {
	H5_DENSE_LINKS,         /* Link Info message (IV.A.2.c): type 5 records */
	H5_DENSE_ATTRS          /* Attribute Info message (IV.A.2.v): type 8 records */
} h5_dense_kind;

/* One name index record and the heap object it names. */
typedef struct h5_dense_rec {
	uint32_t hash;          /* lookup3 of the name bytes (no NUL), initval 0 */
	uint8_t flags;          /* type 8: message flags (bit 1: shared); 0 for type 5 */
	uint32_t corder;        /* type 8: creation order; 0 for type 5 */
	const uint8_t *obj;     /* the heap object: a Link or Attribute message */
	size_t obj_len;
	const uint8_t *id;      /* its heap ID, as the record holds it */
	size_t id_len;
} h5_dense_rec;

typedef struct h5_dense {
	h5_file *f;
	h5_dense_kind kind;
	h5_fheap *heap;
	h5_bt2 *bt;
} h5_dense;

/* Open the heap and the name index an info message names, checking the
 * index's record type and size. */
int h5_dense_open(h5_dense *d, h5_file *f, h5_dense_kind kind, uint64_t fheap_addr, uint64_t name_bt2_addr);
void h5_dense_close(h5_dense *d);

/* cb for each object in name-hash order; a non-zero result stops. */
typedef int (*h5_dense_cb)(const h5_dense_rec *r, void *ud);
int h5_dense_iterate(h5_dense *d, h5_dense_cb cb, void *ud);

/* cb for the objects whose hash is that of name; cb returns 0 (found),
 * H5_ERR_NOTFOUND (another name with the same hash: the search goes on) or
 * an error. H5_ERR_NOTFOUND, without a message, when nothing matched. */
int h5_dense_find(h5_dense *d, const char *name, size_t len, h5_dense_cb cb, void *ud);

/* lookup3 of the name bytes, initval 0: the key of types 5 and 8. */
uint32_t h5_dense_name_hash(const char *name, size_t len);
/* Every block of a dense store (the space report): its fractal heap, the
 * name index and the creation-order index (corder_bt2_addr, or UNDEF), and
 * the huge objects only heap IDs locate. */
int h5_dense_blocks(h5_file *f, h5_dense_kind kind, uint64_t fheap_addr, uint64_t name_bt2_addr,
		    uint64_t corder_bt2_addr, h5_block_cb cb, void *ud);

/* Records of the name indexes (types 5, 8) and the creation-order indexes
 * (6: links, 9: attributes) for heap IDs of id_len bytes: their size, and
 * one encoded at p (dense_write.c writes whole trees of them). */
unsigned h5_dense_rec_size(uint8_t type, unsigned id_len);
void h5_dense_rec_encode(uint8_t *p, uint8_t type, const uint8_t *id, unsigned id_len, uint32_t hash,
			 uint64_t corder, uint8_t flags);

#endif
