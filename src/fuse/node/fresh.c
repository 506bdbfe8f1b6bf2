/*
 * fresh.c - live files: the nodes of a changed FILE, re-resolved
 * by their paths in its new generation (live/live.c's header has the story).
 *
 * resolve() walks a path as a lookup walks it (member/read.c do_lookup); node_rebuild
 * gives the node the fields of the object found there when it is the same
 * object (a directory: the same group from the same anchors; a symlink: a
 * symlink; else the node id), or makes it stale; node_fresh does that for a
 * node a request meets before the watcher's sweep (live/watch.c) did,
 * and node_use holds what a request reads of a node.
 */
#include <stddef.h>
#include "node.h"

/* ---- resolving a path in a generation ------------------------------------ */

/* The node `path` leads to in generation g, resolved as lookups resolve it
 * (member/read.c do_lookup): hard links, links shown in place (link_place: external
 * chains, soft links of another file not shown where it is), the anchors
 * of another file's groups (dir_anchor), a link up to a group of the path
 * shown as a symlink. 0 with *tf (a reference held), *taddr and anc's
 * anchors (anc->fpath malloc'd); 1 when the last name is shown as a
 * symlink: *link, its node (id ino), made; or a negative h5_err (no such
 * name, or a symlink in the middle: not a path the kernel asks for). */
static int resolve(struct node **link, h5_file **tf, uint64_t *taddr, struct node *anc, h5fs *fs, struct gen *g,
		   const char *path, uint64_t ino)
{
	/* the group walked through, as a lookup in it sees it */
	struct node dir = { .path = strdup("") };
	uint64_t *up = NULL;   /* st_ino of the path's groups, root first */
	size_t nup = 0;
	h5_file *f = g->f;
	uint64_t addr = h5_file_root(f);
	char name[H5FS_NAME_MAX + 1];
	int rc = 0;

	*link = NULL;
	*tf = NULL;
	h5_file_hold_related(f);
	up = malloc((strlen(path) / 2 + 2) * sizeof(*up));   /* one per name at most */
	if (!dir.path || !up) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	up[nup++] = file_ino(f, addr);
	while (*path) {
		const char *e;
		size_t len;
		h5_link l;
		h5_file *nf = NULL;
		uint64_t na = UINT64_MAX, id = 0;
		char *fp = NULL, *npath;
		int prc, depth = -1;

		if (*path == '/') {
			path++;
			continue;
		}
		e = strchr(path, '/');
		len = e ? (size_t)(e - path) : strlen(path);
		if (len > H5FS_NAME_MAX) {
			rc = h5_err_set(H5_ERR_NOTFOUND, "no such object");
			break;
		}
		memcpy(name, path, len);
		name[len] = '\0';
		path += len;
		memset(&l, 0, sizeof(l));
		rc = h5_group_lookup(&l, f, addr, name);
		if (rc < 0)
			break;
		if (!name_ok(l.name, l.name_len) || strcmp(l.name, name) != 0) {
			h5_link_clear(&l);
			rc = h5_err_set(H5_ERR_NOTFOUND, "no such object");
			break;
		}
		if (l.type == H5_LINK_HARD) {
			nf = f;
			h5_file_hold_related(nf);
			na = l.addr;
			prc = 0;
		} else if (l.type == H5_LINK_SOFT || l.type == H5_LINK_EXTERNAL) {
			prc = link_place(&nf, &na, &fp, &dir, f, &l);
		} else {
			h5_link_clear(&l);
			rc = h5_err_set(H5_ERR_NOTFOUND, "no such object");
			break;
		}
		if (prc == 0) {
			id = file_ino(nf, na);
			for (size_t i = nup; i-- > 0;)
				if (up[i] == id) {
					depth = (int)(nup - 1 - i);
					break;
				}
		}
		npath = h5_path_join(dir.path, name);
		if (!npath) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		} else if (prc != 0 || depth >= 0) {
			/* shown as a symlink: only the last name may be one */
			h5_link shown;
			char *mt = NULL;

			h5_err_clear();
			if (strspn(path, "/") != strlen(path))
				rc = h5_err_set(H5_ERR_NOTFOUND, "no such object");
			else if (link_shown(&shown, &mt, &dir, f, &l, prc) != 0)
				rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			else if ((rc = node_make_link(link, fs, ino, npath, dir.path, depth >= 0 ? NULL : &shown,
						      depth)) == 0)
				rc = 1;
			free(mt);
		} else {
			struct node next = { .path = npath };

			if (dir_anchor(&next, g->f, &dir, nf, name, npath, fp) != 0) {
				rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			} else {
				up[nup++] = id;
				free(dir.path);
				free(dir.fpath);
				dir = next;
				npath = NULL;
				h5_file_release_related(f);
				f = nf;
				nf = NULL;
				addr = na;
			}
		}
		free(npath);
		free(fp);
		h5_file_release_related(nf);
		h5_link_clear(&l);
		if (rc != 0)
			break;
	}
	if (rc == 0) {
		*tf = f;
		f = NULL;
		*taddr = addr;
		anc->fpath = dir.fpath;
		anc->a_mnt = dir.a_mnt;
		anc->a_file = dir.a_file;
		dir.fpath = NULL;
	}
