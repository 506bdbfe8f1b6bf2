/* pending.c - reads answered with the bytes a dataset's write handles
 * were told are written (issue 53; man h5fs MODIFYING): a write inside a
 * dataset is kept by its handle's overwriter until a commit (member/
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
	struct wqueue *q;
	size_t n;
	struct wfile *w[];      /* n's handles holding kept bytes */
};

/* (a holding handle with kept bytes neither goes on in another generation,
 * wfile_follow, nor lets go of its hold, wfile_give_back, nor is released,
 * while the apply lock is held: the list stays right until pending_end) */
struct pending *pending_begin(h5fs *fs, struct node *n)
{
	struct pending *p = NULL;
	struct wqueue *q;
	size_t cap = 0;
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
	pthread_mutex_lock(&q->mu);
	pthread_mutex_lock(&fs->lock);
	for (struct hlink *h = fs->open_wfiles.next; h != &fs->open_wfiles; h = h->next) {
		struct wfile *w = (struct wfile *)(void *)h;

		if (w->n == n && w->ow && h5_overwrite_kept(w->ow))
			cap++;
	}
	p = malloc(sizeof(*p) + cap * sizeof(p->w[0]));
	if (p) {
		p->q = q;
		p->n = 0;
		for (struct hlink *h = fs->open_wfiles.next; h != &fs->open_wfiles && p->n < cap; h = h->next) {
			struct wfile *w = (struct wfile *)(void *)h;

			if (w->n == n && w->ow && h5_overwrite_kept(w->ow))
				p->w[p->n++] = w;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	pthread_mutex_unlock(&q->mu);
	if (!p) {
		/* (out of memory: answered from FILE, as before issue 53) */
		pthread_mutex_unlock(&q->apply);
		wq_put(fs, n, q);
	}
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

/* Two handles never keep bytes over the same place: the later write must
 * win, in reads and in FILE, and the handles' commits come in any order
 * (each at its close). So before w keeps [off, off + len), the other
 * handles' kept bytes there are committed (all of them, not durably: as
 * their 64 MiB commit); w's then lie over them. stress-ng's aiol (64
 * descriptors of one file, the rounds overlapping) read the earlier
 * round's bytes back. A failed commit is that handle's error (answered
 * earlier: its close and fsync report it). q->apply held by the caller:
 * the list of n's handles stays as it is. */
static int commit_over(h5fs *fs, struct node *node, const struct wfile *w, fuse_ino_t ino, uint64_t off,
		       uint64_t len)
{
	struct wfile **v = NULL;
	size_t n = 0, cap = 0;
	int e = 0;

	pthread_mutex_lock(&fs->lock);
	for (struct hlink *h = fs->open_wfiles.next; h != &fs->open_wfiles; h = h->next) {
		struct wfile *o = (struct wfile *)(void *)h;

		if (o == w || o->n != node || !o->ow || !h5_overwrite_kept(o->ow))
			continue;
		if (n == cap) {
			size_t nc = cap ? 2 * cap : 8;
			struct wfile **nv = realloc(v, nc * sizeof(*nv));

			if (!nv) {
				e = ENOMEM;
				break;
			}
			v = nv;
			cap = nc;
		}
		v[n++] = o;
	}
	pthread_mutex_unlock(&fs->lock);
	for (size_t i = 0; i < n && !e; i++) {
		int rc = h5_overwrite_peek(v[i]->ow, off, NULL, (size_t)len), oe;

		if (rc < 0) {
			e = h5err_logged(fs, rc, "write", node->path, NULL, node->addr);
		} else if (rc > 0 && (oe = ow_commit(fs, v[i]->n, v[i]->ow, ino, true, false, v[i]->cached)) != 0) {
			pthread_mutex_lock(&v[i]->q->mu);
			if (!v[i]->err)
				v[i]->err = oe;
			pthread_mutex_unlock(&v[i]->q->mu);
			__atomic_store_n(&v[i]->failed, true, __ATOMIC_RELAXED);
		}
	}
	free(v);
	return e;
}

int pending_supersede(h5fs *fs, struct wfile *w, fuse_ino_t ino, uint64_t off, size_t len)
{
	return commit_over(fs, w->n, w, ino, off, len);
}

/* (a punched hole: every handle's kept bytes there first) */
int pending_commit_over(h5fs *fs, struct node *n, fuse_ino_t ino, uint64_t off, uint64_t len)
{
	return commit_over(fs, n, NULL, ino, off, len);
}

int pending_peek(const struct pending *p, uint64_t off, void *buf, size_t len)
{
	int any = 0;

	/* (no two handles keep bytes over the same place: pending_supersede) */
	for (size_t i = p ? p->n : 0; i-- > 0;) {
		int rc = h5_overwrite_peek(p->w[i]->ow, off, buf, len);

		/* (a chunk taken whole read back and decoded: it may fail) */
		if (rc < 0)
			return rc;
		any |= rc;
		if (any && !buf)
			break;
	}
	return any;
}

int pending_read(h5_read_plan *out, const struct pending *p, struct node *n, uint64_t off, size_t len)
{
	uint8_t *b;
	int rc;

	if (!p || !p->n || n->view != &h5_view_raw)
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
