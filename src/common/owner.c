/*
 * owner.c - which library's conventions a file follows (owner.h): the
 * attributes netCDF-C leaves on a file (its NUG, "NetCDF-4 format": the
 * root's _NCProperties and _nc3_strict, the dimension scales'
 * _Netcdf4Dimid) and what that library allows or writes.
 */
#include "owner.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define ROOT_LINKS_LOOKED 256   /* links of the root looked at for a netCDF variable */
#define ROOT_OBJS_LOOKED 64     /* objects among them whose attributes are read */
/* the NAME netCDF-C (and h5netcdf) gives a dimension scale that is no
 * variable (nc4internal.h, DIM_WITHOUT_VARIABLE) */
#define NC_DIM_WITHOUT_VARIABLE "This is a netCDF dimension but not a netCDF variable"

static bool has_attr(h5_file *f, uint64_t addr, const char *name)
{
	void *v = NULL;
	size_t len = 0;
	int rc = h5_attr_value_get(&v, &len, f, addr, name, strlen(name), 1);

	free(v);
	h5_err_clear();
	return rc == 0;
}

static bool nc_dim_name(h5_file *f, uint64_t addr)
{
	void *v = NULL;
	size_t len = 0;
	int rc = h5_attr_value_get(&v, &len, f, addr, "NAME", 4, 1);
	bool yes = rc == 0 && len >= strlen(NC_DIM_WITHOUT_VARIABLE) &&
		   memcmp(v, NC_DIM_WITHOUT_VARIABLE, strlen(NC_DIM_WITHOUT_VARIABLE)) == 0;

	free(v);
	h5_err_clear();
	return yes;
}

struct dim_seek {
	h5_file *f;
	unsigned links, objs;
};

/* a variable or dimension of netCDF's: the attributes netCDF-C (and
 * h5netcdf) leave on them */
static int dim_cb(const h5_link *l, void *ud)
{
	static const char *const names[] = { "_Netcdf4Dimid", "_Netcdf4Coordinates", "NAME" };
	struct dim_seek *d = ud;
	uint32_t mask;

	if (++d->links > ROOT_LINKS_LOOKED || d->objs >= ROOT_OBJS_LOOKED)
		return 2;
	if (l->type != H5_LINK_HARD)
		return 0;
	d->objs++;
	/* one pass over the object's attributes for the three names (a
	 * lookup each was three: per create(2), issue 82 item 2) */
	if (h5_attr_which(&mask, d->f, l->addr, names, 3) < 0) {
		h5_err_clear();
		return 0;
	}
	return (mask & 3) || ((mask & 4) && nc_dim_name(d->f, l->addr));
}

static enum own_kind detect(h5_file *f)
{
	uint64_t root = h5_file_root(f);
	struct dim_seek d = { .f = f };
	bool nc;

	if (has_attr(f, root, "_nc3_strict"))
		return OWN_NC4_CLASSIC;
	nc = has_attr(f, root, "_NCProperties");
	if (!nc)
		nc = h5_group_iterate(f, root, dim_cb, &d) == 1;
	h5_err_clear();
	return nc ? OWN_NC4 : OWN_HDF5;
}

/* The last answers, by file and its h5_file_attr_epoch: every create(2)
 * asks, and detect passes over up to 64 of the root's objects (29% of a
 * create's daemon time in a file whose root held 100 datasets, issue 82
 * item 2). The answer reads nothing but attributes and the root's links,
 * whose every change moves the epoch; an epoch is never another file's,
 * so a file opened where a closed one was (a live FILE's next
 * generation) is asked anew. A few files at once: a mount's generation
 * and the related files its requests may pass. */
#define MEMO_N 4
static struct own_memo {
	const h5_file *f;
	uint64_t epoch;
	enum own_kind k;
} memo[MEMO_N];
static unsigned memo_next;
static pthread_mutex_t memo_mu = PTHREAD_MUTEX_INITIALIZER;

enum own_kind own_detect(h5_file *f)
{
	/* (taken before the read: a change meanwhile moves it past this) */
	uint64_t epoch = h5_file_attr_epoch(f);
	enum own_kind k;
	unsigned i;

	pthread_mutex_lock(&memo_mu);
	for (i = 0; i < MEMO_N; i++) {
		if (memo[i].f == f && memo[i].epoch == epoch) {
			k = memo[i].k;
			pthread_mutex_unlock(&memo_mu);
			return k;
		}
	}
	pthread_mutex_unlock(&memo_mu);
	k = detect(f);
	pthread_mutex_lock(&memo_mu);
	for (i = 0; i < MEMO_N && memo[i].f != f; i++)
		;
	if (i == MEMO_N)
		i = memo_next++ % MEMO_N;
	/* (an older answer is not put over a newer one of the same file) */
	if (memo[i].f != f || memo[i].epoch < epoch)
		memo[i] = (struct own_memo){ .f = f, .epoch = epoch, .k = k };
	pthread_mutex_unlock(&memo_mu);
	return k;
}

bool own_classic(h5_file *f)
{
	return has_attr(f, h5_file_root(f), "_nc3_strict");
}

const char *own_name(enum own_kind k)
{
	switch (k) {
	case OWN_NC4: return "a netCDF-4 file";
	case OWN_NC4_CLASSIC: return "a netCDF-4 classic model file";
	default: return "an HDF5 file";
	}
}

enum h5_fstr own_new_text(enum own_kind k)
{
	return k == OWN_HDF5 ? H5_FSTR_NONE : H5_FSTR_NULLTERM;
}

int own_fstr_type(size_t *width, enum h5_fstr *pad, enum own_kind k, const char *typestr)
{
	const char *p = typestr;
	unsigned long n = 0;

	*width = 0;
	*pad = H5_FSTR_NONE;
	if (*p == '|')
		p++;
	if (*p != 'S')
		return 0;
	for (p++; *p; p++) {
		if (*p < '0' || *p > '9' || n > 65535)
			return h5_err_set(H5_ERR_INVAL, "\"%s\": a fixed-length string type is S<size> (1..65535) or S",
					  typestr);
		n = n * 10 + (unsigned long)(*p - '0');
	}
	if (p - typestr > (typestr[0] == '|' ? 2 : 1) && (n == 0 || n > 65535))
		return h5_err_set(H5_ERR_INVAL, "\"%s\": a fixed-length string type is S<size> (1..65535) or S", typestr);
	*width = n;
	*pad = k == OWN_HDF5 ? H5_FSTR_NULLPAD : H5_FSTR_NULLTERM;
	return 1;
}

int own_type_check(enum own_kind k, const char *typestr)
{
	const char *p = typestr;

	if (k == OWN_HDF5)
		return 0;
	if (*p == '<' || *p == '>' || *p == '=' || *p == '|')
		p++;
	/* netCDF's atomic types (netcdf.h): NC_BYTE i1, NC_SHORT i2, NC_INT
	 * i4, NC_FLOAT f4, NC_DOUBLE f8; the enhanced model adds NC_UBYTE,
	 * NC_USHORT, NC_UINT, NC_INT64, NC_UINT64 */
	if (strcmp(p, "f2") == 0)
		return h5_err_set(H5_ERR_INVAL, "%s: netCDF has no 2-byte float type", own_name(k));
	if (k == OWN_NC4_CLASSIC && (p[0] == 'u' || strcmp(p, "i8") == 0))
		return h5_err_set(H5_ERR_INVAL, "%s: the classic model has no type %s (only i1, i2, i4, f4, f8 and "
				  "text)", own_name(k), p);
	return 0;
}
