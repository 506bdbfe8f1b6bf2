/*
 * ncdims.c - a new variable of a netCDF-4 file on netCDF dimensions
 * (owner.h nc_attach_var; issue 57): without them netCDF-C shows it on
 * phony dimensions and xarray's h5netcdf engine refuses the file.
 *
 * A netCDF dimension is a dimension scale (CLASS "DIMENSION_SCALE",
 * rank 1) of the variable's group or of a group above it (netCDF's
 * scopes, NUG "Groups"). Each axis takes the one dimension of its length
 * in the nearest group holding any of that length; none, or two of one
 * length there, and it takes a new dimension made as netCDF-C's
 * nc_def_dim makes one without a variable (nc4hdf.c): a dataset of the
 * dimension's name, big-endian 32-bit floats, its length, no data
 * written, with CLASS, the NAME "This is a netCDF dimension but not a
 * netCDF variable." and its length in 10 columns, and _Netcdf4Dimid, one
 * more than the largest in the file or given by the mount (struct nc_ids:
 * decided under its lock); but none in a file whose dimensions
 * have none (written by an older netCDF-C, or NCO: issue671.nc of
 * netcdf-c's tests): netCDF-C numbers those as it reads them, and one
 * dimension with an id among them makes it see two of one id ("NetCDF:
 * Invalid dimension ID or name", issue 63). Then the engine attaches them
 * (h5_ds_attach_new: REFERENCE_LIST, DIMENSION_LIST).
 */
#include "owner.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NC_MAX_OBJS 100000      /* objects looked at for the largest dimension id */
#define NC_DEPTH 64
#define NC_MAX_RANK 32          /* h5_dset_new's dims */
#define NC_DIM_NAME_TEXT "This is a netCDF dimension but not a netCDF variable."

struct dimv {
	uint64_t addr, len;
	char *name;             /* its link's name (NULL: one with a NUL) */
};

struct dims {
	h5_file *f;
	struct dimv *v;
	size_t n, cap;
};

static bool text_is(h5_file *f, uint64_t addr, const char *name, const char *want)
{
	void *v = NULL;
	size_t len = 0;
	bool yes = h5_attr_value_get(&v, &len, f, addr, name, strlen(name), 0) == 0 && len == strlen(want) &&
		   memcmp(v, want, len) == 0;

	free(v);
	h5_err_clear();
	return yes;
}

/* the length of the 1-D dataset at addr, or UINT64_MAX */
static uint64_t length_of(h5_file *f, uint64_t addr)
{
	h5_dataset *d = NULL;
	unsigned rank = 0;
	const uint64_t *dims = NULL;
	uint64_t len = UINT64_MAX;

	/* (h5_dataset_shape: the shape's kind, H5_SHAPE_NULL for a null one) */
	if (h5_dataset_open(&d, f, addr) == 0 && h5_dataset_shape(&rank, &dims, d) == H5_SHAPE_SIMPLE && rank == 1)
		len = dims[0];
	h5_dataset_close(d);
	h5_err_clear();
	return len;
}

/* One more dimension of a scope; name NULL or of name_len bytes. */
static int dims_add(struct dims *s, uint64_t addr, uint64_t len, const char *name, size_t name_len)
{
	if (s->n == s->cap) {
		struct dimv *nv = realloc(s->v, (s->cap ? 2 * s->cap : 16) * sizeof(*nv));

		if (!nv)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		s->v = nv;
		s->cap = s->cap ? 2 * s->cap : 16;
	}
	s->v[s->n] = (struct dimv){ addr, len, NULL };
	if (name && !memchr(name, 0, name_len) && !(s->v[s->n].name = strndup(name, name_len)))
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	s->n++;
	return 0;
}

static int dim_cb(const h5_link *l, void *ud)
{
	struct dims *s = ud;
	uint64_t len;

	if (l->type != H5_LINK_HARD || !text_is(s->f, l->addr, "CLASS", "DIMENSION_SCALE"))
		return 0;
	len = length_of(s->f, l->addr);
	if (len == UINT64_MAX)
		return 0;
	return dims_add(s, l->addr, len, l->name, l->name_len);
}

static void dims_free(struct dims *s)
{
	for (size_t k = 0; k < s->n; k++)
		free(s->v[k].name);
	free(s->v);
}

