/*
 * npy.c - parsing the header of a .npy stream (npy.h; the format of
 * numpy.lib.format, versions 1.0-3.0):
 *
 *   "\x93NUMPY" major minor  header_len (u16 in 1.x, u32 in 2.x/3.x, LE)
 *   header: a Python dict literal (latin-1; UTF-8 in 3.x), padded with
 *   spaces and ended by '\n', e.g.
 *   {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
 *
 * Only what np.save writes is taken: the three keys, a dtype string, a
 * tuple of non-negative integers.
 */
#include "npy.h"
#include "h5core.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

typedef struct cur {
	const char *p, *end;
} cur;

static void skip_ws(cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t'))
		c->p++;
}

static bool eat(cur *c, char ch)
{
	skip_ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

/* A quoted string ('...' or "...", no escapes: np.save writes none in the
 * keys and dtype strings it takes) into out. */
static bool str(cur *c, char *out, size_t cap)
{
	char q;
	size_t n = 0;

	skip_ws(c);
	if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
		return false;
	q = *c->p++;
	while (c->p < c->end && *c->p != q) {
		if (*c->p == '\\' || n + 1 >= cap)
			return false;
		out[n++] = *c->p++;
	}
	if (c->p >= c->end)
		return false;
	c->p++;
	out[n] = '\0';
	return true;
}

static bool num(cur *c, uint64_t *v)
{
	uint64_t x = 0;
	bool any = false;

	skip_ws(c);
	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		unsigned d = (unsigned)(*c->p++ - '0');

		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
		any = true;
	}
	/* Python 2's long suffix (old files) */
	if (any && c->p < c->end && *c->p == 'L')
		c->p++;
	*v = x;
	return any;
}

/* descr: byte order ('<', '>', '|', '='), kind, item size. */
static int descr(npy_header *h, const char *d, char *err, size_t errlen)
{
	char order = d[0], kind;
	unsigned long size;
	char *endp;

	if (order != '<' && order != '>' && order != '|' && order != '=')
		return fail(err, errlen, -EINVAL, "descr '%s': no byte order", d);
	kind = d[1];
	size = strtoul(d + 2, &endp, 10);
	if (!kind || endp == d + 2 || *endp)
		return fail(err, errlen, -EOPNOTSUPP, "descr '%s': no type h5py stores", d);
	switch (kind) {
	case 'U':
		/* unicode (UCS-4): stored as h5py's string_dtype, variable-length
		 * UTF-8, what anndata writes string arrays as */
		if (size == 0 || size > UINT32_MAX / 4)
			return fail(err, errlen, -EOPNOTSUPP, "descr '%s': an empty unicode type", d);
		size *= 4;
		break;
	case 'S':
		/* bytes: h5py's fixed-length string */
		if (size == 0 || size > UINT32_MAX)
			return fail(err, errlen, -EOPNOTSUPP, "descr '%s': an empty bytes type", d);
		h->descr_len = (size_t)snprintf(h->descr, sizeof(h->descr), "'|S%lu'", size);
		break;
	case 'b':
		if (size != 1)
			return fail(err, errlen, -EINVAL, "descr '%s': bool of %lu bytes", d, size);
		break;
	case 'i':
	case 'u':
		if (size != 1 && size != 2 && size != 4 && size != 8)
			return fail(err, errlen, -EOPNOTSUPP, "descr '%s': integers of %lu bytes", d, size);
		break;
	case 'f':
		if (size != 2 && size != 4 && size != 8)
			return fail(err, errlen, -EOPNOTSUPP, "descr '%s': only IEEE floats of 2, 4 and 8 bytes", d);
		break;
	case 'c':
		if (size != 8 && size != 16)
			return fail(err, errlen, -EOPNOTSUPP, "descr '%s': only complex of 8 and 16 bytes", d);
		break;
	default:
		return fail(err, errlen, -EOPNOTSUPP, "descr '%s': %s", d,
			    kind == 'O' ? "Python objects (pickled): h5py stores none" : "no type h5py stores");
	}
	h->kind = kind;
	h->itemsize = (unsigned)size;
	/* '=' is the writer's native order; np.save writes '<' or '>' */
	h->big_endian = size > 1 && (order == '>' || (order == '=' && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__));
	return 0;
}

/* A structured dtype's descr, a Python list (up to its matching ']',
 * strings skipped whole): its text kept, its size the engine's (what
 * h5py stores it as, h5_numpy_descr_size). */
