/* root_index.c - the collection index on the daemon's side (issue 25
 * item 4; the database is cindex.c):
 *
 * - recording (root_record.c): index_record walks a member root through
 *   its own ops (root.h), exactly as find and getfattr would, so what is
 *   kept is what the mount answered and can never disagree with a live
 *   mount;
 * - the indexed root class (h5fs_indexed_ops): a member whose key still
 *   matches is answered from its recorded tree alone (lookup, getattr,
 *   readdir, readlink, listxattr, getxattr: no file opened, no GET); the
 *   member itself is opened (the live root, through the collection's
 *   opener) only when a dataset is opened for its bytes. Node ids and
 *   st_ino are the live root's own, recorded, so the dispatcher numbers
 *   them as it would the live root's.
 *
 * In a read-write mount a dataset of an indexed member may be opened for
 * appending: from then on that node's attributes and xattrs (its size,
 * user.h5.shape) are the live root's, and the member's record is dropped
 * (its file changes). A live mount (read-only with -o refresh, the
 * default of -o ro) answers from the index too, and its timeouts are the
 * refresh interval: the root op changed looks at the member's file (a
 * stat, no descriptor) at most once per interval, on access, and once it
 * differs from its record the dispatcher closes this root and opens the
 * member live (dispatch_slot.c), as the live-file rules would have seen
 * the change.
 */
#include "root_index.h"
#include "member.h"
#include "hash.h"
#include "views.h"

#include <sys/stat.h>
#include <time.h>

/* ---- the indexed root ----------------------------------------------------------- */

#define INDEX_NODE_BIT ((uint64_t)1 << 62)

struct iroot {
	cindex_tree *t;
	uint32_t *by_lid;       /* open addressing: node index + 1, 0 empty */
	size_t lid_cap;
	uid_t uid;
	gid_t gid;
	double timeout;
	/* the live member, opened for bytes */
	pthread_mutex_t mu;
	struct index_live lv;
	const struct root_ops *lops;
	void *live;
	uint64_t *live_id;      /* per node: its id in the live root, 0 unknown */
	bool *written;          /* per node: opened for writing: ask the live root */
	bool any_written;
	bool rw;                /* a read-write mount */
	struct fuse_session *se;
	bool started;
	/* a live mount (-o ro with refresh): looking for changes */
	int64_t refresh_ns;     /* 0: never (frozen or read-write) */
	int64_t looked_ns;      /* CLOCK_MONOTONIC of the last look */
	bool accessed;          /* a request came since the last look */
	bool stale;             /* the member's file changed: for good */
};

/* The node of a local id (the first recorded, when several paths lead to
 * one dataset: they answer alike), or -1. */
