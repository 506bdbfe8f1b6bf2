/* view_node.c - the nodes of datasets' views (NAME.npy, .csv, .tiff, .png,
 * NAME.frames/): made, made again of a live FILE's new generation
 * (fresh.c), and of a dataset that grew. member/views.c answers the
 * requests with them. */
#include "node.h"
#include "views.h"

/* Whether n's dataset may grow under it: a view on a mount that appends
 * (node/node.c gives the dataset the owner's write bit then). */
bool views_grows(h5fs *fs, struct node *n)
{
	bool g;

	if (!n->vkind || !fs_writable(fs))
		return false;
	pthread_rwlock_rdlock(&n->lk);
	g = n->f == fs_file(fs) && n->ds && h5_append_check(n->ds) == 0;
	pthread_rwlock_unlock(&n->lk);
	h5_err_clear();
	return g;
}

/* -------- nodes -------- */

int views_apply(h5fs *fs, struct node *n, int kind, uint64_t frame, uint64_t ino)
{
	const h5_view_ops *ops = NULL;
	uint64_t size, count;
	int rc;

	if (n->type != NT_FILE || !n->ds)
		return h5_err_set(H5_ERR_NOTFOUND, "not a dataset");
	if (kind == VW_FRAMES) {
		rc = vw_frame_count(&count, n->ds);
		if (rc < 0)
			return rc;
		n->type = NT_DIR;
		n->st.st_mode = S_IFDIR | fs->dir_mode;
		n->st.st_size = 0;
		n->st.st_blocks = 0;
	} else {
		rc = vw_open(&ops, n->ds, (enum vw_kind)kind, frame);
		if (rc < 0)
			return rc;
		size = ops->size(n->ds);
		n->view = ops;
		n->st.st_size = (off_t)size;
		n->st.st_blocks = blocks_of(size);
		/* read-only whatever the dataset is */
		n->st.st_mode = S_IFREG | (fs->file_mode & ~(mode_t)0222);
		n->st.st_blksize = H5FS_BLKSIZE;
	}
	n->st.st_nlink = 1;
	n->st.st_ino = (ino_t)ino;      /* local: the dispatcher maps it */
	n->vkind = (unsigned char)kind;
	n->vframe = frame;
	return 0;
}

char *views_base_path(const struct node *n)
{
	size_t len = strlen(n->path);
	char *p;

	if (n->vkind == VW_FRAME) {
		/* "a/x.frames/000001.tiff" -> "a/x.frames" */
		const char *s = strrchr(n->path, '/');

		len = s ? (size_t)(s - n->path) : 0;
	}
	{
		const char *suf = vw_suffix(n->vkind == VW_FRAME ? VW_FRAMES : (enum vw_kind)n->vkind);
		size_t sl = strlen(suf);

		if (len >= sl)
			len -= sl;
	}
	p = malloc(len + 1);
	if (p) {
		memcpy(p, n->path, len);
		p[len] = '\0';
	}
	return p;
}

int views_make(struct node **out, h5fs *fs, h5_file *tf, uint64_t taddr, const struct node *n)
{
	struct node *tmp = NULL;
	int rc;

	*out = NULL;
	rc = node_make_obj(&tmp, fs, tf, taddr, n->ino, n->path);
	if (rc < 0)
		return rc;
	rc = views_apply(fs, tmp, n->vkind, n->vframe, n->ino);
	if (rc < 0) {
		node_free(tmp);
		if (rc != H5_ERR_NOTFOUND)
			return rc;
		h5_err_clear();   /* no such view any more: stale */
		return 0;
	}
	*out = tmp;
	return 0;
}

/* The node of view `name` (kind k, frame) of the dataset node `base`, in
 * directory p: 0 and *out (referenced), ENOENT when the dataset cannot
 * have it, or an errno (EIO logged). */
