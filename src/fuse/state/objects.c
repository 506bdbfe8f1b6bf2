/*
 * objects.c - the objects table (fs.h struct lslot; callers of the _locked
 * functions hold fs->lock): one open-addressed table keyed by st_ino, a
 * 32-byte slot an object, that is both the kind map (readdir's d_type of
 * every object listed) and the place of the stat-only records (light.c),
 * so a listed object costs one slot and a held name that slot and its name
 * entry (issue 64). Also the records' names (a mmap'd arena of entries
 * reused by size) and the generations the records hold (a few, by index).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* mremap */
#endif
#include "fs.h"
#include "table.h"

#include <sys/mman.h>

_Static_assert(sizeof(struct lslot) == 32, "struct lslot is 32 bytes");
_Static_assert((LOBJ_SHARDS & (LOBJ_SHARDS - 1)) == 0, "shards: a power of two");
_Static_assert(LOBJ_SHARDS == 16, "lobj_shard takes the hash's top 4 bits");

#define LSLOT_TOMB ((uint64_t)1)        /* (key 0: empty; st_ino >= 1) */
#define LOBJ_KEY_MAX ((uint64_t)1 << 62)
#define LOBJ_MMAP_BYTES ((size_t)64 << 10)
#define LSHARD_FIRST 16

/* ---- the table: linear probing, 16 shards by the hash's top bits ---------- */

/* murmur3's finalizer: the top bits pick the shard, the low ones the slot */
static uint64_t lobj_mix(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	v *= 0xc4ceb9fe1a85ec53ULL;
	v ^= v >> 33;
	return v;
}

static struct lshard *lobj_shard(h5fs *fs, uint64_t h)
{
	return &fs->lobj[h >> 60 & (LOBJ_SHARDS - 1)];
}

/* Slot arrays of 64 KiB and more are mapped apart from malloc's heap:
 * freed at a growth, a large one would leave the heap a hole (and raise
 * malloc's mmap threshold, so that later ones came from the heap).
 *
 * A mapped array is placed in LOBJ_RES_GROWTH times its size of address
 * space (PROT_NONE beyond it: no memory), and a rebuild's old array is
 * kept as the table's one spare (fs->lobj_spare), which the next rebuild
 * of any shard takes, grown in place, before it maps a new one. Why: a
 * cold walk of 1 M objects grows the shards by a quarter some 600 times,
 * and on this machine kind (a VM with shadow page tables) the first touch
 * of each page of a new mapping cost ~15 us, MAP_POPULATE'd or not: 0.84 s
 * of CPU in the rebuilds of 1 M inserts, against 0.09 s into memory
 * touched before (bench: issue70-speed.md, walk70b). Reusing a spare only
 * its growth is new memory; the spare costs one shard's array (1/16 of the
 * slots) at most. */
#define LOBJ_RES_GROWTH 8

/* *out: an array of cap empty slots, the spare's when it can grow to cap
 * in place (not for a shard shrinking: the spare's pages past cap, touched
 * before, would stay); false when out of memory */
