/* link.c - groups and links changed through the mount (doc/h5fs.1
 * MODIFYING): mkdir, rmdir, unlink, symlink, rename and link in groups of
 * compact link storage (the engine's write/link_write.c, link_move.c). Each is one ordered commit
 * between commit_begin and commit_end (commit/gate.c); the dispatcher replies (an
 * entry for mkdir and symlink, looked up afresh). Symbol-table groups
 * (libhdf5's default format) and dense storage are refused with ENOTSUP
 * and a log line. */
#include "member.h"
#include "batch.h"
#include "npystream.h"
#include "retype.h"
#include "resize.h"
#include "owner.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

int member_fsyncdir(void *r, uint64_t ino)
{
	(void)ino;      /* every change of FILE is one commit order */
	return fs_meta_sync(r);        /* (nothing unsynced on a read-only mount) */
}

/* The group node parent of FILE itself (objects of files reached by
 * external links are read-only), in use (*u) as the current generation
 * shows it, writing begun. */
static int begin_change(struct use *u, h5fs *fs, struct node **p, uint64_t parent, bool create)
{
	*p = node_get(fs, parent);
	if (!*p)
		return ESTALE;
	if ((*p)->type != NT_DIR)
		return ENOTDIR;
	/* new files and attributes accepted before come first (a create
	 * joins the batch of new files instead: lbatch.c) */
	return commit_begin(u, fs, *p, create ? COMMIT_ATTRS : COMMIT_ALL, "change in");
}

static int begin(struct use *u, h5fs *fs, struct node **p, uint64_t parent)
{
	return begin_change(u, fs, p, parent, false);
}

static void end(h5fs *fs, struct use *u)
{
	commit_end(fs, u, true);        /* (changed also after a failure: it may have written) */
}

/* errno of a failed change: `perm` for H5_ERR_PERM, `inval` for
 * H5_ERR_INVAL; one log line (the user's mistakes at debug level). */
static int link_errno(h5fs *fs, int rc, int perm, int inval, const char *op, const struct node *p, const char *name)
{
	int e;

	switch (rc) {
	case H5_ERR_NOTFOUND: e = ENOENT; break;
	case H5_ERR_UNSUPPORTED: e = ENOTSUP; break;
	case H5_ERR_PERM: e = perm; break;
	case H5_ERR_INVAL: e = inval; break;
	/* a link larger than the group's dense store keeps in place (a huge
	 * heap object, which h5fs does not write): refused, nothing written */
	case H5_ERR_LIMIT: e = ENAMETOOLONG; break;
	default: e = h5fs_errno(rc); break;
	}
	h5fs_log(fs, e == ENOTSUP || e == ENAMETOOLONG || e == EIO || e == ENOSPC ? LOG_ERR : LOG_DEBUG, "%s %s/%s: %s: %s", op,
		 strcmp(p->path, "/") == 0 ? "" : p->path, name, strerror(e), h5_err_msg());
	return e;
}

/* EEXIST when the group in use (u) has a link NAME, or a new file NAME
 * waits for its link (lbatch.c), else 0. FILE, the pending removals and
 * the pending names are read one after the other, so a batch committed
 * in between (its removals gone from FILE and from the pending list
 * together) is looked at again, as lookup.c's do_lookup does: else an
 * rmdir answered just before, its removal committing meanwhile, made the
 * next mkdir of the name EEXIST (TSan's test_concurrent, "sub27"). */
static int name_taken(h5fs *fs, const struct use *u, const char *name)
{
	h5_link l;
	uint64_t taddr;
	bool removed, pending;
	int rc = member_name_seen(&l, &removed, &pending, &taddr, fs, u->f, u->addr, name);

	h5_link_clear(&l);
	h5_err_clear();
	return (rc == 0 && !removed) || pending ? EEXIST : 0;
}

