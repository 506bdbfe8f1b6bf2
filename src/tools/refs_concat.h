/* refs_concat.h - h5fs-ls --refs --concat=DIM INPUT...: one kerchunk
 * document for several HDF5 files as one dataset along DIM
 * (refs_concat.c gathers the files' summaries, refs_combine.c combines
 * them; doc/h5fs-ls.1). */
#ifndef H5FS_REFS_CONCAT_H
#define H5FS_REFS_CONCAT_H

#include "refs.h"

typedef struct concat_opts {
	const char *dim;          /* a dimension name, or NULL: axis */
	int axis;                 /* --concat=N */
	refs_opts ro;             /* --inline, --split, --strict, --follow-external */
	const h5_open_opts *oo;   /* how files and members are opened */
	const char *suffixes;     /* an S3 prefix's members (NULL: the default) */
	const char *index_path;   /* a collection's index (NULL: the default one) */
	int noindex;
} concat_opts;

/* inputs: several FILEs (or URLs), in the order of the dataset, or one
 * DIR or s3://BUCKET/PREFIX/ (members ordered by the first value of
 * DIM's coordinate variable, else by path). Returns the exit status. */
int refs_concat(char *const *inputs, int n, const concat_opts *o);

#endif
