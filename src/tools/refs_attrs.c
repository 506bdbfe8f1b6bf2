/*
 * refs_attrs.c - h5fs-ls --refs: a group's or dataset's .zattrs (refs.c
 * says what the document is): its attributes as JSON values, and the
 * _ARRAY_DIMENSIONS xarray takes dimension names from (a netCDF-4 or HDF5
 * dimension scale's name, from DIMENSION_LIST and the scales' links).
 */
#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "refs_int.h"
#include "refs_emit.h"
#include "h5util.h"
#include "tool_exit.h"
#include "json.h"
#include "linkvec.h"
#include "zarr_meta.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Variable-length strings (one NUL between two), each cut at a NUL of its
 * own, as lists nested over dims[level..rank). */
static void vstrings(struct jb *b, const char **p, const char *end, const uint64_t *dims, unsigned rank,
		     unsigned level)
{
	if (level == rank) {
		const char *nul = *p < end ? memchr(*p, 0, (size_t)(end - *p)) : NULL;
		size_t len = *p < end ? (nul ? (size_t)(nul - *p) : (size_t)(end - *p)) : 0;

		jb_str(b, *p < end ? *p : "", len);
		*p += len + 1;
		return;
	}
	jb_printf(b, "[");
	for (uint64_t i = 0; i < dims[level]; i++) {
		jb_printf(b, "%s", i ? ", " : "");
		vstrings(b, p, end, dims, rank, level + 1);
	}
	jb_printf(b, "]");
}

/* netCDF-4's mark of a dimension scale that is no variable (its NAME
 * attribute; netCDF-C's hdf5internal.h, DIM_WITHOUT_VARIABLE) */
#define NC_DIM_ONLY "This is a netCDF dimension but not a netCDF variable"

/* A string attribute of one element as text (CF's units, calendar;
 * fixed-length ones cut at a NUL, their space padding dropped), or NULL. */
static char *attr_text(const h5_attr_value *a)
{
	const char *p = (const char *)a->data;
	size_t n = a->size;

	if (a->null_space || a->nelmts != 1 || !p)
		return NULL;
	if (a->type->kind == H5_TYPE_STRING && a->type->size < n)
		n = a->type->size;
	else if (a->type->kind != H5_TYPE_VSTRING && a->type->kind != H5_TYPE_STRING)
		return NULL;
	n = strnlen(p, n);
	while (a->type->kind == H5_TYPE_STRING && n && p[n - 1] == ' ')
		n--;
	/* (not strndup: a fixed-size string fills its n bytes, no NUL after,
	 * and strndup may look one byte past: ASan, test_refs_concat) */
	{
		char *s = malloc(n + 1);

		if (s) {
			memcpy(s, p, n);
			s[n] = '\0';
		}
		return s;
	}
}

/* The attributes netCDF-C does not show on a variable (its
 * hdf5open.c's att_read_callbk: the dimension scale API's and its own). */
static int hidden_var_attr(const char *name)
{
	static const char *const hidden[] = { "CLASS", "NAME", "_Netcdf4Coordinates", "_Netcdf4Dimid",
					      "_nc3_strict" };

	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		if (strcmp(name, hidden[i]) == 0)
			return 1;
	return 0;
}

