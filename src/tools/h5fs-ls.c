/*
 * h5fs-ls - list an HDF5 file the way h5fs would show it, without mounting.
 *
 *   h5fs-ls [-R] [--json] FILE [PATH]
 *
 * For each dataset: datatype (class, size, byte order), shape (and maximum
 * shape when it differs), storage layout (chunk shape and chunk index type
 * when chunked), filters, and the bytes allocated in the file against the
 * logical size with their ratio.  Uses libh5core only, so it shows exactly
 * what the engine understands.
 *
 * Exit status as h5fs (doc/h5fs-ls.1): 0 listed, 1 some object could not
 * be read, 2 usage, 3 cannot open FILE, 4 not HDF5 or unsupported,
 * 5 corrupt, 6 PATH not found.
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "internal.h"
#include "vds.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/* Soft links followed while resolving PATH before giving up (a cycle). */
#define MAX_SOFT_HOPS 16

enum {
	EXIT_OK = 0,
	EXIT_PARTIAL = 1,       /* listed, but some objects could not be read */
	EXIT_USAGE = 2,
	EXIT_OPEN = 3,
	EXIT_NOTHDF5 = 4,
	EXIT_CORRUPT = 5,
	EXIT_NOPATH = 6
};

/* ---- a growing string ------------------------------------------------------ */

struct sb {
	char *p;
	size_t len, cap;
	int nomem;
};

static void sb_printf(struct sb *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sb *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (s->nomem)
		return;
	for (;;) {
		size_t room = s->cap - s->len;

		va_start(ap, fmt);
		n = vsnprintf(s->p ? s->p + s->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			s->nomem = 1;
			return;
		}
		if ((size_t)n < room) {
			s->len += (size_t)n;
			return;
		}
		{
			size_t ncap = (s->cap ? s->cap : 64) * 2 + (size_t)n;
			char *np = realloc(s->p, ncap);

			if (!np) {
				s->nomem = 1;
				return;
			}
			s->p = np;
			s->cap = ncap;
		}
	}
}

static int utf8_valid(const unsigned char *p, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned c = p[i], n, k;

		if (c < 0x80) {
			i++;
			continue;
		}
		n = c >= 0xf0 && c < 0xf5 ? 3 : c >= 0xe0 ? (c < 0xf0 ? 2 : 0) : c >= 0xc2 ? 1 : 0;
		if (!n)
			return 0;
		for (k = 1; k <= n; k++)
			if (i + k >= len || (p[i + k] & 0xc0) != 0x80)
				return 0;
		i += n + 1;
	}
	return 1;
}

/* JSON string literal of (str, len): quotes, backslash and control
 * characters escaped; bytes that are not valid UTF-8 become \u00XX
 * (Latin-1), since link names may hold anything. */
static void sb_json_str(struct sb *s, const char *str, size_t len)
{
	int utf8 = utf8_valid((const unsigned char *)str, len);
	size_t i;

	sb_printf(s, "\"");
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)str[i];

		if (c == '"' || c == '\\')
			sb_printf(s, "\\%c", c);
		else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !utf8))
			sb_printf(s, "\\u%04x", c);
		else
			sb_printf(s, "%c", c);
	}
	sb_printf(s, "\"");
}

/* ---- descriptions ---------------------------------------------------------------- */

