/*
 * node_table.c - the single-file mount's tables (callers hold fs->lock):
 * nodes by node id, stat-only objects by node id (fs.h struct lnode: what
 * a name the kernel keeps costs when nothing but stat asked for it, issue
 * 64; made a node by node_find_locked when anything else is asked), the
 * (parent, name) -> synthetic number table, and the object kind map that
 * speeds up readdir. What the numbers mean, and the locking rules, are in
 * node.c's header comment.
 */
#include "fs.h"

#include "hash.h"

#include <sys/mman.h>

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
static size_t light_bucket(const void *e, size_t cap) { return hash_u64(LNODE_INO((const struct lnode *)e), cap); }

static struct node *full_find_locked(h5fs *fs, uint64_t ino)
{
	struct node *n = fs->nodes[hash_u64(ino, fs->nodes_cap)];

	while (n && n->ino != ino)
		n = n->next;
	return n;
}

static struct node *light_promote_locked(h5fs *fs, struct lnode **pp);

static struct lnode **light_slot_locked(h5fs *fs, uint64_t ino)
{
	struct lnode **pp = &fs->lnodes[hash_u64(ino, fs->lnodes_cap)];

	while (*pp && LNODE_INO(*pp) != ino)
		pp = &(*pp)->next;
	return pp;
}

struct node *node_find_locked(h5fs *fs, uint64_t ino)
{
	struct node *n = full_find_locked(fs, ino);
	struct lnode **pp;

	if (n || !fs->nlnodes)
		return n;
	pp = light_slot_locked(fs, ino);
	return *pp ? light_promote_locked(fs, pp) : NULL;
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

struct node *node_peek(h5fs *fs, fuse_ino_t ino)
{
	struct node *n;

	pthread_mutex_lock(&fs->lock);
	n = full_find_locked(fs, ino);
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

/* ---- stat-only objects (struct lnode) ------------------------------------ */

/* A slot of a slab holds a record and a name of up to 23 bytes (fs.h);
 * a slab is 1 MiB mapped apart from malloc's heap (malloc would place it
 * in the heap once its mmap threshold has risen, which a freed large
 * table makes it do: the heap's holes then stayed), and kept until the
 * unmount: its free slots serve the next walk. Longer names' records
 * are malloc's own. */
#define LNODE_SLOT 96
#define LSLAB_BYTES ((size_t)1 << 20)
struct lslab {
	struct lslab *next;
	char mem[];
};
#define LSLAB_SLOTS ((LSLAB_BYTES - sizeof(struct lslab)) / LNODE_SLOT)
_Static_assert(offsetof(struct lnode, name) <= 72, "struct lnode grew past 72 bytes");
_Static_assert(LNODE_SLOT % 8 == 0 && offsetof(struct lslab, mem) % 8 == 0, "slots keep their alignment");

/* A record for a name of nlen bytes (its other fields unset), or NULL */
static struct lnode *light_alloc_locked(h5fs *fs, size_t nlen)
{
	struct lnode *l;

