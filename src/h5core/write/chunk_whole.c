/*
 * chunk_whole.c - chunks an overwrite writes whole, filtered straight from
 * the request (ow_int.h h5_ow_chunks; doc/OVERWRITE.md; issue 55 item
 * 2). Kept bytes were copied into the handle's buffer, merged into new
 * buffers at the commit, copied again into fresh chunk images (each first
 * filled, then written over) and only then encoded: three copies, a
 * memset and the page faults of fresh memory per byte, the codec a few
 * percent of the time. A chunk every byte of which a put writes is
 * instead copied once into a reused buffer (h5_buf_alloc), encoded - the
 * chunks of one put on the worker pool - and written to space taken for
 * it (h5_space_take: written whole before anything references it), its
 * buffers going back to the pool; unfiltered, written from the request
 * itself. The commit (chunk_rewrite.c) then only sets their records, in
 * the same ordered commit as before: nothing reachable changes until its
 * switch, so a crash before it leaves the old state (the taken space is
 * then unreferenced, as a commit's staged chunks always were).
 *
 * A chunk begun by the kept bytes just before the put (a writer whose
 * writes do not fall on chunk edges: 64 KiB writes, Python's 1,000,000
 * bytes) is completed from them: its bytes are merged once, when the put
 * that ends it comes, and the kept extent gives them up.
 *
 * A punched hole (fallocate PUNCH_HOLE, issue 65) notes its whole chunks
 * here with the undefined address where the index can drop them: the
 * same commit clears or removes their records and frees their old
 * copies. A shrink (truncate(2) to fewer rows) drops the chunks past the
 * new end the same way, and the commit sets dims[0].
 */
#include "ow_int.h"
#include "space.h"
#include "pool.h"
#include "filter.h"
#include "cidx_write.h"
#include "chunk_store.h"
#include "chunk.h"
#include "h5util.h"

#include <pthread.h>
#include <stdio.h>

/* A chunk a put takes whole: bytes a[0..alen) then b[0..blen). */
typedef struct item {
	uint64_t s;
	const uint8_t *a, *b;
	size_t alen, blen;
	uint8_t *enc;           /* encoded (h5_buf_alloc), or NULL: written from a */
	size_t enclen;
	uint32_t mask;
} item;

typedef struct ework {
	h5_overwriter *w;
	item *it;
} ework;

void h5_ow_whole_init(h5_overwriter *w, const h5_dataset *d)
{
	unsigned rank = d->space.rank;
	const h5_cidx_write_ops *wops = h5_cidx_write_ops_of(d->layout.idx_type);

	if (d->layout.cls != H5_LAYOUT_CHUNKED || rank == 0 || !d->chunk_bytes || !wops)
		return;
	/* a chunk's bytes are one run of the stream, and stay one */
	for (unsigned i = 1; i < rank; i++)
		if (d->layout.chunk[i] != d->space.dims[i] || d->space.maxdims[i] != d->space.dims[i])
			return;
	/* an unfiltered chunk the index places itself (implicit, single
	 * chunk) is written where it lies at the commit: kept */
	if (!d->pline.n && wops->place)
		return;
	w->wc.ok = true;
	w->wc.filtered = d->pline.n != 0;
	if (w->wc.filtered && !w->wc.async && pthread_mutex_init(&w->wc.amu, NULL) == 0) {
		if (pthread_cond_init(&w->wc.acv, NULL) == 0)
			w->wc.async = true;
		else
			pthread_mutex_destroy(&w->wc.amu);
	}
}

void h5_ow_whole_release(h5_overwriter *w)
{
	h5_dataset_close(w->wc.d);
	w->wc.d = NULL;
}

/* Whether a kept extent other than ext[skip] overlaps [lo, hi). */
static bool kept_over(const h5_overwriter *w, uint64_t lo, uint64_t hi, size_t skip)
{
	for (size_t i = 0; i < w->n; i++)
		if (i != skip && w->ext[i].off < hi && w->ext[i].off + w->ext[i].len > lo)
			return true;
	return false;
}

/* x's bytes gathered into a reused buffer (x->enc), on the put's thread:
 * the request's bytes are ours only until the put returns. */