static void dtype_desc(struct sb *s, const h5_dtype *t, int depth)
{
	const char *order;
	size_t i;

	if (!t || depth > H5_MAX_DTYPE_DEPTH) {
		sb_printf(s, "?");
		return;
	}
	order = t->size <= 1 ? "" : t->big_endian ? "be" : "le";
	switch (t->cls) {
	case H5T_INTEGER:
		sb_printf(s, "%sint%u%s", t->is_signed ? "" : "u", t->size * 8, order);
		break;
	case H5T_FLOAT:
		sb_printf(s, "float%u%s", t->size * 8, order);
		break;
	case H5T_TIME:
		sb_printf(s, "time%u%s", t->size * 8, order);
		break;
	case H5T_BITFIELD:
		sb_printf(s, "bitfield%u%s", t->size * 8, order);
		break;
	case H5T_STRING:
		sb_printf(s, "string[%u,%s,%s]", t->size, t->cset ? "utf8" : "ascii",
			  t->str_pad == 0 ? "nullterm" : t->str_pad == 1 ? "nullpad" : "spacepad");
		break;
	case H5T_OPAQUE:
		sb_printf(s, "opaque[%u]", t->size);
		if (t->tag && *t->tag)
			sb_printf(s, "(%s)", t->tag);
		break;
	case H5T_REFERENCE:
		sb_printf(s, "reference(%s)", t->ref_type == 0 ? "object" : t->ref_type == 1 ? "region" : "other");
		break;
	case H5T_ENUM:
		sb_printf(s, "enum<");
		dtype_desc(s, t->base, depth + 1);
		sb_printf(s, ">{%zu}", t->nmembers);
		break;
	case H5T_VLEN:
		if (t->vlen_type == 1) {
			sb_printf(s, "vlen-string(%s)", t->cset ? "utf8" : "ascii");
		} else {
			sb_printf(s, "vlen<");
			dtype_desc(s, t->base, depth + 1);
			sb_printf(s, ">");
		}
		break;
	case H5T_ARRAY:
		sb_printf(s, "array[");
		for (i = 0; i < t->arank; i++)
			sb_printf(s, "%s%" PRIu32, i ? "," : "", t->adims[i]);
		sb_printf(s, "]<");
		dtype_desc(s, t->base, depth + 1);
		sb_printf(s, ">");
		break;
	case H5T_COMPOUND:
		sb_printf(s, "compound[%u]{", t->size);
		for (i = 0; i < t->nmembers; i++) {
			sb_printf(s, "%s%s@%" PRIu32 ":", i ? "," : "",
				  t->members[i].name ? t->members[i].name : "?", t->members[i].offset);
			dtype_desc(s, t->members[i].type, depth + 1);
		}
		sb_printf(s, "}");
		break;
	default:
		sb_printf(s, "class%d[%u]", (int)t->cls, t->size);
		break;
	}
}

static const char *dtype_class_name(const h5_dtype *t)
{
	static const char *const names[] = {
		"integer", "float", "time", "string", "bitfield", "opaque",
		"compound", "reference", "enum", "vlen", "array"
	};

	if (t && (unsigned)t->cls < sizeof(names) / sizeof(names[0]))
		return names[t->cls];
	return "unknown";
}

static const char *layout_name(unsigned cls)
{
	switch (cls) {
	case H5_LAYOUT_COMPACT: return "compact";
	case H5_LAYOUT_CONTIGUOUS: return "contiguous";
	case H5_LAYOUT_CHUNKED: return "chunked";
	case H5_LAYOUT_VIRTUAL: return "virtual";
	default: return "unknown";
	}
}

static const char *index_name(unsigned idx)
{
	switch (idx) {
	case H5_CIDX_BTREE1: return "btree-v1";
	case H5_CIDX_SINGLE: return "single-chunk";
	case H5_CIDX_IMPLICIT: return "implicit";
	case H5_CIDX_FARRAY: return "fixed-array";
	case H5_CIDX_EARRAY: return "extensible-array";
	case H5_CIDX_BTREE2: return "btree-v2";
	default: return "unknown";
	}
}

static void shape_desc(struct sb *s, const h5_dspace *sp, int json)
{
	unsigned i;

	if (sp->type == H5_SPACE_NULL) {
		sb_printf(s, json ? "null" : "null");
		return;
	}
	if (sp->type == H5_SPACE_SCALAR) {
		sb_printf(s, json ? "[]" : "scalar");
		return;
	}
	sb_printf(s, "[");
	for (i = 0; i < sp->rank; i++)
		sb_printf(s, "%s%" PRIu64, i ? (json ? ", " : ",") : "", sp->dims[i]);
	sb_printf(s, "]");
}

static int has_maxshape(const h5_dspace *sp)
{
	unsigned i;

	if (sp->type != H5_SPACE_SIMPLE || !sp->has_max)
		return 0;
	for (i = 0; i < sp->rank; i++)
		if (sp->maxdims[i] != sp->dims[i])
			return 1;
	return 0;
}