static bool lslots_take(struct lslots *out, h5fs *fs, size_t cap, bool shrink)
{
	struct lslots *sp = &fs->lobj_spare;
	size_t bytes = cap * sizeof(struct lslot);
	void *p;

	memset(out, 0, sizeof(*out));
	if (bytes < LOBJ_MMAP_BYTES) {
		out->v = calloc(cap, sizeof(struct lslot));
		return out->v != NULL;
	}
	if (!shrink && sp->v && sp->res >= bytes && mprotect(sp->v, bytes, PROT_READ | PROT_WRITE) == 0) {
		*out = *sp;
		memset(sp, 0, sizeof(*sp));
		/* (past dirty it was never written: zero) */
		memset(out->v, 0, (out->dirty < cap ? out->dirty : cap) * sizeof(struct lslot));
		if (out->dirty < cap)
			out->dirty = cap;
	} else {
		if (bytes > SIZE_MAX / LOBJ_RES_GROWTH)
			return false;
		p = mmap(NULL, bytes * LOBJ_RES_GROWTH, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return false;
		if (mprotect(p, bytes, PROT_READ | PROT_WRITE) != 0) {
			munmap(p, bytes * LOBJ_RES_GROWTH);
			return false;
		}
		out->v = p;
		out->res = bytes * LOBJ_RES_GROWTH;
		out->dirty = cap;
	}
#ifdef MADV_POPULATE_WRITE
	/* faulted in at once (what MAP_POPULATE did): a rebuild writing its
	 * new array page by page faulted each (3% of a cold walk's CPU) */
	(void)madvise(out->v, bytes, MADV_POPULATE_WRITE);
#endif
	return true;
}

static void lslots_unmap(struct lslots *a)
{
	if (a->res)
		munmap(a->v, a->res);
	else
		free(a->v);
	memset(a, 0, sizeof(*a));
}

/* a done with: the spare, if the larger (the more memory touched) */
static void lslots_give(h5fs *fs, struct lslots *a)
{
	struct lslots *sp = &fs->lobj_spare;

	if (!a->v || !a->res || (sp->v && sp->dirty > a->dirty)) {
		lslots_unmap(a);
		return;
	}
	lslots_unmap(sp);
	*sp = *a;
}

/* The index of key's slot in sh, or of the first free place on its probe
 * (key 0 there). A shard's size is no power of two (it grows by a quarter,
 * so its slots are 64-80% in use, not 37-75% as when doubled: the slots
 * are the most of what a held name costs): the hash's low 32 bits scaled
 * to it (multiply and shift, Lemire's "fastrange"). */
static size_t lshard_index(const struct lshard *sh, uint64_t ino, uint64_t h)
{
	size_t i = (size_t)(((h & 0xffffffffu) * (uint64_t)sh->cap) >> 32), tomb = SIZE_MAX;

	for (;; i = i + 1 == sh->cap ? 0 : i + 1) {
		uint64_t k = sh->v[i].key;

		if (k == 0)
			return tomb != SIZE_MAX ? tomb : i;
		if (k == LSLOT_TOMB) {
			if (tomb == SIZE_MAX)
				tomb = i;
		} else if (k >> 2 == ino) {
			return i;
		}
	}
}

/* sh rebuilt at ncap (tombstones gone); false when out of memory */
static bool lshard_rebuild(h5fs *fs, struct lshard *sh, size_t ncap)
{
	struct lslot *old = sh->v, *nv;
	struct lslots o = { sh->v, sh->res, sh->dirty }, n;
	size_t ocap = sh->cap;
	bool shrink = ncap < ocap;

	if (ncap > UINT32_MAX || !lslots_take(&n, fs, ncap, shrink))
		return false;
	nv = n.v;
	/* (atomic: kind_prefetch reads them without the lock) */
	__atomic_store_n(&sh->v, nv, __ATOMIC_RELAXED);
	sh->res = n.res;
	sh->dirty = n.dirty;
	__atomic_store_n(&sh->cap, ncap, __ATOMIC_RELAXED);
	sh->used = 0;
	sh->epoch++;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].key > LSLOT_TOMB) {
			uint64_t ino = LSLOT_INO(&old[i]);

			nv[lshard_index(sh, ino, lobj_mix(ino))] = old[i];
			sh->used++;
		}
	if (shrink) {
		/* its memory given back, and a spare larger than it */
		lslots_unmap(&o);
		if (fs->lobj_spare.dirty > ncap)
			lslots_unmap(&fs->lobj_spare);
	} else {
		lslots_give(fs, &o);
	}
	return true;
}

/* A shard a fifth full or less (its kinds forgotten: objects removed, a
 * live FILE's new generation) rebuilt two fifths full: the kind map's
 * slots follow what it holds, not the most it ever held (issue 82). Not
 * below LSHARD_SHRINK_MIN slots (each rebuild costs a pass). */
#define LSHARD_SHRINK_MIN 4096