out:
	h5_file_release_related(f);
	free(dir.path);
	free(dir.fpath);
	free(up);
	return rc;
}

/* ---- nodes --------------------------------------------------------------- */

static void retire(struct live *lv, char *s)
{
	char **n = realloc(lv->retired, (lv->nretired + 1) * sizeof(*n));

	if (!n)
		return;         /* leaks s rather than free what a log may read */
	lv->retired = n;
	lv->retired[lv->nretired++] = s;
}

/* Record that n was resolved in generation g (lv->mu held): with tmp,
 * the object found there, whose fields (read in g) n takes; NULL: n keeps
 * its fields and the generation they belong to (stale: the path leads
 * elsewhere now). tmp gets n's old fields and is freed here, outside
 * n->lk. */
static void node_swap(h5fs *fs, struct node *n, struct node *tmp, struct gen *g, bool stale)
{
	struct gen *old;
	h5_dataset *old_ds = NULL;
	h5_file *old_f = NULL;

	gen_hold(g);
	pthread_rwlock_wrlock(&n->lk);
	n->checked = g->num;
	n->stale = stale;
	old = n->gen;
	n->gen = g;
	xattr_cache_drop(n);    /* read in the old generation */
	if (!tmp && stale) {
		/* it only answers ESTALE now: let its generation go */
		old_ds = n->ds;
		n->ds = NULL;
		old_f = n->f;
		n->f = n->f ? g->f : NULL;
	}
	if (tmp) {
		h5_dataset *ds = n->ds;
		const h5_view_ops *view = n->view;
		h5_file *f = n->f;
		char *target = n->target;
		/* bytes answered unchecked (before the first change) that open
		 * descriptors may read on from: compared with the new version
		 * before it is answered (live/pcache.c) */
		uint64_t fast_end = __atomic_exchange_n(&n->fast_end, 0, __ATOMIC_RELAXED);

		if (fast_end && pcache_keep_old(n, ds, view, f, old, fast_end)) {
			ds = NULL;
			f = NULL;
			old = NULL;
		}

		n->ds = tmp->ds;
		n->view = tmp->view;
		/* (f and addr atomically: gone.c unlinked_locked reads them
		 * under fs->lock alone, not this node's lock) */
		__atomic_store_n(&n->f, tmp->f, __ATOMIC_RELEASE);
		n->target = tmp->target;
		__atomic_store_n(&n->addr, tmp->addr, __ATOMIC_RELEASE);
		n->kind = tmp->kind;
		/* (st_ino atomically, the rest beside it: names.c
		 * ancestor_depth reads a directory's st_ino under fs->lock
		 * alone, as gone.c does f and addr) */
		memcpy(&n->st, &tmp->st, offsetof(struct stat, st_ino));
		memcpy((char *)&n->st + offsetof(struct stat, st_ino) + sizeof(n->st.st_ino),
		       (const char *)&tmp->st + offsetof(struct stat, st_ino) + sizeof(n->st.st_ino),
		       sizeof(n->st) - offsetof(struct stat, st_ino) - sizeof(n->st.st_ino));
		__atomic_store_n(&n->st.st_ino, tmp->st.st_ino, __ATOMIC_RELEASE);
		tmp->ds = ds;
		tmp->view = view;
		tmp->f = f;
		tmp->target = target;
		tmp->gen = old;
		old = NULL;
	}
	pthread_rwlock_unlock(&n->lk);
	if (tmp && tmp->target)
		retire(fs->lv, tmp->target);   /* readlink may have it */
	if (tmp)
		tmp->target = NULL;
	node_free(tmp);
	if (old_ds)
		h5_dataset_close(old_ds);
	if (old_f)
		h5_file_release_related(old_f);
	gen_release(old);
}

