/* xattr.c - HDF5 attributes as extended attributes. */
#include "member.h"
#include "xattrs.h"

#include <sys/xattr.h>

/* ---- extended attributes ---------------------------------------------------------
 * HDF5 attributes shown as xattrs (names and text rules: xa_list and
 * xa_get, src/common/xattrs.c, doc/h5fs.1 ATTRIBUTES).  xattr_list fills buf
 * with the NUL-separated names (or only measures when buf is NULL); xattr_get
 * copies one value.  Both return 0 or a negative errno; *len is always the
 * full length, so a size query (size 0) and the read after it agree and the
 * caller answers ERANGE when size is too small.  Symlinks have none.
 *
 * The kernel caches no xattrs: `getfattr -d` costs a listxattr and two
 * getxattr requests (size, then value) per name, every time. So the first
 * request for an object reads all of its xattrs at once (xa_all: one
 * pass over its header) into its node, and the others are answered from
 * there until the node changes (xattr_cache_drop). Values the engine left
 * out (errors, large ones, a virtual dataset's shape) and names not in the
 * set are asked of the engine as before. */

/* What a node keeps: values up to XS_VALUE_MAX bytes, sets up to XS_SET_MAX,
 * and all nodes together up to XS_TOTAL_MAX (beyond it, a node keeps none
 * and the engine answers its requests one by one). */
#define XS_VALUE_MAX ((size_t)16 << 10)
#define XS_SET_MAX ((size_t)256 << 10)
#define XS_TOTAL_MAX ((size_t)64 << 20)
/* Objects with more xattrs than this are not kept (xa_all would
 * scan their header once per attribute). */
#define XS_NAMES_MAX 512

static size_t xs_total;         /* bytes of all nodes' sets (atomic) */

void xattr_cache_drop(struct node *n)
{
	if (n->xs) {
		__atomic_sub_fetch(&xs_total, n->xs->bytes, __ATOMIC_RELAXED);
		xa_set_free(n->xs);
		n->xs = NULL;
	}
	n->xs_skip = false;
	n->xs_epoch++;
}

/* From set s: the list (name NULL) or name's value into buf (when it fits
 * size; *len its length): 1, or 0 when the engine must answer (a value
 * the set left out, a name it does not have). */
static int set_answer(const xa_set *s, const char *name, char *buf, size_t size, size_t *len)
{
	const void *p = s->list;

	*len = s->list_len;
	if (name) {
		size_t i;

		for (i = 0; i < s->n && strcmp(s->v[i].name, name) != 0; i++)
			;
		if (i == s->n || !s->v[i].val)
			return 0;
		p = s->v[i].val;
		*len = s->v[i].len;
	}
	if (buf && *len <= size)
		memcpy(buf, p, *len);
	return 1;
}

/* Answer from n's set, reading it first when it has none: 1 answered, 0
 * not (the engine answers: see set_answer; objects of other files than
 * FILE, whose changes the generations do not follow; errors, which the
 * engine reports again). u: what the request reads of n (node_use). */
static int xattr_cached(h5fs *fs, struct node *n, const struct use *u, const char *name, char *buf, size_t size,
			size_t *len)
{
	xa_set *s = NULL;
	unsigned epoch;
	bool kept = false, skip;
	int r, rc;

	for (int pass = 0; pass < 2; pass++) {
		pthread_rwlock_rdlock(&n->lk);
		if (n->xs && n->gen == u->g && n->addr == u->addr) {
			r = set_answer(n->xs, name, buf, size, len);
			pthread_rwlock_unlock(&n->lk);
			return r;
		}
		epoch = n->xs_epoch;
		skip = n->xs_skip;
		pthread_rwlock_unlock(&n->lk);
		if (pass || skip || !u->g || u->f != u->g->f)
			return 0;
		rc = xa_all(&s, u->f, u->addr, fs->cfg.xattr_raw, XS_VALUE_MAX, XS_NAMES_MAX);
		h5_err_clear();
		pthread_rwlock_wrlock(&n->lk);
		if (!n->xs && n->xs_epoch == epoch && n->gen == u->g && n->addr == u->addr) {
			if (rc == 0 && s->bytes <= XS_SET_MAX &&
			    __atomic_add_fetch(&xs_total, s->bytes, __ATOMIC_RELAXED) <= XS_TOTAL_MAX) {
				n->xs = s;
				kept = true;
			} else {
				if (rc == 0 && s->bytes <= XS_SET_MAX)
					__atomic_sub_fetch(&xs_total, s->bytes, __ATOMIC_RELAXED);
				/* the same next time: the engine answers each
				 * request, as without the set */
				n->xs_skip = true;
			}
		}
		pthread_rwlock_unlock(&n->lk);
		if (rc < 0)
			return 0;
		if (!kept) {
			/* changed meanwhile, or over the budget: this request only */
			r = set_answer(s, name, buf, size, len);
			xa_set_free(s);
			return r;
		}
	}
	return 0;
}

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
	xbatch_flush(fs);       /* new attributes accepted are there first */
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
		xbatch_flush(fs);       /* new attributes accepted are there first */
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
	if (!n)
		return ESTALE;
	return -xattr_list(fs, n, buf, size, len);
}

