/*
 * attr_build.c - the new Attribute message of a change (attr_write_int.h):
 * text parsed in the attribute's type (format/value_parse.c), strings
 * into a new global heap collection, the fields of a new attribute as
 * libhdf5 writes them (IV.A.2.m); attr_write.c puts it in its place.
 */
#include "attr_write_int.h"
#include "base.h"
#include "rd.h"
#include "file.h"
#include "ohdr.h"
#include "attr.h"
#include "dtype.h"
#include "dspace.h"
#include "gheap.h"
#include "value.h"
#include "space.h"
#include "freesp.h"
#include "file_ws.h"

/* Strings separated by sep (NUL for raw values, newline for text). A
 * text of one string is that string whole (want 1), as getfattr shows it:
 * "fish\n" set on an attribute that reads "fish\n" was two strings
 * (xfstests generic/020's replace was EINVAL). */
static int split(const char ***strs, size_t **lens, size_t *n, const char *v, size_t len, char sep, uint64_t want)
{
	size_t cnt = 1, k = 0;
	const char *p = v, *end = v + len;

	for (size_t i = 0; i < len && !(sep == '\n' && want == 1); i++)
		cnt += v[i] == sep;
	*strs = malloc(cnt * sizeof(**strs));
	*lens = malloc(cnt * sizeof(**lens));
	if (!*strs || !*lens)
		return h5_err_set(H5_ERR_NOMEM, "out of memory splitting strings");
	for (;;) {
		const char *e = cnt == 1 ? NULL : memchr(p, sep, (size_t)(end - p));

		(*strs)[k] = p;
		(*lens)[k++] = (e ? e : end) - p;
		if (!e)
			break;
		p = e + 1;
	}
	*n = k;
	return 0;
}

/* Collections this session wrote, with the messages referencing them:
 * at most this many remembered (past it, a collection is never freed). */
#define OWNED_MAX 65536

void h5_attr_coll_adopt(h5_file *f, uint64_t addr, uint64_t len, uint32_t refs)
{
	struct h5_wstate *ws = h5_ws(f);

	if (ws->nowned == ws->cowned) {
		size_t nc = ws->cowned ? 2 * ws->cowned : 16;
		struct h5_owned *nv;

		if (nc > OWNED_MAX || !(nv = realloc(ws->owned, nc * sizeof(*nv))))
			return;         /* not owned: never freed */
		ws->owned = nv;
		ws->cowned = nc;
	}
	ws->owned[ws->nowned++] = (struct h5_owned){ addr, len, refs };
}

/* nelmts variable-length strings: a new global heap collection (written
 * now, invisible until referenced; freed space when some holds it) and
 * the elements (length, collection, index) pointing into it; empty
 * strings point nowhere, as libhdf5 writes them. The collection is this
 * session's own, referenced by one message (one_msg, or a single string)
 * or by one per string (a write-behind batch: each string an attribute's
 * value): freed when the last of them is replaced or removed (libhdf5
 * frees the old value's heap objects, H5T__vlen_disk_delete, and a
 * collection left empty, H5HG_remove). A batch's collection was never
 * freed: 40 setfattr/rm rounds grew FILE by 40 KB each. A batch that
 * stops part way leaves its collection counting messages never written:
 * never freed (a leak, never a free while referenced). */
