/* vds.h - virtual datasets: the mapping list stored in the global heap
 * (spec III.F "Global Heap Block for Virtual Dataset") and how a read of
 * the virtual dataset becomes reads of its source datasets.
 *
 * Like libhdf5 with its default view (H5D_VDS_LAST_AVAILABLE, printf gap
 * 0): unlimited mappings take the extent their source has now, printf-named
 * sources ("%b") are found from block 0 up to the first one missing, and
 * elements no source provides read as the fill value.
 *
 * This file does no I/O of its own: sources are opened and read through the
 * callbacks of h5_vds_source_ops (dataset.c supplies them).
 */
#ifndef H5_VDS_H
#define H5_VDS_H

#include "sel.h"
#include "base.h"
#include "dataset.h"

/* Hostile-file limits: mappings in one dataset, printf sources per mapping. */
#define H5_VDS_MAX_MAPPINGS ((size_t)1 << 16)
#define H5_VDS_MAX_PRINTF ((uint64_t)1 << 16)

typedef struct h5_vds_map {
	char *file;             /* source file name as stored ("." = the same file) */
	char *dset;             /* source dataset path */
	bool printf_names;      /* file or dset holds "%b": one source per block */
	h5_sel src, virt;
} h5_vds_map;

typedef struct h5_vds {
	size_t n;
	h5_vds_map *map;
} h5_vds;

/* Decode the heap object of a virtual layout (version 0, checksummed). */
int h5_vds_decode(h5_vds **out, const uint8_t *buf, size_t len, const h5_fmt *fmt);
void h5_vds_free(h5_vds *v);
/* A source name with "%b" replaced by block and "%%" by "%". */
int h5_vds_source_name(char **out, const char *pattern, uint64_t block);

/* How the dataset layer opens and reads source datasets. open returns 0 and
 * a handle, or 1 when the source file or dataset does not exist (its
 * elements read as fill), or a negative h5_err. */
typedef struct h5_vds_source_ops {
	int (*open)(void **handle, unsigned *rank, uint64_t *dims, void *ctx, const char *file,
		    const char *dset);
	int (*read)(void *handle, void *buf, uint64_t off, size_t len);
	void (*close)(void *handle);
} h5_vds_source_ops;

/* One source of a resolved mapping (a printf mapping has one per block). */
typedef struct h5_vds_src {
	h5_sel virt;            /* bound to the virtual extent */
	h5_sel src;             /* bound to the source extent */
	unsigned src_rank;
	uint64_t src_dims[H5_MAX_RANK];
	void *handle;           /* NULL: missing, reads as fill */
	uint64_t lo[H5_MAX_RANK], hi[H5_MAX_RANK]; /* virtual bounding box */
} h5_vds_src;

/* The mappings resolved against the sources as they are now. */
typedef struct h5_vds_view {
	unsigned rank;
	uint64_t dims[H5_MAX_RANK]; /* the virtual dataset's current extent */
	size_t nsrc;
	h5_vds_src *src;
	const h5_vds_source_ops *ops;
} h5_vds_view;

/* Open every source, size unlimited mappings, and compute the extent from
 * the stored dims (libhdf5's H5D__virtual_set_extent_unlim). */
int h5_vds_resolve(h5_vds_view **out, const h5_vds *v, unsigned rank, const uint64_t *dims,
		   const uint64_t *maxdims, const h5_vds_source_ops *ops, void *ctx);
void h5_vds_view_free(h5_vds_view *w);
/* Each piece the sources provide of the elements [e0, e0+ne): n bytes at
 * byte src_off of the source dataset (handle) go to byte dst_off of the
 * window, in mapping order (a later piece may cover an earlier one). */
typedef int (*h5_vds_piece_fn)(void *ud, void *handle, uint64_t dst_off, uint64_t src_off, size_t n);
int h5_vds_pieces(h5_vds_view *w, uint64_t e0, uint64_t ne, size_t esize, h5_vds_piece_fn fn, void *ud);
/* Read len bytes at byte offset off of the virtual dataset (elements of
 * esize bytes; fill: esize bytes, or NULL for zeros). */
int h5_vds_read(h5_vds_view *w, void *buf, uint64_t off, size_t len, size_t esize, const uint8_t *fill);

#endif