/* Whether a dimension named name is in one of the scopes lv[0..n): a
 * reader resolves a variable's dimension by name from the variable's
 * group up (netCDF4-python's _find_dim), so one of a group below by that
 * name hides it (issue 83 item 2: b(dim_0, /t2/dim_0) in t2/sub, which
 * had a dim_0 of its own, read as (5, 5): "Start+count exceeds
 * dimension bound"). */
static bool named_in(const struct dims *lv, unsigned n, const char *name)
{
	for (unsigned g = 0; name && g < n; g++)
		for (size_t k = 0; k < lv[g].n; k++)
			if (lv[g].v[k].name && strcmp(lv[g].v[k].name, name) == 0)
				return true;
	return false;
}

/* ---- the largest _Netcdf4Dimid of the file --------------------------------- */

struct idscan {
	h5_file *f;
	long long max;
	size_t without;           /* dimension scales without an id */
	size_t seen;
	unsigned depth;
	uint64_t stack[NC_DEPTH];
};

static int id_cb(const h5_link *l, void *ud)
{
	struct idscan *s = ud;
	h5_obj_info info;
	void *v = NULL;
	size_t len = 0;
	int rc = 0;

	if (l->type != H5_LINK_HARD)
		return 0;
	if (++s->seen > NC_MAX_OBJS)
		return h5_err_set(H5_ERR_LIMIT, "more than %d objects", NC_MAX_OBJS);
	if (h5_attr_value_get(&v, &len, s->f, l->addr, "_Netcdf4Dimid", 13, 0) == 0) {
		long long id = strtoll(v, NULL, 10);

		if (id > s->max)
			s->max = id;
	} else if (text_is(s->f, l->addr, "CLASS", "DIMENSION_SCALE")) {
		s->without++;
	}
	free(v);
	h5_err_clear();
	if (h5_obj_info_get(&info, s->f, l->addr) == 0 && info.kind == H5_OBJ_GROUP && s->depth < NC_DEPTH) {
		bool cycle = false;

		for (unsigned i = 0; i < s->depth; i++)
			cycle |= s->stack[i] == l->addr;
		if (!cycle) {
			s->stack[s->depth++] = l->addr;
			rc = h5_group_iterate(s->f, l->addr, id_cb, s);
			s->depth--;
		}
	}
	h5_err_clear();
	return rc;
}

/* A new netCDF dimension of length len in group grp (scopes lv[0..ng):
 * grp, then the groups above): "dim_N", N the first free in grp and
 * naming no dimension of a group above, which it would hide from the
 * variables below that use it (the name xarray's to_netcdf gives an
 * unnamed axis; not "phony_dim_N", the name netCDF-C shows for an axis on
 * no dimension, which made a real one look like none: issue 72 item 5);
 * its _Netcdf4Dimid id, none when id < 0. */
static int new_dim(uint64_t *addr, h5_file *f, uint64_t grp, const struct dims *lv, unsigned ng, uint64_t len,
		   bool unlimited, long long id, char *name, size_t cap)
{
	h5_dset_new d = { .rank = 1, .kind = 'f', .size = 4, .big_endian = 1, .data_addr = UINT64_MAX,
			  .data_size = len * 4 };
	char text[80], num[24];
	int rc;

	d.dims[0] = len;
	if (unlimited) {
		/* an unlimited dimension: chunked and growable, as netCDF-C
		 * makes one (its length is its variables' longest) */
		d.chunked = 1;
		d.growable = 1;
		d.chunk[0] = 1024;
	}
	for (unsigned k = 0;; k++) {
		h5_link l = { 0 };

		snprintf(name, cap, "dim_%u", k);
		if (ng > 1 && named_in(lv + 1, ng - 1, name))
			continue;
		rc = h5_group_lookup(&l, f, grp, name);
		h5_link_clear(&l);
		h5_err_clear();
		if (rc == H5_ERR_NOTFOUND)
			break;
	}
	rc = h5_dataset_create(addr, f, grp, name, strlen(name), &d, UINT64_MAX);
	snprintf(text, sizeof(text), "%s%10llu", NC_DIM_NAME_TEXT, (unsigned long long)len);
	snprintf(num, sizeof(num), "%lld", id);
	if (rc == 0)
		rc = h5_attr_create_str(f, *addr, "CLASS", 5, "DIMENSION_SCALE", 15, 16, H5_FSTR_NULLTERM);
	if (rc == 0)
		rc = h5_attr_create_str(f, *addr, "NAME", 4, text, strlen(text), strlen(text) + 1, H5_FSTR_NULLTERM);
	if (rc == 0 && id >= 0)
		rc = h5_attr_create_typed(f, *addr, "_Netcdf4Dimid", 13, "<i4", num, strlen(num));
	return rc;
}

