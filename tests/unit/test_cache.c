/* test_cache.c - the shared LRU (cache.c) and end-to-end dataset reads
 * (dataset.c) against files written by h5py. */
#include "testutil.h"
#include "base.h"
#include "bufpool.h"
#include "cache.h"
#include "file.h"
#include "dtype.h"
#include "dataset.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ===================================================================== */
/* cache                                                                  */
/* ===================================================================== */

typedef struct tobj {
	uint64_t key;
	unsigned gen;           /* which load produced it */
	uint32_t magic;
} tobj;

#define TOBJ_MAGIC 0x0b1ec7u

static atomic_int n_alloc, n_free;

typedef struct tload {
	uint64_t key;
	size_t cost;
	int fail;               /* return this error instead */
	unsigned sleep_us;
	atomic_int *nloads;     /* counts calls */
	h5_cache *self_cache;   /* when set, the load asks the cache for its own key */
	int inner_rc;
} tload;

static int tload_fn(void **obj, size_t *cost, void *ud)
{
	tload *l = ud;
	tobj *o;
	int gen = 0;

	if (l->nloads)
		gen = atomic_fetch_add(l->nloads, 1) + 1;
	if (l->sleep_us)
		usleep(l->sleep_us);
	if (l->self_cache) {
		h5_cache_ref r;

		l->inner_rc = h5_cache_get(&r, l->self_cache, H5_CK_OTHER, l->key, tload_fn, NULL, l);
		if (l->inner_rc == 0)
			h5_cache_release(l->self_cache, &r);
	}
	if (l->fail)
		return h5_err_set(l->fail, "test load of key %llu failed", (unsigned long long)l->key);
	o = malloc(sizeof(*o));
	if (!o)
		return h5_err_set(H5_ERR_NOMEM, "oom");
	o->key = l->key;
	o->gen = (unsigned)gen;
	o->magic = TOBJ_MAGIC;
	atomic_fetch_add(&n_alloc, 1);
	*obj = o;
	*cost = l->cost;
	return 0;
}

static void tobj_free(void *p)
{
	tobj *o = p;

	ck_assert_uint_eq(o->magic, TOBJ_MAGIC);
	o->magic = 0;
	atomic_fetch_add(&n_free, 1);
	free(o);
}

/* Get key with a counted load; returns the load count delta via *loaded. */
static int cget(h5_cache_ref *r, h5_cache *c, uint64_t key, size_t cost, int *loaded)
{
	atomic_int nl = 0;
	tload l = { .key = key, .cost = cost, .nloads = &nl };
	int rc = h5_cache_get(r, c, H5_CK_OTHER, key, tload_fn, tobj_free, &l);

	if (loaded)
		*loaded = atomic_load(&nl);
	if (rc == 0) {
		ck_assert_ptr_nonnull(r->obj);
		ck_assert_uint_eq(((tobj *)r->obj)->key, key);
	}
	return rc;
}

/* Is key cached? (a get that must not load; the probe is released) */
static bool cached(h5_cache *c, uint64_t key)
{
	h5_cache_ref r;
	int loaded;

	ck_assert_int_eq(cget(&r, c, key, 1, &loaded), 0);
	h5_cache_release(c, &r);
	if (loaded) {
		/* undo the probe's own insertion so it does not disturb the test */
		h5_cache_invalidate(c, H5_CK_OTHER, key);
	}
	return loaded == 0;
}

static void reset_counts(void)
{
	atomic_store(&n_alloc, 0);
	atomic_store(&n_free, 0);
}

START_TEST(test_cache_hit_and_miss)
{
	h5_cache *c;
	h5_cache_ref r1, r2;
	int loaded;

	reset_counts();
	ck_assert_int_eq(h5_cache_new(&c, 1000), 0);
	ck_assert_uint_eq(h5_cache_budget(c), 1000);
	ck_assert_uint_eq(h5_cache_used(c), 0);
	ck_assert_int_eq(cget(&r1, c, 7, 100, &loaded), 0);
	ck_assert_int_eq(loaded, 1);
	ck_assert_int_eq(cget(&r2, c, 7, 100, &loaded), 0);
	ck_assert_int_eq(loaded, 0);
	ck_assert_ptr_eq(r1.obj, r2.obj);
	/* same key, other kind: a different entry */
	{
		h5_cache_ref r3;
		atomic_int nl = 0;
		tload l = { .key = 7, .cost = 5, .nloads = &nl };

		ck_assert_int_eq(h5_cache_get(&r3, c, H5_CK_OHDR, 7, tload_fn, tobj_free, &l), 0);
		ck_assert_int_eq(atomic_load(&nl), 1);
		ck_assert_ptr_ne(r3.obj, r1.obj);
		ck_assert_uint_eq(h5_cache_used(c), 105);
		h5_cache_release(c, &r3);
		ck_assert_ptr_null(r3.ent);
	}
	h5_cache_release(c, &r1);
	h5_cache_release(c, &r2);
	ck_assert_uint_eq(h5_cache_used(c), 105);
	ck_assert_int_eq(atomic_load(&n_free), 0);
	h5_cache_free(c);
	ck_assert_int_eq(atomic_load(&n_free), 2);
	/* release of an empty ref is harmless */
	h5_cache_release(NULL, NULL);
}
END_TEST

/* get and release key of kind (cost: of a load); 1 when it loaded */
static int kget(h5_cache *c, uint32_t kind, uint64_t key, size_t cost)
{
	atomic_int nl = 0;
	tload l = { .key = key, .cost = cost, .nloads = &nl };
	h5_cache_ref r;

	ck_assert_int_eq(h5_cache_get(&r, c, kind, key, tload_fn, tobj_free, &l), 0);
	h5_cache_release(c, &r);
	return atomic_load(&nl);
}

/* is key of kind cached? (a probe that loads costs nothing and goes) */
static bool kcached(h5_cache *c, uint32_t kind, uint64_t key)
{
	bool loaded = kget(c, kind, key, 0) != 0;

	if (loaded)
		h5_cache_invalidate(c, kind, key);
	return !loaded;
}

/* Metadata is held within a quarter of the budget (at least 64 MiB): a
 * walk over millions of headers does not push out the chunks, nor fill
 * the budget with headers read once (issue 64); past the budget, the
 * older of the two lists' heads goes. */
START_TEST(test_cache_meta_budget)
{
	const size_t M = (size_t)1 << 20;
	h5_cache *c;

	reset_counts();
	ck_assert_int_eq(h5_cache_new(&c, 1024 * M), 0);
	for (uint64_t k = 1; k <= 4; k++)
		ck_assert_int_eq(kget(c, H5_CK_CHUNK, k, 100 * M), 1);
	for (uint64_t k = 1; k <= 3; k++)
		ck_assert_int_eq(kget(c, H5_CK_OHDR, k, 100 * M), 1);
	/* 300 MiB of headers > 256: the oldest header went, no chunk */
	ck_assert_uint_eq(h5_cache_used(c), 600 * M);
	ck_assert(!kcached(c, H5_CK_OHDR, 1));
	ck_assert(kcached(c, H5_CK_OHDR, 2) && kcached(c, H5_CK_OHDR, 3));
	for (uint64_t k = 1; k <= 4; k++)
		ck_assert(kcached(c, H5_CK_CHUNK, k));
	/* chunks up to the budget, then the older of the two heads goes:
	 * header 2 (the probes above released it first) */
	for (uint64_t k = 5; k <= 8; k++)
		ck_assert_int_eq(kget(c, H5_CK_CHUNK, k, 100 * M), 1);
	ck_assert_uint_eq(h5_cache_used(c), 1000 * M);
	ck_assert_int_eq(kget(c, H5_CK_CHUNK, 9, 100 * M), 1);
	ck_assert_uint_eq(h5_cache_used(c), 1000 * M);
	ck_assert(!kcached(c, H5_CK_OHDR, 2));
	ck_assert(kcached(c, H5_CK_OHDR, 3) && kcached(c, H5_CK_CHUNK, 1));
	h5_cache_free(c);
	ck_assert_int_eq(atomic_load(&n_free), atomic_load(&n_alloc));

	/* a budget of 64 MiB or less: metadata may take all of it */
	ck_assert_int_eq(h5_cache_new(&c, 1000), 0);
	for (uint64_t k = 1; k <= 3; k++)
		ck_assert_int_eq(kget(c, H5_CK_OHDR, k, 300), 1);
	ck_assert_uint_eq(h5_cache_used(c), 900);
	h5_cache_free(c);

	/* capped below the quarter (the default budget's, ctx.c): 200 MiB of
	 * a 1 GiB budget, the oldest of three 100 MiB headers went; a cap
	 * above the quarter changes nothing */
	ck_assert_int_eq(h5_cache_new(&c, 1024 * M), 0);
	h5_cache_meta_cap(c, 200 * M);
	h5_cache_meta_cap(c, 512 * M);
	for (uint64_t k = 1; k <= 3; k++)
		ck_assert_int_eq(kget(c, H5_CK_OHDR, k, 100 * M), 1);
	ck_assert_uint_eq(h5_cache_used(c), 200 * M);
	ck_assert(!kcached(c, H5_CK_OHDR, 1));
	h5_cache_free(c);
}
END_TEST