static void lshard_shrink(h5fs *fs, struct lshard *sh)
{
	size_t ncap = (sh->n + 1) * 5 / 2;

	if (sh->cap <= LSHARD_SHRINK_MIN || (sh->n + 1) * 5 >= sh->cap)
		return;
	(void)lshard_rebuild(fs, sh, ncap < LSHARD_FIRST ? LSHARD_FIRST : ncap);   /* (no memory: as it is) */
}

struct lslot *lobj_find_locked(h5fs *fs, uint64_t ino)
{
	uint64_t h = lobj_mix(ino);
	struct lshard *sh = lobj_shard(fs, h);
	struct lslot *s;

	if (!sh->cap || ino == 0 || ino >= LOBJ_KEY_MAX)
		return NULL;
	s = &sh->v[lshard_index(sh, ino, h)];
	return s->key > LSLOT_TOMB ? s : NULL;
}

struct lslot *lobj_get_locked(h5fs *fs, uint64_t ino)
{
	uint64_t h = lobj_mix(ino);
	struct lshard *sh = lobj_shard(fs, h);
	struct lslot *s;

	if (ino == 0 || ino >= LOBJ_KEY_MAX)
		return NULL;
	if (!sh->cap) {
		struct lslots a;

		if (!lslots_take(&a, fs, LSHARD_FIRST, false))
			return NULL;
		__atomic_store_n(&sh->v, a.v, __ATOMIC_RELAXED);
		sh->res = a.res;
		sh->dirty = a.dirty;
		__atomic_store_n(&sh->cap, (size_t)LSHARD_FIRST, __ATOMIC_RELAXED);
	}
	s = &sh->v[lshard_index(sh, ino, h)];
	if (s->key > LSLOT_TOMB)
		return s;
	if (sh->cap > LSHARD_SHRINK_MIN && (sh->n + 1) * 5 < sh->cap) {
		lshard_shrink(fs, sh);
		s = &sh->v[lshard_index(sh, ino, h)];
	}
	/* one more within 4/5 (a quarter larger when over 3/5 full of live
	 * ones, else cleaned of tombstones at its size). Linear probing at
	 * 4/5: ~3 slots read to find a key, ~13 to miss, in a row */
	if ((sh->used + 1) * 5 > sh->cap * 4) {
		if (!lshard_rebuild(fs, sh, (sh->n + 1) * 5 > sh->cap * 3 ? sh->cap + sh->cap / 4 : sh->cap))
			return NULL;
		s = &sh->v[lshard_index(sh, ino, h)];
	}
	if (s->key == 0)
		sh->used++;
	memset(s, 0, sizeof(*s));
	s->key = ino << 2;
	sh->n++;
	return s;
}

void lobj_drop_locked(h5fs *fs, struct lslot *s)
{
	if (s->name || s->known)
		return;
	lobj_shard(fs, lobj_mix(LSLOT_INO(s)))->n--;
	memset(s, 0, sizeof(*s));
	s->key = LSLOT_TOMB;
}

void lobj_each_locked(h5fs *fs, void (*fn)(h5fs *fs, struct lslot *s, void *arg), void *arg)
{
	for (size_t k = 0; k < LOBJ_SHARDS; k++) {
		struct lshard *sh = &fs->lobj[k];

		for (size_t i = 0; i < sh->cap; i++)
			if (sh->v[i].key > LSLOT_TOMB && sh->v[i].name)
				fn(fs, &sh->v[i], arg);
	}
}

/* ---- the kind map --------------------------------------------------------- */

int kind_lookup(h5fs *fs, uint64_t key, h5_obj_kind *kind)
{
	struct lslot *s;
	int found = 0;

	pthread_mutex_lock(&fs->lock);
	s = lobj_find_locked(fs, key);
	if (s && s->known) {
		*kind = (h5_obj_kind)(s->key & 3);
		found = 1;
	}
	pthread_mutex_unlock(&fs->lock);
	return found;
}