int h5_attr_vstr_data(uint8_t **out, size_t *out_len, h5_file *f, const char *const *s, const size_t *l, size_t n,
		      bool one_msg)
{
	const h5_fmt *fmt = &f->fmt;
	size_t esz = 8 + fmt->sizeof_addr, nobj = 0, clen = 0;
	const uint8_t **objs = calloc(n ? n : 1, sizeof(*objs));
	size_t *olen = calloc(n ? n : 1, sizeof(*olen));
	uint8_t *coll = NULL, *d = calloc(n ? n : 1, esz);
	uint64_t caddr = 0;
	int rc = 0;

	if (!objs || !olen || !d) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory for strings");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		if (l[i]) {
			objs[nobj] = (const uint8_t *)s[i];
			olen[nobj++] = l[i];
		}
	if (nobj) {
		rc = h5_gheap_encode(&coll, &clen, fmt, objs, olen, nobj);
		if (rc == 0)
			rc = h5_space_take(&caddr, f, clen);    /* written whole */
		if (rc == 0)
			rc = h5_file_write(f, caddr, coll, clen);
		if (rc < 0)
			goto out;
		h5_attr_coll_adopt(f, caddr, clen, one_msg ? 1 : (uint32_t)nobj);
	}
	for (size_t i = 0, k = 0; i < n; i++) {
		uint8_t *e = d + i * esz;

		if (l[i] > UINT32_MAX) {
			rc = h5_err_set(H5_ERR_LIMIT, "a string of %zu bytes", l[i]);
			goto out;
		}
		h5_le_encode(e, l[i], 4);
		h5_le_encode(e + 4, l[i] ? caddr : 0, fmt->sizeof_addr);
		h5_le_encode(e + 4 + fmt->sizeof_addr, l[i] ? ++k : 0, 4);
	}
	*out = d;
	*out_len = n * esz;
	d = NULL;
out:
	free(objs);
	free(olen);
	free(coll);
	free(d);
	return rc;
}

uint64_t h5_attr_owned_coll(h5_file *f, const uint8_t *msg, size_t len)
{
	struct h5_wstate *ws = h5_ws(f);
	h5_attr_msg a = { 0 };
	size_t esz = 8 + f->fmt.sizeof_addr;
	uint64_t coll = H5_ADDR_UNDEF;

	if (ws->nowned == 0 || h5_attr_decode(&a, f, &f->fmt, msg, len) < 0) {
		h5_err_clear();
		return H5_ADDR_UNDEF;
	}
	/* every element of a value this session wrote points into its one
	 * collection (or nowhere: an empty string) */
	if (a.dtype && a.dtype->cls == H5T_VLEN)
		for (size_t off = 0; off + esz <= a.data_size && !h5_addr_defined(coll); off += esz) {
			uint64_t at = h5_le_decode(a.data + off + 4, f->fmt.sizeof_addr);
			size_t i;

			if (h5_le_decode(a.data + off, 4) == 0)
				continue;
			for (i = 0; i < ws->nowned && ws->owned[i].addr != at; i++)
				;
			if (i < ws->nowned)
				coll = at;
			else
				break;
		}
	h5_attr_msg_clear(&a);
	return coll;
}

void h5_attr_coll_free(h5_file *f, uint64_t coll, uint64_t ticket)
{
	struct h5_wstate *ws = h5_ws(f);
	size_t i;

	if (!h5_addr_defined(coll))
		return;
	for (i = 0; i < ws->nowned && ws->owned[i].addr != coll; i++)
		;
	if (i == ws->nowned || --ws->owned[i].refs > 0)
		return;
	h5_space_free(f, coll, ws->owned[i].len, ticket);
	ws->owned[i] = ws->owned[--ws->nowned];
}

/* The new value of an existing attribute (h: its fields; a: decoded):
 * data, and for a fixed-length string the datatype with its new size
 * (into dt, h->dt pointed there). */
/* The collection h5_attr_vstr_data writes for strings of l[0..n) (the
 * empty ones are not in it; none: 0 bytes). */
static uint64_t heap_of(const h5_fmt *fmt, const size_t *l, size_t n)
{
	size_t *nz = malloc((n ? n : 1) * sizeof(*nz)), k = 0;
	uint64_t sz;

	if (!nz)
		return (uint64_t)n * 64 + 4096;         /* an estimate over it */
	for (size_t i = 0; i < n; i++)
		if (l[i])
			nz[k++] = l[i];
	sz = k ? h5_gheap_size(fmt, nz, k) : 0;
	free(nz);
	return sz;
}

