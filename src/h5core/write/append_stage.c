/*
 * append_stage.c - staging appended rows (doc/APPEND.md "Rows, streams,
 * commits"): complete chunk rows are built from the buffered rows (filled
 * where no row covers them), filtered on up to f->nthreads threads,
 * written as new chunks at the allocation end (space.c) - or where the
 * index places them itself (implicit, single chunk) - and their records
 * set on the index writer (cidx_write.h's write ops). Nothing on disk points at
 * them until append.c commits.
 */
#include "append_int.h"
#include "space.h"
#include "pool.h"
#include "base.h"
#include "file.h"
#include "filter.h"
#include "chunk_rec.h"
#include "dataset.h"
#include "chunk.h"
#include "chunk_store.h"

#include <pthread.h>
#include <stdio.h>

/* Rows collected before they are staged: at least one chunk row, and for
 * filtered datasets enough chunks for every thread (at most
 * STAGE_MAX_BYTES). Small enough to stay in the CPU caches: with an 8 MiB
 * buffer, appending 1 GiB unfiltered took three times the CPU. */
#define STAGE_BYTES ((uint64_t)1 << 20)
#define STAGE_MAX_BYTES ((uint64_t)64 << 20)
#define WINDOW_JOBS 4096
/* Below this many bytes of chunks, threads cost more than they save. */
#define THREAD_MIN_BYTES ((uint64_t)256 << 10)
#define MAX_THREADS 64

static void cell_coords(const h5_astream *s, uint64_t cell, uint64_t *j)
{
	for (unsigned i = s->rank; i-- > 1;) {
		j[i] = cell % s->nch[i];
		cell /= s->nch[i];
	}
}

static int writer_open(h5_astream *s)
{
	if (s->ea)
		return 0;
	s->wops = h5_cidx_write_ops_of(s->d->layout.idx_type);
	return s->wops->open(&s->ea, s->f, s->d, s->ea_addr);
}

/* Scaled coordinates j and linear index (the arrays' order) of a chunk. */
static int chunk_pos(uint64_t *j, uint64_t *idx, const h5_astream *s, uint64_t r, uint64_t cell)
{
	uint64_t t;

	cell_coords(s, cell, j);
	if (h5_mul_overflow(r, s->down[0], idx))
		return h5_err_set(H5_ERR_LIMIT, "chunk row %llu is beyond the index", (unsigned long long)r);
	for (unsigned i = 1; i < s->rank; i++) {
		if (h5_mul_overflow(j[i], s->down[i], &t) || h5_add_overflow(*idx, t, idx))
			return h5_err_set(H5_ERR_LIMIT, "chunk row %llu is beyond the index", (unsigned long long)r);
	}
	j[0] = r;
	return 0;
}

/* The index places chunks itself (implicit, single chunk): in place,
 * nothing of theirs is ever freed. */
static bool stage_in_place(const h5_astream *s)
{
	const h5_cidx_write_ops *ops = h5_cidx_write_ops_of(s->d->layout.idx_type);

	return !ops || ops->place != NULL;
}

static bool staged_grow(h5_astream *s)
{
	size_t n = s->cstaged ? 2 * s->cstaged : 16;
	struct astage_rec *v = realloc(s->staged, n * sizeof(*v));

	if (!v)
		return false;
	s->staged = v;
	s->cstaged = n;
	return true;
}

/* Chunk (r, cell)'s record, set on the index by the chunk store: counted,
 * and where it went kept - append_commit.c frees a partial row's chunks
 * once staged anew, and a commit another writer makes reads the staged
 * chunks from there (h5_astream_staged): out of memory fails the stage. */
static int noted(h5_astream *s, uint64_t r, uint64_t cell, const h5_chunk_rec *rec)
{
	s->nset++;
	if (stage_in_place(s))
		return 0;
	if (s->nstaged == s->cstaged && !staged_grow(s))
		return h5_err_set(H5_ERR_NOMEM, "out of memory noting staged chunks");
	s->staged[s->nstaged++] = (struct astage_rec){ r, cell, *rec };
	return 0;
}

void h5_astream_staged(const h5_astream *s, size_t i, uint64_t *scaled, h5_chunk_rec *rec)
{
	cell_coords(s, s->staged[i].cell, scaled);
	scaled[0] = s->staged[i].r;
	*rec = s->staged[i].rec;
}

