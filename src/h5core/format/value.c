/*
 * value.c - attribute and fill values as text (what the daemon shows as
 * xattr values, and the fill value of user.h5.fill).
 *
 * The text rules (documented in doc/h5fs.1, ATTRIBUTES) aim at what a
 * person expects from `getfattr -d` and what a script can parse back:
 * numbers as Python prints them, strings verbatim, containers in Python-like
 * brackets. Values are decoded from the file layout of the datatype
 * (IV.A.2.d): any byte order, bit offset and precision; variable-length data
 * comes from the global heap (III.E) through h5_gheap_read().
 *
 * Everything here is a pure function of the file's bytes, so a getxattr
 * size query and the read that follows return the same length.
 */
#include "base.h"
#include "rd.h"
#include "strbuf.h"
#include "file.h"
#include "dtype.h"
#include "gheap.h"
#include "value.h"
#include "fltdig.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

static const char hexdig[] = "0123456789abcdef";

static int sb_hex(h5_sb *s, const uint8_t *p, size_t n, bool reverse)
{
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		uint8_t b = p[reverse ? n - 1 - i : i];
		char two[2] = { hexdig[b >> 4], hexdig[b & 15] };

		rc = h5_sb_put(s, two, 2);
	}
	return rc;
}

static int sb_put_hex(h5_sb *s, const char *prefix, const uint8_t *p, size_t n, bool reverse)
{
	int rc = h5_sb_puts(s, prefix);

	return rc ? rc : sb_hex(s, p, n, reverse);
}

/* ---- integers (IV.A.2.d class 0: byte order, offset, precision) -------- */

/* The element's bytes in little-endian order (any size). */
static void to_le(uint8_t *le, const uint8_t *p, size_t n, bool big_endian)
{
	for (size_t i = 0; i < n; i++)
		le[i] = big_endian ? p[n - 1 - i] : p[i];
}

/* Bits [pos, pos+n) of a little-endian byte string, n <= 64: the (at most
 * nine) bytes holding them, shifted down (a float's fields, per element of
 * a view). */
static uint64_t le_bits(const uint8_t *le, size_t pos, unsigned n)
{
	size_t first = pos / 8, end = (pos + n + 7) / 8;
	unsigned __int128 acc = 0;

	if (n == 0)
		return 0;
	for (size_t b = end; b-- > first;)
		acc = acc << 8 | le[b];
	acc >>= pos % 8;
	return n >= 64 ? (uint64_t)acc : (uint64_t)acc & (((uint64_t)1 << n) - 1);
}

/* An integer wider than 64 bits (precision up to 65535, dtype.c) in
 * decimal: its bits in 32-bit limbs, negated when the sign bit is set,
 * then divided by 10^9 until nothing is left. */
static int fmt_wide_integer(h5_sb *s, const h5_dtype *t, const uint8_t *p)
{
	unsigned prec = t->precision, nl = (prec + 31) / 32, top;
	size_t nd = 0, cap = (size_t)nl * 10 + 1;
	/* only the bytes holding the bits (offset and precision are 16-bit,
	 * dtype.c keeps them inside the element), not the whole element */
	size_t need = ((size_t)t->bit_offset + prec + 7) / 8;
	uint8_t *le = malloc(need);
	uint32_t *limb = calloc(nl, sizeof(*limb));
	char *dig = malloc(cap);
	bool neg = false;
	int rc;

	if (!le || !limb || !dig) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory formatting a %u-bit integer", prec);
		goto out;
	}
	for (size_t i = 0; i < need; i++)
		le[i] = t->big_endian ? p[t->size - 1 - i] : p[i];
	for (unsigned i = 0; i < nl; i++)
		limb[i] = (uint32_t)le_bits(le, t->bit_offset + (size_t)i * 32, prec - i * 32 < 32 ? prec - i * 32 : 32);
	if (t->is_signed && (limb[(prec - 1) / 32] >> ((prec - 1) % 32) & 1)) {
		uint64_t carry = 1;

		/* two's complement of the sign-extended value: invert, add one */
		neg = true;
		if (prec % 32)
			limb[nl - 1] |= ~(uint32_t)0 << (prec % 32);
		for (unsigned i = 0; i < nl; i++) {
			carry += (uint32_t)~limb[i];
			limb[i] = (uint32_t)carry;
			carry >>= 32;
		}
	}
	/* digits, least significant first, nine per division */
	for (top = nl; top > 0 && limb[top - 1] == 0; top--)
		;
	do {
		uint64_t rem = 0;

		for (unsigned i = top; i-- > 0;) {
			uint64_t cur = rem << 32 | limb[i];

			limb[i] = (uint32_t)(cur / 1000000000u);
			rem = cur % 1000000000u;
		}
		while (top > 0 && limb[top - 1] == 0)
			top--;
		for (int k = 0; k < 9 && (top > 0 || rem > 0 || k == 0); k++) {
			dig[nd++] = (char)('0' + rem % 10);
			rem /= 10;
		}
	} while (top > 0);
	if (neg)
		dig[nd++] = '-';
	for (size_t a = 0, b = nd - 1; a < b; a++, b--) {
		char c = dig[a];

		dig[a] = dig[b];
		dig[b] = c;
	}
	rc = h5_sb_put(s, dig, nd);