static int new_value(uint8_t **data, size_t *dlen, h5_attr_hdr *h, uint8_t *dt, h5_file *f, const h5_attr_msg *a,
		     const char *val, size_t len, int raw, bool dry, uint64_t *heap, const uint8_t *vdata)
{
	const h5_dtype *t = a->dtype;
	uint64_t nelmts;
	const char **s = NULL;
	size_t *l = NULL, n = 0;
	int rc = h5_dspace_nelmts(&a->space, &nelmts);

	if (rc < 0)
		return rc;
	if (t->cls == H5T_VLEN && t->vlen_type == 1 && vdata) {
		/* the elements given, their collection written already (a
		 * collection moved, attr_move.c): len bytes, one per element */
		size_t esz = 8 + (size_t)f->fmt.sizeof_addr;

		if (dry || nelmts > SIZE_MAX / esz || len != nelmts * esz)
			return h5_err_set(H5_ERR_INVAL, "attribute \"%s\": %zu bytes of elements for %llu strings", a->name,
					  len, (unsigned long long)nelmts);
		if (!(*data = malloc(len + 1)))
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		memcpy(*data, vdata, len);
		*dlen = len;
	} else if (t->cls == H5T_VLEN && t->vlen_type == 1) {
		rc = nelmts ? split(&s, &l, &n, val, len, raw ? '\0' : '\n', nelmts) : 0;
		if (rc == 0 && n != nelmts)
			rc = h5_err_set(H5_ERR_INVAL, "%zu strings given, the attribute has %llu", n,
					(unsigned long long)nelmts);
		if (rc == 0 && !raw && len && memchr(val, 0, len))
			rc = h5_err_set(H5_ERR_INVAL, "a string attribute cannot hold a NUL byte");
		if (rc == 0 && !dry) {
			rc = h5_attr_vstr_data(data, dlen, f, s, l, n, true);
		} else if (rc == 0) {
			/* checked only: elements of their size (the message's
			 * size is checked), no collection written */
			if (heap)
				*heap += heap_of(&f->fmt, l, n);
			*dlen = n * (8 + (size_t)f->fmt.sizeof_addr);
			if (!(*data = calloc(1, *dlen + 1)))
				rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		}
	} else if (t->cls == H5T_STRING) {
		size_t width = 1;

		if (h->flags & 0x01)
			return h5_err_set(H5_ERR_UNSUPPORTED, "attribute \"%s\": its string type is shared", a->name);
		rc = nelmts ? split(&s, &l, &n, val, len, raw ? '\0' : '\n', nelmts) : 0;
		if (rc == 0 && n != nelmts)
			rc = h5_err_set(H5_ERR_INVAL, "%zu strings given, the attribute has %llu", n,
					(unsigned long long)nelmts);
		for (size_t i = 0; rc == 0 && i < n; i++) {
			/* the text's length, null-terminated or not, as a new
			 * one is made (fstr_value: netCDF-C's NC_CHAR, h5py's
			 * S<n>): a replaced "first" by "second" was S7 with
			 * room for a NUL the owners' tools never write */
			size_t w = l[i];

			if (memchr(s[i], 0, l[i]))
				rc = h5_err_set(H5_ERR_INVAL, "a fixed-length string cannot hold a NUL byte");
			if (w > width)
				width = w;
		}
		if (rc == 0 && (width > UINT32_MAX / 2 || (uint64_t)width * n > ((uint64_t)1 << 30)))
			rc = h5_err_set(H5_ERR_LIMIT, "strings too long");
		if (rc == 0 && !(*data = malloc(n * width + 1)))
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory for strings");
		for (size_t i = 0; rc == 0 && i < n; i++) {
			memset(*data + i * width, t->str_pad == 2 ? ' ' : 0, width);
			memcpy(*data + i * width, s[i], l[i]);
		}
		if (rc == 0) {
			*dlen = n * width;
			memcpy(dt, h->dt, h->dt_size);
			h5_le_encode(dt + 4, width, 4);
			h->dt = dt;
		}
	} else if (raw) {
		if (h5_dtype_has_vlen(t))
			return h5_err_set(H5_ERR_UNSUPPORTED, "attribute \"%s\": raw values of variable-length data "
					  "other than strings cannot be set", a->name);
		if (len != a->data_size)
			return h5_err_set(H5_ERR_INVAL, "attribute \"%s\" holds %zu bytes, %zu given", a->name,
					  a->data_size, len);
		if (!(*data = malloc(len + 1)))
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		memcpy(*data, val, len);
		*dlen = len;
	} else {
		rc = h5_value_parse(data, dlen, t, val, len, nelmts);
	}
	free(s);
	free(l);
	return rc;
}

