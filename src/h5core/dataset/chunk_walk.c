/*
 * chunk_walk.c - byte windows of chunked datasets: read into a buffer, or
 * cut into the pieces of a read plan (plan.c), one walk of the index.
 *
 * A window maps onto the C-order element stream, splits into at most
 * 2*rank-1 boxes, and each (box, chunk) pair is visited: filtered chunks
 * are decoded once into f->chunks (keyed by chunk address; the cache's
 * load-once semantics make concurrent readers share a decode), unfiltered
 * chunks are read straight from the file (the page cache keeps them;
 * copying them into our cache too would only double the memory), and
 * chunks never written read as the fill value. When a window spans several
 * filtered chunks they are processed by up to f->nthreads threads.
 */
#include "layout_ops.h"
#include "chunk_int.h"
#include "pool.h"
#include "chunk.h"

#include <stdio.h>

#define CHUNK_BATCH 1024                    /* (box, chunk) pairs per scheduling round */
#define CHUNK_SPAN_MAX ((uint64_t)1 << 20)  /* read a chunk's whole touched span up to this */
#define CHUNK_MAX_BOXES (2 * H5_MAX_RANK)
#define CHUNK_PASSED_MAX 64                 /* chunks one read notes for drop-behind */

typedef struct rbox {
	uint64_t lo[H5_MAX_RANK], hi[H5_MAX_RANK];  /* hi exclusive */
} rbox;

typedef struct read_ctx {
	h5_chunk_index *ci;
	uint8_t *buf;
	uint64_t off;
	size_t len;
	rbox boxes[CHUNK_MAX_BOXES];
	unsigned nboxes;
	uint64_t dstride[H5_MAX_RANK];  /* elements per step, dataset */
	uint64_t cstride[H5_MAX_RANK];  /* elements per step, chunk */
	/* the current batch */
	size_t ntasks;
	unsigned task_box[CHUNK_BATCH];
	uint64_t *task_scaled;          /* CHUNK_BATCH * rank */
	size_t next;                    /* atomic: next task to run */
	int err;                        /* atomic: first error */
	pthread_mutex_t lock;
	char msg[512];
	h5_plan_build *plan;            /* cut into pieces instead of reading */
	int stop;                       /* atomic: the plan is full, stop */
	bool stream;                    /* a sequential read: note chunks read to their end */
	uint64_t passed[CHUNK_PASSED_MAX]; /* their addresses (under lock) */
	unsigned npassed;
} read_ctx;

/* Split elements [a, b] of the C-order stream into boxes: greedily take the
 * largest aligned slab that fits (at most 2*rank-1 of them). */
static void decompose(read_ctx *x, uint64_t a, uint64_t b)
{
	const h5_chunk_index *ci = x->ci;
	unsigned r = ci->rank;
	uint64_t cur = a;

	x->nboxes = 0;
	while (cur <= b && x->nboxes < CHUNK_MAX_BOXES) {
		uint64_t c[H5_MAX_RANK], rem = cur, cnt = 0;
		rbox *bx = &x->boxes[x->nboxes++];
		unsigned j;

		for (unsigned i = r; i-- > 0;) {
			c[i] = rem % ci->dims[i];
			rem /= ci->dims[i];
		}
		for (j = 0; j < r; j++) {
			bool aligned = true;

			for (unsigned m = j + 1; m < r; m++)
				aligned = aligned && c[m] == 0;
			if (!aligned)
				continue;
			cnt = (b - cur + 1) / x->dstride[j];
			if (cnt > ci->dims[j] - c[j])
				cnt = ci->dims[j] - c[j];
			if (cnt >= 1)
				break;
		}
		for (unsigned m = 0; m < r; m++) {
			bx->lo[m] = m < j ? c[m] : (m == j ? c[m] : 0);
			bx->hi[m] = m < j ? c[m] + 1 : (m == j ? c[m] + cnt : ci->dims[m]);
		}
		cur += cnt * x->dstride[j];
	}
}

typedef int (*row_fn)(void *ud, uint64_t ds_off, uint64_t ck_off, size_t n);

/* Visit the contiguous runs of the part of chunk `base` inside [ilo, ihi),
 * clipped to the read window: ds_off is the byte offset in the dataset,
 * ck_off the byte offset inside the (decoded) chunk. */