/* mkdir joins the batch of new files (lbatch.c, issue 70 item 3): its
 * group made loose, linked with the batch's one commit (at most LB_MAX_MS
 * later, or before anything that could see the group's names), so the
 * answer waits for no fsync; made at once when there is no batch. */
int member_mkdir(void *r, uint64_t parent, const char *name)
{
	h5fs *fs = r;
	struct node *p;
	struct use u;
	uint64_t addr;
	int err = begin_change(&u, fs, &p, parent, true), rc;

	if (err)
		return err;
	err = name_taken(fs, &u, name);
	if (!err && own_classic(u.f)) {
		/* the classic model has no groups: netCDF-C's nccopy fails on
		 * a file holding one (issue 57) */
		h5fs_log(fs, LOG_NOTICE, "mkdir %s/%s: EPERM: a netCDF-4 classic model file has no groups",
			 strcmp(p->path, "/") == 0 ? "" : p->path, name);
		err = EPERM;
	}
	if (!err && (rc = lbatch_create(fs, p, name, NULL)) >= 0) {
		err = rc;
		goto out;
	}
	/* a v2 group tracks creation order as its parent does (netCDF-4's
	 * groups: the engine's h5_group_create) */
	if (!err && (rc = h5_group_create(&addr, u.f, u.addr, name, strlen(name))) < 0)
		err = link_errno(fs, rc, EPERM, EINVAL, "mkdir", p, name);
out:
	if (!err)
		node_touch(p, true);    /* a directory's entries changed (batched or not) */
	end(fs, &u);
	return err;
}

/* create(2) in a group (cp blob.bin mnt/g/; issue 32 item 2): a growable
 * 1-D uint8 dataset NAME, made and linked at once (one commit,
 * write/dset_create.c), which the dispatcher then opens for writing: what
 * is written is appended (write.c), so the bytes are there, committed, at
 * close or fsync. Chunks of 64 KiB: h5py's guess for an empty growable
 * uint8 dataset is 1 KiB, which would make a 1 GiB copy a million chunks.
 * NAME.npy is the placeholder of an np.save stream (npy.c), which makes
 * dataset NAME when it ends. */
#define NEW_BYTES_CHUNK 65536

int member_create(void *r, uint64_t parent, const char *name)
{
	h5fs *fs = r;
	struct node *p;
	struct use u;
	uint64_t addr;
	h5_dset_new d = { .rank = 1, .kind = 'u', .size = 1, .chunked = 1, .growable = 1,
			  .deflate = fs->cfg.compress, .filter = fs->cfg.compress_filter,
			  .chunk = { NEW_BYTES_CHUNK } };
	bool npy = strlen(name) > 4 && strcmp(name + strlen(name) - 4, ".npy") == 0;
	enum own_kind own;
	int err = begin_change(&u, fs, &p, parent, true), rc;

	if (err)
		return err;
	err = name_taken(fs, &u, name);
	own = err || npy ? OWN_HDF5 : own_detect(u.f);
	if (!err && !npy && own == OWN_HDF5 && (rc = lbatch_create(fs, p, name, &d)) >= 0) {
		/* linked with its batch (lbatch.c) */
		err = rc;
		goto out;
	}
	if (own == OWN_NC4_CLASSIC) {
		/* bytes are NC_UBYTE, which the classic model has not: ncdump
		 * and nccopy fail on such a file (issue 57) */
		h5fs_log(fs, LOG_NOTICE, "create %s/%s: EPERM: a netCDF-4 classic model file holds no bytes (NC_UBYTE)",
			 strcmp(p->path, "/") == 0 ? "" : p->path, name);
		err = EPERM;
	}
	/* a placeholder is made and registered as one step for a rename
	 * (npy_move.c; an open of a view, np.save over NAME, is not kept
	 * from renames by the kernel as a create is) */
	if (npy)
		npy_names_lock(true);
	if (!err && (rc = h5_dataset_create(&addr, u.f, u.addr, name, strlen(name), &d, UINT64_MAX)) < 0) {
		err = link_errno(fs, rc, EPERM, EINVAL, "create", p, name);
	} else if (!err && npy) {
		char *path = h5_path_join(p->path, name);

		if (path)
			npy_pending_add(fs, addr, u.addr, p->ino, path);
		free(path);
		npy_made_note(addr);
	}
	if (npy)
		npy_names_lock(false);
	if (!err && !npy && own == OWN_NC4) {
		/* in a netCDF-4 file the bytes are a variable on a new unlimited
		 * dimension (xarray's h5netcdf engine refuses a file holding a
		 * variable without dimensions); not made: logged, still bytes */
		uint64_t zero = 0;
		char why[160] = "";

		if ((rc = nc_attach_var(u.f, &fs->nc_ids, p->path, u.addr, addr, 1, &zero, true, why, sizeof(why))) < 0)
			h5fs_log(fs, LOG_ERR, "create %s/%s: made without a netCDF dimension: %s",
				 strcmp(p->path, "/") == 0 ? "" : p->path, name, h5_err_msg());
		h5_err_clear();
	}
out:
	if (!err)
		node_touch(p, true);
	end(fs, &u);
	return err;
}

