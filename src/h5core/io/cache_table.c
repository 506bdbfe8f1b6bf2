/* cache_table.c - the cache's key table and its page index (cache.c's
 * LRU and loads use them under the cache's lock; cache_int.h).
 *
 * The keys are in one open-addressed table: each slot the key's hash
 * beside its entry, linear probing within 3/4 full, and a removal shifts
 * the later entries of its run back (no tombstones). Why: with chains of
 * entries, a cold walk (each header looked up once, missing) took a cache
 * miss for the bucket and one for each entry it passed, and an insertion
 * and an eviction touched their chain neighbours: the look-up and the
 * removal were 15% and 4% of the daemon's CPU (issue 70). */
#include "base.h"
#include "cache_int.h"

/* e out of its view's list of entries */
void ctab_view_unlink(cache_ent *e)
{
	if (!e->view)
		return;
	if (e->vprev)
		e->vprev->vnext = e->vnext;
	else
		e->view->vhead = e->vnext;
	if (e->vnext)
		e->vnext->vprev = e->vprev;
	e->view = NULL;
	e->vprev = e->vnext = NULL;
}

/* The slot of (tag, kind, key) (hash h): the entry's, or the free slot
 * that ends its probe, where an insertion puts it (*found false). */
size_t ctab_probe(const h5_cache *c, uint64_t h, uint32_t tag, uint32_t kind, uint64_t key,
			  bool *found)
{
	size_t mask = c->nslots - 1, i = h & mask;

	for (;; i = (i + 1) & mask) {
		const cache_slot *s = &c->slots[i];

		if (!s->e) {
			*found = false;
			return i;
		}
		if (s->h == h && s->e->key == key && s->e->kind == kind && s->e->tag == tag) {
			*found = true;
			return i;
		}
	}
}

cache_ent *ctab_find(h5_cache *c, uint32_t tag, uint32_t kind, uint64_t key)
{
	bool found;
	size_t i = ctab_probe(c, ctab_hash(tag, kind, key), tag, kind, key, &found);

	return found ? c->slots[i].e : NULL;
}

/* e at the head of the page chain whose head pointer is *head */
static void page_push(cache_ent **head, cache_ent *e)
{
	e->pnext = *head;
	if (e->pnext)
		e->pnext->ppp = &e->pnext;
	e->ppp = head;
	*head = e;
}

/* The page table at npb buckets, of the entries of slots[0, n); false
 * when out of memory (the page table is left as it was). */
bool ctab_page_index(h5_cache *c, const cache_slot *slots, size_t n, size_t npb)
{
	cache_ent **pb = calloc(npb, sizeof(*pb));

	if (!pb)
		return false;
	for (size_t i = 0; i < n; i++) {
		cache_ent *e = slots[i].e;

		if (e)
			page_push(&pb[ctab_page_hash(e->tag, e->key >> PAGE_SHIFT) & (npb - 1)], e);
	}
	free(c->pbuckets);
	c->pbuckets = pb;
	c->npb = npb;
	return true;
}

void ctab_remove(h5_cache *c, cache_ent *e)
{
	if (e->in_table) {
		size_t mask = c->nslots - 1, i = ctab_hash(e->tag, e->kind, e->key) & mask, j;

		while (c->slots[i].e != e)
			i = (i + 1) & mask;
		/* shift back each later entry of the run whose home is not
		 * within (i, j]: its probe would stop at the hole */
		for (j = i;;) {
			size_t home;

			c->slots[i].e = NULL;
			for (;;) {
				j = (j + 1) & mask;
				if (!c->slots[j].e)
					goto shifted;
				home = c->slots[j].h & mask;
				if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
					continue;
				c->slots[i] = c->slots[j];
				i = j;
				break;
			}
		}
shifted:
		if (e->ppp) {
			*e->ppp = e->pnext;
			if (e->pnext)
				e->pnext->ppp = e->ppp;
		}
		c->count--;
	}
	e->ppp = NULL;
	e->pnext = NULL;
	e->in_table = false;
	ctab_view_unlink(e);
}

/* Double the table when 3/4 full; failure to grow is harmless while a
 * free slot is left (false: none is, the caller cannot insert). */
static bool ctab_grow(h5_cache *c)
{
	size_t ns = c->nslots * 2, mask = ns - 1;
	cache_slot *nv;

	if (ns < c->nslots)
		return c->count + 1 < c->nslots;
	nv = calloc(ns, sizeof(*nv));
	if (!nv)
		return c->count + 1 < c->nslots;
	for (size_t i = 0; i < c->nslots; i++) {
		size_t j;

		if (!c->slots[i].e)
			continue;
		for (j = c->slots[i].h & mask; nv[j].e; j = (j + 1) & mask)
			;
		nv[j] = c->slots[i];
	}
	/* the page table grows with it: its chains stay about one entry */
	if (c->pindexed && c->npb < ns && !ctab_page_index(c, nv, ns, ns)) {
		free(nv);
		return c->count + 1 < c->nslots;
	}
	free(c->slots);
	/* (atomic: h5_cache_prefetch reads them without the lock) */
	__atomic_store_n(&c->slots, nv, __ATOMIC_RELEASE);
	__atomic_store_n(&c->nslots, ns, __ATOMIC_RELEASE);
	return true;
}

/* view: the view e belongs to, or NULL (the core's own entry). at: the
 * free slot ctab_probe found for e's key, or SIZE_MAX. False when the
 * table is full and cannot grow (e not inserted). */
bool ctab_insert(h5_cache *c, cache_ent *e, h5_cache *view, size_t at)
{
	uint64_t h = ctab_hash(e->tag, e->kind, e->key);

	if ((c->count + 1) * 4 > c->nslots * 3) {
		if (!ctab_grow(c))
			return false;
		at = SIZE_MAX;
	}
	if (at == SIZE_MAX) {
		bool found;

		at = ctab_probe(c, h, e->tag, e->kind, e->key, &found);
	}
	c->slots[at].h = h;
	c->slots[at].e = e;
	if (c->pindexed)
		page_push(&c->pbuckets[ctab_page_hash(e->tag, e->key >> PAGE_SHIFT) & (c->npb - 1)], e);
	e->in_table = true;
	c->count++;
	{
		h5_cache *k = view ? view : c;

		if (e->key < k->kmin)
			k->kmin = e->key;
		if (e->key > k->kmax)
			k->kmax = e->key;
	}
	if (view) {
		e->view = view;
		e->vnext = view->vhead;
		if (view->vhead)
			view->vhead->vprev = e;
		view->vhead = e;
	}
	return true;
}
