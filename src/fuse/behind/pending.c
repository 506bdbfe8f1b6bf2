/* pending.c - reads answered with the bytes a dataset's write handles
 * were told are written (issue 53; man h5fs MODIFYING): a write inside a
 * dataset is kept by its node's one overwriter until a commit (behind/
 * overwrite.c), and is answered before it is applied (write-behind,
 * behind/write.c); a read of those bytes, through any descriptor, must
 * show them all the same. A read of a node with write handles therefore
 * waits until every write answered before it came is applied (its
 * ticket), holds the queue's apply lock while its answer is made (no
 * put or commit in between), and answers with FILE's bytes under the
 * kept ones (engine h5_overwrite_peek). The kernel asks us for a page a
 * page-cached write filled only in part (and, for a direct_io writer,
 * for every page), so its pages come out right too.
 *
 * No deadlock with the kernel's page locks: a reader may hold the pages
 * it reads locked while it waits here, so nothing holding a ticket or the
 * apply lock drops pages - a commit's page drop is done after both are
 * let go (behind/overwrite.c ow_refresh, ow_pages_settle). Lock order:
 * apply, then q->mu, then fs->lock (as wfile_hold: q->mu, then FILE's
 * lock); the answer is then made under n->lk taking no other. */
#include "wstate.h"
#include "handle.h"

struct pending {
	struct wqueue *q;       /* its overwriter (q->ow) keeps the node's bytes */
};

/* (the node's overwriter keeps what its handles put until a commit, and
 * is neither committed, reopened nor closed while the apply lock is
 * held: it stays right until pending_end) */
struct pending *pending_begin(h5fs *fs, struct node *n)
{
	struct pending *p = NULL;
	struct wqueue *q;
	uint64_t t;

	if (!__atomic_load_n(&n->wq, __ATOMIC_ACQUIRE))
		return NULL;    /* no write handle (one opened now comes after the read) */
	q = wq_get(fs, n);
	if (!q)
		return NULL;
	/* the writes answered before this read, applied */
	pthread_mutex_lock(&q->mu);
	t = q->next;
	while (q->turn < t)
		pthread_cond_wait(&q->cv, &q->mu);
	pthread_mutex_unlock(&q->mu);
	pthread_mutex_lock(&q->apply);
	p = malloc(sizeof(*p));
	if (!p) {
		/* (out of memory: answered from FILE, as before issue 53) */
		pthread_mutex_unlock(&q->apply);
		wq_put(fs, n, q);
		return NULL;
	}
	p->q = q;
	return p;
}

void pending_end(h5fs *fs, struct node *n, struct pending *p)
{
	if (!p)
		return;
	pthread_mutex_unlock(&p->q->apply);
	wq_put(fs, n, p->q);
	free(p);
}

/* (a punched hole: the node's kept bytes there committed first, not
 * durably; a failed commit is the error of the handles that kept bytes
 * in it, ow_commit) */
int pending_commit_over(h5fs *fs, struct node *n, fuse_ino_t ino, uint64_t off, uint64_t len)
{
	struct wqueue *q = __atomic_load_n(&n->wq, __ATOMIC_ACQUIRE);
	int rc;

	if (!q || !wq_ow(q))
		return 0;
	rc = h5_overwrite_peek(wq_ow(q), off, NULL, (size_t)len);
	if (rc < 0)
		return h5err_logged(fs, rc, "write", n->path, NULL, n->addr);
	if (rc > 0)
		(void)ow_commit(fs, q, n, ino, true, false);
	return 0;
}

int pending_peek(const struct pending *p, uint64_t off, void *buf, size_t len)
{
	/* (a chunk taken whole read back and decoded: it may fail) */
	return p && wq_ow(p->q) ? h5_overwrite_peek(wq_ow(p->q), off, buf, len) : 0;
}

int pending_read(h5_read_plan *out, const struct pending *p, struct node *n, uint64_t off, size_t len)
{
	uint8_t *b;
	int rc;

	if (!p || !wq_ow(p->q) || n->view != &h5_view_raw)
		return 1;
	rc = pending_peek(p, off, NULL, len);
	if (rc <= 0)
		return rc < 0 ? rc : 1;
	b = h5_buf_alloc(len ? len : 1);
	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = n->view->read(n->ds, b, off, len);
	if (rc < 0) {
		h5_buf_free(b);
		return rc;
	}
	rc = pending_peek(p, off, b, len);
	if (rc < 0) {
		h5_buf_free(b);
		return rc;
	}
	out->kind = H5_PLAN_BUFFER;
	out->buf = b;
	out->len = len;
	return 0;
}
