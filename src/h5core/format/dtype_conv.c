/*
 * dtype_conv.c - stored elements as their values (IV.A.2.d): a number
 * whose datatype keeps its bits at a bit offset or in fewer bits than its
 * container (the n-bit datatype: libhdf5's H5Tset_precision and
 * H5Tset_offset; classes 0 fixed-point, 1 floating-point, 4 bit field)
 * is shown as the container's own NumPy type, so that the typestr the
 * mount and the tools give (numpy.c: "<i4" of an int32 container) tells
 * the truth about the bytes: the precision's bits taken from their offset,
 * sign-extended when signed (padding bits, lsb/msb pad, ignored as libhdf5
 * ignores them on reading); a float's fields decoded (value.c) and written
 * as the IEEE binary16/32/64 of the container's size, in the type's byte
 * order. Compound members, array elements and an enumeration's base are
 * converted in place; every other byte stays as stored. The container's
 * size never changes, so offsets and sizes of the raw view are those of
 * the stored bytes.
 *
 * The one place this conversion is made: the "values" view of a dataset
 * (dataset/view.c), a dataset's fill value and attribute values for the
 * tools (typeview.c).
 */
#include "base.h"
#include "dtype.h"
#include "value.h"

#include <string.h>

static bool pow2_size(uint32_t size)
{
	return size == 1 || size == 2 || size == 4 || size == 8;
}

/* An integer or bit field whose bits are not the whole container; one of
 * more than 8 bytes has no NumPy type ("|V<size>") and stays as stored. */
static bool int_narrow(const h5_dtype *t)
{
	return pow2_size(t->size) && (t->bit_offset != 0 || t->precision != t->size * 8);
}

/* A float laid out in part of its container, which value.c decodes and
 * an IEEE format of the container's size holds (the formats HDF5 2.x
 * predefines in a byte's low bits, FP6 and FP4, are known forms of their
 * own: h5_value_num_form). */
static bool float_narrow(const h5_dtype *t)
{
	return (t->size == 2 || t->size == 4 || t->size == 8) && h5_dtype_float_kind(t) == H5_FLOAT_OTHER &&
	       (t->bit_offset != 0 || t->precision != t->size * 8) && (t->bits & 0x41) != 0x41 &&
	       t->exp_size <= 32;
}

static bool needed(const h5_dtype *t, unsigned depth)
{
	if (!t || depth > H5_MAX_DTYPE_DEPTH)
		return false;
	switch (t->cls) {
	case H5T_INTEGER:
	case H5T_BITFIELD:
		return int_narrow(t);
	case H5T_FLOAT:
		return float_narrow(t);
	case H5T_ENUM:
	case H5T_ARRAY:
		return needed(t->base, depth + 1);
	case H5T_COMPOUND:
		for (size_t i = 0; i < t->nmembers; i++)
			if (needed(t->members[i].type, depth + 1))
				return true;
		return false;
	default:
		return false;
	}
}

bool h5_dtype_conv_needed(const h5_dtype *t)
{
	return needed(t, 0);
}

bool h5_dtype_conv_float(const h5_dtype *t)
{
	return t && t->cls == H5T_FLOAT && float_narrow(t);
}

static void put_uint(uint8_t *p, uint64_t v, unsigned size, bool big)
{
	for (unsigned i = 0; i < size; i++)
		p[big ? size - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_uint(const uint8_t *p, unsigned size, bool big)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)p[big ? size - 1 - i : i] << (8 * i);
	return v;
}

static void conv_int(const h5_dtype *t, uint8_t *p)
{
	unsigned prec = t->precision, size = t->size;
	uint64_t v = get_uint(p, size, t->big_endian);

	/* dtype.c keeps offset + precision inside the container */
	v >>= t->bit_offset;
	if (prec < 64)
		v &= ((uint64_t)1 << prec) - 1;
	/* bit fields have no sign (IV.A.2.d class 4: byte order and padding) */
	if (t->cls == H5T_INTEGER && t->is_signed && prec < 64 && (v >> (prec - 1) & 1))
		v |= ~(uint64_t)0 << prec;
	put_uint(p, v, size, t->big_endian);
}

static int conv_float(const h5_dtype *t, uint8_t *p)
{
	long double v;
	int rc = h5_value_float(&v, t, p);

	if (rc < 0)
		return rc;
	if (t->size == 8) {
		double d = (double)v;
		uint64_t u;

		memcpy(&u, &d, 8);
		put_uint(p, u, 8, t->big_endian);
	} else if (t->size == 4) {
		float f = (float)v;
		uint32_t u;

		memcpy(&u, &f, 4);
		put_uint(p, u, 4, t->big_endian);
	} else {
		put_uint(p, h5_value_half((float)v), 2, t->big_endian);
	}
	return 0;
}

/* One element of t at p (t->size bytes) converted in place. */
static int conv_elem(const h5_dtype *t, uint8_t *p, unsigned depth)
{
	int rc = 0;

	if (!needed(t, depth))
		return 0;
	switch (t->cls) {
	case H5T_INTEGER:
	case H5T_BITFIELD:
		conv_int(t, p);
		return 0;
	case H5T_FLOAT:
		return conv_float(t, p);
	case H5T_ENUM:
		/* the members' values are the base's, stored the same way */
		if (t->base->size != t->size)
			return h5_err_set(H5_ERR_FORMAT, "enumeration of %u bytes on a base of %u", t->size,
					  t->base->size);
		return conv_elem(t->base, p, depth + 1);
	case H5T_ARRAY: {
		uint32_t bs = t->base->size;

		if (!bs || t->size % bs)
			return h5_err_set(H5_ERR_FORMAT, "array of %u bytes on a base of %u", t->size, bs);
		for (uint32_t k = 0; k < t->size / bs && rc == 0; k++)
			rc = conv_elem(t->base, p + (size_t)k * bs, depth + 1);
		return rc;
	}
	case H5T_COMPOUND:
		for (size_t i = 0; i < t->nmembers && rc == 0; i++) {
			const h5_dtype_member *m = &t->members[i];

			if (!m->type || (uint64_t)m->offset + m->type->size > t->size)
				return h5_err_set(H5_ERR_FORMAT, "compound member %zu at %u past the %u-byte element", i,
						  m->offset, t->size);
			rc = conv_elem(m->type, p + m->offset, depth + 1);
		}
		return rc;
	default:
		return 0;
	}
}

int h5_dtype_conv_values(const h5_dtype *t, uint8_t *buf, size_t len)
{
	int rc = 0;

	if (!t || !t->size || len % t->size)
		return h5_err_set(H5_ERR_INVAL, "converting %zu bytes: not whole elements of %u bytes", len,
				  t ? t->size : 0);
	if (!h5_dtype_conv_needed(t))
		return 0;
	for (size_t k = 0; k < len && rc == 0; k += t->size)
		rc = conv_elem(t, buf + k, 0);
	return rc;
}
