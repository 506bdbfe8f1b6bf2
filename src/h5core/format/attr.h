/*
 * attr.h - attribute messages (attr.c; IV.A.2.m).
 */
#ifndef H5_FORMAT_ATTR_H
#define H5_FORMAT_ATTR_H

#include "base.h"
#include "file.h"
#include "ohdr.h"
#include "dspace.h"
#include "dtype.h"

/* ---- attributes (attr.c) --------------------------------------------------- */

typedef struct h5_attr_msg {
	char *name;
	size_t name_len;
	uint8_t cset;
	h5_dtype *dtype;
	h5_dspace space;
	uint8_t *data;          /* raw value bytes */
	size_t data_size;
} h5_attr_msg;

/* Fixed part of versions 1-3: where the name, datatype and dataspace fields
 * are, and their lengths. v1 pads every field to 8 bytes; v2/v3 do not. */
typedef struct h5_attr_hdr {
	uint8_t version, flags, cset;
	const uint8_t *name;    /* name_size bytes, NUL included */
	size_t name_size;
	const uint8_t *dt;
	size_t dt_size;
	const uint8_t *ds;
	size_t ds_size;
	const uint8_t *data;    /* the rest of the message */
	size_t data_left;
} h5_attr_hdr;
/* The fields of an attribute message, located and checked (attr.c). */
int h5_attr_hdr_decode(h5_attr_hdr *h, const uint8_t *buf, size_t len);

int h5_attr_decode(h5_attr_msg *out, h5_file *f, const h5_fmt *fmt, const uint8_t *buf, size_t len);
void h5_attr_msg_clear(h5_attr_msg *a);
/* Find one attribute of the object at addr by name: compact messages are
 * scanned, dense storage is searched by name hash (no full scan).
 * H5_ERR_NOTFOUND when the object has no such attribute. */
int h5_attr_find(h5_attr_msg *out, h5_file *f, uint64_t addr, const char *name, size_t name_len);
/* The blocks of oh's dense attribute storage (IV.A.2.v: heap and indexes,
 * h5_dense_blocks), none when its attributes are compact; for the space
 * report. */
int h5_attr_dense_blocks(h5_file *f, const h5_ohdr *oh, h5_block_cb cb, void *ud);

/* (attr_enc.c) An attribute message of h's version, flags, name, datatype
 * and dataspace fields (h->dt_size, h->ds_size bytes), and data. */
int h5_attr_encode(uint8_t **out, size_t *len, const h5_attr_hdr *h, const uint8_t *data, size_t data_len);

#endif