static int64_t node_of(const struct iroot *ir, uint64_t lid)
{
	for (size_t i = hash_u64(lid, ir->lid_cap);; i = (i + 1) & (ir->lid_cap - 1)) {
		uint32_t v = ir->by_lid[i];

		if (!v)
			return -1;
		if (ir->t->nodes[v - 1].lid == lid)
			return v - 1;
	}
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int index_root_new(void **out, cindex_tree *t, const h5fs_config *cfg, uid_t uid, gid_t gid,
		   const struct index_live *live)
{
	struct iroot *ir = calloc(1, sizeof(*ir));
	size_t cap = 16;

	*out = NULL;
	if (!ir) {
		cindex_tree_free(t);
		if (live->free)
			live->free(live->arg);
		return ENOMEM;
	}
	while (cap < (size_t)t->n * 2)
		cap *= 2;
	ir->by_lid = calloc(cap, sizeof(uint32_t));
	ir->live_id = calloc(t->n ? t->n : 1, sizeof(uint64_t));
	ir->written = calloc(t->n ? t->n : 1, sizeof(bool));
	if (!ir->by_lid || !ir->live_id || !ir->written) {
		free(ir->by_lid);
		free(ir->live_id);
		free(ir->written);
		free(ir);
		cindex_tree_free(t);
		if (live->free)
			live->free(live->arg);
		return ENOMEM;
	}
	ir->lid_cap = cap;
	ir->t = t;
	/* Node ids: a dataset's is its st_ino (the object's, the same in
	 * every opening), as the live root's; a directory's or a symlink's
	 * is the live root's only while the kernel holds it (recycled
	 * after), so they get numbers of their own, in a range the live root
	 * never uses (bit 62 without bit 63), unique per node. */
	for (uint32_t k = 1; k < t->n; k++) {
		cindex_node *nd = &t->nodes[k];

		if (nd->type != CINDEX_FILE)
			nd->lid = INDEX_NODE_BIT | k;
		/* A link shown as a symlink has no object: the live root numbers
		 * it per (parent node, name) while the kernel holds the parent,
		 * so its recorded st_ino may have gone to another link later in
		 * the walk; one number per node keeps them apart, as a walk of
		 * the live root sees them. */
		if (nd->type == CINDEX_LINK && (nd->st.ino & H5FS_SYNTH_BIT))
			nd->st.ino = nd->dino = H5FS_SYNTH_BIT | INDEX_NODE_BIT | k;
	}
	t->nodes[0].lid = FUSE_ROOT_ID;
	for (uint32_t k = 0; k < t->n; k++) {
		/* an error node has no id: its lookup fails, so the kernel
		 * never holds one to ask about */
		if (t->nodes[k].type == CINDEX_ERROR || node_of(ir, t->nodes[k].lid) >= 0)
			continue;
		for (size_t i = hash_u64(t->nodes[k].lid, cap);; i = (i + 1) & (cap - 1))
			if (!ir->by_lid[i]) {
				ir->by_lid[i] = k + 1;
				break;
			}
	}
	ir->uid = uid;
	ir->gid = gid;
	ir->timeout = H5FS_TIMEOUT;
	ir->rw = !cfg->read_only;
	if (cfg->read_only && cfg->refresh && live->changed) {
		/* the kernel keeps what it is told as long as a live
		 * root's answers (node_timeout, live/live.c) */
		ir->timeout = (double)cfg->refresh;
		ir->refresh_ns = (int64_t)cfg->refresh * 1000000000LL;
		ir->looked_ns = now_ns();
	}
	ir->lv = *live;
	pthread_mutex_init(&ir->mu, NULL);
	*out = ir;
	return 0;
}

static void stat_out(const struct iroot *ir, struct stat *st, const cindex_node *nd)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = nd->st.mode;
	st->st_nlink = nd->st.nlink;
	st->st_blksize = nd->st.blksize;
	st->st_size = (off_t)nd->st.size;
	st->st_ino = (ino_t)nd->st.ino;
	st->st_blocks = (blkcnt_t)nd->st.blocks;
	st->st_uid = ir->uid;
	st->st_gid = ir->gid;
	st->st_atim.tv_sec = nd->st.atime_ns / 1000000000;
	st->st_atim.tv_nsec = nd->st.atime_ns % 1000000000;
	st->st_mtim.tv_sec = nd->st.mtime_ns / 1000000000;
	st->st_mtim.tv_nsec = nd->st.mtime_ns % 1000000000;
	st->st_ctim.tv_sec = nd->st.ctime_ns / 1000000000;
	st->st_ctim.tv_nsec = nd->st.ctime_ns % 1000000000;
}

/* Node k was opened for writing: its attributes are the live root's. */
static bool written(struct iroot *ir, int64_t k, uint64_t *lid)
{
	bool w;

	if (!__atomic_load_n(&ir->any_written, __ATOMIC_ACQUIRE))
		return false;
	pthread_mutex_lock(&ir->mu);
	w = ir->written[k];
	*lid = ir->live_id[k];
	pthread_mutex_unlock(&ir->mu);
	return w;
}

static int live_resolve(struct iroot *ir, uint64_t *lid, int64_t k);

/* A node the live root answers for: a view of a recorded dataset
 * (view_lookup), which the record does not hold. Its id is the live
 * root's, never one of the record's (node_of) nor of its own range. */
