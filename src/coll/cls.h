/*
 * cls.h - h5fs-ls's listings in a collection's index (issue 35 item 3;
 * cls.c): `h5fs-ls -R DIR|s3://...` prints each member's tree as it
 * printed it the last time the member had the same key (size, mtime_ns,
 * ETag: the index's freshness rule, cindex.h), so an unchanged collection
 * is listed without opening a member. One row per collection, member and
 * form (text, or JSON objects); a CRC of the row is checked when it is
 * read, so a damaged row is a miss (listed anew), never wrong output.
 */
#ifndef H5FS_CLS_H
#define H5FS_CLS_H

#include "cindex.h"

#include <stddef.h>

/* The forms of a member's row: its listing as text (0) or JSON objects
 * (1), or h5fs-ls --refs --concat's summary of its references (2:
 * src/tools/refs_sum.h, opaque here; the summary's header says with
 * which DIM it was made, and the tool takes another as a miss). */
#define CLS_FORM_TEXT 0
#define CLS_FORM_JSON 1
#define CLS_FORM_CONCAT 2

/* The listing of k's member in form (0 text, 1 JSON): 0 and *body
 * (malloc'd, *len bytes: its entries as printed, each followed by a
 * newline) and *nerr (how many of them were errors: the member cannot
 * be opened, an object cannot be read) when k's key matches the row's;
 * 1 when there is none, it is stale or damaged; or a negative h5_err (the
 * caller lists the member as on a miss). */
int cls_get(char **body, size_t *len, unsigned *nerr, cindex *ix, const cindex_key *k, int form);
/* Record body (nerr errors among its entries) as k's member's listing
 * in form, replacing the row. */
int cls_put(cindex *ix, const cindex_key *k, int form, const char *body, size_t len, unsigned nerr);

#endif
