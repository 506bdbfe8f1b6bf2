/*
 * chunk_rewrite.c - overwriting bytes of a chunked dataset (ow_int.h,
 * doc/OVERWRITE.md): every chunk the written extents touch is read
 * (decoded through the filter pipeline; the fill value where the chunk
 * was never allocated), changed in memory, encoded again and written as a
 * new chunk at the allocation end (space.c) - or, unfiltered, where the
 * index places it itself (implicit, single chunk) - and its record set on
 * the index writer (cidx.h's write ops, the appends' writers). Then one
 * ordered commit (txn.c): the new index blocks, fsync, the superblock's
 * end of allocated space, fsync, the one in-place switch, fsync. Until the
 * switch nothing reachable changed; after it every chunk reads its new
 * bytes. Replaced chunks (and index blocks the index writer copied) are
 * handed to the caller once the commit succeeded, to be freed when its
 * readers see the new index (overwrite.c; space.h: reused by later commits
 * after the commit's fsync, as libhdf5's H5D__chunk_file_alloc frees a
 * chunk whose new size no longer fits); new chunks take freed space
 * (h5_space_take: each is written whole).
 */
#include "ow_int.h"
#include "txn.h"
#include "ohdr_edit.h"
#include "link_store.h"
#include "attr_write_int.h"
#include "space.h"
#include "pool.h"
#include "base.h"
#include "file.h"
#include "filter.h"
#include "chunk_rec.h"
#include "chunk_int.h"
#include "chunk.h"
#include "cidx.h"
#include "cidx_write.h"
#include "dataset.h"
#include "dspace.h"
#include "keytab.h"
#include "file_ws.h"
#include "gslot.h"
#include "chunk_store.h"
#include "dset_commit.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

/* Decoded chunk images held before they are encoded and staged. */
#define DIRTY_MAX ((uint64_t)64 << 20)
/* Below this many bytes of chunks, threads cost more than they save. */
#define THREAD_MIN_BYTES ((uint64_t)256 << 10)

/* A chunk touched by this commit: its image while dirty; once staged, the
 * record of its new copy (a later extent touching it again reads that). */
typedef struct cent {
	uint64_t key;           /* row-major index over the current chunk grid, +1 (0: empty slot) */
	uint64_t scaled[H5_MAX_RANK];
	uint8_t *img;           /* dirty image (chunk_bytes), NULL when not loaded */
	uint64_t cover;         /* bytes of it the (disjoint) extents write */
	bool staged;
	h5_chunk_rec rec;       /* staged: the new copy */
	/* encoding (worker threads) */
	uint8_t *enc;
	size_t enclen;
	uint32_t mask;
} cent;

typedef struct rw {
	h5_dataset *d;
	h5_chunk_index *ci;
	h5_file *f;
	unsigned rank;
	uint64_t esize, cb;             /* element and chunk bytes */
	uint64_t cstride[H5_MAX_RANK];  /* elements, within a chunk */
	uint64_t nch[H5_MAX_RANK];      /* chunks per dimension (current dims) */
	h5_keytab tab;                  /* of cent */
	uint64_t dirty;                 /* bytes of loaded images */
	const h5_cidx_write_ops *wops;
	void *w;
	bool lent;                      /* w is an append stream's (h5_ow_join): not freed here */
	h5_chunk_rec *gone;             /* chunks the commit leaves unreferenced */
	size_t ngone, capgone;
	struct {                        /* the new chunk at the highest address */
		uint64_t addr, size;
		uint64_t scaled[H5_MAX_RANK];
	} top;
} rw;

