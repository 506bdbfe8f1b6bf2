/* refs_combine.h - the combined references of several files' summaries
 * (refs_combine.c): checked in one pass, written in a second, the
 * summaries read back from a spill file in between (refs_concat.c
 * gathers them). */
#ifndef H5FS_REFS_COMBINE_H
#define H5FS_REFS_COMBINE_H

#include "refs_sum.h"

#include <stdio.h>

/* Summaries kept in an unlinked temporary file while the members are
 * gathered (and, for a collection, sorted): memory stays flat in the
 * number of files. */
typedef struct rc_spill {
	FILE *f;
	char *wbuf;               /* f's buffer (RC_SPILL_BUF) */
	uint64_t end;
	/* read back a window at a time: the members are read in about the
	 * order they were written (one pread per window, not per member) */
	uint8_t *buf;
	size_t cap;
	uint64_t win_off;         /* the window: [win_off, win_off + win_len) */
	size_t win_len;
} rc_spill;

#define RC_SPILL_BUF ((size_t)1 << 16)
#define RC_SPILL_WINDOW ((size_t)1 << 18)

/* One file of the combination, in its order. */
typedef struct rc_member {
	char *name;               /* for messages: FILE as given, or the path in the collection */
	char *url;                /* its URL in references */
	uint64_t off;             /* its summary in the spill */
	size_t len;
	int has_key;              /* the first value of DIM's coordinate (rs_head) */
	double key;
} rc_member;

int rc_spill_open(rc_spill *s);
/* Append a summary; its place in *off. 0, or a negative h5_err. */
int rc_spill_put(rc_spill *s, uint64_t *off, const uint8_t *p, size_t len);
/* The summary at (off, len): valid until the next call. */
int rc_spill_get(rc_spill *s, const uint8_t **p, uint64_t off, size_t len);
void rc_spill_close(rc_spill *s);

/* Check members m[0..n) (their summaries in s) can be one dataset along
 * o's DIM, then write the document to stdout: the exit status
 * (tool_exit); every refusal is one stderr line naming the file and the
 * variable, and nothing is written then. strict: exit 1 when a dataset
 * had no Zarr form. */
int rc_combine(rc_spill *s, const rc_member *m, size_t n, const rs_opts *o, int strict);

#endif