/* Whether directory n's anchors are those a lookup of its path gives now. */
static bool same_anchors(const struct node *n, const struct node *anc)
{
	if (!n->fpath || !anc->fpath)
		return !n->fpath && !anc->fpath;
	return strcmp(n->fpath, anc->fpath) == 0 && n->a_mnt == anc->a_mnt && n->a_file == anc->a_file;
}

/* Re-resolve n by its path in the current generation (lv->mu held):
 * 0, ESTALE when the path leads elsewhere or nowhere now, or EIO (logged:
 * the object is there but cannot be read; n keeps its old generation and
 * is tried again at its next use). A directory (a node per path) stays
 * itself while its path leads to the same group shown from the same
 * anchors; anything else, to the object with its node id. */
int node_rebuild(h5fs *fs, struct node *n, bool log)
{
	struct gen *g = fs->gen;        /* changes only under lv->mu */
	struct node *tmp = NULL, *link = NULL, anc = { 0 };
	char *vpath = NULL;
	h5_file *tf = NULL;
	uint64_t taddr = 0;
	bool stale = true, same;
	int rc, e = 0;

	if (n->checked == g->num)
		return n->stale ? ESTALE : 0;
	/* a view (views.c) is re-resolved by its dataset's path */
	vpath = n->vkind ? views_base_path(n) : NULL;
	if (n->vkind && !vpath)
		return ENOMEM;
	rc = resolve(&link, &tf, &taddr, &anc, fs, g, vpath ? vpath : n->path, n->ino);
	if (n->type == NT_LINK) {
		if (rc == 1) {
			tmp = link;
			link = NULL;
			stale = false;
		}
	} else if (rc == 0) {
		if (n->ino == FUSE_ROOT_ID)
			same = true;
		else if (n->type == NT_DIR && !n->vkind)
			same = file_ino(tf, taddr) == (uint64_t)n->st.st_ino && same_anchors(n, &anc);
		else    /* its own id; a (parent, name) number's: its object's */
			same = file_nodeid(fs, tf, taddr) ==
			       ((n->ino & H5FS_SYNTH_BIT) && n->f ? file_nodeid(fs, n->f, n->addr) : n->ino);
		if (same) {
			rc = n->vkind ? views_make(&tmp, fs, tf, taddr, n)
				      : node_make_obj(&tmp, fs, tf, taddr, n->ino, n->path);
			if (rc < 0) {
				e = log ? h5err_logged(fs, rc, "refresh", n->path, NULL, taddr) : h5fs_errno(rc);
				goto out;
			}
			stale = !tmp || tmp->type != n->type;
			if (stale) {
				node_free(tmp);
				tmp = NULL;
			}
		}
	}
	h5_err_clear();
	node_swap(fs, n, stale ? NULL : tmp, g, stale);
	e = stale ? ESTALE : 0;
out:
	h5_file_release_related(tf);
	node_free(link);
	free(anc.fpath);
	free(vpath);
	return e;
}

