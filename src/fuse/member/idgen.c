/* idgen.c - the generation of a node id (export.c's file handles; the
 * why is in export.c's header): the birth tag of the object an id shows
 * (export_tag: noted once any is shown), else one more for each object
 * removed at that address in this mount (fs->freed, a table of ids,
 * u64set, which export.c's breadth-first search uses too). Read by every
 * lookup (lookup.c), so apart from export.c, which looks names up. */
#include "member.h"
#include "table.h"

/* ---- node ids with a number (open addressing, at most three quarters
 * full; id 0 a free slot) ---- */

/* id's home slot: its bits mixed first (murmur3's finalizer), as node
 * ids are header addresses + 2, whose low bits repeat (aligned headers),
 * which linear probing from id % cap would pile into long runs */
static size_t u64set_home(const struct u64set *s, uint64_t id)
{
	id ^= id >> 33;
	id *= 0xff51afd7ed558ccdULL;
	id ^= id >> 33;
	id *= 0xc4ceb9fe1a85ec53ULL;
	id ^= id >> 33;
	return (size_t)(id % s->cap);
}

struct idgen *u64set_find(const struct u64set *s, uint64_t id)
{
	if (!s->cap)
		return NULL;
	for (size_t i = u64set_home(s, id);; i = (i + 1) % s->cap) {
		if (s->v[i].id == id)
			return &s->v[i];
		if (!s->v[i].id)
			return NULL;
	}
}

/* s's entries moved to a table of cap slots (cap > s->n); false when out
 * of memory (s as it was) */
static bool u64set_resize(struct u64set *s, size_t cap)
{
	struct u64set ns = { .cap = cap };
	bool m;

	ns.v = calloc(ns.cap, sizeof(*ns.v));
	if (!ns.v)
		return false;
	for (size_t i = 0; i < s->cap; i++)
		if (s->v[i].id)
			u64set_add(&ns, s->v[i].id, &m)->gen = s->v[i].gen;
	free(s->v);
	s->v = ns.v;
	s->cap = ns.cap;
	/* (n is read without the lock: export_gen's test) */
	__atomic_store_n(&s->n, ns.n, __ATOMIC_RELAXED);
	return true;
}

/* id's entry (id != 0), made (gen 0) when new: *made; NULL: out of
 * memory */
struct idgen *u64set_add(struct u64set *s, uint64_t id, bool *made)
{
	struct idgen *x = u64set_find(s, id);

	*made = !x;
	if (x)
		return x;
	/* (three quarters, not half: 16 bytes a slot) */
	if ((s->n + 1) * 4 > s->cap * 3 && !u64set_resize(s, s->cap ? s->cap * 2 : 64))
		return NULL;
	for (size_t i = u64set_home(s, id);; i = (i + 1) % s->cap)
		if (!s->v[i].id) {
			s->v[i].id = id;
			__atomic_store_n(&s->n, s->n + 1, __ATOMIC_RELAXED);
			return &s->v[i];
		}
}

void u64set_free(struct u64set *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void export_freed_locked(h5fs *fs, uint64_t ino)
{
	bool made;
	struct idgen *x = u64set_add(&fs->freed, ino, &made);

	/* (out of memory: an object made at that address later answers the
	 * old handle) */
	if (x)
		x->gen++;
}

void export_tag(h5fs *fs, uint32_t tag)
{
	if (tag && !__atomic_load_n(&fs->tagged, __ATOMIC_RELAXED))
		__atomic_store_n(&fs->tagged, true, __ATOMIC_RELAXED);
}

uint64_t export_gen(h5fs *fs, uint64_t ino)
{
	const struct idgen *x;
	const struct node *n;
	const struct lslot *s;
	uint64_t g = 0, key = ino;

	/* no tag shown and nothing removed in this mount: no lock (a mount
	 * of files other software made) */
	if (!__atomic_load_n(&fs->freed.n, __ATOMIC_RELAXED) && !__atomic_load_n(&fs->tagged, __ATOMIC_RELAXED))
		return 0;
	/* a group numbered by its address is known by that address */
	if (ino & H5FS_DIRADDR_BIT)
		key = ino & ~(H5FS_SYNTH_BIT | H5FS_DIRADDR_BIT);
	else if (ino & H5FS_SYNTH_BIT)
		key = 0;
	pthread_mutex_lock(&fs->lock);
	/* the tag of the object the id shows (its node's, or its record's) */
	if (__atomic_load_n(&fs->tagged, __ATOMIC_RELAXED)) {
		if ((n = node_full_find_locked(fs, ino)))
			g = n->tag;
		else if ((s = light_find_locked(fs, ino)))
			g = lname_tag(fs, s->name);
	}
	if (!g && key && (x = u64set_find(&fs->freed, key)))
		g = x->gen;
	pthread_mutex_unlock(&fs->lock);
	return g;
}
