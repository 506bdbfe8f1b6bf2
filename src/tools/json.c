/*
 * json.c - JSON text for h5fs-ls: the string builder of h5util.h,
 * strings, base64, numbers as Python prints them, and element values of
 * the engine's type views as JSON (json.h).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void jb_printf(struct jb *b, const char *fmt, ...)
{
	va_list ap;

	if (b->nomem)
		return;
	b->sb.max = SIZE_MAX;
	va_start(ap, fmt);
	if (h5_sb_vprintf(&b->sb, fmt, ap) < 0)
		b->nomem = 1;
	va_end(ap);
}

void jb_done(struct jb *b)
{
	if (b->p)
		return;         /* done before */
	if (b->nomem || h5_sb_finish(&b->p, &b->len, &b->sb) < 0) {
		free(b->sb.p);
		b->sb = (h5_sb){ 0 };
		b->p = NULL;
		b->nomem = 1;
	}
}

static void jb_put(struct jb *b, const char *p, size_t n)
{
	if (b->nomem || !n)
		return;
	b->sb.max = SIZE_MAX;
	if (h5_sb_put(&b->sb, p, n) < 0)
		b->nomem = 1;
}

/* A JSON string; bytes that are not UTF-8 become \u00XX (Latin-1). Runs
 * of bytes written as they are go in at once (references are millions
 * of keys). */
void jb_str(struct jb *b, const char *s, size_t len)
{
	int utf8 = h5_utf8_valid(s, len);
	size_t run = 0;

	jb_put(b, "\"", 1);
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];

		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			jb_put(b, s + run, i - run);
			jb_put(b, esc, 2);
			run = i + 1;
		} else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8)) {
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			jb_put(b, s + run, i - run);
			jb_put(b, esc, 6);
			run = i + 1;
		}
	}
	jb_put(b, s + run, len - run);
	jb_put(b, "\"", 1);
}

void jb_base64(struct jb *b, const uint8_t *p, size_t n)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char out[4 * 256];
	size_t k = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);

		out[k++] = tab[v >> 18];
		out[k++] = tab[(v >> 12) & 63];
		out[k++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		out[k++] = i + 2 < n ? tab[v & 63] : '=';
		if (k == sizeof(out)) {
			jb_put(b, out, k);
			k = 0;
		}
	}
	jb_put(b, out, k);
}

/* The shortest decimal that reads back as the same value, always with a
 * '.' or an exponent: a float (Python's repr). */
void jb_float(struct jb *b, double v, int single, int quoted_special)
{
	char t[40];

	if (isnan(v) || isinf(v)) {
		const char *w = isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";

		jb_printf(b, quoted_special ? "\"%s\"" : "%s", w);
		return;
	}
	for (int p = 1; p <= 17; p++) {
		snprintf(t, sizeof(t), "%.*g", p, v);
		if (single ? (float)strtod(t, NULL) == (float)v : strtod(t, NULL) == v)
			break;
	}
	/* "3" would read back as an integer (zarr, json.loads): "3.0", as
	 * Python's repr writes it */
	jb_printf(b, "%s%s", t, strpbrk(t, ".e") ? "" : ".0");
}

/* ---- element values as JSON ----------------------------------------------------- */

static uint64_t load_uint(const uint8_t *p, unsigned size, int big)
{
	uint64_t v = 0;

	/* (at most 8 bytes: a shift by 64 is undefined) */
	for (unsigned i = 0; i < size && i < 8; i++)
		v |= (uint64_t)p[big ? size - 1 - i : i] << (8 * i);
	return v;
}

static double half_to_double(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);

	return h & 0x8000 ? -v : v;
}

