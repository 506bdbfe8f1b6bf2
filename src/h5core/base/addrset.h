/*
 * addrset.h - a set of file addresses (addrset.c): what a walk has
 * visited, so a structure reached twice (a loop, or an object linked from
 * two groups) is noticed.
 */
#ifndef H5_BASE_ADDRSET_H
#define H5_BASE_ADDRSET_H

#include "base.h"
#include "keytab.h"

/* (zeroed before use) */
typedef struct h5_addrset {
	h5_keytab t;            /* keyed by address + 1 */
} h5_addrset;

/* Add addr: 1 when it is new, 0 when it was there, or H5_ERR_NOMEM. */
int h5_addrset_add(h5_addrset *s, uint64_t addr);
void h5_addrset_free(h5_addrset *s);

#endif
