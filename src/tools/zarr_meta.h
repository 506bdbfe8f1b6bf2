/* zarr_meta.h - the Zarr v2 vocabulary of h5fs-ls --refs (zarr_meta.c):
 * dtypes, fill values and numcodecs (0.11) filter configs of a dataset. */
#ifndef H5FS_ZARR_META_H
#define H5FS_ZARR_META_H

#include "h5core.h"
#include "json.h"

/* The Zarr v2 dtype of t into b (a typestr, or a list for compounds);
 * NULL, or the reason there is none. top: t is the dataset's type (an
 * array type there becomes trailing dimensions: its base is written). */
const char *zarr_dtype(struct jb *b, const h5_type_view *t, int top);
/* Whether HDF5 converts values of t when reading them (fixed strings
 * not null-padded, also inside compounds and arrays): such a dataset's
 * chunks are written inline, each element through zarr_convert. */
int zarr_converted(const h5_type_view *t);
/* One element at p (t->size bytes) made the bytes h5py reads. */
void zarr_convert(const h5_type_view *t, uint8_t *p);
/* The fill value as zarr writes it: numbers ("NaN", "Infinity" as
 * strings), booleans, base64 of the bytes for strings and compounds. */
void zarr_fill(struct jb *b, const h5_type_view *t, const uint8_t *fill);
/* The pipeline as numcodecs configs in HDF5's order; NULL, or the reason
 * a filter has no numcodecs 0.11 codec. */
const char *zarr_filters(struct jb *b, const h5_dataset_info *di, unsigned esize);

#endif