out:
	free(le);
	free(limb);
	free(dig);
	return rc;
}

static int fmt_integer(h5_sb *s, const h5_dtype *t, const uint8_t *p)
{
	uint8_t le[8];
	uint64_t v;
	unsigned prec = t->precision;

	if (t->size > 8 || prec > 64)
		return fmt_wide_integer(s, t, p);
	to_le(le, p, t->size, t->big_endian);
	v = le_bits(le, t->bit_offset, prec);
	if (t->is_signed && (v >> (prec - 1) & 1)) {
		/* sign-extend from the precision's top bit */
		if (prec < 64)
			v |= ~(uint64_t)0 << prec;
		return h5_sb_printf(s, "%lld", (long long)(int64_t)v);
	}
	return h5_sb_printf(s, "%llu", (unsigned long long)v);
}

/* ---- floats --------------------------------------------------------------
 * Decoded from the sign/exponent/mantissa fields of the datatype, so IEEE
 * half/single/double of either byte order and other layouts (x87 extended,
 * quad) all work; the text is the shortest decimal that reads back as the
 * same value of the element's format, laid out as Python's repr(). */

typedef struct fpfmt {
	int prec;      /* significand bits including the leading one */
	int emin, emax;/* exponent range of normal numbers (x = 1.f * 2^e) */
	bool exact_double, single;
} fpfmt;

static bool is_ieee(const h5_dtype *t, unsigned size, unsigned esz, unsigned msz)
{
	return t->size == size && t->exp_size == esz && t->mant_size == msz && t->norm == 2 &&
	       t->precision == size * 8 && t->bit_offset == 0 && t->mant_loc == 0 &&
	       t->exp_loc == msz && t->sign_loc == size * 8 - 1 && t->exp_bias == (1u << (esz - 1)) - 1;
}

/* Exponents and biases are 32-bit on disk; beyond +-20000 every long double
 * is 0 or infinite anyway, so clamp before converting to int (a hostile
 * bias must not overflow an int). */
static int exp_clamp(int64_t x)
{
	return x > 20000 ? 20000 : x < -20000 ? -20000 : (int)x;
}