static int gather(h5_overwriter *w, item *x)
{
	size_t cb = (size_t)w->chunk_bytes;

	x->enc = h5_buf_alloc(cb);
	if (!x->enc)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for a %zu-byte chunk", cb);
	if (x->alen)    /* (a: NULL when the chunk has no kept part) */
		memcpy(x->enc, x->a, x->alen);
	if (x->blen)
		memcpy(x->enc + x->alen, x->b, x->blen);
	x->enclen = cb;
	x->mask = 0;
	return 0;
}

/* h5_pool_each's item i: gathered and filtered (any thread). */
static int encode_one(void *ctx, size_t i)
{
	ework *e = ctx;
	item *x = &e->it[i];
	int rc;

	if (!e->w->wc.filtered && !x->blen)
		return 0;       /* written from the request */
	rc = x->enc ? 0 : gather(e->w, x);
	if (rc == 0 && e->w->wc.filtered)
		rc = h5_filter_encode(&x->enc, &x->enclen, &x->mask, &e->w->wc.d->pline);
	return rc;
}

/* Record x as the chunk store made it (rec), replacing an earlier copy
 * of its chunk, which *old gets (to be freed by the caller: referenced by
 * nothing); w->wc.amu held (and not FILE's write lock: the lock order is
 * the write lock, the pool's, amu). */
static int note(h5_overwriter *w, const item *x, h5_chunk_rec rec, h5_chunk_rec *old)
{
	h5_ow_chunks *c = &w->wc;

	old->addr = H5_ADDR_UNDEF;
	if (c->n && x->s <= c->maxs)
		for (size_t i = 0; i < c->n; i++)
			if (c->v[i].s == x->s) {
				*old = c->v[i].rec;
				c->v[i].rec = rec;
				return 0;
			}
	if (c->n == c->cap) {
		size_t nc = c->cap ? c->cap * 2 : 64;
		h5_ow_whole *nv = realloc(c->v, nc * sizeof(*nv));

		if (!nv)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		c->v = nv;
		c->cap = nc;
	}
	c->v[c->n++] = (h5_ow_whole){ .s = x->s, .rec = rec };
	if (c->n == 1 || x->s > c->maxs)
		c->maxs = x->s;
	return 0;
}

/* x (encoded, or written from the request) to new space, noted; its
 * buffer back to the pool. */
static int store(h5_overwriter *w, item *x, int rc)
{
	h5_file *f = w->f;
	h5_cstore s = { .f = f, .cb = w->chunk_bytes, .filtered = w->wc.filtered };
	h5_cstore_item it = { .img = x->enc ? x->enc : x->a, .len = x->enc ? x->enclen : x->alen, .mask = x->mask };
	h5_chunk_rec old = { H5_ADDR_UNDEF, 0, 0 };

	/* through the chunk store (under the write lock, as a commit's
	 * chunks: FILE has one writer at a time, file.c); recorded in the
	 * index by the commit (h5_ow_chunked_commit's set_whole) */
	if (rc == 0)
		rc = h5_cstore_put(NULL, &s, &it, 1);
	if (rc == 0) {
		pthread_mutex_lock(&w->wc.amu);
		rc = note(w, x, it.rec, &old);
		pthread_mutex_unlock(&w->wc.amu);
	}
	if (h5_addr_defined(old.addr)) {
		pthread_mutex_lock(&f->write_lock);
		h5_space_free(f, old.addr, old.size ? old.size : w->chunk_bytes, 0);
		pthread_mutex_unlock(&f->write_lock);
	}
	h5_buf_free(x->enc);
	x->enc = NULL;
	return rc;
}

typedef struct ajob {
	h5_overwriter *w;
	item x;
} ajob;

/* A pool worker's job: one chunk gathered by its put, filtered, stored. */
static void run_job(void *owner, const uint64_t *arg)
{
	ajob *j = (ajob *)(uintptr_t)arg[0];
	h5_ow_chunks *c = &j->w->wc;
	ework e = { j->w, &j->x };
	int rc = store(j->w, &j->x, encode_one(&e, 0));

	(void)owner;
	pthread_mutex_lock(&c->amu);
	if (rc < 0 && !c->aerr) {
		snprintf(c->amsg, sizeof(c->amsg), "%s", h5_err_msg());
		__atomic_store_n(&c->aerr, rc, __ATOMIC_RELAXED);
	}
	if (rc < 0)
		h5_err_clear();
	c->inflight--;
	pthread_cond_broadcast(&c->acv);
	pthread_mutex_unlock(&c->amu);
	free(j);
}

