/*
 * node.c - nodes of the single-file mount: how an object is shown (below),
 * building a node, and its lifetime (publish, references, free). The
 * tables are in node_table.c, names and paths in names.c, the write lock
 * every write takes (fs_write_begin/end) in hold.c.
 *
 * Mapping (README "How an HDF5 file is shown"):
 *   group          -> directory (0555 for a world-readable FILE)
 *   dataset        -> regular file (0444 likewise; owner-writable on a
 *                     read-write mount when it can grow or be overwritten): its raw bytes, C order,
 *                     as stored
 *   named datatype -> regular file, empty
 *   soft link      -> symlink, target rewritten relative to the link's
 *                     directory so it resolves inside the mount; an
 *                     absolute target is in its own file's namespace,
 *                     mapped to where that file's object is shown
 *                     (mount_target); one of another file that is not
 *                     shown there is followed and shown in place
 *   external link  -> the object it names, read from the other file
 *                     (engine related.c, chains followed as libhdf5 does);
 *                     when that file or object cannot be had, or lies
 *                     outside FILE's tree, the symlink "EXTFILE::/path"
 *                     (dangling) with a log line
 *   a hard (or external) link to the group it sits in, or to one of that
 *   group's ancestors on the path it is reached by
 *                  -> symlink "." / ".." / "../.." ..., so tools that walk
 *                     the tree see no directory cycle
 *
 * The tree is a function of the file alone: a directory is one node per
 * path (its node id from the (parent node, name) table, synth_ino, while
 * the kernel holds it), so whether a link leads up is decided along that
 * path's own ancestors, whatever the kernel looked up before; two nodes
 * of one group report one st_ino.
 *
 * Inode numbers: an object is identified by its object header address, so
 * ino = addr + 2 (the root group is FUSE_ROOT_ID), and every hard link to
 * one object shows the same st_ino. Objects of another file (reached by
 * external links) add that file's number (h5_file_id) << 48. Soft and
 * external links shown as symlinks have no header: they get numbers with
 * the top bit set, fixed per (parent, name) for the life of the mount.
 * FUSE node ids are st_ino for everything but directories, whose node
 * ids are such numbers too (one per path; st_ino stays the object's).
 *
 * Locking: fs->lock protects the tables only.  Engine calls (which may do
 * I/O and decompression) always run outside it; a node is built unlocked and
 * then inserted, and the loser of a race frees its copy.  Once in the table
 * a node changes only in its lookup count (under fs->lock) and, after
 * appends or a live FILE's refresh, its object's fields (under its own
 * lk, which readers of them hold shared; a directory's anchors, fpath,
 * a_mnt and a_file, never change); the kernel never sends FORGET for
 * an inode that still has requests in flight, so handlers use the node
 * pointer after dropping the lock.
 */
#include "node.h"

/* ---- nodes ----------------------------------------------------------------- */

static void stat_init_ts(h5fs *fs, struct stat *st, uint64_t ino, mode_t mode, struct timespec t)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_mode = mode;
	st->st_nlink = 1;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_blksize = H5FS_BLKSIZE;
	st->st_mtim = st->st_ctim = st->st_atim = t;
}

static void stat_init(h5fs *fs, struct stat *st, uint64_t ino, mode_t mode, int64_t mtime)
{
	stat_init_ts(fs, st, ino, mode, (struct timespec){ .tv_sec = (time_t)mtime });
}

void node_touch(struct node *n, bool data)
{
	struct timespec now;

	if (!n)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	pthread_rwlock_wrlock(&n->lk);
	n->st.st_ctim = now;
	if (data)
		n->st.st_mtim = now;
	pthread_rwlock_unlock(&n->lk);
}

int node_make_obj(struct node **out, h5fs *fs, h5_file *f, uint64_t addr, uint64_t nodeid,
			 const char *path)
{
	return node_make_obj_as(out, fs, f, addr, nodeid, path, true);
}

/* n's object fields (kind, tag, type, links_many, st; a dataset's ds and
 * view) as the header at addr of f (info: what h5_obj_info_get read of
 * it) shows them: 0, or a negative h5_err (n->ds may be open then). One
 * place for them: node_make_obj_as's nodes and node_obj_stat's
 * stat-only answers are the same by construction. */