/* st_nlink of the node of the object at addr (if the kernel holds one) as
 * its header counts now: after a hard link made or removed. */
static void nlink_update(h5fs *fs, h5_file *f, uint64_t addr)
{
	struct node *n = node_get(fs, file_ino(f, addr));
	unsigned c;

	/* (with the batch's links and unlinks not committed yet, read with
	 * FILE's count under the batch's lock: lbatch_nlink) */
	if (n && n->type == NT_FILE && lbatch_nlink(fs, f, addr, &c) == 0 && c) {
		pthread_rwlock_wrlock(&n->lk);
		n->st.st_nlink = c;
		pthread_rwlock_unlock(&n->lk);
		node_touch(n, false);   /* a link count changed: its ctime */
	}
	h5_err_clear();
}

/* Whether a name change may join the batch of link changes
 * (behind/mbatch.c): no np.save stream or placeholder open (npy_move.c
 * renames those with their streams), no NAME.npy involved. */
static bool npy_quiet(h5fs *fs, const char *a, const char *b)
{
	bool quiet;

	for (int i = 0; i < 2; i++) {
		const char *s = i ? b : a;
		size_t n = s ? strlen(s) : 0;

		if (n > 4 && strcmp(s + n - 4, ".npy") == 0)
			return false;
	}
	pthread_mutex_lock(&fs->lock);
	quiet = !fs->npy_pending && !fs->npy_taken;
	pthread_mutex_unlock(&fs->lock);
	return quiet;
}

/* unlink(2) of a name whose object keeps another, or of a dataset's one
 * name: in the batch
 * (behind/mbatch.c, answered before its commit): 0 or an errno, or -1
 * when it is not one for the batch. */
/* A dataset's last name may go in the batch: not in a netCDF-4 file,
 * where a variable's removal takes it off its dimensions (nc_detach_var),
 * and not while a descriptor reads or writes it: the ordered path keeps
 * its storage for them at once (gone_keep), where the batch would keep
 * it only after its commit, and the descriptor's reads and writes
 * meanwhile found its storage gone, ESTALE (stress-ng --seek: open,
 * unlink, write) */
static bool last_takeable(h5fs *fs, h5_file *f, uint64_t addr)
{
	return own_detect(f) == OWN_HDF5 && !gone_object_open(fs, f, addr);
}

