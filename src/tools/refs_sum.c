/*
 * refs_sum.c - one file's references as a summary (refs_sum.h): the
 * recording sink of refs.c's walk (rs_scan), and the decoder (rs_open,
 * rs_next).
 *
 * What is read from the file beyond refs.c's walk, and why:
 *  - a dataset without DIM among its dimensions: a hash of its values, as
 *    the combination takes it from the first file and must refuse a file
 *    where it differs (its references point at other bytes even when the
 *    values agree, so the references cannot be compared);
 *  - a 1-D dataset along DIM of at most values_max bytes: its values, as
 *    the combination writes such a variable by value when its chunks do
 *    not line up across files (netCDF-4 gives a 1-D unlimited variable
 *    chunks of 512 elements, which a file of 10 steps never fills), and
 *    DIM's coordinate variable always (what kerchunk's MultiZarrToZarr
 *    does: xarray reads it whole at open, one request instead of one per
 *    file); its first value orders a collection's members.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "refs_sum.h"
#include "cf_time.h"
#include "json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HASH_PIECE ((size_t)1 << 20)   /* bytes of values read at a time for the hash */

/* ---- the recording sink ----------------------------------------------------------- */

struct rs_build {
	const rs_opts *o;
	struct jb b;              /* the summary (binary: jb's text functions unused) */
	unsigned rank;            /* of the last array */
	int has_key, key_root;
	double key;
};

static void put_bytes(struct rs_build *s, const void *p, size_t n)
{
	if (s->b.nomem)
		return;
	s->b.sb.max = SIZE_MAX;
	if (h5_sb_put(&s->b.sb, p, n) < 0)
		s->b.nomem = 1;
}

/* v little-endian at q: returns the byte after it. */
static uint8_t *le64(uint8_t *q, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		q[i] = (uint8_t)(v >> (8 * i));
	return q + 8;
}

static void put_u64(struct rs_build *s, uint64_t v)
{
	uint8_t b[8];

	le64(b, v);
	put_bytes(s, b, 8);
}

static void put_str(struct rs_build *s, const char *t)
{
	size_t n = t ? strlen(t) : 0;

	put_u64(s, n);
	put_bytes(s, n ? t : "", n);
	put_bytes(s, "", 1);
}

static void put_blob(struct rs_build *s, const void *p, uint64_t n)
{
	put_u64(s, n);
	put_bytes(s, p, (size_t)n);
}

static int rec_meta(void *u, const char *prefix, const char *name, const char *json)
{
	struct rs_build *s = u;

	put_bytes(s, "M", 1);
	put_str(s, prefix);
	put_str(s, name);
	put_str(s, json);
	return s->b.nomem ? -1 : 0;
}

static void rec_note(void *u, const char *line)
{
	struct rs_build *s = u;

	put_bytes(s, "N", 1);
	put_str(s, line);
}

