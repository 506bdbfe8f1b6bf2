/*
 * attr_write_int.h - what attr_write.c (where a change goes, the commit,
 * batches), attr_dense.c (dense storage and the Attribute Info message)
 * and attr_build.c (the new Attribute message) share.
 */
#ifndef H5_ATTR_WRITE_INT_H
#define H5_ATTR_WRITE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "h5core.h"

struct h5_ohdr;

/* Where an object's attributes are (h5_attr_scan): the message named,
 * the compact count, the Attribute Info message and its dense store. */
typedef struct found {
	size_t idx;             /* message index, SIZE_MAX: none */
	size_t nattrs;          /* compact attributes */
	size_t ainfo;           /* the Attribute Info message, SIZE_MAX: none */
	bool dense;
	uint8_t ainfo_flags;
	uint16_t max_crt;
	uint64_t fheap, name_bt2, corder_bt2;   /* dense storage */
} found;
int h5_attr_scan(found *fd, h5_file *f, const struct h5_ohdr *oh, const char *name, size_t name_len);

/* The Attribute Info message's flags (IV.A.2.v) */
#define AINFO_TRACK_CORDER 0x01
#define AINFO_INDEX_CORDER 0x02

/* One attribute change. */
typedef struct h5_attr_change {
	const char *name;
	size_t name_len;
	const char *val;        /* NULL: delete */
	size_t len;
	int raw;
	const char *typestr;    /* a new typed attribute (h5_attr_create_typed), or NULL */
	const uint8_t *vdata;   /* a new string's element, its global heap object
				 * written already (a batch's shared collection) */
	bool dry;               /* checked only (h5_attr_set_check): nothing written */
	uint64_t *heap;         /* dry, or NULL: the global heap bytes the change writes, added */
	bool set;               /* a batch's new value of an existing attribute */
	enum h5_fstr fstr;      /* a new fixed-length string (h5_attr_create_str) */
	size_t fwidth;          /* its size, 0: the text's length */
	const uint8_t *rdt;     /* a new attribute of this datatype message
				 * (h5_attr_create_raw): val its len bytes */
	size_t rdt_len;
	uint64_t rn;            /* its elements, 1-D (0: scalar) */
} h5_attr_change;

/* nelmts variable-length strings: a new global heap collection at the
 * allocation end (written now, invisible until referenced) and the
 * elements (length, collection, index) pointing into it. */
int h5_attr_vstr_data(uint8_t **out, size_t *out_len, h5_file *f, const char *const *s, const size_t *l, size_t n,
		      bool one_msg);
/* The global heap collection this session wrote that the value of the
 * attribute message msg points into (h5_ws(f)->owned: its own, one_msg above, or
 * a batch's), or UNDEF: once a commit replaced or removed msg,
 * h5_attr_coll_free drops msg's reference and frees the collection with
 * the last one (ticket: the commit's, h5_ohdr_change). */
uint64_t h5_attr_owned_coll(h5_file *f, const uint8_t *msg, size_t len);
void h5_attr_coll_free(h5_file *f, uint64_t coll, uint64_t ticket);
/* The attributes of the object at addr, about to be freed: each one's
 * reference to a collection of this session dropped (h5_attr_coll_free). */
void h5_attr_colls_drop(h5_file *f, uint64_t addr, uint64_t ticket);
/* The new attribute message for ch (*msg, *mlen): a new value of the old
 * message old (NULL: a new attribute, or ch->typestr's replacement); with
 * ch->dry nothing written to the file (variable-length strings' elements
 * zero, of their size: *mlen is the message's). */
int h5_attr_build(uint8_t **msg, size_t *mlen, h5_file *f, const struct h5_ohdr *oh, const uint8_t *old,
		  size_t old_len, const h5_attr_change *ch);

/* Under write_lock (dimscale.c): attribute NAME (new, or replacing one)
 * of the datatype message dtype, n elements 1-D (0: a scalar), their len
 * bytes as stored; NAME deleted. One commit each. */
int h5_attr_create_raw_locked(h5_file *f, uint64_t addr, const char *name, size_t name_len, const uint8_t *dtype,
			      size_t dtype_len, uint64_t n, const void *data, size_t len);
int h5_attr_delete_locked(h5_file *f, uint64_t addr, const char *name, size_t name_len);

struct h5_ohdr_change;
/* Under write_lock: ch[0..n) into the dense store fd names, one commit
 * (c: the object's change, opened); ch[0..n) of the object at addr, each
 * where its storage is (*done: how many committed). */
int h5_attr_dense_batch(struct h5_ohdr_change *c, h5_file *f, const found *fd, const h5_attr_change *ch, size_t n);
int h5_attr_batch_locked(size_t *done, h5_file *f, uint64_t addr, const h5_attr_change *ch, size_t n);
/* ---- attr_dense.c ---- */
struct h5_dense_set;
/* v2 headers: how many compact attributes libhdf5 keeps before it moves
 * them to dense storage (UINT32_MAX for v1 headers) */
unsigned h5_attr_max_compact(const struct h5_ohdr *oh);
/* ch's attribute into the dense set s: a new value of the one at `at`,
 * or (at SIZE_MAX, or a typed or fixed-string replacement) a new one,
 * with the next creation order when the object tracks it (*max_crt
 * moves) */
int h5_attr_dense_put(struct h5_dense_set *s, size_t at, int64_t *max_crt, h5_file *f, const struct h5_ohdr *oh,
		      const found *fd, const h5_attr_change *ch);
/* A change of an attribute in dense storage: the store written anew and
 * switched to, one commit (c opened); back into the header below the
 * minimum */
int h5_attr_apply_dense(struct h5_ohdr_change *c, h5_file *f, const found *fd, const h5_attr_change *ch);
/* A v2 header at its compact limit gets one more attribute: every one
 * moves to new dense storage with it, one commit */
int h5_attr_to_dense(struct h5_ohdr_change *c, h5_file *f, const found *fd, const h5_attr_change *ch);
/* A v2 header's first attribute: an Attribute Info message first, a
 * commit of its own */
int h5_attr_ainfo_add(struct h5_ohdr_change *c, h5_file *f);

/* A collection (addr, len) of this session's, referenced by refs
 * messages about to be written (attr_move.c's copy). */
void h5_attr_coll_adopt(h5_file *f, uint64_t addr, uint64_t len, uint32_t refs);

/* Under write_lock, at unmount (h5_file_compact): the first object a
 * change noted (ohdr_edit.h, H5_NOTE_ATTRS) whose dense attribute store
 * ends at the allocation end, written anew into the lowest freed space
 * that takes it. 1 moved, 0 nothing to do (h5_ohdr_notes_each). */
int h5_attr_move_down(h5_file *f);
/* 1 when it moved the collection of attribute values at the allocation
 * end, referenced by the object at addr, into lower freed space. */

#endif