int views_node(struct node **out, h5fs *fs, struct node *p, const char *name, struct node *base,
		     enum vw_kind k, uint64_t frame)
{
	struct node *n, *fresh = NULL;
	h5_file *f;
	uint64_t addr, checked, id = synth_ino(fs, p->ino, name);
	struct gen *g;
	char *path;
	int rc, e;

	if (!id)
		return ENOMEM;
	n = node_ref_existing(fs, id);
	if (n) {
		e = node_fresh(fs, n);
		if (e == 0 && n->vkind == k && n->vframe == frame && (e = views_fresh(fs, n)) == 0) {
			*out = n;
			return 0;
		}
		node_unref(fs, id, 1);
		if (e && e != ESTALE)
			return e;
		id = synth_renew(fs, p->ino, name, id);
		if (!id)
			return ENOMEM;
	}
	pthread_rwlock_rdlock(&base->lk);
	f = base->f;
	addr = base->addr;
	g = base->gen;
	checked = base->checked;
	h5_file_hold_related(f);
	if (g)
		gen_hold(g);
	pthread_rwlock_unlock(&base->lk);
	path = h5_path_join(p->path, name);
	if (!path) {
		e = ENOMEM;
		goto out;
	}
	rc = node_make_obj(&fresh, fs, f, addr, id, path);
	if (rc < 0) {
		e = h5err_logged(fs, rc, "lookup", p->path, name, addr);
		goto out;
	}
	rc = views_apply(fs, fresh, k, frame, id);
	if (rc < 0) {
		node_free(fresh);
		if (rc == H5_ERR_NOTFOUND) {
			h5_err_clear();
			e = ENOENT;
		} else {
			e = h5err_logged(fs, rc, "lookup", p->path, name, addr);
		}
		goto out;
	}
	fresh->parent = p->ino;
	fresh->gen = g;
	g = NULL;
	fresh->checked = checked;
	*out = node_publish(fs, fresh);
	e = 0;
out:
	h5_file_release_related(f);
	if (g)
		gen_release(g);
	free(path);
	return e;
}

/* On a mount that appends (fs_writable), a dataset grows under its views:
 * the view of n is made again of the dataset as it is now when its size
 * changed since (n's own handle is swapped, under n->lk, as member/write.c
 * does for the dataset's node). Views there are read without the page
 * cache and their attributes are not cached (views_open, entry_fill), so
 * this is asked at each open, lookup and getattr. 0 or an errno. */
int views_fresh(h5fs *fs, struct node *n)
{
	const h5_view_ops *ops = NULL;
	h5_dataset *nd = NULL, *old = NULL;
	uint64_t was, size = 0;
	h5_file *f;
	uint64_t addr;
	int rc, e = 0;

	if (!views_grows(fs, n))
		return 0;
	pthread_rwlock_rdlock(&n->lk);
	f = n->f;
	addr = n->addr;
	was = n->ds ? h5_view_raw.size(n->ds) : 0;
	h5_file_hold_related(f);
	pthread_rwlock_unlock(&n->lk);
	rc = h5_dataset_open(&nd, f, addr);
	if (rc == 0 && h5_view_raw.size(nd) != was) {
		rc = n->type == NT_DIR ? vw_frame_count(&size, nd) : vw_open(&ops, nd, (enum vw_kind)n->vkind, n->vframe);
		if (rc == 0) {
			pthread_rwlock_wrlock(&n->lk);
			old = n->ds;
			n->ds = nd;
			nd = NULL;
			if (ops) {
				size = ops->size(n->ds);
				n->view = ops;
				n->st.st_size = (off_t)size;
				n->st.st_blocks = blocks_of(size);
			}
			xattr_cache_drop(n);    /* user.h5.shape has grown */
			pthread_rwlock_unlock(&n->lk);
		}
	}
	if (rc == H5_ERR_NOTFOUND) {
		h5_err_clear();
		e = ENOENT;
	} else if (rc < 0) {
		e = h5err_logged(fs, rc, "refresh", n->path, NULL, addr);
	}
	h5_dataset_close(nd);
	h5_dataset_close(old);
	h5_file_release_related(f);
	return e;
}
