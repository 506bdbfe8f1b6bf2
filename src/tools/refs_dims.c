/*
 * refs_dims.c - h5fs-ls --refs: the dimension names of datasets that have
 * no dimension scales, as netCDF-C gives them (refs_int.h). xarray needs
 * "_ARRAY_DIMENSIONS" on every array of a Zarr group; kerchunk writes
 * "phony_dim_N" there, and netCDF-C (xarray's default engine for an HDF5
 * file) names such dimensions so, numbering them after the file's real
 * dimensions: the references open in xarray as the file does.
 *
 * netCDF-C's rule (libhdf5/hdf5open.c: nc4_rec_read_metadata, then
 * nc4_rec_match_dimscales' create_phony_dims):
 *  - a group's links are read in order (by name: files without creation
 *    order, h5py's), every dimension scale a dimension of its group
 *    numbered as met, then the child groups, depth first;
 *  - then, child groups first, each dataset without DIMENSION_LIST gets
 *    for each of its dimensions a dimension of its own group of that
 *    length and unlimitedness not yet used by it (a real one too), else
 *    a new "phony_dim_<next number>".
 * One pass over the objects (their dataspaces and two attribute names),
 * soft links to datasets as refs.c follows them, groups met twice (hard
 * links) read once; made when the walk first asks (a dataset without
 * scales, or an unlimited axis), so a file whose datasets all have
 * scales and no unlimited dimension pays nothing.
 *
 * The same pass gives the length of each unlimited dimension as netCDF-C
 * takes it (nc4_find_dim_len): the longest extent along it of the
 * variables attached to it (their DIMENSION_LIST) and of the scale
 * itself. A variable shorter than its unlimited dimension (record
 * variables written unevenly) reads padded with its fill value there, so
 * its array is given that extent (refs_dims_extent): xarray refuses a
 * group whose arrays disagree on a dimension's length.
 */
#define _GNU_SOURCE /* asprintf */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "refs_int.h"
#include "linkvec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pd_dim {
	const char *name;         /* a dataset's link name, or phony (owned) */
	char *own;
	uint64_t len;
	int unlim;
};

struct pd_var {
	char *prefix;             /* "g/d/", from the root */
	uint64_t addr;            /* the dataset: what the walk asks by */
	size_t order;             /* netCDF-C's reading order: the first link's names */
	unsigned rank;
	uint64_t dims[64];
	int unlim[64];
	int need;                 /* no dimension scale bookkeeping: phony */
	size_t names[64];         /* indexes into its group's dims */
	size_t grp;
	uint64_t scale[64];       /* the scale attached to each axis (UINT64_MAX: none) */
};

/* A dimension scale: its address, the longest extent along it. */
struct pd_scale {
	uint64_t addr, len;
	int unlim;
};

struct pd_grp {
	uint64_t addr;            /* pass 1: the group to read, */
	char *prefix;             /* at this prefix (freed once read) */
	struct pd_dim *d;
	size_t nd, capd;
	size_t *kids, nkids, capk;
	size_t *vars, nvars, capv;
};

struct refs_dims {
	struct pd_var *v;
	size_t nv, capv;
	struct pd_grp *g;
	size_t ng, capg;
	struct pd_scale *sc;      /* the scales met (sorted by address after pass 1) */
	size_t nsc, capsc;
	uint64_t *seen;           /* groups read (hard links twice: once) */
	size_t nseen, capseen;
	unsigned next_id;
	int nomem;
};

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	void *np;
	size_t nc;

	if (n < *cap)
		return 0;
	nc = *cap ? *cap * 2 : 8;
	if (!(np = realloc(*p, nc * size)))
		return -1;
	*p = np;
	*cap = nc;
	return 0;
}

static int push_idx(size_t **v, size_t *n, size_t *cap, size_t x)
{
	if (grow((void **)v, cap, *n, sizeof(**v)) < 0)
		return -1;
	(*v)[(*n)++] = x;
	return 0;
}

static int add_dim(struct refs_dims *P, size_t g, const char *name, char *own, uint64_t len, int unlim)
{
	struct pd_grp *G = &P->g[g];

	if (grow((void **)&G->d, &G->capd, G->nd, sizeof(*G->d)) < 0) {
		free(own);
		return -1;
	}
	G->d[G->nd++] = (struct pd_dim){ own ? own : name, own, len, unlim };
	P->next_id++;
	return 0;
}

struct attr_names {
	int klass, dimlist;
};

