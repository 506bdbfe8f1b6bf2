/* gone.c - objects that lost their last link while a descriptor reads
 * them (doc/h5fs.1 MODIFYING): later lookups do not match their nodes,
 * and a removed or replaced dataset's storage is freed now when no
 * descriptor reads the object, else kept with a node of it that one
 * does, and freed when the last such closes (gone_closed) or the node
 * is forgotten (node.c node_unref). Used by the changes that remove a
 * link (member/link.c, rename_keep.c, retype.c; behind/npy.c) and by
 * release (member/open.c). In node/, below the write-behind kinds and the
 * operations that call it: an np.save stream (behind/npy.c) replaces a
 * dataset as a rename does. The file handles' generations are the member
 * root's (member/export.c), told through fs->freed_locked.
 * Tests: test_stress_io.py, test_churn_space.py, test_durable.py. */
#include "node.h"

/* Whether node o shows the object at (f, addr). Read atomically: a live
 * refresh's node_swap (fresh.c) sets o's f and addr under o's lock, and
 * the callers here hold fs->lock, not that one. */
static bool node_is_at(const struct node *o, const h5_file *f, uint64_t addr)
{
	return __atomic_load_n(&o->addr, __ATOMIC_ACQUIRE) == addr && __atomic_load_n(&o->f, __ATOMIC_ACQUIRE) == f;
}

/* Whether a descriptor reads the object at (f, addr) through any of its
 * nodes (the dataset's, its views'); else NULL. A node holding none of
 * it: *holder, a node of it to keep storage with. Under fs->lock. */
static struct node *object_open_locked(h5fs *fs, h5_file *f, uint64_t addr, struct node **holder)
{
	struct node *n = node_find_locked(fs, file_nodeid(fs, f, addr)), *open = NULL;

	*holder = n && node_is_at(n, f, addr) ? n : NULL;
	for (size_t i = 0; i < fs->nodes_cap && !open; i++)
		for (struct node *o = fs->nodes[i]; o && !open; o = o->next)
			if (node_is_at(o, f, addr)) {
				if (__atomic_load_n(&o->opens, __ATOMIC_ACQUIRE))
					open = o;
				else if (!*holder)
					*holder = o;
			}
	return open;
}

bool gone_object_open(h5fs *fs, h5_file *f, uint64_t addr)
{
	struct node *holder;
	bool open;

	pthread_mutex_lock(&fs->lock);
	open = object_open_locked(fs, f, addr, &holder) != NULL;
	pthread_mutex_unlock(&fs->lock);
	return open;
}

/* An unlinked or replaced dataset's storage: freed now when no
 * descriptor reads the object, else kept with a node of it that one
 * does, and freed when the last such closes (gone_closed) or the node
 * is forgotten (node.c node_unref). */
/* The object at addr (of f) lost its last link: its nodes are matched by
 * no later lookup - its space may be freed now (gone_keep) and hold
 * a new object, which must get a node of its own: given the old one, a
 * removed file's, mkdir answered a directory with a file's mode and the
 * kernel said EIO (stress-ng dir beside xattr, libver="latest"). Under
 * fs->lock. */
static void unlinked_locked(h5fs *fs, h5_file *f, uint64_t addr)
{
	kind_forget_locked(fs, file_ino(f, addr));
	if (h5_file_id(f) == 0 && fs->freed_locked)
		fs->freed_locked(fs, file_nodeid(fs, f, addr));
	light_unlinked_locked(fs, f, addr);
	for (size_t i = 0; i < fs->nodes_cap; i++)
		for (struct node *o = fs->nodes[i]; o; o = o->next)
			if (node_is_at(o, f, addr))
				__atomic_store_n(&o->unlinked, true, __ATOMIC_RELEASE);
}

void gone_unlinked(h5fs *fs, h5_file *f, uint64_t addr)
{
	pthread_mutex_lock(&fs->lock);
	unlinked_locked(fs, f, addr);
	pthread_mutex_unlock(&fs->lock);
}

/* Storage freed: made durable by the idle kind's next look, within a
 * second, not -o idle_commit seconds after the last change - a removed
 * file's space goes back to the host only once its freeing is durable
 * (write/space_punch.c; issue 69: rm of 100 MiB, then 5.8 s until FILE's
 * disk usage dropped). At most one fsync a second while removing. */
static void freed_soon(h5fs *fs)
{
	fs_meta_changed(fs);
	pthread_mutex_lock(&fs->wmu);
	fs->meta_freed = true;
	pthread_mutex_unlock(&fs->wmu);
}

void gone_keep(h5fs *fs, struct gen *g, h5_file *f, uint64_t addr, struct h5_gone *gone)
{
	struct node *n, *holder;

	pthread_mutex_lock(&fs->lock);
	unlinked_locked(fs, f, addr);
	n = object_open_locked(fs, f, addr, &holder);
	if (n && !n->gone) {
		n->gone = gone;
		n->gone_gen = g;
		gen_hold(g);
		gone = NULL;
	}
	pthread_mutex_unlock(&fs->lock);
	if (n && gone) {
		h5_gone_discard(gone);  /* (one kept already: this one stays unreferenced) */
	} else if (gone) {
		h5_gone_release(gone);
		freed_soon(fs);
	}
}

/* A descriptor of n closed (open.c): the last one of the object frees
 * storage kept for it, or hands it to a node of it still read. */
void gone_closed(h5fs *fs, struct node *n)
{
	struct h5_gone *gone = NULL;
	struct gen *g = NULL;
	struct node *other, *holder;

	if (__atomic_sub_fetch(&n->opens, 1, __ATOMIC_ACQ_REL) != 0 || !__atomic_load_n(&n->gone, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&fs->lock);
	if (n->gone && !__atomic_load_n(&n->opens, __ATOMIC_ACQUIRE)) {
		other = object_open_locked(fs, n->f, n->addr, &holder);
		if (other && !other->gone) {
			other->gone = n->gone;
			other->gone_gen = n->gone_gen;
		} else {
			gone = n->gone;
			g = n->gone_gen;
		}
		n->gone = NULL;
		n->gone_gen = NULL;
	}
	pthread_mutex_unlock(&fs->lock);
	if (gone) {
		h5_gone_release(gone);
		/* freed after the unlink's own change: the next sync (the
		 * unmount's too) must run to cut FILE past it (test_stress_io
		 * "truncated" once ended at 4.8 MB: an idle sync had come
		 * between the unlink and this release) */
		freed_soon(fs);
	}
	gen_release(g);
}

/* (storage is kept exactly while a descriptor reads the object through
 * one of its nodes: gone_keep, gone_closed) */
bool gone_freed(h5fs *fs, const struct node *n)
{
	struct node *holder;
	bool kept;

	if (!__atomic_load_n(&n->unlinked, __ATOMIC_ACQUIRE) || n->type == NT_LINK)
		return false;
	pthread_mutex_lock(&fs->lock);
	kept = object_open_locked(fs, __atomic_load_n(&n->f, __ATOMIC_ACQUIRE),
				  __atomic_load_n(&n->addr, __ATOMIC_ACQUIRE), &holder) != NULL;
	pthread_mutex_unlock(&fs->lock);
	return !kept;
}
