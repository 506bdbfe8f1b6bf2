/*
 * gslot.c - room for new groups taken ahead (gslot.h). One pool per open
 * FILE, for the children of one parent at a time (the daemon's link
 * batch is of one group: a mkdir elsewhere commits it first). Lock order:
 * write_lock, then the pool's mu; a mkdir takes mu alone.
 */
#include "gslot.h"
#include "space.h"
#include "file_ws.h"

#include <pthread.h>

/* Slots taken at a fill: twice what the last fill's were used for, within
 * bounds (a batch of mkdir is at most 4,096 names, LB_MAX_ITEMS; 20 ms of
 * mkdir at 0.1 ms each is 200). A v1 group is 800-900 bytes: 256 slots
 * hold about 220 KB until the next idle sync. */
#define GSLOT_MIN 16
#define GSLOT_MAX 256

struct h5_gpool {
	pthread_mutex_t mu;
	/* under mu: the parent whose children the slots are for (UNDEF:
	 * none), their form and size */
	uint64_t parent;
	const h5_lstore_ops *ops;
	h5_group_crt crt;
	size_t len;
	/* under mu: the free slots, handed out from the end (v is sorted
	 * downward: the lowest address goes first) */
	h5_gslot *v;
	size_t n, cap;
	size_t taken;           /* since the last fill */
	size_t taken_sync;      /* since the last idle check */
	/* under mu: of the slots written since the last link commit, the
	 * lowest allocation end before one, and whether one was reused
	 * space */
	uint64_t low;
	bool any_written, reused_written;
	uint64_t wseq;          /* slots written, ever (h5_gslot_staged) */
};

static struct h5_gpool *pool_of(const h5_file *f)
{
	return __atomic_load_n(&h5_ws(f)->gpool, __ATOMIC_ACQUIRE);
}

/* Under write_lock: made once per FILE. */
static struct h5_gpool *pool_make(h5_file *f)
{
	struct h5_wstate *ws = h5_ws(f);
	struct h5_gpool *p = pool_of(f);

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	pthread_mutex_init(&p->mu, NULL);
	p->parent = H5_ADDR_UNDEF;
	__atomic_store_n(&ws->gpool, p, __ATOMIC_RELEASE);
	return p;
}

bool h5_gslot_take(h5_gslot *s, const h5_lstore_ops **ops, h5_group_crt *crt, size_t *len, h5_file *f,
		   uint64_t parent)
{
	struct h5_gpool *p = pool_of(f);
	bool got = false;

	if (!p)
		return false;
	pthread_mutex_lock(&p->mu);
	if (p->parent == parent && p->n) {
		*s = p->v[--p->n];
		*ops = p->ops;
		*crt = p->crt;
		*len = p->len;
		p->taken++;
		p->taken_sync++;
		got = true;
	}
	pthread_mutex_unlock(&p->mu);
	return got;
}

void h5_gslot_written(h5_file *f, const h5_gslot *s)
{
	struct h5_gpool *p = pool_of(f);

	pthread_mutex_lock(&p->mu);
	if (!p->any_written || s->start < p->low)
		p->low = s->start;
	p->any_written = true;
	p->reused_written |= s->reused;
	p->wseq++;
	pthread_mutex_unlock(&p->mu);
}

void h5_gslot_untake(h5_file *f, const h5_gslot *s)
{
	struct h5_gpool *p = pool_of(f);

	/* (room for it: it came from v; a release meanwhile emptied v and
	 * left the slot unreferenced, as an error's loose group is) */
	pthread_mutex_lock(&p->mu);
	if (p->n < p->cap && p->parent != H5_ADDR_UNDEF)
		p->v[p->n++] = *s;
	pthread_mutex_unlock(&p->mu);
}

/* Under write_lock and mu: every free slot freed (never written, never
 * referenced: reused after the next sync, as any free). */
static void release(h5_file *f, struct h5_gpool *p)
{
	for (size_t i = 0; i < p->n; i++)
		h5_space_free(f, p->v[i].addr, p->len, 0);
	p->n = 0;
	p->taken = 0;
	p->parent = H5_ADDR_UNDEF;
}

