/* xattr.c - HDF5 attributes as extended attributes. */
#include "member.h"
#include "batch.h"
#include "npystream.h"
#include "retype.h"
#include "xattrs.h"
#include "owner.h"

#include <sys/xattr.h>

/* ---- extended attributes ---------------------------------------------------------
 * HDF5 attributes shown as xattrs (names and text rules: xa_list and
 * xa_get, src/common/xattrs.c, doc/h5fs.1 ATTRIBUTES).  xattr_list fills buf
 * with the NUL-separated names (or only measures when buf is NULL); xattr_get
 * copies one value.  Both return 0 or a negative errno; *len is always the
 * full length, so a size query (size 0) and the read after it agree and the
 * caller answers ERANGE when size is too small.  Symlinks have none.
 * The node's kept set: node/xattr_cache.c. */

static int xattr_errno(h5fs *fs, const struct node *n, int rc, const char *op, const char *name)
{
	int e = rc == H5_ERR_NOTFOUND ? ENODATA : h5fs_errno(rc);

	if (e == EIO)
		h5fs_log(fs, LOG_ERR, "%s %s%s%s (object header 0x%llx): EIO: %s", op, show_path(n->path),
		       name ? " " : "", name ? name : "", (unsigned long long)n->addr, h5_err_msg());
	return -e;
}

static int xattr_list(h5fs *fs, const struct node *n, char *buf, size_t size, size_t *len)
{
	char *list = NULL;
	struct use u;
	int rc;

	*len = 0;
	commit_barrier(fs, COMMIT_ATTRS);      /* new attributes accepted are there first */
	rc = node_use(&u, fs, (struct node *)n);    /* a live FILE: as it is now */
	if (rc)
		return -rc;
	if (n->type == NT_LINK || u.addr == UINT64_MAX) {
		node_use_end(&u);
		return 0;
	}
	if (xattr_cached(fs, (struct node *)n, &u, NULL, buf, size, len)) {
		node_use_end(&u);
		return 0;
	}
	rc = xa_list(&list, len, u.f, u.addr);
	node_use_end(&u);
	if (rc < 0)
		return xattr_errno(fs, n, rc, "listxattr", NULL);
	if (buf && *len <= size)
		memcpy(buf, list, *len);
	free(list);
	return 0;
}

static int xattr_get(h5fs *fs, const struct node *n, const char *name, char *buf, size_t size,
		     size_t *len)
{
	void *val = NULL;
	struct use u;
	int rc;

	*len = 0;
	if (strncmp(name, "user.", 5) == 0)
		commit_barrier(fs, COMMIT_ATTRS);      /* new attributes accepted are there first */
	rc = node_use(&u, fs, (struct node *)n);
	if (rc)
		return -rc;
	if (n->type == NT_LINK || u.addr == UINT64_MAX) {
		node_use_end(&u);
		return -ENODATA;
	}
	/* other namespaces (security.*, system.*: ls asks) have none: the
	 * engine says so without reading the object */
	if (strncmp(name, "user.", 5) == 0 && xattr_cached(fs, (struct node *)n, &u, name, buf, size, len)) {
		node_use_end(&u);
		return 0;
	}
	rc = xa_get(&val, len, u.f, u.addr, name, fs->cfg.xattr_raw);
	node_use_end(&u);
	if (rc < 0)
		return xattr_errno(fs, n, rc, "getxattr", name);
	if (buf && *len <= size)
		memcpy(buf, val, *len);
	free(val);
	return 0;
}

int member_listxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino)
{
	h5fs *fs = r;
	struct node *n = node_get(fs, ino);

	*len = 0;
	if (!n || retype_gone(n))
		return ESTALE;
	return -xattr_list(fs, n, buf, size, len);
}