static bool forwarded(struct iroot *ir, uint64_t ino, int64_t k)
{
	bool live;

	if (k >= 0 || (ino & INDEX_NODE_BIT))
		return false;
	pthread_mutex_lock(&ir->mu);
	live = ir->live != NULL;
	pthread_mutex_unlock(&ir->mu);
	return live;
}

/* name, not in the record of directory p: a view of its recorded dataset
 * ("data.npy" of "data": views open whether listed or not, README) is
 * the live root's to answer (issue 72: FileNotFoundError after a
 * remount served from the index), found there by the directory's path;
 * else ENOENT. (A .frames directory of frames is not: ENOENT.) */
static int view_lookup(struct iroot *ir, struct root_entry *e, int64_t p, const char *name)
{
	size_t blen = 0;
	enum vw_kind kind = vw_kind_of_name(name, &blen);
	char base[NAME_MAX + 1];
	int64_t k;
	uint64_t lp;
	int err;

	if (kind == VW_NONE || kind == VW_FRAMES || kind == VW_FRAME || !blen || blen > NAME_MAX)
		return ENOENT;
	memcpy(base, name, blen);
	base[blen] = '\0';
	k = cindex_tree_lookup(ir->t, (uint32_t)p, base);
	if (k < 0 || ir->t->nodes[k].type != CINDEX_FILE)
		return ENOENT;
	err = live_resolve(ir, &lp, p);
	if (!err)
		err = ir->lops->lookup(ir->live, e, lp, name);
	if (!err && (node_of(ir, e->ino) >= 0 || (e->ino & INDEX_NODE_BIT))) {
		/* (an id the record uses: never given out twice) */
		if (ir->lops->forget)
			ir->lops->forget(ir->live, e->ino, 1);
		err = ENOENT;
	}
	return err;
}

static int ix_lookup(void *r, struct root_entry *e, uint64_t parent, const char *name)
{
	struct iroot *ir = r;
	int64_t p = node_of(ir, parent), k;
	uint64_t lid;

	memset(e, 0, sizeof(*e));
	if (p < 0)
		return ESTALE;
	if (ir->t->nodes[p].type != CINDEX_DIR)
		return ENOTDIR;
	k = cindex_tree_lookup(ir->t, (uint32_t)p, name);
	if (k < 0)
		return view_lookup(ir, e, p, name);
	if (ir->t->nodes[k].type == CINDEX_ERROR) {
		/* as the live root answered when the member was walked */
		if (ir->lv.eio)
			ir->lv.eio(ir->lv.arg, ir->t->nodes[k].path, ir->t->nodes[k].target);
		return EIO;
	}
	e->ino = ir->t->nodes[k].lid;
	e->timeout = ir->timeout;
	if (written(ir, k, &lid))
		return ir->lops->getattr(ir->live, &e->attr, &e->timeout, lid);
	stat_out(ir, &e->attr, &ir->t->nodes[k]);
	return 0;
}

/* The tree is held whole for the root's life: nothing to let go. */
static void ix_forget(void *r, uint64_t ino, uint64_t nlookup)
{
	struct iroot *ir = r;

	if (forwarded(ir, ino, node_of(ir, ino)) && ir->lops->forget)
		ir->lops->forget(ir->live, ino, nlookup);
}

static int ix_getattr(void *r, struct stat *st, double *timeout, uint64_t ino)
{
	struct iroot *ir = r;
	int64_t k = node_of(ir, ino);
	uint64_t lid;

	if (forwarded(ir, ino, k))
		return ir->lops->getattr(ir->live, st, timeout, ino);
	if (k < 0)
		return ESTALE;
	if (written(ir, k, &lid))
		return ir->lops->getattr(ir->live, st, timeout, lid);
	stat_out(ir, st, &ir->t->nodes[k]);
	*timeout = ir->timeout;
	return 0;
}

