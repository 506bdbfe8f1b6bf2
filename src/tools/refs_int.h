/* refs_int.h - what the files of h5fs-ls --refs share: refs.c (the walk
 * of groups and links, the document and its sink), refs_attrs.c (a
 * group's or array's .zattrs: attributes, dimension names) and
 * refs_dataset.c (an array: .zarray and its chunks' references). */
#ifndef H5FS_REFS_INT_H
#define H5FS_REFS_INT_H

#include "refs.h"
#include "json.h"

#include <stdint.h>
#include <time.h>

#define REFS_MAX_DEPTH 64         /* groups nested deeper are not written (a cycle, or hostile) */

/* One walk's state (refs_walk). */
struct refs {
	const refs_opts *o;
	h5_file *f;               /* the file being walked (external links change it) */
	int nc4;                  /* f is a netCDF-4 file (owner.c own_detect): its
				   * attributes as netCDF-C reads them (refs_attrs.c) */
	const char *url;          /* its URL in references */
	const refs_sink *s;
	unsigned nskipped, nerr;
	uint64_t anc[REFS_MAX_DEPTH];  /* groups being written: a link back is a cycle */
	unsigned nanc;
	int tty;                  /* stderr is a terminal: progress lines */
	uint64_t nchunks;
	struct timespec last;
	int progress_shown;
	struct refs_dims *dims;   /* netCDF-C's names of dimensions without scales (refs_dims.c), */
	h5_file *plan_f;          /* planned from this file's object at plan_addr (its root) */
	uint64_t plan_addr;       /* when first asked (planned) */
	int planned;
};

/* A document entry through the sink (val freed by the caller); a failure
 * counted in R->nerr. */
void refs_sink_meta(struct refs *R, const char *prefix, const char *name, struct jb *val);
/* The progress line on a terminal (done: erased). */
void refs_progress(struct refs *R, const char *path, int done);
/* One stderr line naming FILE, through the sink. */
void refs_note(struct refs *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An object's .zattrs being built (refs_attrs.c). */
struct refs_attrs {
	struct refs *R;
	const char *path;
	struct jb b;
	int n;
	int dimlist;              /* a DIMENSION_LIST attribute was met */
	int is_scale;             /* CLASS is "DIMENSION_SCALE" */
	char *names[64];          /* the _ARRAY_DIMENSIONS written, or none */
	char *units, *calendar;   /* CF's attributes, when they are one string */
	int has_fill;             /* a _FillValue attribute (netCDF's) */
	int nc_dim_only;          /* NAME says: a netCDF dimension, not a variable */
	int dataset;              /* a variable's: netCDF-C's bookkeeping hidden */
};

/* prefix: the array's ("g/d/", its phony dimension names), or NULL for a
 * group; rank >= 0 for a dataset. */
void refs_attrs_build(struct refs *R, struct refs_attrs *c, const char *prefix, const char *path, uint64_t addr,
			int rank, uint64_t group);
void refs_attrs_put(struct refs *R, struct refs_attrs *c, const char *prefix);
void refs_attrs_free(struct refs_attrs *c);

/* (refs_dims.c) The phony name of dimension i of the dataset at addr
 * (NULL: it has dimension scales, or is unknown; one set of names per
 * object, whatever link reached it), from the plan of the whole file
 * (R->dims, from its root whatever PATH is) made at the first question,
 * of R->plan_f only (not of files external links lead to). */
const char *refs_dims_name(struct refs *R, uint64_t addr, unsigned rank, unsigned i);
/* Dimension i's extent of the dataset at addr as netCDF-C reads it:
 * extent, or the longer length of the unlimited dimension it is on (ask
 * only for an unlimited axis: the question makes the plan). */
uint64_t refs_dims_extent(struct refs *R, uint64_t addr, unsigned rank, unsigned i, uint64_t extent);
void refs_dims_free(struct refs_dims *P);

/* A dataset as a Zarr array, or skipped with a line (refs_dataset.c). */
void refs_put_dataset(struct refs *R, const char *prefix, const char *path, uint64_t addr);

#endif