static int structured(npy_header *h, cur *c, char *err, size_t errlen)
{
	const char *s = c->p;
	int depth = 0;
	char q = 0;
	size_t size = 0;
	int rc;

	for (; c->p < c->end; c->p++) {
		char ch = *c->p;

		if (q) {
			if (ch == q)
				q = 0;
			continue;
		}
		if (ch == '\'' || ch == '"')
			q = ch;
		else if (ch == '[')
			depth++;
		else if (ch == ']' && --depth == 0)
			break;
	}
	if (c->p >= c->end)
		return fail(err, errlen, -EINVAL, "descr: an unterminated list");
	c->p++;
	if ((size_t)(c->p - s) >= sizeof(h->descr))
		return fail(err, errlen, -EOPNOTSUPP, "descr: a structured dtype of over %d characters", NPY_DESCR_MAX);
	memcpy(h->descr, s, (size_t)(c->p - s));
	h->descr_len = (size_t)(c->p - s);
	h->descr[h->descr_len] = 0;
	rc = h5_numpy_descr_size(&size, h->descr, h->descr_len);
	if (rc < 0) {
		rc = fail(err, errlen, rc == H5_ERR_INVAL ? -EINVAL : -EOPNOTSUPP, "%s", h5_err_msg());
		h5_err_clear();
		return rc;
	}
	if (size > UINT32_MAX)
		return fail(err, errlen, -EOPNOTSUPP, "a structured dtype of %zu bytes", size);
	h->kind = 'V';
	h->itemsize = (unsigned)size;
	return 0;
}

static int shape(npy_header *h, cur *c, char *err, size_t errlen)
{
	if (!eat(c, '('))
		return fail(err, errlen, -EINVAL, "shape is not a tuple");
	h->rank = 0;
	for (;;) {
		uint64_t v;

		if (eat(c, ')'))
			return 0;
		if (!num(c, &v))
			return fail(err, errlen, -EINVAL, "shape holds something but integers");
		if (h->rank == NPY_MAX_RANK)
			return fail(err, errlen, -EOPNOTSUPP, "more than %d dimensions", NPY_MAX_RANK);
		h->shape[h->rank++] = v;
		if (!eat(c, ',')) {
			if (eat(c, ')'))
				return 0;
			return fail(err, errlen, -EINVAL, "shape is not a tuple of integers");
		}
	}
}

static int dict(npy_header *h, cur *c, char *err, size_t errlen)
{
	bool have_descr = false, have_fortran = false, have_shape = false, fortran = false;
	char key[32], val[64];
	int rc;

	if (!eat(c, '{'))
		return fail(err, errlen, -EINVAL, "header is not a dict");
	while (!eat(c, '}')) {
		if (!str(c, key, sizeof(key)) || !eat(c, ':'))
			return fail(err, errlen, -EINVAL, "header dict: a key expected");
		if (strcmp(key, "descr") == 0) {
			skip_ws(c);
			if (c->p < c->end && *c->p == '[') {
				rc = structured(h, c, err, errlen);
				if (rc < 0)
					return rc;
				have_descr = true;
				goto next;
			}
			if (!str(c, val, sizeof(val)))
				return fail(err, errlen, -EINVAL, "descr is not a string");
			rc = descr(h, val, err, errlen);
			if (rc < 0)
				return rc;
			have_descr = true;
		} else if (strcmp(key, "fortran_order") == 0) {
			skip_ws(c);
			if ((size_t)(c->end - c->p) >= 4 && memcmp(c->p, "True", 4) == 0) {
				fortran = true;
				c->p += 4;
			} else if ((size_t)(c->end - c->p) >= 5 && memcmp(c->p, "False", 5) == 0) {
				c->p += 5;
			} else {
				return fail(err, errlen, -EINVAL, "fortran_order is not True or False");
			}
			have_fortran = true;
		} else if (strcmp(key, "shape") == 0) {
			rc = shape(h, c, err, errlen);
			if (rc < 0)
				return rc;
			have_shape = true;
		} else {
			return fail(err, errlen, -EINVAL, "header dict: unknown key '%s'", key);
		}
next:
		if (!eat(c, ',')) {
			if (eat(c, '}'))
				break;
			return fail(err, errlen, -EINVAL, "header dict: ',' or '}' expected");
		}
	}
	if (!have_descr || !have_fortran || !have_shape)
		return fail(err, errlen, -EINVAL, "header dict lacks descr, fortran_order or shape");
	/* (rank 0 and 1 are the same bytes in either order) */
	h->fortran = fortran && h->rank > 1;
	return 0;
}