static int float_decode(long double *out, fpfmt *ff, const h5_dtype *t, const uint8_t *p)
{
	uint8_t *le;
	unsigned mbits, mshift;
	uint64_t e, m, emask;
	long double v;
	bool neg, top_finite;
	h5_float_kind kind;

	/* VAX order is neither byte order; dtype.c leaves it as little-endian. */
	if ((t->bits & 0x41) == 0x41)
		return h5_err_set(H5_ERR_UNSUPPORTED, "VAX-ordered floating point values are not decoded");
	if (t->exp_size > 32)
		return h5_err_set(H5_ERR_UNSUPPORTED, "float with a %u-bit exponent", t->exp_size);
	/* IEEE double and single: the value is their bits (the .csv view
	 * decodes millions); below, the same value by fields, for any layout */
	if (is_ieee(t, 8, 11, 52) || is_ieee(t, 4, 8, 23)) {
		uint8_t b[8];
		double dv;
		float fv;

		to_le(b, p, t->size, t->big_endian);
		memset(ff, 0, sizeof(*ff));
		if (t->size == 8) {
			memcpy(&dv, b, 8);
			ff->prec = 53;
			ff->emin = -1022;
			ff->emax = 1023;
			ff->exact_double = true;
		} else {
			memcpy(&fv, b, 4);
			dv = fv;
			ff->prec = 24;
			ff->emin = -126;
			ff->emax = 127;
			ff->single = true;
		}
		*out = isnan(dv) ? NAN : dv;
		return 0;
	}
	le = malloc(t->size);
	if (!le)
		return h5_err_set(H5_ERR_NOMEM, "out of memory decoding a float");
	to_le(le, p, t->size, t->big_endian);
	mbits = t->mant_size > 64 ? 64 : t->mant_size;
	mshift = t->mant_size - mbits;  /* low mantissa bits below double precision anyway */
	neg = le_bits(le, t->sign_loc, 1);
	e = le_bits(le, t->exp_loc, t->exp_size);
	m = mbits ? le_bits(le, t->mant_loc + mshift, mbits) : 0;
	free(le);
	emask = t->exp_size == 64 ? ~(uint64_t)0 : ((uint64_t)1 << t->exp_size) - 1;
	kind = h5_dtype_float_kind(t);
	/* OCP FP8 E4M3 (HDF5 2.x H5T_FLOAT_F8E4M3) has no infinity and only
	 * S.1111.111 is NaN; the OCP FP6 and FP4 formats have neither: their
	 * top exponent holds numbers like any other */
	top_finite = kind == H5_FLOAT_E2M3 || kind == H5_FLOAT_E3M2 || kind == H5_FLOAT_E2M1 ||
		     (kind == H5_FLOAT_E4M3 && m != 7);
	if (e == emask && !top_finite) {
		v = m ? NAN : INFINITY;
	} else if (t->norm == 2) {
		/* implied leading one; exponent 0 is a denormal with exponent 1-bias */
		long double frac = ldexpl((long double)m, -(int)mbits);
		int64_t ex = (e == 0 ? 1 : (int64_t)e) - (int64_t)t->exp_bias;

		v = ldexpl(e == 0 ? frac : 1.0L + frac, exp_clamp(ex));
	} else {
		/* the leading one is stored (x87): m / 2^(mant_size-1) * 2^(e-bias) */
		v = ldexpl((long double)m, exp_clamp((int64_t)e - (int64_t)t->exp_bias - (int64_t)(t->mant_size - 1) +
						     (int64_t)mshift));
	}
	*out = neg ? -v : v;

	memset(ff, 0, sizeof(*ff));
	ff->prec = (int)t->mant_size + (t->norm == 2);
	ff->emin = exp_clamp(1 - (int64_t)t->exp_bias);
	ff->emax = exp_clamp((int64_t)emask - 1 - (int64_t)t->exp_bias);
	if (kind == H5_FLOAT_E4M3 || kind == H5_FLOAT_E2M3 || kind == H5_FLOAT_E3M2 || kind == H5_FLOAT_E2M1)
		ff->emax++; /* the top exponent holds numbers (E4M3: up to 448) */
	ff->single = is_ieee(t, 4, 8, 23);
	ff->exact_double = is_ieee(t, 8, 11, 52) || ff->prec > 53 || ff->emax > 1023 || ff->emin < -1022;
	if (h5_dtype_conv_float(t)) {
		/* an n-bit float reads as the IEEE float of its size
		 * (dtype_conv.c): the text is that value's, as NumPy prints it */
		memset(ff, 0, sizeof(*ff));
		if (t->size == 8) {
			*out = (double)*out;
			ff->exact_double = true;
		} else if (t->size == 4) {
			*out = (float)*out;
			ff->single = true;
		} else {
			ff->prec = 11;
			ff->emin = -14;
			ff->emax = 15;
		}
	}
	return 0;
}

int h5_value_float(long double *out, const h5_dtype *t, const uint8_t *p)
{
	fpfmt ff;

	return float_decode(out, &ff, t, p);
}

/* x rounded to the nearest value of format ff (ties to even). */
static double fp_quantize(double x, const fpfmt *ff)
{
	int ex;
	double q, r, limit;

	if (x == 0 || !isfinite(x))
		return x;
	frexp(x, &ex);
	ex -= 1;                        /* x = 1.f * 2^ex */
	if (ex < ff->emin)
		ex = ff->emin;          /* denormals: fixed quantum */
	q = ldexp(1.0, ex - (ff->prec - 1));
	r = nearbyint(x / q) * q;
	limit = ldexp(2.0 - ldexp(1.0, -(ff->prec - 1)), ff->emax);
	/* beyond halfway past the largest finite value: infinity */
	if (fabs(r) > limit)
		return x < 0 ? -INFINITY : INFINITY;
	return r;
}

