/* refs.h - h5fs-ls --refs: kerchunk (version 1) chunk references of FILE
 * or a subtree, written to stdout as they are walked (refs.c). */
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
} refs_opts;

/* Write the references of the object at addr (path as given) of f; returns
 * the exit status (tool_exit). */
int refs_write(h5_file *f, const char *path, uint64_t addr, const refs_opts *o);

#endif
