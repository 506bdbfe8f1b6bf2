/* ls_list.c - h5fs-ls's listing of one HDF5 file (ls_list.h): an entry
 * per object, its text or JSON built with json.c's writer; h5fs-ls.c
 * drives it for a FILE and for each member of a collection. */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "ls_list.h"
#include "collection.h"
#include "linkvec.h"
#include "xattrs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Soft links followed while resolving PATH before giving up (a cycle). */
#define MAX_SOFT_HOPS 16

/* ---- the text of one entry ----------------------------------------------------
 * Built with json.c's writer (struct jb over h5util.h's string builder),
 * which also makes its JSON strings. */

/* ---- descriptions ---------------------------------------------------------------- */

static void shape_desc(struct jb *s, const h5_dataset_info *di, int json)
{
	unsigned i;

	if (di->shape == H5_SHAPE_NULL) {
		jb_printf(s, json ? "null" : "null");
		return;
	}
	if (di->shape == H5_SHAPE_SCALAR) {
		jb_printf(s, json ? "[]" : "scalar");
		return;
	}
	jb_printf(s, "[");
	for (i = 0; i < di->rank; i++)
		jb_printf(s, "%s%" PRIu64, i ? (json ? ", " : ",") : "", di->dims[i]);
	jb_printf(s, "]");
}

/* Maximum shape: "unlimited" (text) / null (JSON) for unlimited extents. */
static void maxshape_desc(struct jb *s, const h5_dataset_info *di, int json)
{
	unsigned i;

	jb_printf(s, "[");
	for (i = 0; i < di->rank; i++) {
		jb_printf(s, "%s", i ? (json ? ", " : ",") : "");
		if (di->maxdims[i] == UINT64_MAX)
			jb_printf(s, json ? "null" : "unlimited");
		else
			jb_printf(s, "%" PRIu64, di->maxdims[i]);
	}
	jb_printf(s, "]");
}

/* Compression ratio: logical bytes per allocated byte (1.00 for raw
 * storage; above 1 for compressed or sparse data). */
static void ratio_desc(struct jb *s, uint64_t logical, uint64_t allocated, int json)
{
	if (allocated == 0 || logical == 0)
		jb_printf(s, json ? "null" : "-");
	else
		jb_printf(s, "%.3f", (double)logical / (double)allocated);
}

/* ---- the listing --------------------------------------------------------------- */


void ls_emit(struct lister *L, struct jb *s)
{
	jb_done(s);
	coll_progress_clear();
	if (s->nomem) {
		fprintf(stderr, "h5fs-ls: out of memory\n");
		L->nerr++;
		return;
	}
	if (L->json) {
		printf("%s\n    %s", L->first_json ? "" : ",", s->p && *s->p ? s->p : "{}");
		L->first_json = 0;
	} else {
		printf("%s\n", s->p ? s->p : "");
	}
	if (L->cap)
		jb_printf(L->cap, "%s\n", L->json && !(s->p && *s->p) ? "{}" : s->p ? s->p : "");
}

void ls_entry_begin(struct lister *L, struct jb *s, const char *path, const char *kind)
{
	if (L->json) {
		jb_printf(s, "{\"path\": ");
		jb_str(s, path, strlen(path));
		jb_printf(s, ", \"kind\": \"%s\"", kind);
	} else {
		jb_printf(s, "%-32s %-9s", path, kind);
	}
}

void ls_entry_error(struct lister *L, const char *path, const char *kind, int rc)
{
	struct jb s = { 0 };

	ls_entry_begin(L, &s, path, kind);
	if (L->json) {
		jb_printf(&s, ", \"error\": ");
		jb_str(&s, h5_err_msg(), strlen(h5_err_msg()));
		jb_printf(&s, ", \"error_code\": \"%s\"}", h5_err_name(rc));
	} else {
		jb_printf(&s, " error: %s", h5_err_msg());
	}
	ls_emit(L, &s);
	free(s.p);
	L->nerr++;
	if (rc == H5_ERR_IO || rc == H5_ERR_NOMEM)
		L->transient = 1;
}