static int name_cb(const char *name, size_t len, void *ud)
{
	struct attr_names *a = ud;

	if (len == 5 && memcmp(name, "CLASS", 5) == 0)
		a->klass = 1;
	if (len == 14 && memcmp(name, "DIMENSION_LIST", 14) == 0)
		a->dimlist = 1;
	return 0;
}

/* Types netCDF-C has no form for, whose datasets it leaves out (no
 * variable, no phony dimension): references and the like, compounds
 * holding strings or those. */
static int nc_unsupported(const h5_type_view *t)
{
	if (t->kind == H5_TYPE_OTHER)
		return 1;
	for (size_t i = 0; t->kind == H5_TYPE_COMPOUND && i < t->nmembers; i++)
		if (t->members[i].kind == H5_TYPE_STRING || t->members[i].kind == H5_TYPE_VSTRING ||
		    nc_unsupported(&t->members[i]))
			return 1;
	return t->kind == H5_TYPE_ARRAY && t->nmembers && nc_unsupported(&t->members[0]);
}

/* A dataset of group g at prefix: recorded; a dimension scale is a
 * dimension of g (name: its link's, kept by the link vector until the
 * plan is made, so copied). */
static void read_dataset(struct refs_dims *P, h5_file *f, size_t g, const char *prefix, const char *name,
			 uint64_t addr)
{
	h5_dataset *d = NULL;
	h5_dataset_info di;
	struct attr_names an = { 0, 0 };
	struct pd_var *v;
	h5_type_view tv = { 0 };
	int scale = 0, skip;

	if (h5_dataset_open(&d, f, addr) < 0 || h5_dataset_describe_flags(&di, d, H5_DESCRIBE_NO_ALLOCATED) < 0) {
		h5_dataset_close(d);
		h5_err_clear();
		return;         /* the walk says what is wrong with it */
	}
	/* external storage: left out, as where its files cannot be opened
	 * (a remote FILE) the dataset cannot be: the plan is the same */
	skip = di.n_external || h5_dataset_type(&tv, d) < 0 || nc_unsupported(&tv);
	h5_type_view_clear(&tv);
	if (skip) {
		h5_err_clear();
		goto out;
	}
	h5_attr_iterate_names(f, addr, name_cb, &an);
	if (an.klass) {
		char *text = NULL;
		size_t len = 0;

		/* the text form: "DIMENSION_SCALE" (a string attribute) */
		if (h5_attr_value_get((void **)&text, &len, f, addr, "CLASS", 5, 0) == 0)
			scale = strstr(text, "DIMENSION_SCALE") != NULL;
		free(text);
	}
	h5_err_clear();
	if (grow((void **)&P->v, &P->capv, P->nv, sizeof(*P->v)) < 0 ||
	    push_idx(&P->g[g].vars, &P->g[g].nvars, &P->g[g].capv, P->nv) < 0) {
		P->nomem = 1;
		goto out;
	}
	v = &P->v[P->nv];
	memset(v, 0, sizeof(*v));
	v->grp = g;
	v->addr = addr;
	v->order = P->nv;
	v->rank = di.shape == H5_SHAPE_SIMPLE && di.rank <= 64 ? di.rank : 0;
	for (unsigned i = 0; i < v->rank; i++) {
		v->dims[i] = di.dims[i];
		v->unlim[i] = di.maxdims && di.maxdims[i] == UINT64_MAX;
	}
	v->need = !scale && !an.dimlist && v->rank > 0;
	for (unsigned i = 0; i < 64; i++)
		v->scale[i] = UINT64_MAX;
	if (scale && v->rank == 1) {
		v->scale[0] = addr;
		if (grow((void **)&P->sc, &P->capsc, P->nsc, sizeof(*P->sc)) < 0) {
			P->nomem = 1;
			goto out;
		}
		P->sc[P->nsc++] = (struct pd_scale){ addr, v->dims[0], v->unlim[0] };
	} else if (an.dimlist) {
		char *text = NULL;
		size_t len = 0;

		/* its text: "[obj:0xADDR], [obj:0xADDR]" (h5fs's rendering) */
		if (h5_attr_value_get((void **)&text, &len, f, addr, "DIMENSION_LIST", 14, 0) == 0) {
			const char *p = text;

			for (unsigned i = 0; i < v->rank; i++) {
				const char *q = strstr(p, "obj:0x"), *end = strchr(p, ']');

				if (!q || !end || q > end)
					break;
				v->scale[i] = strtoull(q + 6, NULL, 16);
				p = end + 1;
			}
		}
		free(text);
		h5_err_clear();
	}
	if (asprintf(&v->prefix, "%s%s/", prefix, name) < 0) {
		P->nomem = 1;
		goto out;
	}
	P->nv++;
	if (scale && v->rank >= 1) {
		char *own = strdup(name);

		if (!own || add_dim(P, g, NULL, own, v->dims[0], v->unlim[0]) < 0)
			P->nomem = 1;
	}
out:
	h5_dataset_info_clear(&di);
	h5_dataset_close(d);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const h5_link *)a)->name, ((const h5_link *)b)->name);
}