int h5_ow_chunked_check(const h5_dataset *d)
{
	const h5_cidx_write_ops *wops = h5_cidx_write_ops_of(d->layout.idx_type);

	if (!wops)
		return h5_err_set(H5_ERR_UNSUPPORTED, "chunk index %s has no writer",
				  h5_layout_index_name(d->layout.idx_type));
	for (size_t i = 0; i < d->pline.n; i++) {
		uint16_t id = d->pline.filters[i].id;

		if (h5_filter_encode_check(&d->pline.filters[i]) < 0)
			return h5_err_wrap(H5_ERR_UNSUPPORTED, "filter %s (%u): its chunks cannot be rewritten: ",
					   h5_filter_name(id), id);
	}
	/* whether an edge chunk is filtered then depends on the layout
	 * flag; the writers record every chunk as filtered */
	if (d->pline.n && (d->layout.flags & H5_LAYOUT_FLAG_NO_FILTER_EDGE))
		return h5_err_set(H5_ERR_UNSUPPORTED, "partial edge chunks are stored unfiltered: cannot rewrite chunks");
	if (d->space.rank == 0 || d->space.rank > H5_MAX_RANK || !d->cidx || d->chunk_bytes == 0 ||
	    d->chunk_bytes > SIZE_MAX / 4)
		return h5_err_set(H5_ERR_UNSUPPORTED, "chunked dataset of this shape cannot be rewritten");
	return 0;
}

/* ---- the table of touched chunks (base/keytab.c) ----------------------------- */

/* The entry of the chunk at scaled, made when missing. */
static int tab_get(cent **out, rw *r, const uint64_t *scaled)
{
	uint64_t key = 0;
	void *e;
	int rc;

	for (unsigned i = 0; i < r->rank; i++)
		key = key * r->nch[i] + scaled[i];
	rc = h5_keytab_get(&e, &r->tab, key + 1);
	if (rc < 0)
		return rc;
	*out = e;
	if (rc == 1)
		memcpy((*out)->scaled, scaled, r->rank * sizeof(*scaled));
	return 0;
}

/* Bytes of the chunk at scaled inside the dataset (an edge chunk's others
 * are never read). */
static uint64_t valid_bytes(const rw *r, const uint64_t *scaled)
{
	uint64_t v = r->esize;

	for (unsigned i = 0; i < r->rank; i++) {
		uint64_t c = r->d->layout.chunk[i], left = r->d->space.dims[i] - scaled[i] * c;

		v *= left < c ? left : c;
	}
	return v;
}

/* The chunk as it reads now: its staged copy, its record in the index, or
 * fill. */
static int load(rw *r, cent *e)
{
	h5_chunk_rec rec;
	int rc = 0;

	e->img = malloc((size_t)r->cb);
	if (!e->img)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for a %llu-byte chunk", (unsigned long long)r->cb);
	if (e->staged)
		rec = e->rec;
	else if (e->cover >= valid_bytes(r, e->scaled))
		rec.addr = H5_ADDR_UNDEF;       /* every byte is new: nothing to decode */
	else
		rc = h5_chunk_lookup(&rec, r->ci, e->scaled);
	if (rc == 0 && !h5_addr_defined(rec.addr)) {
		h5_dataset_fill(r->d, e->img, 0, (size_t)r->cb);
	} else if (rc == 0 && r->ci->filtered) {
		h5_cache_ref ref;
		const uint8_t *data;

		rc = h5_chunk_get(&ref, &data, r->ci, &rec);
		if (rc == 0) {
			memcpy(e->img, data, (size_t)r->cb);
			h5_cache_release(r->f->chunks, &ref);
		}
	} else if (rc == 0) {
		rc = h5_file_read(r->f, rec.addr, e->img, (size_t)r->cb);
	}
	if (rc < 0) {
		free(e->img);
		e->img = NULL;
		return h5_err_wrap(rc, "chunk (%llu, ...): ", (unsigned long long)e->scaled[0]);
	}
	r->dirty += r->cb;
	return 0;
}

/* ---- staging: encode, write to new space, set the record ------------------- */

typedef struct ework {
	rw *r;
	cent **ents;
} ework;

/* h5_pool_each's item i: entry i's image filtered (any thread). */
static int encode_one(void *ctx, size_t i)
{
	ework *w = ctx;
	cent *e = w->ents[i];

	e->enc = e->img;
	e->img = NULL;
	e->enclen = (size_t)w->r->cb;
	e->mask = 0;
	return h5_filter_encode(&e->enc, &e->enclen, &e->mask, &w->r->d->pline);
}

static int writer_open(rw *r)
{
	if (r->w)
		return 0;
	r->wops = h5_cidx_write_ops_of(r->d->layout.idx_type);
	return r->wops->open(&r->w, r->f, r->d, r->d->layout.idx_addr);
}

/* The copy the chunk had before rec (in the file, or staged earlier in
 * this commit) is unreferenced once the commit is done, unless rec is
 * written over it in place (implicit, single chunk). */
