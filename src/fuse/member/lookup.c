/* lookup.c - the member root's name operations (root.h): lookup, forget,
 * getattr, readlink; what number and node a name gets (show_object,
 * show_symlink). Each translates: request -> engine -> a result the
 * dispatcher (dispatch.c) replies with. read.c has the directories and
 * reads. */
#include "member.h"
#include "batch.h"

/* ---- operations ---------------------------------------------------------------- */

static void entry_of(struct root_entry *e, h5fs *fs, const struct node *n)
{
	memset(e, 0, sizeof(*e));
	e->ino = n->ino;
	/* generation 0: a node id is never given to another object while
	 * the kernel holds it (member/lookup.c show_object) */
	pthread_rwlock_rdlock((pthread_rwlock_t *)&n->lk);
	e->attr = n->st;
	pthread_rwlock_unlock((pthread_rwlock_t *)&n->lk);
	e->timeout = node_timeout(fs);
}

/* n (referenced), the node of the (parent, name) number *id: is it still
 * what the name shows? 0 and *keep when so (n kept; with file_only, only
 * when n is a file). Else a live FILE's change left it stale (its path
 * leads elsewhere now, or to another kind): n is unreferenced, the number
 * given up and *id the name's new one, 0 and !*keep. A directory's
 * anchors and a symlink's kind are fixed for its life, so the name's new
 * object is a new node, not the old one adopted. Or an errno (n
 * unreferenced). */
static int synth_recheck(bool *keep, uint64_t *id, h5fs *fs, struct node *n, uint64_t parent, const char *name,
			 bool file_only)
{
	uint64_t old = n->ino;    /* n may be gone once unreferenced */
	int e = node_fresh(fs, n);

	*keep = e == 0 && (!file_only || n->type == NT_FILE);
	if (*keep)
		return 0;
	node_unref(fs, old, 1);
	if (e != 0 && e != ESTALE)
		return e;
	*id = synth_renew(fs, parent, name, old);
	return *id ? 0 : ENOMEM;
}

/* A lookup's engine error: its errno, logged (one line) - an EIO not
 * when quiet (an attempt member_lookup makes again when it fails so) */
static int lookup_err(h5fs *fs, bool quiet, int rc, const char *path, const char *name, uint64_t addr)
{
	if (quiet && h5fs_errno(rc) == EIO)
		return EIO;
	return h5err_logged(fs, rc, "lookup", path, name, addr);
}

/* Whether the group taddr of tf, reached from directory p by a hard link,
 * may be numbered by its address (H5FS_DIRADDR_BIT): FILE's own, and p is
 * the root or numbered so too; and it has one link (node_make_obj tells:
 * links_many), so it has one path (the tree is a function of the file:
 * export.c finds it again by that number, in this mount or the next) */
static bool group_by_addr(const struct node *p, const struct use *u, h5_file *tf, uint64_t taddr, const char *fpath)
{
	return !fpath && tf == u->f && h5_file_id(tf) == 0 && !((taddr + 2) >> 48) &&
	       (p->ino == FUSE_ROOT_ID || (p->ino & H5FS_DIRADDR_BIT));
}

/* The stat-only record of object taddr (number id) a listing of the
 * generation u holds read (sh: its entry; node_obj_stat), kept with no
 * node made and freed (issue 82): true and *lst, referenced; false where
 * it is not one (light_keep), a node is made then. The fields light_keep
 * reads of a node are set on one on the stack, never published. */
static bool show_listed(struct stat *lst, h5fs *fs, const struct use *u, uint64_t parent, const char *path,
			h5_file *tf, uint64_t taddr, uint64_t id, const struct listed *sh)
{
	struct node tmp;

	if (sh->kind == H5_OBJ_GROUP || fs->write_busy)
		return false;
	memset(&tmp, 0, sizeof(tmp));
	tmp.type = NT_FILE;
	tmp.kind = sh->kind;
	tmp.tag = sh->tag;
	tmp.f = tf;
	tmp.addr = taddr;
	tmp.ino = id;
	tmp.st = sh->st;
	tmp.path = (char *)path;
	export_tag(fs, sh->tag);
	if (!light_keep(fs, &tmp, u->g, parent))
		return false;
	*lst = sh->st;
	return true;
}