	if (offsetof(struct lnode, name) + nlen + 1 > LNODE_SLOT) {
		l = malloc(offsetof(struct lnode, name) + nlen + 1);
		if (l)
			l->pooled = 0;
		return l;
	}
	if (!fs->lfree) {
		struct lslab *sl = mmap(NULL, LSLAB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (sl == MAP_FAILED)
			return NULL;
		sl->next = fs->lslabs;
		fs->lslabs = sl;
		for (size_t i = LSLAB_SLOTS; i-- > 0;) {
			struct lnode *x = (struct lnode *)(void *)(sl->mem + i * LNODE_SLOT);

			x->next = fs->lfree;
			fs->lfree = x;
		}
	}
	l = fs->lfree;
	fs->lfree = l->next;
	l->pooled = 1;
	return l;
}

static void light_free_locked(h5fs *fs, struct lnode *l)
{
	if (!l->pooled) {
		free(l);
		return;
	}
	l->next = fs->lfree;
	fs->lfree = l;
}

/* Whether the path h5_path_join(dir, name) is prefix or below it (its
 * first pl bytes are prefix's, followed by '/' or its end), without
 * building it */
static bool path_under(const char *dir, const char *name, const char *prefix, size_t pl)
{
	size_t dl = strlen(dir);
	bool sep = !(dl && dir[dl - 1] == '/');        /* (h5_path_join's) */

	if (pl == 0)
		return true;    /* (every path starts with '/') */
	if (pl < dl)
		return strncmp(dir, prefix, pl) == 0 && dir[pl] == '/';
	if (strncmp(dir, prefix, dl) != 0)
		return false;
	if (pl == dl)
		return sep;
	prefix += dl;
	if (sep && *prefix++ != '/')
		return false;
	/* (a name has no '/': only the whole name matches) */
	return strcmp(name, prefix) == 0;
}

static void light_stat(const h5fs *fs, const struct lnode *l, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)LNODE_INO(l);
	st->st_mode = l->mode;
	st->st_nlink = l->nlink;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_size = (off_t)l->size;
	st->st_blocks = (blkcnt_t)l->blocks;
	st->st_blksize = l->append_blk ? H5FS_APPEND_BLKSIZE : H5FS_BLKSIZE;
	st->st_mtim.tv_sec = (time_t)l->mtime_s;
	st->st_mtim.tv_nsec = (long)l->mtime_ns;
	st->st_atim = st->st_ctim = st->st_mtim;
}

char *light_path_locked(h5fs *fs, const struct lnode *l)
{
	const struct node *p = full_find_locked(fs, l->parent);

	return p ? h5_path_join(p->path, l->name) : NULL;
}

/* l's parent directory node counts one record less (l freed or made a node) */
static void light_unparent_locked(h5fs *fs, const struct lnode *l)
{
	struct node *p = full_find_locked(fs, l->parent);

	if (p && p->lkids)
		p->lkids--;
}

/* *pp made a struct node (no I/O: what its lookup read), in the table in
 * its place; NULL when out of memory (the caller sees no node: ESTALE). */
static struct node *light_promote_locked(h5fs *fs, struct lnode **pp)
{
	struct lnode *l = *pp;
	struct node *n = calloc(1, sizeof(*n));

