/*
 * cache.h - the metadata and chunk cache (cache.c).
 */
#ifndef H5_IO_CACHE_H
#define H5_IO_CACHE_H

#include "base.h"

/* ---- cache (cache.c) ----------------------------------------------------
 * One LRU with a byte budget, keyed by (kind, key), shared by all datasets.
 * Entries are refcounted: an entry in use is never freed; eviction picks the
 * least recently released unused entry.  h5_cache_get() runs `load` once for
 * a missing key even when several threads ask at once (others wait). */

typedef struct h5_cache h5_cache;

enum h5_cache_kind {
	H5_CK_OHDR = 1,     /* h5_ohdr */
	H5_CK_LHEAP,        /* h5_lheap */
	H5_CK_BT1,          /* h5_bt1_node */
	H5_CK_BT2_HDR,      /* v2 B-tree header */
	H5_CK_BT2_NODE,     /* v2 B-tree internal/leaf node */
	H5_CK_FHEAP_HDR,
	H5_CK_FHEAP_IBLOCK,
	H5_CK_FHEAP_DBLOCK,
	H5_CK_GHEAP,        /* global heap collection */
	H5_CK_FA_HDR, H5_CK_FA_DBLOCK, H5_CK_FA_PAGE,
	H5_CK_EA_HDR, H5_CK_EA_IBLOCK, H5_CK_EA_SBLOCK, H5_CK_EA_DBLOCK, H5_CK_EA_PAGE,
	H5_CK_CHUNK,        /* decoded (unfiltered) chunk: key = chunk file address */
	H5_CK_GROUP,        /* decoded group summary */
	H5_CK_DATASET,      /* opened dataset description */
	H5_CK_OTHER,
	H5_CK_SNOD          /* h5_snod (symbol table node) */
};

typedef struct h5_cache_ref {
	void *obj;      /* the cached object */
	void *ent;      /* opaque: the entry, for h5_cache_release */
} h5_cache_ref;

/* Build the object for a missing key: set *obj and *cost (bytes charged). */
typedef int (*h5_cache_load_fn)(void **obj, size_t *cost, void *ud);
typedef void (*h5_cache_free_fn)(void *obj);

int h5_cache_new(h5_cache **out, size_t budget);
/* Decoded metadata held within max bytes at most (a smaller share than
 * h5_cache_new's quarter of the budget: the default budget's, ctx.c) */
void h5_cache_meta_cap(h5_cache *c, size_t max);
/* A view on `shared` (or on the cache it is a view of): the same budget and
 * LRU, keys of its own (a tag per view). Every file reads through a view
 * of its context's cache (ctx.c), so all files of a context share one
 * budget and never one entry. h5_cache_free() of a view
 * drops its entries; the shared cache is freed after all its views. */
int h5_cache_new_view(h5_cache **out, h5_cache *shared);
void h5_cache_free(h5_cache *c);
int h5_cache_get(h5_cache_ref *out, h5_cache *c, uint32_t kind, uint64_t key,
		 h5_cache_load_fn load, h5_cache_free_fn free_fn, void *ud);
void h5_cache_release(h5_cache *c, h5_cache_ref *ref);
/* Drop an entry (e.g. after an append rewrote the block); freed once unused. */
void h5_cache_invalidate(h5_cache *c, uint32_t kind, uint64_t key);
/* Drop every entry of c (a view: its own) keyed in [lo, hi): space
 * handed out again holds other bytes now (write/space.c). */
void h5_cache_invalidate_range(h5_cache *c, uint64_t lo, uint64_t hi);
/* Whether (kind, key) is loaded in c now: a look that loads nothing and
 * takes no part in another caller's load (a failed probe through
 * h5_cache_get would be the result a concurrent loader waiting on it
 * gets: tests of prefetching) */
bool h5_cache_holds(h5_cache *c, uint32_t kind, uint64_t key);
/* A hint: (kind, key) is asked for soon. Its hash bucket is fetched
 * into the CPU's cache now, without the lock, so that the miss of a walk
 * of many headers overlaps the work before the h5_cache_get (a cold
 * walk's table_find: 15% of the daemon's CPU, issue 70). Nothing else. */
void h5_cache_prefetch(h5_cache *c, uint32_t kind, uint64_t key);
size_t h5_cache_used(const h5_cache *c);
size_t h5_cache_budget(const h5_cache *c);
/* The cost of the entries of this view (or of the core's own) still in the
 * table: a scan, for tests. */
size_t h5_cache_view_used(const h5_cache *c);

#endif