static void list_dataset(struct lister *L, const char *path, uint64_t addr)
{
	h5_dataset *d = NULL;
	h5_dataset_info di;
	struct jb s = { 0 };
	size_t i;
	int rc;

	rc = h5_dataset_open(&d, L->f, addr);
	if (rc == 0) {
		rc = h5_dataset_describe(&di, d);
		if (rc < 0)
			h5_dataset_close(d);
	}
	if (rc < 0) {
		ls_entry_error(L, path, "dataset", rc);
		return;
	}
	ls_entry_begin(L, &s, path, "dataset");
	if (L->json) {
		jb_printf(&s, ", \"addr\": %" PRIu64 ", \"dtype\": {\"class\": \"%s\", \"size\": %u, \"desc\": ",
			  addr, di.dtype_class, di.dtype_size);
		jb_str(&s, di.dtype_text, strlen(di.dtype_text));
		if (di.dtype_numpy) {
			/* as user.h5.dtype shows it: np.dtype() of it is h5py's dtype */
			jb_printf(&s, ", \"numpy\": ");
			jb_str(&s, di.dtype_numpy, strlen(di.dtype_numpy));
		}
		if (xa_form_name(di.dtype_form)) {
			/* and the name user.h5.dtype gives a number NumPy has no
			 * type of (bfloat16, float8_e4m3fn, complex32, ...) */
			jb_printf(&s, ", \"name\": ");
			jb_str(&s, xa_form_name(di.dtype_form), strlen(xa_form_name(di.dtype_form)));
		}
		jb_printf(&s, "}, \"shape\": ");
		shape_desc(&s, &di, 1);
		if (di.has_maxshape) {
			jb_printf(&s, ", \"maxshape\": ");
			maxshape_desc(&s, &di, 1);
		}
		jb_printf(&s, ", \"layout\": \"%s\"", di.layout);
		if (di.index) {
			jb_printf(&s, ", \"chunk\": [");
			for (i = 0; i < di.chunk_rank; i++)
				jb_printf(&s, "%s%" PRIu64, i ? ", " : "", di.chunk[i]);
			jb_printf(&s, "], \"index\": \"%s\"", di.index);
		}
		if (di.n_external)
			jb_printf(&s, ", \"external_files\": %zu", di.n_external);
		if (di.nmappings) {
			jb_printf(&s, ", \"mappings\": [");
			for (i = 0; i < di.nmappings; i++) {
				const h5_mapping_info *m = &di.mappings[i];

				jb_printf(&s, "%s{\"file\": ", i ? ", " : "");
				jb_str(&s, m->file, strlen(m->file));
				jb_printf(&s, ", \"dataset\": ");
				jb_str(&s, m->dataset, strlen(m->dataset));
				jb_printf(&s, ", \"virtual\": ");
				jb_str(&s, m->virt_sel, strlen(m->virt_sel));
				jb_printf(&s, ", \"source\": ");
				jb_str(&s, m->src_sel, strlen(m->src_sel));
				jb_printf(&s, "}");
			}
			jb_printf(&s, "]");
		}
		jb_printf(&s, ", \"filters\": [");
		for (i = 0; i < di.nfilters; i++) {
			const h5_filter_info *fl = &di.filters[i];
			size_t j;

			jb_printf(&s, "%s{\"id\": %u, \"name\": ", i ? ", " : "", fl->id);
			jb_str(&s, fl->name ? fl->name : "", fl->name ? strlen(fl->name) : 0);
			jb_printf(&s, ", \"optional\": %s, \"available\": %s, \"cd\": [",
				  fl->optional ? "true" : "false", fl->available ? "true" : "false");
			for (j = 0; j < fl->ncd; j++)
				jb_printf(&s, "%s%" PRIu32, j ? ", " : "", fl->cd[j]);
			jb_printf(&s, "]}");
		}
		jb_printf(&s, "], \"logical_size\": %" PRIu64 ", \"allocated_size\": %" PRIu64
			  ", \"compression_ratio\": ", di.logical_size, di.allocated_size);
		ratio_desc(&s, di.logical_size, di.allocated_size, 1);
		jb_printf(&s, "}");
	} else {
		jb_printf(&s, " %s ", di.dtype_text);
		shape_desc(&s, &di, 0);
		if (di.has_maxshape) {
			jb_printf(&s, " max=");
			maxshape_desc(&s, &di, 0);
		}
		jb_printf(&s, " %s", di.layout);
		if (di.index) {
			jb_printf(&s, "[");
			for (i = 0; i < di.chunk_rank; i++)
				jb_printf(&s, "%s%" PRIu64, i ? "," : "", di.chunk[i]);
			jb_printf(&s, "] %s", di.index);
		}
		if (di.n_external)
			jb_printf(&s, " external(%zu files)", di.n_external);
		if (di.nmappings) {
			/* the first mappings: virtual selection <- FILE:DATASET source selection */
			jb_printf(&s, " mappings=%zu", di.nmappings);
			for (i = 0; i < di.nmappings && i < 4; i++) {
				const h5_mapping_info *m = &di.mappings[i];

				jb_printf(&s, "%s%s<-%s:%s:%s", i ? ";" : " ", m->virt_sel, m->file, m->dataset, m->src_sel);
			}
			if (di.nmappings > 4)
				jb_printf(&s, ";...");
		}
		for (i = 0; i < di.nfilters; i++) {
			const h5_filter_info *fl = &di.filters[i];

			jb_printf(&s, "%s%s(%u)%s", i ? "," : " filters=", fl->name ? fl->name : "?", fl->id,
				  fl->available ? "" : "!unavailable");
		}
		jb_printf(&s, " allocated=%" PRIu64 " logical=%" PRIu64 " ratio=", di.allocated_size,
			  di.logical_size);
		ratio_desc(&s, di.logical_size, di.allocated_size, 0);
	}
	ls_emit(L, &s);
	free(s.p);
	h5_dataset_info_clear(&di);
	h5_dataset_close(d);
}