/* The node of object taddr of tf shown as `name` in directory p (at mount
 * path `path`; fpath: its path in tf when a link was followed to it, which
 * makes it an anchor of tf's tree), read in the generation u holds: 0 and
 * *out (referenced), or, *out NULL, a stat-only object (fs.h struct
 * lslot's record, referenced) whose id and attributes are *lst; or an errno (EIO
 * logged, unless quiet). group: what the listing knew (sh: and its stat,
 * NULL when none) */
static int show_object(struct node **out, struct stat *lst, h5fs *fs, const struct node *p, const struct use *u,
		       const char *name, const char *path, h5_file *tf, uint64_t taddr, const char *fpath, bool quiet,
		       int group, const struct listed *sh)
{
	struct node *n, *fresh = NULL;
	h5_obj_info info;
	h5_obj_kind k = H5_OBJ_UNKNOWN;
	uint64_t id;
	bool keep, byaddr, many = false, known;
	int rc, e, tries = 0;

again:
	/* group: what the listing knew (1 a group, 0 not; only whether it
	 * is one matters here), else the kind map's. known: the kind map
	 * has it (the listing put it there), so the node made below need
	 * not put it there again */
	known = group >= 0 || kind_lookup(fs, file_ino(tf, taddr), &k);
	if (group >= 0) {
		k = group ? H5_OBJ_GROUP : H5_OBJ_DATASET;
		group = -1;     /* (a retry below: asked anew) */
	} else if (!known) {
		if (h5_obj_info_get(&info, tf, taddr) == 0)
			k = info.kind;
		h5_err_clear();   /* node_make_obj reports it */
	}
	/* a directory is a node per path: its ancestors are its own (one
	 * of a single path is numbered by its address) */
	byaddr = k == H5_OBJ_GROUP && !many && group_by_addr(p, u, tf, taddr, fpath);
	id = byaddr ? H5FS_SYNTH_BIT | H5FS_DIRADDR_BIT | (taddr + 2)
		    : k == H5_OBJ_GROUP ? synth_ino(fs, p->ino, name) : file_nodeid(fs, tf, taddr);
	if (!id)
		return ENOMEM;
	*out = NULL;
	/* what the listing read, of an object shown by nothing yet: its
	 * record kept at once (a cold walk's every dataset, issue 82;
	 * light_keep keeps none where a node or record shows it already,
	 * under the same lock it looks with) */
	if (sh && k != H5_OBJ_GROUP && tries == 0 && show_listed(lst, fs, u, p->ino, path, tf, taddr, id, sh))
		return 0;
	/* shown before, and still stat-only and current (state/light.c) */
	if (k != H5_OBJ_GROUP && (light_ref(fs, id, taddr, tf, p->ino, name, lst) ||
				  (node_light_fresh(fs, id) && light_ref(fs, id, taddr, tf, p->ino, name, lst))))
		return 0;
	n = node_ref_existing(fs, id);
	if (n && byaddr) {
		e = __atomic_load_n(&n->unlinked, __ATOMIC_ACQUIRE) ? ESTALE : node_fresh(fs, n);
		if (e == 0 && n->type == NT_DIR)
			goto found;
		node_unref(fs, id, 1);
		if (e != 0 && e != ESTALE)
			return e;
		/* the node of a group removed since that had this address,
		 * which the kernel may still hold: the name's (parent, name)
		 * number, as a dataset's (below) */
		id = synth_ino(fs, p->ino, name);
		if (!id)
			return ENOMEM;
		n = node_ref_existing(fs, id);
	}
	if (n && k == H5_OBJ_GROUP) {
		/* re-resolved by its path, anchors included (live/live.c) */
		e = synth_recheck(&keep, &id, fs, n, p->ino, name, false);
		if (e)
			return e;
		if (keep)
			goto found;
		n = NULL;
	} else if (n) {
		/* the object's own node (hard links share it), unless a live
		 * FILE's change left it stale or it is the node of an object
		 * removed since whose space this one took (unlinked): the
		 * kernel may still send requests for that id meaning the old
		 * object (they carry no generation), so it is not made another
		 * object before the kernel forgets it; the name gets its
		 * (parent, name) number */
		e = __atomic_load_n(&n->unlinked, __ATOMIC_ACQUIRE) ? ESTALE : node_fresh(fs, n);
		if (e == 0)
			goto found;
		node_unref(fs, n->ino, 1);
		if (e != ESTALE)
			return e;
		id = synth_ino(fs, p->ino, name);
		if (!id)
			return ENOMEM;
		n = node_ref_existing(fs, id);
		if (n && (__atomic_load_n(&n->unlinked, __ATOMIC_ACQUIRE) || n->addr != taddr || n->f != tf)) {
			/* that number shows another object: a new one */
			uint64_t old = n->ino;

			node_unref(fs, old, 1);
			n = NULL;
			id = synth_renew(fs, p->ino, name, old);
			if (!id)
				return ENOMEM;
		} else if (n) {
			/* shown so before: still this object? */
			e = synth_recheck(&keep, &id, fs, n, p->ino, name, true);
			if (e)
				return e;
			if (keep)
				goto found;
			n = NULL;
		}
	}
	if (!n) {
		/* (a retry: the map's kind was another generation's) */
		rc = node_make_obj_as(&fresh, fs, tf, taddr, id, path, !known || tries > 0);
		if (rc < 0)
			return lookup_err(fs, quiet, rc, p->path, name, taddr);
		if ((fresh->type == NT_DIR) != (k == H5_OBJ_GROUP) && tries++ == 0) {
			/* the kind map was filled from an older generation of a
			 * live FILE as it was refreshed: node_make_obj has put
			 * the kind read now there */
			node_free(fresh);
			fresh = NULL;
			k = H5_OBJ_UNKNOWN;
			goto again;
		}
		if (byaddr && fresh->type == NT_DIR && fresh->links_many) {
			/* a group of several links: the (parent, name) number
			 * (rare: made once more then) */
			node_free(fresh);
			fresh = NULL;
			many = true;
			goto again;
		}
		if (fresh->type == NT_DIR) {
			fresh->parent = p->ino;
			if (dir_anchor(fresh, u->g->f, p, tf, name, path, fpath) != 0) {
				node_free(fresh);
				return ENOMEM;
			}
		}
		if (id & H5FS_SYNTH_BIT)
			fresh->parent = p->ino;     /* its number is (parent, name)'s */
		/* the generation its entries carry from now on: its tag, kept
		 * by the node or record (export.c) */
		export_tag(fs, fresh->tag);
		fresh->gen = u->g;
		fresh->checked = u->g->num;
		gen_hold(u->g);
		/* a dataset's or named datatype's name the kernel keeps for stat:
		 * ~60 bytes instead of the node (fs.h struct lslot) */
		if (light_keep(fs, fresh, u->g, p->ino)) {
			*lst = fresh->st;
			node_free(fresh);
			return 0;
		}
		node_ds_shed(fresh);    /* stat needs no more (node.c) */
		*out = node_publish(fs, fresh);
		return 0;
	}
found:
	if (n->type != NT_DIR) {
		/* the entry a live FILE's change invalidates (live/live.c); a
		 * directory's parent is its path's, fixed */
		pthread_mutex_lock(&fs->lock);
		n->parent = p->ino;
		pthread_mutex_unlock(&fs->lock);
	}
	*out = n;
	return 0;
}