static int rows_each(const read_ctx *x, const uint64_t *ilo, const uint64_t *ihi, const uint64_t *base,
		     row_fn fn, void *ud)
{
	const h5_chunk_index *ci = x->ci;
	unsigned r = ci->rank, k = r - 1, j;
	uint64_t c[H5_MAX_RANK], es = ci->esize, wend = x->off + x->len;
	int rc;

	/* Trailing dimensions covered entirely, in a chunk exactly as wide as
	 * the dataset, are contiguous in both: merge them into one run. */
	while (k > 0 && ci->chunk[k] == ci->dims[k] && ilo[k] == 0 && ihi[k] == ci->dims[k])
		k--;
	memcpy(c, ilo, sizeof(uint64_t) * r);
	for (;;) {
		uint64_t L = 0, C = 0, rs, re, s, e;

		for (j = 0; j <= k; j++) {
			L += c[j] * x->dstride[j];
			C += (c[j] - base[j]) * x->cstride[j];
		}
		rs = L * es;
		re = rs + (ihi[k] - ilo[k]) * x->dstride[k] * es;
		s = rs > x->off ? rs : x->off;
		e = re < wend ? re : wend;
		if (s < e) {
			rc = fn(ud, s, C * es + (s - rs), (size_t)(e - s));
			if (rc < 0)
				return rc;
		}
		/* odometer over the dimensions before k, last one fastest */
		for (j = k; j > 0; j--) {
			if (++c[j - 1] < ihi[j - 1])
				break;
			c[j - 1] = ilo[j - 1];
		}
		if (j == 0)
			return 0;
	}
}

struct row_mem {
	const read_ctx *x;
	const uint8_t *src;     /* chunk bytes, or the span read from the file */
	uint64_t src_base;      /* chunk offset of src[0] */
};

static int row_copy(void *ud, uint64_t ds_off, uint64_t ck_off, size_t n)
{
	struct row_mem *m = ud;

	memcpy(m->x->buf + (ds_off - m->x->off), m->src + (ck_off - m->src_base), n);
	return 0;
}

static int row_fill(void *ud, uint64_t ds_off, uint64_t ck_off, size_t n)
{
	const read_ctx *x = ud;

	h5_dataset_fill(x->ci->d, x->buf + (ds_off - x->off), ds_off, n);
	return 0;
}

struct row_span {
	uint64_t lo, hi, total, nruns;
};

static int row_measure(void *ud, uint64_t ds_off, uint64_t ck_off, size_t n)
{
	struct row_span *s = ud;

	if (!s->nruns || ck_off < s->lo)
		s->lo = ck_off;
	if (!s->nruns || ck_off + n > s->hi)
		s->hi = ck_off + n;
	s->total += n;
	s->nruns++;
	return 0;
}

struct row_file {
	const read_ctx *x;
	uint64_t addr;
};

static int row_pread(void *ud, uint64_t ds_off, uint64_t ck_off, size_t n)
{
	struct row_file *rf = ud;

	return h5_file_read(rf->x->ci->f, rf->addr + ck_off, rf->x->buf + (ds_off - rf->x->off), n);
}

/* Unfiltered chunk: read what the window needs straight from the file into
 * the caller's buffer; many runs close together are read as one span. */
static int read_direct(const read_ctx *x, const h5_chunk_rec *rec, const uint64_t *ilo, const uint64_t *ihi,
		       const uint64_t *base)
{
	struct row_span sp = { 0 };
	struct row_file rf = { x, rec->addr };
	uint64_t span;
	int rc;

	if (!h5_file_range_ok(x->ci->f, rec->addr, x->ci->chunk_bytes))
		return h5_err_set(H5_ERR_FORMAT, "chunk at 0x%llx+%llu lies outside the file",
				  (unsigned long long)rec->addr, (unsigned long long)x->ci->chunk_bytes);
	rows_each(x, ilo, ihi, base, row_measure, &sp);
	span = sp.hi - sp.lo;
	if (sp.nruns > 1 && (span <= CHUNK_SPAN_MAX || (span <= 2 * sp.total && span <= 64 * CHUNK_SPAN_MAX))) {
		struct row_mem m = { x, NULL, sp.lo };
		uint8_t *tmp;

		rc = h5_file_read_buf(&tmp, x->ci->f, rec->addr + sp.lo, (size_t)span);
		if (rc < 0)
			return rc;
		m.src = tmp;
		rc = rows_each(x, ilo, ihi, base, row_copy, &m);
		h5_buf_free(tmp);
		return rc;
	}
	return rows_each(x, ilo, ihi, base, row_pread, &rf);
}

