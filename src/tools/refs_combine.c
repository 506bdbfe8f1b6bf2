/*
 * refs_combine.c - several files' references as one dataset along DIM
 * (refs_combine.h), kerchunk's MultiZarrToZarr "concat_dims" without its
 * Python: a first pass over the summaries checks that the files combine
 * (so a refusal writes nothing), a second writes the document.
 *
 * The rules (doc/h5fs-ls.1, --concat):
 *  - the first file says which arrays there are, their dtype, filters,
 *    fill value, chunks and attributes; every other file must have the
 *    same arrays (a missing or extra one is refused);
 *  - an array with DIM among its dimensions is concatenated: its extent
 *    along DIM summed, its chunks renumbered along DIM. Zarr v2 has one
 *    chunk grid per array, so by reference this needs the same chunk
 *    shape, filters and fill value in every file, and every file but the
 *    last a whole number of chunks along DIM; the other dimensions must
 *    agree;
 *  - DIM's coordinate variable, and a 1-D array along DIM whose chunks do
 *    not line up, is written by value (inline chunks of the values the
 *    summaries hold), as MultiZarrToZarr writes coordinates;
 *  - an array without DIM is the first file's, and a file whose values
 *    of it differ (their hash) is refused;
 *  - an array whose units or calendar differ from the first file's: a
 *    CF time variable along DIM held by value (xarray writes each file
 *    in "hours since <its first day>") is re-encoded in the first
 *    file's units and written by value, as MultiZarrToZarr's "cf:time";
 *    a value that has no exact form there, another calendar, or units
 *    of anything else are refused (the first file's attributes would
 *    say what the other files' values are not).
 * The chunk grid is Zarr's: a chunk key's index along DIM is the file's
 * own plus the chunks of the files before it.
 */
#define _GNU_SOURCE /* asprintf */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "refs_combine.h"
#include "refs_emit.h"
#include "cf_time.h"
#include "tool_exit.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VALUE_CHUNK_BYTES ((uint64_t)1 << 20)   /* an inline chunk of values: at most */

/* ---- the spill file ------------------------------------------------------------- */

int rc_spill_open(rc_spill *s)
{
	memset(s, 0, sizeof(*s));
	s->f = tmpfile();
	if (!s->f)
		return h5_err_set(H5_ERR_IO, "cannot make a temporary file: %s", strerror(errno));
	/* a write(2) per 64 KiB, not per 4 KiB (a member's summary: 1-4 KiB;
	 * glibc takes a size only with a buffer) */
	s->wbuf = malloc(RC_SPILL_BUF);
	if (s->wbuf)
		setvbuf(s->f, s->wbuf, _IOFBF, RC_SPILL_BUF);
	return 0;
}

int rc_spill_put(rc_spill *s, uint64_t *off, const uint8_t *p, size_t len)
{
	if (len && fwrite(p, 1, len, s->f) != len)
		return h5_err_set(H5_ERR_IO, "writing the temporary file failed: %s", strerror(errno));
	*off = s->end;
	s->end += len;
	return 0;
}

int rc_spill_get(rc_spill *s, const uint8_t **p, uint64_t off, size_t len)
{
	size_t want = len > RC_SPILL_WINDOW ? len : RC_SPILL_WINDOW;
	ssize_t n;

	if (off >= s->win_off && off - s->win_off <= s->win_len && len <= s->win_len - (off - s->win_off)) {
		*p = s->buf + (off - s->win_off);
		return 0;
	}
	if (want > s->end - off)
		want = (size_t)(s->end - off);
	if (want < len)
		return h5_err_set(H5_ERR_IO, "reading the temporary file failed: past its end");
	if (want > s->cap) {
		uint8_t *nb = realloc(s->buf, want);

		if (!nb)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		s->buf = nb;
		s->cap = want;
	}
	s->win_len = 0;
	if (fflush(s->f) != 0)
		return h5_err_set(H5_ERR_IO, "writing the temporary file failed: %s", strerror(errno));
	n = want ? pread(fileno(s->f), s->buf, want, (off_t)off) : 0;
	if (n < 0 || (size_t)n < len)
		return h5_err_set(H5_ERR_IO, "reading the temporary file failed");
	s->win_off = off;
	s->win_len = (size_t)n;
	*p = s->buf;
	return 0;
}