void kind_remember(h5fs *fs, uint64_t key, h5_obj_kind kind)
{
	struct lslot *s;

	if ((unsigned)kind > 3)
		return;
	pthread_mutex_lock(&fs->lock);
	/* (out of memory: nothing remembered; the map is only a speed-up) */
	s = lobj_get_locked(fs, key);
	if (s && !s->known) {
		s->key = key << 2 | (uint64_t)kind;
		s->known = 1;
	}
	pthread_mutex_unlock(&fs->lock);
}

/* The kinds of a listing's n objects (kind_lookup's for each, KIND_NONE
 * where none is known), under one lock. A miss reads a slot of a table
 * of tens of MB that no cache holds (a cold walk's listing looked each
 * name up apart, twice: 5-8% of its daemon CPU, issue 70). First the home
 * slot of every key is read in a pass of loads that depend on nothing:
 * the CPU keeps many of those misses in flight at once. A prefetch of
 * the key 8 places ahead, what was here before, left 72% of the inserts'
 * time on the home slot's load (perf annotate, a read-write cold walk of
 * 1 M objects, issue 82); the pass cut the inserts' share of the daemon's
 * CPU from 14.8% to 11.3%. */
static void lobj_touch_homes(h5fs *fs, const uint64_t *keys, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t h = lobj_mix(keys[i]);
		const struct lshard *sh = lobj_shard(fs, h);

		if (sh->cap)
			sum += sh->v[((h & 0xffffffffu) * (uint64_t)sh->cap) >> 32].key;
	}
	__asm__ volatile("" : : "r"(sum));     /* (the loads are what is wanted) */
}

/* Without the lock: a shard rebuilt meanwhile may pair an old array with
 * the new size, or an array given back; a prefetch never faults and
 * nothing is read from it */
void kind_prefetch(h5fs *fs, uint64_t ino)
{
	uint64_t h = lobj_mix(ino);
	struct lshard *sh = lobj_shard(fs, h);
	struct lslot *v = __atomic_load_n(&sh->v, __ATOMIC_RELAXED);
	size_t cap = __atomic_load_n(&sh->cap, __ATOMIC_RELAXED);

	if (cap)
		__builtin_prefetch(&v[((h & 0xffffffffu) * (uint64_t)cap) >> 32]);
}

void kind_lookup_many(h5fs *fs, const uint64_t *keys, uint8_t *kinds, struct kind_at *at, size_t n)
{
	pthread_mutex_lock(&fs->lock);
	lobj_touch_homes(fs, keys, n);
	for (size_t i = 0; i < n; i++) {
		struct lslot *s;

		/* (out of memory: none made; remembering probes then) */
		s = lobj_get_locked(fs, keys[i]);
		kinds[i] = s && s->known ? (uint8_t)(s->key & 3) : KIND_NONE;
		at[i].s = s && !s->known ? s : NULL;
		at[i].epoch = s ? lobj_shard(fs, lobj_mix(keys[i]))->epoch : 0;
		at[i].named = s && s->name;
	}
	pthread_mutex_unlock(&fs->lock);
}

/* kind_remember of each of keys[i] whose kinds[i] is not KIND_NONE, under
 * one lock (a listing's new kinds) */
void kind_remember_many(h5fs *fs, const uint64_t *keys, const uint8_t *kinds, const struct kind_at *at, size_t n)
{
	pthread_mutex_lock(&fs->lock);
	for (size_t i = 0; i < n; i++) {
		struct lslot *s = at[i].s;

		/* where kind_lookup_many made it, unless its shard was rebuilt
		 * or the slot let go since (another key's now, or a tombstone) */
		if (s && (lobj_shard(fs, lobj_mix(keys[i]))->epoch != at[i].epoch || s->key >> 2 != keys[i]))
			s = NULL;
		if (kinds[i] > 3) {
			/* not read: the slot made for it let go (kept if a
			 * record or a kind was put there meanwhile) */
			if (s)
				lobj_drop_locked(fs, s);
			continue;
		}
		/* (out of memory: nothing remembered; the map is only a speed-up) */
		if (!s)
			s = lobj_get_locked(fs, keys[i]);
		if (s && !s->known) {
			s->key = keys[i] << 2 | kinds[i];
			s->known = 1;
		}
	}
	pthread_mutex_unlock(&fs->lock);
}