static int attr_cb(const h5_attr_value *a, void *ud)
{
	struct refs_attrs *c = ud;
	struct jb *b = &c->b;
	const h5_type_view *t = a->type;

	if (t->kind == H5_TYPE_VSTRING) {
		uint64_t nul = 0;

		for (size_t i = 0; i < a->size; i++)
			nul += a->data[i] == 0;
		/* a string holding a NUL would shift every string after it */
		if (a->nelmts && nul != a->nelmts - 1) {
			refs_note(c->R, "%s: attribute %s not written: a string holds a NUL byte", c->path, a->name);
			return 0;
		}
	}
	if (strcmp(a->name, "_FillValue") == 0)
		c->has_fill = 1;
	if (strcmp(a->name, "NAME") == 0) {
		char *s = attr_text(a);

		c->nc_dim_only = s && strncmp(s, NC_DIM_ONLY, strlen(NC_DIM_ONLY)) == 0;
		free(s);
	}
	if (strcmp(a->name, "units") == 0 && !c->units)
		c->units = attr_text(a);
	if (strcmp(a->name, "calendar") == 0 && !c->calendar)
		c->calendar = attr_text(a);
	if (strcmp(a->name, "CLASS") == 0 && t->kind == H5_TYPE_STRING && a->rank == 0 &&
	    t->size >= 15 && memcmp(a->data, "DIMENSION_SCALE", 15) == 0)
		c->is_scale = 1;
	/* netCDF-C's own bookkeeping on a variable, which it hides (and
	 * kerchunk, h5netcdf): shown, xarray's to_netcdf would write it back
	 * and netCDF-C refuse it ("String match to name in use") */
	if (hidden_var_attr(a->name))
		return 0;
	/* h5py's bool (an enumeration) in a netCDF-4 file: netCDF-C does not
	 * read it, and xarray's to_netcdf cannot write a bool attribute back.
	 * Elsewhere it is JSON true/false, as kerchunk writes it and Zarr
	 * readers get it back (issue 83 item 6) */
	if (c->R->nc4 && t->kind == H5_TYPE_NUMBER && t->typestr && strcmp(t->typestr, "|b1") == 0) {
		refs_note(c->R, "%s: attribute %s not written: a bool in a netCDF-4 file (netCDF has none; netCDF-C "
			  "does not read it)",
			  c->path, a->name);
		return 0;
	}
	/* the dimension scale bookkeeping (references) becomes _ARRAY_DIMENSIONS */
	if (strcmp(a->name, "DIMENSION_LIST") == 0 || strcmp(a->name, "REFERENCE_LIST") == 0) {
		c->dimlist |= a->name[0] == 'D';
		if (!json_expressible(t))
			return 0;
	}
	/* a string of no dataspace (PyTables' TITLE): netCDF-C reads "" */
	if (a->null_space && strlen(a->name) == a->name_len &&
	    (t->kind == H5_TYPE_STRING || t->kind == H5_TYPE_VSTRING)) {
		jb_printf(b, "%s", c->n++ ? ", " : "");
		jb_str(b, a->name, a->name_len);
		jb_printf(b, ": \"\"");
		return 0;
	}
	if (strlen(a->name) != a->name_len || a->null_space ||
	    (t->kind != H5_TYPE_VSTRING && !json_expressible(t))) {
		refs_note(c->R, "%s: attribute %s not written: %s", c->path, a->name,
		     a->null_space ? "null dataspace" : strlen(a->name) != a->name_len ? "name holds a NUL"
		     : "its type has no JSON form");
		return 0;
	}
	jb_printf(b, "%s", c->n++ ? ", " : "");
	jb_str(b, a->name, a->name_len);
	jb_printf(b, ": ");
	if (t->kind == H5_TYPE_VSTRING) {
		const char *p = (const char *)a->data;

		vstrings(b, &p, p + a->size, a->dims, a->rank, 0);
	} else if (a->rank == 0) {
		json_value(b, t, a->data);
	} else {
		uint64_t k = 0;

		json_nested(b, t, a->data, a->dims, a->rank, 0, &k);
	}
	return 0;
}

struct find_link {
	uint64_t addr;
	char *name;
};

static int find_link_cb(const h5_link *l, void *ud)
{
	struct find_link *fl = ud;

	if (l->type != H5_LINK_HARD || l->addr != fl->addr || strlen(l->name) != l->name_len)
		return 0;
	fl->name = strdup(l->name);
	return 1;
}

/* The name of the dimension scale at addr: a link to it in the dataset's
 * group, else in the root group (where netCDF-4 and h5py put them). */
static char *scale_name(struct refs *R, uint64_t group, uint64_t addr)
{
	struct find_link fl = { addr, NULL };

	h5_group_iterate(R->f, group, find_link_cb, &fl);
	if (!fl.name && group != h5_file_root(R->f))
		h5_group_iterate(R->f, h5_file_root(R->f), find_link_cb, &fl);
	h5_err_clear();
	return fl.name;
}

/* The phony names netCDF-C gives a dataset without dimension scales
 * (refs_dims.c), into c->names: the count found. */