/* The fields of a new attribute: version by the header (v1 headers: the
 * version 1 message libhdf5 writes by default; v3 where the name needs a
 * character set or the header is v2), scalar or 1-D. */
static void new_hdr(h5_attr_hdr *h, uint8_t *ds, const h5_file *f, const h5_ohdr *oh, const char *name,
		    size_t name_len, uint64_t nelmts, bool one)
{
	size_t dslen = 0;

	h->cset = h5_name_cset(name, name_len);
	h->version = (oh->version >= 2 || h->cset) ? 3 : 1;
	h->flags = 0;
	h->name = (const uint8_t *)name;
	h->name_size = name_len + 1;
	h5_dspace_encode(ds, &dslen, 8 + 8, &f->fmt, oh->version >= 2 ? 2 : 1, one ? 0 : 1, &nelmts);
	h->ds = ds;
	h->ds_size = dslen;
}


/* A NumPy typestr of a number: [<>=|]?[iuf][1248] */
static int typestr_parse(char *kind, unsigned *size, bool *big, const char *ts)
{
	const char *p = ts;

	*big = false;
	if (*p == '<' || *p == '>' || *p == '=' || *p == '|')
		*big = *p++ == '>';
	if ((p[0] != 'i' && p[0] != 'u' && p[0] != 'f') || !p[1] || p[2])
		return h5_err_set(H5_ERR_INVAL, "\"%s\" is not a number type (i1..i8, u1..u8, f2, f4, f8, optionally "
				  "after < or >)", ts);
	*kind = p[0];
	*size = (unsigned)(p[1] - '0');
	if (*size != 1 && *size != 2 && *size != 4 && *size != 8)
		return h5_err_set(H5_ERR_INVAL, "\"%s\": no such size", ts);
	if (*kind == 'f' && *size == 1)
		return h5_err_set(H5_ERR_INVAL, "\"%s\": no 1-byte floats", ts);
	return 0;
}

/* A new fixed-length string (ch->fstr): its datatype (ASCII, as netCDF-C
 * writes NC_CHAR and h5py numpy.bytes_: bytes, no character set claimed)
 * and its one element, ch->fwidth bytes or the text's length (at least 1:
 * netCDF-C's empty text is one NUL), the rest NUL. */
static int fstr_value(uint8_t **data, size_t *dlen, uint8_t *dt, size_t *dtlen, const h5_attr_change *ch)
{
	size_t w = ch->fwidth ? ch->fwidth : (ch->len ? ch->len : 1);
	int rc;

	if (memchr(ch->val, 0, ch->len))
		return h5_err_set(H5_ERR_INVAL, "a fixed-length string cannot hold a NUL byte");
	if (ch->len > w)
		return h5_err_set(H5_ERR_INVAL, "a text of %zu bytes is longer than its fixed-length string (%zu)",
				  ch->len, w);
	if (w > (1u << 30))
		return h5_err_set(H5_ERR_LIMIT, "a fixed-length string of %zu bytes", w);
	rc = h5_dtype_encode_fstr(dt, dtlen, w, ch->fstr == H5_FSTR_NULLTERM ? 0 : 1, 0);
	if (rc < 0)
		return rc;
	if (!(*data = calloc(1, w + 1)))
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	memcpy(*data, ch->val, ch->len);
	*dlen = w;
	return 0;
}

/* The new attribute message for ch (*msg, *mlen): a new value of the old
 * message old (NULL: a new attribute, or ch->typestr's replacement). */
