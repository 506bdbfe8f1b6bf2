/* ll_xattr.c - HDF5 attributes as extended attributes. */
#include "ll.h"

/* ---- extended attributes ---------------------------------------------------------
 * HDF5 attributes shown as xattrs (names and text rules: h5_xattr_list and
 * h5_xattr_get in the engine, doc/h5fs.1 ATTRIBUTES).  xattr_list fills buf
 * with the NUL-separated names (or only measures when buf is NULL); xattr_get
 * copies one value.  Both return 0 or a negative errno; *len is always the
 * full length, so a size query (size 0) and the read after it agree and the
 * caller answers ERANGE when size is too small.  Symlinks have none. */

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
	rc = node_use(&u, fs, (struct node *)n);    /* a live FILE: as it is now */
	if (rc)
		return -rc;
	if (n->type == NT_LINK || u.addr == UINT64_MAX) {
		node_use_end(&u);
		return 0;
	}
	rc = h5_xattr_list(&list, len, u.f, u.addr);
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
	rc = node_use(&u, fs, (struct node *)n);
	if (rc)
		return -rc;
	if (n->type == NT_LINK || u.addr == UINT64_MAX) {
		node_use_end(&u);
		return -ENODATA;
	}
	rc = h5_xattr_get(&val, len, u.f, u.addr, name, fs->cfg.xattr_raw);
	node_use_end(&u);
	if (rc < 0)
		return xattr_errno(fs, n, rc, "getxattr", name);
	if (buf && *len <= size)
		memcpy(buf, val, *len);
	free(val);
	return 0;
}

void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	h5fs *fs = fuse_req_userdata(req);
	struct node *n = node_get(fs, ino);
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (size) {
		buf = malloc(size);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	rc = xattr_list(fs, n, buf, size, &len);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
}

void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	h5fs *fs = fuse_req_userdata(req);
	struct node *n = node_get(fs, ino);
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (!n) {
		fuse_reply_err(req, ESTALE);
		return;
	}
	if (size) {
		buf = malloc(size);
		if (!buf) {
			fuse_reply_err(req, ENOMEM);
			return;
		}
	}
	rc = xattr_get(fs, n, name, buf, size, &len);
	if (rc < 0)
		fuse_reply_err(req, -rc);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, buf, len);
	free(buf);
}
