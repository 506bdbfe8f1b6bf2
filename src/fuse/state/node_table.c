/*
 * node_table.c - the single-file mount's tables (callers hold fs->lock):
 * nodes by node id (a stat-only object, light.c, made a node by
 * node_find_locked when anything else is asked of it), the (parent, name)
 * -> synthetic number table, and the object kind map that speeds up
 * readdir. What the numbers mean, and the locking rules, are in
 * node.c's header comment.
 */
#include "fs.h"
#include "table.h"

#include "hash.h"


/* ---- hash tables (callers hold fs->lock) --------------------------------- */

/* Double a chained table when it is full; on allocation failure keep the
 * old one (longer chains, still correct). */
void table_rehash(void ***tab, size_t *cap, size_t n, size_t next_off,
	    size_t (*bucket)(const void *e, size_t cap))
{
	size_t ncap = *cap * 2, i;
	void **nt;

	if (n < *cap)
		return;
	nt = calloc(ncap, sizeof(*nt));
	if (!nt)
		return;
	for (i = 0; i < *cap; i++) {
		void *e = (*tab)[i];

		while (e) {
			void **nextp = (void **)((char *)e + next_off);
			void *next = *nextp;
			size_t b = bucket(e, ncap);

			*nextp = nt[b];
			nt[b] = e;
			e = next;
		}
	}
	free(*tab);
	*tab = nt;
	*cap = ncap;
}

static size_t node_bucket(const void *e, size_t cap) { return hash_u64(((const struct node *)e)->ino, cap); }
static size_t synth_bucket(const void *e, size_t cap)
{
	const struct synth *s = e;

	return hash_name(s->parent, s->name, cap);
}

struct node *node_full_find_locked(h5fs *fs, uint64_t ino)
{
	struct node *n = fs->nodes[hash_u64(ino, fs->nodes_cap)];

	while (n && n->ino != ino)
		n = n->next;
	return n;
}

struct node *node_find_locked(h5fs *fs, uint64_t ino)
{
	struct node *n = node_full_find_locked(fs, ino);
	struct lnode **pp;

	if (n || !fs->nlnodes)
		return n;
	pp = light_slot_locked(fs, ino);
	return *pp ? light_promote_locked(fs, pp) : NULL;
}

void node_insert_locked(h5fs *fs, struct node *n)
{
	size_t b;

	table_rehash((void ***)&fs->nodes, &fs->nodes_cap, fs->nnodes, offsetof(struct node, next), node_bucket);
	b = hash_u64(n->ino, fs->nodes_cap);
	n->next = fs->nodes[b];
	fs->nodes[b] = n;
	fs->nnodes++;
}

void node_remove_locked(h5fs *fs, struct node *n)
{
	struct node **pp = &fs->nodes[hash_u64(n->ino, fs->nodes_cap)];

	while (*pp && *pp != n)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = n->next;
		fs->nnodes--;
	}
}

/* The node for ino, or NULL. See the header comment for why the pointer
 * stays valid after the lock is dropped. */
struct node *node_get(h5fs *fs, fuse_ino_t ino)
{
	struct node *n;

	pthread_mutex_lock(&fs->lock);
	n = node_find_locked(fs, ino);
	pthread_mutex_unlock(&fs->lock);
	return n;
}

struct node *node_peek(h5fs *fs, fuse_ino_t ino)
{
	struct node *n;

	pthread_mutex_lock(&fs->lock);
	n = node_full_find_locked(fs, ino);
	pthread_mutex_unlock(&fs->lock);
	return n;
}

uint64_t synth_ino(h5fs *fs, uint64_t parent, const char *name)
{
	size_t b;
	struct synth *s;
	uint64_t ino = 0;

	pthread_mutex_lock(&fs->lock);
	b = hash_name(parent, name, fs->synth_cap);
	for (s = fs->synth[b]; s; s = s->next)
		if (s->parent == parent && strcmp(s->name, name) == 0) {
			ino = s->ino;
			goto out;
		}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->name = strdup(name))) {
		free(s);
		goto out;
	}
	s->parent = parent;
	s->ino = H5FS_SYNTH_BIT | fs->next_synth++;
	ino = s->ino;
	table_rehash((void ***)&fs->synth, &fs->synth_cap, fs->nsynth, offsetof(struct synth, next), synth_bucket);
	b = hash_name(parent, name, fs->synth_cap);
	s->next = fs->synth[b];
	fs->synth[b] = s;
	fs->nsynth++;