void rc_spill_close(rc_spill *s)
{
	if (s->f)
		fclose(s->f);
	free(s->wbuf);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

/* ---- the arrays, as the first file gives them ---------------------------------- */

struct var {
	char *prefix, *path, *dtype, *filters, *fill, *units, *calendar;
	unsigned rank, h5rank, esize, flags;
	int axis;
	uint64_t shape[64], chunks[64];
	uint64_t hash;
	uint64_t total;           /* extent along DIM, summed */
	size_t seen;              /* the last file (index + 1) that had it */
	int chunks_ok;            /* referencing its chunks makes one grid */
	int values_all;           /* every file holds its values */
	char *why;                /* the first reason chunks_ok is 0 */
	int by_value;
	int recode;               /* a file's values are re-encoded in the first file's units */
	/* writing */
	uint64_t base;            /* chunks along DIM of the files before */
	uint8_t *vbuf;            /* by value: a chunk being filled */
	uint64_t vn, vk, vkey;    /* values in it, per chunk, the next chunk's key */
};

struct comb {
	const rs_opts *o;
	const rc_member *m;
	size_t n;
	struct var *v;            /* sorted by prefix once the first file is read */
	size_t nv, cap;
	refs_doc w;
	unsigned nskipped, nskipfiles;
};

static void say(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(const char *name, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "h5fs-ls: %s: ", name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static const char *dim_name(const rs_opts *o, char *buf, size_t cap)
{
	if (o->dim)
		return o->dim;
	snprintf(buf, cap, "axis %d", o->axis);
	return buf;
}

static void shape_text(char *buf, size_t cap, const uint64_t *v, unsigned n)
{
	size_t len = (size_t)snprintf(buf, cap, "[");

	for (unsigned i = 0; i < n && len < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%" PRIu64, i ? ", " : "", v[i]);
	if (len < cap)
		snprintf(buf + len, cap - len, "]");
}

static int var_cmp(const void *a, const void *b)
{
	return strcmp(((const struct var *)a)->prefix, ((const struct var *)b)->prefix);
}

static struct var *var_find(struct comb *c, const char *prefix)
{
	struct var key = { .prefix = (char *)prefix };

	return bsearch(&key, c->v, c->nv, sizeof(*c->v), var_cmp);
}

static int var_add(struct comb *c, const rs_rec *r)
{
	struct var *t;

	if (c->nv == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 16;
		struct var *nv = realloc(c->v, ncap * sizeof(*nv));

		if (!nv)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		c->v = nv;
		c->cap = ncap;
	}
	t = &c->v[c->nv];
	memset(t, 0, sizeof(*t));
	t->prefix = strdup(r->prefix);
	t->path = strdup(r->name);
	t->dtype = strdup(r->dtype);
	t->filters = strdup(r->filters);
	t->fill = strdup(r->fill);
	t->units = strdup(r->units);
	t->calendar = strdup(r->calendar);
	c->nv++;
	if (!t->prefix || !t->path || !t->dtype || !t->filters || !t->fill || !t->units || !t->calendar)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	t->rank = r->rank;
	t->h5rank = r->h5rank;
	t->esize = r->esize;
	t->flags = r->flags;
	t->axis = r->axis;
	memcpy(t->shape, r->shape, sizeof(t->shape));
	memcpy(t->chunks, r->chunks, sizeof(t->chunks));
	t->hash = r->hash;
	t->chunks_ok = 1;
	t->values_all = 1;
	return 0;
}

static void chunk_trouble(struct var *t, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The first reason t's chunks cannot be referenced as one grid (said
 * only when it is not written by value after all). */
static void chunk_trouble(struct var *t, const char *name, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!t->chunks_ok)
		return;
	t->chunks_ok = 0;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (asprintf(&t->why, "%s: %s: %s", name, t->path, msg) < 0)
		t->why = NULL;
}

/* Whether r's values are in other units than t's (or another calendar). */
static int units_differ(const struct var *t, const rs_rec *r)
{
	return strcmp(r->units, t->units) != 0 || !cf_same_calendar(r->calendar, t->calendar);
}

/* A Zarr dtype's typestr: "<i8" of the JSON text "\"<i8\"" (a compound's
 * list: ""). */
static void dtype_typestr(char *buf, size_t cap, const char *json)
{
	size_t n = json[0] == '"' ? strcspn(json + 1, "\"") : 0;

	snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), json + 1);
}

/* r's values in t's units, in a new buffer (*out), or -1 with why[]. */
static int recode_values(uint8_t **out, const struct var *t, const rs_rec *r, char *why, size_t cap)
{
	cf_units from, to;
	char ts[32];

	*out = NULL;
	dtype_typestr(ts, sizeof(ts), r->dtype);
	if (cf_units_parse(&to, t->units, t->calendar, why, cap) != 0 ||
	    cf_units_parse(&from, r->units, r->calendar, why, cap) != 0)
		return -1;
	if (!(*out = malloc(r->nvalues ? (size_t)r->nvalues : 1))) {
		snprintf(why, cap, "out of memory");
		return -1;
	}
	memcpy(*out, r->values, (size_t)r->nvalues);
	if (cf_recode(*out, r->nvalues / r->esize, ts, &from, &to, why, cap) < 0) {
		free(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* Member i's units or calendar of t differ from the first file's: a CF
 * time variable held by value is re-encoded (tried here, so a value
 * without an exact form refuses before anything is written); anything
 * else is refused. 0, or -1 with the refusal said. */
static int check_units(struct comb *c, struct var *t, size_t i, const rs_rec *r)
{
	char why[320] = "", msg[2600];
	cf_units a, b;
	int ra, rb = 1, n;
	uint8_t *tmp = NULL;

	/* "/time: units "X", calendar "Y" differ from the first file's (F: ...)" */
	n = snprintf(msg, sizeof(msg), "%s: units \"%s\"%s%s%s differ from the first file's (%s: \"%s\"%s%s%s)",
		     r->name, r->units, *r->calendar ? ", calendar \"" : "", r->calendar, *r->calendar ? "\"" : "",
		     c->m[0].name, t->units, *t->calendar ? ", calendar \"" : "", t->calendar,
		     *t->calendar ? "\"" : "");
	if (n < 0 || (size_t)n >= sizeof(msg))
		n = (int)strlen(msg);
	ra = cf_units_parse(&a, t->units, t->calendar, why, sizeof(why));
	if (ra < 0) {
		say(c->m[i].name, "%s, whose time %s", msg, why);
		return -1;
	}
	if (ra == 0)
		rb = cf_units_parse(&b, r->units, r->calendar, why, sizeof(why));
	if (rb < 0) {
		say(c->m[i].name, "%s, and this file's time %s", msg, why);
		return -1;
	}
	if (ra || rb) {
		say(c->m[i].name, "%s; only CF time units (UNIT since DATE) are rewritten in the first file's", msg);
		return -1;
	}
	if (a.cal != b.cal) {
		say(c->m[i].name, "%s; times of two calendars are not combined", msg);
		return -1;
	}
	if (!(r->flags & RS_VALUES)) {
		say(c->m[i].name, "%s; only a 1-D numeric variable along the concatenated dimension, of at most %"
		    PRIu64 " bytes a file, is rewritten in the first file's units", msg, c->o->values_max);
		return -1;
	}
	if (recode_values(&tmp, t, r, why, sizeof(why)) < 0) {
		say(c->m[i].name, "%s, and %s", msg, why);
		return -1;
	}
	free(tmp);
	t->recode = 1;
	return 0;
}

/* One array record of member i against the first file's: 0, or -1 with
 * the refusal said. */
static int check_array(struct comb *c, size_t i, const rs_rec *r, int last)
{
	const char *name = c->m[i].name;
	char a[1400], b[1400], dn[32];
	const char *dim = dim_name(c->o, dn, sizeof(dn));
	struct var *t;

	if (r->flags & RS_TWICE) {
		say(name, "%s: %s names two of its dimensions", r->name, dim);
		return -1;
	}
	if (i == 0) {
		if (var_add(c, r) < 0) {
			say(name, "%s", h5_err_msg());
			return -1;
		}
		t = &c->v[c->nv - 1];
	} else if (!(t = var_find(c, r->prefix))) {
		say(name, "%s: not in the first file (%s): the files do not hold the same variables", r->name,
		    c->m[0].name);
		return -1;
	}
	t->seen = i + 1;
	if (i > 0 && (r->flags & RS_AXIS) != (t->flags & RS_AXIS)) {
		say(name, "%s: %s is %samong its dimensions, and %samong the first file's (%s)", r->name, dim,
		    r->flags & RS_AXIS ? "" : "not ", t->flags & RS_AXIS ? "" : "not ", c->m[0].name);
		return -1;
	}
	if (i > 0 && (r->axis != t->axis || r->rank != t->rank || r->h5rank != t->h5rank)) {
		say(name, "%s: %u dimensions, %s dimension %d; the first file's (%s): %u, dimension %d", r->name,
		    r->h5rank, dim, r->axis, c->m[0].name, t->h5rank, t->axis);
		return -1;
	}
	if (i > 0 && (r->esize != t->esize || strcmp(r->dtype, t->dtype) != 0)) {
		say(name, "%s: dtype %s differs from the first file's (%s: %s)", r->name, r->dtype, c->m[0].name,
		    t->dtype);
		return -1;
	}
	for (unsigned k = 0; i > 0 && k < r->rank; k++)
		if ((int)k != r->axis && r->shape[k] != t->shape[k]) {
			shape_text(a, sizeof(a), r->shape, r->rank);
			shape_text(b, sizeof(b), t->shape, t->rank);
			say(name, "%s: shape %s differs from the first file's (%s: %s) other than along %s", r->name, a,
			    c->m[0].name, b, dim);
			return -1;
		}
	if (i > 0 && units_differ(t, r) && check_units(c, t, i, r) < 0)
		return -1;
	if (!(r->flags & RS_AXIS)) {
		if (i > 0 && r->hash != t->hash) {
			say(name, "%s: its values differ from the first file's (%s), and %s is not among its "
			    "dimensions (such a variable is taken from the first file)", r->name, c->m[0].name, dim);
			return -1;
		}
		return 0;
	}
	if (!(r->flags & RS_VALUES))
		t->values_all = 0;
	if (i > 0 && memcmp(r->chunks, t->chunks, r->rank * sizeof(r->chunks[0])) != 0) {
		shape_text(a, sizeof(a), r->chunks, r->rank);
		shape_text(b, sizeof(b), t->chunks, t->rank);
		chunk_trouble(t, name, "chunk shape %s differs from the first file's (%s: %s); Zarr v2 has one "
			      "chunk grid per array", a, c->m[0].name, b);
	}
	if (i > 0 && strcmp(r->filters, t->filters) != 0)
		chunk_trouble(t, name, "filters %s differ from the first file's (%s: %s)", r->filters, c->m[0].name,
			      t->filters);
	if (i > 0 && strcmp(r->fill, t->fill) != 0)
		chunk_trouble(t, name, "fill value %s differs from the first file's (%s: %s)", r->fill, c->m[0].name,
			      t->fill);
	if (!last && r->shape[r->axis] % r->chunks[r->axis])
		chunk_trouble(t, name, "its extent %" PRIu64 " along %s is not a whole number of chunks of %" PRIu64
			      " (only the last file may end inside a chunk)", r->shape[r->axis], dim,
			      r->chunks[r->axis]);
	if (t->total + r->shape[r->axis] < t->total) {
		say(name, "%s: the summed extent along %s overflows", r->name, dim);
		return -1;
	}
	t->total += r->shape[r->axis];
	return 0;
}

/* Pass 1: every member's summary checked. 0, or the exit status. */
static int check_all(struct comb *c, rc_spill *s)
{
	for (size_t i = 0; i < c->n; i++) {
		const uint8_t *buf;
		rs_head h;
		rs_reader rd;
		rs_rec r;
		int rc;

		if (rc_spill_get(s, &buf, c->m[i].off, c->m[i].len) < 0 || rs_open(&h, &rd, buf, c->m[i].len) < 0) {
			say(c->m[i].name, "%s", h5_err_msg());
			return TOOL_EXIT_PARTIAL;
		}
		while ((rc = rs_next(&r, &rd)) == 1) {
			if (r.kind == RS_NOTE)
				fprintf(stderr, "%s\n", r.text);
			else if (r.kind == RS_ARRAY && check_array(c, i, &r, i + 1 == c->n) < 0)
				return TOOL_EXIT_PARTIAL;
		}
		if (rc < 0) {
			say(c->m[i].name, "%s", h5_err_msg());
			return TOOL_EXIT_PARTIAL;
		}
		if (h.nerr) {
			say(c->m[i].name, "%u error%s reading it (above): the files are not combined", h.nerr,
			    h.nerr == 1 ? "" : "s");
			return TOOL_EXIT_PARTIAL;
		}
		c->nskipped += h.nskipped;
		c->nskipfiles += h.nskipped != 0;
		if (i == 0)
			qsort(c->v, c->nv, sizeof(*c->v), var_cmp);
		for (size_t k = 0; k < c->nv; k++)
			if (c->v[k].seen != i + 1) {
				say(c->m[i].name, "%s: missing (the first file, %s, has it)", c->v[k].path, c->m[0].name);
				return TOOL_EXIT_PARTIAL;
			}
	}
	/* how each array along DIM is written */
	for (size_t k = 0; k < c->nv; k++) {
		struct var *t = &c->v[k];

		if (!(t->flags & RS_AXIS))
			continue;
		if (t->recode && !t->values_all) {
			/* a file of them past values_max */
			say(t->path, "its units differ between the files, and not every file's values are held "
			    "(at most %" PRIu64 " bytes a file): the files are not combined", c->o->values_max);
			return TOOL_EXIT_PARTIAL;
		}
		if (t->values_all && ((t->flags & RS_COORD) || !t->chunks_ok || t->recode)) {
			t->by_value = 1;
		} else if (!t->chunks_ok) {
			fprintf(stderr, "h5fs-ls: %s\n", t->why ? t->why : "out of memory");
			return TOOL_EXIT_PARTIAL;
		}
	}
	return 0;
}

/* ---- writing ------------------------------------------------------------------- */

static int flush_values(struct comb *c, struct var *t, int last)
{
	char key[32];
	int rc;

	if (!t->vn)
		return 0;
	if (last)       /* the last chunk whole, as Zarr reads it: zeros past the end */
		memset(t->vbuf + t->vn * t->esize, 0, (size_t)((t->vk - t->vn) * t->esize));
	snprintf(key, sizeof(key), "%" PRIu64, t->vkey++);
	rc = rd_inline(&c->w, t->prefix, key, t->vbuf, (size_t)(t->vk * t->esize));
	t->vn = 0;
	return rc;
}

static int add_values(struct comb *c, struct var *t, const uint8_t *p, uint64_t n)
{
	if (!t->vbuf) {
		uint64_t k = VALUE_CHUNK_BYTES / t->esize;

		t->vk = t->total < k ? t->total : k;
		if (!t->vk)
			t->vk = 1;
		if (!(t->vbuf = malloc((size_t)(t->vk * t->esize))))
			return -1;
	}
	while (n) {
		uint64_t take = t->vk - t->vn < n ? t->vk - t->vn : n;

		memcpy(t->vbuf + t->vn * t->esize, p, (size_t)(take * t->esize));
		t->vn += take;
		p += take * t->esize;
		n -= take;
		if (t->vn == t->vk && flush_values(c, t, 0) < 0)
			return -1;
	}
	return 0;
}

static int put_zarray(struct comb *c, const struct var *t, const uint64_t *shape)
{
	struct jb za = { 0 };
	uint64_t vshape[1] = { t->total }, vchunks[1] = { t->vk ? t->vk : 1 };
	int rc;

	if (t->by_value)
		rd_zarray(&za, t->dtype, "null", 1, vshape, vchunks, t->fill);
	else
		rd_zarray(&za, t->dtype, t->filters, t->rank, shape, t->chunks, t->fill);
	jb_done(&za);
	rc = za.nomem ? -1 : rd_meta(&c->w, t->prefix, ".zarray", za.p);
	free(za.p);
	return rc;
}

/* One member's records into the document. */
static int write_member(struct comb *c, size_t i, const uint8_t *buf, size_t len)
{
	const rc_member *m = &c->m[i];
	struct var *t = NULL;
	uint64_t extent = 0;
	rs_head h;
	rs_reader rd;
	rs_rec r;
	int rc;

	if (rs_open(&h, &rd, buf, len) < 0)
		return -1;
	while ((rc = rs_next(&r, &rd)) == 1) {
		char key[RD_KEY_MAX];

		switch (r.kind) {
		case RS_META:
			if (i == 0 && rd_meta(&c->w, r.prefix, r.name, r.json) < 0)
				return -1;
			break;
		case RS_ARRAY:
			if (t && (t->flags & RS_AXIS) && !t->by_value)
				t->base += (extent + t->chunks[t->axis] - 1) / t->chunks[t->axis];
			if (!(t = var_find(c, r.prefix)))
				return h5_err_set(H5_ERR_FORMAT, "%s: changed while it was read", r.name);
			extent = r.shape[r.axis >= 0 ? r.axis : 0];
			if (!(t->flags & RS_AXIS) && i == 0 && put_zarray(c, t, t->shape) < 0)
				return -1;
			if (t->by_value && i > 0 && units_differ(t, &r)) {
				uint8_t *tmp;
				char why[320];

				/* as check_units tried it */
				if (recode_values(&tmp, t, &r, why, sizeof(why)) < 0)
					return h5_err_set(H5_ERR_FORMAT, "%s: %s", r.name, why);
				rc = add_values(c, t, tmp, r.nvalues / t->esize);
				free(tmp);
				if (rc < 0)
					return -1;
			} else if (t->by_value && add_values(c, t, r.values, r.nvalues / t->esize) < 0) {
				return -1;
			}
			break;
		case RS_CHUNK:
			if (!t || t->by_value || (!(t->flags & RS_AXIS) && i > 0))
				break;
			if (t->flags & RS_AXIS)
				r.idx[t->axis] += t->base;
			rd_chunk_key(key, sizeof(key), r.idx, t->rank);
			if (r.data ? rd_inline(&c->w, t->prefix, key, r.data, (size_t)r.size) < 0
				   : rd_ref(&c->w, t->prefix, key, r.url ? r.url : m->url, r.off, r.size) < 0)
				return -1;
			break;
		default:
			break;
		}
	}
	if (t && (t->flags & RS_AXIS) && !t->by_value)
		t->base += (extent + t->chunks[t->axis] - 1) / t->chunks[t->axis];
	return rc < 0 ? -1 : 0;
}

static int write_all(struct comb *c, rc_spill *s)
{
	rd_begin(&c->w);
	for (size_t i = 0; i < c->n; i++) {
		const uint8_t *buf;

		if (rc_spill_get(s, &buf, c->m[i].off, c->m[i].len) < 0 || write_member(c, i, buf, c->m[i].len) < 0) {
			say(c->m[i].name, "%s", *h5_err_msg() ? h5_err_msg() : "out of memory");
			rd_end(&c->w);
			return TOOL_EXIT_PARTIAL;
		}
	}
	/* the arrays along DIM last: their shapes are the sums */
	for (size_t k = 0; k < c->nv; k++) {
		struct var *t = &c->v[k];
		uint64_t shape[64];

		if (!(t->flags & RS_AXIS))
			continue;
		memcpy(shape, t->shape, sizeof(shape));
		shape[t->axis] = t->total;
		if ((t->by_value && flush_values(c, t, 1) < 0) || put_zarray(c, t, shape) < 0) {
			say(t->path, "out of memory");
			rd_end(&c->w);
			return TOOL_EXIT_PARTIAL;
		}
	}
	if (rd_end(&c->w) < 0) {
		fprintf(stderr, "h5fs-ls: writing the references failed\n");
		return TOOL_EXIT_PARTIAL;
	}
	return TOOL_EXIT_OK;
}

int rc_combine(rc_spill *s, const rc_member *m, size_t n, const rs_opts *o, int strict)
{
	struct comb c = { .o = o, .m = m, .n = n };
	int ret;

	h5_err_clear();
	ret = n ? check_all(&c, s) : TOOL_EXIT_OK;
	if (ret == TOOL_EXIT_OK)
		ret = write_all(&c, s);
	if (ret == TOOL_EXIT_OK && c.nskipped) {
		fprintf(stderr, "h5fs-ls: %u dataset%s skipped (no Zarr v2 form) in %u file%s\n", c.nskipped,
			c.nskipped == 1 ? "" : "s", c.nskipfiles, c.nskipfiles == 1 ? "" : "s");
		if (strict)
			ret = TOOL_EXIT_PARTIAL;
	}
	for (size_t k = 0; k < c.nv; k++) {
		free(c.v[k].prefix);
		free(c.v[k].path);
		free(c.v[k].dtype);
		free(c.v[k].filters);
		free(c.v[k].fill);
		free(c.v[k].units);
		free(c.v[k].calendar);
		free(c.v[k].why);
		free(c.v[k].vbuf);
	}
	free(c.v);
	return ret;
}
