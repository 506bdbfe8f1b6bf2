/* refs.h - h5fs-ls --refs: kerchunk (version 1) chunk references of FILE
 * or a subtree. refs.c walks it and hands what it finds to a sink: the
 * sink of refs_write prints the document as it is walked (refs_emit.c);
 * the combined references of several files (--concat, refs_concat.h)
 * keep each file's in a summary (refs_sum.c) instead. */
#ifndef H5FS_REFS_H
#define H5FS_REFS_H

#include "h5core.h"

typedef struct refs_opts {
	const char *url;          /* written into every reference */
	const char *file;         /* FILE as given: the messages name it */
	uint64_t inline_max;      /* chunks smaller than this are inlined (base64) */
	uint64_t split_bytes;     /* contiguous datasets cut in pieces of at most this (0: one) */
	int strict;               /* exit 1 when a dataset was skipped */
	int follow_external;      /* follow external links (FILE's directory tree) */
	int no_progress;          /* no progress line of chunks (the caller has its own) */
	int fill_exact;           /* unwritten chunks inline up to 64 MiB, not only up to
				   * the written chunks' share (refs_dataset.c) */
} refs_opts;

/* A dataset with a Zarr form, as the sink is told of it (before its
 * .zattrs and its chunks). */
typedef struct refs_array {
	const char *path;          /* HDF5 path (messages) */
	h5_dataset *d;             /* open: the sink may read its values */
	const h5_type_view *type;  /* the element type Zarr sees (an array type's base) */
	unsigned rank;             /* Zarr's: the dataspace's, then an array type's */
	unsigned h5rank;           /* the dataspace's */
	const uint64_t *shape, *chunks;
	const char *dtype;         /* .zarray's "dtype" (JSON) */
	const char *filters;       /* .zarray's "filters" (JSON: null or a list) */
	const char *fill;          /* .zarray's "fill_value" (JSON) */
	char *const *dims;         /* _ARRAY_DIMENSIONS (h5rank names), or NULL */
	int values;                /* chunks are the values as h5py reads them, inlined */
	const char *units;         /* its "units" and "calendar" attributes (one string), or NULL: */
	const char *calendar;      /* --concat re-encodes CF time coordinates (cf_time.h) */
} refs_array;

/* Where the walk goes. Each call returns 0, or -1 (out of memory, or the
 * sink refuses: counted as an error, and a chunk walk stops). */
typedef struct refs_sink {
	void *u;
	/* an entry whose value is JSON text: .zgroup, .zattrs */
	int (*meta)(void *u, const char *prefix, const char *name, const char *json);
	int (*array)(void *u, const char *prefix, const refs_array *a);
	/* a chunk of the last array at Zarr chunk indexes idx[0..n): in a
	 * file (data NULL: size bytes at off of url) or given by its bytes */
	int (*chunk)(void *u, const char *prefix, const uint64_t *idx, unsigned n, const char *url, uint64_t off,
		     uint64_t size, const uint8_t *data);
	/* one line for stderr (no newline): what was skipped, and why */
	void (*note)(void *u, const char *line);
} refs_sink;

/* Walk the object at addr (path as given) of f into s: 0, with the
 * datasets skipped (no Zarr form) and the errors met counted. */
int refs_walk(h5_file *f, const char *path, uint64_t addr, const refs_opts *o, const refs_sink *s,
	      unsigned *nskipped, unsigned *nerr);

/* Write the references of the object at addr (path as given) of f; returns
 * the exit status (tool_exit). */
int refs_write(h5_file *f, const char *path, uint64_t addr, const refs_opts *o);

#endif
