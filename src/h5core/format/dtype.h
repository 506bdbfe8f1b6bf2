/*
 * dtype.h - the datatype message (dtype.c; IV.A.2.d).
 */
#ifndef H5_FORMAT_DTYPE_H
#define H5_FORMAT_DTYPE_H

#include "base.h"

typedef enum h5_tclass {
	H5T_INTEGER = 0, H5T_FLOAT = 1, H5T_TIME = 2, H5T_STRING = 3,
	H5T_BITFIELD = 4, H5T_OPAQUE = 5, H5T_COMPOUND = 6, H5T_REFERENCE = 7,
	H5T_ENUM = 8, H5T_VLEN = 9, H5T_ARRAY = 10,
	H5T_COMPLEX = 11        /* format 4.0 (HDF5 2.x): two floats, real then imaginary */
} h5_tclass;

typedef struct h5_dtype h5_dtype;

typedef struct h5_dtype_member {
	char *name;
	uint32_t offset;      /* byte offset inside the compound */
	h5_dtype *type;
} h5_dtype_member;

struct h5_dtype {
	h5_tclass cls;
	uint8_t version;
	uint32_t size;          /* element size in bytes */
	uint32_t bits;          /* the 24 class bit-field bits as stored */
	/* integer, float, bitfield, time */
	bool big_endian;
	bool is_signed;
	uint16_t bit_offset, precision;
	/* float */
	uint8_t sign_loc, exp_loc, exp_size, mant_loc, mant_size, norm;
	uint32_t exp_bias;
	/* string and vlen string */
	uint8_t str_pad;        /* 0 null-terminated, 1 null-padded, 2 space-padded */
	uint8_t cset;           /* 0 ASCII, 1 UTF-8 */
	/* opaque */
	char *tag;
	/* compound / enum */
	size_t nmembers;
	h5_dtype_member *members;  /* compound */
	char **enum_names;         /* enum: nmembers names */
	uint8_t *enum_values;      /* enum: nmembers * base->size bytes */
	/* enum, vlen, array, complex (the type of each part) */
	h5_dtype *base;
	/* vlen */
	uint8_t vlen_type;      /* 0 sequence, 1 string */
	/* array */
	unsigned arank;
	uint32_t adims[H5_MAX_RANK];
	/* reference */
	uint8_t ref_type;       /* 0 object, 1 region */
};

/* Whether t holds variable-length data anywhere (nested up to H5_MAX_DTYPE_DEPTH). */
bool h5_dtype_has_vlen(const h5_dtype *t);
/* Whether t holds references into the global heap anywhere: variable-length
 * data or dataset region references. */
bool h5_dtype_has_heap_refs(const h5_dtype *t);
/* Decode a datatype message (all versions, nested up to H5_MAX_DTYPE_DEPTH).
 * *used (optional) receives the bytes consumed. */
int h5_dtype_decode(h5_dtype **out, const uint8_t *buf, size_t len, size_t *used);
void h5_dtype_free(h5_dtype *t);
/* What a float type's fields describe: IEEE 754 binary16/32/64/128 of the
 * type's size, the x87 extended format (80 bits, the leading one stored),
 * the small formats HDF5 2.x predefines (bfloat16: 8-bit exponent, 7-bit
 * mantissa; OCP FP8 E4M3, which has NaN but no infinity, and E5M2; OCP
 * FP6 E2M3, E3M2 and FP4 E2M1, in the low bits of one byte), or another
 * layout. */
typedef enum h5_float_kind {
	H5_FLOAT_IEEE, H5_FLOAT_X87, H5_FLOAT_OTHER,
	H5_FLOAT_BF16, H5_FLOAT_E4M3, H5_FLOAT_E5M2,
	H5_FLOAT_E2M3, H5_FLOAT_E3M2, H5_FLOAT_E2M1  /* OCP FP6 and FP4 (HDF5 2.1): no inf, no NaN */
} h5_float_kind;
h5_float_kind h5_dtype_float_kind(const h5_dtype *t);

/* (dtype_conv.c) Numbers whose bits are at a bit offset or narrower than
 * their container (n-bit integers, bit fields and floats, anywhere in t)
 * shown as values of the container's own type: whether t has any, whether
 * a float type is one (its NumPy type is then the IEEE float of its size),
 * and len bytes of whole elements converted in place (H5_ERR_INVAL when
 * len is not a multiple of the element size). */
bool h5_dtype_conv_needed(const h5_dtype *t);
bool h5_dtype_conv_float(const h5_dtype *t);
int h5_dtype_conv_values(const h5_dtype *t, uint8_t *buf, size_t len);

/* (dtype_enc.c) Datatype messages of new attributes. A number: kind 'i',
 * 'u' (1, 2, 4, 8 bytes) or 'f' (IEEE 2, 4, 8 bytes); at most 20 bytes. */
int h5_dtype_encode_number(uint8_t *out, size_t *len, char kind, unsigned size, bool big_endian);
/* A variable-length string of character set cset (h5py's str): 20 bytes. */
int h5_dtype_encode_vstr(uint8_t *out, size_t *len, uint8_t cset);
/* A fixed-length string of size bytes, padding pad (0 null-terminated, 1
 * null-padded, 2 space-padded), character set cset: 8 bytes. */
int h5_dtype_encode_fstr(uint8_t *out, size_t *len, size_t size, uint8_t pad, uint8_t cset);

#endif