/* Pass 1: group addr (index g) read, then its child groups. */
static void read_group(struct refs_dims *P, h5_file *f, size_t g, const char *prefix, uint64_t addr,
		       unsigned depth)
{
	linkvec lv;
	size_t first_kid;

	if (depth >= REFS_MAX_DEPTH || P->nomem)
		return;
	if (linkvec_collect(&lv, f, addr) < 0 || lv.nomem) {
		linkvec_clear(&lv);
		h5_err_clear();
		return;
	}
	if (lv.n)
		qsort(lv.v, lv.n, sizeof(*lv.v), by_name);
	first_kid = P->g[g].nkids;
	/* the links' names are copied where kept: lv lives for this group only */
	for (size_t i = 0; i < lv.n && !P->nomem; i++) {
		const h5_link *l = &lv.v[i];
		h5_obj_info info;
		uint64_t t = l->addr;

		if (l->name_len != strlen(l->name) || !l->name_len || strchr(l->name, '/'))
			continue;
		if (l->type == H5_LINK_SOFT) {
			if (!l->target || h5_path_lookup_from(&t, f, addr, l->target) < 0) {
				h5_err_clear();
				continue;
			}
		} else if (l->type != H5_LINK_HARD) {
			continue;
		}
		if (h5_obj_info_get(&info, f, t) < 0) {
			h5_err_clear();
			continue;
		}
		if (info.kind == H5_OBJ_DATASET) {
			read_dataset(P, f, g, prefix, l->name, t);
		} else if (info.kind == H5_OBJ_GROUP && l->type == H5_LINK_HARD) {
			size_t k;

			for (k = 0; k < P->nseen && P->seen[k] != t; k++)
				;
			if (k < P->nseen)
				continue;
			if (grow((void **)&P->seen, &P->capseen, P->nseen, sizeof(*P->seen)) < 0 ||
			    grow((void **)&P->g, &P->capg, P->ng, sizeof(*P->g)) < 0 ||
			    push_idx(&P->g[g].kids, &P->g[g].nkids, &P->g[g].capk, P->ng) < 0) {
				P->nomem = 1;
				break;
			}
			P->seen[P->nseen++] = t;
			memset(&P->g[P->ng], 0, sizeof(*P->g));
			P->g[P->ng].addr = t;
			if (asprintf(&P->g[P->ng].prefix, "%s%s/", prefix, l->name) < 0) {
				P->g[P->ng].prefix = NULL;
				P->nomem = 1;
			}
			P->ng++;
		}
	}
	/* the children, in order, after the group's own links */
	linkvec_clear(&lv);
	for (size_t i = first_kid, n = P->g[g].nkids; i < n && !P->nomem; i++) {
		size_t k = P->g[g].kids[i];
		char *cp = P->g[k].prefix;

		read_group(P, f, k, cp, P->g[k].addr, depth + 1);
		free(cp);
		P->g[k].prefix = NULL;
	}
}

/* Pass 2: the child groups' datasets first, then group g's. */
static void match_group(struct refs_dims *P, size_t g)
{
	struct pd_grp *G = &P->g[g];

	for (size_t i = 0; i < G->nkids && !P->nomem; i++)
		match_group(P, G->kids[i]);
	for (size_t i = 0; i < G->nvars && !P->nomem; i++) {
		struct pd_var *v = &P->v[G->vars[i]];

		for (unsigned d = 0; v->need && d < v->rank; d++) {
			size_t k;

			for (k = 0; k < G->nd; k++) {
				int used = 0;

				if (G->d[k].len != v->dims[d] || G->d[k].unlim != v->unlim[d])
					continue;
				for (unsigned e = 0; e < d; e++)
					used |= v->names[e] == k;
				if (!used)
					break;
			}
			if (k == G->nd) {
				char *own = NULL;

				if (asprintf(&own, "phony_dim_%u", P->next_id) < 0 ||
				    add_dim(P, g, NULL, own, v->dims[d], v->unlim[d]) < 0) {
					P->nomem = 1;
					return;
				}
			}
			v->names[d] = k;
		}
	}
}

