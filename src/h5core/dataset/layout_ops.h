/* layout_ops.h - storage layouts as a table of operations, like libhdf5's
 * H5D_layout_ops_t (H5Dpkg.h): one file per layout (layout_<name>.c) with
 * one h5_layout_ops, the table in layout_table.c indexed by the layout
 * class of the layout message (spec IV.A.2.i). External storage (a
 * contiguous layout with an external file list, IV.A.2.h) is an entry of
 * its own. dataset.c dispatches through the table and never switches on
 * the class.
 *
 * A layout maps a byte window of the dataset onto typed pieces (the read
 * plan's builder, plan.c): pieces of a file (EXTENT), pinned engine memory
 * (PINNED: decoded chunks, held in the cache) and fill value (FILL). A
 * layout whose bytes are neither (compact, external) asks for the window
 * to be read instead. plan.c turns the pieces into what a reply carries.
 */
#ifndef H5_LAYOUT_OPS_H
#define H5_LAYOUT_OPS_H

#include "base.h"
#include "file.h"
#include "dataset.h"

/* Most pieces one window is cut into before it is read instead; the
 * reply's own limit (H5_PLAN_MAX) as well. */
#define H5_PIECE_MAX H5_PLAN_MAX

enum { H5_PIECE_EXTENT, H5_PIECE_PINNED, H5_PIECE_FILL };

typedef struct h5_piece {
	uint8_t kind;           /* H5_PIECE_* */
	uint64_t ds;            /* offset in the dataset */
	uint64_t len;
	h5_file *f;             /* EXTENT: the file, at address addr (without */
	uint64_t addr;          /* its user block) */
	const uint8_t *mem;     /* PINNED: the bytes (held in pin) */
} h5_piece;

/* The window [off, off+len) of d being cut into pieces (plan.c). */
typedef struct h5_plan_build {
	h5_dataset *d;
	uint64_t off;
	size_t len;
	unsigned flags;         /* H5_MAP_* */
	h5_piece pc[H5_PIECE_MAX];
	size_t n;
	h5_pin *pin;            /* holds of PINNED pieces (decoded chunks) */
	bool read;              /* not cut: read the window (too many pieces,
				 * or bytes that are neither stored plainly,
				 * nor decoded, nor fill) */
	bool overlap_reads;     /* pieces that leave a gap or overlap: read the
				 * window (virtual: fill between mappings, a
				 * later one over an earlier one); else they are
				 * an error (a chunk map's) */
} h5_plan_build;

/* Append a piece; false (and b->read set) when there is no room. */
bool h5_plan_add(h5_plan_build *b, const h5_piece *p);
/* Cut [off, off+len) of d (bounds checked by the caller, len > 0) into
 * b->pc[0..n), in dataset order, neighbours merged, tiling the window
 * exactly - or b->read. pin: where decoded chunks are held (NULL: pieces
 * of files and fill only, a decoded chunk sets b->read). plan.c */
int h5_plan_cut(h5_plan_build *b, h5_dataset *d, uint64_t off, size_t len, h5_pin *pin, unsigned flags);

typedef struct h5_layout_ops {
	const char *name;
	/* Check that the storage can hold d->nbytes, open what reads need
	 * (the chunk index, the virtual mappings). */
	int (*init)(h5_dataset *d);
	void (*close)(h5_dataset *d);       /* NULL: nothing */
	/* Bytes of storage allocated in the file (st_blocks). */
	uint64_t (*allocated)(const h5_dataset *d);
	/* The stored bytes [off, off+len), bounds checked by the caller. */
	int (*read)(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len);
	/* Cut b's window (bounds checked, len > 0) into pieces, or set
	 * b->read. Errors are real ones: the window cannot be read. */
	int (*map)(h5_plan_build *b);
} h5_layout_ops;

extern const h5_layout_ops h5_layout_compact;     /* layout_compact.c */
extern const h5_layout_ops h5_layout_contiguous;  /* layout_contiguous.c */
extern const h5_layout_ops h5_layout_external;    /* layout_external.c */
extern const h5_layout_ops h5_layout_chunked;     /* layout_chunked.c */
extern const h5_layout_ops h5_layout_virtual;     /* layout_virtual.c */

/* The read plan of the stored bytes (the raw view's map, plan.c). */
int h5_plan_map_raw(h5_read_plan *out, h5_dataset *d, uint64_t off, size_t len, unsigned flags);
/* An empty plan; a buffer plan of len bytes (NULL: out of memory). */
void h5_plan_init(h5_read_plan *out, h5_dataset *d);
uint8_t *h5_plan_buffer(h5_read_plan *out, size_t len);

/* The virtual layout's map op (dataset_vds.c). */
int h5_dataset_vds_cut(h5_plan_build *b);

/* The entry for d's layout message and external file list, or NULL for
 * an unknown class (layout_table.c). */
const h5_layout_ops *h5_layout_ops_of(const h5_dataset *d);

#endif
