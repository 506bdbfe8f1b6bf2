/*
 * dataset.h - a dataset (dataset.c), its virtual (dataset_vds.c) and fill (fillval.c) parts.
 */
#ifndef H5_DATASET_DATASET_H
#define H5_DATASET_DATASET_H

#include "base.h"
#include "file.h"
#include "ohdr.h"
#include "dspace.h"
#include "dtype.h"
#include "fillval.h"
#include "layout.h"
#include "pline.h"
#include "efl.h"

typedef struct h5_chunk_index h5_chunk_index;

struct h5_dataset {
	h5_file *f;
	uint64_t addr;
	h5_dtype *dtype;
	h5_dspace space;
	h5_layout layout;
	const struct h5_layout_ops *lops; /* the layout's table entry (layout_ops.h) */
	h5_fill fill;
	h5_pline pline;
	h5_efl efl;
	uint64_t nelmts;
	uint64_t nbytes;        /* logical size in bytes */
	bool has_mtime;
	int64_t mtime;
	uint8_t *fill_elem;     /* one element of fill (dtype->size bytes) */
	h5_chunk_index *cidx;   /* chunked only */
	uint64_t chunk_bytes;   /* bytes of one full chunk */
	char **efl_paths;       /* EFL: efl.n external file names (related.c opens them) */
	bool has_vlen;          /* dtype contains variable-length data */
	bool conv;              /* numbers stored at a bit offset or precision: read as
				 * values (view.c h5_view_values, format/dtype_conv.c) */
	struct h5_vtext *vtext; /* has_vlen: the text the dataset reads as (vlen.c) */
	struct h5_vds *vds;     /* virtual: the mappings, and them resolved against */
	struct h5_vds_view *vview; /* the sources (dataset_vds.c) */
	struct vds_srcs *vsrcs; /* the sources' files as dataset_vds.c holds them */
	/* a view's state kept with this handle (h5_dataset_set_view_state,
	 * view.c), freed with it */
	void *vstate;
	void (*vstate_free)(void *);
};

/* dataset_vds.c: virtual datasets (layout class 3) */
int h5_dataset_vds_open(h5_dataset *d);
int h5_dataset_vds_read(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len);
void h5_dataset_vds_close(h5_dataset *d);
size_t h5_dataset_vds_count(const h5_dataset *d);
/* Each source file of d's mappings that exists (printf-named ones left
 * out), with its stat, for h5_dataset_each_file. */
struct stat;
int h5_dataset_vds_each_file(h5_dataset *d, int (*fn)(void *arg, const char *name, const struct stat *st),
			     void *arg);

/* Fill buf with the bytes [off, off+len) of a stream of fill elements
 * (d->fill_elem repeated; the phase is off modulo the element size). fillval.c */
void h5_dataset_fill(const h5_dataset *d, uint8_t *buf, uint64_t off, size_t len);
/* Decode the messages describing a dataset into d->space, dtype, layout,
 * fill, pline (and efl when efl is set); d->f must be set. dataset.c */
int h5_dataset_msgs_decode(h5_dataset *d, const h5_ohdr *oh, bool efl);
/* h5_dataset_open of the header oh the caller holds (at addr). dataset.c */
int h5_dataset_open_oh(h5_dataset **out, h5_file *f, uint64_t addr, const h5_ohdr *oh);
void h5_dataset_msgs_clear(h5_dataset *d);
/* *rb: the bytes of one row along dimension 0 (the element size times
 * dims[1:]), which the writers that change dims[0] count in: 0, or
 * H5_ERR_LIMIT when it overflows. dataset.c */
int h5_dataset_row_bytes(uint64_t *rb, const h5_dataset *d);
/* Read [off, off+len) of the stored bytes (what the layout holds, before
 * any text rendering); the caller checked the bounds. */
int h5_dataset_read_raw(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len);

/* Every block of d's stored data (storage.c): its chunk index's own
 * blocks and each chunk at its stored size (unfiltered chunks of the
 * array indexes record none: a full chunk), or its contiguous storage;
 * nothing for compact, external and virtual data. For a writer about to
 * stop referencing them (write/dset_empty.c, link_write.c). */
int h5_dataset_blocks(h5_dataset *d, h5_block_cb cb, void *ud);

#endif