static int scale_cmp(const void *a, const void *b)
{
	const struct pd_scale *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static struct pd_scale *scale_find(const struct refs_dims *P, uint64_t addr)
{
	struct pd_scale key = { .addr = addr };

	return P->nsc ? bsearch(&key, P->sc, P->nsc, sizeof(*P->sc), scale_cmp) : NULL;
}

/* Each unlimited dimension's length: its variables' longest extent. */
static void dim_lengths(struct refs_dims *P)
{
	if (P->nsc)     /* (qsort of NULL, 0: undefined; UBSan) */
		qsort(P->sc, P->nsc, sizeof(*P->sc), scale_cmp);
	for (size_t k = 0; k < P->nv; k++)
		for (unsigned i = 0; i < P->v[k].rank; i++) {
			struct pd_scale *s = P->v[k].scale[i] != UINT64_MAX ? scale_find(P, P->v[k].scale[i]) : NULL;

			if (s && P->v[k].dims[i] > s->len)
				s->len = P->v[k].dims[i];
		}
}

static int var_cmp(const void *a, const void *b)
{
	const struct pd_var *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The first reading (netCDF-C's order) of the dataset at addr, or NULL:
 * one object has one set of names whatever link the walk came by (issue
 * 72: two hard links to one dataset had two). */
static const struct pd_var *var_find(const struct refs_dims *P, uint64_t addr)
{
	size_t lo = 0, hi = P->nv;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (P->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < P->nv && P->v[lo].addr == addr ? &P->v[lo] : NULL;
}

/* The plan of R's walk (made at the first question: a file whose
 * datasets all have dimension scales, and no unlimited dimension asked
 * about, costs no second pass). */
static const struct refs_dims *plan(struct refs *R)
{
	struct refs_dims *P;
	h5_obj_info info;

	if (R->planned)
		return R->dims;
	R->planned = 1;
	if (!(P = calloc(1, sizeof(*P))))
		return NULL;
	if (h5_obj_info_get(&info, R->plan_f, R->plan_addr) < 0 || info.kind != H5_OBJ_GROUP ||
	    !(P->g = calloc(1, sizeof(*P->g)))) {
		h5_err_clear();
		refs_dims_free(P);
		return NULL;
	}
	P->ng = P->capg = 1;
	read_group(P, R->plan_f, 0, "", R->plan_addr, 0);
	match_group(P, 0);
	dim_lengths(P);
	if (P->nomem) {
		refs_dims_free(P);
		return NULL;
	}
	if (P->nv)
		qsort(P->v, P->nv, sizeof(*P->v), var_cmp);
	R->dims = P;
	return P;
}

const char *refs_dims_name(struct refs *R, uint64_t addr, unsigned rank, unsigned i)
{
	const struct refs_dims *P = R->f == R->plan_f ? plan(R) : NULL;
	const struct pd_var *v;

	if (!P || !P->nv || !(v = var_find(P, addr)) || !v->need || v->rank != rank ||
	    i >= rank)
		return NULL;
	return P->g[v->grp].d[v->names[i]].name;
}

uint64_t refs_dims_extent(struct refs *R, uint64_t addr, unsigned rank, unsigned i, uint64_t extent)
{
	const struct refs_dims *P = R->f == R->plan_f ? plan(R) : NULL;
	const struct pd_var *v;
	const struct pd_scale *s;

	if (!P || !P->nv || i >= rank || !(v = var_find(P, addr)) || v->rank != rank ||
	    v->dims[i] != extent || v->scale[i] == UINT64_MAX || !(s = scale_find(P, v->scale[i])) || !s->unlim ||
	    !v->unlim[i])
		return extent;
	return s->len > extent ? s->len : extent;
}

void refs_dims_free(struct refs_dims *P)
{
	if (!P)
		return;
	for (size_t i = 0; i < P->nv; i++)
		free(P->v[i].prefix);
	for (size_t i = 0; i < P->ng; i++) {
		for (size_t k = 0; k < P->g[i].nd; k++)
			free(P->g[i].d[k].own);
		free(P->g[i].d);
		free(P->g[i].kids);
		free(P->g[i].vars);
		free(P->g[i].prefix);
	}
	free(P->v);
	free(P->sc);
	free(P->g);
	free(P->seen);
	free(P);
}
