/* dense_write.h - changing dense link and attribute storage (dense_write.c;
 * spec IV.A.2.c Link Info, IV.A.2.v Attribute Info, III.G fractal heap,
 * III.A.2 v2 B-tree record types 5, 6, 8 and 9).
 *
 * The whole set of an object's links or attributes is loaded, changed in
 * memory and written anew at the allocation end: a new heap, a new name
 * index and (when the object indexes creation order) a new creation-order
 * index. Nothing on disk changes until the caller's one in-place write of
 * the info message that names them (link_dense.c, attr_write.c), so a
 * crash leaves the old storage or the new, whole. The new structures
 * take space freed earlier when it holds them (h5_space_take), and the old
 * ones are freed once the caller's commit returned
 * (h5_dense_set_old_free; doc/DESIGN.md "Free space"). Every call runs
 * under f->write_lock. */
#ifndef H5_WRITE_DENSE_WRITE_H
#define H5_WRITE_DENSE_WRITE_H

#include "base.h"
#include "file.h"
#include "dense.h"
#include "fheap.h"
#include "btree2.h"
#include "ohdr_edit.h"

#define H5_DENSE_MAX_ID 16
/* The largest object a new store's heap keeps in place (libhdf5's
 * H5G_FHEAP_MAN_MAX_MAN_SIZE / H5O_FHEAP_MAN_MAX_MAN_SIZE): a larger one
 * would be a huge object, which h5fs does not write (H5_ERR_LIMIT) */
#define H5_DENSE_MAX_MAN 4096u

/* One link or attribute. */
typedef struct h5_dense_obj {
	uint8_t *msg;           /* the Link or Attribute message (NULL: a kept ID's object) */
	size_t len;
	char *name;             /* NULL: unknown (a shared attribute: never matched) */
	size_t name_len;
	uint32_t hash;          /* lookup3 of the name */
	uint64_t corder;
	uint8_t flags;          /* attributes: the message's flags */
	bool keep;              /* a huge or tiny object: its ID is carried over */
	uint8_t id[H5_DENSE_MAX_ID];
} h5_dense_obj;

typedef struct h5_dense_set {
	h5_dense_kind kind;
	h5_dense_obj *o;
	size_t n, cap;
	h5_fheap_params hp;
	h5_bt2_params name_bp, corder_bp;
	bool index_corder;
	h5_freesp old;          /* the loaded store's blocks (h5_space_note),
				 * none when some are kept (huge objects) */
} h5_dense_set;

/* The objects of the storage an info message names (corder_bt2: UNDEF
 * when creation order is not indexed). */
int h5_dense_set_load(h5_dense_set *s, h5_file *f, h5_dense_kind kind, uint64_t fheap, uint64_t name_bt2,
		      uint64_t corder_bt2);
/* The loaded store's blocks freed with the ticket of the commit that
 * switched the info message away from them (h5_space_free_noted). */
void h5_dense_set_old_free(h5_dense_set *s, h5_file *f, uint64_t ticket);
/* Whether the store (kind, its heap and indexes) ends at the allocation
 * end and freed space takes all of it: written anew into the lowest
 * space that fits (the unmount's move down), FILE can end lower. 1 yes,
 * 0 no, or a negative h5_err. */
int h5_dense_movable(h5_file *f, h5_dense_kind kind, uint64_t fheap, uint64_t name_bt2, uint64_t corder_bt2);
/* An empty set with libhdf5's parameters for new dense storage
 * (H5G__dense_create, H5A__dense_create). */
void h5_dense_set_init(h5_dense_set *s, h5_dense_kind kind, bool index_corder);
void h5_dense_set_free(h5_dense_set *s);

/* The object named name, or SIZE_MAX. */
size_t h5_dense_set_find(const h5_dense_set *s, const char *name, size_t name_len);
/* Object at (SIZE_MAX: a new object) set to a copy of the message msg
 * whose name is name; corder and flags as given. */
int h5_dense_set_put(h5_dense_set *s, size_t at, const uint8_t *msg, size_t len, const char *name, size_t name_len,
		     uint64_t corder, uint8_t flags);
void h5_dense_set_del(h5_dense_set *s, size_t at);

/* The set written anew at the allocation end (not yet durable: the
 * caller's commit makes it so before its switch): the addresses of the
 * heap, the name index and the creation-order index (UNDEF when not
 * indexed). */
int h5_dense_set_write(uint64_t *fheap, uint64_t *name_bt2, uint64_t *corder_bt2, h5_file *f,
		       const h5_dense_set *s);

/* The body of a Link Info (kind LINKS) or Attribute Info message, len
 * bytes, made to name the new storage; max_corder (>= 0) as its maximum
 * creation order when it tracks one. */
int h5_dense_info_update(uint8_t *body, size_t len, h5_dense_kind kind, const h5_fmt *fmt, uint64_t fheap,
			 uint64_t name_bt2, uint64_t corder_bt2, int64_t max_corder);

/* The set written anew and message info of the change (its Link Info or
 * Attribute Info message) made to name it, max_corder (>= 0) as its
 * maximum creation order: a patch of its chunk, which the caller's
 * h5_ohdr_commit_cow writes as the switch. */
int h5_dense_set_switch(h5_ohdr_change *c, h5_file *f, const h5_dense_set *s, size_t info, int64_t max_corder);
/* Fewer objects than the minimum for dense storage after a removal: as
 * libhdf5 (H5O__attr_remove_update, H5G__obj_remove_update), the set's
 * Link / Attribute messages go back into the header (all in one new
 * continuation chunk: h5_ohdr_put_many) and the info message of the
 * change (info) names no storage, max_corder as above, in the caller's
 * one commit (h5_ohdr_commit_cow); unless one is shared or too large for a
 * header message, when libhdf5 keeps them dense too (*moved false). */
int h5_dense_set_to_header(bool *moved, h5_ohdr_change *c, h5_file *f, const h5_dense_set *s, size_t info,
			   int64_t max_corder);

#endif
