/*
 * value.h - values as text (value.c) and NumPy descriptions of types (numpy.c).
 */
#ifndef H5_DATASET_VALUE_H
#define H5_DATASET_VALUE_H

#include "base.h"
#include "file.h"
#include "dtype.h"

/* Text of nelmts elements of type t stored at data (data_len bytes, file
 * layout; variable-length data is read from the global heap of f). The
 * rules are in doc/h5fs.1, ATTRIBUTES. *out is malloc'd and NUL-terminated
 * (the NUL is not counted in *out_len). */
int h5_value_text(char **out, size_t *out_len, h5_file *f, const h5_dtype *t,
		  const uint8_t *data, size_t data_len, uint64_t nelmts);
/* "Raw" bytes of the same value: data as stored, except that a
 * variable-length string type yields its strings' bytes (NUL-separated). */
int h5_value_raw(uint8_t **out, size_t *out_len, h5_file *f, const h5_dtype *t,
		 const uint8_t *data, size_t data_len, uint64_t nelmts);
/* Each global heap collection (its address) that nelmts elements of type
 * t at data reference: variable-length sequences and strings, dataset
 * region references, and what sequences of such types hold in turn (the
 * space report). A non-zero cb result stops the walk. */
typedef int (*h5_heap_ref_cb)(uint64_t coll_addr, void *ud);
int h5_value_heap_refs(h5_file *f, const h5_dtype *t, const uint8_t *data, size_t data_len, uint64_t nelmts,
		       h5_heap_ref_cb cb, void *ud);
/* (numpy.c) NumPy typestr ("<f8", "|S10", "|b1", "|V12", "|O") of t. */
int h5_value_typestr(char **out, const h5_dtype *t);
/* (numpy.c) The encoding of a number NumPy has no typestr of (h5_num_form). */
int h5_value_num_form(const h5_dtype *t);
/* (numpy.c) NumPy descr of a compound or array type. */
int h5_value_descr(char **out, const h5_dtype *t);

/* (value_parse.c) The mirror of h5_value_text for the types a user sets
 * from text (h5_value_parsable: integers and IEEE floats of 1-8 bytes,
 * enums by member name or number): nelmts elements joined by ",". Malformed
 * text, a value out of range or another count: H5_ERR_INVAL. */
bool h5_value_parsable(const h5_dtype *t);
int h5_value_parse(uint8_t **out, size_t *out_len, const h5_dtype *t, const char *text, size_t len,
		   uint64_t nelmts);
/* (value_parse.c) One element of t from a cell of text (a row of
 * NAME.csv written): numbers and enums as h5_value_parse, fixed-length
 * strings verbatim, padded as t says; into p (t->size bytes).
 * H5_ERR_INVAL: text that does not parse, out of range, too long. */
bool h5_value_cell_parsable(const h5_dtype *t);
int h5_value_parse_cell(uint8_t *p, const h5_dtype *t, const char *s, size_t n);

/* (value.c) The value of one float element of t (any layout value.c
 * decodes: IEEE, x87, n-bit and other fields; not VAX order). */
int h5_value_float(long double *out, const h5_dtype *t, const uint8_t *p);
/* (value_parse.c) binary32 -> binary16, rounding to nearest even. */
uint16_t h5_value_half(float f);

#endif