static int note_gone(rw *r, const cent *e, const h5_chunk_rec *rec)
{
	h5_chunk_rec old;
	int rc = 0;

	if (e->staged)
		old = e->rec;
	else
		rc = h5_chunk_lookup(&old, r->ci, e->scaled);
	if (rc < 0 || !h5_addr_defined(old.addr) || old.addr == rec->addr)
		return rc;
	if (!old.size)
		old.size = r->cb;
	if (r->ngone == r->capgone) {
		size_t ncap = r->capgone ? r->capgone * 2 : 16;
		h5_chunk_rec *ng = realloc(r->gone, ncap * sizeof(*ng));

		if (!ng)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		r->gone = ng;
		r->capgone = ncap;
	}
	r->gone[r->ngone++] = old;
	return 0;
}

/* rec, set on the index writer for e, noted: the copy it replaces
 * (note_gone), the new copy e's, and the highest new chunk (note_top). */
static int recorded(rw *r, cent *e, const h5_chunk_rec *rec)
{
	int rc = note_gone(r, e, rec);

	if (rc == 0) {
		e->rec = *rec;
		e->staged = true;
		/* (a punched chunk, the undefined address, is nowhere) */
		if (h5_addr_defined(rec->addr) && (rec->addr >= r->top.addr || !h5_addr_defined(r->top.addr))) {
			r->top.addr = rec->addr;
			r->top.size = rec->size ? rec->size : r->cb;
			memcpy(r->top.scaled, e->scaled, r->rank * sizeof(*e->scaled));
		}
	}
	return rc;
}

/* A record made elsewhere (a whole chunk stored at its put, a punched
 * chunk's undefined address, the unmount's moved chunk) set on the index
 * writer and noted: 0, a negative h5_err, or 1: a punched chunk's record
 * the index could not take (v1 B-tree: h5_bt1w_remove), nothing changed. */
static int set_rec(rw *r, cent *e, const h5_chunk_rec *rec)
{
	uint64_t idx = 0;
	int rc = h5_cidx_linear(&idx, r->ci, e->scaled);

	if (rc == 0)
		rc = r->wops->set(r->w, e->scaled, idx, rec);
	return rc == 0 ? recorded(r, e, rec) : rc;
}

/* The images of ents[0, n) (encoded, when filtered; those without one
 * are left out) through the chunk store (chunk_store.h): each where the
 * index places it or in space of its own (freed space first), its record
 * set, then noted. The caller holds FILE's write lock. */
static int stage_items(rw *r, cent **ents, size_t n)
{
	bool filtered = r->ci->filtered;
	h5_cstore_item *it = calloc(n ? n : 1, sizeof(*it));
	cent **who = calloc(n ? n : 1, sizeof(*who));
	h5_cstore s = { .f = r->f, .wops = r->wops, .w = r->w, .cb = r->cb, .filtered = filtered, .locked = true };
	size_t m = 0, done = 0;
	int rc = it && who ? 0 : h5_err_set(H5_ERR_NOMEM, "out of memory");

	for (size_t i = 0; rc == 0 && i < n; i++) {
		cent *e = ents[i];

		if (filtered ? !e->enc : !e->img)
			continue;
		it[m] = (h5_cstore_item){ .img = filtered ? e->enc : e->img, .len = filtered ? e->enclen : (size_t)r->cb,
					  .mask = filtered ? e->mask : 0, .scaled = e->scaled };
		rc = h5_cidx_linear(&it[m].idx, r->ci, e->scaled);
		who[m++] = e;
	}
	if (rc == 0)
		rc = h5_cstore_put(&done, &s, it, m);
	for (size_t i = 0; i < done; i++) {
		int rr = recorded(r, who[i], &it[i].rec);

		if (rc == 0)
			rc = rr;
	}
	free(it);
	free(who);
	return rc;
}

static int by_key(const void *a, const void *b)
{
	uint64_t x = (*(const cent *const *)a)->key, y = (*(const cent *const *)b)->key;

	return x < y ? -1 : x > y;
}

/* Every loaded image goes out now, in row-major order of the chunks (as
 * appends set them; the file's order too). */