void kind_forget_locked(h5fs *fs, uint64_t key)
{
	struct lslot *s = lobj_find_locked(fs, key);

	if (!s)
		return;
	s->known = 0;
	lobj_drop_locked(fs, s);        /* (a record keeps its slot) */
}

void kind_forget(h5fs *fs, uint64_t key)
{
	pthread_mutex_lock(&fs->lock);
	kind_forget_locked(fs, key);
	pthread_mutex_unlock(&fs->lock);
}

/* A new generation of FILE (live/live.c) may hold other kinds at the
 * addresses remembered: every kind forgotten, the records kept (a live
 * FILE's sweep resolves them again: node/fresh.c) */
void kind_forget_all(h5fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	for (size_t k = 0; k < LOBJ_SHARDS; k++) {
		struct lshard *sh = &fs->lobj[k];

		for (size_t i = 0; i < sh->cap; i++)
			if (sh->v[i].key > LSLOT_TOMB) {
				sh->v[i].known = 0;
				lobj_drop_locked(fs, &sh->v[i]);
			}
		lshard_shrink(fs, sh);  /* (the records are what is left) */
	}
	pthread_mutex_unlock(&fs->lock);
}

/* ---- the records' names --------------------------------------------------- */

/* An entry: its parent directory's node id (8 bytes, at a 4-byte unit: read
 * and written by memcpy), the record's birth tag (4 bytes: member/export.c
 * export_gen; kept here, not in a set of its own by node id, which took
 * 16 bytes a slot three quarters full at most: 134-268 MB after a walk of
 * 10 M objects h5fs made, issue 82) and the name, NUL-ended, in 4-byte
 * units; a free one chains the next free one of its size by its first
 * unit. Unit 0 is no entry. (The parent was a 4-byte code, which a group
 * numbered by its address past FILE's first 2 GiB did not fit: every child
 * of such a group was a struct node of ~470 bytes instead of a record, 2.8
 * M of them, 1.3 GB, in a walk of a 3.3 GB FILE of 10 M objects, issue
 * 82.) */
#define LNAME_PARENT 8
#define LNAME_TAG 4
#define LNAME_HEAD (LNAME_PARENT + LNAME_TAG)
#define LNAME_UNITS(nlen) ((LNAME_HEAD + (nlen) + 1 + 3) / 4)
_Static_assert(LNAME_UNITS(H5FS_NAME_MAX) < 68, "names_free covers every size");

static uint32_t *lname_at(h5fs *fs, uint32_t ref)
{
	return (uint32_t *)(void *)(fs->names + (size_t)ref * 4);
}

/* The parents a record may name: the root, a (parent, name) number or a
 * group numbered by its address (H5FS_DIRADDR_BIT, with H5FS_SYNTH_BIT);
 * others have none (their names are kept in nodes). The code is the id. */
bool lname_parent_code(uint64_t parent, uint64_t *code)
{
	uint64_t low = parent & ~(H5FS_SYNTH_BIT | H5FS_DIRADDR_BIT);

	if (parent != FUSE_ROOT_ID && (!(parent & H5FS_SYNTH_BIT) || low == 0))
		return false;
	*code = parent;
	return true;
}

uint64_t lname_parent(h5fs *fs, uint32_t ref)
{
	uint64_t c;

	memcpy(&c, lname_at(fs, ref), sizeof(c));
	return c;
}

void lname_set_parent(h5fs *fs, uint32_t ref, uint64_t code)
{
	memcpy(lname_at(fs, ref), &code, sizeof(code));
}

uint32_t lname_tag(h5fs *fs, uint32_t ref)
{
	return lname_at(fs, ref)[LNAME_PARENT / 4];
}

void lname_set_tag(h5fs *fs, uint32_t ref, uint32_t tag)
{
	lname_at(fs, ref)[LNAME_PARENT / 4] = tag;
}

