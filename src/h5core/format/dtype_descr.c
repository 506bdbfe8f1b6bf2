/*
 * dtype_descr.c - the datatype message (IV.A.2.d) h5py writes for a NumPy
 * dtype given as np.save's header gives it (numpy.lib.format: the descr,
 * a typestr '<f8', '|S5', or a structured dtype's list
 * [('a', '<i4'), ('b', '<f8', (3,)), ('', '|V4'), ('c', [...])]).
 *
 * h5py's mapping (h5py/_conv, h5t.pyx py_create): integers and IEEE floats
 * as such, bool as an enum of a signed byte {FALSE = 0, TRUE = 1},
 * complex as a compound {r, i}, bytes S<n> as a fixed-length null-padded
 * ASCII string, a structured dtype as a compound of its fields at their
 * offsets (padding, the unnamed V fields np.save lists, only counted), a
 * field with a shape as an array of its type. What h5py cannot store
 * (objects, datetimes, unicode U, void V leaves, long doubles) is
 * H5_ERR_UNSUPPORTED.
 *
 * Versions as libhdf5 (1.10, default bounds) writes them: 1, and 2 for a
 * compound holding an array and for the array (which needs 2).
 */
#include "dset_enc.h"
#include "base.h"
#include "rd.h"
#include "dtype.h"

#include <stdlib.h>
#include <string.h>

#define DESCR_DEPTH 8           /* nested structured dtypes */
#define DESCR_MAX_DIMS 4        /* a field's shape (IV.A.2.d array: any rank; h5py's fields rarely more) */

typedef struct dcur {
	const char *p, *end;
} dcur;

/* the message being built */
typedef struct dbuf {
	uint8_t *b;
	size_t len, cap;
} dbuf;

static int room(dbuf *o, size_t n)
{
	if (o->len + n > o->cap)
		return h5_err_set(H5_ERR_LIMIT, "the datatype of this dtype is over %zu bytes", o->cap);
	return 0;
}

static void ws(dcur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n'))
		c->p++;
}