START_TEST(test_cache_eviction_order)
{
	h5_cache *c;
	h5_cache_ref r;
	uint64_t k;

	reset_counts();
	ck_assert_int_eq(h5_cache_new(&c, 30), 0);
	for (k = 1; k <= 3; k++) {
		ck_assert_int_eq(cget(&r, c, k, 10, NULL), 0);
		h5_cache_release(c, &r);
	}
	ck_assert_uint_eq(h5_cache_used(c), 30);
	/* touch 1: now 2 is the least recently used */
	ck_assert_int_eq(cget(&r, c, 1, 10, NULL), 0);
	h5_cache_release(c, &r);
	ck_assert_int_eq(cget(&r, c, 4, 10, NULL), 0);
	h5_cache_release(c, &r);
	ck_assert_uint_eq(h5_cache_used(c), 30);
	ck_assert_int_eq(atomic_load(&n_free), 1);
	/* order now (oldest first): 3 1 4 ; adding 5 evicts 3 */
	ck_assert_int_eq(cget(&r, c, 5, 10, NULL), 0);
	h5_cache_release(c, &r);
	ck_assert_int_eq(atomic_load(&n_free), 2);
	/* adding 6 with cost 20 evicts 1 and 4 */
	ck_assert_int_eq(cget(&r, c, 6, 20, NULL), 0);
	h5_cache_release(c, &r);
	ck_assert_int_eq(atomic_load(&n_free), 4);
	ck_assert_uint_eq(h5_cache_used(c), 30);
	h5_cache_free(c);

	/* verify which survived with a fresh run and probes */
	reset_counts();
	ck_assert_int_eq(h5_cache_new(&c, 30), 0);
	for (k = 1; k <= 3; k++) {
		ck_assert_int_eq(cget(&r, c, k, 10, NULL), 0);
		h5_cache_release(c, &r);
	}
	ck_assert_int_eq(cget(&r, c, 1, 10, NULL), 0);
	h5_cache_release(c, &r);
	ck_assert_int_eq(cget(&r, c, 4, 9, NULL), 0);
	h5_cache_release(c, &r);
	ck_assert_uint_eq(h5_cache_used(c), 29);
	ck_assert(!cached(c, 2));
	ck_assert_uint_eq(h5_cache_used(c), 29);
	ck_assert(cached(c, 1));
	ck_assert(cached(c, 3));
	ck_assert(cached(c, 4));
	ck_assert_int_eq(atomic_load(&n_alloc) - atomic_load(&n_free), 3);
	h5_cache_free(c);
	ck_assert_int_eq(atomic_load(&n_alloc), atomic_load(&n_free));
}
END_TEST

START_TEST(test_cache_refcount_survives)
{
	h5_cache *c;
	h5_cache_ref held, r;
	uint64_t k;

	reset_counts();
	ck_assert_int_eq(h5_cache_new(&c, 50), 0);
	ck_assert_int_eq(cget(&held, c, 100, 40, NULL), 0);
	/* fill way past the budget; the held entry must not be freed */
	for (k = 1; k <= 20; k++) {
		ck_assert_int_eq(cget(&r, c, k, 10, NULL), 0);
		h5_cache_release(c, &r);
		ck_assert_uint_le(h5_cache_used(c), 50);
	}
	ck_assert_uint_eq(((tobj *)held.obj)->magic, TOBJ_MAGIC);
	ck_assert_uint_eq(((tobj *)held.obj)->key, 100);
	/* entries in use may push usage over the budget */
	{
		h5_cache_ref a, b;

		ck_assert_int_eq(cget(&a, c, 201, 30, NULL), 0);
		ck_assert_int_eq(cget(&b, c, 202, 30, NULL), 0);
		ck_assert_uint_eq(h5_cache_used(c), 100);
		h5_cache_release(c, &a);
		ck_assert_uint_eq(h5_cache_used(c), 70);   /* 201 evicted */
		h5_cache_release(c, &b);
		ck_assert_uint_eq(h5_cache_used(c), 40);   /* 202 evicted */
	}
	/* two refs on one entry: it stays while any is held */
	ck_assert_int_eq(cget(&r, c, 100, 40, NULL), 0);
	ck_assert_ptr_eq(r.obj, held.obj);
	h5_cache_release(c, &held);
	ck_assert_uint_eq(((tobj *)r.obj)->magic, TOBJ_MAGIC);
	h5_cache_release(c, &r);
	ck_assert(cached(c, 100));
	h5_cache_free(c);
	ck_assert_int_eq(atomic_load(&n_alloc), atomic_load(&n_free));
}
END_TEST

START_TEST(test_cache_oversize_entry)
{
	h5_cache *c;
	h5_cache_ref r, small;

	reset_counts();
	ck_assert_int_eq(h5_cache_new(&c, 100), 0);
	ck_assert_int_eq(cget(&small, c, 1, 10, NULL), 0);
	h5_cache_release(c, &small);
	ck_assert_int_eq(cget(&r, c, 2, 1000, NULL), 0);
	ck_assert_uint_eq(((tobj *)r.obj)->key, 2);
	/* the unused small entry was evicted to make room, in vain */
	ck_assert_int_eq(atomic_load(&n_free), 1);
	ck_assert_uint_eq(h5_cache_used(c), 1000);
	h5_cache_release(c, &r);
	ck_assert_uint_eq(h5_cache_used(c), 0);
	ck_assert_int_eq(atomic_load(&n_free), 2);
	h5_cache_free(c);
	ck_assert_int_eq(atomic_load(&n_alloc), atomic_load(&n_free));
}
END_TEST

START_TEST(test_cache_invalidate)
{
	h5_cache *c;
	h5_cache_ref r, r2;
	int loaded;
	tobj *old;

	reset_counts();
	ck_assert_int_eq(h5_cache_new(&c, 1000), 0);
	/* unused entry: freed at once */
	ck_assert_int_eq(cget(&r, c, 1, 10, NULL), 0);
	h5_cache_release(c, &r);
	ck_assert_uint_eq(h5_cache_used(c), 10);
	h5_cache_invalidate(c, H5_CK_OTHER, 1);
	ck_assert_uint_eq(h5_cache_used(c), 0);
	ck_assert_int_eq(atomic_load(&n_free), 1);
	ck_assert_int_eq(cget(&r, c, 1, 10, &loaded), 0);
	ck_assert_int_eq(loaded, 1);
	/* in-use entry: stays valid for its holder, the next get reloads */
	h5_cache_invalidate(c, H5_CK_OTHER, 1);
	ck_assert_int_eq(atomic_load(&n_free), 1);
	old = r.obj;
	ck_assert_int_eq(cget(&r2, c, 1, 10, &loaded), 0);
	ck_assert_int_eq(loaded, 1);
	ck_assert_ptr_ne(r2.obj, old);
	ck_assert_uint_eq(old->magic, TOBJ_MAGIC);
	ck_assert_uint_eq(h5_cache_used(c), 20);
	h5_cache_release(c, &r);
	ck_assert_int_eq(atomic_load(&n_free), 2);
	ck_assert_uint_eq(h5_cache_used(c), 10);
	h5_cache_release(c, &r2);
	ck_assert_uint_eq(h5_cache_used(c), 10);
	/* missing key: no effect */
	h5_cache_invalidate(c, H5_CK_OTHER, 999);
	h5_cache_invalidate(c, H5_CK_OHDR, 1);
	ck_assert_uint_eq(h5_cache_used(c), 10);
	h5_cache_free(c);
	ck_assert_int_eq(atomic_load(&n_alloc), atomic_load(&n_free));
}
END_TEST

/* Space handed out again (write/space.c): every entry of a view keyed in
 * [lo, hi) goes, whatever its kind; other views' entries and keys outside
 * stay; an entry in use stays valid for its holder. */
/* The key table (open addressing, removals shifting later entries back)
 * against a model: thousands of keys of two views, some sharing home
 * slots, got, invalidated one by one and by ranges in a pseudo-random
 * order, through several growths; then the LRU's evictions. Every key
 * must be held exactly when the model says so. */
#define TBL_KEYS 3000

