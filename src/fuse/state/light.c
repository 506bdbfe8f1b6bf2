/*
 * light.c - stat-only objects (fs.h struct lslot's records; callers of the
 * _locked functions hold fs->lock): what a name the kernel keeps costs when
 * nothing but stat asked for it (issue 64): kept at a lookup in the
 * objects table (objects.c, beside the kind map), answering lookup and
 * getattr, made a struct node with no I/O when anything else is asked
 * (node_table.c node_find_locked), kept light across a live FILE's new
 * generation (light_refresh, node/fresh.c light_sweep).
 */
#include "fs.h"
#include "table.h"

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

/* s's stat, as its lookup saw it (mt_file: FILE's time then; a record let
 * go of its generation shows the current one's, made a node and resolved
 * again before it is shown) */
static void light_stat(h5fs *fs, const struct lslot *s, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = (ino_t)LSLOT_INO(s);
	st->st_mode = S_IFREG | s->perm;
	st->st_nlink = s->nlink;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_size = (off_t)s->size;
	st->st_blocks = (blkcnt_t)s->blocks;
	st->st_blksize = s->append_blk ? H5FS_APPEND_BLKSIZE : H5FS_BLKSIZE;
	if (s->mt_file && s->gen)
		st->st_mtim = fs->lgen[s->gen].ft;
	else if (s->mt_file)
		st->st_mtim = gen_file_time(fs->gen->f);
	else
		st->st_mtim.tv_sec = (time_t)s->mtime_s;
	st->st_atim = st->st_ctim = st->st_mtim;
}

struct lslot *light_find_locked(h5fs *fs, uint64_t ino)
{
	struct lslot *s = fs->nlnodes ? lobj_find_locked(fs, ino) : NULL;

	return s && s->name ? s : NULL;
}

char *light_path_locked(h5fs *fs, const struct lslot *s)
{
	const struct node *p = node_full_find_locked(fs, lname_parent(fs, s->name));

	return p ? h5_path_join(p->path, lname_str(fs, s->name)) : NULL;
}

/* s's parent directory node counts one record less (s freed or made a node) */
static void light_unparent_locked(h5fs *fs, const struct lslot *s)
{
	struct node *p = node_full_find_locked(fs, lname_parent(fs, s->name));

	if (p && p->lkids)
		p->lkids--;
}

/* s's record gone (its slot stays the kind map's entry): the generation
 * reference it held, when it was the last of it, for the caller to release
 * (keep_ref: a reference for the caller in any case) */
static struct gen *light_drop_locked(h5fs *fs, struct lslot *s, bool keep_ref)
{
	struct gen *g = lgen_put_locked(fs, s->gen, keep_ref);

	light_unparent_locked(fs, s);
	lname_free_locked(fs, s->name);
	s->name = 0;
	s->gen = 0;
	fs->nlnodes--;
	lobj_drop_locked(fs, s);
	return g;
}

struct node *light_promote_locked(h5fs *fs, struct lslot *s)
{
	struct node *n = calloc(1, sizeof(*n));

	if (!n || !(n->path = light_path_locked(fs, s))) {
		free(n);
		return NULL;
	}
	pthread_rwlock_init(&n->lk, NULL);
	n->ino = LSLOT_INO(s);
	n->nlookup = s->nlookup;
	n->addr = n->ino - 2;
	n->parent = lname_parent(fs, s->name);
	n->kind = (h5_obj_kind)s->kind;
	n->tag = lname_tag(fs, s->name);        /* (export_gen reads it there now) */
	n->type = NT_FILE;
	light_stat(fs, s, &n->st);
	n->unlinked = s->unlinked;
	/* one a sweep let go: the current generation's, resolved again
	 * (node_fresh: checked 0 is no generation's number) */
	if (s->gen) {
		n->gen = light_drop_locked(fs, s, true);        /* (its reference) */
		n->checked = n->gen->num;
	} else {
		(void)light_drop_locked(fs, s, false);
		n->gen = fs->gen;
		gen_hold(n->gen);
		n->checked = 0;
	}
	n->f = n->gen->f;
	h5_file_hold_related(n->f);
	node_insert_locked(fs, n);
	return n;
}

/* Whether fresh (read in g, whose FILE's time is ft now) is what
 * light_stat and light_promote_locked make again exactly: FILE's own
 * objects, numbered by their address, times all one, and the packed
 * fields hold its values (fs.h) */