/* Maximum shape: "unlimited" (text) / null (JSON) for unlimited extents. */
static void maxshape_desc(struct sb *s, const h5_dspace *sp, int json)
{
	unsigned i;

	sb_printf(s, "[");
	for (i = 0; i < sp->rank; i++) {
		sb_printf(s, "%s", i ? (json ? ", " : ",") : "");
		if (sp->maxdims[i] == H5_UNLIMITED)
			sb_printf(s, json ? "null" : "unlimited");
		else
			sb_printf(s, "%" PRIu64, sp->maxdims[i]);
	}
	sb_printf(s, "]");
}

/* Compression ratio: logical bytes per allocated byte (1.00 for raw
 * storage; above 1 for compressed or sparse data). */
static void ratio_desc(struct sb *s, uint64_t logical, uint64_t allocated, int json)
{
	if (allocated == 0 || logical == 0)
		sb_printf(s, json ? "null" : "-");
	else
		sb_printf(s, "%.3f", (double)logical / (double)allocated);
}

/* ---- the listing --------------------------------------------------------------- */

struct lister {
	h5_file *f;
	int recursive;
	int json;
	int nerr;
	int first_json;
	uint64_t *seen;         /* group addresses already listed (-R) */
	size_t nseen, capseen;
};

static void emit(struct lister *L, struct sb *s)
{
	if (s->nomem) {
		fprintf(stderr, "h5fs-ls: out of memory\n");
		L->nerr++;
		return;
	}
	if (L->json) {
		printf("%s\n    %s", L->first_json ? "" : ",", s->p ? s->p : "{}");
		L->first_json = 0;
	} else {
		printf("%s\n", s->p ? s->p : "");
	}
}

static void entry_begin(struct lister *L, struct sb *s, const char *path, const char *kind)
{
	if (L->json) {
		sb_printf(s, "{\"path\": ");
		sb_json_str(s, path, strlen(path));
		sb_printf(s, ", \"kind\": \"%s\"", kind);
	} else {
		sb_printf(s, "%-32s %-9s", path, kind);
	}
}

static void entry_error(struct lister *L, const char *path, const char *kind, int rc)
{
	struct sb s = { 0 };

	entry_begin(L, &s, path, kind);
	if (L->json) {
		sb_printf(&s, ", \"error\": ");
		sb_json_str(&s, h5_err_msg(), strlen(h5_err_msg()));
		sb_printf(&s, ", \"error_code\": \"%s\"}", h5_err_name(rc));
	} else {
		sb_printf(&s, " error: %s", h5_err_msg());
	}
	emit(L, &s);
	free(s.p);
	L->nerr++;
}