/* n resolved in the current generation when it was not yet; always: also
 * before FILE's first change (a writer must write through the current
 * generation's FILE, whatever the bytes) */
static int fresh(h5fs *fs, struct node *n, bool always)
{
	bool same, stale;
	int e;

	if (!fs->live)
		return 0;
	__atomic_store_n(&fs->lv->accessed, true, __ATOMIC_RELAXED);
	/* not changed yet: every generation so far has the same bytes */
	if (!always && !live_checked(fs))
		return 0;
	pthread_rwlock_rdlock(&n->lk);
	pthread_mutex_lock(&fs->lock);
	same = n->checked == fs->gen->num;
	pthread_mutex_unlock(&fs->lock);
	stale = n->stale;
	pthread_rwlock_unlock(&n->lk);
	if (same)
		return stale ? ESTALE : 0;
	for (int attempt = 0;; attempt++) {
		char msg[256];

		pthread_mutex_lock(&fs->lv->mu);
		/* a writer mid-flush may explain a failure: logged only when no
		 * fresh generation answers */
		e = node_rebuild(fs, n, false);
		pthread_mutex_unlock(&fs->lv->mu);
		if (e != EIO)
			return e;
		snprintf(msg, sizeof(msg), "%s", h5_err_msg());
		if (!live_retry(fs, attempt)) {
			h5fs_log(fs, LOG_ERR, "refresh %s: EIO: %s", show_path(n->path), msg);
			return e;
		}
	}
}

int node_fresh(h5fs *fs, struct node *n)
{
	return fresh(fs, n, false);
}

static int use(struct use *u, h5fs *fs, struct node *n, bool always)
{
	int e = fresh(fs, n, always);

	memset(u, 0, sizeof(*u));
	/* (a request that came after another's unlink of the name, on the
	 * node the kernel looked up before it: the storage is freed. ESTALE,
	 * as an open's (member/open.c): the kernel looks the name up again
	 * and the call meets what the name is now - nothing (ENOENT), or the
	 * object that took it: np.save's placeholder, removed by the daemon
	 * once dataset NAME is made, leaves NAME.npy that dataset's view, and
	 * shutil.copy2's utime of NAME.npy after close sets its time (it was
	 * ENOENT while the kernel still held the placeholder's entry, npy.c
	 * placeholder_gone) */
	if (!e && n->type != NT_DIR && node_storage_gone(fs, n))
		e = ESTALE;
	if (e)
		return e;
	pthread_rwlock_rdlock(&n->lk);
	u->f = n->f;
	u->addr = n->addr;
	u->g = n->gen;
	if (u->g)
		gen_hold(u->g);
	if (u->f)
		h5_file_hold_related(u->f);
	pthread_rwlock_unlock(&n->lk);
	if (u->g && __atomic_load_n(&u->g->broken, __ATOMIC_ACQUIRE)) {
		/* rewritten in place and not readable yet (logged at refresh) */
		node_use_end(u);
		return EIO;
	}
	return 0;
}

int node_use(struct use *u, h5fs *fs, struct node *n)
{
	return use(u, fs, n, false);
}

int node_use_current(struct use *u, h5fs *fs, struct node *n)
{
	int e;

	/* removed by another request since the kernel looked it up, its
	 * storage freed: its header's space may be another object's now (a
	 * truncate by name read it, EIO "no OHDR signature": test_procs) */
	if (gone_freed(fs, n)) {
		memset(u, 0, sizeof(*u));
		return ENOENT;
	}
	e = use(u, fs, n, true);

	/* (a node whose rebuild failed keeps an older generation) */
	if (!e && !gen_is_current(fs, u->g)) {
		node_use_end(u);
		e = ESTALE;
	}
	return e;
}

void node_use_end(struct use *u)
{
	if (u->f)
		h5_file_release_related(u->f);
	gen_release(u->g);
	memset(u, 0, sizeof(*u));
}

