/*
 * value_parse.c - the text of a value read back (value_parse.h): the
 * mirror of value.c for the types a shell user sets (doc/h5fs.1,
 * MODIFYING): integers and IEEE floats of the usual sizes, enums (h5py
 * booleans) by member name or number; elements joined by ", ".
 */
#include "base.h"
#include "value.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

/* [s, e) without surrounding white space */
static void trim(const char **s, const char **e)
{
	while (*s < *e && isspace((unsigned char)**s))
		(*s)++;
	while (*e > *s && isspace((unsigned char)(*e)[-1]))
		(*e)--;
}

static void put_int(uint8_t *p, uint64_t v, unsigned size, bool big)
{
	for (unsigned i = 0; i < size; i++)
		p[big ? size - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

/* binary32 -> binary16, rounding to nearest even (as NumPy does); also
 * dtype_conv.c's, for values converted to a 2-byte container */
uint16_t h5_value_half(float f)
{
	uint32_t x, m, rem;
	uint16_t sign, h;
	int e;

	memcpy(&x, &f, 4);
	sign = (uint16_t)((x >> 16) & 0x8000);
	e = (int)((x >> 23) & 0xff);
	m = x & 0x7fffff;
	if (e == 255)
		return (uint16_t)(sign | 0x7c00 | (m ? 0x200 : 0));
	e = e - 127 + 15;
	if (e >= 31)
		return (uint16_t)(sign | 0x7c00);
	if (e <= 0) {
		unsigned shift;
		uint32_t hm, halfway;

		if (e < -10)
			return sign;
		m |= 0x800000;
		shift = (unsigned)(14 - e);
		hm = m >> shift;
		rem = m & ((1u << shift) - 1);
		halfway = 1u << (shift - 1);
		if (rem > halfway || (rem == halfway && (hm & 1)))
			hm++;
		return (uint16_t)(sign | hm);
	}
	h = (uint16_t)(sign | (e << 10) | (m >> 13));
	rem = m & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++;
	return h;
}

static int parse_int(uint8_t *p, const h5_dtype *t, const char *s, size_t n)
{
	char tmp[64];
	char *end;
	unsigned bits = t->size * 8;

	if (t->bit_offset != 0 || t->precision != bits || (t->size != 1 && t->size != 2 && t->size != 4 && t->size != 8))
		return h5_err_set(H5_ERR_UNSUPPORTED, "integers of %u bits at offset %u in %u bytes cannot be set",
				  t->precision, t->bit_offset, t->size);
	if (n == 0 || n >= sizeof(tmp))
		return h5_err_set(H5_ERR_INVAL, "\"%.*s\" is not an integer", (int)n, s);
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	errno = 0;
	if (t->is_signed) {
		long long v = strtoll(tmp, &end, 10);
		long long lo = bits == 64 ? INT64_MIN : -(1LL << (bits - 1));
		long long hi = bits == 64 ? INT64_MAX : (1LL << (bits - 1)) - 1;

		if (*end || end == tmp || errno || v < lo || v > hi)
			return h5_err_set(H5_ERR_INVAL, "\"%s\" is not a %u-bit signed integer", tmp, bits);
		put_int(p, (uint64_t)v, t->size, t->big_endian);
	} else {
		unsigned long long v;

		if (tmp[0] == '-')
			return h5_err_set(H5_ERR_INVAL, "\"%s\" is not a %u-bit unsigned integer", tmp, bits);
		v = strtoull(tmp, &end, 10);
		if (*end || end == tmp || errno || (bits < 64 && v >> bits))
			return h5_err_set(H5_ERR_INVAL, "\"%s\" is not a %u-bit unsigned integer", tmp, bits);
		put_int(p, v, t->size, t->big_endian);
	}
	return 0;
}

static int parse_float(uint8_t *p, const h5_dtype *t, const char *s, size_t n)
{
	char tmp[128];
	char *end;
	double d;

	if (h5_dtype_float_kind(t) != H5_FLOAT_IEEE || (t->size != 2 && t->size != 4 && t->size != 8))
		return h5_err_set(H5_ERR_UNSUPPORTED, "floats of this %u-byte layout cannot be set", t->size);
	if (n == 0 || n >= sizeof(tmp))
		return h5_err_set(H5_ERR_INVAL, "\"%.*s\" is not a number", (int)n, s);
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	errno = 0;
	d = strtod(tmp, &end);
	if (*end || end == tmp)
		return h5_err_set(H5_ERR_INVAL, "\"%s\" is not a number", tmp);
	/* a finite number too large for the type is out of range, as an
	 * integer is (EINVAL), never stored as inf (issue 47: 1e400, 65520
	 * into float16); "inf" itself is a value; underflow rounds to 0 */
	if (isinf(d) && errno == ERANGE)
		return h5_err_set(H5_ERR_INVAL, "\"%s\" is out of range of a %u-bit float", tmp, t->size * 8);
	/* what rounds to inf (to nearest even): from the largest finite value
	 * plus half its ulp (binary32: (2 - 2^-24) * 2^127; binary16: 65520) */
	if (isfinite(d) && t->size < 8 && fabs(d) >= (t->size == 4 ? ldexp(2.0 - ldexp(1.0, -24), 127) : 65520.0))
		return h5_err_set(H5_ERR_INVAL, "\"%s\" is out of range of a %u-bit float", tmp, t->size * 8);
	if (t->size == 8) {
		uint64_t v;

		memcpy(&v, &d, 8);
		put_int(p, v, 8, t->big_endian);
	} else {
		float f = (float)d;
		uint32_t v;

		if (t->size == 4) {
			memcpy(&v, &f, 4);
			put_int(p, v, 4, t->big_endian);
		} else {
			put_int(p, h5_value_half(f), 2, t->big_endian);
		}
	}
	return 0;
}

/* an enum member by name (as shown: TRUE, FALSE), else a number of the base */
static int parse_enum(uint8_t *p, const h5_dtype *t, const char *s, size_t n)
{
	for (size_t i = 0; i < t->nmembers; i++)
		if (strlen(t->enum_names[i]) == n && memcmp(t->enum_names[i], s, n) == 0) {
			memcpy(p, t->enum_values + i * t->base->size, t->base->size);
			return 0;
		}
	if (t->base->cls != H5T_INTEGER)
		return h5_err_set(H5_ERR_INVAL, "\"%.*s\" names no member of the enum", (int)n, s);
	return parse_int(p, t->base, s, n);
}

static int parse_one(uint8_t *p, const h5_dtype *t, const char *s, size_t n)
{
	switch (t->cls) {
	case H5T_INTEGER: return parse_int(p, t, s, n);
	case H5T_FLOAT: return parse_float(p, t, s, n);
	case H5T_ENUM: return parse_enum(p, t, s, n);
	default:
		return h5_err_set(H5_ERR_UNSUPPORTED, "values of datatype class %d cannot be set from text", (int)t->cls);
	}
}

/* A cell of a row of text (NAME.csv written: doc/h5fs.1 VIEWS), the
 * mirror of h5_value_text of one element: a number or enum as above
 * (white space around it ignored), or a fixed-length string verbatim
 * (the text shows its bytes up to the first NUL, a space-padded one
 * without its trailing spaces): it must hold no NUL and fit the type's
 * size, with its NUL when null-terminated; the rest is padded as the
 * type says. */
bool h5_value_cell_parsable(const h5_dtype *t)
{
	return h5_value_parsable(t) || t->cls == H5T_STRING;
}

int h5_value_parse_cell(uint8_t *p, const h5_dtype *t, const char *s, size_t n)
{
	const char *e = s + n;

	if (t->cls != H5T_STRING) {
		if (!h5_value_parsable(t))
			return h5_err_set(H5_ERR_UNSUPPORTED, "values of datatype class %d cannot be set from text",
					  (int)t->cls);
		trim(&s, &e);
		return parse_one(p, t, s, (size_t)(e - s));
	}
	if (memchr(s, 0, n))
		return h5_err_set(H5_ERR_INVAL, "a string of this type holds no NUL byte");
	if (n > t->size || (t->str_pad == 0 && n == t->size))
		return h5_err_set(H5_ERR_INVAL, "\"%.*s\" is longer than the %u bytes of the string type%s",
				  n > 40 ? 40 : (int)n, s, t->size, t->str_pad == 0 ? " (with its NUL)" : "");
	memcpy(p, s, n);
	memset(p + n, t->str_pad == 2 ? ' ' : 0, t->size - n);
	return 0;
}

bool h5_value_parsable(const h5_dtype *t)
{
	return t->cls == H5T_INTEGER || t->cls == H5T_FLOAT || (t->cls == H5T_ENUM && t->base && t->base->size == t->size);
}

int h5_value_parse(uint8_t **out, size_t *out_len, const h5_dtype *t, const char *text, size_t len,
		   uint64_t nelmts)
{
	const char *p = text, *end = text + len;
	uint8_t *buf;
	uint64_t size;
	uint64_t i = 0;
	int rc = 0;

	*out = NULL;
	if (!h5_value_parsable(t))
		return h5_err_set(H5_ERR_UNSUPPORTED, "values of datatype class %d cannot be set from text", (int)t->cls);
	if (h5_mul_overflow(nelmts, t->size, &size) || size > ((uint64_t)1 << 30))
		return h5_err_set(H5_ERR_LIMIT, "%llu elements are too many", (unsigned long long)nelmts);
	buf = calloc(1, size ? (size_t)size : 1);
	if (!buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory parsing a value");
	trim(&p, &end);
	if (nelmts == 0) {
		if (p != end)
			rc = h5_err_set(H5_ERR_INVAL, "the attribute has no elements: only an empty text sets it");
		goto out;
	}
	for (;;) {
		const char *s = p, *e = memchr(p, ',', (size_t)(end - p));

		if (!e)
			e = end;
		p = e < end ? e + 1 : end;
		trim(&s, &e);
		if (i == nelmts) {
			rc = h5_err_set(H5_ERR_INVAL, "more than the %llu elements of the attribute", (unsigned long long)nelmts);
			goto out;
		}
		rc = parse_one(buf + i * t->size, t, s, (size_t)(e - s));
		if (rc < 0)
			goto out;
		i++;
		if (e == end)
			break;
	}
	if (i != nelmts)
		rc = h5_err_set(H5_ERR_INVAL, "%llu elements given, the attribute has %llu", (unsigned long long)i,
				(unsigned long long)nelmts);
out:
	if (rc < 0) {
		free(buf);
		return rc;
	}
	*out = buf;
	*out_len = (size_t)size;
	return 0;
}