static bool fp_roundtrips(const char *txt, double v, const fpfmt *ff)
{
	if (ff->single)
		return strtof(txt, NULL) == (float)v;
	if (ff->exact_double)
		return strtod(txt, NULL) == v;
	return fp_quantize(strtod(txt, NULL), ff) == v;
}

/* Python's repr() layout of digits (no trailing zeros) whose first has
 * decimal exponent ex: positional for exponents -4..15 (with ".0" when
 * integral), else d.ddde+XX. */
static int fmt_repr_digits(h5_sb *s, bool neg, const char *digits, size_t nd, int ex)
{
	char out[64];
	size_t o = 0;

	if (neg)
		out[o++] = '-';
	if (ex >= -4 && ex < 16) {
		if (ex >= 0) {
			for (int i = 0; i <= ex; i++)
				out[o++] = (size_t)i < nd ? digits[i] : '0';
			out[o++] = '.';
			if ((size_t)ex + 1 < nd)
				for (size_t i = (size_t)ex + 1; i < nd; i++)
					out[o++] = digits[i];
			else
				out[o++] = '0';
		} else {
			out[o++] = '0';
			out[o++] = '.';
			for (int i = 0; i < -ex - 1; i++)
				out[o++] = '0';
			for (size_t i = 0; i < nd; i++)
				out[o++] = digits[i];
		}
		out[o] = '\0';
	} else {
		out[o++] = digits[0];
		if (nd > 1) {
			out[o++] = '.';
			for (size_t i = 1; i < nd; i++)
				out[o++] = digits[i];
		}
		snprintf(out + o, sizeof(out) - o, "e%c%02d", ex < 0 ? '-' : '+', ex < 0 ? -ex : ex);
	}
	return h5_sb_puts(s, out);
}

/* The same layout of "%.*e" output. */
static int fmt_repr(h5_sb *s, const char *e_txt)
{
	char digits[40];
	const char *p = e_txt;
	size_t nd = 0;
	bool neg = *p == '-';

	if (neg)
		p++;
	for (; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9' && nd < sizeof(digits) - 1)
			digits[nd++] = *p;
	if (*p != 'e' || nd == 0)
		return h5_err_set(H5_ERR_INVAL, "internal: unexpected float text \"%s\"", e_txt);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	return fmt_repr_digits(s, neg, digits, nd, atoi(p + 1));
}

static int fmt_double(h5_sb *s, double v, const fpfmt *ff)
{
	char txt[40];

	if (isnan(v))
		return h5_sb_puts(s, "nan");
	if (isinf(v))
		return h5_sb_puts(s, v < 0 ? "-inf" : "inf");
	if (v == 0)
		return h5_sb_puts(s, signbit(v) ? "-0.0" : "0.0");
	/* A normal IEEE double (single): the shortest digits that read back,
	 * probed from 16 (8) digits (fltdig.c), by integer arithmetic: the
	 * .csv view formats millions (bench/README.md). Other formats below:
	 * from 1 digit up, each text checked against the format's rounding. */
	if ((ff->exact_double && !ff->single && fabs(v) >= DBL_MIN && ff->prec == 53) ||
	    (ff->single && fabs(v) >= FLT_MIN)) {
		char digits[H5_FLTDIG_MAX];
		int ex, nd = h5_fltdig(digits, &ex, v, ff->single);

		return fmt_repr_digits(s, v < 0, digits, (size_t)nd, ex);
	}
	for (int d = 1; d <= 17; d++) {
		snprintf(txt, sizeof(txt), "%.*e", d - 1, v);
		if (fp_roundtrips(txt, v, ff))
			return fmt_repr(s, txt);
	}
	snprintf(txt, sizeof(txt), "%.16e", v);
	return fmt_repr(s, txt);
}

static int fmt_float(h5_sb *s, const h5_dtype *t, const uint8_t *p)
{
	long double v = 0;
	fpfmt ff;
	int rc = float_decode(&v, &ff, t, p);

	if (rc == H5_ERR_UNSUPPORTED) {
		h5_err_clear();
		return sb_put_hex(s, "0x", p, t->size, false);
	}
	if (rc < 0)
		return rc;
	return fmt_double(s, (double)v, &ff);
}

/* A complex number (class 11, rectangular: real part then imaginary part)
 * as Python writes one, the parts as fmt_float does: (1.5-2.0j). */
static int fmt_complex(h5_sb *s, const h5_dtype *t, const uint8_t *p)
{
	h5_sb im = { 0 };
	int rc = h5_sb_put(s, "(", 1);

	if (rc == 0)
		rc = fmt_float(s, t->base, p);
	if (rc == 0)
		rc = fmt_float(&im, t->base, p + t->base->size);
	if (rc == 0 && im.len && im.p[0] != '-' && im.p[0] != '+')
		rc = h5_sb_put(s, "+", 1);
	if (rc == 0)
		rc = h5_sb_put(s, im.p, im.len);
	free(im.p);
	return rc ? rc : h5_sb_put(s, "j)", 2);
}

/* ---- strings ------------------------------------------------------------ */

/* Quoted form used inside containers: "..." with \" \\ and C escapes. */
static int put_quoted(h5_sb *s, const uint8_t *p, size_t n)
{
	int rc = h5_sb_put(s, "\"", 1);

	for (size_t i = 0; i < n && rc == 0; i++) {
		uint8_t c = p[i];

		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };
			rc = h5_sb_put(s, e, 2);
		} else if (c == '\n') {
			rc = h5_sb_put(s, "\\n", 2);
		} else if (c == '\t') {
			rc = h5_sb_put(s, "\\t", 2);
		} else if (c == '\r') {
			rc = h5_sb_put(s, "\\r", 2);
		} else if (c < 0x20 || c == 0x7f) {
			rc = h5_sb_printf(s, "\\x%02x", c);
		} else {
			rc = h5_sb_put(s, &c, 1);
		}
	}
	return rc ? rc : h5_sb_put(s, "\"", 1);
}