/* Items [0, n) - chunk images of chunk rows rows[i], cells cells[i] -
 * through the chunk store (chunk_store.h): where the index places them
 * (implicit, unfiltered single chunk: past dims[0], invisible until it
 * grows, or for the last chunk with its old rows' bytes unchanged), else
 * in one run of new space, one write; their records set, then noted.
 * cb: an unfiltered image's bytes. */
static int stage_items(h5_astream *s, h5_cstore_item *it, const uint64_t *rows, const uint64_t *cells, size_t n,
		       uint64_t cb)
{
	uint64_t (*j)[H5_MAX_RANK] = malloc((n ? n : 1) * sizeof(*j));
	h5_cstore c = { .f = s->f, .cb = cb, .filtered = s->filtered, .run = true };
	size_t done = 0;
	int rc = j ? writer_open(s) : h5_err_set(H5_ERR_NOMEM, "out of memory staging chunks");

	for (size_t i = 0; rc == 0 && i < n; i++) {
		rc = chunk_pos(j[i], &it[i].idx, s, rows[i], cells[i]);
		it[i].scaled = j[i];
	}
	c.wops = s->wops;
	c.w = s->ea;
	if (rc == 0)
		rc = h5_cstore_put(&done, &c, it, n);
	for (size_t i = 0; i < done; i++) {
		int rn = noted(s, rows[i], cells[i], &it[i].rec);

		if (rc == 0)
			rc = rn;
	}
	free(j);
	return rc;
}

static const uint8_t *row_ptr(const h5_astream *s, uint64_t row)
{
	return s->buf + (row - s->row0) * s->row_bytes;
}

/* Copy the part of buffered rows [lo, hi) that chunk (r, j[1..]) covers
 * into cbuf. Walks the chunk's box in dims 1..rank-1 as runs along the
 * last dimension. */
static void chunk_gather(const h5_astream *s, uint8_t *cbuf, uint64_t r, const uint64_t *j, uint64_t lo, uint64_t hi)
{
	unsigned k = s->rank;
	uint64_t ext[H5_MAX_RANK], idx[H5_MAX_RANK], cstride[H5_MAX_RANK], dstride[H5_MAX_RANK];
	uint64_t run;

	if (s->simple) {
		memcpy(cbuf, row_ptr(s, lo), (size_t)((hi - lo) * s->row_bytes));
		return;
	}
	/* strides in elements: within the chunk and within one dataset row */
	cstride[k - 1] = 1;
	dstride[k - 1] = 1;
	for (unsigned i = k - 1; i-- > 0;) {
		cstride[i] = cstride[i + 1] * s->chunk[i + 1];
		dstride[i] = i == 0 ? 0 : dstride[i + 1] * s->dims[i + 1];
	}
	for (unsigned i = 1; i < k; i++) {
		uint64_t start = j[i] * s->chunk[i];

		ext[i] = s->dims[i] - start < s->chunk[i] ? s->dims[i] - start : s->chunk[i];
	}
	run = (k == 1 ? 1 : ext[k - 1]) * s->esize;
	for (uint64_t row = lo; row < hi; row++) {
		const uint8_t *src = row_ptr(s, row);
		uint8_t *dst = cbuf + (row - r * s->chunk[0]) * cstride[0] * s->esize;

		if (k == 1) {
			memcpy(dst, src, (size_t)run);
			continue;
		}
		for (unsigned i = 1; i < k; i++)
			idx[i] = 0;
		for (;;) {
			uint64_t so = 0, co = 0;
			unsigned i;

			for (i = 1; i < k; i++) {
				so += (j[i] * s->chunk[i] + idx[i]) * dstride[i];
				co += idx[i] * cstride[i];
			}
			memcpy(dst + co * s->esize, src + so * s->esize, (size_t)run);
			/* next run: odometer over dims 1..k-2 */
			for (i = k - 1; i-- > 1;) {
				if (++idx[i] < ext[i])
					break;
				idx[i] = 0;
			}
			if (i == 0)
				break;
		}
	}
}

/* One chunk to build: chunk row r, cell `cell` of it. */
typedef struct cjob {
	uint64_t r, cell;
	uint8_t *buf;           /* filtered: malloc'd here; else a slice of the window */
	size_t len;
	uint32_t mask;
} cjob;

/* Build (and filter) one chunk from buffered rows below hi. Chunks are
 * full-size on disk; what no row covers holds the fill value. Runs on
 * worker threads: reads the stream, writes only the job. */
