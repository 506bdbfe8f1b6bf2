/*
 * truncate.c - a dataset's size set through the mount (issue 47): opened
 * with O_TRUNC (`cat x > d`, `cp x d`: the new bytes then come as rows),
 * and truncate(2) to whole rows (h5py's resize along dimension 0):
 *   - to 0: the dataset emptied (engine h5_dataset_empty: its index and
 *     rows gone, its header, attributes, type, chunk shape and filters
 *     kept);
 *   - larger: dims[0] raised, nothing written (engine
 *     h5_overwrite_resize): the new rows read the fill value, so FILE
 *     grows by no chunk;
 *   - smaller, but not 0 (issue 65: fsx, pjdfstest, h5py's resize):
 *     as libhdf5's H5Dset_extent, the chunks wholly past the new end
 *     leave the index (their space freed), the boundary chunk's part
 *     past it becomes the fill value (a later growth reads the fill
 *     value there), then dims[0]: one ordered commit (engine
 *     h5_overwrite_resize; resize below);
 *   - not whole rows, or a dataset that cannot grow (fixed size,
 *     contiguous, another index): EINVAL or EPERM, logged.
 * Rows other descriptors of the dataset wrote are committed first
 * (wclose.c trunc_set_size, for setattr.c, size.c and write.c, above
 * this file: it commits the node's handles first); rows still not
 * committed (an open O_TRUNC while another descriptor appends) are
 * EBUSY, logged. Open write descriptors go on
 * from the new size (wqueue.c wq_resized).
 * The caller holds FILE for writing (commit_begin) and u, n as the
 * current generation shows it.
 */
#include "wstate.h"
#include "resize.h"

/* n's dataset read again after its size changed: the node's size, blocks,
 * times and kept xattrs follow (as wfile_refresh after appends). */
static void node_reload(h5fs *fs, struct node *n, const struct use *u)
{
	h5_dataset *nd = NULL, *old;
	struct timespec now;
	uint64_t alloc;

	/* (opened under n->lk: refreshes land in the order of the states
	 * they opened, write.c wfile_refresh) */
	pthread_rwlock_wrlock(&n->lk);
	if (h5_dataset_open(&nd, u->f, u->addr) < 0) {
		pthread_rwlock_unlock(&n->lk);
		h5fs_log(fs, LOG_ERR, "truncate %s: reopening the dataset: %s", show_path(n->path), h5_err_msg());
		h5_err_clear();
		return;
	}
	alloc = h5_dataset_allocated(nd);
	clock_gettime(CLOCK_REALTIME, &now);
	old = n->ds;
	n->ds = nd;
	n->view = h5_dataset_view(nd);
	tail_committed(n, n->view->size(nd));
	xattr_cache_drop(n);    /* user.h5.shape */
	n->st.st_blocks = blocks_of(alloc);
	n->st.st_mtim = n->st.st_ctim = now;
	pthread_rwlock_unlock(&n->lk);
	h5_dataset_close(old);
}

/* More or fewer rows (not none), one durable commit through an
 * overwriter of its own (the handles' rows and kept bytes were committed
 * before: wclose.c trunc_set_size; bytes a handle keeps past a new
 * smaller end later are cut at its commit): growing raises dims[0] and
 * writes nothing (the new rows read the fill value; issue 65: `truncate
 * -s 1G` wrote its fill); shrinking drops the chunks past the new end or
 * gives them the fill value first (engine h5_overwrite_resize). *ow is
 * closed by the caller once the node was reopened: the close frees what
 * the commit replaced, and no reader may follow an old address there. */
static int resize(h5fs *fs, struct node *n, const struct use *u, uint64_t size, uint64_t cur, h5_overwriter **ow,
		  const char *op)
{
	int rc = h5_overwrite_open(ow, u->f, u->addr);

	/* a shrink: the index blocks it copies, the boundary chunk it
	 * rewrites, reserved before the answer; a growth writes no chunk
	 * (at most an index header, within the share of the margin a commit
	 * may use, as the appends' growth it replaced: `truncate -s 1G` on
	 * a full disk fits, test_long_runs) */
	if (rc == 0 && size < cur)
		rc = h5_overwrite_reserve(*ow, 0);
	if (rc == 0)
		rc = h5_overwrite_resize(*ow, size);
	if (rc == 0)
		rc = h5_overwrite_commit(*ow, 1, 1);
	if (rc == H5_ERR_INVAL || rc == H5_ERR_UNSUPPORTED || rc == H5_ERR_PERM) {
		int e = rc == H5_ERR_INVAL ? EINVAL : EPERM;

		h5fs_log(fs, LOG_NOTICE, "%s %s to %llu bytes: %s: %s", op, show_path(n->path),
			 (unsigned long long)size, e == EINVAL ? "EINVAL" : "EPERM", h5_err_msg());
		h5_err_clear();
		return e;
	}
	return rc < 0 ? h5err_logged(fs, rc, op, n->path, NULL, u->addr) : 0;
}