static int put_string(h5_sb *s, const uint8_t *p, size_t n, bool quoted)
{
	return quoted ? put_quoted(s, p, n) : h5_sb_put(s, p, n);
}

/* Fixed-length string (class 3): the value ends at the first NUL for every
 * padding; space padding also drops the trailing spaces. */
static size_t fixed_str_len(const h5_dtype *t, const uint8_t *p)
{
	const uint8_t *nul = memchr(p, 0, t->size);
	size_t n = nul ? (size_t)(nul - p) : t->size;

	if (t->str_pad == 2)
		while (n > 0 && p[n - 1] == ' ')
			n--;
	return n;
}

/* ---- variable-length data (class 9): 4-byte count + global heap ID ------ */

typedef struct vl_ref {
	uint32_t count;
	uint64_t addr;
	uint32_t index;
} vl_ref;

static int vl_ref_decode(vl_ref *out, h5_file *f, const h5_dtype *t, const uint8_t *p)
{
	size_t need;

	if (!f)
		return h5_err_set(H5_ERR_INVAL, "variable-length value without a file");
	need = 4 + (size_t)f->fmt.sizeof_addr + 4;
	if (t->size < need)
		return h5_err_set(H5_ERR_FORMAT, "variable-length datatype of %u bytes cannot hold a heap reference "
				  "(%zu bytes)", t->size, need);
	out->count = (uint32_t)h5_le_decode(p, 4);
	out->addr = h5_le_decode(p + 4, f->fmt.sizeof_addr);
	if (f->fmt.sizeof_addr < 8 && out->addr == (((uint64_t)1 << (8 * f->fmt.sizeof_addr)) - 1))
		out->addr = H5_ADDR_UNDEF;
	else if (f->fmt.sizeof_addr == 8 && out->addr == UINT64_MAX)
		out->addr = H5_ADDR_UNDEF;
	out->index = (uint32_t)h5_le_decode(p + 4 + f->fmt.sizeof_addr, 4);
	return 0;
}

/* The heap object of a vlen element, checked to hold count * base bytes.
 * *obj is NULL (and *len 0) for an empty element. */
