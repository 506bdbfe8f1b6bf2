/* view_node.c - the nodes of datasets' views (NAME.npy, .csv, .tiff, .png,
 * NAME.frames/): a dataset's node made a view (views_apply), and made
 * again of a live FILE's new generation (views_make, from fresh.c).
 * member/views.c looks them up, makes them again when their dataset grew
 * and answers the requests with them. */
#include "node.h"
#include "views.h"

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