	if (!n || !(n->path = light_path_locked(fs, l))) {
		free(n);
		return NULL;
	}
	light_unparent_locked(fs, l);
	pthread_rwlock_init(&n->lk, NULL);
	/* one a sweep let go: the current generation's, resolved again
	 * (node_fresh: checked 0 is no generation's number) */
	n->checked = l->gen ? l->gen->num : 0;
	if (!l->gen) {
		l->gen = fs->gen;
		gen_hold(l->gen);
	}
	n->ino = LNODE_INO(l);
	n->nlookup = l->nlookup;
	n->addr = l->addr;
	n->f = l->gen->f;
	h5_file_hold_related(n->f);
	n->parent = l->parent;
	n->kind = (h5_obj_kind)l->kind;
	n->type = NT_FILE;
	light_stat(fs, l, &n->st);
	n->gen = l->gen;                /* (its reference) */
	n->unlinked = l->unlinked;
	*pp = l->next;
	fs->nlnodes--;
	light_free_locked(fs, l);
	node_insert_locked(fs, n);
	return n;
}

/* Whether fresh (read in g) is what light_stat and light_promote_locked
 * make again exactly: FILE's own objects, numbered by their address,
 * times all one */
static bool light_fits(const h5fs *fs, const struct node *fresh, const struct gen *g)
{
	const struct stat *st = &fresh->st;
	return !(fresh->type != NT_FILE || fresh->vkind || (fresh->ino & H5FS_SYNTH_BIT) || fresh->f != g->f ||
		 fresh->ino != fresh->addr + 2 || (uint64_t)st->st_ino != fresh->ino || st->st_uid != fs->uid ||
		 st->st_gid != fs->gid || st->st_atim.tv_sec != st->st_mtim.tv_sec ||
		 st->st_atim.tv_nsec != st->st_mtim.tv_nsec || st->st_ctim.tv_sec != st->st_mtim.tv_sec ||
		 st->st_ctim.tv_nsec != st->st_mtim.tv_nsec ||
		 (st->st_blksize != H5FS_BLKSIZE && st->st_blksize != H5FS_APPEND_BLKSIZE) || st->st_size < 0 ||
		 st->st_blocks < 0 || (uint64_t)st->st_mode > UINT16_MAX || (uint64_t)st->st_nlink > UINT32_MAX ||
		 st->st_mtim.tv_nsec < 0 || st->st_mtim.tv_nsec >= 1000000000);
}

/* l's stat fields from fresh's (light_fits); true when any differed */
static bool light_set_stat(struct lnode *l, const struct node *fresh)
{
	const struct stat *st = &fresh->st;
	bool changed = l->size != (uint64_t)st->st_size || l->blocks != (uint64_t)st->st_blocks ||
		       l->mtime_s != (int64_t)st->st_mtim.tv_sec || l->mtime_ns != (uint32_t)st->st_mtim.tv_nsec ||
		       l->mode != (uint16_t)st->st_mode || l->nlink != (uint32_t)st->st_nlink ||
		       l->kind != (uint8_t)fresh->kind || l->append_blk != (st->st_blksize == H5FS_APPEND_BLKSIZE);

	l->size = (uint64_t)st->st_size;
	l->blocks = (uint64_t)st->st_blocks;
	l->mtime_s = (int64_t)st->st_mtim.tv_sec;
	l->mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	l->mode = (uint16_t)st->st_mode;
	l->nlink = (uint32_t)st->st_nlink;
	l->kind = (uint8_t)fresh->kind;
	l->append_blk = st->st_blksize == H5FS_APPEND_BLKSIZE;
	return changed;
}

bool light_keep(h5fs *fs, const struct node *fresh, struct gen *g, uint64_t parent)
{
	/* (fresh->path is the parent's path and the name: lookup.c) */
	const char *name = strrchr(fresh->path, '/') ? strrchr(fresh->path, '/') + 1 : fresh->path;
	size_t nlen = strlen(name);
	struct node *p;
	struct lnode *l;
	bool kept = false;

	if (!light_fits(fs, fresh, g))
		return false;
	pthread_mutex_lock(&fs->lock);
	/* another lookup made it meanwhile: that one is used (node_publish);
	 * the directory is a node while the kernel looks names up in it, and
	 * its path and the name make fresh's (its path is built so again) */
	p = full_find_locked(fs, parent);
	if (g == fs->gen && p && strlen(fresh->path) > strlen(p->path) &&
	    path_under(p->path, name, fresh->path, strlen(fresh->path)) && !full_find_locked(fs, fresh->ino) &&
	    !*light_slot_locked(fs, fresh->ino) && (l = light_alloc_locked(fs, nlen))) {
		size_t b;

		l->addr = fresh->addr;
		l->parent = parent;
		l->gen = g;
		l->nlookup = 1;
		(void)light_set_stat(l, fresh);
		l->unlinked = 0;
		memcpy(l->name, name, nlen + 1);
		p->lkids++;
		rehash((void ***)&fs->lnodes, &fs->lnodes_cap, fs->nlnodes, offsetof(struct lnode, next),
		       light_bucket);
		b = hash_u64(fresh->ino, fs->lnodes_cap);
		l->next = fs->lnodes[b];
		fs->lnodes[b] = l;
		fs->nlnodes++;
		gen_hold(g);
		kept = true;
	}
	pthread_mutex_unlock(&fs->lock);
	return kept;
}

/* *pp named name in directory node np now (a hard link's other name):
 * false when out of memory (unchanged) */
static bool light_rename_locked(h5fs *fs, struct lnode **pp, struct node *np, const char *name)
{
	struct lnode *l = *pp;

	if (strcmp(l->name, name) != 0) {
		size_t nlen = strlen(name);
		struct lnode *nl;
		uint8_t pooled;

		if (l->pooled && offsetof(struct lnode, name) + nlen + 1 <= LNODE_SLOT) {
			memcpy(l->name, name, nlen + 1);
		} else {
			nl = light_alloc_locked(fs, nlen);
			if (!nl)
				return false;
			pooled = nl->pooled;
			memcpy(nl, l, offsetof(struct lnode, name));
			nl->pooled = pooled;
			memcpy(nl->name, name, nlen + 1);
			*pp = nl;
			light_free_locked(fs, l);
			l = nl;
		}
	}
	if (l->parent != np->ino) {
		light_unparent_locked(fs, l);
		l->parent = np->ino;
		np->lkids++;
	}
	return true;
}

bool light_ref(h5fs *fs, uint64_t ino, uint64_t addr, const h5_file *f, uint64_t parent, const char *name,
	       struct stat *st)
{
	struct lnode **pp, *l;
	struct node *np;
	bool ok = false;

