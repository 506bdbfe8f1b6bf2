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
/* Staged chunk images are collected up to this size before one pwrite. */
#define WBUF_BYTES ((size_t)1 << 20)

/* Start writing staged bytes back now, so that the commit's fsync finds
 * little left to do (a hint: errors show up at that fsync). */
static void writeback_hint(h5_file *f, uint64_t addr, uint64_t len)
{
	if (len >= ((uint64_t)1 << 20))
		h5_file_sync_hint(f, addr, len);
}

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

/* Where the index puts chunk (r, cell) itself (implicit, unfiltered single
 * chunk): 1 and *addr, or 0 when the chunk goes to new space. */
static int placed(uint64_t *addr, h5_astream *s, uint64_t r, uint64_t cell)
{
	uint64_t j[H5_MAX_RANK], idx;
	int rc = writer_open(s);

	if (rc == 0 && !s->wops->place)
		return 0;
	if (rc == 0)
		rc = chunk_pos(j, &idx, s, r, cell);
	return rc < 0 ? rc : s->wops->place(s->ea, idx, addr);
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

static int set_elmt(h5_astream *s, uint64_t r, uint64_t cell, const h5_chunk_rec *rec)
{
	uint64_t j[H5_MAX_RANK], idx;
	int rc = writer_open(s);

	if (rc == 0)
		rc = chunk_pos(j, &idx, s, r, cell);
	if (rc < 0)
		return rc;
	rc = s->wops->set(s->ea, j, idx, rec);
	if (rc == 0)
		s->nset++;
	/* (where it went: append.c frees a partial row's chunks once staged
	 * anew; a record not kept only leaves that chunk unreferenced) */
	if (rc == 0 && !stage_in_place(s) && (s->nstaged < s->cstaged || staged_grow(s)))
		s->staged[s->nstaged++] = (struct astage_rec){ r, rec->addr, rec->size ? rec->size : s->chunk_bytes };
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
typedef struct wbuf {
	h5_file *f;
	uint64_t start;
	uint8_t *p;
	size_t len, cap;
} wbuf;

static int wb_flush(wbuf *w)
{
	int rc = 0;

	if (w->len)
		rc = h5_file_write(w->f, w->start, w->p, w->len);
	w->start += w->len;
	w->len = 0;
	return rc;
}

static int wb_put(wbuf *w, const uint8_t *src, size_t n)
{
	int rc;

	if (w->len + n > w->cap) {
		rc = wb_flush(w);
		if (rc < 0)
			return rc;
		if (n > w->cap)
			return h5_file_write(w->f, (w->start += n) - n, src, n);
	}
	memcpy(w->p + w->len, src, n);
	w->len += n;
	return 0;
}

/* Unfiltered chunk images the index places itself (placed()): each is
 * written where its slot is, past dims[0] (invisible until dims[0] grows)
 * or, for the last chunk, with its old rows' bytes unchanged. Returns 1
 * when the index places chunks. */
static int stage_placed(h5_astream *s, const uint8_t *src, uint64_t r, uint64_t cell, uint64_t n, uint64_t len)
{
	uint64_t addr;
	int rc = placed(&addr, s, r, cell);

	for (uint64_t i = 0; rc == 1 && i < n; i++) {
		uint64_t ri = r + (cell + i) / s->ncells, ci = (cell + i) % s->ncells;
		h5_chunk_rec rec;

		rc = placed(&addr, s, ri, ci);
		if (rc == 0)
			rc = h5_err_set(H5_ERR_FORMAT, "chunk index places some chunks only");
		if (rc < 0)
			break;
		pthread_mutex_lock(&s->f->write_lock);
		rc = h5_file_write(s->f, addr, src + i * len, (size_t)len);
		pthread_mutex_unlock(&s->f->write_lock);
		rec.addr = addr;
		rec.size = len;
		rec.filter_mask = 0;
		if (rc == 0)
			rc = set_elmt(s, ri, ci, &rec);
		if (rc == 0)
			rc = 1;
	}
	return rc;
}

/* n consecutive chunk images of `len` bytes each from src (whole chunk rows
 * of a simple unfiltered dataset: src is the rows) in one write, and chunk
 * rows r.. pointed at them. */
int h5_astage_contiguous(h5_astream *s, const uint8_t *src, uint64_t r, uint64_t n, uint64_t len)
{
	h5_file *f = s->f;
	uint64_t addr = 0;
	int rc = stage_placed(s, src, r, 0, n, len);

	if (rc != 0)
		return rc < 0 ? rc : 0;
	pthread_mutex_lock(&f->write_lock);
	rc = h5_space_take(&addr, f, n * len);     /* written whole below */
	if (rc == 0)
		rc = h5_file_write(f, addr, src, (size_t)(n * len));
	pthread_mutex_unlock(&f->write_lock);
	if (rc < 0)
		return rc;
	writeback_hint(f, addr, n * len);
	for (uint64_t i = 0; i < n && rc == 0; i++) {
		h5_chunk_rec rec = { addr + i * len, 0, 0 };

		rc = set_elmt(s, r + i / s->ncells, i % s->ncells, &rec);
	}
	return rc;
}

/* Stage chunk rows [r0, r1) from the buffer, rows below hi being data. */
int h5_astage_chunks(h5_astream *s, uint64_t r0, uint64_t r1, uint64_t hi)
{
	h5_file *f = s->f;
	uint64_t total, per, cb = s->d->chunk_bytes;
	cjob *jobs = NULL;
	uint8_t *win = NULL;
	wbuf wb = { .f = f, .cap = WBUF_BYTES };
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
	if (s->filtered)
		wb.p = malloc(wb.cap);
	else
		win = malloc((size_t)(per * cb));
	if (!jobs || (s->filtered ? !wb.p : !win)) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory building chunks");
		goto out;
	}
	for (uint64_t first = 0; first < total && rc == 0; first += per) {
		size_t n = (size_t)(total - first < per ? total - first : per);
		uint64_t addr = 0, sum = 0;

		for (size_t i = 0; i < n; i++) {
			jobs[i].r = r0 + (first + i) / s->ncells;
			jobs[i].cell = (first + i) % s->ncells;
			jobs[i].buf = s->filtered ? NULL : win + i * cb;
		}
		rc = build_window(s, jobs, n, hi);
		if (rc < 0)
			goto window_out;
		if (!s->filtered) {
			/* same-size images in row order: one write, like stage_contiguous */
			rc = stage_placed(s, win, jobs[0].r, jobs[0].cell, n, cb);
			if (rc != 0) {
				rc = rc < 0 ? rc : 0;
				continue;
			}
			pthread_mutex_lock(&f->write_lock);
			rc = h5_space_take(&addr, f, n * cb);      /* written whole below */
			if (rc == 0)
				rc = h5_file_write(f, addr, win, (size_t)(n * cb));
			pthread_mutex_unlock(&f->write_lock);
			if (rc == 0)
				writeback_hint(f, addr, n * cb);
			for (size_t i = 0; i < n && rc == 0; i++) {
				h5_chunk_rec rec = { addr + i * cb, 0, 0 };

				rc = set_elmt(s, jobs[i].r, jobs[i].cell, &rec);
			}
			continue;
		}
		for (size_t i = 0; i < n; i++)
			sum += jobs[i].len;
		pthread_mutex_lock(&f->write_lock);
		rc = h5_space_take(&addr, f, sum);         /* written whole below */
		wb.start = addr;
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = wb_put(&wb, jobs[i].buf, jobs[i].len);
		if (rc == 0)
			rc = wb_flush(&wb);
		pthread_mutex_unlock(&f->write_lock);
		if (rc == 0)
			writeback_hint(f, addr, sum);
		for (size_t i = 0; i < n && rc == 0; i++) {
			/* H5D__earray_idx_insert: filtered elements carry size and mask */
			h5_chunk_rec rec = { addr, jobs[i].len, jobs[i].mask };

			addr += jobs[i].len;
			rc = set_elmt(s, jobs[i].r, jobs[i].cell, &rec);
		}
window_out:
		if (s->filtered)
			for (size_t i = 0; i < n; i++) {
				free(jobs[i].buf);
				jobs[i].buf = NULL;
			}
	}
out:
	free(jobs);
	free(win);
	free(wb.p);
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

/* n rows (whole chunk rows, nothing buffered) that no chunk is staged for:
 * the index gets no entries for them, so they read as the fill value, as
 * the chunks libhdf5's H5Dset_extent leaves unallocated (spec III.C
 * "Data Storage - Fill Value": storage never written holds the fill
 * value). The index writer is opened so that the commit has one. */
int h5_astage_skip(h5_astream *s, uint64_t n)
{
	int rc;

	if (s->nbuf || n % s->chunk[0])
		return h5_err_set(H5_ERR_INVAL, "append: rows skipped inside a chunk row");
	rc = writer_open(s);
	if (rc < 0)
		return rc;
	stream_set_row0(s, s->row0 + n);
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