static int obj_fill(struct node *n, h5fs *fs, h5_file *f, uint64_t addr, const h5_obj_info *info)
{
	uint64_t alloc = 0;
	struct timespec ft;
	int rc = 0;

	n->kind = info->kind;
	n->tag = info->tag;
	/* an object recording no time of its own shows FILE's, to the
	 * nanosecond where the file has a stamp: a live mount's next
	 * generation moves it past a `touch`ed reference file within the
	 * same second (find -newer, make) */
	ft = info->has_mtime ? (struct timespec){ .tv_sec = (time_t)info->mtime } : gen_file_time(f);
	switch (info->kind) {
	case H5_OBJ_GROUP:
		n->type = NT_DIR;
		n->links_many = info->nlink > 1;
		/* st_nlink 1 = "subdirectory count unknown" (as btrfs does for
		 * find's leaf optimisation): counting would mean decoding every
		 * child header of every directory. */
		stat_init_ts(fs, &n->st, file_ino(f, addr), S_IFDIR | fs->dir_mode |
			     (f == fs_file(fs) ? fs->write_mode : 0), ft);
		break;
	case H5_OBJ_DATASET: {
		int64_t dmt;

		n->type = NT_FILE;
		/* (node_obj_stat's opened with the header's one read) */
		if (!n->ds && (rc = h5_dataset_open(&n->ds, f, addr)) < 0)
			goto out;
		if (h5_dataset_mtime(n->ds, &dmt) == 0)
			stat_init(fs, &n->st, file_ino(f, addr), S_IFREG | fs->file_mode, dmt);
		else
			stat_init_ts(fs, &n->st, file_ino(f, addr), S_IFREG | fs->file_mode, ft);
		n->view = h5_dataset_view(n->ds);
		n->st.st_size = (off_t)n->view->size(n->ds);
		alloc = h5_dataset_allocated(n->ds);
		/* datasets that can grow by `cat >>` are owner-writable on a
		 * writable mount (where the owner may read), also while
		 * another process holds FILE (write_busy): what is shown does
		 * not depend on who holds the lock */
		if ((pager_writes(&fs->pg) || fs->write_busy) && f == fs_file(fs) && h5_dataset_chunked(n->ds) &&
		    h5_append_check(n->ds) == 0) {
			n->st.st_mode |= fs->write_mode | (fs->write_busy ? (fs->file_mode & S_IRUSR) >> 1 : 0);
			/* cat and cp size their writes by st_blksize: one
			 * FUSE write of the largest size (max_write) */
			n->st.st_blksize = H5FS_APPEND_BLKSIZE;
		} else if (pager_writes(&fs->pg) && f == fs_file(fs) && h5_overwrite_check(n->ds) == 0) {
			/* its bytes can be written (behind/overwrite.c) */
			n->st.st_mode |= fs->write_mode;
		}
		n->st.st_nlink = info->nlink ? info->nlink : 1;
		break;
	}
	default:
		/* named datatypes (and headers of no known kind): empty files */
		n->type = NT_FILE;
		stat_init_ts(fs, &n->st, file_ino(f, addr), S_IFREG | fs->file_mode, ft);
		n->st.st_nlink = info->nlink ? info->nlink : 1;
		break;
	}
	/* An object of a file an external link led to shows that file's
	 * owner, group and read bits (never write bits: only FILE is written),
	 * so the kernel lets a user see its names, attributes and bytes only
	 * where that user may read the file itself (doc/h5fs.1 SECURITY) */
	if (h5_file_is_related(f) && h5_file_fd(f) >= 0) {
		struct stat rst;

		if (fstat(h5_file_fd(f), &rst) == 0) {
			mode_t r = rst.st_mode & 0444 & (fs->cfg.umask_set ? ~fs->cfg.umask : 0777);

			n->st.st_uid = rst.st_uid;
			n->st.st_gid = rst.st_gid;
			n->st.st_mode = (n->st.st_mode & S_IFMT) | r | (n->type == NT_DIR ? r >> 2 : 0);
		}
	}
	n->st.st_blocks = blocks_of(alloc);
out:
	return rc;
}

/* Build (unlocked) the node of the object whose header is at addr;
 * remember: its kind put in the kind map (false: the caller found it
 * there, or a listing of this generation put it there) */
int node_make_obj_as(struct node **out, h5fs *fs, h5_file *f, uint64_t addr, uint64_t nodeid,
		     const char *path, bool remember)
{
	h5_obj_info info;
	struct node *n;
	int rc;

	*out = NULL;
	rc = h5_obj_info_get(&info, f, addr);
	if (rc < 0)
		return rc;
	n = calloc(1, sizeof(*n));
	if (!n)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	pthread_rwlock_init(&n->lk, NULL);
	n->f = f;
	h5_file_hold_related(f);
	n->addr = addr;
	n->ino = nodeid;
	n->path = strdup(path);
	rc = n->path ? obj_fill(n, fs, f, addr, &info) : h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (rc < 0) {
		node_free(n);
		return rc;
	}
	if (remember)
		kind_remember(fs, file_ino(f, addr), info.kind);
	*out = n;
	return 0;
}