static int vl_read(uint8_t **obj, size_t *len, h5_file *f, const h5_dtype *t, const uint8_t *p)
{
	uint64_t need;
	vl_ref ref = { 0 };
	int rc;

	*obj = NULL;
	*len = 0;
	rc = vl_ref_decode(&ref, f, t, p);
	if (rc < 0)
		return rc;
	/* address 0 is a null element whatever the count (libhdf5's
	 * H5T__vlen_disk_isnull), the same rule as dataset.c */
	if (ref.count == 0 || ref.addr == 0)
		return 0;
	if (t->vlen_type == 1)
		need = ref.count;
	else if (h5_mul_overflow(ref.count, t->base->size, &need))
		return h5_err_set(H5_ERR_FORMAT, "variable-length element of %u items overflows", ref.count);
	rc = h5_gheap_read(obj, len, f, ref.addr, ref.index);
	if (rc < 0)
		return h5_err_wrap(rc, "variable-length value: ");
	if (*len < need) {
		free(*obj);
		*obj = NULL;
		return h5_err_set(H5_ERR_FORMAT, "variable-length element of %u items needs %llu bytes, its global "
				  "heap object 0x%llx/%u has %zu", ref.count, (unsigned long long)need,
				  (unsigned long long)ref.addr, ref.index, *len);
	}
	*len = (size_t)need;
	return 0;
}

/* ---- the global heap collections values reference (space report) -------- */

static int heap_refs_run(h5_file *f, const h5_dtype *t, const uint8_t *p, size_t len, uint64_t n, unsigned depth,
			 h5_heap_ref_cb cb, void *ud);

static int heap_refs_elem(h5_file *f, const h5_dtype *t, const uint8_t *p, unsigned depth, h5_heap_ref_cb cb,
			  void *ud)
{
	vl_ref ref;
	uint8_t *obj = NULL;
	size_t len = 0;
	int rc = 0;

	if (depth > H5_MAX_DTYPE_DEPTH)
		return h5_err_set(H5_ERR_LIMIT, "datatype nested deeper than %d", H5_MAX_DTYPE_DEPTH);
	switch (t->cls) {
	case H5T_VLEN:
		rc = vl_ref_decode(&ref, f, t, p);
		if (rc < 0 || ref.count == 0 || ref.addr == 0 || !h5_addr_defined(ref.addr))
			return rc;
		rc = cb(ref.addr, ud);
		if (rc != 0 || t->vlen_type == 1 || !h5_dtype_has_heap_refs(t->base))
			return rc;
		/* a sequence of sequences: its heap object holds more references */
		rc = vl_read(&obj, &len, f, t, p);
		if (rc == 0)
			rc = heap_refs_run(f, t->base, obj, len, ref.count, depth + 1, cb, ud);
		free(obj);
		return rc;
	case H5T_REFERENCE: {
		/* IV.A.2.d class 7, type 1: a dataset region reference is a
		 * global heap ID (collection address, object index); address 0
		 * is a null reference */
		h5_rd r;
		uint64_t a;

		if (t->ref_type != 1)
			return 0;
		h5_rd_init(&r, p, t->size);
		a = h5_rd_addr(&r, &f->fmt);
		return a == 0 || !h5_addr_defined(a) ? 0 : cb(a, ud);
	}
	case H5T_COMPOUND:
		for (size_t i = 0; i < t->nmembers && rc == 0; i++) {
			const h5_dtype_member *m = &t->members[i];

			if (m->offset > t->size || m->type->size > t->size - m->offset)
				return h5_err_set(H5_ERR_FORMAT, "compound member %zu lies outside its %u-byte type", i,
						  t->size);
			rc = heap_refs_elem(f, m->type, p + m->offset, depth + 1, cb, ud);
		}
		return rc;
	case H5T_ARRAY: {
		uint64_t n = 1;

		for (unsigned i = 0; i < t->arank; i++)
			n *= t->adims[i];
		if (!t->base->size || n > t->size / t->base->size)
			return h5_err_set(H5_ERR_FORMAT, "array type of %llu elements exceeds its %u bytes",
					  (unsigned long long)n, t->size);
		return heap_refs_run(f, t->base, p, t->size, n, depth + 1, cb, ud);
	}
	default:
		return 0;
	}
}

