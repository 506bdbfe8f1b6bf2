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