static uint64_t tbl_key(unsigned i)
{
	/* headers a few bytes apart and whole pages apart, as a file's */
	return (uint64_t)(i / 4) * 4096 + (i % 4) * 96 + 8;
}

START_TEST(test_cache_table_model)
{
	h5_cache *c, *v[2];
	h5_cache_ref r;
	static bool in[2][TBL_KEYS];
	uint64_t x = 12345;

	reset_counts();
	memset(in, 0, sizeof(in));
	ck_assert_int_eq(h5_cache_new(&c, (size_t)1 << 24), 0);
	ck_assert_int_eq(h5_cache_new_view(&v[0], c), 0);
	ck_assert_int_eq(h5_cache_new_view(&v[1], c), 0);
	for (unsigned op = 0; op < 40000; op++) {
		unsigned w, i, j;

		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		w = (unsigned)(x >> 60) & 1;
		i = (unsigned)(x >> 33) % TBL_KEYS;
		j = (unsigned)(x >> 20) % 8;
		if (j < 5) {
			ck_assert_int_eq(cget(&r, v[w], tbl_key(i), 1, NULL), 0);
			h5_cache_release(v[w], &r);
			in[w][i] = true;
		} else if (j < 7) {
			h5_cache_invalidate(v[w], H5_CK_OTHER, tbl_key(i));
			in[w][i] = false;
		} else {
			unsigned n = (unsigned)(x >> 8) % 40;

			/* (the first range builds the page table, later ones keep it) */
			h5_cache_invalidate_range(v[w], tbl_key(i), tbl_key(i) + n * 1024 + 1);
			for (unsigned k = i; k < TBL_KEYS && tbl_key(k) <= tbl_key(i) + n * 1024; k++)
				in[w][k] = false;
		}
		if (op % 997 == 0)
			for (w = 0; w < 2; w++)
				for (i = 0; i < TBL_KEYS; i++)
					ck_assert_msg(h5_cache_holds(v[w], H5_CK_OTHER, tbl_key(i)) == in[w][i],
						      "op %u view %u key %u", op, w, i);
	}
	for (unsigned w = 0; w < 2; w++) {
		size_t held = 0;

		for (unsigned i = 0; i < TBL_KEYS; i++) {
			ck_assert(h5_cache_holds(v[w], H5_CK_OTHER, tbl_key(i)) == in[w][i]);
			held += in[w][i];
		}
		ck_assert_uint_eq(h5_cache_view_used(v[w]), held);
	}
	h5_cache_free(v[0]);
	h5_cache_free(v[1]);
	h5_cache_free(c);
	ck_assert_int_eq(atomic_load(&n_alloc), atomic_load(&n_free));

	/* evictions: the least recently released go, the rest stay found */
	reset_counts();
	ck_assert_int_eq(h5_cache_new(&c, 1000), 0);
	for (unsigned i = 0; i < TBL_KEYS; i++) {
		ck_assert_int_eq(cget(&r, c, tbl_key(i), 1, NULL), 0);
		h5_cache_release(c, &r);
	}
	for (unsigned i = 0; i < TBL_KEYS; i++)
		ck_assert(h5_cache_holds(c, H5_CK_OTHER, tbl_key(i)) == (i >= TBL_KEYS - 1000));
	h5_cache_free(c);
	ck_assert_int_eq(atomic_load(&n_alloc), atomic_load(&n_free));
}
END_TEST

START_TEST(test_cache_invalidate_range)
{
	h5_cache *c, *v1, *v2;
	h5_cache_ref r, held;

	reset_counts();
	ck_assert_int_eq(h5_cache_new(&c, 1000), 0);
	ck_assert_int_eq(h5_cache_new_view(&v1, c), 0);
	ck_assert_int_eq(h5_cache_new_view(&v2, c), 0);
	for (uint64_t k = 100; k <= 500; k += 100) {
		ck_assert_int_eq(cget(&r, v1, k, 10, NULL), 0);
		h5_cache_release(v1, &r);
		ck_assert_int_eq(cget(&r, v2, k, 10, NULL), 0);
		h5_cache_release(v2, &r);
	}
	ck_assert_int_eq(cget(&held, v1, 300, 10, NULL), 0);
	h5_cache_invalidate_range(v1, 200, 400);
	ck_assert(cached(v1, 100));
	ck_assert(!cached(v1, 200));
	ck_assert(!cached(v1, 300));
	ck_assert(cached(v1, 400));
	ck_assert(cached(v1, 500));
	for (uint64_t k = 100; k <= 500; k += 100)
		ck_assert(cached(v2, k));
	ck_assert_uint_eq(((tobj *)held.obj)->magic, TOBJ_MAGIC);
	h5_cache_release(v1, &held);
	/* a range outside the keys left (the bounds skip the scan) and one
	 * at their edges; a key put back below and above them counts */
	h5_cache_invalidate_range(v1, 600, 700);
	h5_cache_invalidate_range(v1, 0, 100);
	ck_assert(cached(v1, 100));
	ck_assert(cached(v1, 500));
	h5_cache_invalidate_range(v1, 500, 501);
	ck_assert(!cached(v1, 500));
	ck_assert(cached(v1, 100));
	ck_assert_int_eq(cget(&r, v1, 50, 10, NULL), 0);
	h5_cache_release(v1, &r);
	ck_assert_int_eq(cget(&r, v1, 900, 10, NULL), 0);
	h5_cache_release(v1, &r);
	h5_cache_invalidate_range(v1, 40, 60);
	ck_assert(!cached(v1, 50));
	h5_cache_invalidate_range(v1, 850, 950);
	ck_assert(!cached(v1, 900));
	ck_assert(cached(v1, 100));
	ck_assert(cached(v1, 400));
	/* the core's own entries: by the whole table */
	ck_assert_int_eq(cget(&r, c, 250, 10, NULL), 0);
	h5_cache_release(c, &r);
	h5_cache_invalidate_range(c, 250, 251);
	ck_assert(!cached(c, 250));
	ck_assert(cached(v2, 200));
	h5_cache_free(v1);
	h5_cache_free(v2);
	h5_cache_free(c);
	ck_assert_int_eq(atomic_load(&n_alloc), atomic_load(&n_free));
}
END_TEST

/* Views (files that share the top file's budget): the same key in two
 * views is two entries, the budget and LRU are shared, closing a view drops
 * its entries (an entry still held is freed on its release). */
START_TEST(test_cache_views)
{
	h5_cache *c, *v1, *v2;
	h5_cache_ref r, held;
	int loaded;

	reset_counts();
	ck_assert_int_eq(h5_cache_new(&c, 100), 0);
	ck_assert_int_eq(h5_cache_new_view(&v1, c), 0);
	ck_assert_int_eq(h5_cache_new_view(&v2, v1), 0);   /* a view of a view: of the core */
	ck_assert_int_eq(cget(&r, c, 7, 10, &loaded), 0);
	ck_assert_int_eq(loaded, 1);
	h5_cache_release(c, &r);
	ck_assert_int_eq(cget(&r, v1, 7, 10, &loaded), 0);
	ck_assert_int_eq(loaded, 1);
	h5_cache_release(v1, &r);
	ck_assert_int_eq(cget(&held, v2, 7, 10, &loaded), 0);
	ck_assert_int_eq(loaded, 1);
	ck_assert_uint_eq(h5_cache_used(c), 30);
	ck_assert_uint_eq(h5_cache_used(v1), 30);
	ck_assert_uint_eq(h5_cache_budget(v2), 100);
	ck_assert(cached(v1, 7));
	ck_assert(cached(c, 7));
	/* one budget: filling it through v1 evicts the core's own entry */
	for (uint64_t k = 100; k < 110; k++) {
		ck_assert_int_eq(cget(&r, v1, k, 10, NULL), 0);
		h5_cache_release(v1, &r);
	}
	ck_assert_uint_le(h5_cache_used(c), 100);
	ck_assert(!cached(c, 7));
	/* closing v2 while its entry is held: freed on release */
	h5_cache_free(v2);
	ck_assert_uint_eq(((tobj *)held.obj)->magic, TOBJ_MAGIC);
	{
		/* the handle's release still needs a cache: the core */
		h5_cache_release(c, &held);
	}
	h5_cache_free(v1);
	ck_assert_uint_eq(h5_cache_used(c), 0);
	h5_cache_free(c);
	ck_assert_int_eq(atomic_load(&n_alloc), atomic_load(&n_free));
}
END_TEST

/* h5_cache_prefetch: a hint that loads nothing, also while another
 * thread grows the table it reads without the lock (TSan builds check
 * that race) */
struct pf_arg {
	h5_cache *c;
	atomic_int stop;
	unsigned long n;
};