static void list_dataset(struct lister *L, const char *path, uint64_t addr)
{
	h5_dataset *d = NULL;
	struct sb s = { 0 }, ty = { 0 };
	size_t i;
	int rc;

	rc = h5_dataset_open(&d, L->f, addr);
	if (rc < 0) {
		entry_error(L, path, "dataset", rc);
		return;
	}
	dtype_desc(&ty, d->dtype, 0);
	entry_begin(L, &s, path, "dataset");
	if (L->json) {
		sb_printf(&s, ", \"addr\": %" PRIu64 ", \"dtype\": {\"class\": \"%s\", \"size\": %u, \"desc\": ",
			  addr, dtype_class_name(d->dtype), d->dtype ? d->dtype->size : 0);
		sb_json_str(&s, ty.p ? ty.p : "", ty.len);
		{
			/* as user.h5.dtype shows it: np.dtype() of it is h5py's dtype */
			char *ts = NULL;

			if (d->dtype && h5_value_typestr(&ts, d->dtype) == 0 && ts) {
				sb_printf(&s, ", \"numpy\": ");
				sb_json_str(&s, ts, strlen(ts));
			}
			free(ts);
		}
		sb_printf(&s, "}, \"shape\": ");
		shape_desc(&s, &d->space, 1);
		if (has_maxshape(&d->space)) {
			sb_printf(&s, ", \"maxshape\": ");
			maxshape_desc(&s, &d->space, 1);
		}
		sb_printf(&s, ", \"layout\": \"%s\"", layout_name(d->layout.cls));
		if (d->layout.cls == H5_LAYOUT_CHUNKED) {
			sb_printf(&s, ", \"chunk\": [");
			for (i = 0; i < d->layout.ndims; i++)
				sb_printf(&s, "%s%" PRIu64, i ? ", " : "", d->layout.chunk[i]);
			sb_printf(&s, "], \"index\": \"%s\"", index_name(d->layout.idx_type));
		}
		if (d->efl.n)
			sb_printf(&s, ", \"external_files\": %zu", d->efl.n);
		if (d->vds) {
			sb_printf(&s, ", \"mappings\": [");
			for (i = 0; i < d->vds->n; i++) {
				const h5_vds_map *m = &d->vds->map[i];
				char *vt = NULL, *st = NULL;

				h5_sel_text(&vt, &m->virt);
				h5_sel_text(&st, &m->src);
				sb_printf(&s, "%s{\"file\": ", i ? ", " : "");
				sb_json_str(&s, m->file, strlen(m->file));
				sb_printf(&s, ", \"dataset\": ");
				sb_json_str(&s, m->dset, strlen(m->dset));
				sb_printf(&s, ", \"virtual\": ");
				sb_json_str(&s, vt ? vt : "", vt ? strlen(vt) : 0);
				sb_printf(&s, ", \"source\": ");
				sb_json_str(&s, st ? st : "", st ? strlen(st) : 0);
				sb_printf(&s, "}");
				free(vt);
				free(st);
			}
			sb_printf(&s, "]");
		}
		sb_printf(&s, ", \"filters\": [");
		for (i = 0; i < d->pline.n; i++) {
			const h5_filter *fl = &d->pline.filters[i];
			size_t j;

			sb_printf(&s, "%s{\"id\": %u, \"name\": ", i ? ", " : "", fl->id);
			{
				const char *nm = fl->name ? fl->name : h5_filter_name(fl->id);

				sb_json_str(&s, nm ? nm : "", nm ? strlen(nm) : 0);
			}
			sb_printf(&s, ", \"optional\": %s, \"available\": %s, \"cd\": [",
				  (fl->flags & 1) ? "true" : "false",
				  h5_filter_available(fl->id) ? "true" : "false");
			for (j = 0; j < fl->ncd; j++)
				sb_printf(&s, "%s%" PRIu32, j ? ", " : "", fl->cd[j]);
			sb_printf(&s, "]}");
		}
		sb_printf(&s, "], \"logical_size\": %" PRIu64 ", \"allocated_size\": %" PRIu64
			  ", \"compression_ratio\": ", h5_dataset_size(d), h5_dataset_allocated(d));
		ratio_desc(&s, h5_dataset_size(d), h5_dataset_allocated(d), 1);
		sb_printf(&s, "}");
	} else {
		sb_printf(&s, " %s ", ty.p ? ty.p : "?");
		shape_desc(&s, &d->space, 0);
		if (has_maxshape(&d->space)) {
			sb_printf(&s, " max=");
			maxshape_desc(&s, &d->space, 0);
		}
		sb_printf(&s, " %s", layout_name(d->layout.cls));
		if (d->layout.cls == H5_LAYOUT_CHUNKED) {
			sb_printf(&s, "[");
			for (i = 0; i < d->layout.ndims; i++)
				sb_printf(&s, "%s%" PRIu64, i ? "," : "", d->layout.chunk[i]);
			sb_printf(&s, "] %s", index_name(d->layout.idx_type));
		}
		if (d->efl.n)
			sb_printf(&s, " external(%zu files)", d->efl.n);
		if (d->vds) {
			/* the first mappings: virtual selection <- FILE:DATASET source selection */
			sb_printf(&s, " mappings=%zu", d->vds->n);
			for (i = 0; i < d->vds->n && i < 4; i++) {
				const h5_vds_map *m = &d->vds->map[i];
				char *vt = NULL, *st = NULL;

				h5_sel_text(&vt, &m->virt);
				h5_sel_text(&st, &m->src);
				sb_printf(&s, "%s%s<-%s:%s:%s", i ? ";" : " ", vt ? vt : "?", m->file, m->dset, st ? st : "?");
				free(vt);
				free(st);
			}
			if (d->vds->n > 4)
				sb_printf(&s, ";...");
		}
		for (i = 0; i < d->pline.n; i++) {
			const h5_filter *fl = &d->pline.filters[i];
			const char *nm = fl->name ? fl->name : h5_filter_name(fl->id);

			sb_printf(&s, "%s%s(%u)%s", i ? "," : " filters=", nm ? nm : "?", fl->id,
				  h5_filter_available(fl->id) ? "" : "!unavailable");
		}
		sb_printf(&s, " allocated=%" PRIu64 " logical=%" PRIu64 " ratio=", h5_dataset_allocated(d),
			  h5_dataset_size(d));
		ratio_desc(&s, h5_dataset_size(d), h5_dataset_allocated(d), 0);
	}
	emit(L, &s);
	free(s.p);
	free(ty.p);
	h5_dataset_close(d);
}

