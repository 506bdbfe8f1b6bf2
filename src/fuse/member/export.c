/*
 * export.c - file handles (name_to_handle_at, open_by_handle_at, an NFS
 * export of the mount; issue 72 item 7, xfstests generic/426, 467, 756).
 * The kernel encodes a handle as (node id, generation); once it has
 * dropped the inode (drop_caches, memory pressure) it asks LOOKUP of "."
 * on that node id, and of ".." on a directory's to reconnect it
 * (FUSE_CAP_EXPORT_SUPPORT, dispatch.c op_init). A dataset's or named
 * datatype's node id is its header address + 2 (node.c), so "." is
 * answered from the number alone: the object is looked for in FILE's
 * tree, breadth first (a shortest path: no link on it leads up, which a
 * lookup would show as a symlink), and looked up along that path as the
 * kernel would, so its node is the one a lookup by name makes. The cost
 * is a walk of FILE's groups per handle opened cold, and nothing on a
 * lookup by name.
 * A group it and every group above it have one link is numbered by its
 * address too (H5FS_DIRADDR_BIT, lookup.c show_object), and found the
 * same way; ".." of a directory is its parent on its path. Other
 * directories (a node per path), symlinks, views and objects of other
 * files have numbers of this mount only: "." answers them while the
 * daemon has the node, else ESTALE. An object whose last link
 * went is not found (ESTALE); one made since at its address has another
 * generation (given with every entry, member_lookup_as; and the kernel
 * compares it with the handle's), so the old handle is stale and the new
 * one opens:
 * - an object h5fs made carries a random birth tag in its header
 *   (h5core format/birthtag.c, a NIL message), read where the object's
 *   node is made (h5_obj_info, which decodes the header anyway: no extra
 *   read on a lookup or READDIRPLUS), kept by its node (n->tag) or
 *   stat-only record (its name entry, state/objects.c lname_tag) while
 *   the kernel holds the id (read again where the node or record is
 *   made again) and given as
 *   the generation, the same in every mount, so this holds across a
 *   remount too (xfstests generic/477, 777);
 * - one other software made has none: one more for each object removed
 *   at that address in this mount (fs->freed), which a remount starts at
 *   0 again - there an old handle may open a new object made at its
 *   address after a remount.
 * (FUSE generations are 32-bit: a tag equal to a small count is
 * possible, and harmless but for that one pair.)
 */
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

static struct idgen *u64set_find(const struct u64set *s, uint64_t id)
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

static struct idgen *u64set_add(struct u64set *s, uint64_t id, bool *made);

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
static struct idgen *u64set_add(struct u64set *s, uint64_t id, bool *made)
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

/* ---- the path of an object, breadth first ---------------------------------- */

struct hunt {
	h5fs *fs;
	h5_file *f;
	uint64_t want;
	struct { uint64_t addr; char *path; } *q;
	size_t head, n, cap;
	struct u64set seen;
	const char *cur;        /* the group iterated */
	char *found;
	bool nomem;
};

static int hunt_link(const h5_link *l, void *ud)
{
	struct hunt *h = ud;
	h5_obj_kind k = H5_OBJ_UNKNOWN;
	h5_obj_info info;
	bool made;
	char *p;

	if (l->type != H5_LINK_HARD || !name_ok(l->name, l->name_len))
		return 0;
	if (l->addr == h->want) {
		h->found = h5_path_join(h->cur, l->name);
		h->nomem = !h->found;
		return 1;
	}
	if (!kind_lookup(h->fs, file_ino(h->f, l->addr), &k)) {
		if (h5_obj_info_get(&info, h->f, l->addr) == 0)
			k = info.kind;
		h5_err_clear();
	}
	if (k != H5_OBJ_GROUP)
		return 0;
	if (!u64set_add(&h->seen, l->addr + 1, &made))
		goto nomem;
	if (!made)
		return 0;
	if (h->n == h->cap) {
		size_t ncap = h->cap ? h->cap * 2 : 16;
		void *nq = realloc(h->q, ncap * sizeof(*h->q));

		if (!nq)
			goto nomem;
		h->q = nq;
		h->cap = ncap;
	}
	p = h5_path_join(h->cur, l->name);
	if (!p)
		goto nomem;
	h->q[h->n].addr = l->addr;
	h->q[h->n++].path = p;
	return 0;
nomem:
	h->nomem = true;
	return 1;
}

/* *path (malloc'd) of one hard link to want in FILE's tree (u: its
 * generation): 0, ESTALE when there is none, or ENOMEM */