int node_obj_stat(struct stat *st, h5_obj_kind *kind, uint32_t *tag, h5fs *fs, h5_file *f, uint64_t addr,
		  h5_window *w)
{
	h5_obj_info info;
	struct node n;
	int rc;

	/* a node's fields on the stack, never published: no lock, path or
	 * reference of f (the caller holds it); the header read once, not
	 * kept in the engine's cache (a listing's, issue 82) */
	memset(&n, 0, sizeof(n));
	rc = h5_obj_open_once(&info, &n.ds, f, addr, w);
	if (rc == 0)
		rc = obj_fill(&n, fs, f, addr, &info);
	h5_dataset_close_once(n.ds, w);
	if (rc < 0)
		return rc;
	*st = n.st;
	*kind = n.kind;
	*tag = n.tag;
	return 0;
}

/* A dataset's node keeps what stat shows (st, view) but not its opened
 * dataset (~1.4 KB of decoded messages: dataspace, datatype, layout,
 * fill, filters) while nothing reads its bytes: the kernel keeps the
 * names a walk (find, du, ls -l) looked up for as long as it has memory,
 * so a node is kept per object seen, and must stay small (issue 64).
 * The lookup drops it (node_ds_shed); opening a descriptor, a truncate
 * and a view open it again (node_ds_need), from the engine's cache of
 * object headers, and it then stays until the node is forgotten. View
 * nodes keep theirs (a view's state lives in it). */
void node_ds_shed(struct node *n)
{
	if (n->type != NT_FILE || n->kind != H5_OBJ_DATASET || n->vkind || !n->ds)
		return;
	h5_dataset_close(n->ds);
	n->ds = NULL;
}

int node_ds_need(h5fs *fs, struct node *n)
{
	h5_dataset *d = NULL;
	bool have, stale;
	int rc = 0;

	if (n->type != NT_FILE)
		return 0;
	/* kind too under the lock: a live FILE's sweep swaps it (node_swap) */
	pthread_rwlock_rdlock(&n->lk);
	have = n->kind != H5_OBJ_DATASET || n->ds != NULL;
	pthread_rwlock_unlock(&n->lk);
	if (have)
		return 0;
	pthread_rwlock_wrlock(&n->lk);
	if (n->kind != H5_OBJ_DATASET) {
		pthread_rwlock_unlock(&n->lk);
		return 0;
	}
	/* a stale node answers ESTALE (node_fresh): its f is another
	 * generation's now, where addr may hold another object */
	stale = n->stale;
	if (!stale && !n->ds && n->f && n->addr != UINT64_MAX && (rc = h5_dataset_open(&d, n->f, n->addr)) == 0) {
		n->ds = d;
		if (!n->vkind)
			n->view = h5_dataset_view(d);   /* (a node made of a record has none) */
	}
	pthread_rwlock_unlock(&n->lk);
	if (stale)
		return ESTALE;
	return rc < 0 ? h5err_logged(fs, rc, "open", n->path, NULL, n->addr) : 0;
}

/* A symlink node: a soft link, an external link that is not followed, or
 * (l NULL) a link up to an ancestor, `depth` levels up (ancestor_depth). */