static bool light_fits(const h5fs *fs, const struct node *fresh, const struct gen *g, struct timespec ft)
{
	const struct stat *st = &fresh->st;

	if (fresh->type != NT_FILE || fresh->vkind || (fresh->ino & H5FS_SYNTH_BIT) || fresh->f != g->f ||
	    fresh->ino != fresh->addr + 2 || (uint64_t)st->st_ino != fresh->ino || st->st_uid != fs->uid ||
	    st->st_gid != fs->gid || st->st_atim.tv_sec != st->st_mtim.tv_sec ||
	    st->st_atim.tv_nsec != st->st_mtim.tv_nsec || st->st_ctim.tv_sec != st->st_mtim.tv_sec ||
	    st->st_ctim.tv_nsec != st->st_mtim.tv_nsec ||
	    (st->st_blksize != H5FS_BLKSIZE && st->st_blksize != H5FS_APPEND_BLKSIZE) || st->st_size < 0 ||
	    (uint64_t)st->st_size >= (uint64_t)1 << 48 || st->st_blocks < 0 || (uint64_t)st->st_blocks > UINT32_MAX ||
	    (st->st_mode & S_IFMT) != S_IFREG || (st->st_mode & ~(mode_t)(S_IFMT | 07777)) ||
	    st->st_nlink < 1 || st->st_nlink > 63 || (unsigned)fresh->kind > 3)
		return false;
	if (st->st_mtim.tv_sec == ft.tv_sec && st->st_mtim.tv_nsec == ft.tv_nsec)
		return true;
	return st->st_mtim.tv_nsec == 0 && st->st_mtim.tv_sec >= 0 && (uint64_t)st->st_mtim.tv_sec <= UINT32_MAX;
}

/* s's stat fields from fresh's (light_fits), FILE's time ft */
static void light_set_stat(struct lslot *s, const struct node *fresh, struct timespec ft)
{
	const struct stat *st = &fresh->st;

	s->size = (uint64_t)st->st_size;
	s->blocks = (uint32_t)st->st_blocks;
	s->mt_file = st->st_mtim.tv_sec == ft.tv_sec && st->st_mtim.tv_nsec == ft.tv_nsec;
	s->mtime_s = s->mt_file ? 0 : (uint32_t)st->st_mtim.tv_sec;
	s->perm = st->st_mode & 07777;
	s->nlink = (uint8_t)st->st_nlink;
	s->kind = (uint8_t)fresh->kind;
	s->append_blk = st->st_blksize == H5FS_APPEND_BLKSIZE;
}

