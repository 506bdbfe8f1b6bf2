/* json.h - JSON text for h5fs-ls --refs (json.c): a growing buffer, and
 * element values of the engine's type views (h5_type_view) as JSON. */
#ifndef H5FS_JSON_H
#define H5FS_JSON_H

#include "h5core.h"

#include <stdio.h>

/* Text built in a stdio memory stream; nomem once anything failed. */
struct jb {
	FILE *fp;
	char *p;                  /* after jb_done: the text (never NULL unless nomem) */
	size_t len;
	int nomem;
};

void jb_printf(struct jb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void jb_done(struct jb *b);
/* A JSON string; bytes that are not UTF-8 become \u00XX (Latin-1). */
void jb_str(struct jb *b, const char *s, size_t len);
void jb_base64(struct jb *b, const uint8_t *p, size_t n);
/* The shortest decimal that reads back as v, with a '.' or an exponent
 * so JSON readers see a float (Python's repr); NaN and
 * infinities as JSON5 words, or as strings when quoted_special (zarr's
 * fill_value). */
void jb_float(struct jb *b, double v, int single, int quoted_special);
/* A number of typestr t ("<f8", "|b1", ">i2", ...) stored at p. */
void json_number(struct jb *b, const char *t, const uint8_t *p, int quoted_special);
/* Whether values of type t have a JSON form (json_value). */
int json_expressible(const h5_type_view *t);
/* One element: numbers, strings cut at the first NUL, compounds as
 * objects, array types as nested lists. */
void json_value(struct jb *b, const h5_type_view *t, const uint8_t *p);
/* Elements of type t from p, C order, as lists nested over
 * dims[level..rank); *k counts the elements written. */
void json_nested(struct jb *b, const h5_type_view *t, const uint8_t *p, const uint64_t *dims,
		 unsigned rank, unsigned level, uint64_t *k);

#endif