static int heap_refs_run(h5_file *f, const h5_dtype *t, const uint8_t *p, size_t len, uint64_t n, unsigned depth,
			 h5_heap_ref_cb cb, void *ud)
{
	int rc = 0;

	if (!t->size || n > len / t->size)
		return h5_err_set(H5_ERR_FORMAT, "%llu elements of %u bytes need more than %zu bytes",
				  (unsigned long long)n, t->size, len);
	for (uint64_t i = 0; i < n && rc == 0; i++)
		rc = heap_refs_elem(f, t, p + i * t->size, depth, cb, ud);
	return rc;
}

int h5_value_heap_refs(h5_file *f, const h5_dtype *t, const uint8_t *data, size_t data_len, uint64_t nelmts,
		       h5_heap_ref_cb cb, void *ud)
{
	if (!h5_dtype_has_heap_refs(t))
		return 0;
	return heap_refs_run(f, t, data, data_len, nelmts, 0, cb, ud);
}

/* ---- any element --------------------------------------------------------- */

static int fmt_elem(h5_sb *s, h5_file *f, const h5_dtype *t, const uint8_t *p, unsigned depth, bool nested);

static bool is_string(const h5_dtype *t)
{
	return t->cls == H5T_STRING || (t->cls == H5T_VLEN && t->vlen_type == 1);
}

/* "[a, b, ...]" over the dims [dim, rank) of an array type, C order. */
static int fmt_array_dims(h5_sb *s, h5_file *f, const h5_dtype *t, const uint8_t **p, unsigned dim,
			  unsigned depth)
{
	int rc = h5_sb_put(s, "[", 1);

	for (uint32_t i = 0; i < t->adims[dim] && rc == 0; i++) {
		if (i)
			rc = h5_sb_put(s, ", ", 2);
		if (rc)
			break;
		if (dim + 1 < t->arank) {
			rc = fmt_array_dims(s, f, t, p, dim + 1, depth);
		} else {
			rc = fmt_elem(s, f, t->base, *p, depth + 1, true);
			*p += t->base->size;
		}
	}
	return rc ? rc : h5_sb_put(s, "]", 1);
}

static int fmt_enum(h5_sb *s, const h5_dtype *t, const uint8_t *p)
{
	for (size_t i = 0; i < t->nmembers; i++)
		if (t->enum_values && memcmp(t->enum_values + i * t->size, p, t->size) == 0)
			return h5_sb_puts(s, t->enum_names[i]);
	/* a value that names no member: the number */
	return fmt_integer(s, t->base, p);
}

static int fmt_compound(h5_sb *s, h5_file *f, const h5_dtype *t, const uint8_t *p, unsigned depth)
{
	int rc = h5_sb_put(s, "{", 1);

	for (size_t i = 0; i < t->nmembers && rc == 0; i++) {
		const h5_dtype_member *m = &t->members[i];

		if (i)
			rc = h5_sb_put(s, ", ", 2);
		if (rc == 0)
			rc = h5_sb_puts(s, m->name);
		if (rc == 0)
			rc = h5_sb_put(s, ": ", 2);
		if (rc == 0)
			rc = fmt_elem(s, f, m->type, p + m->offset, depth + 1, true);
	}
	return rc ? rc : h5_sb_put(s, "}", 1);
}

static int fmt_vlen(h5_sb *s, h5_file *f, const h5_dtype *t, const uint8_t *p, unsigned depth, bool nested)
{
	uint8_t *obj = NULL;
	size_t len = 0;
	int rc;

	rc = vl_read(&obj, &len, f, t, p);
	if (rc < 0)
		return rc;
	if (t->vlen_type == 1) {
		const uint8_t *nul = len ? memchr(obj, 0, len) : NULL;

		rc = put_string(s, obj, nul ? (size_t)(nul - obj) : len, nested);
	} else {
		size_t n = t->base->size ? len / t->base->size : 0;

		rc = h5_sb_put(s, "[", 1);
		for (size_t i = 0; i < n && rc == 0; i++) {
			if (i)
				rc = h5_sb_put(s, ", ", 2);
			if (rc == 0)
				rc = fmt_elem(s, f, t->base, obj + i * t->base->size, depth + 1, true);
		}
		if (rc == 0)
			rc = h5_sb_put(s, "]", 1);
	}
	free(obj);
	return rc;
}

