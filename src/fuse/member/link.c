/* link.c - groups and links changed through the mount (doc/h5fs.1
 * MODIFYING): mkdir, rmdir, unlink and symlink in groups of compact link
 * storage (the engine's write/link_write.c). Each is one ordered commit
 * between fs_write_begin and fs_write_end; the dispatcher replies (an
 * entry for mkdir and symlink, looked up afresh). Symbol-table groups
 * (libhdf5's default format) and dense storage are refused with ENOTSUP
 * and a log line. */
#include "member.h"

void fs_meta_changed(h5fs *fs)
{
	pthread_mutex_lock(&fs->wmu);
	fs->meta_unsynced = true;
	pthread_mutex_unlock(&fs->wmu);
}

/* The changes' fsync, holding FILE's lock as every write does. */
int fs_meta_sync(h5fs *fs)
{
	bool pending;
	int err, rc;

	pthread_mutex_lock(&fs->wmu);
	pending = fs->meta_unsynced;
	pthread_mutex_unlock(&fs->wmu);
	if (!pending)
		return 0;
	err = fs_write_begin(fs);
	if (err)
		return err;
	rc = h5_file_write_sync(fs->f);
	if (rc == 0) {
		pthread_mutex_lock(&fs->wmu);
		fs->meta_unsynced = false;
		pthread_mutex_unlock(&fs->wmu);
	}
	fs_write_end(fs);
	return rc < 0 ? h5err_logged(fs, rc, "fsync", "/", NULL, UINT64_MAX) : 0;
}

/* The group node parent of FILE itself (objects of files reached by
 * external links are read-only), in use (*u), writing begun. */
static int begin(struct use *u, h5fs *fs, struct node **p, uint64_t parent)
{
	int err;

	*p = node_get(fs, parent);
	if (!*p)
		return ESTALE;
	if ((*p)->type != NT_DIR)
		return ENOTDIR;
	err = fs_write_begin(fs);
	if (err)
		return err;
	err = node_use(u, fs, *p);
	if (!err && (u->addr == UINT64_MAX || u->f != fs->f)) {
		node_use_end(u);
		err = EROFS;
	}
	if (err)
		fs_write_end(fs);
	return err;
}

static void end(h5fs *fs, struct use *u)
{
	node_use_end(u);
	fs_meta_changed(fs);    /* (also after a failure: it may have written) */
	fs_write_end(fs);
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
	default: e = h5fs_errno(rc); break;
	}
	h5fs_log(fs, e == ENOTSUP || e == EIO || e == ENOSPC ? LOG_ERR : LOG_DEBUG, "%s %s/%s: %s: %s", op,
		 strcmp(p->path, "/") == 0 ? "" : p->path, name, strerror(e), h5_err_msg());
	return e;
}

int member_mkdir(void *r, uint64_t parent, const char *name)
{
	h5fs *fs = r;
	struct node *p;
	struct use u;
	h5_link l;
	uint64_t addr;
	int err = begin(&u, fs, &p, parent), rc;

	if (err)
		return err;
	rc = h5_group_lookup(&l, u.f, u.addr, name);
	h5_link_clear(&l);
	h5_err_clear();
	if (rc == 0)
		err = EEXIST;
	else if ((rc = h5_group_create(&addr, u.f, u.addr, name, strlen(name))) < 0)
		err = link_errno(fs, rc, EPERM, EINVAL, "mkdir", p, name);
	end(fs, &u);
	return err;
}

static int remove_link(h5fs *fs, uint64_t parent, const char *name, int want)
{
	struct node *p;
	struct use u;
	int err = begin(&u, fs, &p, parent), rc;

	if (err)
		return err;
	rc = h5_link_delete(u.f, u.addr, name, strlen(name), want);
	if (rc < 0)
		err = link_errno(fs, rc, want == 1 ? ENOTEMPTY : EISDIR, ENOTDIR, want == 1 ? "rmdir" : "unlink", p, name);
	end(fs, &u);
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
 * targets as they are; relative ones joined to dir, "." and ".."
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
	} else if (!(path = resolve(p->path, target))) {
		err = ENOMEM;
	} else {
		rc = h5_link_insert(u.f, u.addr, name, strlen(name), H5_LINK_SOFT, 0, path, 0);
		if (rc < 0)
			err = link_errno(fs, rc, EPERM, EINVAL, "symlink", p, name);
		free(path);
	}
	end(fs, &u);
	return err;
}
