/*
 * attr.h - attribute messages (attr.c; IV.A.2.m).
 */
#ifndef H5_FORMAT_ATTR_H
#define H5_FORMAT_ATTR_H

#include "base.h"
#include "file.h"
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

int h5_attr_decode(h5_attr_msg *out, h5_file *f, const h5_fmt *fmt, const uint8_t *buf, size_t len);
void h5_attr_msg_clear(h5_attr_msg *a);
/* Find one attribute of the object at addr by name: compact messages are
 * scanned, dense storage is searched by name hash (no full scan).
 * H5_ERR_NOTFOUND when the object has no such attribute. */
int h5_attr_find(h5_attr_msg *out, h5_file *f, uint64_t addr, const char *name, size_t name_len);

#endif
