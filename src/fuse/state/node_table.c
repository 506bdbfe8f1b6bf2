/*
 * node_table.c - the single-file mount's tables (callers hold fs->lock):
 * nodes by node id, the (parent, name) -> synthetic number table, and the
 * object kind map that speeds up readdir. What the numbers mean, and the
 * locking rules, are in node.c's header comment.
 */
#include "fs.h"

#include "hash.h"

#include "hash.h"

/* ---- hash tables (callers hold fs->lock) --------------------------------- */

/* Double a chained table when it is full; on allocation failure keep the
 * old one (longer chains, still correct). */
static void rehash(void ***tab, size_t *cap, size_t n, size_t next_off,
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
static size_t kind_bucket(const void *e, size_t cap) { return hash_u64(((const struct kind_ent *)e)->addr, cap); }

struct node *node_find_locked(h5fs *fs, uint64_t ino)
{
	struct node *n = fs->nodes[hash_u64(ino, fs->nodes_cap)];

	while (n && n->ino != ino)
		n = n->next;
	return n;
}

void node_insert_locked(h5fs *fs, struct node *n)
{
	size_t b;

	rehash((void ***)&fs->nodes, &fs->nodes_cap, fs->nnodes, offsetof(struct node, next), node_bucket);
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
	rehash((void ***)&fs->synth, &fs->synth_cap, fs->nsynth, offsetof(struct synth, next), synth_bucket);
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
	rehash((void ***)&fs->synth, &fs->synth_cap, fs->nsynth, offsetof(struct synth, next), synth_bucket);
	b = hash_name(parent, name, fs->synth_cap);
	s->next = fs->synth[b];
	fs->synth[b] = s;
	fs->nsynth++;
	return 0;
}

void kind_remember(h5fs *fs, uint64_t addr, h5_obj_kind kind)
{
	struct kind_ent *k;
	size_t b;

	pthread_mutex_lock(&fs->lock);
	if (fs->nkinds >= H5FS_KIND_MAP_MAX)
		goto out;
	for (k = fs->kinds[hash_u64(addr, fs->kinds_cap)]; k; k = k->next)
		if (k->addr == addr)
			goto out;
	k = malloc(sizeof(*k));
	if (!k)
		goto out;
	k->addr = addr;
	k->kind = kind;
	rehash((void ***)&fs->kinds, &fs->kinds_cap, fs->nkinds, offsetof(struct kind_ent, next), kind_bucket);
	b = hash_u64(addr, fs->kinds_cap);
	k->next = fs->kinds[b];
	fs->kinds[b] = k;
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
	struct kind_ent **pp;

	for (pp = fs->kinds_cap ? &fs->kinds[hash_u64(addr, fs->kinds_cap)] : NULL; pp && *pp; pp = &(*pp)->next)
		if ((*pp)->addr == addr) {
			struct kind_ent *k = *pp;

			*pp = k->next;
			free(k);
			fs->nkinds--;
			break;
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
	for (size_t i = 0; i < fs->kinds_cap; i++) {
		struct kind_ent *k = fs->kinds[i];

		while (k) {
			struct kind_ent *next = k->next;

			free(k);
			k = next;
		}
		fs->kinds[i] = NULL;
	}
	fs->nkinds = 0;
	pthread_mutex_unlock(&fs->lock);
}

int kind_lookup(h5fs *fs, uint64_t addr, h5_obj_kind *kind)
{
	struct kind_ent *k;
	int found = 0;

	pthread_mutex_lock(&fs->lock);
	for (k = fs->kinds[hash_u64(addr, fs->kinds_cap)]; k; k = k->next)
		if (k->addr == addr) {
			*kind = k->kind;
			found = 1;
			break;
		}
	pthread_mutex_unlock(&fs->lock);
	return found;
}