/* Stat-only objects (fs.h struct lslot's records) of older generations resolved in
 * g now, before the nodes: re-resolved at their next use instead, they
 * would read FILE as it is then with the stamp of the generation current
 * then (a live append seen mid-write showed its new size with the old
 * mtime: test_first_mount). Where a path still leads to the same object
 * it stays a record (light_refresh): the kernel keeps every name a
 * walk looked up, and a node with its opened dataset costs ~15 times as
 * much (issue 64). The kernel is told those whose stat changed; the rest
 * became nodes, which node_sweep rebuilds or makes stale with the others. */
/* One of them: id's record, shown at path, resolved in g */
static int light_fresh_one(h5fs *fs, struct gen *g, uint64_t id, const char *path)
{
	struct node *link = NULL, *tmp = NULL, anc = { 0 };
	h5_file *tf = NULL;
	uint64_t taddr = 0;
	int r;

	pthread_mutex_lock(&fs->lv->mu);
	if (fs->gen == g && resolve(&link, &tf, &taddr, &anc, fs, g, path, id) == 0 &&
	    file_nodeid(fs, tf, taddr) == id && node_make_obj(&tmp, fs, tf, taddr, id, path) < 0)
		tmp = NULL;
	pthread_mutex_unlock(&fs->lv->mu);
	h5_err_clear();
	r = light_refresh(fs, id, tmp, g);
	node_free(tmp);
	node_free(link);
	h5_file_release_related(tf);
	free(anc.fpath);
	return r;
}

static void light_sweep(h5fs *fs, struct gen *g)
{
	size_t n = 0;
	struct light_old *v = light_old_list(fs, g, &n);

	for (size_t i = 0; i < n; i++) {
		if (light_fresh_one(fs, g, v[i].ino, v[i].path) == 2 && fs->se && fs_ino_out(fs, v[i].ino))
			notify_inval_inode(fs->se, fs_ino_out(fs, v[i].ino), 0, 0);
		free(v[i].path);
	}
	free(v);
}

bool node_light_fresh(h5fs *fs, uint64_t ino)
{
	struct gen *g;
	char *path;
	int r = 0;

	if (!fs->live)      /* (light_old_path looks under fs->lock) */
		return false;
	g = gen_current(fs);
	path = light_old_path(fs, ino, g);
	if (path)
		r = light_fresh_one(fs, g, ino, path);
	free(path);
	gen_release(g);
	return r > 0;
}

/* The directories first (before light_sweep's many records): a lookup
 * reads in its directory node's generation, and one still of the old
 * generation made every name looked up meanwhile a full node (light_keep
 * keeps only the current generation's) */
static void sweep_dirs(h5fs *fs)
{
	struct node **v = NULL;
	size_t n = 0, i;

	pthread_mutex_lock(&fs->lock);
	v = calloc(fs->nnodes ? fs->nnodes : 1, sizeof(*v));
	for (i = 0; v && i < fs->nodes_cap; i++)
		for (struct node *x = fs->nodes[i]; x && n < fs->nnodes; x = x->next)
			if (x->type == NT_DIR) {
				x->busy++;      /* a FORGET meanwhile leaves it to us */
				v[n++] = x;
			}
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&fs->lv->mu);
		(void)node_rebuild(fs, v[i], false);    /* node_sweep tells the kernel */
		pthread_mutex_unlock(&fs->lv->mu);
		h5_err_clear();
	}
	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < n; i++)
		if (--v[i]->busy || !v[i]->dead)
			v[i] = NULL;
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < n; i++)
		node_free(v[i]);
	free(v);
}

/* After a new generation: every node is resolved in it now (not at its
 * next use), so old generations are closed as soon as no read holds them,
 * and the kernel drops what it caches of every inode and the entries whose
 * path leads elsewhere now. From the watcher, never a request handler (an
 * invalidation can wait on that request's locks). */