static void *pf_thread(void *arg)
{
	struct pf_arg *a = arg;

	while (!atomic_load(&a->stop))
		for (uint64_t k = 0; k < 4096; k++, a->n++)
			h5_cache_prefetch(a->c, H5_CK_OTHER, k * 4096);
	return NULL;
}

START_TEST(test_cache_prefetch)
{
	h5_cache *c, *v;
	h5_cache_ref r;
	struct pf_arg a = { 0 };
	pthread_t th;
	int loaded;

	reset_counts();
	ck_assert_int_eq(h5_cache_new(&c, (size_t)1 << 30), 0);
	ck_assert_int_eq(h5_cache_new_view(&v, c), 0);
	h5_cache_prefetch(c, H5_CK_OTHER, 5);
	h5_cache_prefetch(v, H5_CK_OHDR, 5);
	ck_assert(!h5_cache_holds(c, H5_CK_OTHER, 5));
	ck_assert(!h5_cache_holds(v, H5_CK_OHDR, 5));
	ck_assert_int_eq(atomic_load(&n_alloc), 0);
	ck_assert_uint_eq(h5_cache_used(c), 0);
	/* the table grows from 64 buckets to 16,384 meanwhile */
	a.c = v;
	ck_assert_int_eq(pthread_create(&th, NULL, pf_thread, &a), 0);
	for (uint64_t k = 1; k <= 10000; k++) {
		ck_assert_int_eq(cget(&r, v, k * 4096, 1, &loaded), 0);
		ck_assert_int_eq(loaded, 1);
		h5_cache_release(v, &r);
	}
	atomic_store(&a.stop, 1);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_uint_gt(a.n, 0);
	/* the entries loaded are all there, each once, and no more */
	ck_assert_int_eq(atomic_load(&n_alloc), 10000);
	ck_assert_uint_eq(h5_cache_used(c), 10000);
	ck_assert(cached(v, 4096 * 777));
	ck_assert(!h5_cache_holds(v, H5_CK_OTHER, 0));
	h5_cache_free(v);
	h5_cache_free(c);
	ck_assert_int_eq(atomic_load(&n_alloc), atomic_load(&n_free));
}
END_TEST

START_TEST(test_cache_load_failure)
{
	h5_cache *c;
	h5_cache_ref r;
	atomic_int nl = 0;
	tload l = { .key = 5, .cost = 10, .fail = H5_ERR_CHECKSUM, .nloads = &nl };
	int loaded;

	reset_counts();
	ck_assert_int_eq(h5_cache_new(&c, 1000), 0);
	h5_err_clear();
	ck_assert_int_eq(h5_cache_get(&r, c, H5_CK_OTHER, 5, tload_fn, tobj_free, &l), H5_ERR_CHECKSUM);
	ck_assert_ptr_null(r.obj);
	ck_assert_ptr_null(r.ent);
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "key 5 failed"));
	ck_assert_uint_eq(h5_cache_used(c), 0);
	/* not cached: tried again */
	ck_assert_int_eq(h5_cache_get(&r, c, H5_CK_OTHER, 5, tload_fn, tobj_free, &l), H5_ERR_CHECKSUM);
	ck_assert_int_eq(atomic_load(&nl), 2);
	/* and a later successful load works */
	ck_assert_int_eq(cget(&r, c, 5, 10, &loaded), 0);
	ck_assert_int_eq(loaded, 1);
	h5_cache_release(c, &r);
	ck_assert_uint_eq(h5_cache_used(c), 10);
	h5_cache_free(c);
	ck_assert_int_eq(atomic_load(&n_alloc), atomic_load(&n_free));
}
END_TEST

START_TEST(test_cache_self_cycle)
{
	h5_cache *c;
	h5_cache_ref r;
	tload l = { .key = 9, .cost = 1 };
	int rc;

	reset_counts();
	ck_assert_int_eq(h5_cache_new(&c, 1000), 0);
	l.self_cache = c;
	rc = h5_cache_get(&r, c, H5_CK_OTHER, 9, tload_fn, tobj_free, &l);
	/* the outer load succeeds; the inner request for its own key is refused */
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(l.inner_rc, H5_ERR_LOOP);
	h5_cache_release(c, &r);
	h5_cache_free(c);
	ck_assert_int_eq(atomic_load(&n_alloc), atomic_load(&n_free));
}
END_TEST

/* ---- threads ---- */

#define MT_THREADS 8
#define MT_KEYS 100
#define MT_ITERS 4000

typedef struct mt_shared {
	h5_cache *c;
	atomic_int loads[MT_KEYS];
	atomic_int errors;
	pthread_barrier_t start;
} mt_shared;

typedef struct mt_arg {
	mt_shared *s;
	unsigned seed;
	int rc;                 /* for the single-key tests */
	uint64_t key;
	int fail;
	atomic_int *nloads;
	void *obj;
} mt_arg;

static void *mt_hammer(void *p)
{
	mt_arg *a = p;
	mt_shared *s = a->s;
	int i;

	pthread_barrier_wait(&s->start);
	for (i = 0; i < MT_ITERS; i++) {
		uint64_t key = (uint64_t)(rand_r(&a->seed) % MT_KEYS);
		tload l = { .key = key, .cost = 10 + key % 7, .nloads = &s->loads[key],
			    .sleep_us = (i % 97 == 0) ? 200 : 0 };
		h5_cache_ref r;

		if (h5_cache_get(&r, s->c, H5_CK_OTHER, key, tload_fn, tobj_free, &l) < 0) {
			atomic_fetch_add(&s->errors, 1);
			continue;
		}
		if (((tobj *)r.obj)->key != key || ((tobj *)r.obj)->magic != TOBJ_MAGIC)
			atomic_fetch_add(&s->errors, 1);
		if (i % 13 == 0)
			h5_cache_invalidate(s->c, H5_CK_OTHER, (key * 31) % MT_KEYS);
		h5_cache_release(s->c, &r);
	}
	return NULL;
}