int h5_ow_whole_wait(h5_overwriter *w)
{
	h5_ow_chunks *c = &w->wc;
	char msg[sizeof(c->amsg)];
	int rc;

	if (!c->async)
		return 0;
	pthread_mutex_lock(&c->amu);
	while (c->inflight)
		pthread_cond_wait(&c->acv, &c->amu);
	rc = __atomic_load_n(&c->aerr, __ATOMIC_RELAXED);
	if (rc < 0)
		memcpy(msg, c->amsg, sizeof(msg));
	__atomic_store_n(&c->aerr, 0, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&c->amu);
	/* nothing queued: only the pool's own count of the last job */
	h5_pool_forget(w->f->pool, w, &c->pactive);
	return rc < 0 ? h5_err_set(rc, "%s", msg) : 0;
}

/* One filtered chunk: to a pool worker while fewer than two chunks a
 * worker of ours are queued or in work, else filtered here (both cores,
 * the put answered early: behind/write.c). Two a worker, not one: the
 * puts then keep the FUSE transport going while the workers encode, and a
 * put filters a chunk itself only when the workers fall behind (issue 70:
 * a 1 GiB blosc rewrite 0.83-0.97 s against 0.88-1.02 s with one; the
 * memory held is two chunk buffers a worker). Jobs of one chunk never
 * overlap: take() waits for them all before a put goes back to a chunk
 * given out. False when it was not queued. */
static bool queue_one(h5_overwriter *w, item *x)
{
	h5_ow_chunks *c = &w->wc;
	h5_pool *p = w->f->pool;
	h5_pool_job job = { .fn = run_job, .owner = w, .active = &c->pactive };
	ajob *j;
	bool busy;

	if (!c->async || !p || !h5_pool_workers(p))
		return false;
	pthread_mutex_lock(&c->amu);
	busy = c->inflight >= 2 * h5_pool_workers(p);
	pthread_mutex_unlock(&c->amu);
	if (busy || !(j = malloc(sizeof(*j))))
		return false;
	if (gather(w, x) < 0) {
		h5_err_clear();
		free(j);
		return false;
	}
	j->w = w;
	j->x = *x;
	x->enc = NULL;
	job.arg[0] = (uint64_t)(uintptr_t)j;
	/* (counted before the pool's lock: amu is never taken under it) */
	pthread_mutex_lock(&c->amu);
	c->inflight++;
	pthread_mutex_unlock(&c->amu);
	h5_pool_lock(p);
	if (!h5_pool_room(p)) {
		h5_pool_unlock(p);
		pthread_mutex_lock(&c->amu);
		c->inflight--;
		pthread_cond_broadcast(&c->acv);
		pthread_mutex_unlock(&c->amu);
		x->enc = j->x.enc;      /* filtered here after all */
		free(j);
		return false;
	}
	h5_pool_queue(p, &job);
	h5_pool_unlock(p);
	return true;
}

/* The items encoded (on the pool's threads), written to new space, noted. */
static int take(h5_overwriter *w, item *it, size_t ni)
{
	h5_file *f = w->f;
	h5_ow_chunks *c = &w->wc;
	ework e = { w, it };
	unsigned want = f->nthreads ? f->nthreads : 1;
	bool again = false;
	int rc = 0;

	/* a chunk already given to an encoder: that one first */
	for (size_t i = 0; i < ni; i++)
		again |= c->bytes && it[i].s <= c->imax;
	if (again)
		rc = h5_ow_whole_wait(w);
	for (size_t i = 0; i < ni; i++)
		if (!c->bytes && i == 0)
			c->imax = it[i].s;
		else if (it[i].s > c->imax)
			c->imax = it[i].s;
	if (rc == 0 && ni == 1 && c->filtered && queue_one(w, &it[0])) {
		c->bytes += w->chunk_bytes;
		return 0;
	}
	if (rc == 0)
		rc = h5_pool_each(f->pool, encode_one, &e, ni, ni < 2 ? 0 : want - 1);
	for (size_t i = 0; i < ni; i++) {
		rc = store(w, &it[i], rc);
		if (rc == 0)
			c->bytes += w->chunk_bytes;
	}
	return rc;
}