static void list_link(struct lister *L, const char *path, const h5_link *l)
{
	struct sb s = { 0 };

	if (l->type == H5_LINK_SOFT) {
		const char *t = l->target ? l->target : "";

		entry_begin(L, &s, path, "softlink");
		if (L->json) {
			sb_printf(&s, ", \"target\": ");
			sb_json_str(&s, t, strlen(t));
			sb_printf(&s, "}");
		} else {
			sb_printf(&s, " -> %s", t);
		}
	} else {
		const char *ef = l->ext_file ? l->ext_file : "", *ep = l->ext_path ? l->ext_path : "";
		h5_file *g = NULL;
		uint64_t taddr = 0;
		h5_obj_info info;
		const char *why = NULL;
		int rc;

		/* where it leads, resolved as the daemon does (related.c) */
		rc = h5_file_open_related(&g, L->f, ef);
		if (rc == 1)
			why = "file not found";
		else if (rc < 0)
			why = h5_err_msg();
		else if (h5_path_lookup(&taddr, g, ep) < 0 || h5_obj_info_get(&info, g, taddr) < 0)
			why = h5_err_msg();
		entry_begin(L, &s, path, "extlink");
		if (L->json) {
			sb_printf(&s, ", \"file\": ");
			sb_json_str(&s, ef, strlen(ef));
			sb_printf(&s, ", \"target\": ");
			sb_json_str(&s, ep, strlen(ep));
			if (why) {
				sb_printf(&s, ", \"unresolved\": ");
				sb_json_str(&s, why, strlen(why));
			} else {
				sb_printf(&s, ", \"resolved\": ");
				sb_json_str(&s, h5_file_path(g), strlen(h5_file_path(g)));
				sb_printf(&s, ", \"resolved_kind\": \"%s\"", info.kind == H5_OBJ_GROUP ? "group" :
					  info.kind == H5_OBJ_DATASET ? "dataset" : "other");
			}
			sb_printf(&s, "}");
		} else if (why) {
			sb_printf(&s, " -> %s::%s (not followed: %s)", ef, ep, why);
		} else {
			sb_printf(&s, " -> %s::%s => %s (%s)", ef, ep, h5_file_path(g),
				  info.kind == H5_OBJ_GROUP ? "group" : info.kind == H5_OBJ_DATASET ? "dataset" : "other");
		}
		h5_err_clear();
		h5_file_release_related(g);
	}
	emit(L, &s);
	free(s.p);
}

static int seen_add(struct lister *L, uint64_t addr)
{
	size_t i;

	for (i = 0; i < L->nseen; i++)
		if (L->seen[i] == addr)
			return 1;
	if (L->nseen == L->capseen) {
		size_t ncap = L->capseen ? L->capseen * 2 : 64;
		uint64_t *n = realloc(L->seen, ncap * sizeof(*n));

		if (!n)
			return 1;       /* out of memory: do not descend */
		L->seen = n;
		L->capseen = ncap;
	}
	L->seen[L->nseen++] = addr;
	return 0;
}

struct linkvec {
	h5_link *v;
	size_t n, cap;
	int nomem;
};

