/* cache.c - the shared LRU of decoded blocks, with a byte budget.
 *
 * One mutex guards the hash table, the LRU list and the accounting. Loads
 * run outside the lock: the first caller of a missing key inserts a
 * "loading" placeholder, and later callers of that key wait on the cache's
 * condition variable until the load finishes, so every key is loaded once
 * however many FUSE threads ask at the same time.
 *
 * Entries carry a reference count. Only unreferenced, loaded entries sit on
 * the LRU list and only they are evicted, so usage can exceed the budget
 * while many entries are in use; the excess is trimmed as they are
 * released. Objects are freed outside the lock because a free function may
 * release references it holds in this or another cache. */
#include "base.h"
#include "cache_int.h"

#include <stdio.h>

/* A view resolves to its core; its keys carry its tag. */
static h5_cache *cache_core(h5_cache *c, uint32_t *tag)
{
	*tag = c->tag;
	return c->core ? c->core : c;
}

#define CACHE_MIN_SLOTS 64
/* metadata may take a quarter of the budget, and at least this much */
#define CACHE_META_MIN ((size_t)64 << 20)

int h5_cache_new(h5_cache **out, size_t budget)
{
	h5_cache *c;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return h5_err_set(H5_ERR_NOMEM, "out of memory creating cache");
	c->nslots = CACHE_MIN_SLOTS;
	c->slots = calloc(c->nslots, sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return h5_err_set(H5_ERR_NOMEM, "out of memory creating cache");
	}
	if (pthread_mutex_init(&c->lock, NULL) != 0) {
		free(c->slots);
		free(c);
		return h5_err_set(H5_ERR_NOMEM, "cannot create cache mutex");
	}
	if (pthread_cond_init(&c->loaded, NULL) != 0) {
		pthread_mutex_destroy(&c->lock);
		free(c->slots);
		free(c);
		return h5_err_set(H5_ERR_NOMEM, "cannot create cache condition variable");
	}
	c->budget = budget;
	/* a quarter for metadata, or all of a budget of 64 MiB or less: a
	 * large file's chunk index is metadata too */
	c->meta_budget = budget / 4 > CACHE_META_MIN ? budget / 4 : budget < CACHE_META_MIN ? budget : CACHE_META_MIN;
	c->kmin = UINT64_MAX;
	*out = c;
	return 0;
}

void h5_cache_meta_cap(h5_cache *c, size_t max)
{
	pthread_mutex_lock(&c->lock);
	if (max && max < c->meta_budget)
		c->meta_budget = max;
	pthread_mutex_unlock(&c->lock);
}

static void ent_destroy(cache_ent *e)
{
	if (e->obj && e->free_fn)
		e->free_fn(e->obj);
	free(e->load_msg);
	free(e);
}

static void view_free(h5_cache *v);

