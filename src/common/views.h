/*
 * views.h - a dataset shown as a file of a format other programs open
 * (doc/h5fs.1, VIEWS): NAME.npy, NAME.csv, NAME.tiff, NAME.png and the
 * frames of NAME.frames/. No FUSE here: the encoders work on the engine's
 * public API (h5core.h) and byte buffers, and a view is an h5_view_ops
 * (size, read, map) whose state the engine keeps with the dataset handle
 * (h5_dataset_set_view_state), so the daemon reads a view exactly as it
 * reads a dataset (splice, pinned chunks, live checks).
 *
 * views.c: kinds, names, the NPY header and the "prefix + the dataset's own
 * bytes" views (NPY, TIFF, a frame); views_tiff.c: the TIFF layout;
 * views_csv.c: CSV text; views_png.c: PNG with stored deflate blocks.
 */
#ifndef VIEWS_H
#define VIEWS_H

#include "h5core.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vw_kind {
	VW_NONE = 0,
	VW_NPY = 1,
	VW_CSV = 2,
	VW_TIFF = 3,
	VW_PNG = 4,
	VW_FRAMES = 5,          /* NAME.frames/: a directory */
	VW_FRAME = 6,           /* NAME.frames/000000.tiff */
};
#define VW_BIT(k) (1u << (k))
/* the kinds -o views lists (a frame is listed in its directory) */
#define VW_LISTABLE (VW_BIT(VW_NPY) | VW_BIT(VW_CSV) | VW_BIT(VW_TIFF) | VW_BIT(VW_PNG) | VW_BIT(VW_FRAMES))

/* The kind a name of a group asks for ("x.npy": VW_NPY, *base_len 1), or
 * VW_NONE. VW_FRAME names are asked of vw_frame_index. */
enum vw_kind vw_kind_of_name(const char *name, size_t *base_len);
/* ".npy", ".csv", ".tiff", ".png", ".frames"; "" for the others */
const char *vw_suffix(enum vw_kind k);
/* the value of user.h5.view: "npy", "csv", "tiff", "png", "frames", "frame" */
const char *vw_name(enum vw_kind k);
/* -o views=LIST ("npy,tiff,..."; NULL or "" or "all": every kind): the
 * bits of the kinds listed, or -1 for an unknown name. */
int vw_parse_list(unsigned *mask, const char *list);

/* The kinds dataset d can be shown as (VW_BIT()s; VW_FRAME never), from
 * its type and shape alone (nothing read). */
unsigned vw_kinds(h5_dataset *d);
/* Make d (a handle of its own, not yet shared) show view k (frame: the
 * index of VW_FRAME): 0 and *ops, with the view's state kept with d and
 * its size ops->size(d); H5_ERR_NOTFOUND when d cannot have that view; or
 * another error (a CSV's first pass failed: it reads every element). */
int vw_open(const h5_view_ops **ops, h5_dataset *d, enum vw_kind k, uint64_t frame);
/* The frames of a stack: N of an (N, H, W) dataset NAME.tiff accepts. */
int vw_frame_count(uint64_t *n, h5_dataset *d);
/* "000012.tiff": six digits, more when n needs them. buf: at least 32. */
void vw_frame_name(char *buf, size_t size, uint64_t i, uint64_t n);
/* The frame a name of NAME.frames/ is (exactly as vw_frame_name makes it,
 * i < n), or -1. */
int vw_frame_index(uint64_t *i, const char *name, uint64_t n);

/* ---- the encoders, on plain data (unit-tested) ---------------------------- */

/* The NPY header (NumPy's format.rst): magic, version 1.0 (header up to
 * 65535 bytes), 2.0 (longer) or 3.0 (UTF-8 field names), the dict
 * {'descr': ..., 'fortran_order': False, 'shape': (...), } padded with
 * spaces and a newline so the data start at a multiple of 64. descr from
 * t (a compound with its padding as ('', '|Vn') fields, nested members,
 * array members (name, base, (dims))); an array type's dimensions are
 * appended to the shape, as h5py reads it. H5_ERR_NOTFOUND: a type NumPy
 * cannot hold from bytes (variable-length, overlapping members). */
int vw_npy_header(char **out, size_t *len, const h5_type_view *t, unsigned rank, const uint64_t *dims);

/* A baseline TIFF of n pages of h x w samples of one type (classic, or
 * BigTIFF when offsets need 64 bits): the header and every IFD (with its
 * strip arrays and resolutions) first, then the pages' samples as stored,
 * page after page, in C order - so the samples are the dataset's own bytes
 * and the prefix is computed from these numbers alone. */