int npy_parse(npy_header *h, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	static const uint8_t magic[6] = { 0x93, 'N', 'U', 'M', 'P', 'Y' };
	size_t pre, hlen, total;
	cur c;
	int rc;

	memset(h, 0, sizeof(*h));
	if (err && errlen)
		err[0] = '\0';
	if (len < NPY_MIN_BYTES)
		return memcmp(buf, magic, len < 6 ? len : 6) ? fail(err, errlen, -EINVAL, "not an NPY stream")
							       : NPY_MIN_BYTES;
	if (memcmp(buf, magic, 6) != 0)
		return fail(err, errlen, -EINVAL, "not an NPY stream (no \\x93NUMPY magic)");
	h->major = buf[6];
	h->minor = buf[7];
	if (h->major < 1 || h->major > 3 || h->minor != 0)
		return fail(err, errlen, -EOPNOTSUPP, "NPY format version %u.%u", h->major, h->minor);
	if (h->major == 1) {
		pre = 10;
		hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
	} else {
		pre = 12;
		if (len < pre)
			return (int)pre;
		hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
		if (hlen > (1u << 24))
			return fail(err, errlen, -EINVAL, "NPY header of %zu bytes", hlen);
	}
	total = pre + hlen;
	if (len < total)
		return total > (size_t)0x7fffffff ? fail(err, errlen, -EINVAL, "NPY header too long") : (int)total;
	if (hlen == 0 || buf[total - 1] != '\n')
		return fail(err, errlen, -EINVAL, "NPY header does not end with a newline");
	c.p = (const char *)buf + pre;
	c.end = (const char *)buf + total - 1;
	rc = dict(h, &c, err, errlen);
	if (rc < 0)
		return rc;
	skip_ws(&c);
	if (c.p != c.end)
		return fail(err, errlen, -EINVAL, "bytes after the header dict");
	h->data_offset = total;
	h->nelmts = 1;
	for (unsigned i = 0; i < h->rank; i++) {
		if (h->shape[i] && h->nelmts > UINT64_MAX / h->shape[i])
			return fail(err, errlen, -EINVAL, "shape overflows");
		h->nelmts *= h->shape[i];
	}
	if (h->nelmts > UINT64_MAX / h->itemsize)
		return fail(err, errlen, -EINVAL, "shape overflows");
	h->nbytes = h->nelmts * h->itemsize;
	return 0;
}

/* The Fortran-ordered data (first axis fastest) in C order (last axis
 * fastest) into out. */
void npy_to_c_order(uint8_t *out, const uint8_t *in, const npy_header *h)
{
	uint64_t idx[NPY_MAX_RANK] = { 0 }, cstride[NPY_MAX_RANK], c = 0;
	size_t es = h->itemsize;

	cstride[h->rank - 1] = 1;
	for (unsigned i = h->rank - 1; i-- > 0;)
		cstride[i] = cstride[i + 1] * h->shape[i + 1];
	for (uint64_t k = 0; k < h->nelmts; k++) {
		memcpy(out + c * es, in + k * es, es);
		/* the next Fortran index: the first axis moves fastest */
		for (unsigned i = 0; i < h->rank; i++) {
			c += cstride[i];
			if (++idx[i] < h->shape[i])
				break;
			c -= cstride[i] * h->shape[i];
			idx[i] = 0;
		}
	}
}

/* UCS-4 code points (n, in the stream's byte order; numpy pads with
 * NULs: those at the end are no characters) as UTF-8 into out (4 bytes a
 * point at most): its length, or -1 for a point no UTF-8 holds. */
long npy_utf8_of(char *out, const uint8_t *in, size_t n, bool big)
{
	size_t len = 0, end = n;

	while (end && !in[4 * (end - 1)] && !in[4 * (end - 1) + 1] && !in[4 * (end - 1) + 2] && !in[4 * (end - 1) + 3])
		end--;
	for (size_t i = 0; i < end; i++) {
		const uint8_t *p = in + 4 * i;
		uint32_t c = big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
				 : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];

		if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
			return -1;
		if (c < 0x80) {
			out[len++] = (char)c;
		} else if (c < 0x800) {
			out[len++] = (char)(0xC0 | c >> 6);
			out[len++] = (char)(0x80 | (c & 0x3F));
		} else if (c < 0x10000) {
			out[len++] = (char)(0xE0 | c >> 12);
			out[len++] = (char)(0x80 | ((c >> 6) & 0x3F));
			out[len++] = (char)(0x80 | (c & 0x3F));
		} else {
			out[len++] = (char)(0xF0 | c >> 18);
			out[len++] = (char)(0x80 | ((c >> 12) & 0x3F));
			out[len++] = (char)(0x80 | ((c >> 6) & 0x3F));
			out[len++] = (char)(0x80 | (c & 0x3F));
		}
	}
	return (long)len;
}