static int build_chunk(const h5_astream *s, cjob *jb, uint64_t hi)
{
	uint64_t j[H5_MAX_RANK], lo = jb->r * s->chunk[0], end = lo + s->chunk[0];
	size_t len = (size_t)s->d->chunk_bytes;
	bool full = end <= hi;

	cell_coords(s, jb->cell, j);
	for (unsigned i = 1; i < s->rank; i++)
		if ((j[i] + 1) * s->chunk[i] > s->dims[i])
			full = false;
	if (end > hi)
		end = hi;
	if (!jb->buf) {
		jb->buf = malloc(len);
		if (!jb->buf)
			return h5_err_set(H5_ERR_NOMEM, "out of memory for a %zu-byte chunk", len);
	}
	if (!full)
		h5_dataset_fill(s->d, jb->buf, 0, len);
	chunk_gather(s, jb->buf, jb->r, j, lo, end);
	jb->len = len;
	jb->mask = 0;
	if (s->filtered)
		return h5_filter_encode(&jb->buf, &jb->len, &jb->mask, &s->d->pline);
	return 0;
}

typedef struct cwork {
	const h5_astream *s;
	cjob *jobs;
	uint64_t hi;
} cwork;

/* h5_pool_each's item i: job i built (any thread). */
static int build_one(void *ctx, size_t i)
{
	cwork *w = ctx;

	return build_chunk(w->s, &w->jobs[i], w->hi);
}

/* Build n chunks; filtered ones on up to f->nthreads threads (this one
 * included, the others idle workers of the context's pool, pool.c).
 * Fewer threads than asked for is fine. */
static int build_window(const h5_astream *s, cjob *jobs, size_t n, uint64_t hi)
{
	cwork w = { .s = s, .jobs = jobs, .hi = hi };
	unsigned want = s->f->nthreads;

	if (!s->filtered || n < 2 || n * s->d->chunk_bytes < THREAD_MIN_BYTES)
		want = 1;
	if (want > MAX_THREADS)
		want = MAX_THREADS;
	return h5_pool_each(s->f->pool, build_one, &w, n, want ? want - 1 : 0);
}

/* Chunk images go out sequentially from `start`, collected into one pwrite. */
/* n consecutive chunk images of `len` bytes each from src (whole chunk rows
 * of a simple unfiltered dataset: src is the rows) in one write, and chunk
 * rows r.. pointed at them. */
int h5_astage_contiguous(h5_astream *s, const uint8_t *src, uint64_t r, uint64_t n, uint64_t len)
{
	h5_cstore_item *it = calloc(n ? (size_t)n : 1, sizeof(*it));
	uint64_t *rows = malloc((n ? (size_t)n : 1) * sizeof(*rows)), *cells = malloc((n ? (size_t)n : 1) * sizeof(*cells));
	int rc = it && rows && cells ? 0 : h5_err_set(H5_ERR_NOMEM, "out of memory staging chunks");

	for (uint64_t i = 0; rc == 0 && i < n; i++) {
		it[i] = (h5_cstore_item){ .img = src + i * len, .len = (size_t)len };
		rows[i] = r + i / s->ncells;
		cells[i] = i % s->ncells;
	}
	if (rc == 0)
		rc = stage_items(s, it, rows, cells, (size_t)n, len);
	free(it);
	free(rows);
	free(cells);
	return rc;
}

/* Stage chunk rows [r0, r1) from the buffer, rows below hi being data:
 * built a window at a time (filtered by the pool's threads), each window
 * through the chunk store in one run. */