static int read_filtered(const read_ctx *x, const h5_chunk_rec *rec, const uint64_t *ilo, const uint64_t *ihi,
			 const uint64_t *base)
{
	h5_chunk_index *ci = x->ci;
	struct row_mem m = { x, NULL, 0 };
	h5_cache_ref ref;
	int rc;

	rc = h5_chunk_get(&ref, &m.src, ci, rec);
	if (rc < 0)
		return rc;
	rc = rows_each(x, ilo, ihi, base, row_copy, &m);
	h5_cache_release(ci->f->chunks, &ref);
	return rc;
}

/* A piece of the plan for the run [ds_off, +n) at ck_off of the chunk
 * (x->lock held): its kind and where it is from `proto`. */
struct row_plan {
	const read_ctx *x;
	h5_piece proto;         /* kind, f, addr (EXTENT) or mem (PINNED) of
				 * the chunk's byte 0 */
};

static int row_piece(void *ud, uint64_t ds_off, uint64_t ck_off, size_t n)
{
	struct row_plan *rp = ud;
	h5_piece p = rp->proto;

	p.ds = ds_off;
	p.len = n;
	if (p.kind == H5_PIECE_EXTENT)
		p.addr += ck_off;
	else if (p.kind == H5_PIECE_PINNED)
		p.mem += ck_off;
	/* no room: the window is read instead; stop cutting */
	return h5_plan_add(rp->x->plan, &p) ? 0 : 1;
}

static int plan_rows(read_ctx *x, struct row_plan *rp, const uint64_t *ilo, const uint64_t *ihi,
		     const uint64_t *base)
{
	int rc;

	pthread_mutex_lock(&x->lock);
	rc = x->plan->read ? 1 : rows_each(x, ilo, ihi, base, row_piece, rp);
	pthread_mutex_unlock(&x->lock);
	if (rc > 0)
		__atomic_store_n(&x->stop, 1, __ATOMIC_RELEASE);
	return rc < 0 ? rc : 0;
}

/* h5_chunk_cut: the part of one chunk in the window as pieces - fill for
 * a chunk never written, the file for a chunk stored unfiltered, the
 * decoded chunk (held in the plan's pin) for a filtered one. */
static int plan_chunk(read_ctx *x, const h5_chunk_rec *rec, const uint64_t *scaled, const uint64_t *ilo,
		      const uint64_t *ihi, const uint64_t *base)
{
	h5_chunk_index *ci = x->ci;
	h5_plan_build *b = x->plan;
	struct row_plan rp = { x, { .kind = H5_PIECE_FILL } };
	h5_cache_ref ref;
	int rc;

	if (!h5_addr_defined(rec->addr))
		return plan_rows(x, &rp, ilo, ihi, base);
	if (!h5_chunk_is_filtered(ci, scaled)) {
		if (!h5_file_range_ok(ci->f, rec->addr, ci->chunk_bytes))
			return h5_err_set(H5_ERR_FORMAT, "chunk at 0x%llx+%llu lies outside the file",
					  (unsigned long long)rec->addr, (unsigned long long)ci->chunk_bytes);
		rp.proto.kind = H5_PIECE_EXTENT;
		rp.proto.f = ci->f;
		rp.proto.addr = rec->addr;
		return plan_rows(x, &rp, ilo, ihi, base);
	}
	if (!b->pin) {
		/* extents only: a decoded chunk is no piece of a file */
		pthread_mutex_lock(&x->lock);
		b->read = true;
		pthread_mutex_unlock(&x->lock);
		__atomic_store_n(&x->stop, 1, __ATOMIC_RELEASE);
		return 0;
	}
	rc = h5_chunk_get(&ref, &rp.proto.mem, ci, rec);
	if (rc < 0)
		return rc;
	rp.proto.kind = H5_PIECE_PINNED;
	pthread_mutex_lock(&x->lock);
	if (b->pin->nheld == 2 * H5_PIN_MAX) {
		b->read = true;
		rc = 1;
	} else {
		/* held from here: the plan releases it, on failure too */
		b->pin->held[b->pin->nheld++] = ref.obj;
		b->pin->held[b->pin->nheld++] = ref.ent;
		ref.ent = NULL;
		rc = b->read ? 1 : rows_each(x, ilo, ihi, base, row_piece, &rp);
	}
	pthread_mutex_unlock(&x->lock);
	if (ref.ent)
		h5_cache_release(ci->f->chunks, &ref);
	if (rc > 0) {
		__atomic_store_n(&x->stop, 1, __ATOMIC_RELEASE);
		return 0;
	}
	return rc;
}