void node_sweep(h5fs *fs)
{
	struct node **v = NULL;
	uint64_t *parent = NULL;
	struct gen *g = gen_current(fs);
	size_t n = 0, i;

	if (g->num == fs->lv->seen)
		goto out;
	/* unchecked answers made before the first change was seen may still
	 * be on their way into the kernel's pages: let them land first, so
	 * the invalidation below drops them (they are only reads of FILE;
	 * bounded all the same) */
	for (int ms = 0; ms < 2000 && __atomic_load_n(&fs->lv->fast_reads, __ATOMIC_SEQ_CST); ms++)
		live_sleep_ns(1000000);
	sweep_dirs(fs);
	light_sweep(fs, g);
	pthread_mutex_lock(&fs->lock);
	v = calloc(fs->nnodes ? fs->nnodes : 1, sizeof(*v));
	parent = calloc(fs->nnodes ? fs->nnodes : 1, sizeof(*parent));
	for (i = 0; v && parent && i < fs->nodes_cap; i++)
		for (struct node *x = fs->nodes[i]; x && n < fs->nnodes; x = x->next) {
			x->busy++;      /* a FORGET meanwhile leaves it to us */
			parent[n] = x->parent;
			v[n++] = x;
		}
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < n; i++) {
		struct node *x = v[i];
		const char *name;
		int e;

		pthread_mutex_lock(&fs->lv->mu);
		e = node_rebuild(fs, x, false);   /* tried again at its next use */
		name = strrchr(x->path, '/');     /* changes under mu; retired, never freed */
		pthread_mutex_unlock(&fs->lv->mu);
		h5_err_clear();
		if (!fs->se)
			continue;
		if (e == ESTALE && parent[i] && name && fs_ino_out(fs, parent[i]))
			notify_inval_entry(fs->se, fs_ino_out(fs, parent[i]), name + 1,
							 strlen(name + 1));
		if (fs_ino_out(fs, x->ino))
			notify_inval_inode(fs->se, fs_ino_out(fs, x->ino), 0, 0);
	}
	/* The first sweep once reads are checked: the kernel keeps a page a
	 * read() is copying at that instant (the invalidation skips pages in
	 * use), and pages answered unchecked are in no ledger: drop them again
	 * twice, after such read()s have moved on. This ends the first
	 * change's window (live/live.c). */
	if (fs->se && __atomic_load_n(&fs->lv->checked, __ATOMIC_SEQ_CST) && !fs->lv->swept_checked) {
		for (int pass = 0; pass < 2; pass++) {
			notify_flush();         /* (the thread issues them: then wait) */
			live_sleep_ns(pass ? 40000000LL : 10000000LL);
			for (i = 0; i < n; i++)
				if (fs_ino_out(fs, v[i]->ino))
					notify_inval_inode(fs->se, fs_ino_out(fs, v[i]->ino), 0, 0);
		}
		fs->lv->swept_checked = true;
	}
	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < n; i++)
		if (--v[i]->busy || !v[i]->dead)
			v[i] = NULL;
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < n; i++)
		node_free(v[i]);
	/* stat-only objects (fs.h struct lslot's records) let their generation go
	 * and are re-resolved when next asked (made nodes then, lookup.c):
	 * the kernel forgets their old attributes now */
	{
		size_t nl = 0;
		uint64_t *ids = light_orphan_old(fs, &nl);

		for (i = 0; fs->se && ids && i < nl; i++)
			if (fs_ino_out(fs, ids[i]))
				notify_inval_inode(fs->se, fs_ino_out(fs, ids[i]), 0, 0);
		free(ids);
	}
	notify_flush();         /* told, not only queued */
	fs->lv->seen = g->num;
out:
	free(v);
	free(parent);
	gen_release(g);
}

/* A rename: nodes are one per path, so the nodes at the old path and below
 * take the new path (the old strings retired: a request may be reading
 * them), the moved node its new parent, a moved directory its (parent,
 * name) number under the new name (the kernel keeps its node id across
 * rename(2)), and symlinks among them are resolved again: a soft link's
 * text is relative to where it is shown. */