int h5_ow_put_chunked(h5_overwriter *w, uint64_t off, const uint8_t *p, size_t len)
{
	uint64_t cb = w->chunk_bytes, end = off + len, nfull, at = off, s, js;
	h5_ow_ext *x = w->n ? &w->ext[w->n - 1] : NULL;
	item *it = NULL;
	size_t ni = 0, trim = 0;
	int rc = 0;

	/* (an error of a chunk filtered on the pool: this write's answer) */
	if (w->wc.async && __atomic_load_n(&w->wc.aerr, __ATOMIC_RELAXED) && (rc = h5_ow_whole_wait(w)) < 0)
		return rc;
	/* (no chunk ends inside the put: kept) */
	if (!w->wc.ok || end / cb == off / cb)
		return h5_ow_keep(w, off, p, len);
	/* the pipeline, opened when first needed and let go by the commit
	 * (a handle holds no dataset while it keeps nothing whole) */
	if (!w->wc.d && h5_dataset_open(&w->wc.d, w->f, w->addr) < 0) {
		h5_err_clear();
		w->wc.d = NULL;
		return h5_ow_keep(w, off, p, len);
	}
	nfull = w->nbytes / cb;         /* full chunks (appends only add more) */
	it = malloc((len / cb + 2) * sizeof(*it));
	if (!it)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	/* a chunk the kept bytes right before began, ended here */
	js = off - off % cb;
	if (off % cb && x && x->off + x->len == off && x->off <= js && js + cb <= end && js / cb < nfull &&
	    !kept_over(w, js, js + cb, w->n - 1)) {
		trim = (size_t)(off - js);
		it[ni++] = (item){ .s = js / cb, .a = x->p + (js - x->off), .alen = trim, .b = p,
				   .blen = (size_t)(cb - trim) };
		at = js + cb;
	}
	for (s = (at + cb - 1) / cb; (s + 1) * cb <= end && s < nfull; s++)
		if (!kept_over(w, s * cb, (s + 1) * cb, SIZE_MAX))
			it[ni++] = (item){ .s = s, .a = p + (s * cb - off), .alen = (size_t)cb };
	if (ni == 0) {
		free(it);
		return h5_ow_keep(w, off, p, len);
	}
	rc = take(w, it, ni);
	/* the kept bytes the joined chunk took */
	if (rc == 0 && trim) {
		x->len -= trim;
		__atomic_store_n(&w->buffered, w->buffered - trim, __ATOMIC_RELAXED);
		if (!x->len) {
			free(x->p);
			w->n--;
		}
	}
	/* the rest is kept: between the chunks taken, in stream order */
	for (size_t i = 0; i < ni && rc == 0; i++) {
		uint64_t lo = it[i].s * cb;

		if (lo > at)
			rc = h5_ow_keep(w, at, p + (at - off), (size_t)(lo - at));
		at = lo + cb > at ? lo + cb : at;
	}
	if (rc == 0 && at < end)
		rc = h5_ow_keep(w, at, p + (at - off), (size_t)(end - at));
	free(it);
	return rc;
}

int h5_ow_whole_peek(const h5_overwriter *w, uint64_t off, uint8_t *buf, size_t len)
{
	const h5_ow_chunks *c = &w->wc;
	uint64_t cb = w->chunk_bytes;
	int any = 0;

	for (size_t i = 0; i < c->n; i++) {
		uint64_t lo = c->v[i].s * cb, hi = lo + cb, a = lo > off ? lo : off, b = hi < off + len ? hi : off + len;
		uint8_t *img;
		size_t n;
		int rc;

		if (a >= b)
			continue;
		any = 1;
		if (!buf)
			return 1;
		if (!h5_addr_defined(c->v[i].rec.addr)) {      /* punched (zero fill) */
			memset(buf + (a - off), 0, (size_t)(b - a));
			continue;
		}
		if (!c->filtered) {
			rc = h5_file_read(w->f, c->v[i].rec.addr + (a - lo), buf + (a - off), (size_t)(b - a));
			if (rc < 0)
				return rc;
			continue;
		}
		n = (size_t)c->v[i].rec.size;
		img = h5_buf_alloc(n ? n : 1);
		if (!img)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		rc = h5_file_read(w->f, c->v[i].rec.addr, img, n);
		if (rc == 0)
			rc = h5_filter_decode(&img, &n, &c->d->pline, c->v[i].rec.filter_mask, (size_t)cb);
		if (rc == 0)
			memcpy(buf + (a - off), img + (a - lo), (size_t)(b - a));
		h5_buf_free(img);
		if (rc < 0)
			return rc;
	}
	return any;
}