/* A number of typestr t ("<f8", "|b1", ">i2", ...) at p. */
void json_number(struct jb *b, const char *t, const uint8_t *p, int quoted_special)
{
	int big = t[0] == '>';
	unsigned size = (unsigned)atoi(t + 2);
	uint64_t u;

	if (t[1] == 'c' && (size == 8 || size == 16)) {
		/* complex (HDF5 2.x class 11): [real, imaginary], each a float
		 * of half the size */
		char part[8];

		snprintf(part, sizeof(part), "%cf%u", t[0], size / 2);
		jb_printf(b, "[");
		json_number(b, part, p, quoted_special);
		jb_printf(b, ", ");
		json_number(b, part, p + size / 2, quoted_special);
		jb_printf(b, "]");
		return;
	}
	u = load_uint(p, size, big);

	switch (t[1]) {
	case 'b':
		jb_printf(b, "%s", u ? "true" : "false");
		break;
	case 'i':
		if (size < 8 && (u >> (8 * size - 1)) & 1)
			u |= ~(uint64_t)0 << (8 * size);
		jb_printf(b, "%" PRId64, (int64_t)u);
		break;
	case 'f':
		if (size == 2) {
			jb_float(b, half_to_double((uint16_t)u), 1, quoted_special);
		} else if (size == 4) {
			uint32_t w = (uint32_t)u;
			float x;

			memcpy(&x, &w, 4);
			jb_float(b, x, 1, quoted_special);
		} else {
			double x;

			memcpy(&x, &u, 8);
			jb_float(b, x, 0, quoted_special);
		}
		break;
	default:
		jb_printf(b, "%" PRIu64, u);
		break;
	}
}

/* Whether values of type t have a JSON form (json_value). */
int json_expressible(const h5_type_view *t)
{
	switch (t->kind) {
	case H5_TYPE_NUMBER:
	case H5_TYPE_STRING:
		return 1;
	case H5_TYPE_COMPOUND:
	case H5_TYPE_ARRAY:
		for (size_t i = 0; i < t->nmembers; i++)
			if (!json_expressible(&t->members[i]))
				return 0;
		return 1;
	default:
		return 0;
	}
}

/* Elements of type t from p, C order, as lists nested over dims[level..rank). */
void json_nested(struct jb *b, const h5_type_view *t, const uint8_t *p, const uint64_t *dims,
			unsigned rank, unsigned level, uint64_t *k)
{
	if (level == rank) {
		json_value(b, t, p + (*k)++ * t->size);
		return;
	}
	jb_printf(b, "[");
	for (uint64_t i = 0; i < dims[level]; i++) {
		jb_printf(b, "%s", i ? ", " : "");
		json_nested(b, t, p, dims, rank, level + 1, k);
	}
	jb_printf(b, "]");
}

/* One element: numbers, strings cut at the first NUL, compounds as
 * objects, array types as nested lists. */
void json_value(struct jb *b, const h5_type_view *t, const uint8_t *p)
{
	switch (t->kind) {
	case H5_TYPE_NUMBER:
		json_number(b, t->typestr, p, 0);
		break;
	case H5_TYPE_STRING: {
		const uint8_t *nul = memchr(p, 0, t->size);
		size_t n = nul ? (size_t)(nul - p) : t->size;

		/* space-padded: the padding is not part of the value */
		while (t->str_pad == 2 && n && p[n - 1] == ' ')
			n--;
		jb_str(b, (const char *)p, n);
		break;
	}
	case H5_TYPE_COMPOUND:
		jb_printf(b, "{");
		for (size_t i = 0; i < t->nmembers; i++) {
			jb_printf(b, "%s", i ? ", " : "");
			jb_str(b, t->members[i].name, strlen(t->members[i].name));
			jb_printf(b, ": ");
			json_value(b, &t->members[i], p + t->members[i].offset);
		}
		jb_printf(b, "}");
		break;
	case H5_TYPE_ARRAY: {
		uint64_t dims[32], k = 0;

		for (unsigned i = 0; i < t->arank; i++)
			dims[i] = t->adims[i];
		json_nested(b, &t->members[0], p, dims, t->arank, 0, &k);
		break;
	}
	default:
		jb_printf(b, "null");
		break;
	}
}