static int stage_dirty(rw *r)
{
	cent **ents = NULL;
	size_t n = 0;
	int rc = writer_open(r);

	if (rc < 0)
		return rc;
	ents = malloc((r->tab.n ? r->tab.n : 1) * sizeof(*ents));
	if (!ents)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < r->tab.cap; i++) {
		cent *e = h5_keytab_slot(&r->tab, i);

		if (e && e->img)
			ents[n++] = e;
	}
	qsort(ents, n, sizeof(*ents), by_key);
	if (r->ci->filtered) {
		ework w = { .r = r, .ents = ents };
		unsigned want = r->f->nthreads ? r->f->nthreads : 1;

		if (n < 2 || n * r->cb < THREAD_MIN_BYTES)
			want = 1;
		rc = h5_pool_each(r->f->pool, encode_one, &w, n, want - 1);
	}
	if (rc == 0)
		rc = stage_items(r, ents, n);
	for (size_t i = 0; i < n; i++) {
		free(ents[i]->enc);
		ents[i]->enc = NULL;
		free(ents[i]->img);
		ents[i]->img = NULL;
	}
	r->dirty = 0;
	free(ents);
	return rc;
}

/* ---- applying the extents ---------------------------------------------------- */

/* Bytes [b, b + len) of the dataset stream from p: cut into runs along the
 * last dimension, each within one chunk. count: only count the bytes each
 * chunk gets (the first pass); else copy them into the chunks' images. */
static int apply(rw *r, uint64_t b, const uint8_t *p, size_t len, bool count)
{
	const uint64_t *dims = r->d->space.dims, *chunk = r->d->layout.chunk;
	unsigned k = r->rank;

	while (len) {
		uint64_t e = b / r->esize, inner = b % r->esize, c[H5_MAX_RANK], scaled[H5_MAX_RANK];
		uint64_t in = 0, lim, run;
		cent *ent;
		int rc;

		for (unsigned i = k; i-- > 0;) {
			c[i] = e % dims[i];
			e /= dims[i];
			scaled[i] = c[i] / chunk[i];
			in += (c[i] % chunk[i]) * r->cstride[i];
		}
		lim = (scaled[k - 1] + 1) * chunk[k - 1];
		if (lim > dims[k - 1])
			lim = dims[k - 1];
		run = (lim - c[k - 1]) * r->esize - inner;
		if (run > len)
			run = len;
		rc = tab_get(&ent, r, scaled);
		if (rc == 0 && count) {
			ent->cover += run;
			b += run;
			len -= (size_t)run;
			continue;
		}
		if (rc == 0 && !ent->img) {
			if (r->dirty + r->cb > DIRTY_MAX && r->dirty)
				rc = stage_dirty(r);
			if (rc == 0)
				rc = tab_get(&ent, r, scaled);  /* staging keeps the table; refetch anyway */
			if (rc == 0)
				rc = load(r, ent);
		}
		if (rc < 0)
			return rc;
		memcpy(ent->img + in * r->esize + inner, p, (size_t)run);
		b += run;
		p += run;
		len -= (size_t)run;
	}
	return 0;
}

static void rw_free(rw *r)
{
	for (size_t i = 0; i < r->tab.cap; i++) {
		cent *e = h5_keytab_slot(&r->tab, i);

		if (e) {
			free(e->img);
			free(e->enc);
		}
	}
	h5_keytab_free(&r->tab);
	free(r->gone);
	if (r->w && !r->lent) {
		r->wops->invalidate(r->w);
		r->wops->free(r->w);
	}
}

/* ---- the commit ---------------------------------------------------------------- */

/* The dataset's one ordered commit (dset_commit.c): the index writer's
 * blocks, the switch, then dims[0] (a size change) or the modification
 * time last. */
static int commit(rw *r, bool durable, uint64_t rows, uint64_t *last_end, uint64_t *ticket)
{
	h5_txn t;
	int rc;

	h5_txn_begin(&t, r->f, durable, r->wops, r->w);
	rc = h5_dset_commit(&t, r->d->addr, rows, *last_end);
	if (rc == 0) {
		*last_end = t.end;
		*ticket = t.ticket;
	}
	return rc;
}

