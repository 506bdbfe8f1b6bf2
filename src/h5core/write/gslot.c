/*
 * gslot.c - room for new groups taken ahead (gslot.h). One pool per open
 * FILE, for the children of one parent at a time (the daemon's link
 * batch is of one group: a mkdir elsewhere commits it first). Lock order:
 * write_lock, then the pool's mu; a mkdir takes mu alone.
 */
#include "gslot.h"
#include "space.h"
#include "file_ws.h"
#include "freesp.h"

#include <pthread.h>

/* Slots a fill makes the pool hold (want_of), within bounds. Few: slots
 * not used when mkdirs stop are freed (idle, unmount) between blocks the
 * commits placed after them, so FILE keeps their length until its space
 * is reused. The pool is topped up between commits (h5_gslot_top_up: a
 * mkdir that finds write_lock free) and at each link batch's commit, and
 * grows only when a mkdir found it empty. */
#define GSLOT_MIN 8
#define GSLOT_MAX 64

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
	size_t target;          /* want_of */
	size_t taken_sync;      /* since the last idle check */
	/* under mu: of the slots written since the last link commit, the
	 * lowest allocation end before one, and whether one was reused
	 * space */
	uint64_t low;
	bool any_written, reused_written;
	uint64_t wseq;          /* slots written, ever (h5_gslot_staged) */
	uint64_t epoch;         /* releases, ever (h5_gslot_untake) */
};

/* (under mu) the slots a fill makes the pool hold: doubled each time a
 * mkdir found it empty (it then waited for write_lock), from GSLOT_MIN
 * again once idle */
static size_t want_of(const struct h5_gpool *p)
{
	return p->target < GSLOT_MIN ? GSLOT_MIN : p->target > GSLOT_MAX ? GSLOT_MAX : p->target;
}

static struct h5_gpool *pool_of(const h5_file *f)
{
	return __atomic_load_n(&h5_ws(f)->gpool, __ATOMIC_ACQUIRE);
}

static void pool_free(struct h5_gpool *p);

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
	ws->gpool_free = pool_free;
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
		s->epoch = p->epoch;
		*ops = p->ops;
		*crt = p->crt;
		*len = p->len;
		p->taken_sync++;
		got = true;
	} else if (p->parent == parent && p->target < GSLOT_MAX) {
		p->target = 2 * want_of(p);
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
	 * left the slot unreferenced, as an error's loose group is - and
	 * kept out of a pool filled since, maybe for another parent, whose
	 * groups may be longer than the slot) */
	pthread_mutex_lock(&p->mu);
	if (p->n < p->cap && p->parent != H5_ADDR_UNDEF && p->epoch == s->epoch)
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
	p->target = GSLOT_MIN;
	p->parent = H5_ADDR_UNDEF;
	p->epoch++;
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
	want = want_of(p);
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

			/* freed space when an extent takes it across a page
			 * boundary, else at the end: h5_space_take_page there
			 * frees what follows each block until a sync, so each
			 * slot of a fill would start a page of its own */
			if (h5_freesp_largest(&ws->freesp) >= len + 4096)
				rc = h5_space_take_page(&a, f, len);
			else
				rc = h5_space_alloc_page(&a, f, len);
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
	/* a full disk: what was taken stays in the pool; the mkdir that
	 * asked makes its group the old way (its own error if any) */
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

/* (under mu) whether the pool for parent's children has fewer than half
 * the slots a fill makes */
static bool running_low(const struct h5_gpool *p, uint64_t parent)
{
	return p->parent == parent && p->n < want_of(p) / 2;
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
	low = running_low(p, parent);
	pthread_mutex_unlock(&p->mu);
	return low ? h5_gslot_fill_locked(f, parent, ops, &crt, len) : 0;
}

void h5_gslot_top_up(h5_file *f, uint64_t parent)
{
	struct h5_gpool *p = pool_of(f);
	bool low;

	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	low = running_low(p, parent);
	pthread_mutex_unlock(&p->mu);
	/* (never waits: a commit holding write_lock refills at its end) */
	if (!low || pthread_mutex_trylock(&f->write_lock) != 0)
		return;
	if (h5_gslot_refill_locked(f, parent) < 0)
		h5_err_clear();
	pthread_mutex_unlock(&f->write_lock);
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

/* (the write state's gpool_free: file_ws.c) */
static void pool_free(struct h5_gpool *p)
{
	pthread_mutex_destroy(&p->mu);
	free(p->v);
	free(p);
}