/* The symlink node `name` of directory p shows (l as link_place answered
 * rc; depth >= 0: a link up the path, "." / ".."...), read in the
 * generation u holds: 0 and *out (referenced), or an errno. */
static int show_symlink(struct node **out, h5fs *fs, const struct node *p, const struct use *u, const char *name,
			const char *path, const h5_link *l, int rc, int depth, bool quiet)
{
	struct node *n, *fresh = NULL;
	h5_link shown;
	char *mtarget = NULL;
	uint64_t ino = synth_ino(fs, p->ino, name);
	bool keep;
	int e;

	if (!ino)
		return ENOMEM;
	n = node_ref_existing(fs, ino);
	if (n) {
		/* else the name was something else in the generation n was
		 * read in */
		e = synth_recheck(&keep, &ino, fs, n, p->ino, name, false);
		if (e)
			return e;
		if (keep) {
			*out = n;
			return 0;
		}
	}
	e = link_shown(&shown, &mtarget, p, u->f, l, rc);
	if (e)
		return e;
	rc = node_make_link(&fresh, fs, ino, path, p->path, depth >= 0 ? NULL : &shown, depth);
	free(mtarget);
	if (rc < 0)
		return lookup_err(fs, quiet, rc, p->path, name, UINT64_MAX);
	fresh->gen = u->g;
	fresh->checked = u->g->num;
	gen_hold(u->g);
	*out = node_publish(fs, fresh);
	return 0;
}

