/*
 * attr_write_int.h - what attr_write.c (where a change goes, the commit,
 * batches) and attr_build.c (the new Attribute message) share.
 */
#ifndef H5_ATTR_WRITE_INT_H
#define H5_ATTR_WRITE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "h5core.h"

struct h5_ohdr;

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
} h5_attr_change;

/* nelmts variable-length strings: a new global heap collection at the
 * allocation end (written now, invisible until referenced) and the
 * elements (length, collection, index) pointing into it. */
int h5_attr_vstr_data(uint8_t **out, size_t *out_len, h5_file *f, const char *const *s, const size_t *l, size_t n,
		      bool one_msg);
/* The global heap collection this session wrote for the value of the
 * attribute message msg alone (f->owned; one_msg above), or UNDEF: once
 * a commit replaced or removed msg, h5_attr_coll_free frees it (ticket:
 * the commit's, h5_ohdr_change). */
uint64_t h5_attr_owned_coll(h5_file *f, const uint8_t *msg, size_t len);
void h5_attr_coll_free(h5_file *f, uint64_t coll, uint64_t ticket);
/* The new attribute message for ch (*msg, *mlen): a new value of the old
 * message old (NULL: a new attribute, or ch->typestr's replacement); with
 * ch->dry nothing written to the file (variable-length strings' elements
 * zero, of their size: *mlen is the message's). */
int h5_attr_build(uint8_t **msg, size_t *mlen, h5_file *f, const struct h5_ohdr *oh, const uint8_t *old,
		  size_t old_len, const h5_attr_change *ch);

#endif