	pthread_mutex_lock(&fs->lock);
	if (!fs->nlnodes || full_find_locked(fs, ino))
		goto out;
	pp = light_slot_locked(fs, ino);
	l = *pp;
	np = full_find_locked(fs, parent);
	/* one of another generation, or of an object removed since (whose
	 * space this one may have taken), is made a node: the lookup's
	 * checks for those are struct node's; the entry the kernel makes
	 * now is the one whose directory l's path is built from */
	if (l && np && l->addr == addr && l->gen == fs->gen && l->gen->f == f && !l->unlinked &&
	    l->nlookup < UINT32_MAX && light_rename_locked(fs, pp, np, name)) {
		l = *pp;
		l->nlookup++;
		light_stat(fs, l, st);
		ok = true;
	}
out:
	pthread_mutex_unlock(&fs->lock);
	return ok;
}

bool light_getattr(h5fs *fs, uint64_t ino, struct stat *st)
{
	struct lnode *l;
	bool ok = false;

	pthread_mutex_lock(&fs->lock);
	if (fs->nlnodes && !full_find_locked(fs, ino) && (l = *light_slot_locked(fs, ino)) && l->gen == fs->gen) {
		light_stat(fs, l, st);
		ok = true;
	}
	pthread_mutex_unlock(&fs->lock);
	return ok;
}

bool light_unref_locked(h5fs *fs, uint64_t ino, uint64_t count, struct gen **release)
{
	struct lnode **pp, *l;

	*release = NULL;
	if (!fs->nlnodes)
		return false;
	pp = light_slot_locked(fs, ino);
	l = *pp;
	if (!l)
		return false;
	l->nlookup = count < l->nlookup ? l->nlookup - (uint32_t)count : 0;
	if (l->nlookup == 0) {
		*pp = l->next;
		fs->nlnodes--;
		light_unparent_locked(fs, l);
		*release = l->gen;
		light_free_locked(fs, l);
	}
	return true;
}

void light_unlinked_locked(h5fs *fs, const h5_file *f, uint64_t addr)
{
	struct lnode *l;

	if (!fs->nlnodes)
		return;
	/* (a struct lnode's node id is its object's address + 2) */
	l = *light_slot_locked(fs, addr + 2);
	if (l && l->addr == addr && (!l->gen || l->gen->f == f))
		l->unlinked = 1;
}

void light_promote_under_locked(h5fs *fs, const char *prefix)
{
	size_t pl = strlen(prefix);

	for (size_t i = 0; fs->nlnodes && i < fs->lnodes_cap; i++) {
		struct lnode **pp = &fs->lnodes[i];

		while (*pp) {
			const struct node *p = full_find_locked(fs, (*pp)->parent);

			if ((pl == 0 || (p && path_under(p->path, (*pp)->name, prefix, pl))) &&
			    light_promote_locked(fs, pp))
				continue;       /* *pp is the next one now */
			pp = &(*pp)->next;
		}
	}
}

void light_promote_kids_locked(h5fs *fs, struct node *dir)
{
	for (size_t i = 0; dir->lkids && fs->nlnodes && i < fs->lnodes_cap; i++) {
		struct lnode **pp = &fs->lnodes[i];

		while (*pp) {
			if ((*pp)->parent == dir->ino && light_promote_locked(fs, pp))
				continue;
			pp = &(*pp)->next;
		}
	}
}

struct light_old *light_old_list(h5fs *fs, const struct gen *g, size_t *n)
{
	struct light_old *v;