/* FNV-1a over the values, then their count: equal values, equal hash. */
static int values_hash(uint64_t *out, h5_dataset *d)
{
	uint64_t size = h5_dataset_size(d), h = 0xcbf29ce484222325ULL;
	uint8_t *buf = malloc(HASH_PIECE);

	if (!buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (uint64_t off = 0; off < size;) {
		size_t n = size - off < HASH_PIECE ? (size_t)(size - off) : HASH_PIECE;
		int rc = h5_dataset_read(d, buf, off, n);

		if (rc < 0) {
			free(buf);
			return rc;
		}
		for (size_t i = 0; i < n; i++)
			h = (h ^ buf[i]) * 0x100000001b3ULL;
		off += n;
	}
	free(buf);
	*out = h ^ size;
	return 0;
}

/* The last component of "a/b/name/" is name. */
static int prefix_named(const char *prefix, const char *name)
{
	size_t pl = strlen(prefix), nl = strlen(name);

	return pl > nl && prefix[pl - 1] == '/' && memcmp(prefix + pl - 1 - nl, name, nl) == 0 &&
	       (pl == nl + 1 || prefix[pl - nl - 2] == '/');
}

static int rec_array(void *u, const char *prefix, const refs_array *a)
{
	struct rs_build *s = u;
	const rs_opts *o = s->o;
	unsigned flags = 0;
	int axis = -1;
	uint64_t hash = 0, nval = 0;
	uint8_t *vals = NULL;

	if (o->dim) {
		for (unsigned i = 0; a->dims && i < a->h5rank; i++)
			if (strcmp(a->dims[i], o->dim) == 0) {
				flags |= axis >= 0 ? RS_TWICE : 0;
				axis = axis >= 0 ? axis : (int)i;
			}
	} else if ((unsigned)o->axis < a->h5rank) {
		axis = o->axis;
	}
	if (axis >= 0)
		flags |= RS_AXIS;
	if (axis == 0 && a->h5rank == 1 && a->rank == 1 && o->dim && prefix_named(prefix, o->dim))
		flags |= RS_COORD;
	if (axis < 0) {
		if (values_hash(&hash, a->d) < 0)
			return -1;
		flags |= RS_HASH;
	} else if (axis == 0 && a->h5rank == 1 && a->rank == 1 && !a->values && a->type->kind == H5_TYPE_NUMBER &&
		   h5_dataset_size(a->d) <= o->values_max) {
		nval = h5_dataset_size(a->d);
		if (!(vals = malloc(nval ? (size_t)nval : 1)) || h5_dataset_read(a->d, vals, 0, (size_t)nval) < 0) {
			free(vals);
			return -1;
		}
		flags |= RS_VALUES;
		/* the collection's order: the first value of the root's
		 * coordinate variable, else of the first one met */
		if ((flags & RS_COORD) && nval >= a->type->size && (!s->has_key || (!s->key_root &&
		    strchr(prefix, '/') == prefix + strlen(prefix) - 1))) {
			struct jb t = { 0 };

			json_number(&t, a->type->typestr, vals, 0);
			jb_done(&t);
			if (!t.nomem) {
				cf_units cu;
				char why[160];

				s->key = strtod(t.p, NULL);
				/* files each with their own units (xarray's "hours
				 * since <that day>") are ordered by the instant */
				if (cf_units_parse(&cu, a->units, a->calendar, why, sizeof(why)) == 0)
					s->key = cf_seconds(&cu, s->key);
				s->has_key = 1;
				s->key_root = strchr(prefix, '/') == prefix + strlen(prefix) - 1;
			}
			free(t.p);
		}
	}
	put_bytes(s, "A", 1);
	put_str(s, prefix);
	put_str(s, a->path);
	put_u64(s, a->rank);
	put_u64(s, a->h5rank);
	put_u64(s, a->type->size);
	put_u64(s, flags);
	put_u64(s, (uint64_t)(int64_t)axis);
	for (unsigned i = 0; i < a->rank; i++) {
		put_u64(s, a->shape[i]);
		put_u64(s, a->chunks[i]);
	}
	put_str(s, a->dtype);
	put_str(s, a->filters);
	put_str(s, a->fill);
	put_str(s, a->units);
	put_str(s, a->calendar);
	put_u64(s, hash);
	put_blob(s, vals, nval);
	free(vals);
	s->rank = a->rank;
	return s->b.nomem ? -1 : 0;
}

static int rec_chunk(void *u, const char *prefix, const uint64_t *idx, unsigned n, const char *url, uint64_t off,
		     uint64_t size, const uint8_t *data)
{
	struct rs_build *s = u;

	(void)prefix;      /* the last array's */
	if (!data && !url && n <= 64) {
		/* the common record (a reference into the member itself) laid
		 * out here and put once: seven puts a chunk were a tenth of a
		 * member's time (bench/README.md, issue 45) */
		uint8_t rec[1 + 8 * 64 + 1 + 16], *q = rec;

		*q++ = 'C';
		for (unsigned i = 0; i < n; i++)
			q = le64(q, idx[i]);
		*q++ = 'r';
		q = le64(q, off);
		q = le64(q, size);
		put_bytes(s, rec, (size_t)(q - rec));
		return s->b.nomem ? -1 : 0;
	}
	put_bytes(s, "C", 1);
	for (unsigned i = 0; i < n; i++)
		put_u64(s, idx[i]);
	if (data) {
		put_bytes(s, "i", 1);
		put_blob(s, data, size);
	} else {
		put_bytes(s, url ? "u" : "r", 1);
		if (url)
			put_str(s, url);
		put_u64(s, off);
		put_u64(s, size);
	}
	return s->b.nomem ? -1 : 0;
}

/* The chunk records name their URL only when it is not the member's
 * own (an external link followed into another file). */
struct url_filter {
	struct rs_build *s;
	const char *own;
};

static int rec_chunk_own(void *u, const char *prefix, const uint64_t *idx, unsigned n, const char *url,
			 uint64_t off, uint64_t size, const uint8_t *data)
{
	struct url_filter *f = u;

	return rec_chunk(f->s, prefix, idx, n, url && strcmp(url, f->own) == 0 ? NULL : url, off, size, data);
}

static int fwd_meta(void *u, const char *prefix, const char *name, const char *json)
{
	return rec_meta(((struct url_filter *)u)->s, prefix, name, json);
}

static int fwd_array(void *u, const char *prefix, const refs_array *a)
{
	return rec_array(((struct url_filter *)u)->s, prefix, a);
}

static void fwd_note(void *u, const char *line)
{
	rec_note(((struct url_filter *)u)->s, line);
}

int rs_scan(uint8_t **out, size_t *len, h5_file *f, const refs_opts *ro, const rs_opts *o)
{
	struct rs_build s = { .o = o };
	struct url_filter uf = { &s, ro->url ? ro->url : "" };
	refs_sink sink = { &uf, fwd_meta, fwd_array, rec_chunk_own, fwd_note };
	struct rs_build h = { .o = o };
	unsigned nskipped = 0, nerr = 0;
	uint64_t kbits;
	int rc = 0;

	*out = NULL;
	*len = 0;
	refs_walk(f, "/", h5_file_root(f), ro, &sink, &nskipped, &nerr);
	/* the header, now that the walk has counted */
	put_bytes(&h, RS_MAGIC, sizeof(RS_MAGIC));
	put_str(&h, o->dim ? o->dim : "");
	put_u64(&h, (uint64_t)(int64_t)o->axis);
	put_u64(&h, o->inline_max);
	put_u64(&h, o->values_max);
	put_u64(&h, nskipped);
	put_u64(&h, nerr);
	put_u64(&h, (uint64_t)s.has_key);
	memcpy(&kbits, &s.key, 8);
	put_u64(&h, kbits);
	jb_done(&s.b);
	if (!s.b.nomem)
		put_blob(&h, s.b.p, s.b.len);
	jb_done(&h.b);
	if (s.b.nomem || h.b.nomem) {
		free(h.b.p);
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	} else {
		*out = (uint8_t *)h.b.p;
		*len = h.b.len;
	}
	free(s.b.p);
	return rc;
}

/* ---- the decoder ------------------------------------------------------------------ */

static int get_u64(uint64_t *v, rs_reader *rd)
{
	if (rd->end - rd->p < 8)
		return -1;
	*v = 0;
	for (int i = 0; i < 8; i++)
		*v |= (uint64_t)rd->p[i] << (8 * i);
	rd->p += 8;
	return 0;
}

static int get_str(const char **s, rs_reader *rd)
{
	uint64_t n;

	if (get_u64(&n, rd) < 0 || (uint64_t)(rd->end - rd->p) <= n || rd->p[n] != 0 || memchr(rd->p, 0, (size_t)n))
		return -1;
	*s = (const char *)rd->p;
	rd->p += n + 1;
	return 0;
}

static int get_blob(const uint8_t **b, uint64_t *n, rs_reader *rd)
{
	if (get_u64(n, rd) < 0 || (uint64_t)(rd->end - rd->p) < *n)
		return -1;
	*b = rd->p;
	rd->p += *n;
	return 0;
}

int rs_open(rs_head *h, rs_reader *rd, const uint8_t *buf, size_t len)
{
	uint64_t axis, ns, ne, hk, kbits, n;
	const uint8_t *body;

	memset(h, 0, sizeof(*h));
	rd->p = buf;
	rd->end = buf + len;
	rd->rank = 0;
	if (len < sizeof(RS_MAGIC) || memcmp(buf, RS_MAGIC, sizeof(RS_MAGIC)) != 0)
		return h5_err_set(H5_ERR_FORMAT, "not a summary of references");
	rd->p += sizeof(RS_MAGIC);
	if (get_str(&h->dim, rd) < 0 || get_u64(&axis, rd) < 0 || get_u64(&h->inline_max, rd) < 0 ||
	    get_u64(&h->values_max, rd) < 0 || get_u64(&ns, rd) < 0 || get_u64(&ne, rd) < 0 ||
	    get_u64(&hk, rd) < 0 || get_u64(&kbits, rd) < 0 || get_blob(&body, &n, rd) < 0 || rd->p != rd->end ||
	    ns > UINT32_MAX || ne > UINT32_MAX || hk > 1)
		return h5_err_set(H5_ERR_FORMAT, "a summary of references cut short or damaged");
	h->axis = (int)(int64_t)axis;
	h->nskipped = (uint32_t)ns;
	h->nerr = (uint32_t)ne;
	h->has_key = (int)hk;
	memcpy(&h->key, &kbits, 8);
	rd->p = body;
	rd->end = body + n;
	return 0;
}

int rs_matches(const rs_head *h, const rs_opts *o)
{
	return strcmp(h->dim, o->dim ? o->dim : "") == 0 && (o->dim || h->axis == o->axis) &&
	       h->inline_max == o->inline_max && h->values_max == o->values_max;
}

static int bad(void)
{
	return h5_err_set(H5_ERR_FORMAT, "a summary of references is damaged");
}

static int next_array(rs_rec *r, rs_reader *rd)
{
	uint64_t rank, h5rank, esize, flags, axis;

	if (get_str(&r->prefix, rd) < 0 || get_str(&r->name, rd) < 0 || get_u64(&rank, rd) < 0 ||
	    get_u64(&h5rank, rd) < 0 || get_u64(&esize, rd) < 0 || get_u64(&flags, rd) < 0 ||
	    get_u64(&axis, rd) < 0 || rank > 64 || h5rank > rank || esize == 0 || esize > UINT32_MAX ||
	    flags > 31 || ((flags & RS_AXIS) != 0) != ((int64_t)axis >= 0 && axis < h5rank) ||
	    (!(flags & RS_AXIS) && axis != UINT64_MAX))
		return bad();
	r->rank = (unsigned)rank;
	r->h5rank = (unsigned)h5rank;
	r->esize = (unsigned)esize;
	r->flags = (unsigned)flags;
	r->axis = (int)(int64_t)axis;
	for (unsigned i = 0; i < r->rank; i++)
		if (get_u64(&r->shape[i], rd) < 0 || get_u64(&r->chunks[i], rd) < 0 || r->chunks[i] == 0)
			return bad();
	if (get_str(&r->dtype, rd) < 0 || get_str(&r->filters, rd) < 0 || get_str(&r->fill, rd) < 0 ||
	    get_str(&r->units, rd) < 0 || get_str(&r->calendar, rd) < 0 || get_u64(&r->hash, rd) < 0 || get_blob(&r->values, &r->nvalues, rd) < 0)
		return bad();
	/* values: the whole of a 1-D variable */
	if ((flags & RS_VALUES) && (r->rank != 1 || r->nvalues / esize != r->shape[0] || r->nvalues % esize))
		return bad();
	rd->rank = r->rank;
	return 1;
}

int rs_next(rs_rec *r, rs_reader *rd)
{
	uint8_t kind;

	if (rd->p == rd->end)
		return 0;
	kind = *rd->p++;
	r->kind = kind;
	switch (kind) {
	case RS_NOTE:
		return get_str(&r->text, rd) < 0 ? bad() : 1;
	case RS_META:
		return get_str(&r->prefix, rd) < 0 || get_str(&r->name, rd) < 0 || get_str(&r->json, rd) < 0 ? bad() : 1;
	case RS_ARRAY:
		return next_array(r, rd);
	case RS_CHUNK: {
		uint8_t how;

		for (unsigned i = 0; i < rd->rank; i++)
			if (get_u64(&r->idx[i], rd) < 0)
				return bad();
		if (rd->p == rd->end)
			return bad();
		how = *rd->p++;
		r->url = NULL;
		r->data = NULL;
		r->off = 0;
		if (how == 'i')
			return get_blob(&r->data, &r->size, rd) < 0 ? bad() : 1;
		if ((how != 'u' && how != 'r') || (how == 'u' && get_str(&r->url, rd) < 0) ||
		    get_u64(&r->off, rd) < 0 || get_u64(&r->size, rd) < 0)
			return bad();
		return 1;
	}
	default:
		return bad();
	}
}