void node_moved(h5fs *fs, const struct node *p, const char *name, const struct node *np, const char *newname)
{
	char *oldp = h5_path_join(p->path, name), *newp = h5_path_join(np->path, newname);
	struct node **links = NULL;
	size_t ol, nlinks = 0, i;

	if (!oldp || !newp)
		goto out;
	ol = strlen(oldp);
	pthread_mutex_lock(&fs->lv->mu);
	pthread_mutex_lock(&fs->lock);
	light_promote_under_locked(fs, oldp);   /* their paths change below */
	links = calloc(fs->nnodes ? fs->nnodes : 1, sizeof(*links));
	for (i = 0; i < fs->nodes_cap; i++)
		for (struct node *x = fs->nodes[i]; x; x = x->next) {
			char *path = x->path, *moved;
			size_t rest;

			if (strncmp(path, oldp, ol) != 0 || (path[ol] != '\0' && path[ol] != '/'))
				continue;
			rest = strlen(path + ol);
			moved = malloc(strlen(newp) + rest + 1);
			if (!moved)
				continue;       /* logs say the old path */
			memcpy(moved, newp, strlen(newp));
			memcpy(moved + strlen(newp), path + ol, rest + 1);
			if (path[ol] == '\0') {
				/* any kind: a symlink's number left under the old name
				 * would be given to what is made there next (mkdir: EIO,
				 * the kernel holding that number as a symlink) */
				if (x->ino & H5FS_SYNTH_BIT) {
					synth_forget_locked(fs, p->ino, name);
					(void)synth_adopt_locked(fs, np->ino, newname, x->ino);
				}
				x->parent = np->ino;
			}
			__atomic_store_n(&x->path, moved, __ATOMIC_RELEASE);
			retire(fs->lv, path);
			if (x->type == NT_LINK && links) {
				x->busy++;      /* a FORGET meanwhile leaves it to us */
				links[nlinks++] = x;
			}
		}
	if (p->ino != np->ino || strcmp(name, newname) != 0)
		synth_forget_locked(fs, p->ino, name);  /* also when no node held it */
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < nlinks; i++) {
		pthread_rwlock_wrlock(&links[i]->lk);
		links[i]->checked = 0;  /* resolved again in this generation */
		pthread_rwlock_unlock(&links[i]->lk);
		(void)node_rebuild(fs, links[i], false);
		h5_err_clear();
	}
	pthread_mutex_unlock(&fs->lv->mu);
	pthread_mutex_lock(&fs->lock);
	for (i = 0; i < nlinks; i++)
		if (--links[i]->busy || !links[i]->dead)
			links[i] = NULL;
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < nlinks; i++)
		node_free(links[i]);
out:
	free(links);
	free(oldp);
	free(newp);
}

/* node_moved of a file (a dataset or named datatype: no names below it,
 * no symlink) whose node id is ino: its node (or stat-only record) looked
 * up by id, not every node's path compared (a scan of all nodes per
 * rename was a third of the batched rename's CPU with 3,000 files held,
 * issue 82). A node that shows the file under another of its names keeps
 * it. */
void node_moved_file(h5fs *fs, const struct node *p, const char *name, const struct node *np, const char *newname,
		     uint64_t ino)
{
	char *oldp = h5_path_join(p->path, name), *newp = h5_path_join(np->path, newname);
	struct node *x;

	if (!oldp || !newp)
		goto out;
	pthread_mutex_lock(&fs->lv->mu);
	pthread_mutex_lock(&fs->lock);
	light_promote_ino_locked(fs, ino);
	x = node_find_locked(fs, ino);
	if (x && strcmp(x->path, oldp) == 0) {
		char *path = x->path;

		x->parent = np->ino;
		__atomic_store_n(&x->path, newp, __ATOMIC_RELEASE);
		newp = NULL;
		retire(fs->lv, path);
	}
	if (p->ino != np->ino || strcmp(name, newname) != 0)
		synth_forget_locked(fs, p->ino, name);
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_unlock(&fs->lv->mu);
out:
	free(oldp);
	free(newp);
}