START_TEST(test_cache_mt_hammer)
{
	mt_shared *s = calloc(1, sizeof(*s));
	pthread_t th[MT_THREADS];
	mt_arg args[MT_THREADS];
	int i, total = 0;

	reset_counts();
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(h5_cache_new(&s->c, 200), 0);
	pthread_barrier_init(&s->start, NULL, MT_THREADS);
	for (i = 0; i < MT_THREADS; i++) {
		args[i] = (mt_arg){ .s = s, .seed = (unsigned)i * 7919u + 1 };
		ck_assert_int_eq(pthread_create(&th[i], NULL, mt_hammer, &args[i]), 0);
	}
	for (i = 0; i < MT_THREADS; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(atomic_load(&s->errors), 0);
	ck_assert_uint_le(h5_cache_used(s->c), 200);
	for (i = 0; i < MT_KEYS; i++)
		total += atomic_load(&s->loads[i]);
	/* with a budget of ~15 entries most gets miss, but not all */
	ck_assert_int_gt(total, MT_KEYS);
	ck_assert_int_lt(total, MT_THREADS * MT_ITERS);
	ck_assert_int_eq(atomic_load(&n_alloc), total);
	h5_cache_free(s->c);
	ck_assert_int_eq(atomic_load(&n_alloc), atomic_load(&n_free));
	pthread_barrier_destroy(&s->start);
	free(s);
}
END_TEST

static void *mt_one_key(void *p)
{
	mt_arg *a = p;
	tload l = { .key = a->key, .cost = 10, .fail = a->fail, .nloads = a->nloads, .sleep_us = 100000 };
	h5_cache_ref r;

	pthread_barrier_wait(&a->s->start);
	a->rc = h5_cache_get(&r, a->s->c, H5_CK_OTHER, a->key, tload_fn, tobj_free, &l);
	if (a->rc == 0) {
		a->obj = r.obj;
		/* hold it until everyone has it, then release */
		pthread_barrier_wait(&a->s->start);
		h5_cache_release(a->s->c, &r);
	} else if (!strstr(h5_err_msg(), "failed")) {
		a->rc = -1000;   /* waiters must get the loader's message */
	}
	return NULL;
}

static void run_one_key(int fail, int *loads_out, mt_arg *args)
{
	mt_shared *s = calloc(1, sizeof(*s));
	pthread_t th[MT_THREADS];
	atomic_int nl = 0;
	int i;

	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(h5_cache_new(&s->c, 1000), 0);
	pthread_barrier_init(&s->start, NULL, MT_THREADS);
	for (i = 0; i < MT_THREADS; i++) {
		args[i] = (mt_arg){ .s = s, .key = 42, .fail = fail, .nloads = &nl };
		ck_assert_int_eq(pthread_create(&th[i], NULL, mt_one_key, &args[i]), 0);
	}
	for (i = 0; i < MT_THREADS; i++)
		pthread_join(th[i], NULL);
	*loads_out = atomic_load(&nl);
	if (!fail)
		ck_assert_uint_eq(h5_cache_used(s->c), 10);
	else
		ck_assert_uint_eq(h5_cache_used(s->c), 0);
	h5_cache_free(s->c);
	pthread_barrier_destroy(&s->start);
	free(s);
}

START_TEST(test_cache_mt_single_load)
{
	mt_arg args[MT_THREADS];
	int loads, i;

	reset_counts();
	run_one_key(0, &loads, args);
	/* the load sleeps 100 ms, so every thread arrived while it ran */
	ck_assert_int_eq(loads, 1);
	for (i = 0; i < MT_THREADS; i++) {
		ck_assert_int_eq(args[i].rc, 0);
		ck_assert_ptr_eq(args[i].obj, args[0].obj);
	}
	ck_assert_int_eq(atomic_load(&n_alloc), 1);
	ck_assert_int_eq(atomic_load(&n_free), 1);
}
END_TEST

START_TEST(test_cache_mt_failed_load)
{
	mt_arg args[MT_THREADS];
	int loads, i;

	reset_counts();
	run_one_key(H5_ERR_FORMAT, &loads, args);
	ck_assert_int_eq(loads, 1);
	for (i = 0; i < MT_THREADS; i++)
		ck_assert_int_eq(args[i].rc, H5_ERR_FORMAT);
	ck_assert_int_eq(atomic_load(&n_alloc), 0);
}
END_TEST

/* bufpool.c: a large buffer given back is handed out again for the same
 * or a slightly smaller size (so decoding chunk after chunk touches the same
 * pages), never for a much smaller or a larger one; plain malloc blocks and
 * pool buffers mix freely with free(). */
START_TEST(test_bufpool_reuse)
{
	uint8_t *a, *b, *c, *m;

	h5_buf_trim();
	a = h5_buf_alloc(1 << 20);
	ck_assert_ptr_nonnull(a);
	memset(a, 1, 1 << 20);
	h5_buf_free(a);
	b = h5_buf_alloc((1 << 20) - 1000);
	ck_assert_ptr_eq(b, a);
	h5_buf_free(b);
	c = h5_buf_alloc(4 << 20);              /* larger: not the 1 MiB one */
	ck_assert_ptr_ne(c, a);
	memset(c, 2, 4 << 20);
	h5_buf_free(c);
	b = h5_buf_alloc(300 << 10);            /* much smaller: neither */
	ck_assert_ptr_ne(b, a);
	ck_assert_ptr_ne(b, c);
	free(b);                                /* a pool buffer to free() */
	m = malloc(2 << 20);                    /* a malloc block to the pool */
	ck_assert_ptr_nonnull(m);
	h5_buf_free(m);
	b = h5_buf_alloc(2 << 20);
	ck_assert_ptr_eq(b, m);
	h5_buf_free(b);
	h5_buf_free(NULL);
	b = h5_buf_alloc(10);                   /* small: plain malloc */
	ck_assert_ptr_nonnull(b);
	h5_buf_free(b);
	h5_buf_trim();
	/* a 16 MiB cache keeps at most 4 MiB idle: of two 3 MiB buffers
	 * given back the first stays, the second is freed; a large budget
	 * keeps both */
	for (int big = 0; big < 2; big++) {
		h5_buf_budget(big ? (size_t)1 << 30 : 16 << 20);
		a = h5_buf_alloc(3 << 20);
		b = h5_buf_alloc(3 << 20);
		ck_assert_ptr_nonnull(a);
		ck_assert_ptr_nonnull(b);
		h5_buf_free(a);
		h5_buf_free(b);
		if (big)
			ck_assert_uint_ge(h5_buf_idle(), (size_t)6 << 20);
		else
			ck_assert_uint_le(h5_buf_idle(), (size_t)4 << 20);
		c = h5_buf_alloc(3 << 20);
		ck_assert_ptr_eq(c, a);
		h5_buf_free(c);
		h5_buf_trim();
		ck_assert_uint_eq(h5_buf_idle(), 0);
	}
}
END_TEST

static Suite *cache_suite(void)
{
	Suite *s = suite_create("cache");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_cache_hit_and_miss);
	tcase_add_test(tc, test_bufpool_reuse);
	tcase_add_test(tc, test_cache_views);
	tcase_add_test(tc, test_cache_eviction_order);
	tcase_add_test(tc, test_cache_meta_budget);
	tcase_add_test(tc, test_cache_refcount_survives);
	tcase_add_test(tc, test_cache_oversize_entry);
	tcase_add_test(tc, test_cache_invalidate);
	tcase_add_test(tc, test_cache_invalidate_range);
	tcase_add_test(tc, test_cache_table_model);
	tcase_add_test(tc, test_cache_load_failure);
	tcase_add_test(tc, test_cache_prefetch);
	tcase_add_test(tc, test_cache_self_cycle);
	tcase_add_test(tc, test_cache_mt_hammer);
	tcase_add_test(tc, test_cache_mt_single_load);
	tcase_add_test(tc, test_cache_mt_failed_load);
	suite_add_tcase(s, tc);
	return s;
}

/* ===================================================================== */
/* dataset: end-to-end against files written by h5py                      */
/* ===================================================================== */

/* The generator: writes ds_earliest.h5 / ds_latest.h5 (plus external
 * files and deliberately corrupted copies) into argv[1], one side file per
 * dataset with the bytes h5py reads back, and manifest.tsv:
 * file, dataset name, object header address, size, side file, expectation. */
