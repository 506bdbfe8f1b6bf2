/*
 * dspace.h - the dataspace message (dspace.c; IV.A.2.b).
 */
#ifndef H5_FORMAT_DSPACE_H
#define H5_FORMAT_DSPACE_H

#include "base.h"
#include "ohdr.h"

enum { H5_SPACE_SCALAR = 0, H5_SPACE_SIMPLE = 1, H5_SPACE_NULL = 2 };

typedef struct h5_dspace {
	int type;                       /* H5_SPACE_* */
	unsigned rank;
	uint64_t dims[H5_MAX_RANK];
	uint64_t maxdims[H5_MAX_RANK];  /* H5_UNLIMITED for unlimited; = dims if absent */
	bool has_max;
	uint8_t version;
} h5_dspace;

int h5_dspace_decode(h5_dspace *out, const h5_fmt *fmt, const uint8_t *buf, size_t len);
/* Number of elements (scalar 1, null 0); H5_ERR_LIMIT on overflow. */
int h5_dspace_nelmts(const h5_dspace *s, uint64_t *out);
/* Patch the size of dimension 0 in the dataspace message ds of a header
 * being edited (appends; dspace.c). */
int h5_dspace_patch_dim0(h5_ohdr_edit *e, const h5_msg *ds, const h5_fmt *fmt, uint64_t n);

/* (dspace_enc.c) A scalar (rank 0) or simple dataspace message without
 * maximum dimensions, version 1 or 2, into out (cap bytes). */
int h5_dspace_encode(uint8_t *out, size_t *len, size_t cap, const h5_fmt *fmt, unsigned version, unsigned rank,
		     const uint64_t *dims);

#endif
