/*
 * numpy.c - NumPy descriptions of datatypes (IV.A.2.d): the typestr of a
 * type ("<f8", "|S10", "|b1", "|V12", "|O") and the descr of a compound or
 * array type, such that np.dtype() of them rebuilds the element layout
 * (h5_type_view.typestr; user.h5.dtype and user.h5.descr on the daemon
 * side, src/common/xattrs.c).
 */
#include "base.h"
#include "strbuf.h"
#include "dtype.h"
#include "value.h"

#include <float.h>

static bool is_h5py_bool(const h5_dtype *t)
{
	/* h5py stores numpy bool as enum int8 {FALSE = 0, TRUE = 1} */
	return t->cls == H5T_ENUM && t->size == 1 && t->nmembers == 2 && t->enum_values &&
	       strcmp(t->enum_names[0], "FALSE") == 0 && t->enum_values[0] == 0 &&
	       strcmp(t->enum_names[1], "TRUE") == 0 && t->enum_values[1] == 1;
}

/* Whether NumPy has a type for this float layout. Its f2/f4/f8 are IEEE
 * binary16/32/64; f12 and f16 are the C long double of the machine (x87
 * extended on x86, IEEE binary128 on aarch64, ...), so a long double
 * layout of sizeof(long double) bytes is f<size> there. Anything else -
 * an IEEE quad on x86-64, where '<f16' would read its bytes as x87
 * numbers, or any other layout - has no NumPy type and is |V<size>. */
static bool numpy_float(const h5_dtype *t)
{
	h5_float_kind k = h5_dtype_float_kind(t);

	if (k == H5_FLOAT_IEEE && t->size <= 8)
		return true;
	if (t->size != sizeof(long double))
		return false;
#if LDBL_MANT_DIG == 64
	return k == H5_FLOAT_X87;
#elif LDBL_MANT_DIG == 113
	return k == H5_FLOAT_IEEE;
#else
	return false;
#endif
}

static int put_typestr(h5_sb *s, const h5_dtype *t)
{
	char order = t->size == 1 ? '|' : t->big_endian ? '>' : '<';
	bool pow2 = t->size == 1 || t->size == 2 || t->size == 4 || t->size == 8;

	switch (t->cls) {
	case H5T_INTEGER:
		if (pow2)
			return h5_sb_printf(s, "%c%c%u", order, t->is_signed ? 'i' : 'u', t->size);
		break;
	case H5T_BITFIELD:
		if (pow2)
			return h5_sb_printf(s, "%cu%u", order, t->size);
		break;
	case H5T_FLOAT:
		/* an n-bit float is shown as the IEEE float of its size (dtype_conv.c) */
		if (numpy_float(t) || h5_dtype_conv_float(t))
			return h5_sb_printf(s, "%cf%u", order, t->size);
		break;
	case H5T_ENUM:
		if (is_h5py_bool(t))
			return h5_sb_puts(s, "|b1");
		return put_typestr(s, t->base);
	case H5T_STRING:
		return h5_sb_printf(s, "|S%u", t->size);
	case H5T_VLEN:
		return h5_sb_puts(s, "|O");
	case H5T_COMPLEX:
		/* NumPy's complex64/complex128 (and complex256 of long double
		 * pairs) are two of its floats, real first, as class 11 is */
		if (t->base && t->base->size >= 4 && numpy_float(t->base))
			return h5_sb_printf(s, "%cc%u", t->big_endian ? '>' : '<', t->size);
		break;
	default:
		break;
	}
	return h5_sb_printf(s, "|V%u", t->size);
}

int h5_value_num_form(const h5_dtype *t)
{
	if (t->cls == H5T_ENUM && t->base && !is_h5py_bool(t))
		return h5_value_num_form(t->base);
	if (t->cls == H5T_COMPLEX && t->base && t->base->size == 2 && h5_dtype_float_kind(t->base) == H5_FLOAT_IEEE)
		return H5_FORM_COMPLEX_HALF;
	if (t->cls != H5T_FLOAT)
		return H5_FORM_PLAIN;
	switch (h5_dtype_float_kind(t)) {
	case H5_FLOAT_BF16: return H5_FORM_BFLOAT16;
	case H5_FLOAT_E4M3: return H5_FORM_FLOAT8_E4M3;
	case H5_FLOAT_E5M2: return H5_FORM_FLOAT8_E5M2;
	case H5_FLOAT_E2M3: return H5_FORM_FLOAT6_E2M3;
	case H5_FLOAT_E3M2: return H5_FORM_FLOAT6_E3M2;
	case H5_FLOAT_E2M1: return H5_FORM_FLOAT4_E2M1;
	default: return H5_FORM_PLAIN;
	}
}

int h5_value_typestr(char **out, const h5_dtype *t)
{
	h5_sb s = { 0 };
	size_t len;
	int rc = put_typestr(&s, t);

	*out = NULL;
	if (rc == 0)
		rc = h5_sb_finish(out, &len, &s);
	free(s.p);
	return rc;
}