static int fmt_reference(h5_sb *s, h5_file *f, const h5_dtype *t, const uint8_t *p)
{
	unsigned asz = f ? f->fmt.sizeof_addr : 8;

	if (t->ref_type == 0 && t->size >= asz) {
		uint64_t a = h5_le_decode(p, asz);

		return h5_sb_printf(s, "obj:0x%llx", (unsigned long long)a);
	}
	return sb_put_hex(s, t->ref_type == 1 ? "region:" : "ref:", p, t->size, false);
}

static int fmt_elem(h5_sb *s, h5_file *f, const h5_dtype *t, const uint8_t *p, unsigned depth, bool nested)
{
	/* dtype.c limits nesting; vlen nesting adds no depth beyond the type's */
	if (depth > H5_MAX_DTYPE_DEPTH + 1)
		return h5_err_set(H5_ERR_LIMIT, "value nested deeper than %d levels", H5_MAX_DTYPE_DEPTH);
	switch (t->cls) {
	case H5T_INTEGER:
		return fmt_integer(s, t, p);
	case H5T_FLOAT:
		return fmt_float(s, t, p);
	case H5T_STRING:
		return put_string(s, p, fixed_str_len(t, p), nested);
	case H5T_BITFIELD:
		/* the number, most significant byte first */
		return sb_put_hex(s, "0x", p, t->size, !t->big_endian);
	case H5T_OPAQUE:
	case H5T_TIME:
		return sb_put_hex(s, "0x", p, t->size, false);
	case H5T_ENUM:
		return fmt_enum(s, t, p);
	case H5T_COMPOUND:
		return fmt_compound(s, f, t, p, depth);
	case H5T_ARRAY:
		return fmt_array_dims(s, f, t, &p, 0, depth);
	case H5T_VLEN:
		return fmt_vlen(s, f, t, p, depth, nested);
	case H5T_REFERENCE:
		return fmt_reference(s, f, t, p);
	case H5T_COMPLEX:
		return fmt_complex(s, t, p);
	}
	return h5_err_set(H5_ERR_FORMAT, "value of unknown datatype class %d", t->cls);
}

static int check_extent(const h5_dtype *t, size_t data_len, uint64_t nelmts)
{
	uint64_t need;

	if (h5_mul_overflow(nelmts, t->size, &need) || need > data_len)
		return h5_err_set(H5_ERR_FORMAT, "value of %llu elements of %u bytes does not fit in %zu bytes",
				  (unsigned long long)nelmts, t->size, data_len);
	return 0;
}

int h5_value_text(char **out, size_t *out_len, h5_file *f, const h5_dtype *t,
		  const uint8_t *data, size_t data_len, uint64_t nelmts)
{
	const char *sep = is_string(t) ? "\n" : ", ";
	h5_sb s = { 0 };
	int rc;

	*out = NULL;
	*out_len = 0;
	rc = check_extent(t, data_len, nelmts);
	if (rc < 0)
		return rc;
	for (uint64_t i = 0; i < nelmts && rc == 0; i++) {
		if (i)
			rc = h5_sb_puts(&s, sep);
		if (rc == 0)
			rc = fmt_elem(&s, f, t, data + i * t->size, 1, false);
	}
	if (rc == 0)
		rc = h5_sb_finish(out, out_len, &s);
	free(s.p);
	return rc;
}

int h5_value_raw(uint8_t **out, size_t *out_len, h5_file *f, const h5_dtype *t,
		 const uint8_t *data, size_t data_len, uint64_t nelmts)
{
	h5_sb s = { 0 };
	int rc;

	*out = NULL;
	*out_len = 0;
	rc = check_extent(t, data_len, nelmts);
	if (rc < 0)
		return rc;
	if (t->cls == H5T_VLEN && t->vlen_type == 1) {
		/* heap references mean nothing outside the file: the strings */
		for (uint64_t i = 0; i < nelmts && rc == 0; i++) {
			uint8_t *obj = NULL;
			size_t len = 0;

			if (i)
				rc = h5_sb_put(&s, "", 1);
			if (rc == 0)
				rc = vl_read(&obj, &len, f, t, data + i * t->size);
			if (rc == 0)
				rc = h5_sb_put(&s, obj, len);
			free(obj);
		}
	} else {
		rc = h5_sb_put(&s, data, (size_t)(nelmts * t->size));
	}
	if (rc == 0)
		rc = h5_sb_finish((char **)out, out_len, &s);
	free(s.p);
	return rc;
}