int h5_astage_chunks(h5_astream *s, uint64_t r0, uint64_t r1, uint64_t hi)
{
	h5_file *f = s->f;
	uint64_t total, per, cb = s->d->chunk_bytes;
	cjob *jobs = NULL;
	uint8_t *win = NULL;
	h5_cstore_item *it = NULL;
	uint64_t *rows = NULL, *cells = NULL;
	int rc = 0;

	if (!s->filtered && s->simple && hi == r1 * s->chunk[0])
		return h5_astage_contiguous(s, row_ptr(s, r0 * s->chunk[0]), r0, r1 - r0, s->crow_bytes);
	if (h5_mul_overflow(r1 - r0, s->ncells, &total))
		return h5_err_set(H5_ERR_LIMIT, "too many chunks");
	per = WINDOW_BYTES / cb ? WINDOW_BYTES / cb : 1;
	if (s->filtered && per < 2 * (uint64_t)f->nthreads)
		per = 2 * (uint64_t)f->nthreads;
	if (per > WINDOW_JOBS)
		per = WINDOW_JOBS;
	if (per > total)
		per = total;
	jobs = calloc((size_t)per, sizeof(*jobs));
	it = calloc((size_t)per, sizeof(*it));
	rows = malloc((size_t)per * sizeof(*rows));
	cells = malloc((size_t)per * sizeof(*cells));
	if (!s->filtered)
		win = malloc((size_t)(per * cb));
	if (!jobs || !it || !rows || !cells || (!s->filtered && !win)) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory building chunks");
		goto out;
	}
	for (uint64_t first = 0; first < total && rc == 0; first += per) {
		size_t n = (size_t)(total - first < per ? total - first : per);

		for (size_t i = 0; i < n; i++) {
			jobs[i].r = rows[i] = r0 + (first + i) / s->ncells;
			jobs[i].cell = cells[i] = (first + i) % s->ncells;
			jobs[i].buf = s->filtered ? NULL : win + i * cb;
		}
		rc = build_window(s, jobs, n, hi);
		for (size_t i = 0; rc == 0 && i < n; i++)
			it[i] = (h5_cstore_item){ .img = jobs[i].buf, .len = s->filtered ? jobs[i].len : (size_t)cb,
						  .mask = s->filtered ? jobs[i].mask : 0 };
		if (rc == 0)
			rc = stage_items(s, it, rows, cells, n, cb);
		if (s->filtered)
			for (size_t i = 0; i < n; i++) {
				free(jobs[i].buf);
				jobs[i].buf = NULL;
			}
	}
out:
	free(jobs);
	free(win);
	free(it);
	free(rows);
	free(cells);
	return rc;
}

/* Stage every complete chunk row in the buffer and keep the rest. */
int h5_astage_complete(h5_astream *s)
{
	uint64_t k = s->nbuf / s->chunk[0], n = k * s->chunk[0];
	int rc;

	if (k == 0)
		return 0;
	rc = h5_astage_chunks(s, s->row0 / s->chunk[0], s->row0 / s->chunk[0] + k, s->row0 + n);
	if (rc < 0)
		return rc;
	memmove(s->buf, s->buf + n * s->row_bytes, (size_t)((s->nbuf - n) * s->row_bytes));
	stream_set_row0(s, s->row0 + n);
	s->nbuf -= n;
	return 0;
}

/* A stream opened on a dataset whose last chunk row is partly filled:
 * that row's chunks as the index has them now, freed once the row is
 * staged anew and committed (append.c partial_settle). A lookup that
 * fails only leaves them unreferenced later. */
void h5_astage_partial_find(h5_astream *s)
{
	uint64_t r = s->row0 / s->chunk[0];

	if (!s->nbuf || stage_in_place(s) || !s->d->cidx)
		return;
	for (uint64_t cell = 0; cell < s->ncells; cell++) {
		uint64_t j[H5_MAX_RANK], idx;
		h5_chunk_rec rec;

		if (chunk_pos(j, &idx, s, r, cell) < 0 || h5_chunk_lookup(&rec, s->d->cidx, j) < 0)
			break;
		if (h5_addr_defined(rec.addr) &&
		    h5_freesp_add(&s->partial, rec.addr, rec.size ? rec.size : s->chunk_bytes, 0) < 0)
			break;
	}
	h5_err_clear();
	s->prow = r;
}

/* Geometry, staging batch and the rows of a partly filled last chunk row
 * (read through the current index). Called under write_lock, so that no
 * commit of a stream being closed interleaves with reading dims[0]. */
void h5_astream_stage_rows(h5_astream *s)
{
	/* whole chunk rows per staging batch */
	uint64_t k = STAGE_BYTES / s->crow_bytes;
	unsigned nt = s->f->nthreads ? s->f->nthreads : 1;

	if (k == 0)
		k = 1;
	if (s->filtered && nt > 1 && k * s->ncells < 2 * (uint64_t)nt) {
		uint64_t want = (2 * (uint64_t)nt + s->ncells - 1) / s->ncells;

		if (want * s->crow_bytes <= STAGE_MAX_BYTES)
			k = want;
	}
	if (k > 1 && k * s->crow_bytes > s->commit_bytes / 2)
		k = s->commit_bytes / 2 / s->crow_bytes ? s->commit_bytes / 2 / s->crow_bytes : 1;
	s->stage_rows = k * s->chunk[0];
}