static const char ds_gen_py[] =
	"import os, sys\n"
	"import numpy as np\n"
	"import h5py\n"
	"out = sys.argv[1]\n"
	"os.chdir(out)  # libhdf5 writes external files relative to the cwd\n"
	"man = open('manifest.tsv', 'w')\n"
	"def rec(fname, ds, data, expect='ok'):\n"
	"    b = b'' if data is None else np.asarray(data).tobytes()\n"
	"    side = '%s.%s.bin' % (fname, ds.name.strip('/'))\n"
	"    open(side, 'wb').write(b)\n"
	"    man.write('%s\\t%s\\t%d\\t%d\\t%s\\t%s\\n' % (fname, ds.name, h5py.h5o.get_info(ds.id).addr, len(b), side, expect))\n"
	"def compact(f, name, data):\n"
	"    tid = h5py.h5t.py_create(data.dtype, logical=False)\n"
	"    if data.shape:\n"
	"        space = h5py.h5s.create_simple(data.shape)\n"
	"    else:\n"
	"        space = h5py.h5s.create(h5py.h5s.SCALAR)\n"
	"    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)\n"
	"    dcpl.set_layout(h5py.h5d.COMPACT)\n"
	"    ds = h5py.Dataset(h5py.h5d.create(f.id, name.encode(), tid, space, dcpl=dcpl))\n"
	"    ds[...] = data\n"
	"    return ds\n"
	"rng = np.random.default_rng(1234)\n"
	"def arr(dt, shape):\n"
	"    dt = np.dtype(dt)\n"
	"    n = int(np.prod(shape)) * dt.itemsize\n"
	"    a = np.frombuffer(rng.integers(0, 256, n, dtype=np.uint8).tobytes(), dtype=dt)\n"
	"    return a.reshape(tuple(shape) + a.shape[1:])\n"
	"cmpd = np.dtype([('a', '<i4'), ('b', '<f8'), ('c', 'S3'), ('d', '>u2')])\n"
	"types = ['i1', 'u1', '<i2', '<u2', '<i4', '<u4', '<i8', '<u8', '>i2', '>i4', '>u8', '>f4', '>f8',\n"
	"         '<f2', '<f4', '<f8', 'S10', cmpd, np.dtype(('<i4', (3, 2))), np.dtype('c8'), np.dtype('?')]\n"
	"for libver in ('earliest', 'latest'):\n"
	"    fname = 'ds_%s.h5' % libver\n"
	"    with h5py.File(fname, 'w', libver=libver) as f:\n"
	"        for i, t in enumerate(types):\n"
	"            t = np.dtype(t)\n"
	"            if t.kind == 'f':\n"
	"                data = rng.standard_normal((37, 5)).astype(t)\n"
	"            elif t == np.dtype('?'):\n"
	"                data = rng.integers(0, 2, (37, 5)).astype(bool)\n"
	"            else:\n"
	"                data = arr(t, (37, 5))\n"
	"            ds = f.create_dataset('c%d' % i, shape=(37, 5), dtype=t)\n"
	"            ds[...] = data\n"
	"            rec(fname, ds, data)\n"
	"            rec(fname, compact(f, 'k%d' % i, data[:3]), data[:3])\n"
	"        big = rng.standard_normal(300000)\n"
	"        rec(fname, f.create_dataset('big', data=big), big)\n"
	"        d3 = arr('<i2', (7, 11, 13))\n"
	"        rec(fname, f.create_dataset('d3', data=d3), d3)\n"
	"        s = np.array(123456789, dtype='<i8')\n"
	"        rec(fname, f.create_dataset('scalar', data=s), s)\n"
	"        rec(fname, compact(f, 'kscalar', np.array(3.25, '>f8')), np.array(3.25, '>f8'))\n"
	"        rec(fname, f.create_dataset('null', data=h5py.Empty('<f4')), None)\n"
	"        rec(fname, f.create_dataset('empty', shape=(0,), dtype='<i4'), np.zeros(0, '<i4'))\n"
	"        rec(fname, f.create_dataset('empty2', shape=(5, 0), dtype='<i8'), np.zeros((5, 0), '<i8'))\n"
	"        ds = f.create_dataset('fill7', (100,), '<i4', fillvalue=7)\n"
	"        rec(fname, ds, ds[()])\n"
	"        ds = f.create_dataset('fillf', (3, 17), '>f8', fillvalue=1.5)\n"
	"        rec(fname, ds, ds[()])\n"
	"        ds = f.create_dataset('fillc', (9,), cmpd, fillvalue=np.array((-2, 0.5, b'xyz', 0x1234), cmpd))\n"
	"        rec(fname, ds, ds[()])\n"
	"        ds = f.create_dataset('nofill', (33,), '<u2')\n"
	"        rec(fname, ds, ds[()])\n"
	"        ds = f.create_dataset('timed', data=np.arange(10, dtype='<i4'), track_times=True)\n"
	"        rec(fname, ds, ds[()], 'mtime')\n"
	"        ds = f.create_dataset('vlen_str', data=np.array([b'a', b'bcd', b''], dtype=object),\n"
	"                              dtype=h5py.string_dtype('ascii'))\n"
	"        rec(fname, ds, np.zeros(3 * 16, np.uint8), 'vlen')  # disk: length, heap address, index\n"
	"        ds = f.create_dataset('vlen_seq', (4,), dtype=h5py.vlen_dtype('<i4'))\n"
	"        ds[0] = np.arange(3, dtype='<i4')\n"
	"        rec(fname, ds, np.zeros(4 * 16, np.uint8), 'vlen')\n"
	"        ct = np.dtype([('x', '<i4'), ('s', h5py.string_dtype())])\n"
	"        ds = f.create_dataset('vlen_cmpd', (2,), dtype=ct)\n"
	"        rec(fname, ds, None, 'vlen')  # size depends on the compound's disk packing\n"
	"        ch = arr('<i4', (23, 17))\n"
	"        rec(fname, f.create_dataset('ch_plain', data=ch, chunks=(5, 4)), ch)\n"
	"        rec(fname, f.create_dataset('ch_gzip', data=ch, chunks=(8, 8), compression='gzip', shuffle=True), ch)\n"
	"        ds = f.create_dataset('ch_sparse', (40, 40), '>i2', chunks=(7, 9), fillvalue=-3)\n"
	"        ds[3:9, 30:39] = 99\n"
	"        rec(fname, ds, ds[()])\n"
	"        ds = f.create_dataset('ch_ext', (10, 6), '<f8', chunks=(4, 6), maxshape=(None, 6))\n"
	"        ds[...] = rng.standard_normal((10, 6))\n"
	"        rec(fname, ds, ds[()])\n"
	"        e = arr('<i4', (250,))\n"
	"        ds = f.create_dataset('ext', data=e, external=[(libver + '_ext.bin', 0, e.nbytes)])\n"
	"        rec(fname, ds, e)\n"
	"        e2 = arr('<u8', (40, 3))\n"
	"        ds = f.create_dataset('ext2', data=e2, external=[(libver + '_ea.bin', 0, 100),\n"
	"                                                        (libver + '_eb.bin', 64, 500),\n"
	"                                                        (libver + '_ec.bin', 3, h5py.h5f.UNLIMITED)])\n"
	"        rec(fname, ds, e2)\n"
	"        ds = f.create_dataset('ext_gone', data=e, external=[(libver + '_gone.bin', 0, e.nbytes)])\n"
	"        rec(fname, ds, e, 'io_all')\n"
	"        ds = f.create_dataset('ext_short', data=e, external=[(libver + '_short.bin', 16, e.nbytes)])\n"
	"        rec(fname, ds, e, 'io_tail:%d' % (e.nbytes // 2))\n"
	"    os.remove(libver + '_gone.bin')\n"
	"    with open(libver + '_short.bin', 'r+b') as fh:\n"
	"        fh.truncate(16 + e.nbytes // 2)\n"
	"# corrupt the contiguous layout of one dataset (layout message v3: addr, size)\n"
	"for libver in ('earliest', 'latest'):\n"
	"    src = 'ds_%s.h5' % libver\n"
	"    with h5py.File(src, 'r') as f:\n"
	"        ds = f['c4']\n"
	"        addr, size = ds.id.get_offset(), ds.id.get_storage_size()\n"
	"        oh = h5py.h5o.get_info(ds.id).addr\n"
	"    img = open(src, 'rb').read()\n"
	"    pat = bytes([4 if libver == 'latest' else 3, 1]) + addr.to_bytes(8, 'little') + size.to_bytes(8, 'little')\n"
	"    assert img.count(pat) == 1, (libver, img.count(pat))\n"
	"    at = img.index(pat)\n"
	"    for tag, patch in (('addr', (len(img) + 8).to_bytes(8, 'little') + size.to_bytes(8, 'little')),\n"
	"                       ('size', addr.to_bytes(8, 'little') + (size - 1).to_bytes(8, 'little'))):\n"
	"        bad = img[:at + 2] + patch + img[at + 18:]\n"
	"        name = 'bad_%s_%s.h5' % (tag, libver)\n"
	"        open(name, 'wb').write(bad)\n"
	"        man.write('%s\\t/c4\\t%d\\t0\\t-\\topen_err\\n' % (name, oh))\n"
	"# compact data shorter than the dataspace needs (no checksum in v1 headers)\n"
	"src = 'ds_earliest.h5'\n"
	"with h5py.File(src, 'r') as f:\n"
	"    ds = f['k4']\n"
	"    raw = ds[()].tobytes()\n"
	"    oh = h5py.h5o.get_info(ds.id).addr\n"
	"img = open(src, 'rb').read()\n"
	"pat = bytes([3, 0]) + len(raw).to_bytes(2, 'little') + raw\n"
	"assert img.count(pat) == 1\n"
	"at = img.index(pat)\n"
	"open('bad_compact_earliest.h5', 'wb').write(img[:at + 2] + (len(raw) - 4).to_bytes(2, 'little') + img[at + 4:])\n"
	"man.write('bad_compact_earliest.h5\\t/k4\\t%d\\t0\\t-\\topen_err\\n' % oh)\n"
	"man.close()\n";

static char ds_dir[256];        /* generated files; "" when h5py is missing */

static void ds_setup(void)
{
	int rc;

	ds_dir[0] = '\0';
	if (system("/usr/bin/python3 -c 'import h5py, numpy' >/dev/null 2>&1") != 0) {
		fprintf(stderr, "test_cache: h5py not available via /usr/bin/python3, skipping dataset tests\n");
		return;
	}
	snprintf(ds_dir, sizeof(ds_dir), "/tmp/h5fs_test_ds_XXXXXX");
	rc = test_py_run(ds_dir, ds_gen_py, NULL);
	if (rc == TEST_PY_NO_DIR) {
		fprintf(stderr, "test_cache: mkdtemp: %s\n", strerror(errno));
		return;
	}
	if (rc == TEST_PY_NO_SCRIPT) {
		fprintf(stderr, "test_cache: cannot write %s/gen.py\n", ds_dir);
		abort();
	}
	if (rc != 0) {
		fprintf(stderr, "test_cache: generator failed (status %d): /usr/bin/python3 '%s/gen.py' '%s'\n", rc,
			ds_dir, ds_dir);
		abort();
	}
}