out:
	pthread_mutex_unlock(&fs->lock);
	return ino;   /* 0 only when out of memory */
}

/* The (parent, name) number `old` given up (a live FILE's change left
 * its node stale, member/read.c renew_synth): the name gets a new one, so the
 * kernel never sees one node id for two objects. 0: out of memory. */
uint64_t synth_renew(h5fs *fs, uint64_t parent, const char *name, uint64_t old)
{
	struct synth *s;
	uint64_t ino = 0;

	pthread_mutex_lock(&fs->lock);
	for (s = fs->synth[hash_name(parent, name, fs->synth_cap)]; s; s = s->next)
		if (s->parent == parent && strcmp(s->name, name) == 0) {
			if (s->ino == old)
				s->ino = H5FS_SYNTH_BIT | fs->next_synth++;
			ino = s->ino;
			break;
		}
	pthread_mutex_unlock(&fs->lock);
	return ino ? ino : synth_ino(fs, parent, name);
}

/* A directory's node id is for the kernel only (readdir and stat show
 * st_ino): when the kernel forgets the node, its entry goes too, so the
 * table holds the directories in use, not every path ever walked (a file
 * whose groups are linked many times over has very many paths). A later
 * lookup of the path gets a new number. */
/* The entry *pp (if any) out of its chain, freed. */
static void synth_unlink_locked(h5fs *fs, struct synth **pp)
{
	struct synth *s = *pp;

	if (!s)
		return;
	*pp = s->next;
	fs->nsynth--;
	free(s->name);
	free(s);
}

void synth_drop_locked(h5fs *fs, const struct node *n)
{
	const char *name = strrchr(n->path, '/');
	struct synth **pp;

	name = name ? name + 1 : n->path;
	pp = &fs->synth[hash_name(n->parent, name, fs->synth_cap)];
	while (*pp && (*pp)->ino != n->ino)
		pp = &(*pp)->next;
	synth_unlink_locked(fs, pp);
}

void synth_forget_locked(h5fs *fs, uint64_t parent, const char *name)
{
	struct synth **pp = &fs->synth[hash_name(parent, name, fs->synth_cap)];

	while (*pp && ((*pp)->parent != parent || strcmp((*pp)->name, name) != 0))
		pp = &(*pp)->next;
	synth_unlink_locked(fs, pp);
}

void synth_forget(h5fs *fs, uint64_t parent, const char *name)
{
	pthread_mutex_lock(&fs->lock);
	synth_forget_locked(fs, parent, name);
	pthread_mutex_unlock(&fs->lock);
}

int synth_adopt_locked(h5fs *fs, uint64_t parent, const char *name, uint64_t ino)
{
	struct synth *s;
	size_t b = hash_name(parent, name, fs->synth_cap);

	for (s = fs->synth[b]; s; s = s->next)
		if (s->parent == parent && strcmp(s->name, name) == 0) {
			s->ino = ino;
			return 0;
		}
	s = calloc(1, sizeof(*s));
	if (!s || !(s->name = strdup(name))) {
		free(s);
		return ENOMEM;
	}
	s->parent = parent;
	s->ino = ino;
	table_rehash((void ***)&fs->synth, &fs->synth_cap, fs->nsynth, offsetof(struct synth, next), synth_bucket);
	b = hash_name(parent, name, fs->synth_cap);
	s->next = fs->synth[b];
	fs->synth[b] = s;
	fs->nsynth++;
	return 0;
}

/* ---- the kind map (fs->kinds): linear probing over key << 2 | kind ---- */

#define KIND_TOMB ((uint64_t)1)         /* key 0 is no object's (ino >= 2) */
#define KIND_KEY_MAX ((uint64_t)1 << 62)

/* The slot of key, or of the first free place on its probe (its slot
 * value 0 then). Callers hold fs->lock. */