static int hunt_path(char **path, h5fs *fs, const struct use *u, uint64_t want)
{
	struct hunt h = { .fs = fs, .f = u->f, .want = want, .cur = "/" };
	bool made;
	int err = 0;

	*path = NULL;
	(void)u64set_add(&h.seen, u->addr + 1, &made);
	(void)h5_group_iterate(u->f, u->addr, hunt_link, &h);
	h5_err_clear();     /* a group that cannot be read hides what is below it */
	while (!h.found && !h.nomem && h.head < h.n) {
		h.cur = h.q[h.head].path;
		(void)h5_group_iterate(u->f, h.q[h.head].addr, hunt_link, &h);
		h5_err_clear();
		h.head++;
	}
	if (h.nomem)
		err = ENOMEM;
	else if (!h.found)
		err = ESTALE;
	else
		*path = h.found;
	if (err)
		free(h.found);
	for (size_t i = 0; i < h.n; i++)
		free(h.q[i].path);
	free(h.q);
	u64set_free(&h.seen);
	return err;
}

/* The entry of path, looked up from the root one name at a time, with
 * one kernel reference (the directories on the way keep none) */
static int walk_path(struct root_entry *e, h5fs *fs, const char *path)
{
	char *p = strdup(path), *save = NULL, *c;
	uint64_t cur = FUSE_ROOT_ID;
	int err = ESTALE;

	if (!p)
		return ENOMEM;
	for (c = strtok_r(p, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		err = member_lookup_as(fs, e, cur, c, NULL);
		if (cur != FUSE_ROOT_ID)
			node_unref(fs, cur, 1);
		if (err)
			break;
		cur = e->ino;
	}
	free(p);
	return err;
}

/* ---- LOOKUP of "." and ".." --------------------------------------------------- */

static void entry_set(struct root_entry *e, h5fs *fs, struct node *n)
{
	memset(e, 0, sizeof(*e));
	e->ino = n->ino;
	pthread_rwlock_rdlock(&n->lk);
	e->attr = n->st;
	pthread_rwlock_unlock(&n->lk);
	e->timeout = node_timeout(fs);
	e->generation = export_gen(fs, e->ino);
}

/* The node of ino the daemon has (a reference taken), if it still shows
 * its object: 0, ESTALE, or -1 when it has none */
static int held(struct root_entry *e, h5fs *fs, uint64_t ino)
{
	struct node *n = node_ref_existing(fs, ino);
	int err;

	if (!n)
		return -1;
	err = __atomic_load_n(&n->unlinked, __ATOMIC_ACQUIRE) ? ESTALE : node_fresh(fs, n);
	if (err) {
		node_unref(fs, ino, 1);
		return ESTALE;
	}
	entry_set(e, fs, n);
	return 0;
}

static int do_lookup_dot(struct root_entry *e, h5fs *fs, uint64_t ino)
{
	struct node *root;
	struct use u;
	char *path = NULL;
	uint64_t addr = ino & ~(H5FS_SYNTH_BIT | H5FS_DIRADDR_BIT);
	int err = held(e, fs, ino);

	if (err >= 0)
		return err;
	/* numbers of this mount only; FUSE_ROOT_ID is always held */
	if (((ino & H5FS_SYNTH_BIT) && !(ino & H5FS_DIRADDR_BIT)) || addr >> 48 || addr < 2)
		return ESTALE;
	/* new files not linked yet are looked for too */
	err = commit_barrier(fs, COMMIT_NAMES);
	if (err)
		return err;
	root = node_get(fs, FUSE_ROOT_ID);
	if (!root)
		return ESTALE;
	err = node_use(&u, fs, root);
	if (err)
		return err;
	err = hunt_path(&path, fs, &u, addr - 2);
	node_use_end(&u);
	if (!err)
		err = walk_path(e, fs, path);
	free(path);
	if (!err && e->ino != ino) {
		/* shown under another number now (its (parent, name) one) */
		node_unref(fs, e->ino, 1);
		err = ESTALE;
	}
	return err;
}

/* ".." of a directory the kernel reconnects: its parent on its path (a
 * directory's node is one per path, its parent fixed) */
static int do_lookup_dotdot(struct root_entry *e, h5fs *fs, uint64_t ino)
{
	struct node *n = node_get(fs, ino);
	uint64_t parent;

	if (!n)
		return ESTALE;
	if (n->type != NT_DIR)
		return ENOTDIR;
	pthread_mutex_lock(&fs->lock);
	parent = ino == FUSE_ROOT_ID || !n->parent ? FUSE_ROOT_ID : n->parent;
	pthread_mutex_unlock(&fs->lock);
	/* (a parent numbered by its address is found again like ".") */
	return do_lookup_dot(e, fs, parent);
}

int member_lookup_dot(void *r, struct root_entry *e, uint64_t ino, bool dotdot)
{
	return dotdot ? do_lookup_dotdot(e, r, ino) : do_lookup_dot(e, r, ino);
}