static int collect_cb(const h5_link *l, void *ud)
{
	struct linkvec *lv = ud;
	h5_link *c;

	if (lv->n == lv->cap) {
		size_t ncap = lv->cap ? lv->cap * 2 : 32;
		h5_link *n = realloc(lv->v, ncap * sizeof(*n));

		if (!n) {
			lv->nomem = 1;
			return 1;
		}
		lv->v = n;
		lv->cap = ncap;
	}
	c = &lv->v[lv->n];
	*c = *l;
	c->name = malloc(l->name_len + 1);
	c->target = l->target ? strdup(l->target) : NULL;
	c->ext_file = l->ext_file ? strdup(l->ext_file) : NULL;
	c->ext_path = l->ext_path ? strdup(l->ext_path) : NULL;
	if (c->name)
		memcpy(c->name, l->name, l->name_len + 1);
	lv->n++;
	if (!c->name || (l->target && !c->target) || (l->ext_file && !c->ext_file) ||
	    (l->ext_path && !c->ext_path)) {
		lv->nomem = 1;
		return 1;
	}
	return 0;
}

static void list_object(struct lister *L, const char *path, uint64_t addr, int top);

static void list_group(struct lister *L, const char *path, uint64_t addr)
{
	struct linkvec lv = { 0 };
	size_t i;
	int rc;

	rc = h5_group_iterate(L->f, addr, collect_cb, &lv);
	if (lv.nomem) {
		fprintf(stderr, "h5fs-ls: out of memory\n");
		L->nerr++;
		goto out;
	}
	if (rc < 0) {
		entry_error(L, path, "group", rc);
		goto out;
	}
	for (i = 0; i < lv.n; i++) {
		const h5_link *l = &lv.v[i];
		size_t plen = strlen(path);
		char *child = malloc(plen + strlen(l->name) + 2);

		if (!child) {
			L->nerr++;
			break;
		}
		sprintf(child, "%s%s%s", path, plen && path[plen - 1] == '/' ? "" : "/", l->name);
		if (strlen(l->name) != l->name_len)
			fprintf(stderr, "h5fs-ls: %s: link name contains NUL (h5fs hides it)\n", child);
		if (l->type == H5_LINK_HARD)
			list_object(L, child, l->addr, 0);
		else
			list_link(L, child, l);
		free(child);
	}
out:
	for (i = 0; i < lv.n; i++)
		h5_link_clear(&lv.v[i]);
	free(lv.v);
}

static void list_object(struct lister *L, const char *path, uint64_t addr, int top)
{
	h5_obj_info info;
	struct sb s = { 0 };
	int rc;

	rc = h5_obj_info_get(&info, L->f, addr);
	if (rc < 0) {
		entry_error(L, path, "object", rc);
		return;
	}
	switch (info.kind) {
	case H5_OBJ_GROUP: {
		int again = seen_add(L, addr);

		if (!top) {
			entry_begin(L, &s, path, "group");
			if (L->json)
				sb_printf(&s, ", \"addr\": %" PRIu64 "%s}", addr,
					  again ? ", \"hardlink_to_listed\": true" : "");
			else if (again)
				sb_printf(&s, " (already listed: hard link)");
			emit(L, &s);
			free(s.p);
		}
		if (!again && (top || L->recursive))
			list_group(L, path, addr);
		break;
	}
	case H5_OBJ_DATASET:
		list_dataset(L, path, addr);
		break;
	default:
		entry_begin(L, &s, path, info.kind == H5_OBJ_DATATYPE ? "datatype" : "unknown");
		if (L->json)
			sb_printf(&s, ", \"addr\": %" PRIu64 "}", addr);
		emit(L, &s);
		free(s.p);
		break;
	}
}