void h5_cache_free(h5_cache *c)
{
	size_t i;

	if (!c)
		return;
	if (c->core) {
		view_free(c);
		return;
	}
	/* Callers release everything before closing the file; entries still
	 * referenced then would be a programmer error, not a file problem. */
	for (i = 0; i < c->nslots; i++)
		if (c->slots[i].e)
			ent_destroy(c->slots[i].e);
	free(c->slots);
	free(c->pbuckets);
	pthread_cond_destroy(&c->loaded);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

enum { LRU_META, LRU_CHUNK };

static int lru_of(const cache_ent *e)
{
	return e->kind == H5_CK_CHUNK ? LRU_CHUNK : LRU_META;
}

/* e's cost counted in (sign > 0) or out of the cache's usage */
static void charge(h5_cache *c, const cache_ent *e, int sign)
{
	if (sign > 0) {
		c->used += e->cost;
		if (lru_of(e) == LRU_META)
			c->meta_used += e->cost;
	} else {
		c->used -= e->cost;
		if (lru_of(e) == LRU_META)
			c->meta_used -= e->cost;
	}
}

static void lru_unlink(h5_cache *c, cache_ent *e)
{
	int l = lru_of(e);

	if (e->lprev)
		e->lprev->lnext = e->lnext;
	else
		c->lru_head[l] = e->lnext;
	if (e->lnext)
		e->lnext->lprev = e->lprev;
	else
		c->lru_tail[l] = e->lprev;
	e->lprev = e->lnext = NULL;
}

static void lru_append(h5_cache *c, cache_ent *e)
{
	int l = lru_of(e);

	e->released = ++c->clock;
	e->lnext = NULL;
	e->lprev = c->lru_tail[l];
	if (c->lru_tail[l])
		c->lru_tail[l]->lnext = e;
	else
		c->lru_head[l] = e;
	c->lru_tail[l] = e;
}

/* The next victim: metadata's oldest while metadata is over its own
 * budget, else the older of the two heads while the cache is over its
 * budget; NULL when nothing is over (or nothing unused is left). */
static cache_ent *evict_next(h5_cache *c)
{
	cache_ent *m = c->lru_head[LRU_META], *k = c->lru_head[LRU_CHUNK];

	if (c->meta_used > c->meta_budget && m)
		return m;
	if (c->used <= c->budget)
		return NULL;
	if (m && k)
		return m->released < k->released ? m : k;
	return m ? m : k;
}

/* Take unused entries off the LRU heads until usage fits the budgets. The
 * victims are chained on *dead (through dnext) to be freed after unlock. */
static void cache_evict(h5_cache *c, cache_ent **dead)
{
	cache_ent *e;

	while ((e = evict_next(c)) != NULL) {
		lru_unlink(c, e);
		ctab_remove(c, e);
		charge(c, e, -1);
		e->dnext = *dead;
		*dead = e;
		/* the next victim's slot fetched ahead: a walk evicts an entry
		 * a load, each a cold line of the slots (lru_unlink just
		 * touched that entry, its key costs nothing) */
		e = c->lru_head[LRU_META];
		if (e)
			__builtin_prefetch(&c->slots[ctab_hash(e->tag, e->kind, e->key) & (c->nslots - 1)]);
	}
}

static void free_dead(cache_ent *dead)
{
	while (dead) {
		cache_ent *next = dead->dnext;

		ent_destroy(dead);
		dead = next;
	}
}

/* Would blocking on e close a cycle of threads each waiting for a load the
 * next one is running? Called with the lock held. */
static bool wait_would_deadlock(h5_cache *c, const cache_ent *e, pthread_t self)
{
	pthread_t t = e->loader;
	size_t steps = 0;

	for (;;) {
		const cache_waiter *w;

		if (pthread_equal(t, self))
			return true;
		for (w = c->waiters; w && !pthread_equal(w->thread, t); w = w->next)
			;
		/* t is running, not waiting: it will finish and wake us */
		if (!w || ++steps > 1000000)
			return false;
		t = w->on->loader;
	}
}

static void waiter_remove(h5_cache *c, cache_waiter *me)
{
	cache_waiter **pp = &c->waiters;

	while (*pp && *pp != me)
		pp = &(*pp)->next;
	if (*pp)
		*pp = me->next;
}

/* Drop one reference with the lock held; unused entries go to the LRU
 * (or to *dead when no longer in the table). */
static void ent_unref(h5_cache *c, cache_ent *e, cache_ent **dead)
{
	if (--e->refs > 0)
		return;
	if (e->in_table && !e->loading && e->load_rc == 0) {
		lru_append(c, e);
		return;
	}
	if (!e->loading) {
		if (e->load_rc == 0)
			charge(c, e, -1);
		e->dnext = *dead;
		*dead = e;
	}
}

void h5_cache_prefetch(h5_cache *c, uint32_t kind, uint64_t key)
{
	cache_slot *s;
	size_t ns;
	uint32_t tag;

	c = cache_core(c, &tag);
	/* a table growing meanwhile may pair the old array with the new
	 * size: a prefetch never faults, and nothing is read from it */
	s = __atomic_load_n(&c->slots, __ATOMIC_ACQUIRE);
	ns = __atomic_load_n(&c->nslots, __ATOMIC_ACQUIRE);
	__builtin_prefetch(&s[ctab_hash(tag, kind, key) & (ns - 1)]);
}

bool h5_cache_holds(h5_cache *c, uint32_t kind, uint64_t key)
{
	cache_ent *e;
	uint32_t tag;
	bool held;

	c = cache_core(c, &tag);
	pthread_mutex_lock(&c->lock);
	e = ctab_find(c, tag, kind, key);
	held = e && !e->loading && e->load_rc == 0;
	pthread_mutex_unlock(&c->lock);
	return held;
}

int h5_cache_get(h5_cache_ref *out, h5_cache *c, uint32_t kind, uint64_t key,
		 h5_cache_load_fn load, h5_cache_free_fn free_fn, void *ud)
{
	pthread_t self = pthread_self();
	cache_ent *e, *dead = NULL;
	h5_cache *view = c->core ? c : NULL;
	void *obj = NULL;
	size_t cost = 0, at;
	uint64_t h;
	uint32_t tag;
	bool found;
	int rc = 0;

	out->obj = NULL;
	out->ent = NULL;
	c = cache_core(c, &tag);
	pthread_mutex_lock(&c->lock);
	h = ctab_hash(tag, kind, key);
	at = ctab_probe(c, h, tag, kind, key, &found);
	e = found ? c->slots[at].e : NULL;
	if (e && e->loading) {
		cache_waiter me = { .thread = self, .on = e };

		if (wait_would_deadlock(c, e, self)) {
			pthread_mutex_unlock(&c->lock);
			return h5_err_set(H5_ERR_LOOP, "cache: loading block kind %u at 0x%llx needs itself "
					  "(cyclic structure)", (unsigned)kind, (unsigned long long)key);
		}
		/* Our reference keeps the entry alive even if the load fails and
		 * the entry leaves the table. */
		e->refs++;
		me.next = c->waiters;
		c->waiters = &me;
		while (e->loading)
			pthread_cond_wait(&c->loaded, &c->lock);
		waiter_remove(c, &me);
		if (e->load_rc < 0) {
			rc = h5_err_set(e->load_rc, "%s", e->load_msg ? e->load_msg : h5_err_name(e->load_rc));
			ent_unref(c, e, &dead);
			pthread_mutex_unlock(&c->lock);
			free_dead(dead);
			return rc;
		}
		/* loaded (possibly invalidated meanwhile: still valid for us) */
		goto hit;
	}
	if (e) {
		if (e->refs++ == 0)
			lru_unlink(c, e);
		goto hit;
	}

	e = calloc(1, sizeof(*e));
	if (!e) {
		pthread_mutex_unlock(&c->lock);
		return h5_err_set(H5_ERR_NOMEM, "out of memory in cache");
	}
	e->tag = tag;
	e->kind = kind;
	e->key = key;
	e->free_fn = free_fn;
	e->refs = 1;
	e->loading = true;
	e->loader = self;
	if (!ctab_insert(c, e, view, at)) {
		pthread_mutex_unlock(&c->lock);
		free(e);
		return h5_err_set(H5_ERR_NOMEM, "out of memory in cache");
	}
	pthread_mutex_unlock(&c->lock);

	rc = load(&obj, &cost, ud);

	pthread_mutex_lock(&c->lock);
	e->loading = false;
	if (rc < 0) {
		/* not cached: the next caller tries again */
		e->load_rc = rc;
		e->load_msg = strdup(h5_err_msg());
		if (e->in_table)
			ctab_remove(c, e);
		pthread_cond_broadcast(&c->loaded);
		ent_unref(c, e, &dead);
		pthread_mutex_unlock(&c->lock);
		free_dead(dead);
		return rc;
	}
	e->obj = obj;
	e->cost = cost;
	charge(c, e, 1);
	pthread_cond_broadcast(&c->loaded);
	cache_evict(c, &dead);
hit:
	out->obj = e->obj;
	out->ent = e;
	pthread_mutex_unlock(&c->lock);
	free_dead(dead);
	return 0;
}

void h5_cache_release(h5_cache *c, h5_cache_ref *ref)
{
	cache_ent *dead = NULL;
	uint32_t tag;

	if (!c || !ref || !ref->ent)
		return;
	c = cache_core(c, &tag);
	pthread_mutex_lock(&c->lock);
	ent_unref(c, ref->ent, &dead);
	cache_evict(c, &dead);
	pthread_mutex_unlock(&c->lock);
	ref->ent = NULL;
	ref->obj = NULL;
	free_dead(dead);
}

/* Take e out of the table (lock held): unused, it goes to *dead; in use,
 * it is freed on its last release. An entry being loaded has refs >= 1:
 * the loader hands it to its caller and it is never cached. */
static void ent_drop(h5_cache *c, cache_ent *e, cache_ent **dead)
{
	ctab_remove(c, e);
	if (e->refs == 0) {
		lru_unlink(c, e);
		charge(c, e, -1);
		e->dnext = *dead;
		*dead = e;
	}
}

void h5_cache_invalidate(h5_cache *c, uint32_t kind, uint64_t key)
{
	cache_ent *e, *dead = NULL;
	uint32_t tag;

	c = cache_core(c, &tag);
	pthread_mutex_lock(&c->lock);
	e = ctab_find(c, tag, kind, key);
	if (e)
		ent_drop(c, e, &dead);
	pthread_mutex_unlock(&c->lock);
	free_dead(dead);
}

void h5_cache_invalidate_range(h5_cache *c, uint64_t lo, uint64_t hi)
{
	h5_cache *core = c->core ? c->core : c;
	cache_ent *e, *next, *dead = NULL;

	uint64_t kmin = UINT64_MAX, kmax = 0, first = lo >> PAGE_SHIFT, last;
	uint32_t tag = c->core ? c->tag : 0;

	if (hi <= lo)
		return;
	last = (hi - 1) >> PAGE_SHIFT;
	pthread_mutex_lock(&core->lock);
	if (hi <= c->kmin || lo > c->kmax) {
		pthread_mutex_unlock(&core->lock);
		return;
	}
	if (!core->pindexed && ctab_page_index(core, core->slots, core->nslots, core->nslots))
		core->pindexed = true;
	if (core->pindexed && last - first < core->count) {
		/* by its pages: fewer than the entries */
		for (uint64_t pg = first; pg <= last; pg++)
			for (e = core->pbuckets[ctab_page_hash(tag, pg) & (core->npb - 1)]; e; e = next) {
				next = e->pnext;
				if (e->tag == tag && e->key >= lo && e->key < hi)
					ent_drop(core, e, &dead);
			}
		pthread_mutex_unlock(&core->lock);
		free_dead(dead);
		return;
	}
	if (c->core) {
		for (e = c->vhead; e; e = next) {
			next = e->vnext;
			if (e->key >= lo && e->key < hi) {
				ent_drop(core, e, &dead);
				continue;
			}
			kmin = e->key < kmin ? e->key : kmin;
			kmax = e->key > kmax ? e->key : kmax;
		}
	} else {
		/* a removal shifts later entries back into slot i: look at it
		 * again (an entry shifted across the array's end into a slot
		 * already passed is looked at twice, which changes nothing) */
		for (size_t i = 0; i < core->nslots;) {
			e = core->slots[i].e;
			if (!e || e->tag != 0) {
				i++;
				continue;
			}
			if (e->key >= lo && e->key < hi) {
				ent_drop(core, e, &dead);
				continue;
			}
			kmin = e->key < kmin ? e->key : kmin;
			kmax = e->key > kmax ? e->key : kmax;
			i++;
		}
	}
	/* (what is left, exactly) */
	c->kmin = kmin;
	c->kmax = kmax;
	pthread_mutex_unlock(&core->lock);
	free_dead(dead);
}

size_t h5_cache_used(const h5_cache *c)
{
	h5_cache *mc = (h5_cache *)c; /* the lock is not part of the logical state */
	size_t used;

	if (mc->core)
		mc = mc->core;
	pthread_mutex_lock(&mc->lock);
	used = mc->used;
	pthread_mutex_unlock(&mc->lock);
	return used;
}

size_t h5_cache_budget(const h5_cache *c)
{
	return c->core ? c->core->budget : c->budget;
}

int h5_cache_new_view(h5_cache **out, h5_cache *shared)
{
	h5_cache *v;

	*out = NULL;
	if (shared->core)
		shared = shared->core;
	v = calloc(1, sizeof(*v));
	if (!v)
		return h5_err_set(H5_ERR_NOMEM, "out of memory creating cache view");
	pthread_mutex_lock(&shared->lock);
	/* 2^32 - 1 files opened in one context, generations included */
	if (shared->next_tag == UINT32_MAX) {
		pthread_mutex_unlock(&shared->lock);
		free(v);
		return h5_err_set(H5_ERR_LIMIT, "too many files opened in one cache");
	}
	v->tag = ++shared->next_tag;
	shared->nviews++;
	pthread_mutex_unlock(&shared->lock);
	v->core = shared;
	v->kmin = UINT64_MAX;
	*out = v;
	return 0;
}

/* Closing a view drops its unused entries from the core; entries still
 * referenced leave the table and are freed on their last release. Its own
 * list, not the core's table: a context of thousands of files closes
 * one without walking every file's entries. */
static void view_free(h5_cache *v)
{
	h5_cache *c = v->core;
	cache_ent *e, *next, *dead = NULL;

	pthread_mutex_lock(&c->lock);
	for (e = v->vhead; e; e = next) {
		next = e->vnext;
		if (!e->loading)
			ent_drop(c, e, &dead);          /* unlinks it from v's list */
	}
	/* entries still loading stay in the table until their load ends; no
	 * one asks for v's keys any more, and they carry no pointer to v */
	for (e = v->vhead; e; e = next) {
		next = e->vnext;
		ctab_view_unlink(e);
	}
	c->nviews--;
	pthread_mutex_unlock(&c->lock);
	free_dead(dead);
	free(v);
}

size_t h5_cache_view_used(const h5_cache *v)
{
	h5_cache *c = v->core ? v->core : (h5_cache *)v;   /* the lock is not logical state */
	size_t used = 0;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->nslots; i++) {
		cache_ent *e = c->slots[i].e;

		if (e && e->tag == v->tag && !e->loading && e->load_rc == 0)
			used += e->cost;
	}
	pthread_mutex_unlock(&c->lock);
	return used;
}