const char *lname_str(h5fs *fs, uint32_t ref)
{
	return fs->names + (size_t)ref * 4 + LNAME_HEAD;
}

uint32_t lname_new_locked(h5fs *fs, uint64_t code, const char *name)
{
	size_t nlen = strlen(name), u = LNAME_UNITS(nlen);
	uint32_t ref;

	if (nlen == 0 || nlen > H5FS_NAME_MAX)
		return 0;
	if (fs->names_free[u]) {
		ref = fs->names_free[u];
		fs->names_free[u] = *lname_at(fs, ref);
	} else {
		if (fs->names_len + u * 4 > fs->names_cap) {
			size_t ncap = fs->names_cap ? fs->names_cap * 2 : (size_t)256 << 10;
			void *p = fs->names ? mremap(fs->names, fs->names_cap, ncap, MREMAP_MAYMOVE)
					    : mmap(NULL, ncap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
						   -1, 0);

			if (p == MAP_FAILED || ncap / 4 > UINT32_MAX)
				return 0;
			fs->names = p;
			fs->names_cap = ncap;
			if (!fs->names_len)
				fs->names_len = 4;      /* (ref 0: none) */
		}
		ref = (uint32_t)(fs->names_len / 4);
		fs->names_len += u * 4;
	}
	lname_set_parent(fs, ref, code);
	lname_set_tag(fs, ref, 0);
	memcpy(fs->names + (size_t)ref * 4 + LNAME_HEAD, name, nlen + 1);
	return ref;
}

void lname_free_locked(h5fs *fs, uint32_t ref)
{
	size_t u = LNAME_UNITS(strlen(lname_str(fs, ref)));

	*lname_at(fs, ref) = fs->names_free[u];
	fs->names_free[u] = ref;
}

/* ---- the generations records hold ---------------------------------------- */

uint8_t lgen_take_locked(h5fs *fs, struct gen *g, struct timespec ft)
{
	uint8_t freei = 0;

	for (uint8_t i = 1; i < LGEN_MAX; i++) {
		if (fs->lgen[i].g == g && fs->lgen[i].ft.tv_sec == ft.tv_sec && fs->lgen[i].ft.tv_nsec == ft.tv_nsec) {
			fs->lgen[i].n++;
			return i;
		}
		if (!fs->lgen[i].g && !freei)
			freei = i;
	}
	if (freei) {
		fs->lgen[freei].g = g;
		fs->lgen[freei].n = 1;
		fs->lgen[freei].ft = ft;
		gen_hold(g);
	}
	return freei;
}

struct gen *lgen_of(const h5fs *fs, uint8_t i)
{
	return i ? fs->lgen[i].g : NULL;
}

struct gen *lgen_put_locked(h5fs *fs, uint8_t i, bool keep_ref)
{
	struct gen *g;

	if (!i)
		return NULL;
	g = fs->lgen[i].g;
	if (--fs->lgen[i].n > 0) {
		if (keep_ref)
			gen_hold(g);
		return keep_ref ? g : NULL;
	}
	fs->lgen[i].g = NULL;
	return g;       /* (the index's reference) */
}

void lobj_free_all(h5fs *fs)
{
	for (size_t i = 1; i < LGEN_MAX; i++) {
		if (fs->lgen[i].g)
			gen_release(fs->lgen[i].g);
		fs->lgen[i].g = NULL;
		fs->lgen[i].n = 0;
	}
	for (size_t k = 0; k < LOBJ_SHARDS; k++) {
		struct lslots a = { fs->lobj[k].v, fs->lobj[k].res, fs->lobj[k].dirty };

		lslots_unmap(&a);
		memset(&fs->lobj[k], 0, sizeof(fs->lobj[k]));
	}
	lslots_unmap(&fs->lobj_spare);
	if (fs->names)
		munmap(fs->names, fs->names_cap);
	fs->names = NULL;
	fs->names_len = fs->names_cap = 0;
	memset(fs->names_free, 0, sizeof(fs->names_free));
	fs->nlnodes = 0;
}