static void ds_teardown(void)
{
	test_py_rmdir(ds_dir);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *p = NULL;
	long n;

	ck_assert_msg(fp != NULL, "cannot open %s", path);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	p = malloc(n > 0 ? (size_t)n : 1);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(fread(p, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return p;
}

typedef struct ds_case {
	char file[128], name[128], side[256], expect[64];
	uint64_t addr, size;
} ds_case;

/* Read manifest lines whose file and dataset names start with the given
 * prefixes (and the name not with skip_prefix). Returns the number of cases. */
static size_t ds_cases(ds_case **out, const char *file_prefix, const char *name_prefix, const char *skip_prefix)
{
	char path[512], line[1024];
	ds_case *v = NULL;
	size_t n = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/manifest.tsv", ds_dir);
	fp = fopen(path, "r");
	ck_assert_msg(fp != NULL, "no manifest in %s", ds_dir);
	while (fgets(line, sizeof(line), fp)) {
		ds_case c;
		unsigned long long addr, size;

		memset(&c, 0, sizeof(c));
		ck_assert_int_eq(sscanf(line, "%127[^\t]\t%127[^\t]\t%llu\t%llu\t%255[^\t]\t%63[^\n]",
					c.file, c.name, &addr, &size, c.side, c.expect), 6);
		c.addr = addr;
		c.size = size;
		if (strncmp(c.file, file_prefix, strlen(file_prefix)) != 0 ||
		    strncmp(c.name, name_prefix, strlen(name_prefix)) != 0 ||
		    (skip_prefix && strncmp(c.name, skip_prefix, strlen(skip_prefix)) == 0))
			continue;
		v = realloc(v, (n + 1) * sizeof(*v));
		ck_assert_ptr_nonnull(v);
		v[n++] = c;
	}
	fclose(fp);
	*out = v;
	return n;
}

static h5_file *ds_file_open(const char *name)
{
	char path[512];
	h5_file *f = NULL;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", ds_dir, name);
	rc = h5_file_open(&f, path, NULL);
	ck_assert_msg(rc == 0, "open %s: %s", path, h5_err_msg());
	return f;
}

static void ds_compare(const ds_case *c, const uint8_t *got, const uint8_t *want, uint64_t off, size_t len)
{
	size_t i;

	if (memcmp(got, want + off, len) == 0)
		return;
	for (i = 0; i < len && got[i] == want[off + i]; i++)
		;
	ck_abort_msg("%s %s: read of %zu bytes at %llu differs at byte %llu (got 0x%02x, want 0x%02x)",
		     c->file, c->name, len, (unsigned long long)off, (unsigned long long)(off + i),
		     got[i], want[off + i]);
}

/* Whole stream, random unaligned windows, and the out-of-range refusals. */
static void ds_check_ok(const ds_case *c, h5_dataset *d, const uint8_t *want, unsigned seed)
{
	uint64_t size = c->size;
	uint8_t *buf = malloc(size + 1);
	int i, rc;

	ck_assert_ptr_nonnull(buf);
	ck_assert_msg(h5_dataset_size(d) == size, "%s %s: size %llu, want %llu", c->file, c->name,
		      (unsigned long long)h5_dataset_size(d), (unsigned long long)size);
	rc = h5_dataset_read(d, buf, 0, size);
	ck_assert_msg(rc == 0, "%s %s: read all: %s", c->file, c->name, h5_err_msg());
	ds_compare(c, buf, want, 0, size);
	for (i = 0; i < 300 && size > 0; i++) {
		uint64_t off = (uint64_t)rand_r(&seed) % size;
		uint64_t maxlen = size - off;
		size_t len;

		if (i % 10 == 0)
			maxlen = maxlen < 3 ? maxlen : 3;   /* tiny windows, element-splitting */
		else if (maxlen > 100000 && i % 3)
			maxlen = 100000;
		len = (size_t)((uint64_t)rand_r(&seed) % (maxlen + 1));
		memset(buf, 0xAA, len);
		rc = h5_dataset_read(d, buf, off, len);
		ck_assert_msg(rc == 0, "%s %s: read %zu at %llu: %s", c->file, c->name, len,
			      (unsigned long long)off, h5_err_msg());
		ds_compare(c, buf, want, off, len);
	}
	/* past the end, and offset overflow */
	ck_assert_int_eq(h5_dataset_read(d, buf, size, 0), 0);
	ck_assert_int_eq(h5_dataset_read(d, buf, size, 1), H5_ERR_INVAL);
	if (size)
		ck_assert_int_eq(h5_dataset_read(d, buf, 1, (size_t)size), H5_ERR_INVAL);
	ck_assert_int_eq(h5_dataset_read(d, buf, UINT64_MAX, 2), H5_ERR_INVAL);
	free(buf);
}

static void ds_check_allocated(const ds_case *c, h5_dataset *d)
{
	const char *n = c->name + 1;
	uint64_t a = h5_dataset_allocated(d);

	if (!strncmp(n, "fill", 4) || !strcmp(n, "nofill"))
		ck_assert_msg(a == 0, "%s %s: never written, allocated %llu", c->file, c->name,
			      (unsigned long long)a);
	else if (!strncmp(n, "ch_", 3) && c->size)
		ck_assert_msg(a > 0 && a < 2 * c->size + 4096, "%s %s: allocated %llu", c->file, c->name,
			      (unsigned long long)a);
	else if (!strncmp(n, "ext", 3) && strcmp(n, "ext2"))
		ck_assert_uint_eq(a, c->size);
	else if (!strcmp(n, "ext2"))
		ck_assert_uint_ge(a, c->size);
	else if (n[0] == 'c' || n[0] == 'k' || !strcmp(n, "big") || !strcmp(n, "d3"))
		ck_assert_msg(a == c->size, "%s %s: allocated %llu, want %llu", c->file, c->name,
			      (unsigned long long)a, (unsigned long long)c->size);
}

static void ds_run(const char *file_prefix, const char *name_prefix, const char *skip_prefix, size_t min_cases)
{
	ds_case *cases = NULL;
	h5_file *f = NULL;
	char cur[128] = "";
	size_t n, i;

	if (!ds_dir[0])
		return;   /* h5py missing: reported by the fixture */
	n = ds_cases(&cases, file_prefix, name_prefix, skip_prefix);
	ck_assert_uint_ge(n, min_cases);
	for (i = 0; i < n; i++) {
		const ds_case *c = &cases[i];
		h5_dataset *d = NULL;
		uint8_t *want = NULL;
		size_t wlen = 0;
		char side[512];
		int rc;

		if (strcmp(cur, c->file) != 0) {
			h5_file_close(f);
			f = ds_file_open(c->file);
			snprintf(cur, sizeof(cur), "%s", c->file);
		}
		h5_err_clear();
		rc = h5_dataset_open(&d, f, c->addr);
		if (!strcmp(c->expect, "open_err")) {
			ck_assert_msg(rc < 0, "%s %s: corrupt layout accepted", c->file, c->name);
			ck_assert_ptr_null(d);
			ck_assert(strcmp(h5_err_msg(), "no error") != 0);
			continue;
		}
		ck_assert_msg(rc == 0, "%s %s: open: %s", c->file, c->name, h5_err_msg());
		snprintf(side, sizeof(side), "%s/%s", ds_dir, c->side);
		want = slurp(side, &wlen);
		ck_assert_uint_eq(wlen, c->size);
		if (!strcmp(c->expect, "ok") || !strcmp(c->expect, "mtime")) {
			ds_check_ok(c, d, want, (unsigned)i * 2654435761u + 17);
			ds_check_allocated(c, d);
			if (!strcmp(c->expect, "mtime")) {
				int64_t t = 0;
				time_t now = time(NULL);

				ck_assert_int_eq(h5_dataset_mtime(d, &t), 0);
				ck_assert_msg(t > (int64_t)now - 86400 && t < (int64_t)now + 86400,
					      "%s %s: mtime %lld", c->file, c->name, (long long)t);
			}
		} else if (!strcmp(c->expect, "vlen")) {
			uint64_t sz = h5_dataset_size(d);
			uint8_t *b = malloc(sz ? (size_t)sz : 1);

			/* variable-length data reads as text, one line per element
			 * (the text itself: test_attr, case vlen) */
			ck_assert_ptr_nonnull(b);
			ck_assert_int_eq(h5_dataset_read(d, b, 0, (size_t)sz), 0);
			ck_assert(sz > 0 && b[sz - 1] == '\n');
			free(b);
		} else if (!strcmp(c->expect, "io_all")) {
			uint8_t b[16];

			ck_assert_uint_eq(h5_dataset_size(d), c->size);
			ck_assert_int_eq(h5_dataset_read(d, b, 0, 1), H5_ERR_IO);
			ck_assert_ptr_nonnull(strstr(h5_err_msg(), "_gone.bin"));
			ck_assert_int_eq(h5_dataset_read(d, b, c->size - 16, 16), H5_ERR_IO);
		} else if (!strncmp(c->expect, "io_tail:", 8)) {
			uint64_t good = strtoull(c->expect + 8, NULL, 10);
			uint8_t *b = malloc(c->size);

			ck_assert_ptr_nonnull(b);
			ck_assert_int_eq(h5_dataset_read(d, b, 0, (size_t)good), 0);
			ds_compare(c, b, want, 0, (size_t)good);
			ck_assert_int_eq(h5_dataset_read(d, b, 3, (size_t)good - 3), 0);
			ds_compare(c, b, want, 3, (size_t)good - 3);
			ck_assert_int_eq(h5_dataset_read(d, b, good, 1), H5_ERR_IO);
			ck_assert_ptr_nonnull(strstr(h5_err_msg(), "_short.bin"));
			ck_assert_int_eq(h5_dataset_read(d, b, 0, (size_t)c->size), H5_ERR_IO);
			ck_assert_int_eq(h5_dataset_read(d, b, c->size - 1, 1), H5_ERR_IO);
			free(b);
		} else {
			ck_abort_msg("unknown expectation %s", c->expect);
		}
		free(want);
		h5_dataset_close(d);
	}
	h5_file_close(f);
	free(cases);
}

START_TEST(test_ds_earliest)
{
	ds_run("ds_earliest.h5", "/", "/ch_", 50);
}
END_TEST

START_TEST(test_ds_latest)
{
	ds_run("ds_latest.h5", "/", "/ch_", 50);
}
END_TEST

START_TEST(test_ds_corrupt_layout)
{
	ds_run("bad_", "/", NULL, 5);
}
END_TEST

START_TEST(test_ds_chunked)
{
	ds_run("ds_earliest.h5", "/ch_", NULL, 4);
	ds_run("ds_latest.h5", "/ch_", NULL, 4);
}
END_TEST

START_TEST(test_ds_not_dataset)
{
	h5_file *f;
	h5_dataset *d = (h5_dataset *)1;

	if (!ds_dir[0])
		return;
	f = ds_file_open("ds_latest.h5");
	/* the root group has no dataspace/datatype/layout */
	ck_assert_int_eq(h5_dataset_open(&d, f, h5_file_root(f)), H5_ERR_FORMAT);
	ck_assert_ptr_null(d);
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "not a dataset"));
	ck_assert_int_lt(h5_dataset_open(&d, f, f->eof + 100), 0);
	ck_assert_ptr_null(d);
	ck_assert_int_lt(h5_dataset_open(&d, f, H5_ADDR_UNDEF), 0);
	h5_file_close(f);
	h5_dataset_close(NULL);
}
END_TEST