/* A sequential read that covers the last element of a decoded chunk has
 * passed it: the stream will not come back, and the kernel keeps the bytes
 * in its page cache. Noted here, dropped from our cache a little later
 * (h5_chunk_stream_drop, chunk_stream.c): the chunks a stream leaves
 * behind would otherwise fill the whole budget, and each one new memory,
 * page-faulted in and zeroed, instead of a reused buffer (issue 16). */
static void note_passed(read_ctx *x, uint64_t addr, const uint64_t *base)
{
	const h5_chunk_index *ci = x->ci;
	uint64_t last = 0;

	for (unsigned i = 0; i < ci->rank; i++) {
		uint64_t hi = ci->dims[i] - base[i] < ci->chunk[i] ? ci->dims[i] : base[i] + ci->chunk[i];

		last += (hi - 1) * x->dstride[i];       /* < elements of the dataset */
	}
	if (x->off + x->len < (last + 1) * ci->esize)
		return;
	pthread_mutex_lock(&x->lock);
	if (x->npassed < CHUNK_PASSED_MAX)
		x->passed[x->npassed++] = addr;
	pthread_mutex_unlock(&x->lock);
}

static int run_task(read_ctx *x, size_t t)
{
	h5_chunk_index *ci = x->ci;
	const rbox *bx = &x->boxes[x->task_box[t]];
	const uint64_t *scaled = x->task_scaled + t * ci->rank;
	uint64_t base[H5_MAX_RANK], ilo[H5_MAX_RANK], ihi[H5_MAX_RANK];
	h5_chunk_rec rec;
	int rc;

	for (unsigned i = 0; i < ci->rank; i++) {
		uint64_t end;

		base[i] = scaled[i] * ci->chunk[i];     /* < dims[i]: scaled comes from a box */
		end = base[i] + ci->chunk[i] < base[i] ? UINT64_MAX : base[i] + ci->chunk[i];
		ilo[i] = bx->lo[i] > base[i] ? bx->lo[i] : base[i];
		ihi[i] = bx->hi[i] < end ? bx->hi[i] : end;
		if (ilo[i] >= ihi[i])
			return 0;
	}
	rc = h5_chunk_lookup(&rec, ci, scaled);
	if (rc < 0)
		return rc;
	if (x->plan)
		rc = plan_chunk(x, &rec, scaled, ilo, ihi, base);
	else if (!h5_addr_defined(rec.addr))
		return rows_each(x, ilo, ihi, base, row_fill, x);
	else if (h5_chunk_is_filtered(ci, scaled))
		rc = read_filtered(x, &rec, ilo, ihi, base);
	else
		return read_direct(x, &rec, ilo, ihi, base);
	if (rc == 0 && x->stream && h5_addr_defined(rec.addr) && h5_chunk_is_filtered(ci, scaled))
		note_passed(x, rec.addr, base);
	return rc;
}