int member_getxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino, const char *name)
{
	h5fs *fs = r;
	struct node *n;
	struct stat st;

	*len = 0;
	/* ls -l asks every name for security.* and system.* (SELinux, ACLs),
	 * which no object has (HDF5 attributes are user.*): a stat-only
	 * object answers without being made a node (state/light.c) */
	if (strncmp(name, "user.", 5) != 0 && light_getattr(fs, ino, &st))
		return ENODATA;
	n = node_get(fs, ino);
	if (!n || retype_gone(n))
		return ESTALE;
	return -xattr_get(fs, n, name, buf, size, len);
}

/* ---- setting and removing (doc/h5fs.1 MODIFYING) ---------------------------------
 * A value set (a new name, or a new value that parses in the attribute's
 * type) is accepted by the write-behind (xbatch.c) and committed with its
 * batch; anything else (removals, typed names, values the check refuses,
 * which then get the engine's exact error) is one ordered commit of the
 * engine (write/attr_write.c) here, after the batch, between
 * commit_begin and commit_end (commit/gate.c), through the current
 * generation (a live FILE another program changed is followed first). The node's set of xattrs is dropped afterwards, whatever
 * happened. */

/* errno of a refused or failed change, and one log line: a value
 * refused (EINVAL) as a notice (issue 47: every refusal is logged), an
 * absent name (ENODATA) at debug level, the rest as errors. */
static int xattr_write_errno(h5fs *fs, const struct node *n, int rc, const char *op, const char *name)
{
	int e;

	switch (rc) {
	case H5_ERR_NOTFOUND: e = ENODATA; break;
	case H5_ERR_UNSUPPORTED: e = ENOTSUP; break;
	default: e = h5fs_errno(rc); break;
	}
	h5fs_log(fs, e == ENODATA ? LOG_DEBUG : e == EINVAL ? LOG_NOTICE : LOG_ERR, "%s %s %s (object header 0x%llx): %s: %s",
		 op, show_path(n->path), name, (unsigned long long)n->addr, strerror(e), h5_err_msg());
	return e;
}

/* Whether reserved name (user.h5.dtype, .shape, ...) already shows value
 * (a trailing NUL or newline aside): tar --xattrs -x, cp -a and rsync -X
 * set every name they read back, so setting one to what it shows is
 * accepted, a change of nothing (issue 72 item 2). */
static int reserved_same(h5fs *fs, const struct node *n, const char *name, const char *value, size_t size)
{
	char *cur;
	size_t len = 0;
	int same;

	if (xattr_get(fs, n, name, NULL, 0, &len) < 0 || len > (1u << 20) || !(cur = malloc(len + 1)))
		return 0;
	if (xattr_get(fs, n, name, cur, len, &len) < 0) {
		free(cur);
		return 0;
	}
	while (len && (cur[len - 1] == '\0' || cur[len - 1] == '\n'))
		len--;
	while (size && (value[size - 1] == '\0' || value[size - 1] == '\n'))
		size--;
	same = len == size && memcmp(cur, value, len) == 0;
	free(cur);
	return same;
}

/* Whether n is a byte dataset a type can be given back to (retype.c):
 * 1-D |u1 of one link, as a new file is made. */
static bool retype_bytes(h5fs *fs, const struct node *n)
{
	char v[64];
	size_t len = 0;

	if (n->type != NT_FILE || n->vkind || n->st.st_nlink != 1 ||
	    xattr_get(fs, n, "user.h5.dtype", v, sizeof(v) - 1, &len) < 0 || len != 3 || memcmp(v, "|u1", 3) ||
	    xattr_get(fs, n, "user.h5.shape", v, sizeof(v) - 1, &len) < 0 || len == 0 || len >= sizeof(v))
		return false;
	v[len] = '\0';
	return !strchr(v, ',') && strcmp(v, "null") != 0;
}