int h5_gslot_fill_locked(h5_file *f, uint64_t parent, const h5_lstore_ops *ops, const h5_group_crt *crt,
			 size_t len)
{
	struct h5_gpool *p = pool_make(f);
	struct h5_wstate *ws = h5_ws(f);
	size_t want;
	int rc = 0;

	if (!p)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	pthread_mutex_lock(&p->mu);
	if (p->parent != parent || p->len != len || p->ops != ops || memcmp(&p->crt, crt, sizeof(*crt)) != 0)
		release(f, p);
	want = 2 * p->taken;
	want = want < GSLOT_MIN ? GSLOT_MIN : want > GSLOT_MAX ? GSLOT_MAX : want;
	if (p->n >= want / 2)
		goto out;       /* enough left */
	if (p->cap < want) {
		h5_gslot *nv = realloc(p->v, want * sizeof(*nv));

		if (!nv) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			goto out;
		}
		p->v = nv;
		p->cap = want;
	}
	p->parent = parent;
	p->ops = ops;
	p->crt = *crt;
	p->len = len;
	/* each within a page, as group_create_locked's (a header is
	 * rewritten in place later: attributes) */
	{
		size_t had = p->n;

		while (p->n < want) {
			uint64_t start = h5_space_end(f), reused = ws->reused, a;

			rc = h5_space_take_page(&a, f, len);
			if (rc < 0)
				break;
			p->v[p->n++] = (h5_gslot){ .addr = a, .start = start, .reused = ws->reused != reused };
		}
		/* handed out lowest first: v[had..n) downward */
		for (size_t i = had, j = p->n; i + 1 < j; i++, j--) {
			h5_gslot t = p->v[i];

			p->v[i] = p->v[j - 1];
			p->v[j - 1] = t;
		}
	}
	p->taken = 0;
	/* a full disk: what was taken stays in the pool; the mkdir that
	 * asked makes its group the old way (its own error if any) */
	if (rc < 0 && p->n)
		rc = 0;
	if (rc < 0)
		h5_err_clear();
	rc = 0;
out:
	pthread_mutex_unlock(&p->mu);
	return rc;
}

bool h5_gslot_stage(h5_file *f, uint64_t *start, uint64_t *seq)
{
	struct h5_gpool *p = pool_of(f);
	bool reused = false;

	*seq = 0;
	if (!p)
		return false;
	pthread_mutex_lock(&p->mu);
	if (p->any_written && p->low < *start)
		*start = p->low;
	reused = p->reused_written;
	*seq = p->wseq;
	pthread_mutex_unlock(&p->mu);
	return reused;
}

void h5_gslot_staged(h5_file *f, uint64_t seq)
{
	struct h5_gpool *p = pool_of(f);

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	if (p->wseq == seq)
		p->any_written = p->reused_written = false;
	pthread_mutex_unlock(&p->mu);
}

int h5_gslot_refill_locked(h5_file *f, uint64_t parent)
{
	struct h5_gpool *p = pool_of(f);
	const h5_lstore_ops *ops;
	h5_group_crt crt;
	size_t len;
	bool low;

	if (!p)
		return 0;
	pthread_mutex_lock(&p->mu);
	ops = p->ops;
	crt = p->crt;
	len = p->len;
	low = p->parent == parent && p->taken && p->n < (2 * p->taken < GSLOT_MIN ? GSLOT_MIN : 2 * p->taken) / 2;
	pthread_mutex_unlock(&p->mu);
	return low ? h5_gslot_fill_locked(f, parent, ops, &crt, len) : 0;
}

void h5_gslot_release_locked(h5_file *f, uint64_t parent, bool idle_only)
{
	struct h5_gpool *p = pool_of(f);

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	if ((parent == H5_ADDR_UNDEF || parent == p->parent) && (!idle_only || !p->taken_sync))
		release(f, p);
	p->taken_sync = 0;
	pthread_mutex_unlock(&p->mu);
}

void h5_gslot_destroy(struct h5_wstate *ws)
{
	struct h5_gpool *p = ws->gpool;

	if (!p)
		return;
	pthread_mutex_destroy(&p->mu);
	free(p->v);
	free(p);
}