void h5_ow_whole_drop(h5_overwriter *w)
{
	h5_ow_chunks *c = &w->wc;

	if (c->n) {
		pthread_mutex_lock(&w->f->write_lock);
		for (size_t i = 0; i < c->n; i++)
			if (h5_addr_defined(c->v[i].rec.addr))
				h5_space_free(w->f, c->v[i].rec.addr,
					      c->v[i].rec.size ? c->v[i].rec.size : w->chunk_bytes, 0);
		pthread_mutex_unlock(&w->f->write_lock);
	}
	c->n = 0;
	c->bytes = 0;
}

/* ---- punched ranges (fallocate PUNCH_HOLE, issue 65) ------------------------------ */

/* Whether d's chunks can be dropped (with a fill value of zeros): the
 * index takes the undefined address for a chunk not stored (fixed
 * and extensible arrays, spec III.H and III.I: "If the chunk is not
 * allocated, the address is the undefined address") or removes its
 * record (v1 B-tree: h5_bt1w_remove, which stores zeros where it would
 * empty a leaf). The v2 B-tree's writer removes nothing: zeros are
 * written there. */
static bool droppable(const h5_dataset *d)
{
	return d->layout.idx_type == H5_CIDX_FARRAY || d->layout.idx_type == H5_CIDX_EARRAY ||
	       d->layout.idx_type == H5_CIDX_BTREE1;
}

/* Chunk s noted with the undefined address: at the commit its record is
 * set so and its stored copy freed (chunk_rewrite.c note_gone); a copy
 * this writer took earlier is freed now (referenced by nothing). */
static int drop_one(h5_overwriter *w, uint64_t s)
{
	item x = { .s = s };
	h5_chunk_rec old = { H5_ADDR_UNDEF, 0, 0 };
	int rc;

	pthread_mutex_lock(&w->wc.amu);
	rc = note(w, &x, (h5_chunk_rec){ H5_ADDR_UNDEF, 0, 0 }, &old);
	pthread_mutex_unlock(&w->wc.amu);
	if (h5_addr_defined(old.addr)) {
		pthread_mutex_lock(&w->f->write_lock);
		h5_space_free(w->f, old.addr, old.size ? old.size : w->chunk_bytes, 0);
		pthread_mutex_unlock(&w->f->write_lock);
	}
	return rc;
}

/* Whether chunk s is stored (in FILE, or taken by this writer). */
static int stored(const h5_overwriter *w, uint64_t s)
{
	uint64_t scaled[H5_MAX_RANK] = { s };
	h5_chunk_rec rec;
	int rc;

	/* (past the highest chunk noted: none of them, without a look at
	 * each - a shrink or punch notes its chunks in rising order, and a
	 * scan per chunk made 200,000 dropped chunks quadratic) */
	if (w->wc.n && s <= w->wc.maxs)
		for (size_t i = 0; i < w->wc.n; i++)
			if (w->wc.v[i].s == s)
				return h5_addr_defined(w->wc.v[i].rec.addr);
	rc = h5_chunk_lookup(&rec, w->wc.d->cidx, scaled);
	return rc < 0 ? rc : h5_addr_defined(rec.addr);
}

#define PUNCH_KEPT_MAX ((uint64_t)64 << 20)