/* st_nlink with the batch's links and unlinks not committed yet
 * (behind/mbatch.c): FILE's count and the change pending, read again
 * together when the count the node was made with, read from FILE when
 * the batch had made `commits` commits, may be off (a change pending, or
 * a commit since whose change the batch no longer holds) */
static void pending_nlink(h5fs *fs, struct node *n, struct stat *lst, h5_file *f, uint64_t addr, uint64_t commits)
{
	unsigned c;

	if (n ? n->type != NT_FILE : S_ISDIR(lst->st_mode))
		return;
	if (!lbatch_nlink_moved(fs, f, addr, commits))
		return;
	if (lbatch_nlink(fs, f, addr, &c) < 0 || !c) {
		h5_err_clear();
		return;
	}
	/* a stat-only record keeps the count its lookup read: a node now,
	 * which keeps this one (nlink_update, member/link.c, moves it) */
	if (!n) {
		lst->st_nlink = c;
		n = node_get(fs, lst->st_ino);
		if (!n)
			return;
	}
	pthread_rwlock_wrlock(&n->lk);
	n->st.st_nlink = c;
	pthread_rwlock_unlock(&n->lk);
}

/* The node a name of a directory leads to: 0 and *out (referenced; NULL:
 * a stat-only object, *lst), or an errno (EIO logged). hint: what a
 * listing knew of the name (NULL: nothing) */
