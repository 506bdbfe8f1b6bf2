/* root_record.c - recording a collection member for the index
 * (root_index.h; root_index.c has the story): index_record walks a member
 * root through its own ops (root.h), exactly as find and getfattr would,
 * so what is kept is what the mount answered and can never disagree with
 * a live mount; what of the mount changes the tree shown (index_view). */
#include "root_index.h"
#include "member.h"

#include <sys/stat.h>

/* ---- recording ----------------------------------------------------------------- */

struct walk {
	const struct root_ops *ops;
	void *r;
	cindex_tree *t;
	size_t max_nodes;
	char *xbuf;             /* listxattr / getxattr scratch */
	size_t xcap;
};

static void stat_in(cindex_stat *o, const struct stat *st)
{
	memset(o, 0, sizeof(*o));
	o->mode = st->st_mode;
	o->nlink = (uint32_t)st->st_nlink;
	o->blksize = (uint32_t)st->st_blksize;
	o->size = (uint64_t)st->st_size;
	o->ino = (uint64_t)st->st_ino;
	o->blocks = (uint64_t)st->st_blocks;
	o->atime_ns = (int64_t)st->st_atim.tv_sec * 1000000000 + st->st_atim.tv_nsec;
	o->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	o->ctime_ns = (int64_t)st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
}

static int xroom(struct walk *w, size_t n)
{
	char *p;

	if (n <= w->xcap)
		return 0;
	p = realloc(w->xbuf, n);
	if (!p)
		return ENOMEM;
	w->xbuf = p;
	w->xcap = n;
	return 0;
}

/* The xattrs of node (local id lid) as listxattr and getxattr give them. */
static int walk_xattrs(struct walk *w, uint32_t node, uint64_t lid)
{
	char *names = NULL;
	size_t len = 0, vlen;
	int err;

	if (!w->ops->listxattr)
		return 0;
	err = w->ops->listxattr(w->r, NULL, 0, &len, lid);
	if (err || len == 0)
		return err;
	names = malloc(len);
	if (!names)
		return ENOMEM;
	err = w->ops->listxattr(w->r, names, len, &len, lid);
	for (size_t off = 0; !err && off < len; off += strlen(names + off) + 1) {
		const char *name = names + off;

		err = w->ops->getxattr(w->r, NULL, 0, &vlen, lid, name);
		if (!err)
			err = xroom(w, vlen + 1);
		if (!err)
			err = w->ops->getxattr(w->r, w->xbuf, vlen, &vlen, lid, name);
		if (!err && cindex_tree_xattr(w->t, node, name, w->xbuf, vlen) < 0)
			err = ENOMEM;
	}
	free(names);
	return err;
}

/* Record directory node (local id lid) and everything under it: depth
 * first, each child looked up (and forgotten once its subtree is done,
 * so the live root keeps no more nodes than a path's worth). */
static int walk_dir(struct walk *w, uint32_t node, uint64_t lid, unsigned depth)
{
	void *dh = NULL;
	bool keep;
	int err;

	if (depth > INDEX_MAX_DEPTH)
		return ELOOP;
	err = w->ops->opendir(w->r, &dh, &keep, lid);
	if (err)
		return err;
	for (size_t i = 0; !err; i++) {
		struct root_dirent d;
		struct root_entry e;
		cindex_stat cs;
		char *target = NULL;
		uint32_t kid;

		err = w->ops->readdir(w->r, &d, dh, i);
		if (err == ENOENT) {
			err = 0;
			break;
		}
		if (err)
			break;
		if (w->t->n >= w->max_nodes) {
			err = EFBIG;
			break;
		}
		h5_err_clear();         /* the code below is this lookup's own */
		err = w->ops->lookup(w->r, &e, lid, d.name);
		if (err == EIO && index_bytes_err(h5_err_code())) {
			/* the object's bytes fail, as they will at every
			 * reading at this stamp: remembered so */
			if (cindex_tree_add_error(&kid, w->t, node, d.name, d.type, d.ino, h5_err_msg()) < 0)
				err = ENOMEM;
			else
				err = 0;
			h5_err_clear();
			continue;
		}
		if (err)
			break;
		/* an object of another file (an external link shown in place,
		 * that file's number in st_ino's bits 48..61) is recorded as
		 * shown: the caller keeps that file's stamp with the record
		 * (coll_index.c), and its number is its path's own (related.c) */
		if (S_ISLNK(e.attr.st_mode))
			err = w->ops->readlink(w->r, &target, e.ino);
		stat_in(&cs, &e.attr);
		if (!err && cindex_tree_add(&kid, w->t, node, d.name, &cs, target) < 0)
			err = ENOMEM;
		free(target);
		if (!err) {
			w->t->nodes[kid].lid = e.ino;
			w->t->nodes[kid].dino = d.ino;
			err = walk_xattrs(w, kid, e.ino);
		}
		if (!err && S_ISDIR(e.attr.st_mode))
			err = walk_dir(w, kid, e.ino, depth + 1);
		if (w->ops->forget)
			w->ops->forget(w->r, e.ino, 1);
	}
	w->ops->releasedir(w->r, dh);
	return err;
}

int index_record(cindex_tree **out, const struct root_ops *ops, void *r, size_t max_nodes)
{
	struct walk w = { .ops = ops, .r = r, .max_nodes = max_nodes };
	struct stat st;
	cindex_stat cs;
	double timeout;
	uint32_t root;
	int err;

	*out = NULL;
	if (cindex_tree_new(&w.t) < 0)
		return ENOMEM;
	err = ops->getattr(r, &st, &timeout, FUSE_ROOT_ID);
	if (!err) {
		stat_in(&cs, &st);
		err = cindex_tree_add(&root, w.t, 0, NULL, &cs, NULL) < 0 ? ENOMEM : 0;
	}
	if (!err) {
		w.t->nodes[root].lid = FUSE_ROOT_ID;
		w.t->nodes[root].dino = (uint64_t)st.st_ino;
		err = walk_xattrs(&w, root, FUSE_ROOT_ID);
	}
	if (!err)
		err = walk_dir(&w, root, FUSE_ROOT_ID, 0);
	if (!err && cindex_tree_seal(w.t) < 0)
		err = ENOMEM;
	free(w.xbuf);
	if (err) {
		cindex_tree_free(w.t);
		return err;
	}
	*out = w.t;
	return 0;
}

bool index_bytes_err(int h5code)
{
	return h5code == H5_ERR_FORMAT || h5code == H5_ERR_CHECKSUM || h5code == H5_ERR_UNSUPPORTED ||
	       h5code == H5_ERR_LOOP;
}

void index_view(char *buf, size_t size, const h5fs_config *cfg, mode_t file_mode)
{
	/* what changes the tree a mount shows of one member: rw (growable
	 * datasets are writable, with a larger st_blksize), the xattr mode,
	 * the permission bits (-o umask, else the member file's own), the
	 * views listed (-o views, views.c: recorded as the tree's files) */
	char views[32] = "";

	if (cfg->views)
		snprintf(views, sizeof(views), ";views=%x", cfg->views);
	snprintf(buf, size, "v1;%s;xattr=%s;umask=%s%o;fmode=%o%s", cfg->read_only ? "ro" : "rw",
		 cfg->xattr_raw ? "raw" : "text",
		 cfg->umask_set ? "" : "none:", cfg->umask_set ? (unsigned)cfg->umask : 0u,
		 cfg->umask_set ? 0u : (unsigned)(file_mode & 07777), views);
}