/* Resolve PATH (absolute in the file; soft links followed) to an address. */
static int resolve(uint64_t *out, h5_file *f, const char *path, int hops)
{
	uint64_t cur = h5_file_root(f);
	char *copy = strdup(path), *save = NULL, *comp;
	int rc = 0;

	if (!copy)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (comp = strtok_r(copy, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		h5_link l;

		if (strcmp(comp, ".") == 0)
			continue;
		rc = h5_group_lookup(&l, f, cur, comp);
		if (rc < 0)
			goto out;
		if (l.type == H5_LINK_HARD) {
			cur = l.addr;
		} else if (l.type == H5_LINK_SOFT && hops < MAX_SOFT_HOPS) {
			/* relative targets are relative to the root here: good
			 * enough for a command-line path, and documented */
			rc = resolve(&cur, f, l.target ? l.target : "", hops + 1);
		} else {
			rc = h5_err_set(H5_ERR_UNSUPPORTED, "%s: %s", comp,
					l.type == H5_LINK_SOFT ? "too many soft links" : "external link not followed");
		}
		h5_link_clear(&l);
		if (rc < 0)
			goto out;
	}
	*out = cur;
out:
	free(copy);
	return rc;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: h5fs-ls [-R] [--json] FILE [PATH]\n"
		"List the HDF5 file FILE (from PATH, default /) as h5fs shows it:\n"
		"per dataset its type, shape, layout, chunking, chunk index, filters and\n"
		"allocated vs logical size.\n"
		"  -R, --recursive   list sub-groups too\n"
		"  --json            one JSON document instead of text\n"
		"  -h, --help        this help\n"
		"  -V, --version     print the version\n"
		"Exit status: 0 ok, 1 some objects unreadable, 2 usage, 3 cannot open FILE,\n"
		"4 not HDF5 or unsupported, 5 corrupt, 6 PATH not found.\n");
}

int main(int argc, char **argv)
{
	struct lister L;
	const char *file = NULL, *path = "/";
	h5_file *f = NULL;
	uint64_t addr;
	struct stat st;
	int i, nargs = 0, rc, ret = EXIT_PARTIAL;

	memset(&L, 0, sizeof(L));
	L.first_json = 1;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-R") == 0 || strcmp(argv[i], "--recursive") == 0) {
			L.recursive = 1;
		} else if (strcmp(argv[i], "--json") == 0) {
			L.json = 1;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "-V") == 0 || strcmp(argv[i], "--version") == 0) {
			printf("h5fs-ls %s\n", PACKAGE_VERSION);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1] && strcmp(argv[i], "--") != 0) {
			fprintf(stderr, "h5fs-ls: unknown option %s\n", argv[i]);
			usage(stderr);
			return EXIT_USAGE;
		} else if (strcmp(argv[i], "--") == 0) {
			continue;
		} else if (nargs == 0) {
			file = argv[i];
			nargs++;
		} else if (nargs == 1) {
			path = argv[i];
			nargs++;
		} else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (!file) {
		usage(stderr);
		return EXIT_USAGE;
	}
	/* open(2) of a FIFO would wait for a writer */
	if (stat(file, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode)) {
		fprintf(stderr, "h5fs-ls: %s: %s\n", file, S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
		return EXIT_OPEN;
	}
	rc = h5_file_open(&f, file, NULL);
	if (rc < 0) {
		const char *msg = h5_err_msg();
		size_t n = strlen(file);

		if (strncmp(msg, file, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
			msg += n + 2;
		fprintf(stderr, "h5fs-ls: %s: %s\n", file, msg);
		return rc == H5_ERR_IO ? EXIT_OPEN :
		       rc == H5_ERR_NOTHDF5 || rc == H5_ERR_UNSUPPORTED ? EXIT_NOTHDF5 :
		       rc == H5_ERR_NOMEM ? EXIT_PARTIAL : EXIT_CORRUPT;
	}
	L.f = f;
	rc = resolve(&addr, f, path, 0);
	if (rc < 0) {
		fprintf(stderr, "h5fs-ls: %s: %s: %s\n", file, path, h5_err_msg());
		ret = rc == H5_ERR_NOTFOUND ? EXIT_NOPATH : EXIT_PARTIAL;
		goto out;
	}
	if (L.json) {
		printf("{\"file\": ");
		{
			struct sb s = { 0 };

			sb_json_str(&s, file, strlen(file));
			printf("%s", s.p ? s.p : "\"\"");
			free(s.p);
		}
		printf(", \"superblock_version\": %d, \"userblock\": %" PRIu64 ", \"entries\": [",
		       h5_file_sb_version(f), h5_file_userblock(f));
	}
	list_object(&L, strcmp(path, "/") == 0 ? "/" : path, addr, 1);
	if (L.json)
		printf("%s]}\n", L.first_json ? "" : "\n");
	ret = L.nerr ? EXIT_PARTIAL : EXIT_OK;
out:
	free(L.seen);
	h5_file_close(f);
	return ret;
}
