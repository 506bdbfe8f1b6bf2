/* refs_emit.h - the kerchunk version 1 document on stdout (refs_emit.c):
 * {"version": 1, "refs": {KEY: VALUE, ...}}, one entry a line, written as
 * it is made (nothing holds the document). Used by one file's references
 * (refs.c) and by the combined references of several (refs_concat.c). */
#ifndef H5FS_REFS_EMIT_H
#define H5FS_REFS_EMIT_H

#include "json.h"

#include <stddef.h>
#include <stdint.h>

#define RD_KEY_MAX (64 * 21 + 1)  /* a chunk key: up to 64 indexes of 20 digits and a dot */

typedef struct refs_doc {
	int first;                /* no entry written yet */
	char *url;                /* the last URL written, and its JSON string: */
	char *url_json;           /* consecutive references of one file share it */
	size_t url_json_len;
} refs_doc;

void rd_begin(refs_doc *w);
/* The closing braces, stdout flushed: 0, or -1 when writing failed. */
int rd_end(refs_doc *w);
/* An entry whose value is JSON text (.zgroup, .zattrs, .zarray), written
 * as a JSON string: 0, or -1 out of memory (nothing written). */
int rd_meta(refs_doc *w, const char *prefix, const char *name, const char *json);
/* A chunk in a file: [url, off, size]. */
int rd_ref(refs_doc *w, const char *prefix, const char *key, const char *url, uint64_t off, uint64_t size);
/* A chunk given by its bytes: "base64:...". */
int rd_inline(refs_doc *w, const char *prefix, const char *key, const uint8_t *p, size_t n);
/* The Zarr chunk key of chunk indexes idx[0..n) ("0" for none). */
void rd_chunk_key(char *key, size_t cap, const uint64_t *idx, unsigned n);
/* .zarray's JSON into b (Zarr v2, C order): dtype and filters are JSON
 * texts (zarr_meta.c's), the compressor null (HDF5's filters are all
 * Zarr filters), fill the fill_value's JSON. */
void rd_zarray(struct jb *b, const char *dtype, const char *filters, unsigned rank, const uint64_t *shape,
	       const uint64_t *chunks, const char *fill);

#endif