static int unlink_batched(h5fs *fs, uint64_t parent, const char *name)
{
	struct node *p;
	struct use u;
	uint64_t addr = UINT64_MAX;
	bool last = false;
	int err;

	if (!npy_quiet(fs, name, NULL))
		return -1;
	err = begin_change(&u, fs, &p, parent, true);
	if (err)
		return err;
	err = lbatch_unlink(fs, p, name, &addr, &last, last_takeable);
	if (err == 0) {
		synth_forget(fs, p->ino, name);
		node_touch(p, true);
		/* its last name: its nodes matched by no later lookup, its
		 * file handles stale, from the answer on (its storage is freed
		 * after the batch's commit: mbatch.c, gone_keep) */
		if (last)
			gone_unlinked(fs, u.f, addr);
		else if (addr != UINT64_MAX)    /* (a soft link: no count) */
			nlink_update(fs, u.f, addr);
	}
	commit_end(fs, &u, err != -1);  /* (not for the batch: nothing written) */
	return err;
}

static int remove_link(h5fs *fs, uint64_t parent, const char *name, int want)
{
	struct node *p;
	struct use u;
	struct h5_gone *gone = NULL;
	h5_link l = { 0 };
	h5_obj_info info;
	bool detach = false;
	uint64_t target;
	int err, rc, rc2;

	retype_names_hold(true);        /* (not while retype.c moves a name) */
	if (want == 2 && (err = unlink_batched(fs, parent, name)) != -1) {
		retype_names_hold(false);
		return err;
	}
	/* rmdir joins the batch (lbatch.c): new names and attribute values
	 * before it are flushed there or by the barrier */
	err = begin_change(&u, fs, &p, parent, want == 1);
	if (err) {
		retype_names_hold(false);
		return err;
	}
	if (want == 1 && (rc = lbatch_rmdir(fs, p, name, &target, &rc2)) != -1) {
		/* removed with the batch's one commit, its space freed then;
		 * lookups miss it from now (lbatch_removed) */
		err = rc;
		if (rc == -2)
			err = link_errno(fs, rc2, ENOTEMPTY, ENOTDIR, "rmdir", p, name);
		h5_err_clear();
		if (err == 0) {
			synth_forget(fs, p->ino, name);
			node_touch(p, true);    /* its entries changed now, as the answer says */
			if (target != UINT64_MAX)
				gone_unlinked(fs, u.f, target);
		}
		end(fs, &u);
		retype_names_hold(false);
		return err;
	}
	if (h5_group_lookup(&l, u.f, u.addr, name) < 0)
		h5_err_clear();
	/* a netCDF-4 variable's last link: taken off its dimensions after
	 * (issue 57; netCDF has no removal, the lists would name a dataset
	 * gone). A crash between leaves those entries, as before. */
	if (want == 2 && l.type == H5_LINK_HARD && h5_obj_info_get(&info, u.f, l.addr) == 0 &&
	    info.kind == H5_OBJ_DATASET && info.nlink == 1 && own_detect(u.f) != OWN_HDF5)
		detach = true;
	h5_err_clear();
	if (want == 2) {
		rc = h5_link_delete_gone(u.f, u.addr, name, strlen(name), &gone);
	} else {
		rc = h5_link_delete(u.f, u.addr, name, strlen(name), want);
	}
	if (rc < 0)
		err = link_errno(fs, rc, want == 1 ? ENOTEMPTY : EISDIR, ENOTDIR, want == 1 ? "rmdir" : "unlink", p, name);
	else
		synth_forget(fs, p->ino, name);
	if (rc == 0)
		node_touch(p, true);
	/* a removed group's space is freed at once */
	if (rc == 0 && want == 1 && l.type == H5_LINK_HARD)
		gone_unlinked(fs, u.f, l.addr);
	if (rc == 0 && detach && (rc2 = nc_detach_var(u.f, &fs->nc_ids, u.addr, l.addr)) < 0)
		h5fs_log(fs, LOG_ERR, "unlink %s/%s: removed, but its dimension scales still name it: %s",
			 strcmp(p->path, "/") == 0 ? "" : p->path, name, h5_err_msg());
	h5_err_clear();
	/* (after the detach, which reads the removed variable's header) */
	if (gone)
		gone_keep(fs, u.g, u.f, l.addr, gone);
	if (rc == 0 && l.type == H5_LINK_HARD && l.addr != UINT64_MAX)
		nlink_update(fs, u.f, l.addr);
	h5_link_clear(&l);
	end(fs, &u);
	retype_names_hold(false);
	return err;
}

