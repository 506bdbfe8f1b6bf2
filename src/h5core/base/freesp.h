/*
 * freesp.h - a list of free extents of a file (freesp.c): what a mount's
 * committed changes stopped referencing, handed out again by space.c.
 *
 * Each extent carries the sync ticket after which it may be reused: the
 * change that freed it is on disk, and no state a crash could fall back
 * to still references it, only once an fsync that began after that
 * change's last write has completed (write/space.h). Until then it is
 * pending; released extents merge with their released neighbours and are
 * handed out best fit. Pure bookkeeping: no I/O, no file (the next
 * mount finds released space through write/space_punch.c's markers).
 */
#ifndef H5_BASE_FREESP_H
#define H5_BASE_FREESP_H

#include "base.h"

/* Extents kept at most: past it the smallest released one is forgotten
 * (leaked, as before free-space reuse), so memory stays bounded (24 MiB).
 * A truncate that drops a dataset's 917,000 scattered one-row chunks frees
 * as many extents, pending until the next sync: 65,536 leaked the rest. */
#define H5_FREESP_MAX ((size_t)1 << 20)

typedef struct h5_free_ext {
	uint64_t addr, len;
	uint64_t ticket;        /* reusable once the completed syncs reach it; 0: released */
} h5_free_ext;

typedef struct h5_freesp {
	h5_free_ext *v;         /* sorted by addr, disjoint */
	size_t n, cap;
	uint64_t released;      /* bytes of released extents */
	uint64_t pending;       /* bytes of extents still waiting for their sync */
	bool low;               /* take: the lowest extent that fits, not the
				 * best fit (moving blocks down: ohdr_edit.c) */
	bool merge;             /* an extent added next to one of the same
				 * ticket joins it (a list no one pops by
				 * address: FILE's free space, a walk's notes) */
	uint64_t tlow;          /* no extent waits for a ticket below it (0:
				 * not known; whoever sets tickets other than
				 * h5_freesp_add zeroes it): h5_freesp_release
				 * skips its pass while tlow > done */
} h5_freesp;

/* [addr, addr + len) is free once the sync ticket `ticket` completed.
 * An extent overlapping one already listed is refused (H5_ERR_INVAL: a
 * double free would hand the same bytes out twice); H5_ERR_NOMEM. */
int h5_freesp_add(h5_freesp *s, uint64_t addr, uint64_t len, uint64_t ticket);

/* Every pending extent whose ticket is <= done becomes released; released
 * neighbours merge. A released extent that ends at *end (the allocation
 * end) is taken off the list and *end drops to its start instead. */
void h5_freesp_release(h5_freesp *s, uint64_t done, uint64_t *end);

/* len bytes of released space, best fit (the smallest extent that holds
 * them; the lowest address among equals; with s->low the lowest extent
 * that holds them), taken from its front: 1 and *addr, or 0 when none
 * holds them. */
int h5_freesp_take(h5_freesp *s, uint64_t len, uint64_t *addr);

/* The extent starting at addr taken off the list, whatever its state:
 * 1 and *len, or 0 when none starts there (a list of extents never
 * released, ticket UINT64_MAX, serves as a map of owned blocks). */
int h5_freesp_pop(h5_freesp *s, uint64_t addr, uint64_t *len);

/* The largest released extent (0: none). */
uint64_t h5_freesp_largest(const h5_freesp *s);

/* The index of the first extent whose addr is >= addr (s->n: none). */
size_t h5_freesp_lower(const h5_freesp *s, uint64_t addr);

void h5_freesp_clear(h5_freesp *s);

#endif