static int do_lookup(struct node **out, struct stat *lst, h5fs *fs, fuse_ino_t parent, const char *name,
		     bool quiet, const struct listed *hint)
{
	struct node *p = node_get(fs, parent);
	struct use u;
	h5_link l;
	h5_file *tf = NULL;
	uint64_t taddr = UINT64_MAX;
	char *path = NULL, *fpath = NULL;
	int rc, e = 0, depth = -1;
	bool pending = false, removed = false, listed_now;
	/* (before any count is read from FILE: pending_nlink) */
	uint64_t commits = lbatch_commits(fs);

	memset(&l, 0, sizeof(l));
	if (!p)
		return ESTALE;
	if (p->type != NT_DIR)
		return ENOTDIR;
	if (!name_ok(name, strlen(name)))
		return ENOENT;
	/* a group a live FILE no longer has holds no names */
	e = node_use(&u, fs, p);
	if (e)
		return e == ESTALE ? ENOENT : e;
	/* what a listing of this generation read is what a lookup reads now
	 * where names change with the generation alone (a mount that does
	 * not write), or none of this mount's changes (a rename, unlink,
	 * write, batch: node.h fs_change_begin) began since it was read with
	 * none under way (issue 82) */
	listed_now = hint && hint->gen == u.g &&
		     (!pager_writes(&fs->pg) || (hint->quiet && !fs_change_since(fs, hint->chg)));
	/* the object it found: its name needs no second look in the group's
	 * B-tree */
	if (listed_now && hint->addr != UINT64_MAX) {
		l.type = H5_LINK_HARD;
		l.addr = hint->addr;
		path = h5_path_join(p->path, name);
		if (!path) {
			e = ENOMEM;
			goto out;
		}
		goto hard;
	}
	/* FILE's link, less the rmdirs answered and not committed yet, plus
	 * the new names not linked yet (member_name_seen: read with no
	 * batch committed in between) */
	rc = member_name_seen(&l, &removed, &pending, &taddr, fs, u.f, u.addr, name);
	if (removed) {
		/* an rmdir answered, its removal not committed yet (lbatch.c) */
		h5_link_clear(&l);
		rc = h5_err_set(H5_ERR_NOTFOUND, "\"%s\" removed", name);
	}
	if (pending) {
		/* a new file not linked yet (lbatch.c): its header is there */
		h5_err_clear();
		h5_link_clear(&l);
		l.name = strdup(name);
		l.name_len = strlen(name);
		l.type = H5_LINK_HARD;
		l.addr = taddr;
		taddr = UINT64_MAX;
		rc = l.name ? 0 : H5_ERR_NOMEM;
	}
	if (rc < 0) {
		e = lookup_err(fs, quiet, rc, p->path, name, UINT64_MAX);
		goto out;
	}
	/* Names readdir would skip must not be reachable by lookup either. */
	if (!name_ok(l.name, l.name_len) || strcmp(l.name, name) != 0) {
		e = ENOENT;
		goto out;
	}
	path = h5_path_join(p->path, name);
	if (!path) {
		e = ENOMEM;
		goto out;
	}
hard:
	switch (l.type) {
	case H5_LINK_HARD:
		tf = u.f;
		h5_file_hold_related(tf);
		taddr = l.addr;
		rc = 0;
		break;
	case H5_LINK_SOFT:
	case H5_LINK_EXTERNAL:
		rc = link_place(&tf, &taddr, &fpath, p, u.f, &l);
		if (rc < 0)
			h5fs_log(fs, LOG_NOTICE, "lookup %s: %s link not followed, shown as a symlink: %s",
				 show_path(path), l.type == H5_LINK_SOFT ? "soft" : "external", h5_err_msg());
		break;
	default:
		/* user-defined link types (65..255) have no meaning to us */
		h5fs_log(fs, LOG_INFO, "lookup %s/%s: link type %d not shown", show_path(p->path), name,
		       (int)l.type);
		e = ENOENT;
		goto out;
	}
	if (rc == 0) {
		/* a link up to this group or one of its ancestors on this path:
		 * a symlink there */
		bool listed = hint && hint->addr == taddr && tf == u.f;

		/* (what the listing of this generation read as no group is
		 * none of the directories above: those are groups, numbered
		 * by their own headers' addresses) */
		depth = listed && listed_now && hint->has_st && hint->kind != H5_OBJ_GROUP
				? -1 : ancestor_depth(fs, p, file_ino(tf, taddr));
		if (depth < 0) {
			e = show_object(out, lst, fs, p, &u, name, path, tf, taddr, fpath, quiet,
					listed ? hint->group : -1, listed && listed_now && hint->has_st ? hint : NULL);
			if (!e && tf == u.f)
				pending_nlink(fs, *out, lst, tf, taddr, commits);
			goto out;
		}
	}
	e = show_symlink(out, fs, p, &u, name, path, &l, rc, depth, quiet);
out:
	h5_file_release_related(tf);
	node_use_end(&u);
	free(path);
	free(fpath);
	h5_link_clear(&l);
	return e;
}

/* listed: READDIRPLUS's lookup (root.h lookup_listed): an EIO unlogged */
int member_lookup_as(void *r, struct root_entry *e, uint64_t parent, const char *name, const struct listed *listed)
{
	h5fs *fs = r;
	struct node *n = NULL;
	struct stat lst;
	int err;

	/* a live FILE's lookup that failed may be retried (a writer may be
	 * mid-change): only the answer's failure is logged, once */
	for (int attempt = 0; (err = do_lookup(&n, &lst, fs, parent, name, true, listed)) == EIO &&
			      live_retry(fs, attempt);
	     attempt++)
		;
	if (err == EIO && !listed)
		err = do_lookup(&n, &lst, fs, parent, name, false, NULL);
	if (!err && n) {
		entry_of(e, fs, n);
	} else if (!err) {
		/* a stat-only object: its node id is its st_ino */
		memset(e, 0, sizeof(*e));
		e->ino = (uint64_t)lst.st_ino;
		e->attr = lst;
		e->timeout = node_timeout(fs);
	}
	/* (every entry the kernel is given is a lookup's: create, mkdir, link
	 * and READDIRPLUS too) */
	if (!err)
		e->generation = export_gen(fs, e->ino);
	return err;
}

