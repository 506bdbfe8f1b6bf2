/*
 * space_report.h - the space report (space_report.c: the walk of every
 * structure FILE's root reaches; space_extents.c: the extents it found,
 * merged and summed).
 */
#ifndef H5_DATASET_SPACE_REPORT_H
#define H5_DATASET_SPACE_REPORT_H

#include "base.h"

/* What an extent holds: the report sums each kind apart. */
enum { H5_SPACE_META = 0, H5_SPACE_RAW = 1, H5_SPACE_NKINDS = 2 };

typedef struct h5_space_ext {
	uint64_t addr, len;     /* [addr, addr + len), relative to the base */
	unsigned kind;          /* H5_SPACE_* */
} h5_space_ext;

typedef struct h5_space_list {
	h5_space_ext *v;
	size_t n, cap;
} h5_space_list;

/* Append one extent (len 0 is dropped); H5_ERR_NOMEM. */
int h5_space_list_add(h5_space_list *l, uint64_t addr, uint64_t len, unsigned kind);
void h5_space_list_free(h5_space_list *l);

/* The union of the extents, each byte counted once however many extents
 * cover it: in [0, eoa) (used), per kind in [0, eoa) (by_kind; a byte two
 * kinds claim counts in both), and from eoa on (past_eoa). Sorts v. */
typedef struct h5_space_sums {
	uint64_t used;
	uint64_t by_kind[H5_SPACE_NKINDS];
	uint64_t past_eoa;
} h5_space_sums;
void h5_space_merge(h5_space_sums *out, h5_space_ext *v, size_t n, uint64_t eoa);

#endif