static int xattr_change(h5fs *fs, struct node *n, const char *name, const char *value, size_t size, int flags)
{
	char attr[256], typestr[8];
	size_t alen;
	enum xa_write_kind k = xa_write_name(name, attr, &alen, typestr);
	struct use u;
	enum own_kind own = OWN_HDF5;
	int err, rc = 0, have = 1;

	if (k == XA_W_OTHER)
		return ENOTSUP;
	/* a variable's dimension lists and a scale's references copied onto
	 * bytes (cp -a, tar, rsync -X: references as text, which no
	 * attribute takes), or its netCDF dimension id (the mount gives a
	 * new dimension its own: issue 83 item 2): the dimensions are
	 * attached when its type is set back (retype.c); removed (rsync -X
	 * removes the bytes' own DIMENSION_LIST when its source has none):
	 * the bytes' dimension goes with them then (ncdims.c nc_detach_var),
	 * which a removal here left behind */
	if (n->type == NT_FILE && pager_writes(&fs->pg) &&
	    (strcmp(name, "user.DIMENSION_LIST") == 0 || strcmp(name, "user._Netcdf4Coordinates") == 0 ||
	     strcmp(name, "user.REFERENCE_LIST") == 0 || strcmp(name, "user._Netcdf4Dimid") == 0) &&
	    (__atomic_load_n(&n->retype, __ATOMIC_ACQUIRE) || retype_bytes(fs, n)))
		return 0;
	/* a type and shape set back on bytes (tar --xattrs, cp -a, rsync -X),
	 * its description values in whatever order they come: retype.c (doc
	 * /h5fs.1 MODIFYING, "Types set back"); a value it shows already is
	 * no change */
	if (k == XA_W_RESERVED && n->type == NT_FILE && !n->vkind && !(flags & XATTR_CREATE) && pager_writes(&fs->pg) &&
	    xa_meta_key(name + strlen("user.h5."))) {
		const char *key = name + strlen("user.h5.");
		bool pending = __atomic_load_n(&n->retype, __ATOMIC_ACQUIRE) != NULL;
		/* (a dtype it shows, |u1, too: a shape may follow, of an
		 * empty array of that dtype among them) */
		bool start = value && !pending && (strcmp(key, "dtype") == 0 || !reserved_same(fs, n, name, value, size)) &&
			     retype_bytes(fs, n);

		if (value && !pending && !start && strcmp(key, "dtype") == 0 && retype_provisional(fs, n->addr) &&
		    !reserved_same(fs, n, name, value, size)) {
			/* made |u1 of its shape alone: made again of that
			 * dtype and shape */
			char cur[256];
			size_t clen = 0;

			err = -1;
			if (xattr_get(fs, n, "user.h5.shape", cur, sizeof(cur), &clen) == 0 && clen < sizeof(cur) &&
			    (err = retype_note(fs, n, key, value, size, true)) == 0)
				err = retype_note(fs, n, "shape", cur, clen, false);
			if (err >= 0)
				return err;
			err = 0;
		}
		if (start || pending) {
			err = retype_note(fs, n, key, value, size, start);
			if (err >= 0)
				return err;
			err = 0;
		}
		/* a description key removed from bytes (rsync -X removes the
		 * names its source has not: user.h5.chunks of a new file):
		 * what the type set back makes decides it */
		if (!value && retype_bytes(fs, n))
			return 0;
	}
	if (k == XA_W_RESERVED && value && n->type != NT_LINK && !(flags & XATTR_CREATE) &&
	    reserved_same(fs, n, name, value, size))
		return 0;
	/* a description key that does not apply removed (rsync -X removes
	 * user.h5.chunks it listed on the bytes, which a contiguous dataset
	 * made of them has not): already so */
	if (k == XA_W_RESERVED && !value && n->type == NT_FILE && xa_meta_key(name + strlen("user.h5.")) &&
	    xattr_get(fs, n, name, NULL, 0, &(size_t){ 0 }) == -ENODATA)
		return 0;
	if (k == XA_W_RESERVED || (k == XA_W_TYPED && !value) || n->type == NT_LINK) {
		h5fs_log(fs, LOG_NOTICE, "%s %s %s: EPERM: %s", value ? "setxattr" : "removexattr", show_path(n->path),
			 name, n->type == NT_LINK ? "a soft link has no attributes"
			 : value ? "h5fs's description of the object, which changes only by what it describes "
				   "(it may be set to the value it shows)"
			 : "a read-only h5fs name");
		return EPERM;
	}
	if (value && k == XA_W_ATTR && pager_writes(&fs->pg)) {
		err = xbatch_add(fs, n, attr, alen, value, size, flags);
		if (err != 1) {
			if (!err) {
				pthread_rwlock_wrlock(&n->lk);
				xattr_cache_drop(n);    /* after the batch holds it (xbatch.c) */
				pthread_rwlock_unlock(&n->lk);
			}
			return err;
		}
	}
	/* objects of other files (external links) are shown read-only */
	err = commit_begin(&u, fs, n, COMMIT_ATTRS, value ? "setxattr" : "removexattr");
	if (err)
		return err;
	if (value)
		own = own_detect(u.f);
	if (value && ((flags & (XATTR_CREATE | XATTR_REPLACE)) || (k == XA_W_ATTR && own_new_text(own)))) {
		void *v = NULL;
		size_t l;

		have = h5_attr_value_get(&v, &l, u.f, u.addr, attr, alen, 1);
		free(v);
		h5_err_clear();
		if (have == 0 && (flags & XATTR_CREATE))
			err = EEXIST;
		else if (have == H5_ERR_NOTFOUND && (flags & XATTR_REPLACE))
			err = ENODATA;
		if (err)
			goto used;
	}
	if (!value) {
		rc = h5_attr_delete(u.f, u.addr, attr, alen);
	} else if (k == XA_W_TYPED) {
		/* as the file's owner allows (owner.h): S<n> a fixed-length
		 * string, numbers of netCDF's types only in netCDF-4 files */
		size_t width;
		enum h5_fstr pad;

		rc = own_fstr_type(&width, &pad, own, typestr);
		if (rc == 1)
			rc = h5_attr_create_str(u.f, u.addr, attr, alen, value, size, width, pad);
		else if (rc == 0 && (rc = own_type_check(own, typestr)) == 0)
			rc = h5_attr_create_typed(u.f, u.addr, attr, alen, typestr, value, size);
	} else if (have == H5_ERR_NOTFOUND && own_new_text(own)) {
		/* a new text in a netCDF-4 file: NC_CHAR, as netCDF-C writes it */
		rc = h5_attr_create_str(u.f, u.addr, attr, alen, value, size, 0, own_new_text(own));
	} else {
		rc = h5_attr_write(u.f, u.addr, attr, alen, value, size, fs->cfg.xattr_raw);
	}
	if (rc < 0)
		err = xattr_write_errno(fs, n, rc, value ? "setxattr" : "removexattr", name);
used:
	pthread_rwlock_wrlock(&n->lk);
	xattr_cache_drop(n);
	pthread_rwlock_unlock(&n->lk);
	commit_end(fs, &u, true);
	return err;
}

int member_setxattr(void *r, uint64_t ino, const char *name, const char *value, size_t size, int flags)
{
	h5fs *fs = r;
	struct node *n = node_get(fs, ino);

	int e;

	if (!n || retype_gone(n))
		return ESTALE;  /* (retype_gone: the name is looked up again) */
	e = xattr_change(fs, n, name, value ? value : "", size, flags);
	if (!e)
		node_touch(n, false);   /* (POSIX: a change of the inode's ctime) */
	return e;
}

int member_removexattr(void *r, uint64_t ino, const char *name)
{
	h5fs *fs = r;
	struct node *n = node_get(fs, ino);

	int e;

	if (!n || retype_gone(n))
		return ESTALE;  /* (retype_gone: the name is looked up again) */
	e = xattr_change(fs, n, name, NULL, 0, 0);
	if (!e)
		node_touch(n, false);
	return e;
}