int node_make_link(struct node **out, h5fs *fs, uint64_t ino, const char *path,
			  const char *dir, const h5_link *l, int depth)
{
	struct node *n = calloc(1, sizeof(*n));
	size_t need;

	*out = NULL;
	if (!n)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	pthread_rwlock_init(&n->lk, NULL);
	n->addr = UINT64_MAX;
	n->ino = ino;
	n->type = NT_LINK;
	n->path = strdup(path);
	if (!l) {
		n->target = updirs(depth);
	} else if (l->type == H5_LINK_SOFT) {
		n->target = symlink_text(dir, l->target ? l->target : "");
	} else {
		const char *ef = l->ext_file ? l->ext_file : "";
		const char *ep = l->ext_path ? l->ext_path : "";

		need = strlen(ef) + strlen(ep) + 3;
		n->target = malloc(need);
		if (n->target)
			snprintf(n->target, need, "%s::%s", ef, ep);
	}
	if (!n->path || !n->target) {
		node_free(n);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	stat_init(fs, &n->st, ino, S_IFLNK | 0777, __atomic_load_n(&fs->file_mtime, __ATOMIC_RELAXED));
	n->st.st_size = (off_t)strlen(n->target);
	*out = n;
	return 0;
}

void node_free(struct node *n)
{
	if (!n)
		return;
	if (n->ds)
		h5_dataset_close(n->ds);
	/* (storage node_unref did not hand on or free: left unreferenced) */
	h5_gone_discard(n->gone);
	gen_release(n->gone_gen);
	xattr_cache_drop(n);
	h5_file_release_related(n->f);   /* FILE itself is not released */
	gen_release(n->gen);             /* last: it may close FILE */
	pcache_free(n->pc);
	if (n->tail)            /* (behind/tail.c's, above: the memory is the node's) */
		free(n->tail->part);
	free(n->tail);
	pthread_rwlock_destroy(&n->lk);
	free(n->path);
	free(n->fpath);
	free(n->target);
	free(n->retype);
	free(n);
}

/* Insert a freshly built node, or take a reference on the one another
 * thread inserted meanwhile. Returns the node now in the table. */
struct node *node_publish(h5fs *fs, struct node *fresh)
{
	struct node *n;

	pthread_mutex_lock(&fs->lock);
	n = node_find_locked(fs, fresh->ino);
	if (!n) {
		node_insert_locked(fs, fresh);
		n = fresh;
		fresh = NULL;
	}
	n->nlookup++;
	pthread_mutex_unlock(&fs->lock);
	node_free(fresh);
	return n;
}

struct node *node_ref_existing(h5fs *fs, uint64_t ino)
{
	struct node *n;

	pthread_mutex_lock(&fs->lock);
	n = node_find_locked(fs, ino);
	if (n)
		n->nlookup++;
	pthread_mutex_unlock(&fs->lock);
	return n;
}

void node_unref(h5fs *fs, uint64_t ino, uint64_t count)
{
	struct node *n, *dead = NULL;
	struct gen *lg = NULL;

	pthread_mutex_lock(&fs->lock);
	/* a stat-only object (fs.h struct lslot's record) is not made a node to be
	 * forgotten; the last record of a directory forgotten before it lets
	 * the directory go now */
	if (light_unref_locked(fs, ino, count, &lg, &n)) {
		if (!n) {
			pthread_mutex_unlock(&fs->lock);
			gen_release(lg);
			return;
		}
	} else {
		n = node_find_locked(fs, ino);
		if (n)
			n->nlookup = count < n->nlookup ? n->nlookup - count : 0;
	}
	if (n) {
		/* A directory that records still name stays (kids_hold) until
		 * their last goes: making them nodes took a walk over every
		 * object (light_promote_kids_locked), and the kernel forgets
		 * some directories of a cold walk before the names in them (3
		 * times in a walk of 1 M: 19% of its daemon CPU, issue 70) */
		n->kids_hold = n->nlookup == 0 && n->lkids;
		if (n->nlookup == 0 && n->ino != FUSE_ROOT_ID && !n->kids_hold) {
			node_remove_locked(fs, n);
			/* a directory's number, or a dataset's shown under its
			 * (parent, name) number (member/lookup.c show_object); a symlink
			 * keeps its number */
			if (n->type != NT_LINK && (n->ino & H5FS_SYNTH_BIT))
				synth_drop_locked(fs, n);
			if (n->busy)
				n->dead = true;   /* live/live.c's sweep frees it */
			else
				dead = n;
		}
	}
	/* an unlinked dataset's storage: another node of the object (a
	 * view, NAME.npy) may still read it; the last one frees it */
	if (dead && dead->gone) {
		for (size_t i = 0; i < fs->nodes_cap; i++)
			for (struct node *o = fs->nodes[i]; o; o = o->next)
				if (o != dead && o->addr == dead->addr && o->f == dead->f && !o->gone) {
					o->gone = dead->gone;
					o->gone_gen = dead->gone_gen;
					dead->gone = NULL;
					dead->gone_gen = NULL;
					goto handed;
				}
handed:;
	}
	pthread_mutex_unlock(&fs->lock);
	if (dead && dead->gone) {
		h5_gone_release(dead->gone);
		dead->gone = NULL;
		fs_meta_changed(fs);    /* the unmount's sync cuts FILE past it */
	}
	node_free(dead);   /* closes the dataset outside the lock */
	gen_release(lg);
}