static int ix_readlink(void *r, char **target, uint64_t ino)
{
	struct iroot *ir = r;
	int64_t k = node_of(ir, ino);

	*target = NULL;
	if (k < 0)
		return ESTALE;
	if (!ir->t->nodes[k].target)
		return EINVAL;
	*target = strdup(ir->t->nodes[k].target);
	return *target ? 0 : ENOMEM;
}

/* A listing handle is the directory's node index + 1. */
static int ix_opendir(void *r, void **dh, bool *keep, uint64_t ino)
{
	struct iroot *ir = r;
	int64_t k = node_of(ir, ino);

	if (k < 0)
		return ESTALE;
	if (ir->t->nodes[k].type != CINDEX_DIR)
		return ENOTDIR;
	*dh = (void *)(uintptr_t)(k + 1);
	*keep = true;
	return 0;
}

static int ix_readdir(void *r, struct root_dirent *d, void *dh, size_t i)
{
	struct iroot *ir = r;
	const cindex_node *dir = &ir->t->nodes[(uintptr_t)dh - 1], *nd;

	memset(d, 0, sizeof(*d));
	if (i >= dir->nkids)
		return ENOENT;
	nd = &ir->t->nodes[ir->t->kids[dir->kid0 + i]];
	d->name = nd->name;
	d->ino = nd->dino;
	d->type = nd->st.mode & S_IFMT;
	return 0;
}

static void ix_releasedir(void *r, void *dh)
{
	(void)r;
	(void)dh;
}

static int ix_listxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino)
{
	struct iroot *ir = r;
	int64_t k = node_of(ir, ino);
	char *names = NULL;
	uint64_t lid;

	*len = 0;
	if (forwarded(ir, ino, k))
		return ir->lops->listxattr(ir->live, buf, size, len, ino);
	if (k < 0)
		return ESTALE;
	if (written(ir, k, &lid))
		return ir->lops->listxattr(ir->live, buf, size, len, lid);
	if (cindex_tree_listxattr(&names, len, ir->t, (uint32_t)k) < 0)
		return ENOMEM;
	if (buf && *len && *len <= size)
		memcpy(buf, names, *len);
	free(names);
	return 0;
}

static int ix_getxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino, const char *name)
{
	struct iroot *ir = r;
	int64_t k = node_of(ir, ino);
	const cindex_xattr *x;
	uint64_t lid;

	*len = 0;
	if (forwarded(ir, ino, k))
		return ir->lops->getxattr(ir->live, buf, size, len, ino, name);
	if (k < 0)
		return ESTALE;
	if (written(ir, k, &lid))
		return ir->lops->getxattr(ir->live, buf, size, len, lid, name);
	x = cindex_tree_getxattr(ir->t, (uint32_t)k, name);
	if (!x)
		return ENODATA;
	*len = x->len;
	if (buf && x->len <= size)
		memcpy(buf, x->value, x->len);
	return 0;
}

/* The live root and node k's id in it, the path looked up from its top
 * (each lookup kept until the root is freed: the live root then knows
 * the node as long as we may use it). */
static int live_resolve(struct iroot *ir, uint64_t *lid, int64_t k)
{
	uint32_t chain[INDEX_MAX_DEPTH + 2];
	size_t n = 0;
	int err = 0;

	pthread_mutex_lock(&ir->mu);
	if (!ir->live) {
		err = ir->lv.open(ir->lv.arg, &ir->lops, &ir->live);
		if (!err && ir->started && ir->lops->start)
			ir->lops->start(ir->live, ir->se);
		if (err)
			goto out;
	}
	ir->live_id[0] = FUSE_ROOT_ID;
	for (uint32_t c = (uint32_t)k; c != 0 && n < INDEX_MAX_DEPTH + 1; c = ir->t->nodes[c].parent)
		chain[n++] = c;
	while (!err && n--) {
		const cindex_node *nd = &ir->t->nodes[chain[n]];
		struct root_entry e;

		if (ir->live_id[chain[n]])
			continue;
		err = ir->lops->lookup(ir->live, &e, ir->live_id[nd->parent], nd->name);
		if (!err)
			ir->live_id[chain[n]] = e.ino;
	}
	if (!err)
		*lid = ir->live_id[k];
out:
	pthread_mutex_unlock(&ir->mu);
	return err;
}