int member_getxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino, const char *name)
{
	h5fs *fs = r;
	struct node *n = node_get(fs, ino);

	*len = 0;
	if (!n)
		return ESTALE;
	return -xattr_get(fs, n, name, buf, size, len);
}

/* ---- setting and removing (doc/h5fs.1 MODIFYING) ---------------------------------
 * A value set (a new name, or a new value that parses in the attribute's
 * type) is accepted by the write-behind (xbatch.c) and committed with its
 * batch; anything else (removals, typed names, values the check refuses,
 * which then get the engine's exact error) is one ordered commit of the
 * engine (write/attr_write.c) here, after the batch, between
 * fs_write_begin and fs_write_end, through the current generation
 * (node_use_current: a live FILE another program changed is followed
 * first). The node's set of xattrs is dropped afterwards, whatever
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

static int xattr_change(h5fs *fs, struct node *n, const char *name, const char *value, size_t size, int flags)
{
	char attr[256], typestr[8];
	size_t alen;
	enum xa_write_kind k = xa_write_name(name, attr, &alen, typestr);
	struct use u;
	int err, rc = 0;

	if (k == XA_W_OTHER)
		return ENOTSUP;
	if (k == XA_W_RESERVED || (k == XA_W_TYPED && !value) || n->type == NT_LINK) {
		h5fs_log(fs, LOG_NOTICE, "%s %s %s: EPERM: %s", value ? "setxattr" : "removexattr", show_path(n->path),
			 name, n->type == NT_LINK ? "a soft link has no attributes" : "a read-only h5fs name");
		return EPERM;
	}
	if (value && k == XA_W_ATTR && fs_writable(fs)) {
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
	xbatch_flush(fs);
	err = fs_write_begin(fs);
	if (err)
		return err;
	err = node_use_current(&u, fs, n);
	if (err)
		goto end;
	if (u.addr == UINT64_MAX || u.f != fs->f) {
		/* objects of other files (external links) are shown read-only */
		h5fs_log(fs, LOG_NOTICE, "%s %s %s: EROFS: an object of another file (external link)",
			 value ? "setxattr" : "removexattr", show_path(n->path), name);
		err = EROFS;
		goto used;
	}
	if (value && (flags & (XATTR_CREATE | XATTR_REPLACE))) {
		void *v = NULL;
		size_t l;
		int have = h5_attr_value_get(&v, &l, u.f, u.addr, attr, alen, 1);

		free(v);
		h5_err_clear();
		if (have == 0 && (flags & XATTR_CREATE))
			err = EEXIST;
		else if (have == H5_ERR_NOTFOUND && (flags & XATTR_REPLACE))
			err = ENODATA;
		if (err)
			goto used;
	}
	if (!value)
		rc = h5_attr_delete(u.f, u.addr, attr, alen);
	else if (k == XA_W_TYPED)
		rc = h5_attr_create_typed(u.f, u.addr, attr, alen, typestr, value, size);
	else
		rc = h5_attr_write(u.f, u.addr, attr, alen, value, size, fs->cfg.xattr_raw);
	if (rc < 0)
		err = xattr_write_errno(fs, n, rc, value ? "setxattr" : "removexattr", name);
used:
	node_use_end(&u);
	pthread_rwlock_wrlock(&n->lk);
	xattr_cache_drop(n);
	pthread_rwlock_unlock(&n->lk);
end:
	fs_meta_changed(fs);
	fs_write_end(fs);
	return err;
}

int member_setxattr(void *r, uint64_t ino, const char *name, const char *value, size_t size, int flags)
{
	h5fs *fs = r;
	struct node *n = node_get(fs, ino);

	if (!n)
		return ESTALE;
	return xattr_change(fs, n, name, value ? value : "", size, flags);
}

int member_removexattr(void *r, uint64_t ino, const char *name)
{
	h5fs *fs = r;
	struct node *n = node_get(fs, ino);

	if (!n)
		return ESTALE;
	return xattr_change(fs, n, name, NULL, 0, 0);
}