static unsigned phony_dims(struct refs *R, struct refs_attrs *c, const char *prefix, uint64_t addr, unsigned rank)
{
	unsigned i;

	for (i = 0; prefix && i < rank; i++) {
		const char *n = refs_dims_name(R, addr, rank, i);

		if (!n || !(c->names[i] = strdup(n)))
			break;
	}
	if (i < rank)
		for (unsigned k = 0; k < i; k++) {
			free(c->names[k]);
			c->names[k] = NULL;
		}
	return i;
}

/* "_ARRAY_DIMENSIONS" (xarray's dimension names, which it needs on every
 * array) where dimension scales say them: a scale is its own dimension; a
 * dataset with a DIMENSION_LIST names the first scale attached to each
 * dimension (that attribute's text, h5fs's xattr rendering:
 * "[obj:0xADDR], [obj:0xADDR]"); a dataset without either the phony names
 * of netCDF-C (and kerchunk), "phony_dim_N"; a scalar none ([]). Nothing
 * is written unless every dimension has a name. */
static void put_dims(struct refs *R, struct refs_attrs *c, const char *prefix, uint64_t group, uint64_t addr,
		     unsigned rank)
{
	const char *own = strrchr(c->path, '/');
	char *text = NULL, **names = c->names;
	size_t len = 0;
	unsigned i = 0;

	if (rank == 0 && prefix) {
		jb_printf(&c->b, "%s\"_ARRAY_DIMENSIONS\": []", c->n++ ? ", " : "");
		return;
	}
	if (c->is_scale && rank == 1) {
		names[0] = strdup(own ? own + 1 : c->path);
		i = names[0] ? 1 : 0;
	} else if (!c->dimlist && rank <= 64 && phony_dims(R, c, prefix, addr, rank) == rank) {
		i = rank;
	} else if (!c->dimlist || rank == 0 || rank > 64 ||
		   h5_attr_value_get((void **)&text, &len, R->f, addr, "DIMENSION_LIST", 14, 0) < 0) {
		h5_err_clear();
		return;
	}
	for (const char *p = text; text && i < rank; i++) {
		const char *q = strstr(p, "obj:0x"), *end = strchr(p, ']');
		char *e;
		uint64_t a;

		if (!q || !end || q > end)
			break;
		a = strtoull(q + 6, &e, 16);
		if (!(names[i] = scale_name(R, group, a)))
			break;
		p = end + 1;
	}
	if (i == rank) {
		jb_printf(&c->b, "%s\"_ARRAY_DIMENSIONS\": [", c->n++ ? ", " : "");
		for (i = 0; i < rank; i++) {
			jb_printf(&c->b, "%s", i ? ", " : "");
			jb_str(&c->b, names[i], strlen(names[i]));
		}
		jb_printf(&c->b, "]");
	} else {
		for (i = 0; i < rank; i++) {
			free(names[i]);
			names[i] = NULL;
		}
	}
	free(text);
}

/* The attributes of the object at addr as .zattrs (attrs_put writes
 * them, when it has some); rank >= 0 for a dataset (_ARRAY_DIMENSIONS),
 * group: the group it was reached in. */
void refs_attrs_build(struct refs *R, struct refs_attrs *c, const char *prefix, const char *path, uint64_t addr,
			int rank, uint64_t group)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->R = R;
	c->path = path;
	c->dataset = rank >= 0;
	jb_printf(&c->b, "{");
	rc = h5_attr_iterate_values(R->f, addr, attr_cb, c);
	if (rank >= 0)
		put_dims(R, c, prefix, group, addr, (unsigned)rank);
	jb_printf(&c->b, "}");
	if (rc < 0) {
		refs_note(R, "%s: attributes: %s", path, h5_err_msg());
		R->nerr++;
	}
}

void refs_attrs_put(struct refs *R, struct refs_attrs *c, const char *prefix)
{
	if (c->n)
		refs_sink_meta(R, prefix, ".zattrs", &c->b);
}

void refs_attrs_free(struct refs_attrs *c)
{
	jb_done(&c->b);
	free(c->b.p);
	for (unsigned i = 0; i < 64; i++)
		free(c->names[i]);
	free(c->units);
	free(c->calendar);
}