/* A Python string literal ('...') of a member name. */
static int put_pystr(h5_sb *s, const char *str)
{
	int rc = h5_sb_put(s, "'", 1);

	for (const uint8_t *p = (const uint8_t *)str; *p && rc == 0; p++) {
		if (*p == '\'' || *p == '\\') {
			char e[2] = { '\\', (char)*p };
			rc = h5_sb_put(s, e, 2);
		} else if (*p < 0x20 || *p == 0x7f) {
			rc = h5_sb_printf(s, "\\x%02x", *p);
		} else {
			rc = h5_sb_put(s, p, 1);
		}
	}
	return rc ? rc : h5_sb_put(s, "'", 1);
}

static int put_descr(h5_sb *s, const h5_dtype *t, unsigned depth);

static int put_shape(h5_sb *s, const h5_dtype *t)
{
	int rc = h5_sb_put(s, "(", 1);

	for (unsigned i = 0; i < t->arank && rc == 0; i++)
		rc = h5_sb_printf(s, "%s%u", i ? ", " : "", t->adims[i]);
	if (rc == 0 && t->arank == 1)
		rc = h5_sb_put(s, ",", 1);
	return rc ? rc : h5_sb_put(s, ")", 1);
}

/* The format of a field: a typestr, a nested description, or for arrays
 * (base, (shape)). */
static int put_format(h5_sb *s, const h5_dtype *t, unsigned depth)
{
	int rc;

	if (depth > H5_MAX_DTYPE_DEPTH + 1)
		return h5_err_set(H5_ERR_LIMIT, "datatype nested deeper than %d levels", H5_MAX_DTYPE_DEPTH);
	if (t->cls == H5T_COMPOUND)
		return put_descr(s, t, depth + 1);
	if (t->cls != H5T_ARRAY) {
		rc = h5_sb_put(s, "'", 1);
		if (rc == 0)
			rc = put_typestr(s, t);
		return rc ? rc : h5_sb_put(s, "'", 1);
	}
	rc = h5_sb_put(s, "(", 1);
	if (rc == 0)
		rc = put_format(s, t->base, depth + 1);
	if (rc == 0)
		rc = h5_sb_put(s, ", ", 2);
	if (rc == 0)
		rc = put_shape(s, t);
	return rc ? rc : h5_sb_put(s, ")", 1);
}

/* Fields packed in order with no gap: the list form is exact. */
static bool compound_packed(const h5_dtype *t)
{
	uint64_t off = 0;

	for (size_t i = 0; i < t->nmembers; i++) {
		if (t->members[i].offset != off)
			return false;
		off += t->members[i].type->size;
	}
	return off == t->size;
}

/* Compound: [('x', '<i4'), ...] when packed, else numpy's dict form with
 * offsets and itemsize; array: (base, (shape)). np.dtype(eval(text))
 * rebuilds the element layout exactly. */
static int put_descr(h5_sb *s, const h5_dtype *t, unsigned depth)
{
	int rc = 0;

	if (depth > H5_MAX_DTYPE_DEPTH + 1)
		return h5_err_set(H5_ERR_LIMIT, "datatype nested deeper than %d levels", H5_MAX_DTYPE_DEPTH);
	if (t->cls != H5T_COMPOUND)
		return put_format(s, t, depth);
	if (compound_packed(t)) {
		rc = h5_sb_put(s, "[", 1);
		for (size_t i = 0; i < t->nmembers && rc == 0; i++) {
			const h5_dtype *mt = t->members[i].type;

			rc = h5_sb_puts(s, i ? ", (" : "(");
			if (rc == 0)
				rc = put_pystr(s, t->members[i].name);
			if (rc == 0)
				rc = h5_sb_put(s, ", ", 2);
			if (rc == 0 && mt->cls == H5T_ARRAY) {
				rc = put_format(s, mt->base, depth + 1);
				if (rc == 0)
					rc = h5_sb_put(s, ", ", 2);
				if (rc == 0)
					rc = put_shape(s, mt);
			} else if (rc == 0) {
				rc = put_format(s, mt, depth + 1);
			}
			if (rc == 0)
				rc = h5_sb_put(s, ")", 1);
		}
		return rc ? rc : h5_sb_put(s, "]", 1);
	}
	rc = h5_sb_puts(s, "{'names': [");
	for (size_t i = 0; i < t->nmembers && rc == 0; i++) {
		if (i)
			rc = h5_sb_put(s, ", ", 2);
		if (rc == 0)
			rc = put_pystr(s, t->members[i].name);
	}
	if (rc == 0)
		rc = h5_sb_puts(s, "], 'formats': [");
	for (size_t i = 0; i < t->nmembers && rc == 0; i++) {
		if (i)
			rc = h5_sb_put(s, ", ", 2);
		if (rc == 0)
			rc = put_format(s, t->members[i].type, depth + 1);
	}
	if (rc == 0)
		rc = h5_sb_puts(s, "], 'offsets': [");
	for (size_t i = 0; i < t->nmembers && rc == 0; i++)
		rc = h5_sb_printf(s, "%s%u", i ? ", " : "", t->members[i].offset);
	if (rc == 0)
		rc = h5_sb_printf(s, "], 'itemsize': %u}", t->size);
	return rc;
}

int h5_value_descr(char **out, const h5_dtype *t)
{
	h5_sb s = { 0 };
	size_t len;
	int rc = put_descr(&s, t, 1);

	*out = NULL;
	if (rc == 0)
		rc = h5_sb_finish(out, &len, &s);
	free(s.p);
	return rc;
}
