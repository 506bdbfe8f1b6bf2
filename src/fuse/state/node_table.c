/*
 * node_table.c - the single-file mount's tables (callers hold fs->lock):
 * nodes by node id (a stat-only object, light.c, made a node by
 * node_find_locked when anything else is asked of it) and the (parent,
 * name) -> synthetic number table (the kind map that speeds up readdir is
 * in the objects table: objects.c). What the numbers mean, and the locking rules, are in
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
	struct node *n;

	size_t b = hash_u64(ino, NODES_SEEN);

	if (!(fs->nodes_seen[b / 64] >> (b % 64) & 1))
		return NULL;
	n = fs->nodes[hash_u64(ino, fs->nodes_cap)];

	while (n && n->ino != ino)
		n = n->next;
	return n;
}

struct node *node_find_locked(h5fs *fs, uint64_t ino)
{
	struct node *n = node_full_find_locked(fs, ino);
	struct lslot *s;

	if (n || !fs->nlnodes)
		return n;
	s = light_find_locked(fs, ino);
	return s ? light_promote_locked(fs, s) : NULL;
}

void node_insert_locked(h5fs *fs, struct node *n)
{
	size_t b;

	table_rehash((void ***)&fs->nodes, &fs->nodes_cap, fs->nnodes, offsetof(struct node, next), node_bucket);
	b = hash_u64(n->ino, fs->nodes_cap);
	n->next = fs->nodes[b];
	fs->nodes[b] = n;
	fs->nnodes++;
	b = hash_u64(n->ino, NODES_SEEN);
	fs->nodes_seen[b / 64] |= (uint64_t)1 << (b % 64);
}

/* nodes_seen anew from the table, when as many nodes left it since the
 * last time as it holds (and an eighth of its buckets: the walk of them
 * stays a few buckets a removal however large the table once grew) */
static void nodes_seen_rebuild(h5fs *fs)
{
	if (++fs->nodes_gone <= fs->nnodes || fs->nodes_gone <= fs->nodes_cap / 8)
		return;
	memset(fs->nodes_seen, 0, sizeof(fs->nodes_seen));
	for (size_t i = 0; i < fs->nodes_cap; i++)
		for (struct node *x = fs->nodes[i]; x; x = x->next) {
			size_t b = hash_u64(x->ino, NODES_SEEN);

			fs->nodes_seen[b / 64] |= (uint64_t)1 << (b % 64);
		}
	fs->nodes_gone = 0;
}

void node_remove_locked(h5fs *fs, struct node *n)
{
	struct node **pp = &fs->nodes[hash_u64(n->ino, fs->nodes_cap)];

	while (*pp && *pp != n)
		pp = &(*pp)->next;
	if (*pp) {
		*pp = n->next;
		fs->nnodes--;
		nodes_seen_rebuild(fs);
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