int member_rmdir(void *r, uint64_t parent, const char *name)
{
	return remove_link(r, parent, name, 1);
}

int member_unlink(void *r, uint64_t parent, const char *name)
{
	return remove_link(r, parent, name, 2);
}

/* The HDF5 path a symlink target names, seen from group dir: absolute
 * targets as they are (the mount's root is FILE's); relative ones joined to dir, "." and ".."
 * resolved lexically (never above the root). NULL: no memory. */
static char *resolve(const char *dir, const char *target)
{
	size_t n = strlen(dir) + strlen(target) + 3;
	char *in = malloc(n), *out = malloc(n), *save = NULL, *tok;
	size_t o = 0;

	if (!in || !out) {
		free(in);
		free(out);
		return NULL;
	}
	snprintf(in, n, "%s/%s", target[0] == '/' ? "" : dir, target);
	for (tok = strtok_r(in, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		if (strcmp(tok, ".") == 0)
			continue;
		if (strcmp(tok, "..") == 0) {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
			continue;
		}
		out[o++] = '/';
		memcpy(out + o, tok, strlen(tok));
		o += strlen(tok);
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	free(in);
	return out;
}

/* Whether target is relative and has no ".." component: HDF5 resolves
 * such a soft link from its own group as the kernel resolves the symlink
 * from its directory - "." components, repeated and trailing slashes
 * included (libhdf5's traversal passes over them) - so it is stored as
 * written (h5py's SoftLink("x/y")) and reads back so (node/names.c
 * symlink_text): ln -s ./a/./b gives readlink ./a/./b, as rsync and
 * stress-ng --symlink compare it. */
static bool plain_relative(const char *target)
{
	return *target && *target != '/' && !path_has_dotdot(target);
}

/* What a soft link made by symlink(2) stores: a relative target without
 * ".." as written, any other resolved to the absolute HDF5 path from group dir
 * (libhdf5 has no ".."). A target NAME.npy is kept so (it reads back as
 * written, so a second rsync finds it equal), though a NAME.npy file
 * holding an NPY stream became dataset NAME: through the mount it leads
 * to the view NAME.npy of that dataset; in HDF5 it dangles unless a link
 * NAME.npy is there. NULL: no memory. */
static char *link_value(const h5fs *fs, const char *dir, const char *target)
{
	size_t n = fs->mnt ? strlen(fs->mnt) : 0;

	if (plain_relative(target))
		return strdup(target);
	/* an absolute path into the mount (ln -s "$PWD/mnt/g/x"): the HDF5
	 * path of the object it names (taken as an HDF5 path as it was, it
	 * named /tmp/.../mnt/g/x inside FILE, which is not there) */
	if (n > 1 && strncmp(target, fs->mnt, n) == 0 && (target[n] == '/' || !target[n]))
		return resolve(dir, target[n] ? target + n : "/");
	return resolve(dir, target);
}

int member_symlink(void *r, const char *target, uint64_t parent, const char *name)
{
	h5fs *fs = r;
	struct node *p;
	struct use u;
	h5_link l;
	char *path;
	int err = begin(&u, fs, &p, parent), rc;

	if (err)
		return err;
	rc = h5_group_lookup(&l, u.f, u.addr, name);
	h5_link_clear(&l);
	h5_err_clear();
	if (rc == 0) {
		err = EEXIST;
	} else if (!(path = link_value(fs, p->path, target))) {
		err = ENOMEM;
	} else {
		/* what the group's storage can take: the names kind decides */
		err = commit_ask(fs, &(struct commit_ask){ .op = PAGER_CHANGE, .kind = COMMIT_NAMES, .what = "symlink",
							   .path = p->path, .arg = &(struct lb_ask){
								   .f = u.f, .group = u.addr, .name = name,
								   .type = H5_LINK_SOFT, .target = path } });
		rc = err ? 0 : h5_link_insert(u.f, u.addr, name, strlen(name), H5_LINK_SOFT, 0, path, 0);
		if (rc < 0)
			err = link_errno(fs, rc, EPERM, EINVAL, "symlink", p, name);
		free(path);
	}
	if (!err)
		node_touch(p, true);
	end(fs, &u);
	return err;
}

/* Whether link l leads to a group (0/1), or an h5_err. */
static int is_group(h5_file *f, const h5_link *l)
{
	h5_obj_info info;
	int rc;

	if (l->type != H5_LINK_HARD)
		return 0;       /* soft and external links are symlinks here */
	rc = h5_obj_info_get(&info, f, l->addr);
	return rc < 0 ? rc : info.kind == H5_OBJ_GROUP;
}

/* rename(2) of a dataset to a free name of its group: in the batch
 * (behind/mbatch.c, answered before its commit): 0 or an errno, or -1
 * when it is not one for the batch (over a name, a directory, ...). */
static int rename_batched(h5fs *fs, uint64_t parent, const char *name, const char *newname)
{
	struct node *p;
	struct use u;
	uint64_t addr;
	int err;

	if (strcmp(name, newname) == 0 || !npy_quiet(fs, name, newname))
		return -1;
	err = begin_change(&u, fs, &p, parent, true);
	if (err)
		return err;
	err = lbatch_rename(fs, p, name, newname);
	if (err == 0 && lbatch_moved(fs, u.f, u.addr, newname, &addr)) {
		node_moved_file(fs, p, name, p, newname, file_ino(u.f, addr));
		node_touch(p, true);
		/* a dataset made again with its type set back (rsync -X),
		 * as below */
		if (retype_made(u.f, addr))
			npy_inval_after_reply(fs, p->ino, newname, NULL);
	} else if (err == 0) {
		node_moved(fs, p, name, p, newname);
		node_touch(p, true);
	}
	commit_end(fs, &u, err != -1);  /* (not for the batch: nothing written) */
	return err;
}

/* rename(2) as H5Lmove: what may replace what is rename(2)'s rule, checked
 * here; the engine moves the link (write/link_move.c: its crash states).
 * Both directories are groups of FILE (the dispatcher gives EXDEV across
 * collection members). */
int member_rename(void *r, uint64_t parent, const char *name, uint64_t newparent, const char *newname,
		  unsigned flags)
{
	h5fs *fs = r;
	struct node *p, *np;
	struct use u, nu;
	struct h5_gone *gone = NULL;
	h5_link src = { 0 }, dst = { 0 };
	h5_obj_info info;
	bool replaced = false, detach = false;
	struct npy_hold held = { 0 };
	char *moved = NULL;
	int err, rc, sg = 0, dg = 0;

	if (flags & ~(unsigned)RENAME_NOREPLACE)
		return EINVAL;          /* RENAME_EXCHANGE, RENAME_WHITEOUT */
	retype_names_hold(true);        /* (not while retype.c moves a name) */
	if (parent == newparent && (err = rename_batched(fs, parent, name, newname)) != -1) {
		retype_names_hold(false);
		return err;
	}
	err = begin(&u, fs, &p, parent);
	if (err) {
		retype_names_hold(false);
		return err;
	}
	np = node_get(fs, newparent);
	if (!np)
		err = ESTALE;
	else if (np->type != NT_DIR)
		err = ENOTDIR;
	else if (!(err = node_use_current(&nu, fs, np)) && (nu.addr == UINT64_MAX || nu.f != fs->f)) {
		node_use_end(&nu);
		err = commit_admit(fs, PAGER_FOREIGN, "link", np->path);        /* into another file's group */
	}
	if (err) {
		end(fs, &u);
		retype_names_hold(false);
		return err;
	}
	rc = h5_group_lookup(&src, u.f, u.addr, name);
	if (rc == 0)
		rc = sg = is_group(u.f, &src);
	if (rc < 0) {
		err = link_errno(fs, rc, EPERM, EINVAL, "rename", p, name);
		goto out;
	}
	/* the new name: what the new group's storage can take (a soft link
	 * into a dense group), asked of the names kind before anything moves */
	err = commit_ask(fs, &(struct commit_ask){ .op = PAGER_CHANGE, .kind = COMMIT_NAMES, .what = "rename",
						   .path = np->path, .arg = &(struct lb_ask){
							   .f = nu.f, .group = nu.addr, .name = newname,
							   .type = src.type, .target = src.target } });
	if (err)
		goto out;
	if (!sg && src.type == H5_LINK_HARD)
		npy_rename_hold(fs, &held, src.addr, u.addr, name, nu.addr, newname);
	if (held.s || held.p || held.d) {
		/* an np.save placeholder whose stream is open, held until the
		 * move is done and told (npy_move.c); its close may have made
		 * the dataset while we waited, the placeholder gone */
		h5_link again = { 0 };

		rc = h5_group_lookup(&again, u.f, u.addr, name);
		if (rc < 0 || again.type != H5_LINK_HARD || again.addr != src.addr)
			err = ENOENT;
		h5_link_clear(&again);
		h5_err_clear();
		if (err)
			goto out;
	}
	if (!sg) {
		int done;

		/* a stream renamed to NAME.npy: dataset NAME (npy_rename.c) */
		err = npy_rename(&done, fs, u.f, p, u.addr, name, &src, np, nu.addr, newname);
		if (err || done)
			goto out;
	}
	rc = h5_group_lookup(&dst, nu.f, nu.addr, newname);
	if (rc == 0) {
		replaced = true;
		if (flags & RENAME_NOREPLACE) {
			err = EEXIST;
			goto out;
		}
		rc = dg = is_group(nu.f, &dst);
		if (rc < 0) {
			err = link_errno(fs, rc, EPERM, EINVAL, "rename", np, newname);
			goto out;
		}
		/* bytes over a dataset of another type (sed -i, an editor's
		 * save): that type made again, or refused (rename_keep.c) */
		if (!sg && !dg) {
			int done;

			err = rename_keep(&done, fs, &nu, p, u.addr, name, &src, np, newname, &dst);
			if (err || done)
				goto out;
		}
		if (sg && !dg)
			err = ENOTDIR;
		else if (!sg && dg)
			err = EISDIR;
		else if (dg && !(src.type == H5_LINK_HARD && src.addr == dst.addr) &&
			 (rc = h5_link_delete(nu.f, nu.addr, newname, strlen(newname), 1)) < 0)
			/* an empty directory may be replaced: removed first (its own
			 * commit), as unlink does */
			err = link_errno(fs, rc, ENOTEMPTY, ENOTDIR, "rename", np, newname);
		else if (dg && !(src.type == H5_LINK_HARD && src.addr == dst.addr) && dst.type == H5_LINK_HARD)
			gone_unlinked(fs, nu.f, dst.addr);    /* its space freed at once */
		if (err)
			goto out;
	} else if (rc != H5_ERR_NOTFOUND) {
		err = link_errno(fs, rc, EPERM, EINVAL, "rename", np, newname);
		goto out;
	}
	h5_err_clear();
	/* a netCDF-4 variable replaced (its last link) goes off its
	 * dimensions after, as rm takes one off */
	if (replaced && dst.type == H5_LINK_HARD && !dg && !(src.type == H5_LINK_HARD && src.addr == dst.addr) &&
	    h5_obj_info_get(&info, nu.f, dst.addr) == 0 && info.kind == H5_OBJ_DATASET && info.nlink == 1 &&
	    own_detect(nu.f) != OWN_HDF5)
		detach = true;
	h5_err_clear();
	rc = h5_link_move_gone(u.f, u.addr, name, strlen(name), nu.addr, newname, strlen(newname), &gone);
	if (rc < 0)
		err = link_errno(fs, rc, EPERM, EINVAL, "rename", p, name);
	else
		node_moved(fs, p, name, np, newname);
	if (rc == 0 && (held.s || held.p))
		moved = h5_path_join(np->path, newname); /* its stream makes the array there */
	if (rc == 0) {
		node_touch(p, true);
		node_touch(np, true);
	}
	/* a dataset made again with the type set back on its bytes (rsync
	 * -X: at its close, just before): the kernel's entry names the
	 * bytes' inode, which it moves to newname (retype.c) */
	if (rc == 0 && !sg && src.type == H5_LINK_HARD && retype_made(u.f, src.addr))
		npy_inval_after_reply(fs, np->ino, newname, NULL);
	if (rc == 0 && detach && (rc = nc_detach_var(nu.f, &fs->nc_ids, nu.addr, dst.addr)) < 0)
		h5fs_log(fs, LOG_ERR, "rename %s/%s: replaced, but its dimension scales still name it: %s",
			 strcmp(np->path, "/") == 0 ? "" : np->path, newname, h5_err_msg());
	h5_err_clear();
	/* the replaced dataset's storage (after the detach, which reads it) */
	if (gone)
		gone_keep(fs, nu.g, nu.f, dst.addr, gone);
out:
	npy_rename_release(fs, &held, src.addr, nu.addr, np->ino, moved);
	free(moved);
	h5_link_clear(&src);
	h5_link_clear(&dst);
	node_use_end(&nu);
	end(fs, &u);
	retype_names_hold(false);
	return err;
}

/* link(2) as H5Lcreate_hard: datasets and named datatypes of FILE (a
 * directory: EPERM, as link(2) says; a symlink is no HDF5 object). */
int member_link(void *r, uint64_t ino, uint64_t newparent, const char *newname)
{
	h5fs *fs = r;
	struct node *n = node_get(fs, ino), *np;
	struct use u, nu;
	h5_link l;
	int err, rc;

	if (!n)
		return ESTALE;
	if (n->type != NT_FILE)
		return EPERM;
	if (npy_quiet(fs, newname, NULL)) {
		/* in the batch (behind/mbatch.c), answered before its commit */
		err = begin_change(&nu, fs, &np, newparent, true);
		if (err)
			return err;
		err = node_use_current(&u, fs, n);
		if (!err) {
			err = u.addr != UINT64_MAX && u.f == nu.f && u.f == fs->f ? lbatch_link(fs, np, u.addr, newname)
										 : -1;
			if (err == 0) {
				nlink_update(fs, u.f, u.addr);
				node_touch(np, true);
			}
			node_use_end(&u);
		}
		commit_end(fs, &nu, err != -1);        /* (not for the batch: nothing written) */
		if (err != -1)
			return err;
	}
	err = begin(&nu, fs, &np, newparent);
	if (err)
		return err;
	err = node_use_current(&u, fs, n);
	if (!err && (u.addr == UINT64_MAX || u.f != fs->f)) {
		node_use_end(&u);
		err = EXDEV;            /* an object of another file */
	}
	if (err) {
		end(fs, &nu);
		return err;
	}
	rc = h5_group_lookup(&l, nu.f, nu.addr, newname);
	h5_link_clear(&l);
	h5_err_clear();
	if (rc == 0) {
		err = EEXIST;
	} else if ((rc = h5_link_hard(nu.f, nu.addr, newname, strlen(newname), u.addr)) < 0) {
		err = link_errno(fs, rc, EPERM, EINVAL, "link", np, newname);
	} else {
		nlink_update(fs, u.f, u.addr);  /* the count st_nlink shows */
		node_touch(np, true);
	}
	node_use_end(&u);
	end(fs, &nu);
	return err;
}