void nc_ids_init(struct nc_ids *ids)
{
	pthread_mutex_init(&ids->mu, NULL);
	ids->high = -1;
}

void nc_ids_destroy(struct nc_ids *ids)
{
	pthread_mutex_destroy(&ids->mu);
}

/* The next dimension id: one more than FILE's largest (scanned once per
 * attachment) and the mount's; -1 (none) in a file whose dimensions have
 * none. The caller holds ids->mu. */
static int next_id(long long *id, h5_file *f, struct idscan *scan, struct nc_ids *ids)
{
	int rc;

	if (!scan->seen && (rc = h5_group_iterate(f, h5_file_root(f), id_cb, scan)) < 0)
		return rc;
	scan->seen += !scan->seen;      /* scanned (an empty file too) */
	if (scan->without) {
		*id = -1;
		return 0;
	}
	if (ids && ids->high > scan->max)
		scan->max = ids->high;
	*id = ++scan->max;
	if (ids)
		ids->high = *id;
	return 0;
}

static int attach_locked(h5_file *f, struct nc_ids *nids, const char *grp_path, uint64_t grp_addr, uint64_t var,
			 unsigned rank, const uint64_t *shape, bool grows, char *why, size_t whylen)
{
	uint64_t scales[NC_MAX_RANK], groups[NC_DEPTH], grp = UINT64_MAX;
	struct dims lv[NC_DEPTH];
	struct idscan ids = { .f = f, .max = -1 };
	char *path = strdup(grp_path), name[32];
	long long id;
	unsigned ng = 0;
	int rc = path ? 0 : h5_err_set(H5_ERR_NOMEM, "out of memory");

	memset(lv, 0, sizeof(lv));
	if (rank == 0 || rank > NC_MAX_RANK)
		rc = H5_ERR_NOTFOUND;   /* a scalar has no dimensions */
	/* the variable's group, then each group above it */
	for (bool first = true; rc == 0 && ng < NC_DEPTH; first = false) {
		char *slash;

		if (first && grp_addr != UINT64_MAX) {
			groups[ng] = grp_addr;
		} else if ((rc = h5_path_lookup(&groups[ng], f, path[0] ? path : "/")) == H5_ERR_NOTFOUND && !first) {
			/* a group above not linked yet (mkdir's, in the link
			 * batch): no dimensions of its own to offer but those
			 * made in it since, which the variable's group is
			 * not; the next one up */
			h5_err_clear();
			rc = 0;
			goto up;
		}
		if (rc < 0)
			break;
		lv[ng].f = f;
		rc = h5_group_iterate(f, groups[ng], dim_cb, &lv[ng]);
		ng++;
	up:
		if (!path[0] || strcmp(path, "/") == 0)
			break;
		slash = strrchr(path, '/');
		if (!slash)
			break;
		*slash = 0;
	}
	if (rc == 0)
		grp = groups[0];
	for (unsigned i = 0; i < rank; i++)
		scales[i] = UINT64_MAX;
	for (unsigned i = 0; rc == 0 && i < rank; i++) {
		if (scales[i] != UINT64_MAX)
			continue;       /* a new dimension of an axis before */
		/* (a growing first axis: a new unlimited dimension of its own) */
		for (unsigned g = 0; g < ng && scales[i] == UINT64_MAX && !(grows && i == 0); g++) {
			size_t hits = 0, at = 0;

			for (size_t k = 0; k < lv[g].n; k++)
				if (lv[g].v[k].len == shape[i]) {
					hits++;
					at = k;
				}
			if (hits == 1 && !named_in(lv, g, lv[g].v[at].name))
				scales[i] = lv[g].v[at].addr;
			else if (hits >= 1)
				break;  /* two of that length in the nearest scope, or
					 * one hidden by a name below: a new one */
		}
		if (scales[i] != UINT64_MAX)
			continue;
		if ((rc = next_id(&id, f, &ids, nids)) < 0)
			break;
		rc = new_dim(&scales[i], f, grp, lv, ng, shape[i], grows && i == 0, id, name, sizeof(name));
		/* (its name now one of its group's: a scope above with a
		 * dimension of that name is hidden for the axes after it) */
		if (rc == 0)
			rc = dims_add(&lv[0], scales[i], UINT64_MAX, name, strlen(name));
		if (rc == 0 && why && whylen)
			snprintf(why + strlen(why), whylen - strlen(why), "%s%s(%llu)", why[0] ? ", " : "new dimension ",
				 name, (unsigned long long)shape[i]);
		/* the axes after it of that length take the new one too (as
		 * netCDF-C's phony dimensions go by length) */
		for (unsigned j = i + 1; rc == 0 && j < rank && !(grows && i == 0); j++)
			if (shape[j] == shape[i])
				scales[j] = scales[i];
	}
	if (rc == 0)
		rc = h5_ds_attach_new(f, var, scales, rank);
	for (unsigned g = 0; g < NC_DEPTH; g++)
		dims_free(&lv[g]);
	free(path);
	return rc;
}