static int ix_open(void *r, struct fuse_file_info *fi, uint64_t ino)
{
	struct iroot *ir = r;
	int64_t k = node_of(ir, ino);
	uint64_t lid;
	int err;

	if (forwarded(ir, ino, k))
		return ir->lops->open(ir->live, fi, ino);      /* a view: read-only */
	if (k < 0)
		return ESTALE;
	err = live_resolve(ir, &lid, k);
	if (!err)
		err = ir->lops->open(ir->live, fi, lid);
	if (!err && (fi->flags & O_ACCMODE) != O_RDONLY) {
		bool first;

		pthread_mutex_lock(&ir->mu);
		ir->written[k] = true;
		first = !ir->any_written;
		__atomic_store_n(&ir->any_written, true, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&ir->mu);
		if (first && ir->lv.on_write)
			ir->lv.on_write(ir->lv.arg);
	}
	return err;
}

/* Reads and releases come only after ix_open succeeded: the live root is
 * there and the node resolved. */
static uint64_t live_of(struct iroot *ir, uint64_t ino)
{
	int64_t k = node_of(ir, ino);
	uint64_t lid = 0;

	if (k >= 0) {
		pthread_mutex_lock(&ir->mu);
		lid = ir->live_id[k];
		pthread_mutex_unlock(&ir->mu);
	} else if (forwarded(ir, ino, k)) {
		lid = ino;
	}
	return lid;
}

static int ix_read(void *r, struct root_read *a, uint64_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	struct iroot *ir = r;
	uint64_t lid = live_of(ir, ino);

	if (!lid || !ir->live)
		return EBADF;
	return ir->lops->read(ir->live, a, lid, size, off, fi);
}

static void ix_read_done(void *r, struct root_read *a)
{
	struct iroot *ir = r;

	if (ir->live && ir->lops->read_done)
		ir->lops->read_done(ir->live, a);
}

static int ix_release(void *r, uint64_t ino, struct fuse_file_info *fi)
{
	struct iroot *ir = r;
	uint64_t lid = live_of(ir, ino);

	if (!lid || !ir->live || !ir->lops->release)
		return 0;
	return ir->lops->release(ir->live, lid, fi);
}

static int ix_flush(void *r, uint64_t ino, struct fuse_file_info *fi)
{
	struct iroot *ir = r;
	uint64_t lid = live_of(ir, ino);

	if (!lid || !ir->live || !ir->lops->flush)
		return 0;
	return ir->lops->flush(ir->live, lid, fi);
}

/* Only after an open for writing succeeded (so the live root is there). */
static void ix_write(void *r, fuse_req_t req, uint64_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct iroot *ir = r;
	uint64_t lid = live_of(ir, ino);

	if (!lid || !ir->live || !ir->lops->write) {
		fuse_reply_err(req, lid ? root_no_write() : EBADF);
		return;
	}
	ir->lops->write(ir->live, req, lid, buf, size, off, fi);
}

static int ix_fsync(void *r, uint64_t ino, struct fuse_file_info *fi)
{
	struct iroot *ir = r;
	uint64_t lid = live_of(ir, ino);

	if (!lid || !ir->live || !ir->lops->fsync)
		return 0;
	return ir->lops->fsync(ir->live, lid, fi);
}

/* As the live root would say (read-write mount, growable datasets),
 * asked of the mount's config: the member need not be opened for it. */
static bool ix_writable(void *r)
{
	struct iroot *ir = r;

	return ir->rw;
}

static void ix_usage(void *r, uint64_t *bytes, uint64_t *objects)
{
	struct iroot *ir = r;

	*bytes = 0;
	*objects = ir->t->n;
	for (uint32_t i = 0; i < ir->t->n; i++)
		if (ir->t->nodes[i].type == CINDEX_FILE)
			*bytes += ir->t->nodes[i].st.size;
}