static void record_error(read_ctx *x, int rc)
{
	pthread_mutex_lock(&x->lock);
	if (!x->err) {
		snprintf(x->msg, sizeof(x->msg), "%s", h5_err_msg());
		__atomic_store_n(&x->err, rc, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&x->lock);
}

static void worker(void *arg)
{
	read_ctx *x = arg;

	for (;;) {
		size_t t = __atomic_fetch_add(&x->next, 1, __ATOMIC_ACQ_REL);
		int rc;

		if (t >= x->ntasks || __atomic_load_n(&x->err, __ATOMIC_ACQUIRE) ||
		    __atomic_load_n(&x->stop, __ATOMIC_ACQUIRE))
			break;
		rc = run_task(x, t);
		if (rc < 0)
			record_error(x, rc);
	}
}

/* Run the batch; with filtered chunks, on up to f->nthreads threads (the
 * caller's, and idle workers of the context's pool, pool.c: however many
 * files and readers decode at once, the context's threads are all). */
static int run_batch(read_ctx *x)
{
	h5_chunk_index *ci = x->ci;
	unsigned helpers = 0;

	x->next = 0;
	if (ci->filtered && x->ntasks >= 2 && ci->f->nthreads > 1)
		helpers = (x->ntasks < ci->f->nthreads ? (unsigned)x->ntasks : ci->f->nthreads) - 1;
	h5_pool_run(ci->f->pool, worker, x, helpers);
	if (x->err)
		return h5_err_set(x->err, "%s", x->msg);
	return 0;
}

/* Visit every (box, chunk) pair of [off, off+len): read into buf, or with
 * plan, cut the window into pieces (one walk of the index). */
static int chunk_walk(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len, h5_plan_build *plan, bool stream)
{
	h5_chunk_index *ci = d->cidx;
	read_ctx *x;
	uint64_t end, nel = 1, cc[H5_MAX_RANK], clo[H5_MAX_RANK], chi[H5_MAX_RANK];
	unsigned r, b = 0;
	bool more;
	int rc = 0;

	if (!ci)
		return h5_err_set(H5_ERR_INVAL, "dataset at 0x%llx has no chunk index", (unsigned long long)d->addr);
	r = ci->rank;
	for (unsigned i = 0; i < r; i++)
		if (h5_mul_overflow(nel, ci->dims[i], &nel))
			return h5_err_set(H5_ERR_FORMAT, "dataset element count overflows");
	if (h5_add_overflow(off, len, &end) || h5_mul_overflow(nel, ci->esize, &nel) || end > nel)
		return h5_err_set(H5_ERR_INVAL, "read of %zu bytes at %llu is past the end of the dataset", len,
				  (unsigned long long)off);
	if (len == 0)
		return 0;
	x = calloc(1, sizeof(*x));
	if (x)
		x->task_scaled = malloc(sizeof(uint64_t) * CHUNK_BATCH * r);
	if (!x || !x->task_scaled) {
		free(x);
		return h5_err_set(H5_ERR_NOMEM, "out of memory for a chunk read");
	}
	pthread_mutex_init(&x->lock, NULL);
	x->ci = ci;
	x->buf = buf;
	x->off = off;
	x->len = len;
	x->plan = plan;
	x->stream = stream;
	x->dstride[r - 1] = 1;
	x->cstride[r - 1] = 1;
	for (unsigned i = r - 1; i-- > 0;) {
		x->dstride[i] = x->dstride[i + 1] * ci->dims[i + 1];   /* <= nelmts: no overflow */
		x->cstride[i] = x->cstride[i + 1] * ci->chunk[i + 1];  /* <= chunk_bytes */
	}
	decompose(x, off / ci->esize, (end - 1) / ci->esize);

	/* Enumerate (box, chunk) pairs in batches; the chunks of one box are
	 * visited in C order of their coordinates. */
	more = x->nboxes > 0;
	if (more)
		for (unsigned i = 0; i < r; i++) {
			clo[i] = x->boxes[0].lo[i] / ci->chunk[i];
			chi[i] = (x->boxes[0].hi[i] - 1) / ci->chunk[i];
			cc[i] = clo[i];
		}
	while (more && rc == 0 && !x->stop) {
		x->ntasks = 0;
		while (more && x->ntasks < CHUNK_BATCH) {
			unsigned j;

			x->task_box[x->ntasks] = b;
			memcpy(x->task_scaled + x->ntasks * r, cc, sizeof(uint64_t) * r);
			x->ntasks++;
			for (j = r; j-- > 0;) {
				if (++cc[j] <= chi[j])
					break;
				cc[j] = clo[j];
			}
			if (j != (unsigned)-1)
				continue;
			if (++b >= x->nboxes) {
				more = false;
				break;
			}
			for (unsigned i = 0; i < r; i++) {
				clo[i] = x->boxes[b].lo[i] / ci->chunk[i];
				chi[i] = (x->boxes[b].hi[i] - 1) / ci->chunk[i];
				cc[i] = clo[i];
			}
		}
		rc = run_batch(x);
	}
	if (x->npassed)
		h5_chunk_stream_drop(ci, x->passed, x->npassed);
	pthread_mutex_destroy(&x->lock);
	free(x->task_scaled);
	free(x);
	return rc;
}

int h5_chunk_read(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len)
{
	bool stream = h5_chunk_stream_note(d, off, len);

	return chunk_walk(d, buf, off, len, NULL, stream);
}

int h5_chunk_cut(h5_plan_build *b)
{
	h5_dataset *d = b->d;
	bool stream = false;

	/* pieces of files only (a virtual dataset's source): decoded chunks
	 * are none, so no walk (partial edge chunks stored unfiltered too:
	 * rare, and read all the same) */
	if (!b->pin && d->cidx && d->cidx->filtered) {
		b->read = true;
		return 0;
	}

	/* a stream over decoded (or remote) chunks reads ahead and drops
	 * behind (chunk_stream.c); a local FILE's plain chunks are spliced
	 * and the kernel's page cache reads ahead */
	if (d->cidx && (d->cidx->filtered || h5_file_fd(d->f) < 0 || (b->flags & H5_MAP_NO_SPLICE)))
		stream = h5_chunk_stream_note(d, b->off, b->len);
	return chunk_walk(d, NULL, b->off, b->len, b, stream);
}