static int rw_init(rw *r, h5_dataset *d)
{
	int rc = h5_ow_chunked_check(d);

	*r = (rw){ .d = d, .ci = d->cidx, .f = d->f, .rank = d->space.rank, .tab = H5_KEYTAB(cent) };
	r->top.addr = H5_ADDR_UNDEF;
	if (rc < 0)
		return rc;
	r->esize = d->dtype->size;
	r->cb = d->chunk_bytes;
	r->cstride[r->rank - 1] = 1;
	for (unsigned i = r->rank - 1; i-- > 0;)
		r->cstride[i] = r->cstride[i + 1] * d->layout.chunk[i + 1];
	for (unsigned i = 0; i < r->rank; i++) {
		if (d->layout.chunk[i] == 0)
			return h5_err_set(H5_ERR_FORMAT, "chunk dimension %u is 0", i);
		r->nch[i] = d->space.dims[i] / d->layout.chunk[i] + (d->space.dims[i] % d->layout.chunk[i] != 0);
	}
	return 0;
}

/* The last chunk a commit placed highest, for h5_file_compact. */
static void note_top(const rw *r)
{
	h5_file *f = r->f;

	if (!h5_addr_defined(r->top.addr))
		return;
	h5_ws(f)->last_chunk.dset = r->d->addr;
	h5_ws(f)->last_chunk.addr = r->top.addr;
	h5_ws(f)->last_chunk.size = r->top.size;
	memcpy(h5_ws(f)->last_chunk.scaled, r->top.scaled, r->rank * sizeof(*r->top.scaled));
}

/* The chunks a put took whole (chunk_whole.c), written already: their
 * records set first (every kept extent over them came later). */
static int set_whole(rw *r, const h5_ow_whole *whole, size_t nwhole, uint64_t rows)
{
	uint64_t scaled[H5_MAX_RANK] = { 0 };
	int rc = nwhole ? writer_open(r) : 0;

	for (size_t i = 0; i < nwhole && rc == 0; i++) {
		cent *e;

		/* still a full chunk of the same shape (a truncate since: the
		 * write passes the end) */
		for (unsigned k = 1; k < r->rank; k++)
			if (r->d->layout.chunk[k] != r->d->space.dims[k])
				return h5_err_set(H5_ERR_RANGE, "dataset reshaped under a write");
		scaled[0] = whole[i].s;
		/* (a chunk a shrink dropped may be the old edge chunk) */
		if ((whole[i].s + 1) * r->d->layout.chunk[0] > r->d->space.dims[0] &&
		    (h5_addr_defined(whole[i].rec.addr) || rows == UINT64_MAX ||
		     whole[i].s * r->d->layout.chunk[0] < rows))
			return h5_err_set(H5_ERR_RANGE, "write of chunk %llu passes the end",
					  (unsigned long long)whole[i].s);
		rc = tab_get(&e, r, scaled);
		if (rc == 0)
			rc = set_rec(r, e, &whole[i].rec);
		/* a punched (zero fill) or cut off chunk the index keeps: its
		 * fill value stored instead, staged with the other images */
		if (rc == 1) {
			rc = r->dirty + r->cb > DIRTY_MAX && r->dirty ? stage_dirty(r) : 0;
			if (rc == 0)
				rc = tab_get(&e, r, scaled);
			if (rc == 0 && !e->img) {
				e->img = calloc(1, (size_t)r->cb);
				if (!e->img)
					rc = h5_err_set(H5_ERR_NOMEM, "out of memory for a %llu-byte chunk",
							(unsigned long long)r->cb);
				else
					r->dirty += r->cb;
				for (uint64_t b = 0; e->img && r->d->fill_elem && b + r->esize <= r->cb; b += r->esize)
					memcpy(e->img + b, r->d->fill_elem, (size_t)r->esize);
			}
		}
	}
	return rc;
}

/* Whether bytes [lo, hi) of the dataset's stream meet one of the
 * disjoint ranges m[0, nm), in offset order. */
static bool meets(const h5_ow_ext *m, size_t nm, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = nm;

	while (a < b) {         /* the first range ending past lo */
		size_t c = a + (b - a) / 2;

		if (m[c].off + m[c].len <= lo)
			a = c + 1;
		else
			b = c;
	}
	return a < nm && m[a].off < hi;
}