struct vw_tiff {
	uint64_t n, h, w;
	unsigned bytes;         /* per sample: 1, 2, 4, 8 */
	unsigned format;        /* SampleFormat: 1 unsigned, 2 signed, 3 float */
	bool big_endian;        /* MM (the dataset's byte order) */
	bool big;               /* BigTIFF */
	uint64_t rps;           /* rows per strip */
	uint64_t nstrips;       /* per page */
	uint64_t ifd_size;      /* bytes of one IFD with its arrays */
	uint64_t prefix;        /* header and IFDs: where the samples start */
	uint64_t size;          /* the whole file */
};
/* force_big: BigTIFF even when classic would do (tests). */
int vw_tiff_layout(struct vw_tiff *t, uint64_t n, uint64_t h, uint64_t w, unsigned bytes, unsigned format,
		   bool big_endian, bool force_big);
/* bytes [off, off+len) of the prefix (off + len <= t->prefix) */
int vw_tiff_prefix(const struct vw_tiff *t, uint8_t *buf, uint64_t off, size_t len);

/* Appends n bytes and keeps a NUL after them (*buf realloc'd). */
int vw_buf_put(char **buf, size_t *len, size_t *cap, const void *s, size_t n);
/* CSV cells (RFC 4180): a cell with a comma, quote, CR or LF is quoted,
 * quotes doubled. Appends to *buf (realloc'd; *len, *cap). */
int vw_csv_cell(char **buf, size_t *len, size_t *cap, const char *cell, size_t n);

/* views_csv.c, views_png.c: the views (views.c calls them) */
int vw_csv_open(const h5_view_ops **ops, h5_dataset *d, const h5_type_view *t, unsigned rank,
		const uint64_t *dims);
bool vw_csv_can(const h5_type_view *t, unsigned rank);

/* views_csv_in.c: rows in as the CSV view's text (NAME.csv written).
 * new: d's rows taken from text (d borrowed, open while c is used):
 * H5_ERR_NOTFOUND when d has no CSV view, H5_ERR_UNSUPPORTED when a
 * column is of a type no text sets (the message says which). parse: the
 * records complete in text[0, len) (final: the text ends there, so a
 * last record without its line end is one too) parsed into *rows
 * (malloc'd, *nbytes: whole rows of d's bytes), *used the text they took
 * (the rest: a record not ended yet); a compound's header line, as the
 * view prints it, is skipped when it is the first record c is given.
 * H5_ERR_INVAL for a record that does not parse (its line and cell in
 * the message): nothing given, c as before. */
struct vw_csv_in;
int vw_csv_in_new(struct vw_csv_in **out, h5_dataset *d);
void vw_csv_in_free(struct vw_csv_in *c);
size_t vw_csv_in_row_bytes(const struct vw_csv_in *c);
int vw_csv_in_parse(struct vw_csv_in *c, uint8_t **rows, size_t *nbytes, size_t *used, const char *text,
		    size_t len, bool final);
int vw_png_open(const h5_view_ops **ops, h5_dataset *d, const h5_type_view *t, unsigned rank,
		const uint64_t *dims);
bool vw_png_can(const h5_type_view *t, unsigned rank, const uint64_t *dims);

/* A PNG image of h rows of w pixels of c channels (1 gray, 3 RGB, 4 RGBA)
 * of 8 or 16 bits, its zlib stream of stored deflate blocks (no
 * compression: every offset and the size follow from the numbers), one
 * block per IDAT chunk, the Adler-32 in an IDAT chunk of its own. */
struct vw_png {
	uint64_t h, w;
	unsigned c, bits;
	uint64_t row;           /* bytes of a filtered row: 1 + w * c * bits / 8 */
	uint64_t stream;        /* the filtered rows: h * row */
	uint64_t nblocks;
	uint64_t size;
};
#define VW_PNG_BLOCK 65535u
int vw_png_layout(struct vw_png *p, uint64_t h, uint64_t w, unsigned c, unsigned bits);
/* Where the IDAT chunk of block k starts, and its length. */
uint64_t vw_png_block_off(const struct vw_png *p, uint64_t k);
/* The whole IDAT chunk of block k (the block's stream bytes at data,
 * len of them) into out (vw_png_block_off(k + 1) - vw_png_block_off(k)
 * bytes); its Adler-32 in *adler. */
void vw_png_block(const struct vw_png *p, uint8_t *out, uint64_t k, const uint8_t *data, size_t len,
		  uint32_t *adler);
/* Bytes [off, off+len) of the parts around the blocks: the signature and
 * IHDR (off < start of block 0), or the Adler-32 IDAT and IEND (the last
 * 28 bytes) given the stream's adler. */
void vw_png_head(const struct vw_png *p, uint8_t *buf, uint64_t off, size_t len);
void vw_png_tail(const struct vw_png *p, uint8_t *buf, uint64_t off, size_t len, uint32_t adler);

#endif