	*n = 0;
	pthread_mutex_lock(&fs->lock);
	v = malloc((fs->nlnodes ? fs->nlnodes : 1) * sizeof(*v));
	for (size_t i = 0; v && i < fs->lnodes_cap; i++)
		for (struct lnode *l = fs->lnodes[i]; l; l = l->next) {
			if (l->gen == g || *n >= fs->nlnodes)
				continue;
			v[*n].ino = LNODE_INO(l);
			v[*n].path = light_path_locked(fs, l);
			if (v[*n].path)
				(*n)++;
		}
	pthread_mutex_unlock(&fs->lock);
	return v;
}

char *light_old_path(h5fs *fs, uint64_t ino, const struct gen *g)
{
	struct lnode *l;
	char *path = NULL;

	pthread_mutex_lock(&fs->lock);
	if (fs->nlnodes && !full_find_locked(fs, ino) && (l = *light_slot_locked(fs, ino)) && l->gen != g)
		path = light_path_locked(fs, l);
	pthread_mutex_unlock(&fs->lock);
	return path;
}

int light_refresh(h5fs *fs, uint64_t ino, const struct node *fresh, struct gen *g)
{
	struct lnode **pp, *l;
	struct gen *old = NULL;
	int r = 0;

	pthread_mutex_lock(&fs->lock);
	pp = fs->nlnodes ? light_slot_locked(fs, ino) : NULL;
	l = pp ? *pp : NULL;
	/* forgotten, made a node, or no longer the current generation:
	 * nothing to do; refreshed by another meanwhile: current */
	if (!l || g != fs->gen || full_find_locked(fs, ino))
		goto out;
	if (l->gen == g) {
		r = 1;
		goto out;
	}
	if (!fresh || l->unlinked || fresh->ino != ino || fresh->addr != l->addr || !light_fits(fs, fresh, g)) {
		(void)light_promote_locked(fs, pp);     /* (NULL: out of memory; orphaned below) */
		goto out;
	}
	r = light_set_stat(l, fresh) ? 2 : 1;
	old = l->gen;
	l->gen = g;
	gen_hold(g);
out:
	pthread_mutex_unlock(&fs->lock);
	if (old)
		gen_release(old);       /* (outside the lock: may close a FILE) */
	return r;
}

uint64_t *light_orphan_old(h5fs *fs, size_t *n)
{
	struct gen **gens;
	uint64_t *v;
	size_t ng = 0;

	*n = 0;
	pthread_mutex_lock(&fs->lock);
	v = malloc((fs->nlnodes ? fs->nlnodes : 1) * sizeof(*v));
	gens = malloc((fs->nlnodes ? fs->nlnodes : 1) * sizeof(*gens));
	for (size_t i = 0; v && gens && i < fs->lnodes_cap; i++)
		for (struct lnode *l = fs->lnodes[i]; l; l = l->next)
			if (l->gen != fs->gen && *n < fs->nlnodes) {
				v[(*n)++] = LNODE_INO(l);
				if (l->gen)
					gens[ng++] = l->gen;
				l->gen = NULL;
			}
	pthread_mutex_unlock(&fs->lock);
	for (size_t i = 0; i < ng; i++)
		gen_release(gens[i]);   /* (outside the lock: may close a FILE) */
	free(gens);
	return v;
}

void light_free_all(h5fs *fs)
{
	for (size_t i = 0; fs->lnodes && i < fs->lnodes_cap; i++) {
		struct lnode *l = fs->lnodes[i];

		while (l) {
			struct lnode *next = l->next;

			gen_release(l->gen);
			if (!l->pooled)
				free(l);
			l = next;
		}
	}
	while (fs->lslabs) {
		struct lslab *next = fs->lslabs->next;

		munmap(fs->lslabs, LSLAB_BYTES);
		fs->lslabs = next;
	}
	fs->lfree = NULL;
	free(fs->lnodes);
	fs->lnodes = NULL;
	fs->nlnodes = 0;
}