/* An external file name that leads to a FIFO must fail, not block. */
START_TEST(test_ds_efl_fifo)
{
	ds_case *cases = NULL;
	char fifo[512];
	h5_file *f;
	h5_dataset *d;
	uint8_t b[4];
	size_t n, i;

	if (!ds_dir[0])
		return;
	n = ds_cases(&cases, "ds_earliest.h5", "/ext_gone", NULL);
	ck_assert_uint_eq(n, 1);
	snprintf(fifo, sizeof(fifo), "%s/earliest_gone.bin", ds_dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	f = ds_file_open("ds_earliest.h5");
	ck_assert_int_eq(h5_dataset_open(&d, f, cases[0].addr), 0);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(h5_dataset_read(d, b, 0, sizeof(b)), H5_ERR_IO);
		ck_assert_ptr_nonnull(strstr(h5_err_msg(), "not a regular file"));
	}
	h5_dataset_close(d);
	h5_file_close(f);
	unlink(fifo);
	free(cases);
}
END_TEST

/* The FUSE daemon shares one opened dataset between threads. */
typedef struct ds_mt {
	h5_dataset *d;
	const uint8_t *want;
	uint64_t size;
	unsigned seed;
	int bad;
} ds_mt;

static void *ds_mt_reader(void *p)
{
	ds_mt *a = p;
	uint8_t *buf = malloc(65536);
	int i;

	for (i = 0; buf && i < 500; i++) {
		uint64_t off = (uint64_t)rand_r(&a->seed) % a->size;
		size_t len = (size_t)((uint64_t)rand_r(&a->seed) % 65536);

		if (len > a->size - off)
			len = (size_t)(a->size - off);
		if (h5_dataset_read(a->d, buf, off, len) != 0 || memcmp(buf, a->want + off, len) != 0)
			a->bad++;
	}
	if (!buf)
		a->bad++;
	free(buf);
	return NULL;
}

START_TEST(test_ds_concurrent_reads)
{
	const char *names[] = { "/big", "/fillf", "/ext2", "/ch_gzip" };
	ds_case *cases = NULL;
	h5_file *f;
	size_t n, i, k;

	if (!ds_dir[0])
		return;
	n = ds_cases(&cases, "ds_latest.h5", "/", NULL);
	f = ds_file_open("ds_latest.h5");
	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		for (i = 0; i < n && strcmp(cases[i].name, names[k]); i++)
			;
		ck_assert_uint_lt(i, n);
		{
			h5_dataset *d;
			pthread_t th[8];
			ds_mt args[8];
			char side[512];
			size_t wlen;
			uint8_t *want;
			int t, rc;

			snprintf(side, sizeof(side), "%s/%s", ds_dir, cases[i].side);
			want = slurp(side, &wlen);
			rc = h5_dataset_open(&d, f, cases[i].addr);
			ck_assert_msg(rc == 0, "%s: %s", names[k], h5_err_msg());
			for (t = 0; t < 8; t++) {
				args[t] = (ds_mt){ .d = d, .want = want, .size = wlen, .seed = (unsigned)t + 1 };
				ck_assert_int_eq(pthread_create(&th[t], NULL, ds_mt_reader, &args[t]), 0);
			}
			for (t = 0; t < 8; t++) {
				pthread_join(th[t], NULL);
				ck_assert_msg(args[t].bad == 0, "%s: %d bad concurrent reads", names[k], args[t].bad);
			}
			h5_dataset_close(d);
			free(want);
		}
	}
	h5_file_close(f);
	free(cases);
}
END_TEST

/* h5_dataset_fill keeps the element phase for any window. */
START_TEST(test_ds_fill_phase)
{
	static const uint32_t sizes[] = { 1, 2, 3, 4, 7, 8, 13 };
	size_t si;

	for (si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		h5_dtype t;
		h5_dataset d;
		uint8_t elem[16], buf[300];
		uint64_t off;
		size_t len, i;

		memset(&t, 0, sizeof(t));
		memset(&d, 0, sizeof(d));
		t.size = sizes[si];
		for (i = 0; i < t.size; i++)
			elem[i] = (uint8_t)(0x10 + i);
		d.dtype = &t;
		d.fill_elem = elem;
		for (off = 0; off < 40; off++) {
			for (len = 0; len < 120; len += (len < 20 ? 1 : 7)) {
				memset(buf, 0xEE, sizeof(buf));
				h5_dataset_fill(&d, buf, off + 1000003ULL * t.size, len);
				/* compared in C, asserted once per window: each Check
				 * assertion is a message to the runner (too slow for
				 * every byte under TSan) */
				for (i = 0; i < len && buf[i] == elem[(off + i) % t.size]; i++)
					;
				ck_assert_msg(i == len, "size %u off %llu len %zu: byte %zu", (unsigned)t.size,
					      (unsigned long long)off, len, i);
				ck_assert_uint_eq(buf[len], 0xEE);
			}
		}
		/* all-zero fill */
		memset(elem, 0, sizeof(elem));
		memset(buf, 0xEE, sizeof(buf));
		h5_dataset_fill(&d, buf, 5, 100);
		for (i = 0; i < 100 && buf[i] == 0; i++)
			;
		ck_assert_uint_eq(i, 100);
		ck_assert_uint_eq(buf[100], 0xEE);
	}
}
END_TEST

static Suite *dataset_suite(void)
{
	Suite *s = suite_create("dataset");
	TCase *unit = tcase_create("unit");
	TCase *e2e = tcase_create("h5py");

	tcase_add_test(unit, test_ds_fill_phase);
	suite_add_tcase(s, unit);

	tcase_set_timeout(e2e, 120);
	tcase_add_unchecked_fixture(e2e, ds_setup, ds_teardown);
	tcase_add_test(e2e, test_ds_earliest);
	tcase_add_test(e2e, test_ds_latest);
	tcase_add_test(e2e, test_ds_corrupt_layout);
	tcase_add_test(e2e, test_ds_not_dataset);
	tcase_add_test(e2e, test_ds_efl_fifo);
	tcase_add_test(e2e, test_ds_chunked);
	tcase_add_test(e2e, test_ds_concurrent_reads);
	suite_add_tcase(s, e2e);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cache_suite());

	srunner_add_suite(sr, dataset_suite());
	return test_run(sr, CK_FORK_GETENV, NULL);
}