int nc_attach_var(h5_file *f, struct nc_ids *ids, const char *grp_path, uint64_t grp, uint64_t var, unsigned rank,
		  const uint64_t *shape, bool grows, char *why, size_t whylen)
{
	int rc;

	if (ids)
		pthread_mutex_lock(&ids->mu);
	rc = attach_locked(f, ids, grp_path, grp, var, rank, shape, grows, why, whylen);
	if (ids)
		pthread_mutex_unlock(&ids->mu);
	return rc;
}

/* ---- a variable removed ------------------------------------------------------ */

struct find_name {
	uint64_t addr;
	char name[64];
};

static int name_cb(const h5_link *l, void *ud)
{
	struct find_name *fn = ud;

	if (l->type != H5_LINK_HARD || l->addr != fn->addr || l->name_len >= sizeof(fn->name))
		return 0;
	memcpy(fn->name, l->name, l->name_len);
	fn->name[l->name_len] = 0;
	return 1;
}

/* a dimension of group grp made for a copied file's bytes (new_dim,
 * unlimited): named dim_N (phony_dim_N by h5fs before issue 72),
 * growable, of length 0 */
static bool bytes_dim(h5_file *f, uint64_t grp, uint64_t scale, char *name)
{
	struct find_name fn = { .addr = scale };
	h5_dataset *d = NULL;
	h5_dataset_info di = { 0 };
	bool yes;

	if (h5_group_iterate(f, grp, name_cb, &fn) != 1 ||
	    (strncmp(fn.name, "dim_", 4) != 0 && strncmp(fn.name, "phony_dim_", 10) != 0))
		return false;
	yes = h5_dataset_open(&d, f, scale) == 0 && h5_dataset_describe(&di, d) == 0 && di.rank == 1 &&
	      di.dims[0] == 0 && di.maxdims && di.maxdims[0] == UINT64_MAX &&
	      text_is(f, scale, "CLASS", "DIMENSION_SCALE");
	h5_dataset_info_clear(&di);
	h5_dataset_close(d);
	h5_err_clear();
	strcpy(name, fn.name);
	return yes;
}

int nc_detach_var(h5_file *f, struct nc_ids *ids, uint64_t grp, uint64_t var)
{
	uint64_t emptied[32];
	unsigned n = 0;
	char name[64];
	int rc;

	/* (under the lock: an attachment meanwhile may look at the
	 * dimensions this one empties and removes) */
	if (ids)
		pthread_mutex_lock(&ids->mu);
	rc = h5_ds_detach(f, var, emptied, &n);
	if (rc == H5_ERR_NOTFOUND) {
		h5_err_clear();
		rc = 0;
		n = 0;
	}
	/* a dimension made for a copied file's bytes goes with them */
	for (unsigned i = 0; rc == 0 && i < n; i++)
		if (bytes_dim(f, grp, emptied[i], name))
			rc = h5_link_delete(f, grp, name, strlen(name), 2);
	if (ids)
		pthread_mutex_unlock(&ids->mu);
	return rc;
}