int member_lookup(void *r, struct root_entry *e, uint64_t parent, const char *name)
{
	return member_lookup_as(r, e, parent, name, NULL);
}

void member_forget(void *r, uint64_t ino, uint64_t nlookup)
{
	node_unref(r, ino, nlookup);
}

static int do_getattr(struct stat *st, h5fs *fs, fuse_ino_t ino)
{
	struct node *n;
	int e;

	/* a stat-only object of the current generation answers itself */
	if (light_getattr(fs, ino, st))
		return 0;
	/* one of an older generation stays one (node_light_fresh) */
	if (node_light_fresh(fs, ino) && light_getattr(fs, ino, st))
		return 0;
	n = node_get(fs, ino);
	if (!n)
		return ESTALE;
	e = node_fresh(fs, n);
	if (e)
		return e;
	/* an append or a refresh may be updating st */
	pthread_rwlock_rdlock(&n->lk);
	*st = n->st;
	pthread_rwlock_unlock(&n->lk);
	/* removed or renamed over while a descriptor holds it: no link left,
	 * as fstat says on any file system, a directory's too (xfstests
	 * generic/035) */
	if (__atomic_load_n(&n->unlinked, __ATOMIC_ACQUIRE) && n->type != NT_LINK)
		st->st_nlink = 0;
	return 0;
}

int member_getattr(void *r, struct stat *st, double *timeout, uint64_t ino)
{
	*timeout = node_timeout(r);
	return do_getattr(st, r, ino);
}

static int do_readlink(const char **target, h5fs *fs, fuse_ino_t ino)
{
	struct node *n = node_get(fs, ino);
	int e;

	if (!n)
		return ESTALE;
	e = node_fresh(fs, n);
	if (e)
		return e;
	if (n->type != NT_LINK)
		return EINVAL;
	pthread_rwlock_rdlock(&n->lk);   /* a live refresh may replace it */
	*target = n->target;             /* (the old text is kept: live/live.c) */
	pthread_rwlock_unlock(&n->lk);
	/* The kernel takes at most PATH_MAX - 1 bytes: /dev/fuse refuses a
	 * longer reply, and the caller would see an EIO nobody logged. */
	if (strlen(*target) >= PATH_MAX) {
		h5fs_log(fs, LOG_WARNING, "readlink %s: target of %zu bytes is longer than PATH_MAX",
			 show_path(n->path), strlen(*target));
		return ENAMETOOLONG;
	}
	return 0;
}

int member_readlink(void *r, char **target, uint64_t ino)
{
	const char *t = NULL;
	int e = do_readlink(&t, r, ino);

	if (e)
		return e;
	/* a copy: a live refresh may replace the node's text meanwhile */
	*target = strdup(t);
	return *target ? 0 : ENOMEM;
}

/* Read again whenever a batch committed between the reads: a removal
 * committing between FILE's read and the removals' made a removed name
 * look linked (its node made after the rmdir's gone_unlinked, naming an
 * address the commit freed: a group made there later, a mkdir's slot,
 * was answered with the removed directory's id: ESTALE), or a fresh
 * name taken (mkdir's EEXIST, test_concurrent under TSan). */
int member_name_seen(h5_link *l, bool *removed, bool *pending, uint64_t *taddr, h5fs *fs, h5_file *f,
		     uint64_t group, const char *name)
{
	int rc;

	for (uint64_t seen = lbatch_commits(fs);; seen = lbatch_commits(fs)) {
		*taddr = UINT64_MAX;
		memset(l, 0, sizeof(*l));
		rc = h5_group_lookup(l, f, group, name);
		*removed = rc == 0 && lbatch_removed(fs, f, group, name, strlen(name));
		*pending = rc == H5_ERR_NOTFOUND && lbatch_lookup(fs, f, group, name, taddr);
		/* a name a batched rename or link gave (behind/mbatch.c) */
		if (!*pending && lbatch_moved(fs, f, group, name, taddr))
			*pending = true, *removed = false;
		if (lbatch_commits(fs) == seen)
			return rc;
		h5_link_clear(l);
		h5_err_clear();
	}
}