static bool ix_idle(void *r)
{
	struct iroot *ir = r;
	bool idle;

	pthread_mutex_lock(&ir->mu);
	idle = !ir->live || !ir->lops->idle || ir->lops->idle(ir->live);
	pthread_mutex_unlock(&ir->mu);
	return idle;
}

static void ix_start(void *r, struct fuse_session *se)
{
	struct iroot *ir = r;

	pthread_mutex_lock(&ir->mu);
	ir->se = se;
	ir->started = true;
	if (ir->live && ir->lops->start)
		ir->lops->start(ir->live, se);
	pthread_mutex_unlock(&ir->mu);
}

static void ix_stop(void *r)
{
	struct iroot *ir = r;

	pthread_mutex_lock(&ir->mu);
	if (ir->live && ir->lops->stop)
		ir->lops->stop(ir->live);
	pthread_mutex_unlock(&ir->mu);
}

/* The member opened for a dataset's bytes follows the live-file rules
 * itself (rows appended while tail -f holds the dataset open, which keeps
 * this root from being replaced): the collection's watcher ticks it. */
static void ix_tick(void *r)
{
	struct iroot *ir = r;
	const struct root_ops *lops;
	void *live;

	pthread_mutex_lock(&ir->mu);
	lops = ir->lops;
	live = ir->live;        /* once opened, kept for the root's life */
	pthread_mutex_unlock(&ir->mu);
	if (live && lops->tick)
		lops->tick(live);
}

/* Whether the member's file changed since its record was loaded (for
 * good once it did). access: a request's question (dispatch_slot.c
 * slot_enter), which looks when the refresh interval has passed since the
 * last look; else the watcher's, which looks only if a request came
 * since, so an untouched member costs nothing. The look is the
 * collection's stat of the file, outside the root's lock. */
static bool ix_changed(void *r, bool access)
{
	struct iroot *ir = r;
	int64_t now;
	bool look, ch;

	if (!ir->refresh_ns)
		return false;
	now = now_ns();
	pthread_mutex_lock(&ir->mu);
	if (access)
		ir->accessed = true;
	look = !ir->stale && ir->accessed && now - ir->looked_ns >= ir->refresh_ns;
	if (look) {
		ir->looked_ns = now;
		ir->accessed = false;
	}
	ch = ir->stale;
	pthread_mutex_unlock(&ir->mu);
	if (!look)
		return ch;
	ch = ir->lv.changed(ir->lv.arg);
	if (ch) {
		pthread_mutex_lock(&ir->mu);
		ir->stale = true;
		pthread_mutex_unlock(&ir->mu);
	}
	return ch;
}

static void ix_free(void *r)
{
	struct iroot *ir = r;

	if (!ir)
		return;
	if (ir->live)
		ir->lops->free(ir->live);       /* its nodes go with it */
	if (ir->lv.free)
		ir->lv.free(ir->lv.arg);
	pthread_mutex_destroy(&ir->mu);
	cindex_tree_free(ir->t);
	free(ir->by_lid);
	free(ir->live_id);
	free(ir->written);
	free(ir);
}

const struct root_ops h5fs_indexed_ops = {
	.name = "indexed",
	.lookup = ix_lookup,
	.forget = ix_forget,
	.getattr = ix_getattr,
	.readlink = ix_readlink,
	.opendir = ix_opendir,
	.readdir = ix_readdir,
	.releasedir = ix_releasedir,
	.open = ix_open,
	.read = ix_read,
	.read_done = ix_read_done,
	.release = ix_release,
	.write = ix_write,
	.flush = ix_flush,
	.fsync = ix_fsync,
	.listxattr = ix_listxattr,
	.getxattr = ix_getxattr,
	.writable = ix_writable,
	.usage = ix_usage,
	.idle = ix_idle,
	.start = ix_start,
	.stop = ix_stop,
	.tick = ix_tick,
	.changed = ix_changed,
	.free = ix_free,
};
