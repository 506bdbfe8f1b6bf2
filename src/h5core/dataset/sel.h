/* sel.h - dataspace selections as stored in files (spec III.F "Dataspace
 * Selection"), used by virtual dataset mappings (vds.c).
 *
 * A selection is read as libhdf5 iterates it: element k of a mapping's
 * virtual selection holds element k of its source selection. Hyperslabs and
 * "all" are iterated in row-major order of their coordinates; points in the
 * order they are listed. Regular hyperslabs (and "all") are handled by
 * arithmetic per dimension, irregular hyperslabs and point lists by a table
 * of runs along the last dimension.
 */
#ifndef H5_SEL_H
#define H5_SEL_H

#include "base.h"
#include "rd.h"

enum { H5_SEL_NONE = 0, H5_SEL_POINTS = 1, H5_SEL_HYPER = 2, H5_SEL_ALL = 3 };

/* Runs an irregular selection may expand to: a hostile mapping that would
 * expand to more is refused, not allocated. */
#define H5_SEL_MAX_RUNS ((size_t)1 << 22)

/* One dimension of a regular selection. count or block may be H5_UNLIMITED
 * until h5_sel_clip() bounds it; n is the number of coordinates selected in
 * this dimension (count * block once bounded). */
typedef struct h5_sel_dim {
	uint64_t start, stride, count, block;
	uint64_t n;
	uint64_t stride_stored; /* as in the file (stride is normalised when count is 1) */
} h5_sel_dim;

typedef struct h5_sel {
	uint8_t type;           /* H5_SEL_* */
	unsigned rank;          /* 0 for "all"/"none" until h5_sel_set_extent() */
	bool regular;           /* "all" or a regular hyperslab: dim[] is used */
	int unlim_dim;          /* dimension with an unlimited count or block, or -1 */
	h5_sel_dim dim[H5_MAX_RANK];
	uint64_t ext[H5_MAX_RANK];  /* the extent bound by h5_sel_set_extent() */
	/* irregular hyperslab / points: runs along the last dimension */
	size_t nruns;
	uint64_t *run_coord;    /* nruns * rank: first element of each run */
	uint64_t *run_len;
	uint64_t *run_ord;      /* ordinal of each run's first element */
	size_t *by_pos;         /* run indexes in row-major order of their start */
	uint64_t nelem;         /* elements selected (bounded selections) */
} h5_sel;

/* Decode one serialized selection (type, then its info) from r. */
int h5_sel_decode(h5_sel *out, h5_rd *r);
void h5_sel_free(h5_sel *s);
/* Copy (deep) src into out. */
int h5_sel_copy(h5_sel *out, const h5_sel *src);
/* Bind the selection to a dataspace of `rank` dimensions `dims`: "all"
 * takes the extent; every bounded coordinate must lie inside it (a mapping
 * outside its dataset's extent is H5_ERR_FORMAT). The unlimited dimension,
 * if any, is not checked: clip it first. */
int h5_sel_set_extent(h5_sel *s, unsigned rank, const uint64_t *dims);
/* Number of coordinates selected in dimension d below `limit`. */
uint64_t h5_sel_count_below(const h5_sel *s, unsigned d, uint64_t limit);
/* Bound the unlimited dimension to its first n selected coordinates. */
int h5_sel_clip(h5_sel *s, uint64_t n);
/* The extent in the unlimited dimension that holds exactly n selected
 * coordinates (libhdf5's clip extent with trailing space excluded). */
uint64_t h5_sel_clip_extent(const h5_sel *s, uint64_t n);
/* Smallest and largest+1 coordinate selected in dimension d. */
void h5_sel_bounds(uint64_t *lo, uint64_t *hi, const h5_sel *s, unsigned d);

/* Is the element at coord selected? If so *ord is its ordinal and *n the
 * number of elements from it, in row-major order of the extent, that are
 * selected with consecutive ordinals (past the end of a row when the inner
 * dimensions are selected whole); if not, *n is the number of elements
 * until the next selected one along the last dimension (UINT64_MAX: none
 * in the row). */
bool h5_sel_locate(uint64_t *ord, uint64_t *n, const h5_sel *s, const uint64_t *coord);
/* The coordinate of the element with ordinal ord (< nelem), and in *n how
 * many elements from it, consecutive in row-major order of the extent, have
 * consecutive ordinals. */
void h5_sel_coord(uint64_t *coord, uint64_t *n, const h5_sel *s, uint64_t ord);

/* A short text of the selection as stored ("all", "hyperslab(start=[..],
 * stride=[..],count=[..],block=[..])" with U for unlimited, ...). */
int h5_sel_text(char **out, const h5_sel *s);

#endif