bool light_keep(h5fs *fs, const struct node *fresh, struct gen *g, uint64_t parent)
{
	/* (fresh->path is the parent's path and the name: lookup.c) */
	const char *name = strrchr(fresh->path, '/') ? strrchr(fresh->path, '/') + 1 : fresh->path;
	struct node *p;
	struct lslot *s;
	uint64_t code;
	bool kept = false;
	/* (read outside fs->lock: the engine's stamp has a lock of its own) */
	struct timespec ft = gen_file_time(g->f);

	if (!light_fits(fs, fresh, g, ft) || !lname_parent_code(parent, &code))
		return false;
	pthread_mutex_lock(&fs->lock);
	/* another lookup made it meanwhile: that one is used (node_publish);
	 * the directory is a node while the kernel looks names up in it, and
	 * its path and the name make fresh's (its path is built so again) */
	p = node_full_find_locked(fs, parent);
	if (g == fs->gen && p && strlen(fresh->path) > strlen(p->path) &&
	    path_under(p->path, name, fresh->path, strlen(fresh->path)) && !node_full_find_locked(fs, fresh->ino) &&
	    (s = lobj_get_locked(fs, fresh->ino)) && !s->name) {
		uint32_t ref = lname_new_locked(fs, code, name);
		uint8_t gi = ref ? lgen_take_locked(fs, g, ft) : 0;

		if (gi) {
			s->name = ref;
			lname_set_tag(fs, ref, fresh->tag);
			s->gen = gi;
			s->nlookup = 1;
			light_set_stat(s, fresh, ft);
			s->unlinked = 0;
			p->lkids++;
			fs->nlnodes++;
			kept = true;
		} else {
			if (ref)
				lname_free_locked(fs, ref);
			lobj_drop_locked(fs, s);
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return kept;
}

/* s named name in directory node np now (a hard link's other name):
 * false when out of memory (unchanged) */
static bool light_rename_locked(h5fs *fs, struct lslot *s, struct node *np, const char *name)
{
	uint64_t oldp = lname_parent(fs, s->name);
	uint64_t code;

	if (!lname_parent_code(np->ino, &code))
		return false;
	if (strcmp(lname_str(fs, s->name), name) != 0) {
		uint32_t ref = lname_new_locked(fs, code, name);

		if (!ref)
			return false;
		lname_set_tag(fs, ref, lname_tag(fs, s->name));
		lname_free_locked(fs, s->name);
		s->name = ref;
	} else if (oldp != np->ino) {
		lname_set_parent(fs, s->name, code);
	}
	if (oldp != np->ino) {
		struct node *op = node_full_find_locked(fs, oldp);

		if (op && op->lkids)
			op->lkids--;
		np->lkids++;
	}
	return true;
}

bool light_ref(h5fs *fs, uint64_t ino, uint64_t addr, const h5_file *f, uint64_t parent, const char *name,
	       struct stat *st)
{
	struct lslot *s;
	struct node *np;
	bool ok = false;

	pthread_mutex_lock(&fs->lock);
	if (!fs->nlnodes || node_full_find_locked(fs, ino))
		goto out;
	s = light_find_locked(fs, ino);
	np = node_full_find_locked(fs, parent);
	/* one of another generation, or of an object removed since (whose
	 * space this one may have taken), is made a node: the lookup's
	 * checks for those are struct node's; the entry the kernel makes
	 * now is the one whose directory s's path is built from */
	if (s && np && LSLOT_INO(s) - 2 == addr && lgen_of(fs, s->gen) == fs->gen && fs->gen->f == f &&
	    !s->unlinked && s->nlookup < UINT16_MAX && light_rename_locked(fs, s, np, name)) {
		s->nlookup++;
		light_stat(fs, s, st);
		ok = true;
	}
out:
	pthread_mutex_unlock(&fs->lock);
	return ok;
}

bool light_getattr(h5fs *fs, uint64_t ino, struct stat *st)
{
	struct lslot *s;
	bool ok = false;

	pthread_mutex_lock(&fs->lock);
	if (fs->nlnodes && !node_full_find_locked(fs, ino) && (s = light_find_locked(fs, ino)) &&
	    lgen_of(fs, s->gen) == fs->gen) {
		light_stat(fs, s, st);
		ok = true;
	}
	pthread_mutex_unlock(&fs->lock);
	return ok;
}

bool light_unref_locked(h5fs *fs, uint64_t ino, uint64_t count, struct gen **release, struct node **dir)
{
	struct lslot *s;
	struct node *p;

	*release = NULL;
	*dir = NULL;
	s = light_find_locked(fs, ino);
	if (!s)
		return false;
	s->nlookup = count < s->nlookup ? s->nlookup - (uint16_t)count : 0;
	if (s->nlookup == 0) {
		p = node_full_find_locked(fs, lname_parent(fs, s->name));
		*release = light_drop_locked(fs, s, false);
		if (p && p->kids_hold && p->nlookup == 0 && p->lkids == 0)
			*dir = p;
	}
	return true;
}

void light_unlinked_locked(h5fs *fs, const h5_file *f, uint64_t addr)
{
	/* (a record's node id is its object's address + 2) */
	struct lslot *s = light_find_locked(fs, addr + 2);

	if (s && (!s->gen || lgen_of(fs, s->gen)->f == f))
		s->unlinked = 1;
}

struct under {
	const char *prefix;
	size_t pl;
};

static void promote_under(h5fs *fs, struct lslot *s, void *arg)
{
	const struct under *u = arg;
	const struct node *p = node_full_find_locked(fs, lname_parent(fs, s->name));

	/* (promoting keeps the slot where it is: the walk goes on) */
	if (u->pl == 0 || (p && path_under(p->path, lname_str(fs, s->name), u->prefix, u->pl)))
		(void)light_promote_locked(fs, s);
}

void light_promote_ino_locked(h5fs *fs, uint64_t ino)
{
	struct lslot *s = fs->nlnodes && !node_full_find_locked(fs, ino) ? light_find_locked(fs, ino) : NULL;

	if (s)
		(void)light_promote_locked(fs, s);
}

void light_promote_under_locked(h5fs *fs, const char *prefix)
{
	struct under u = { prefix, strlen(prefix) };

	if (fs->nlnodes)
		lobj_each_locked(fs, promote_under, &u);
}

struct old_list {
	const struct gen *g;
	struct light_old *v;
	size_t n, max;
};

static void old_one(h5fs *fs, struct lslot *s, void *arg)
{
	struct old_list *o = arg;

	if (lgen_of(fs, s->gen) == o->g || o->n >= o->max)
		return;
	o->v[o->n].ino = LSLOT_INO(s);
	o->v[o->n].path = light_path_locked(fs, s);
	if (o->v[o->n].path)
		o->n++;
}

struct light_old *light_old_list(h5fs *fs, const struct gen *g, size_t *n)
{
	struct old_list o = { g, NULL, 0, 0 };

	pthread_mutex_lock(&fs->lock);
	o.max = fs->nlnodes;
	o.v = malloc((o.max ? o.max : 1) * sizeof(*o.v));
	if (o.v && o.max)
		lobj_each_locked(fs, old_one, &o);
	pthread_mutex_unlock(&fs->lock);
	*n = o.n;
	return o.v;
}

char *light_old_path(h5fs *fs, uint64_t ino, const struct gen *g)
{
	struct lslot *s;
	char *path = NULL;

	pthread_mutex_lock(&fs->lock);
	if (fs->nlnodes && !node_full_find_locked(fs, ino) && (s = light_find_locked(fs, ino)) &&
	    lgen_of(fs, s->gen) != g)
		path = light_path_locked(fs, s);
	pthread_mutex_unlock(&fs->lock);
	return path;
}

int light_refresh(h5fs *fs, uint64_t ino, const struct node *fresh, struct gen *g)
{
	struct lslot *s;
	struct gen *old = NULL;
	struct stat before, after;
	struct timespec ft = gen_file_time(g->f);
	uint8_t gi;
	int r = 0;

	pthread_mutex_lock(&fs->lock);
	s = light_find_locked(fs, ino);
	/* forgotten, made a node, or no longer the current generation:
	 * nothing to do; refreshed by another meanwhile: current */
	if (!s || g != fs->gen || node_full_find_locked(fs, ino))
		goto out;
	if (lgen_of(fs, s->gen) == g) {
		r = 1;
		goto out;
	}
	if (!fresh || s->unlinked || fresh->ino != ino || fresh->addr != ino - 2 || !light_fits(fs, fresh, g, ft) ||
	    !(gi = lgen_take_locked(fs, g, ft))) {
		(void)light_promote_locked(fs, s);      /* (NULL: out of memory; orphaned below) */
		goto out;
	}
	/* (one let go of its generation: its old stat is unknown, told) */
	if (s->gen)
		light_stat(fs, s, &before);
	old = lgen_put_locked(fs, s->gen, false);
	r = 1;
	if (!s->gen)
		r = 2;
	s->gen = gi;
	light_set_stat(s, fresh, ft);
	light_stat(fs, s, &after);
	if (r == 1 && (before.st_size != after.st_size || before.st_blocks != after.st_blocks ||
		       before.st_mode != after.st_mode || before.st_nlink != after.st_nlink ||
		       before.st_blksize != after.st_blksize || before.st_mtim.tv_sec != after.st_mtim.tv_sec ||
		       before.st_mtim.tv_nsec != after.st_mtim.tv_nsec))
		r = 2;
out:
	pthread_mutex_unlock(&fs->lock);
	if (old)
		gen_release(old);       /* (outside the lock: may close a FILE) */
	return r;
}

struct orphan {
	uint64_t *v;
	size_t n, max;
};

static void orphan_one(h5fs *fs, struct lslot *s, void *arg)
{
	struct orphan *o = arg;

	if (lgen_of(fs, s->gen) == fs->gen || o->n >= o->max)
		return;
	o->v[o->n++] = LSLOT_INO(s);
	if (s->gen)
		fs->lgen[s->gen].n--;   /* (the index let go below, when unused) */
	s->gen = 0;
}

uint64_t *light_orphan_old(h5fs *fs, size_t *n)
{
	struct gen *gens[LGEN_MAX];
	struct orphan o = { NULL, 0, 0 };
	size_t ng = 0;

	pthread_mutex_lock(&fs->lock);
	o.max = fs->nlnodes;
	o.v = malloc((o.max ? o.max : 1) * sizeof(*o.v));
	if (o.v && o.max)
		lobj_each_locked(fs, orphan_one, &o);
	for (size_t i = 1; i < LGEN_MAX; i++)
		if (fs->lgen[i].g && fs->lgen[i].n == 0) {
			gens[ng++] = fs->lgen[i].g;
			fs->lgen[i].g = NULL;
		}
	pthread_mutex_unlock(&fs->lock);
	for (size_t i = 0; i < ng; i++)
		gen_release(gens[i]);   /* (outside the lock: may close a FILE) */
	*n = o.n;
	return o.v;
}

void light_free_all(h5fs *fs)
{
	lobj_free_all(fs);
}
