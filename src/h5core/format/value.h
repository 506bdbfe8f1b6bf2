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
/* (numpy.c) NumPy typestr ("<f8", "|S10", "|b1", "|V12", "|O") of t. */
int h5_value_typestr(char **out, const h5_dtype *t);
/* (numpy.c) NumPy descr of a compound or array type. */
int h5_value_descr(char **out, const h5_dtype *t);

#endif