static void list_link(struct lister *L, const char *path, const h5_link *l)
{
	struct jb s = { 0 };

	if (l->type == H5_LINK_SOFT) {
		const char *t = l->target ? l->target : "";

		ls_entry_begin(L, &s, path, "softlink");
		if (L->json) {
			jb_printf(&s, ", \"target\": ");
			jb_str(&s, t, strlen(t));
			jb_printf(&s, "}");
		} else {
			jb_printf(&s, " -> %s", t);
		}
	} else {
		const char *ef = l->ext_file ? l->ext_file : "", *ep = l->ext_path ? l->ext_path : "";
		h5_file *g = NULL;
		uint64_t taddr = 0;
		h5_obj_info info;
		const char *why = NULL;
		char *gpath = NULL;

		/* where it leads, followed as the daemon does (related.c:
		 * chains of links too) */
		if (h5_link_follow(&g, &taddr, &gpath, L->f, l) < 0 || h5_obj_info_get(&info, g, taddr) < 0)
			why = h5_err_msg();
		free(gpath);
		ls_entry_begin(L, &s, path, "extlink");
		if (L->json) {
			jb_printf(&s, ", \"file\": ");
			jb_str(&s, ef, strlen(ef));
			jb_printf(&s, ", \"target\": ");
			jb_str(&s, ep, strlen(ep));
			if (why) {
				jb_printf(&s, ", \"unresolved\": ");
				jb_str(&s, why, strlen(why));
			} else {
				jb_printf(&s, ", \"resolved\": ");
				jb_str(&s, h5_file_path(g), strlen(h5_file_path(g)));
				jb_printf(&s, ", \"resolved_kind\": \"%s\"", info.kind == H5_OBJ_GROUP ? "group" :
					  info.kind == H5_OBJ_DATASET ? "dataset" : "other");
			}
			jb_printf(&s, "}");
		} else if (why) {
			jb_printf(&s, " -> %s::%s (not followed: %s)", ef, ep, why);
		} else {
			jb_printf(&s, " -> %s::%s => %s (%s)", ef, ep, h5_file_path(g),
				  info.kind == H5_OBJ_GROUP ? "group" : info.kind == H5_OBJ_DATASET ? "dataset" : "other");
		}
		h5_err_clear();
		h5_file_release_related(g);
	}
	ls_emit(L, &s);
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


static void list_group(struct lister *L, const char *path, uint64_t addr)
{
	linkvec lv;
	size_t i;
	int rc;

	rc = linkvec_collect(&lv, L->f, addr);
	if (lv.nomem) {
		fprintf(stderr, "h5fs-ls: out of memory\n");
		L->nerr++;
		goto out;
	}
	if (rc < 0) {
		ls_entry_error(L, path, "group", rc);
		goto out;
	}
	for (i = 0; i < lv.n; i++) {
		const h5_link *l = &lv.v[i];
		char *child = h5_path_join(path, l->name);

		if (!child) {
			L->nerr++;
			break;
		}
		if (strlen(l->name) != l->name_len)
			fprintf(stderr, "h5fs-ls: %s: link name contains NUL (h5fs hides it)\n", child);
		if (l->type == H5_LINK_HARD)
			ls_list_object(L, child, l->addr, 0);
		else
			list_link(L, child, l);
		free(child);
	}
out:
	linkvec_clear(&lv);
}

void ls_list_object(struct lister *L, const char *path, uint64_t addr, int top)
{
	h5_obj_info info;
	struct jb s = { 0 };
	int rc;

	rc = h5_obj_info_get(&info, L->f, addr);
	if (rc < 0) {
		ls_entry_error(L, path, "object", rc);
		return;
	}
	switch (info.kind) {
	case H5_OBJ_GROUP: {
		int again = seen_add(L, addr);

		if (!top) {
			ls_entry_begin(L, &s, path, "group");
			if (L->json)
				jb_printf(&s, ", \"addr\": %" PRIu64 "%s}", addr,
					  again ? ", \"hardlink_to_listed\": true" : "");
			else if (again)
				jb_printf(&s, " (already listed: hard link)");
			ls_emit(L, &s);
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
		ls_entry_begin(L, &s, path, info.kind == H5_OBJ_DATATYPE ? "datatype" : "unknown");
		if (L->json)
			jb_printf(&s, ", \"addr\": %" PRIu64 "}", addr);
		ls_emit(L, &s);
		free(s.p);
		break;
	}
}

/* Resolve PATH (absolute in the file; soft links followed) to an address. */
int ls_resolve(uint64_t *out, h5_file *f, const char *path, int hops)
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
			rc = ls_resolve(&cur, f, l.target ? l.target : "", hops + 1);
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

