/* cache_int.h - what cache.c (the LRU, loads, views) and cache_table.c
 * (the key table, the page index) share: the entries and the cache. */
#ifndef H5_CACHE_INT_H
#define H5_CACHE_INT_H

#include "cache.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct cache_ent {
	uint32_t tag;           /* the view (file) it belongs to; 0: the core's own */
	uint32_t kind;
	uint64_t key;
	struct cache_ent *dnext;        /* the list of entries to free (free_dead) */
	void *obj;
	size_t cost;
	h5_cache_free_fn free_fn;
	unsigned refs;          /* users, including threads waiting on a load */
	bool loading;
	bool in_table;          /* false once evicted, invalidated or failed */
	int load_rc;            /* < 0: the load failed (waiters report it) */
	char *load_msg;         /* the loader's message, for the waiters */
	pthread_t loader;
	struct cache_ent *pnext;        /* chain of the (tag, key page) table */
	/* in the page table: the pointer that points at it, so a removal
	 * (every eviction, every entry of a closed file) takes no walk: the
	 * page chains run long where a page holds many small headers, and
	 * walking them was a fifth of an unmount after a walk (issue 70) */
	struct cache_ent **ppp;
	struct cache_ent *lprev, *lnext; /* LRU list, only while refs == 0 */
	uint64_t released;      /* when it joined its LRU list (c->clock) */
	/* the view's list of its entries in the table (view NULL: the core's
	 * own entry, or out of the table), so closing a file walks its own
	 * entries, not a context's whole cache */
	struct h5_cache *view;
	struct cache_ent *vprev, *vnext;
} cache_ent;

/* A thread blocked on a load, registered so a cycle of loads that wait for
 * each other (a hostile file whose structures nest into themselves) is
 * reported instead of deadlocking. Lives on the waiting thread's stack. */
typedef struct cache_waiter {
	pthread_t thread;
	cache_ent *on;
	struct cache_waiter *next;
} cache_waiter;

/* A slot of the key table: the key's hash beside its entry, so a probe
 * reads the slot array alone until a hash matches. Why: with chains of
 * entries, a cold walk (each header looked up once, missing) took a cache
 * miss for the bucket and one for each entry it passed, and an insertion
 * and an eviction touched their chain neighbours: table_find and
 * table_remove were 15% and 4% of the daemon's CPU (issue 70). */
typedef struct cache_slot {
	uint64_t h;             /* cache_hash of the entry's key */
	cache_ent *e;           /* NULL: free */
} cache_slot;

struct h5_cache {
	pthread_mutex_t lock;
	pthread_cond_t loaded;
	/* open addressing, linear probing, within 3/4 full; a removal
	 * shifts the entries after it back (no tombstones) */
	cache_slot *slots;
	size_t nslots;          /* power of two */
	/* the same entries by (tag, key >> PAGE_SHIFT): a range of keys is
	 * found by its pages (h5_cache_invalidate_range, which every space
	 * take calls: a scan of every entry per take was 13% of a cp -r of
	 * small files, issue 55). Built at the first range invalidation
	 * (pindexed), kept from then on: a mount that does not write never
	 * asks, and keeping it cost two more cache misses per insertion and
	 * per eviction of a cold walk. npb buckets, power of two. */
	cache_ent **pbuckets;
	size_t npb;
	bool pindexed;
	size_t count;           /* entries in the table */
	size_t used;            /* cost of every live loaded entry (in table or still referenced) */
	size_t budget;
	/* Two LRU lists, metadata (LRU_META) and decoded chunks (LRU_CHUNK),
	 * in one order (released): the budget evicts the older of the two
	 * heads, and metadata alone is also held within meta_budget. Why: a
	 * walk over millions of small objects (find, du) decoded a header
	 * apiece, and those filled the whole budget (1.5 GB by default on a
	 * 24 GB machine) though none is read again soon; the chunks that
	 * make random reads of compressed data fast have the rest (issue
	 * 64). */
	cache_ent *lru_head[2]; /* least recently released */
	cache_ent *lru_tail[2];
	uint64_t clock;         /* releases so far */
	size_t meta_used;       /* the part of used that is not chunks */
	size_t meta_budget;
	cache_waiter *waiters;
	/* A view (h5_cache_new_view) has core set: it is a window on another
	 * cache, whose keys it tags so two files never share an entry. */
	struct h5_cache *core;
	uint32_t tag;           /* view: every key it asks for is (tag, kind, key) */
	uint32_t next_tag;      /* core: the last tag handed out */
	unsigned nviews;        /* core: views still open */
	cache_ent *vhead;       /* view: its entries in the core's table (core's lock) */
	/* the lowest and highest key ever put in the table for this view
	 * (the core: for its own entries) since the last range scan: a
	 * range outside them holds none (h5_cache_invalidate_range, which
	 * every space take calls: a scan of thousands of headers per new
	 * dataset was 13% of a cp -r of small files) */
	uint64_t kmin, kmax;
};

#define PAGE_SHIFT 12

static inline size_t ctab_hash(uint32_t tag, uint32_t kind, uint64_t key)
{
	/* splitmix64 finaliser: addresses are aligned and clustered, so mix them */
	uint64_t z = key ^ ((((uint64_t)tag << 32) | kind) * 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return (size_t)(z ^ (z >> 31));
}

static inline size_t ctab_page_hash(uint32_t tag, uint64_t page)
{
	return ctab_hash(tag, UINT32_MAX, page);
}

/* (cache_table.c, under the cache's lock) */
size_t ctab_probe(const h5_cache *c, uint64_t h, uint32_t tag, uint32_t kind, uint64_t key, bool *found);
cache_ent *ctab_find(h5_cache *c, uint32_t tag, uint32_t kind, uint64_t key);
bool ctab_page_index(h5_cache *c, const cache_slot *slots, size_t n, size_t npb);
void ctab_remove(h5_cache *c, cache_ent *e);
bool ctab_insert(h5_cache *c, cache_ent *e, h5_cache *view, size_t at);
void ctab_view_unlink(cache_ent *e);

#endif