int h5_ow_punch_chunked(h5_overwriter *w, uint64_t off, uint64_t len)
{
	uint64_t cb = w->chunk_bytes, end = off + len, nfull = w->nbytes / cb, s;
	bool drop, zfill;
	int rc = 0;

	/* chunks that are not runs of the stream: zeros kept, up to what a
	 * handle keeps before its periodic commit (one commit here: a second
	 * would free the first's chunks before the daemon's readers move on) */
	if (!w->wc.ok && len > PUNCH_KEPT_MAX)
		return h5_err_set(H5_ERR_UNSUPPORTED, "punching %llu bytes of chunks that are not runs of whole rows "
				  "(at most %llu)", (unsigned long long)len, (unsigned long long)PUNCH_KEPT_MAX);
	if (!w->wc.ok)
		return h5_ow_put_zeros(w, off, len, h5_ow_keep);
	if (!w->wc.d && h5_dataset_open(&w->wc.d, w->f, w->addr) < 0)
		return h5_err_wrap(H5_ERR_IO, "punching a hole: ");
	zfill = h5_ow_fill_is_zero(w->wc.d);
	drop = zfill && droppable(w->wc.d);
	/* the chunks filtered on the pool noted first */
	rc = h5_ow_whole_wait(w);
	for (s = off / cb; rc == 0 && s * cb < end; s++) {
		uint64_t lo = s * cb > off ? s * cb : off, hi = (s + 1) * cb < end ? (s + 1) * cb : end;
		bool whole = lo == s * cb && hi == (s + 1) * cb && s < nfull && !kept_over(w, lo, hi, SIZE_MAX);
		int st = whole && zfill ? stored(w, s) : 1;

		if (st < 0)
			rc = st;
		else if (!st)
			continue;               /* reads as zeros already */
		else if (whole && drop)
			rc = drop_one(w, s);
		else
			rc = h5_ow_put_zeros(w, lo, hi - lo, h5_ow_put_chunked);
	}
	return rc;
}

/* [off, off + len), element-aligned, given d's fill value through
 * h5_ow_put_chunked (a buffer of whole elements, repeated). */
static int put_fill(h5_overwriter *w, const h5_dataset *d, uint64_t off, uint64_t len)
{
	size_t es = (size_t)w->esize, n = es >= 65536 ? es : 65536 / es * es;
	uint8_t *buf;
	int rc = 0;

	if (h5_ow_fill_is_zero(d))
		return h5_ow_put_zeros(w, off, len, h5_ow_put_chunked);
	buf = malloc(n);
	if (!buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (size_t b = 0; b < n; b += es)
		memcpy(buf + b, d->fill_elem, es);
	for (uint64_t a = off; rc == 0 && a < off + len; a += n)
		rc = h5_ow_put_chunked(w, a, buf, (size_t)(off + len - a < n ? off + len - a : n));
	free(buf);
	return rc;
}

/* A shrink (truncate(2) to fewer rows, as libhdf5's H5D__set_extent with
 * H5D__chunk_prune_by_extent): the chunks wholly past the new end leave
 * the index where it can drop them - whatever the fill value, a chunk
 * not stored reads it -, the rest of them stored get the fill value, and
 * so does the boundary chunk's part past the new end: a later growth
 * reads the fill value there, as h5py's does. Chunks not stored are left
 * alone. */
int h5_ow_shrink_chunked(h5_overwriter *w, uint64_t size)
{
	uint64_t cb = w->chunk_bytes, nb = w->nbytes, s = size / cb;
	bool drop;
	int rc = 0;

	if (!w->wc.ok)
		return h5_err_set(H5_ERR_UNSUPPORTED, "shrinking a dataset whose chunks are not runs of whole rows");
	if (!w->wc.d && h5_dataset_open(&w->wc.d, w->f, w->addr) < 0)
		return h5_err_wrap(H5_ERR_IO, "shrinking the dataset: ");
	if (!w->wc.d->space.dims[0] || size % (w->wc.d->nbytes / w->wc.d->space.dims[0]))
		return h5_err_set(H5_ERR_INVAL, "shrinking to %llu bytes: not whole rows", (unsigned long long)size);
	drop = droppable(w->wc.d);
	rc = h5_ow_whole_wait(w);
	/* the boundary chunk: its bytes past the new end */
	if (rc == 0 && size % cb) {
		int st = stored(w, s);

		rc = st < 0 ? st : st ? put_fill(w, w->wc.d, size, ((s + 1) * cb < nb ? (s + 1) * cb : nb) - size) : 0;
		s++;
	}
	for (; rc == 0 && s * cb < nb; s++) {
		int st = stored(w, s);

		if (st < 0)
			rc = st;
		else if (st && drop)
			rc = drop_one(w, s);
		else if (st)
			rc = put_fill(w, w->wc.d, s * cb, ((s + 1) * cb < nb ? (s + 1) * cb : nb) - s * cb);
	}
	if (rc == 0)
		w->resize = size;
	return rc;
}