int h5_attr_build(uint8_t **msg, size_t *mlen, h5_file *f, const h5_ohdr *oh, const uint8_t *old, size_t old_len,
		 const h5_attr_change *ch)
{
	h5_attr_msg a = { 0 };
	h5_attr_hdr h;
	uint8_t *data = NULL, dt[256], ds[16 + 8 * H5_MAX_RANK];
	size_t dlen = 0, dtlen = 0;
	int rc;

	if (old) {
		rc = h5_attr_hdr_decode(&h, old, old_len);
		if (rc == 0)
			rc = h5_attr_decode(&a, f, &f->fmt, old, old_len);
		if (rc == 0 && h.dt_size > sizeof(dt))
			rc = h5_err_set(H5_ERR_UNSUPPORTED, "attribute \"%s\": its datatype is too complex to set", a.name);
		if (rc == 0)
			rc = new_value(&data, &dlen, &h, dt, f, &a, ch->val, ch->len, ch->raw, ch->dry, ch->heap, ch->vdata);
	} else {
		uint64_t nelmts = 1;
		bool one = true;

		if (ch->rdt) {
			/* a datatype and bytes given (dimension scales' lists, dimscale.c) */
			rc = 0;
			if (ch->rdt_len > sizeof(dt))
				rc = h5_err_set(H5_ERR_LIMIT, "a datatype of %zu bytes", ch->rdt_len);
			if (rc == 0 && !(data = malloc(ch->len ? ch->len : 1)))
				rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			if (rc == 0) {
				memcpy(dt, ch->rdt, ch->rdt_len);
				dtlen = ch->rdt_len;
				memcpy(data, ch->val, ch->len);
				dlen = ch->len;
				nelmts = ch->rn ? ch->rn : 1;
				one = ch->rn == 0;
			}
		} else if (ch->fstr) {
			rc = fstr_value(&data, &dlen, dt, &dtlen, ch);
		} else if (ch->typestr) {
			char kind = 0;
			unsigned size = 0;
			bool big = false;
			h5_dtype *t = NULL;

			rc = typestr_parse(&kind, &size, &big, ch->typestr);
			if (rc == 0)
				rc = h5_dtype_encode_number(dt, &dtlen, kind, size, big);
			if (rc == 0)
				rc = h5_dtype_decode(&t, dt, dtlen, NULL);
			if (rc == 0) {
				nelmts = 1;
				for (size_t i = 0; i < ch->len; i++)
					nelmts += ch->val[i] == ',';
				one = nelmts == 1;
				rc = h5_value_parse(&data, &dlen, t, ch->val, ch->len, nelmts);
			}
			h5_dtype_free(t);
		} else {
			/* a Python str, as h5py writes it: scalar, variable-length, UTF-8 */
			const char *s = ch->val;
			size_t l = ch->len;

			rc = h5_dtype_encode_vstr(dt, &dtlen, 1);
			/* libhdf5 reads a string up to its first NUL (h5py
			 * refuses to write one): 64 KiB of zeros read back
			 * empty (xfstests generic/020) */
			if (rc == 0 && !ch->raw && !ch->vdata && l && memchr(s, 0, l))
				rc = h5_err_set(H5_ERR_INVAL, "a string attribute cannot hold a NUL byte");
			if (rc == 0 && ch->vdata) {
				dlen = 8 + f->fmt.sizeof_addr;
				if (!(data = malloc(dlen)))
					rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
				else
					memcpy(data, ch->vdata, dlen);
			} else if (rc == 0 && ch->dry) {
				if (ch->heap)
					*ch->heap += heap_of(&f->fmt, &l, 1);
				dlen = 8 + f->fmt.sizeof_addr;
				if (!(data = calloc(1, dlen)))
					rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			} else if (rc == 0) {
				rc = h5_attr_vstr_data(&data, &dlen, f, &s, &l, 1, true);
			}
		}
		if (rc == 0) {
			new_hdr(&h, ds, f, oh, ch->name, ch->name_len, nelmts, one);
			h.dt = dt;
			h.dt_size = dtlen;
		}
	}
	if (rc == 0)
		rc = h5_attr_encode(msg, mlen, &h, data, dlen);
	h5_attr_msg_clear(&a);
	free(data);
	return rc;
}
