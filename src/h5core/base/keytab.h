/*
 * keytab.h - a table of entries keyed by a non-zero 64-bit number
 * (keytab.c): open addressing with linear probing, kept at most half full.
 * Each entry is esize bytes, its first 8 its key (0: a free slot); the
 * rest starts zeroed. One helper for the chunks an overwrite touched
 * (write/chunk_rewrite.c), the dirty chunks of an overwriter
 * (write/overwrite.c) and the addresses a walk visited (addrset.c).
 */
#ifndef H5_BASE_KEYTAB_H
#define H5_BASE_KEYTAB_H

#include "base.h"

typedef struct h5_keytab {
	unsigned char *slots;
	size_t esize;           /* set before the first use: H5_KEYTAB(type) */
	size_t cap, n;          /* slots; entries in use */
} h5_keytab;

#define H5_KEYTAB(type) ((h5_keytab){ .esize = sizeof(type) })

/* *out: the entry of key (key != 0): 1 when made now, 0 when it was
 * there, or H5_ERR_NOMEM. Pointers into the table last until the next
 * entry is made. */
int h5_keytab_get(void **out, h5_keytab *t, uint64_t key);
/* Slot i (0 .. cap - 1), or NULL when it is free: for iterating. */
void *h5_keytab_slot(const h5_keytab *t, size_t i);
/* Every entry dropped, the slots kept. */
void h5_keytab_clear(h5_keytab *t);
void h5_keytab_free(h5_keytab *t);

#endif