static bool eat(dcur *c, char ch)
{
	ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

static bool peek(dcur *c, char ch)
{
	ws(c);
	return c->p < c->end && *c->p == ch;
}

/* a quoted string without escapes */
static int qstr(dcur *c, const char **s, size_t *n)
{
	char q;

	ws(c);
	if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
		return h5_err_set(H5_ERR_INVAL, "dtype descr: a string expected");
	q = *c->p++;
	*s = c->p;
	while (c->p < c->end && *c->p != q) {
		if (*c->p == '\\')
			return h5_err_set(H5_ERR_UNSUPPORTED, "dtype descr: a name with an escape");
		c->p++;
	}
	if (c->p >= c->end)
		return h5_err_set(H5_ERR_INVAL, "dtype descr: an unterminated string");
	*n = (size_t)(c->p - *s);
	c->p++;
	return 0;
}

static void head(uint8_t *p, unsigned ver, unsigned cls, uint32_t bits, uint32_t size)
{
	p[0] = (uint8_t)((ver << 4) | cls);
	h5_le_encode(p + 1, bits, 3);
	h5_le_encode(p + 4, size, 4);
}

/* a typestr: byte order, kind, size ('|b1', '<i4', '>f8', '<c16', '|S5') */
static int leaf(dbuf *o, size_t *size, const char *s, size_t n)
{
	char tmp[24], kind;
	unsigned long sz;
	char *endp;
	bool be;
	size_t len = 0;
	int rc;

	if (n < 3 || n >= sizeof(tmp))
		return h5_err_set(H5_ERR_UNSUPPORTED, "dtype '%.*s' cannot be stored", (int)n, s);
	memcpy(tmp, s, n);
	tmp[n] = 0;
	if (tmp[0] != '<' && tmp[0] != '>' && tmp[0] != '|' && tmp[0] != '=')
		return h5_err_set(H5_ERR_INVAL, "dtype '%s': no byte order", tmp);
	be = tmp[0] == '>' || (tmp[0] == '=' && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
	kind = tmp[1];
	sz = strtoul(tmp + 2, &endp, 10);
	if (*endp || endp == tmp + 2)
		return h5_err_set(H5_ERR_UNSUPPORTED, "dtype '%s' cannot be stored as HDF5 (h5py has no type for it)",
				  tmp);
	switch (kind) {
	case 'b':
	case 'i':
	case 'u':
	case 'f':
	case 'c':
		rc = room(o, 128);
		if (rc == 0)
			rc = h5_enc_dtype(o->b + o->len, &len, o->cap - o->len, kind, (unsigned)sz, be);
		if (rc < 0)
			return h5_err_set(H5_ERR_UNSUPPORTED, "dtype '%s' cannot be stored as HDF5 (h5py has no type for "
					  "it)", tmp);
		o->len += len;
		break;
	case 'S':
		/* h5py: a fixed-length null-padded ASCII string (class 3) */
		if (sz == 0 || sz > UINT32_MAX)
			return h5_err_set(H5_ERR_UNSUPPORTED, "dtype '%s': an empty string type", tmp);
		rc = room(o, 8);
		if (rc < 0)
			return rc;
		head(o->b + o->len, 1, H5T_STRING, 1, (uint32_t)sz);
		o->len += 8;
		break;
	default:
		return h5_err_set(H5_ERR_UNSUPPORTED, "dtype '%s' cannot be stored as HDF5 (h5py has no type for it)",
				  tmp);
	}
	*size = sz;
	return 0;
}

static int type(dbuf *o, size_t *size, bool *v2, dcur *c, unsigned depth);

/* A field's shape (a tuple of sizes): the array type of its base type
 * (class 10, version 2: rank, reserved, sizes, permutation indices). */
static int shape(uint64_t *dims, unsigned *rank, dcur *c)
{
	*rank = 0;
	if (!eat(c, '('))
		return h5_err_set(H5_ERR_INVAL, "dtype descr: a shape expected");
	while (!eat(c, ')')) {
		uint64_t v = 0;
		bool any = false;

		ws(c);
		while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
			v = v * 10 + (uint64_t)(*c->p++ - '0');
			any = true;
			if (v > UINT32_MAX)
				return h5_err_set(H5_ERR_LIMIT, "dtype descr: a field's shape too large");
		}
		if (!any)
			return h5_err_set(H5_ERR_INVAL, "dtype descr: a shape of integers expected");
		if (*rank == DESCR_MAX_DIMS)
			return h5_err_set(H5_ERR_UNSUPPORTED, "dtype descr: a field of more than %d dimensions",
					  DESCR_MAX_DIMS);
		dims[(*rank)++] = v;
		if (!eat(c, ',') && !peek(c, ')'))
			return h5_err_set(H5_ERR_INVAL, "dtype descr: a shape of integers expected");
	}
	return 0;
}

/* One field (name, type[, shape]) of a compound at offset off, its
 * member written (version 1 or 2 as v2 says for the whole compound: the
 * caller builds twice when an array turns up). */
static int field(dbuf *o, size_t *fsize, bool *pad, bool *v2, uint64_t off, dcur *c, unsigned depth, bool ver2)
{
	const char *name;
	size_t nlen, at, sz = 0, name_room;
	uint64_t dims[DESCR_MAX_DIMS], n = 1;
	unsigned rank = 0;
	int rc;

	if (!eat(c, '('))
		return h5_err_set(H5_ERR_INVAL, "dtype descr: a field (name, type) expected");
	ws(c);
	if (peek(c, '('))
		return h5_err_set(H5_ERR_UNSUPPORTED, "dtype descr: a field with a title");
	rc = qstr(c, &name, &nlen);
	if (rc == 0 && !eat(c, ','))
		rc = h5_err_set(H5_ERR_INVAL, "dtype descr: a field's type expected");
	if (rc < 0)
		return rc;
	*pad = nlen == 0;
	if (*pad) {
		/* np.save lists the gaps of an aligned or offset dtype as
		 * ('', '|V<n>'): counted, not a member */
		const char *t;
		size_t tl;
		char *endp;

		rc = qstr(c, &t, &tl);
		if (rc < 0)
			return rc;
		if (tl < 3 || t[1] != 'V')
			return h5_err_set(H5_ERR_UNSUPPORTED, "dtype descr: an unnamed field of type %.*s", (int)tl, t);
		*fsize = strtoul(t + 2, &endp, 10);
		eat(c, ',');
		return eat(c, ')') ? 0 : h5_err_set(H5_ERR_INVAL, "dtype descr: ')' expected after a field");
	}
	/* version 1 member: name NUL-padded to 8, offset, dimensionality,
	 * reserved, permutation, reserved, 4 sizes; version 2: name padded,
	 * offset (IV.A.2.d, compound properties) */
	name_room = (nlen + 1 + 7) & ~(size_t)7;
	rc = room(o, name_room + 4 + (ver2 ? 0 : 28));
	if (rc < 0)
		return rc;
	if (memchr(name, 0, nlen))
		return h5_err_set(H5_ERR_INVAL, "dtype descr: a NUL in a field name");
	memset(o->b + o->len, 0, name_room + 4 + (ver2 ? 0 : 28));
	memcpy(o->b + o->len, name, nlen);
	h5_le_encode(o->b + o->len + name_room, off, 4);
	o->len += name_room + 4 + (ver2 ? 0 : 28);
	/* the type, then a shape turns it into an array of it */
	at = o->len;
	rc = type(o, &sz, v2, c, depth + 1);
	if (rc < 0)
		return rc;
	if (eat(c, ',') && peek(c, '(')) {
		uint8_t *base;
		size_t blen = o->len - at, alen;

		rc = shape(dims, &rank, c);
		if (rc < 0)
			return rc;
		for (unsigned i = 0; i < rank; i++)
			n *= dims[i];
		*v2 = true;
		if (!ver2)
			return 0;       /* the caller builds again as version 2 */
		alen = 8 + 4 * rank + 4 * rank;
		rc = room(o, alen + 4);
		if (rc < 0)
			return rc;
		if (!(base = malloc(blen)))
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		memcpy(base, o->b + at, blen);
		head(o->b + at, 2, H5T_ARRAY, 0, (uint32_t)(sz * n));
		o->b[at + 8] = (uint8_t)rank;
		memset(o->b + at + 9, 0, 3);
		for (unsigned i = 0; i < rank; i++) {
			h5_le_encode(o->b + at + 12 + 4 * i, dims[i], 4);
			h5_le_encode(o->b + at + 12 + 4 * rank + 4 * i, i, 4);
		}
		memcpy(o->b + at + alen + 4, base, blen);
		free(base);
		o->len = at + alen + 4 + blen;
		sz *= n;
		/* (alen + 4: 8 head, rank + 3 reserved, sizes, permutations) */
	}
	eat(c, ',');
	if (!eat(c, ')'))
		return h5_err_set(H5_ERR_INVAL, "dtype descr: ')' expected after a field");
	*fsize = sz;
	return 0;
}

/* A structured dtype's list: a compound (class 6) of its named fields. */
static int compound(dbuf *o, size_t *size, bool *v2, dcur *c, unsigned depth, bool ver2)
{
	size_t at = o->len, nmemb = 0;
	uint64_t off = 0;
	int rc = room(o, 8);

	if (rc < 0)
		return rc;
	o->len += 8;
	if (!eat(c, '['))
		return h5_err_set(H5_ERR_INVAL, "dtype descr: a list expected");
	while (!eat(c, ']')) {
		size_t fs = 0;
		bool pad = false;

		rc = field(o, &fs, &pad, v2, off, c, depth, ver2);
		if (rc < 0)
			return rc;
		if (*v2 && !ver2)
			return 0;
		nmemb += !pad;
		off += fs;
		if (!eat(c, ',') && !peek(c, ']'))
			return h5_err_set(H5_ERR_INVAL, "dtype descr: ',' or ']' expected");
	}
	if (nmemb == 0 || nmemb > 0xffff || off > UINT32_MAX)
		return h5_err_set(H5_ERR_UNSUPPORTED, "a structured dtype of %zu fields, %llu bytes", nmemb,
				  (unsigned long long)off);
	head(o->b + at, ver2 ? 2 : 1, H5T_COMPOUND, (uint32_t)nmemb, (uint32_t)off);
	*size = off;
	return 0;
}

static int type(dbuf *o, size_t *size, bool *v2, dcur *c, unsigned depth)
{
	if (depth > DESCR_DEPTH)
		return h5_err_set(H5_ERR_UNSUPPORTED, "a structured dtype nested more than %d deep", DESCR_DEPTH);
	if (peek(c, '[')) {
		/* version 1 unless an array member needs 2: built once as 1,
		 * again as 2 when one turns up (v2 then true) */
		size_t at = o->len;
		dcur start = *c;
		bool need = false;
		int rc = compound(o, size, &need, c, depth, false);

		if (rc < 0 || !need)
			return rc;
		*v2 = true;
		o->len = at;
		*c = start;
		return compound(o, size, &need, c, depth, true);
	} else {
		const char *s;
		size_t n;
		int rc = qstr(c, &s, &n);

		return rc < 0 ? rc : leaf(o, size, s, n);
	}
}

int h5_enc_dtype_descr(uint8_t *out, size_t *len, size_t cap, size_t *itemsize, const char *descr, size_t dlen)
{
	dbuf o = { .b = out, .cap = cap };
	dcur c = { .p = descr, .end = descr + dlen };
	bool v2 = false;
	size_t size = 0;
	int rc = type(&o, &size, &v2, &c, 0);

	ws(&c);
	if (rc == 0 && c.p != c.end)
		rc = h5_err_set(H5_ERR_INVAL, "dtype descr: bytes after it");
	if (rc == 0 && size == 0)
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "a dtype of 0 bytes");
	*len = rc == 0 ? o.len : 0;
	*itemsize = rc == 0 ? size : 0;
	return rc;
}
