/* refs_sum.h - one file's references kept for h5fs-ls --refs --concat
 * (refs_sum.c): what refs.c's walk of the file gives, as a byte string
 * ("summary") that the combination reads twice (checked, then written),
 * that waits in a spill file meanwhile (memory stays flat in the number
 * of files) and that the collection index keeps per member (cls.h, form
 * CLS_FORM_CONCAT), so an unchanged member is not opened again.
 *
 * A summary is a header, then records in the walk's order: notes (the
 * walk's stderr lines), metadata entries (.zgroup, .zattrs), arrays (the
 * .zarray's parts, where DIM is among its dimensions, its values when it
 * is a small 1-D variable along DIM or a hash of them when DIM is not
 * among its dimensions, its units and calendar: CF time is re-encoded)
 * and the chunks of the last array. Little-endian
 * integers, strings with their length and a NUL. rs_next decodes from
 * (buf, len) only, bounds and counts checked: a damaged summary is an
 * error, never a wrong document. */
#ifndef H5FS_REFS_SUM_H
#define H5FS_REFS_SUM_H

#include "refs.h"

#include <stddef.h>
#include <stdint.h>

#define RS_MAGIC "h5fs-refs-summary 2"   /* 2: arrays with their units and calendar */

/* What a summary depends on besides the file (the index's key holds it). */
typedef struct rs_opts {
	const char *dim;          /* the dimension's name, or NULL: axis */
	int axis;                 /* --concat=N */
	uint64_t inline_max;      /* --inline */
	uint64_t values_max;      /* bytes of a 1-D variable along DIM kept by value, at most */
} rs_opts;

/* array flags */
#define RS_AXIS 1u            /* DIM is dimension `axis` of it */
#define RS_COORD 2u           /* DIM's coordinate variable (1-D, named DIM, along DIM) */
#define RS_VALUES 4u          /* its values are in the record */
#define RS_HASH 8u            /* DIM is not among its dimensions: the hash of its values */
#define RS_TWICE 16u          /* DIM names two of its dimensions */

enum rs_kind { RS_NOTE = 'N', RS_META = 'M', RS_ARRAY = 'A', RS_CHUNK = 'C' };

typedef struct rs_head {
	const char *dim;          /* as rs_opts; "" with an axis */
	int axis;
	uint64_t inline_max, values_max;
	uint32_t nskipped, nerr;  /* datasets without a Zarr form; errors met */
	int has_key;              /* the first value of DIM's coordinate variable (CF time: */
	double key;               /* as seconds since 1970): the order of a collection's members */
} rs_head;

typedef struct rs_rec {
	int kind;                 /* enum rs_kind */
	const char *text;         /* NOTE */
	const char *prefix;       /* META, ARRAY, CHUNK: "grp/var/" */
	const char *name;         /* META: ".zattrs", ...; ARRAY: the HDF5 path */
	const char *json;         /* META */
	/* ARRAY */
	unsigned rank, h5rank, esize, flags;
	int axis;
	uint64_t shape[64], chunks[64];
	const char *dtype, *filters, *fill;
	const char *units, *calendar;   /* CF's attributes ("": none) */
	uint64_t hash;
	const uint8_t *values;    /* RS_VALUES: shape[0] * esize bytes */
	uint64_t nvalues;
	/* CHUNK: indexes (the last array's rank), where, or its bytes */
	uint64_t idx[64];
	const char *url;          /* NULL: the member's own URL */
	uint64_t off, size;
	const uint8_t *data;      /* inline (size bytes), or NULL */
} rs_rec;

typedef struct rs_reader {
	const uint8_t *p, *end;
	unsigned rank;            /* of the last array: its chunks' index count */
} rs_reader;

/* Walk f's root into a new summary (*out malloc'd, *len bytes): 0, or a
 * negative h5_err (out of memory). The walk's own errors are counted in
 * the header (nerr), its lines kept as notes. */
int rs_scan(uint8_t **out, size_t *len, h5_file *f, const refs_opts *ro, const rs_opts *o);

/* The header of (buf, len); *rd reads the records after it. 0, or
 * H5_ERR_FORMAT (not a summary, or cut short). */
int rs_open(rs_head *h, rs_reader *rd, const uint8_t *buf, size_t len);
/* Whether a summary was made with o (an index's may be another run's). */
int rs_matches(const rs_head *h, const rs_opts *o);
/* The next record: 1, 0 at the end, or H5_ERR_FORMAT. Pointers point
 * into the summary. */
int rs_next(rs_rec *r, rs_reader *rd);

#endif
