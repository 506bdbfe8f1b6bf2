/*
 * light.c - stat-only objects (fs.h struct lnode; callers of the _locked
 * functions hold fs->lock): what a name the kernel keeps costs when
 * nothing but stat asked for it (issue 64): kept at a lookup, answering
 * lookup and getattr, made a struct node with no I/O when anything else
 * is asked (node_table.c node_find_locked), kept light across a live
 * FILE's new generation (light_refresh, node/fresh.c light_sweep).
 */
#include "fs.h"
#include "table.h"

#include "hash.h"

#include <sys/mman.h>

static size_t light_bucket(const void *e, size_t cap) { return hash_u64(LNODE_INO((const struct lnode *)e), cap); }

struct lnode **light_slot_locked(h5fs *fs, uint64_t ino)
{
	struct lnode **pp = &fs->lnodes[hash_u64(ino, fs->lnodes_cap)];

	while (*pp && LNODE_INO(*pp) != ino)
		pp = &(*pp)->next;
	return pp;
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
	const struct node *p = node_full_find_locked(fs, l->parent);

	return p ? h5_path_join(p->path, l->name) : NULL;
}

/* l's parent directory node counts one record less (l freed or made a node) */
static void light_unparent_locked(h5fs *fs, const struct lnode *l)
{
	struct node *p = node_full_find_locked(fs, l->parent);

	if (p && p->lkids)
		p->lkids--;
}

/* *pp made a struct node (no I/O: what its lookup read), in the table in
 * its place; NULL when out of memory (the caller sees no node: ESTALE). */
struct node *light_promote_locked(h5fs *fs, struct lnode **pp)
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
	p = node_full_find_locked(fs, parent);
	if (g == fs->gen && p && strlen(fresh->path) > strlen(p->path) &&
	    path_under(p->path, name, fresh->path, strlen(fresh->path)) && !node_full_find_locked(fs, fresh->ino) &&
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
		table_rehash((void ***)&fs->lnodes, &fs->lnodes_cap, fs->nlnodes, offsetof(struct lnode, next),
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
	if (!fs->nlnodes || node_full_find_locked(fs, ino))
		goto out;
	pp = light_slot_locked(fs, ino);
	l = *pp;
	np = node_full_find_locked(fs, parent);
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
	if (fs->nlnodes && !node_full_find_locked(fs, ino) && (l = *light_slot_locked(fs, ino)) && l->gen == fs->gen) {
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
			const struct node *p = node_full_find_locked(fs, (*pp)->parent);

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
	if (fs->nlnodes && !node_full_find_locked(fs, ino) && (l = *light_slot_locked(fs, ino)) && l->gen != g)
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
	if (!l || g != fs->gen || node_full_find_locked(fs, ino))
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