/* An append stream's rows taken (h5_ow_join): its index writer used, and
 * each chunk it staged that the extents m[0, nm) meet noted as staged
 * already - the extents read it from there, not through the index on
 * disk, which has none of them - and replaced like any chunk this commit
 * writes (note_gone). (Only those: a stream may have staged a million
 * chunks, and an entry of the table is some hundred bytes.) */
static int join_rows(rw *r, const h5_ow_join *j, const h5_ow_ext *m, size_t nm)
{
	uint64_t crow = r->d->layout.chunk[0], rb;
	int rc;

	if (!j->w)
		return 0;
	/* (lent first: rw_free never frees it, whatever fails below) */
	r->w = j->w;
	r->wops = j->wops;
	r->lent = true;
	rc = h5_dataset_row_bytes(&rb, r->d);
	for (size_t i = 0; rc == 0 && i < j->n && nm; i++) {
		uint64_t scaled[H5_MAX_RANK] = { 0 };
		h5_chunk_rec rec;
		cent *e;

		j->chunk(j->ctx, i, scaled, &rec);
		if (scaled[0] >= r->nch[0])
			return h5_err_set(H5_ERR_RANGE, "appended chunk row %llu: past the rows committed",
					  (unsigned long long)scaled[0]);
		/* its chunk row's bytes: rows [s * c0, (s + 1) * c0) */
		if (!meets(m, nm, scaled[0] * crow * rb, (scaled[0] + 1) * crow * rb))
			continue;
		rc = tab_get(&e, r, scaled);
		if (rc == 0) {
			e->rec = rec;
			e->staged = true;
		}
	}
	return rc;
}

int h5_ow_chunked_commit(h5_dataset *d, h5_ow_join *join, const h5_ow_whole *whole, size_t nwhole,
			 const h5_ow_ext *ext, size_t n, bool durable, uint64_t rows, uint64_t *last_end,
			 h5_freesp *gone)
{
	rw r;
	uint64_t ticket = 0;
	h5_ow_ext *m = NULL;
	size_t nm = 0;
	int rc;

	/* the stream's rows: dims[0] they make, unless a resize says
	 * otherwise (the caller committed the stream's rows first then) */
	if (join && rows == UINT64_MAX && join->rows > d->space.dims[0])
		rows = join->rows;

	/* a growth: the chunk grid the extents map onto is the new one
	 * (d is this commit's own copy; chunks past the old end are not
	 * stored, and read the fill value) */
	if (rows != UINT64_MAX && rows > d->space.dims[0]) {
		uint64_t rb;

		if (d->space.maxdims[0] != H5_UNLIMITED && rows > d->space.maxdims[0])
			return h5_err_set(H5_ERR_RANGE, "%llu rows: past the maximum, %llu", (unsigned long long)rows,
					  (unsigned long long)d->space.maxdims[0]);
		if (h5_dataset_row_bytes(&rb, d) < 0 || h5_mul_overflow(rb, rows, &d->nbytes))
			return h5_err_set(H5_ERR_RANGE, "%llu rows overflow", (unsigned long long)rows);
		d->space.dims[0] = rows;
	}
	rc = rw_init(&r, d);
	/* disjoint ranges: a chunk every byte of which is new is not read */
	if (rc == 0)
		rc = h5_ow_merge(&m, &nm, ext, n);
	if (rc == 0 && join)
		rc = join_rows(&r, join, m, nm);
	if (rc < 0) {
		h5_ow_free(m, nm);
		rw_free(&r);
		return rc;
	}
	rc = set_whole(&r, whole, nwhole, rows);
	/* a shrink commits its dims[0] even when no chunk changed */
	if (rc == 0 && rows != UINT64_MAX)
		rc = writer_open(&r);
	if (rc < 0) {
		h5_ow_free(m, nm);
		rw_free(&r);
		return rc;
	}
	for (size_t i = 0; i < nm && rc == 0; i++)
		rc = apply(&r, m[i].off, m[i].p, m[i].len, true);
	for (size_t i = 0; i < nm && rc == 0; i++)
		rc = apply(&r, m[i].off, m[i].p, m[i].len, false);
	h5_ow_free(m, nm);
	if (rc == 0 && r.tab.n)
		rc = stage_dirty(&r);
	if (rc == 0 && r.w)
		rc = commit(&r, durable, rows, last_end, &ticket);
	/* done: what it replaced is free once the caller showed the commit
	 * (reused after the commit's fsync) */
	for (size_t i = 0; rc == 0 && r.w && i < r.ngone; i++)
		if (h5_freesp_add(gone, r.gone[i].addr, r.gone[i].size, ticket) < 0)
			h5_err_clear();         /* leaked */
	if (rc == 0 && r.w && r.wops->freed)
		r.wops->freed(r.w, gone, ticket);
	if (rc == 0 && join) {
		join->ticket = ticket;
		join->end = *last_end;
	}
	if (rc == 0 && r.w)
		note_top(&r);
	else if (rc == 0 && durable) {
		h5_txn t;

		/* nothing staged, a durable request */
		h5_txn_begin(&t, r.f, true, NULL, NULL);
		rc = h5_txn_idle(&t, true);
	}
	rw_free(&r);
	return rc;
}