static size_t kind_slot_locked(const h5fs *fs, uint64_t key)
{
	size_t mask = fs->kinds_cap - 1, i = hash_u64(key, fs->kinds_cap), tomb = SIZE_MAX;

	for (;; i = (i + 1) & mask) {
		uint64_t v = fs->kinds[i];

		if (v == 0)
			return tomb != SIZE_MAX ? tomb : i;
		if (v == KIND_TOMB) {
			if (tomb == SIZE_MAX)
				tomb = i;
		} else if (v >> 2 == key) {
			return i;
		}
	}
}

/* Grow (or clean of tombstones) so one more fits under 3/4; false when out
 * of memory (the map is only a speed-up: nothing is remembered). */
static bool kind_room_locked(h5fs *fs)
{
	size_t ncap = fs->kinds_cap, ocap = fs->kinds_cap;
	uint64_t *old = fs->kinds, *nt;

	if ((fs->kinds_used + 1) * 4 <= fs->kinds_cap * 3)
		return true;
	if ((fs->nkinds + 1) * 2 > ocap)
		ncap = ocap * 2;
	nt = calloc(ncap, sizeof(*nt));
	if (!nt)
		return false;
	fs->kinds = nt;
	fs->kinds_cap = ncap;
	fs->kinds_used = 0;
	for (size_t i = 0; i < ocap; i++)
		if (old[i] > KIND_TOMB) {
			nt[kind_slot_locked(fs, old[i] >> 2)] = old[i];
			fs->kinds_used++;
		}
	free(old);
	return true;
}

void kind_remember(h5fs *fs, uint64_t addr, h5_obj_kind kind)
{
	size_t i;

	if (addr == 0 || addr >= KIND_KEY_MAX || (unsigned)kind > 3)
		return;
	pthread_mutex_lock(&fs->lock);
	if (!kind_room_locked(fs))
		goto out;
	i = kind_slot_locked(fs, addr);
	if (fs->kinds[i] > KIND_TOMB)
		goto out;               /* (known: kept) */
	if (fs->kinds[i] == 0)
		fs->kinds_used++;
	fs->kinds[i] = addr << 2 | (uint64_t)kind;
	fs->nkinds++;
out:
	pthread_mutex_unlock(&fs->lock);
}

bool node_storage_gone(h5fs *fs, const struct node *n)
{
	bool gone;

	if (!__atomic_load_n(&n->unlinked, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&fs->lock);
	gone = n->unlinked;
	for (size_t i = 0; gone && i < fs->nodes_cap; i++)
		for (struct node *o = fs->nodes[i]; o && gone; o = o->next)
			if (o->addr == n->addr && o->f == n->f && o->gone)
				gone = false;
	pthread_mutex_unlock(&fs->lock);
	return gone;
}

void kind_forget_locked(h5fs *fs, uint64_t addr)
{
	size_t i;

	if (!fs->kinds_cap || addr == 0 || addr >= KIND_KEY_MAX)
		return;
	i = kind_slot_locked(fs, addr);
	if (fs->kinds[i] > KIND_TOMB) {
		fs->kinds[i] = KIND_TOMB;
		fs->nkinds--;
	}
}

void kind_forget(h5fs *fs, uint64_t addr)
{
	pthread_mutex_lock(&fs->lock);
	kind_forget_locked(fs, addr);
	pthread_mutex_unlock(&fs->lock);
}

/* A new generation of FILE (live/live.c) may hold other kinds at the
 * addresses remembered. */
void kind_forget_all(h5fs *fs)
{
	pthread_mutex_lock(&fs->lock);
	memset(fs->kinds, 0, fs->kinds_cap * sizeof(*fs->kinds));
	fs->nkinds = fs->kinds_used = 0;
	pthread_mutex_unlock(&fs->lock);
}

int kind_lookup(h5fs *fs, uint64_t addr, h5_obj_kind *kind)
{
	size_t i;
	int found = 0;

	if (addr == 0 || addr >= KIND_KEY_MAX)
		return 0;
	pthread_mutex_lock(&fs->lock);
	i = kind_slot_locked(fs, addr);
	if (fs->kinds[i] > KIND_TOMB) {
		*kind = (h5_obj_kind)(fs->kinds[i] & 3);
		found = 1;
	}
	pthread_mutex_unlock(&fs->lock);
	return found;
}