int trunc_resize_undoable(h5fs *fs, struct node *n, const struct use *u, uint64_t size, h5_empty_undo *undo,
			  const char *op)
{
	h5_overwriter *ow = NULL;
	uint64_t cur;
	int rc, e;

	e = node_ds_need(fs, n);     /* let go after its lookup (node.c) */
	if (e)
		return e;
	pthread_rwlock_rdlock(&n->lk);
	cur = n->ds ? n->view->size(n->ds) : 0;
	rc = n->ds ? h5_append_check(n->ds) : h5_err_set(H5_ERR_PERM, "not a dataset");
	pthread_rwlock_unlock(&n->lk);
	if (rc < 0) {
		h5fs_log(fs, LOG_NOTICE, "%s %s to %llu bytes: EPERM: %s", op, show_path(n->path),
			 (unsigned long long)size, h5_err_msg());
		h5_err_clear();
		return EPERM;
	}
	if (size == cur)
		return 0;
	if (size != 0) {
		e = resize(fs, n, u, size, cur, &ow, op);
	} else {
		rc = h5_dataset_empty_undoable(u->f, u->addr, undo);
		e = rc < 0 ? h5err_logged(fs, rc, op, n->path, NULL, u->addr) : 0;
		if (rc == H5_ERR_PERM || rc == H5_ERR_BUSY)
			h5fs_log(fs, LOG_NOTICE, "%s %s: %s: %s", op, show_path(n->path), strerror(e), h5_err_msg());
		h5_err_clear();
	}
	/* (also after a failure: a commit may have been made) */
	node_reload(fs, n, u);
	h5_overwrite_close(ow);
	pthread_rwlock_rdlock(&n->lk);
	cur = n->ds ? n->view->size(n->ds) : 0;
	pthread_rwlock_unlock(&n->lk);
	wq_resized(fs, n, cur);
	return e;
}

/* A replacement (O_TRUNC) that failed: the old rows back, the node and
 * the kernel told; FILE's lock taken for it. Logged either way. */
void trunc_unempty(h5fs *fs, struct node *n, fuse_ino_t ino, struct gen *g, h5_empty_undo *undo)
{
	struct use u;
	uint64_t cur;
	int rc, e = commit_begin(NULL, fs, NULL, COMMIT_FILE | COMMIT_UNDO, NULL);

	if (e) {
		h5fs_log(fs, LOG_ERR, "replacing %s failed, and its old contents could not be put back: %s",
			 show_path(n->path), strerror(e));
		return;
	}
	e = node_use_current(&u, fs, n);
	if (e) {
		h5fs_log(fs, LOG_ERR, "replacing %s failed, and its old contents could not be put back: %s",
			 show_path(n->path), strerror(e));
		commit_end(fs, NULL, false);
		return;
	}
	rc = u.g == g ? h5_dataset_empty_undo(u.f, u.addr, undo) : h5_err_set(H5_ERR_IO, "FILE changed since");
	if (rc < 0)
		h5fs_log(fs, LOG_ERR, "replacing %s failed, and its old contents could not be put back: %s",
			 show_path(n->path), h5_err_msg());
	else
		h5fs_log(fs, LOG_NOTICE, "replacing %s failed: its old contents are back", show_path(n->path));
	h5_err_clear();
	node_reload(fs, n, &u);
	pthread_rwlock_rdlock(&n->lk);
	cur = n->ds ? n->view->size(n->ds) : 0;
	pthread_rwlock_unlock(&n->lk);
	wq_resized(fs, n, cur);
	if (fs->se)
		notify_inval_inode(fs->se, fs_ino_out(fs, ino), 0, 0);
	node_use_end(&u);
	commit_end(fs, NULL, false);
}