/* ---- the end of a session: the last chunk moved down ---------------------------- */

/* Whether moving [addr, addr + len) away lets the allocation end drop: the
 * space above it is free but for at most a v1 B-tree node or two (the
 * index blocks its own commit copied, freed by the move too). */
#define COMPACT_SLACK ((uint64_t)8 << 10)
static bool tail_movable(const h5_file *f, uint64_t addr, uint64_t len)
{
	const struct h5_wstate *ws = h5_ws(f);
	uint64_t end = ws->alloc_end, above, free_above = 0;
	bool hole = false;

	if (addr + len > end)
		return false;
	above = end - (addr + len);
	for (size_t i = 0; i < ws->freesp.n; i++) {
		const h5_free_ext *x = &ws->freesp.v[i];

		if (x->ticket)
			continue;
		if (x->addr >= addr + len)
			free_above += x->len;
		else if (x->addr + x->len <= addr && x->len >= len)
			hole = true;
	}
	return hole && above - free_above <= COMPACT_SLACK;
}

int h5_file_compact(h5_file *f)
{
	struct h5_wstate *ws = h5_ws(f);
	h5_dataset *d = NULL;
	h5_chunk_rec rec = { 0 }, nrec;
	uint8_t *buf = NULL;
	uint64_t addr = 0, last_end = 0, ticket = 0;
	cent *e = NULL;
	h5_txn t;
	rw r;
	bool r_ok = false;
	int rc = 0;

	if (!h5_file_writable(f))
		return 0;
	pthread_mutex_lock(&f->write_lock);
	/* (unmount) the slots taken ahead for new groups: freed first, so
	 * that what lies above them can move down */
	h5_gslot_release_locked(f, H5_ADDR_UNDEF, false);
	h5_space_settle(f);
	if (!ws->last_chunk.dset || !tail_movable(f, ws->last_chunk.addr, ws->last_chunk.size))
		goto out;
	rc = h5_dataset_open(&d, f, ws->last_chunk.dset);
	if (rc == 0 && d->layout.cls != H5_LAYOUT_CHUNKED)
		goto out;
	if (rc == 0)
		rc = rw_init(&r, d);
	r_ok = rc == 0;
	/* an unfiltered chunk the index places itself (implicit, single)
	 * stays where it is */
	if (rc == 0 && !r.ci->filtered && h5_cidx_write_ops_of(d->layout.idx_type)->place)
		goto out;
	if (rc == 0)
		rc = h5_chunk_lookup(&rec, r.ci, ws->last_chunk.scaled);
	/* changed since (a later append or rewrite): nothing to move */
	if (rc < 0 || rec.addr != ws->last_chunk.addr || (rec.size ? rec.size : r.cb) != ws->last_chunk.size)
		goto out;
	if (!(buf = malloc((size_t)ws->last_chunk.size))) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	rc = h5_file_read(f, rec.addr, buf, (size_t)ws->last_chunk.size);
	if (rc == 0)
		rc = h5_space_take(&addr, f, ws->last_chunk.size);
	if (rc == 0 && addr > rec.addr) {
		/* best fit chose a hole above: never written, back at once */
		if (h5_freesp_add(&ws->freesp, addr, ws->last_chunk.size, 0) < 0)
			h5_err_clear();
		goto out;
	}
	if (rc == 0)
		rc = h5_file_write(f, addr, buf, (size_t)ws->last_chunk.size);
	if (rc == 0)
		rc = writer_open(&r);
	if (rc == 0)
		rc = tab_get(&e, &r, ws->last_chunk.scaled);
	if (rc == 0) {
		nrec = rec;
		nrec.addr = addr;
		if (!r.ci->filtered)
			nrec.size = 0;  /* as the chunk store records it */
		rc = set_rec(&r, e, &nrec);
	}
	if (rc == 0)
		rc = commit(&r, true, UINT64_MAX, &last_end, &ticket);
	if (rc == 0) {
		h5_freesp gone = { 0 };

		/* no reader holds the old addresses: freed at once */
		for (size_t i = 0; i < r.ngone; i++)
			h5_space_free(f, r.gone[i].addr, r.gone[i].size, ticket);
		if (r.wops->freed) {
			r.wops->freed(r.w, &gone, ticket);
			h5_space_free_all(f, &gone);
		}
		ws->last_chunk.dset = 0;
	}
out:
	if (r_ok)
		rw_free(&r);
	h5_dataset_close(d);
	free(buf);
	/* what the end now frees is cut off */
	h5_txn_begin(&t, f, true, NULL, NULL);
	if (rc == 0)
		rc = h5_txn_idle(&t, false);
	/* then a header's continuation chunk, a group's link storage or an
	 * object's dense attribute store left at the end moves down into
	 * the space that released (ohdr_edit.c, link_write.c,
	 * attr_write.c), and the end is cut again */
	for (int k = 0; rc == 0 && k < 8; k++) {
		int moved = h5_ohdr_move_down(f);

		if (moved == 0)
			moved = h5_link_move_down(f);
		if (moved == 0)
			moved = h5_attr_move_down(f);
		if (moved < 0)
			h5_err_clear();         /* nothing answered depends on it */
		if (moved <= 0)
			break;
		rc = h5_txn_idle(&t, false);
	}
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

/* Each kept extent touches its chunks and at most two more at its ends
 * (each written anew: the old ones are freed after the commit), so what
 * is kept plus two chunks an extent is an upper bound, plus the index's
 * copied blocks. (Twice what is kept alone: 72 scattered 4 KiB writes
 * into one file took 72 chunks of 64 KiB at the commit, 16 times their
 * reserve, past the host's margin - stress-ng aiol.) */
static int chunked_need(uint64_t *need, const h5_overwriter *w, uint64_t len)
{
	uint64_t ends;

	/* chunks named by offset: the touched ones and this write's, each
	 * rewritten once (a write into a touched chunk costs nothing more),
	 * plus the index's copied blocks */
	if (w->dset_key) {
		uint64_t c = __atomic_load_n(&w->ndirty, __ATOMIC_RELAXED) + len / w->chunk_bytes + 2;

		if (h5_mul_overflow(c, w->chunk_bytes, need) || h5_add_overflow(*need, (uint64_t)256 << 10, need))
			return h5_err_set(H5_ERR_LIMIT, "write of %llu bytes: too large", (unsigned long long)len);
		return 0;
	}

	/* (read by a write before its turn: atomic, as each change of them) */
	if (h5_add_overflow(__atomic_load_n(&w->buffered, __ATOMIC_RELAXED), len, need) ||
	    h5_mul_overflow(__atomic_load_n(&w->spans, __ATOMIC_RELAXED) + 2, 2 * w->chunk_bytes, &ends) ||
	    h5_add_overflow(*need, ends, need) || h5_add_overflow(*need, (uint64_t)256 << 10, need))
		return h5_err_set(H5_ERR_LIMIT, "write of %llu bytes: too large", (unsigned long long)len);
	return 0;
}

static int chunked_commit(h5_overwriter *w, h5_dataset *d, size_t n, bool durable)
{
	return h5_ow_chunked_commit(d, w->join, w->wc.v, w->wc.n, w->ext, n, durable,
				    w->resize == UINT64_MAX ? UINT64_MAX : w->resize / w->row_bytes,
				    &w->last_end, &w->gone);
}

/* The chunked entry of the overwriters' layout table (ow_int.h). */
const h5_ow_layout_ops h5_ow_chunked = {
	.name = "chunked",
	.check = h5_ow_chunked_check,
	.need = chunked_need,
	.put = h5_ow_put_chunked,
	.commit = chunked_commit,
	.punch = h5_ow_punch_chunked,
};
