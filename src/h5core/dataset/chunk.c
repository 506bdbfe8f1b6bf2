/*
 * chunk.c - chunked datasets: the chunk indexes and reading byte windows.
 *
 * Indexes (spec VII "Appendix C", IV.A.2.i layout message):
 *  - v1 B-tree (III.A.1, node type 1): layout v1-v3;
 *  - single chunk, implicit (address arithmetic), fixed array (farray.c),
 *    extensible array (earray.c) and v2 B-tree (III.A.2, record types
 *    10/11): layout v4.
 * The array indexes address chunks by a linear index over the chunk grid of
 * the *maximum* dimensions (libhdf5 max_down_chunks); for the extensible
 * array the unlimited dimension is moved to the front first
 * (H5VM_swizzle_coords), so growing it appends.
 *
 * A read maps its byte window onto the C-order element stream, splits that
 * into at most 2*rank-1 boxes, and visits each (box, chunk) pair: filtered
 * chunks are decoded once into f->chunks (keyed by chunk address; the
 * cache's load-once semantics make concurrent readers share a decode),
 * unfiltered chunks are read straight from the file (the page cache keeps
 * them; copying them into our cache too would only double the memory), and
 * chunks never written read as the fill value. When a read spans several
 * filtered chunks they are processed by up to f->nthreads threads.
 */
#include "internal.h"
#include "cidx.h"

#include <stdio.h>

#define CHUNK_MAX_BYTES UINT32_MAX          /* libhdf5 refuses chunks of 4 GiB or more */
#define CHUNK_BATCH 1024                    /* (box, chunk) pairs per scheduling round */
#define CHUNK_SPAN_MAX ((uint64_t)1 << 20)  /* read a chunk's whole touched span up to this */
#define CHUNK_MAX_BOXES (2 * H5_MAX_RANK)
#define CHUNK_PASSED_MAX 64                 /* chunks one read notes for drop-behind */

/* ---- opening ----------------------------------------------------------------- */

int h5_chunk_index_open(h5_chunk_index **out, h5_dataset *d)
{
	const h5_layout *l = &d->layout;
	h5_chunk_index *ci;
	uint64_t cb;
	int unlim = -1, nunlim = 0;
	int rc = 0;

	*out = NULL;
	if (l->cls != H5_LAYOUT_CHUNKED || l->ndims == 0 || l->ndims > H5_MAX_RANK || l->ndims != d->space.rank)
		return h5_err_set(H5_ERR_FORMAT, "chunked layout of rank %u for a dataspace of rank %u", l->ndims,
				  d->space.rank);
	if (!d->dtype || d->dtype->size == 0)
		return h5_err_set(H5_ERR_FORMAT, "chunked dataset with a zero-size datatype");
	ci = calloc(1, sizeof(*ci));
	if (!ci)
		return h5_err_set(H5_ERR_NOMEM, "out of memory opening chunk index");
	if (pthread_mutex_init(&ci->stream_lock, NULL) != 0) {
		free(ci);
		return h5_err_set(H5_ERR_NOMEM, "cannot create a chunk index mutex");
	}
	ci->d = d;
	ci->f = d->f;
	ci->type = l->idx_type;
	ci->rank = l->ndims;
	ci->esize = d->dtype->size;
	ci->filtered = d->pline.n > 0;
	ci->bt1_elem = l->chunk_elem_size ? l->chunk_elem_size : ci->esize;
	cb = ci->esize;
	for (unsigned i = 0; i < ci->rank; i++) {
		uint64_t dim = d->space.dims[i], max = d->space.maxdims[i], c = l->chunk[i];

		if (c == 0) {
			rc = h5_err_set(H5_ERR_FORMAT, "chunk dimension %u is 0", i);
			goto out;
		}
		if (h5_mul_overflow(cb, c, &cb) || cb > CHUNK_MAX_BYTES) {
			rc = h5_err_set(H5_ERR_FORMAT, "chunk of more than %llu bytes", (unsigned long long)CHUNK_MAX_BYTES);
			goto out;
		}
		if (max != H5_UNLIMITED && dim > max) {
			rc = h5_err_set(H5_ERR_FORMAT, "dimension %u: size %llu exceeds maximum %llu", i,
					(unsigned long long)dim, (unsigned long long)max);
			goto out;
		}
		ci->chunk[i] = c;
		ci->dims[i] = dim;
		ci->nchunks[i] = dim / c + (dim % c != 0);
		if (max == H5_UNLIMITED) {
			ci->max_chunks[i] = H5_UNLIMITED;
			unlim = (int)i;
			nunlim++;
		} else {
			ci->max_chunks[i] = max / c + (max % c != 0);
		}
	}
	ci->chunk_bytes = cb;
	ci->drop_keep = h5_chunk_stream_keep(ci);

	ci->ops = h5_cidx_ops_of(ci->type);
	if (!ci->ops) {
		rc = h5_err_set(H5_ERR_FORMAT, "unknown chunk index type %u", ci->type);
		goto out;
	}
	rc = ci->ops->open(ci, nunlim, unlim);
out:
	if (rc < 0) {
		h5_chunk_index_close(ci);
		return rc;
	}
	*out = ci;
	return 0;
}

void h5_chunk_index_close(h5_chunk_index *ci)
{
	if (!ci)
		return;
	h5_chunk_stream_forget(ci);
	if (ci->ops && ci->ops->close)
		ci->ops->close(ci);
	pthread_mutex_destroy(&ci->stream_lock);
	free(ci);
}

/* ---- lookup -------------------------------------------------------------------- */

int h5_chunk_lookup(h5_chunk_rec *out, h5_chunk_index *ci, const uint64_t *scaled)
{
	const h5_layout *l = &ci->d->layout;
	int rc = 0;

	out->addr = H5_ADDR_UNDEF;
	out->size = 0;
	out->filter_mask = 0;
	for (unsigned i = 0; i < ci->rank; i++)
		if (ci->max_chunks[i] != H5_UNLIMITED && scaled[i] >= ci->max_chunks[i])
			return h5_err_set(H5_ERR_INVAL, "chunk coordinate %llu of dimension %u is beyond %llu chunks",
					  (unsigned long long)scaled[i], i, (unsigned long long)ci->max_chunks[i]);
	if (!h5_addr_defined(l->idx_addr))
		return 0;
	rc = ci->ops->lookup(out, ci, scaled);
	if (rc < 0)
		return rc;
	if (h5_addr_defined(out->addr) && !ci->filtered)
		out->size = ci->chunk_bytes;
	return 0;
}

/* ---- allocated bytes ------------------------------------------------------------ */

int h5_chunk_allocated(uint64_t *out, h5_chunk_index *ci)
{
	*out = 0;
	if (!h5_addr_defined(ci->d->layout.idx_addr))
		return 0;
	return ci->ops->allocated(out, ci);
}

/* ---- decoded chunks (f->chunks) ------------------------------------------------- */

typedef struct chunk_data {
	uint64_t owner;         /* object header of the dataset that decoded it */
	uint64_t nbytes;
	uint8_t *data;
} chunk_data;

struct chunk_load {
	const h5_chunk_index *ci;
	const h5_chunk_rec *rec;
};

static void chunk_data_free(void *obj)
{
	chunk_data *cd = obj;

	if (cd) {
		h5_buf_free(cd->data);
		free(cd);
	}
}

static int chunk_data_load(void **obj, size_t *cost, void *ud)
{
	struct chunk_load *l = ud;
	const h5_chunk_index *ci = l->ci;
	uint8_t *buf = NULL;
	size_t len;
	chunk_data *cd;
	int rc;

	if (l->rec->size == 0 || l->rec->size > SIZE_MAX)
		return h5_err_set(H5_ERR_FORMAT, "filtered chunk at 0x%llx has size %llu",
				  (unsigned long long)l->rec->addr, (unsigned long long)l->rec->size);
	len = (size_t)l->rec->size;
	rc = h5_file_read_buf(&buf, ci->f, l->rec->addr, len);
	if (rc < 0)
		return rc;
	rc = h5_filter_decode(&buf, &len, &ci->d->pline, l->rec->filter_mask, ci->d->dtype,
			      (size_t)ci->chunk_bytes);
	if (rc < 0) {
		h5_buf_free(buf);
		return h5_err_wrap(rc, "chunk at 0x%llx: ", (unsigned long long)l->rec->addr);
	}
	cd = malloc(sizeof(*cd));
	if (!cd) {
		h5_buf_free(buf);
		return h5_err_set(H5_ERR_NOMEM, "out of memory caching a chunk");
	}
	cd->owner = ci->d->addr;
	cd->nbytes = len;
	cd->data = buf;
	*obj = cd;
	*cost = sizeof(*cd) + len;
	return 0;
}

/* libhdf5 stores partial edge chunks unfiltered when the layout asks for
 * it (H5D__chunk_is_partial_edge_chunk). */
static bool chunk_is_filtered(const h5_chunk_index *ci, const uint64_t *scaled)
{
	if (!ci->filtered)
		return false;
	/* scaled[i] * chunk[i] < dims[i] for chunks of the dataset */
	if (ci->d->layout.flags & H5_LAYOUT_FLAG_NO_FILTER_EDGE)
		for (unsigned i = 0; i < ci->rank; i++)
			if (ci->chunk[i] > ci->dims[i] - scaled[i] * ci->chunk[i])
				return false;
	return true;
}

int h5_chunk_decode(h5_chunk_index *ci, const uint64_t *scaled)
{
	h5_chunk_rec rec;
	struct chunk_load l = { ci, &rec };
	h5_cache_ref ref;
	int rc;

	rc = h5_chunk_lookup(&rec, ci, scaled);
	if (rc < 0 || !h5_addr_defined(rec.addr) || !chunk_is_filtered(ci, scaled))
		return rc;
	rc = h5_cache_get(&ref, ci->f->chunks, H5_CK_CHUNK, rec.addr, chunk_data_load, chunk_data_free, &l);
	if (rc == 0)
		h5_cache_release(ci->f->chunks, &ref);
	return rc;
}

/* ---- reading ----------------------------------------------------------------------- */

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
	struct ext_sink *ext;           /* h5_chunk_extents: map instead of reading */
	struct pin_sink *pin;           /* h5_chunk_pin: hold chunks instead of copying */
	bool stream;                    /* a sequential read: note chunks read to their end */
	uint64_t passed[CHUNK_PASSED_MAX]; /* their addresses (under lock) */
	unsigned npassed;
} read_ctx;

/* Where the pieces of the window are in FILE (h5_chunk_extents). */
struct ext_sink {
	h5_extent *out;
	uint64_t *ds;                   /* dataset offset of each piece */
	size_t max, n;
};

/* Where the pieces of the window are in decoded chunks (h5_chunk_pin);
 * filled under read_ctx.lock. */
struct pin_sink {
	h5_pin *out;
	uint64_t ds[H5_PIN_MAX];        /* dataset offset of each piece */
};

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

static int row_extent(void *ud, uint64_t ds_off, uint64_t ck_off, size_t n)
{
	struct row_file *rf = ud;
	struct ext_sink *e = rf->x->ext;

	if (e->n == e->max)
		return h5_err_set(H5_ERR_LIMIT, "the window spans more than %zu pieces of the file", e->max);
	e->ds[e->n] = ds_off;
	/* inside the file: read_direct's range check passed (map_direct) */
	e->out[e->n].file_off = rf->x->ci->f->base + rf->addr + ck_off;
	e->out[e->n].len = n;
	e->out[e->n].fd = h5_file_fd(rf->x->ci->f);
	e->n++;
	return 0;
}

/* h5_chunk_extents: the runs of an allocated, unfiltered chunk, as file
 * extents; anything else cannot be served from FILE's bytes. */
static int map_direct(const read_ctx *x, const h5_chunk_rec *rec, const uint64_t *scaled, const uint64_t *ilo,
		      const uint64_t *ihi, const uint64_t *base)
{
	struct row_file rf = { x, rec->addr };

	if (!h5_addr_defined(rec->addr) || chunk_is_filtered(x->ci, scaled))
		return h5_err_set(H5_ERR_UNSUPPORTED, "part of the window is not stored as plain bytes");
	if (!h5_file_range_ok(x->ci->f, rec->addr, x->ci->chunk_bytes))
		return h5_err_set(H5_ERR_FORMAT, "chunk at 0x%llx+%llu lies outside the file",
				  (unsigned long long)rec->addr, (unsigned long long)x->ci->chunk_bytes);
	return rows_each(x, ilo, ihi, base, row_extent, &rf);
}

/* The decoded chunk rec in the cache (decoded now if missing), held. */
static int chunk_get(h5_cache_ref *ref, h5_chunk_index *ci, const h5_chunk_rec *rec)
{
	struct chunk_load l = { ci, rec };
	const chunk_data *cd;
	int rc;

	rc = h5_cache_get(ref, ci->f->chunks, H5_CK_CHUNK, rec->addr, chunk_data_load, chunk_data_free, &l);
	if (rc < 0)
		return rc;
	cd = ref->obj;
	/* Keyed by address alone: bytes decoded for another dataset (a hostile
	 * file sharing chunks) must not be read with this one's geometry. */
	if (cd->owner != ci->d->addr || cd->nbytes != ci->chunk_bytes) {
		h5_cache_release(ci->f->chunks, ref);
		return h5_err_set(H5_ERR_FORMAT, "chunk at 0x%llx is shared with another dataset",
				  (unsigned long long)rec->addr);
	}
	return 0;
}

static int read_filtered(const read_ctx *x, const h5_chunk_rec *rec, const uint64_t *ilo, const uint64_t *ihi,
			 const uint64_t *base)
{
	h5_chunk_index *ci = x->ci;
	struct row_mem m = { x, NULL, 0 };
	h5_cache_ref ref;
	int rc;

	rc = chunk_get(&ref, ci, rec);
	if (rc < 0)
		return rc;
	m.src = ((const chunk_data *)ref.obj)->data;
	rc = rows_each(x, ilo, ihi, base, row_copy, &m);
	h5_cache_release(ci->f->chunks, &ref);
	return rc;
}

static int row_pin(void *ud, uint64_t ds_off, uint64_t ck_off, size_t n)
{
	struct row_mem *m = ud;
	struct pin_sink *s = m->x->pin;
	h5_pin *p = s->out;

	if (p->niov == H5_PIN_MAX)
		return h5_err_set(H5_ERR_LIMIT, "the window spans more than %d pieces of chunks", H5_PIN_MAX);
	s->ds[p->niov] = ds_off;
	p->iov[p->niov].iov_base = (void *)(uintptr_t)(m->src + ck_off);
	p->iov[p->niov].iov_len = n;
	p->niov++;
	return 0;
}

/* h5_chunk_pin: hold the decoded chunk and note where its rows are. */
static int pin_filtered(read_ctx *x, const h5_chunk_rec *rec, const uint64_t *scaled, const uint64_t *ilo,
			const uint64_t *ihi, const uint64_t *base)
{
	h5_chunk_index *ci = x->ci;
	struct row_mem m = { x, NULL, 0 };
	h5_pin *p = x->pin->out;
	h5_cache_ref ref;
	int rc;

	if (!h5_addr_defined(rec->addr) || !chunk_is_filtered(ci, scaled))
		return h5_err_set(H5_ERR_UNSUPPORTED, "part of the window is not a decoded chunk");
	rc = chunk_get(&ref, ci, rec);
	if (rc < 0)
		return rc;
	m.src = ((const chunk_data *)ref.obj)->data;
	pthread_mutex_lock(&x->lock);
	if (p->nheld == 2 * H5_PIN_MAX) {
		rc = h5_err_set(H5_ERR_LIMIT, "the window spans more than %d chunks", H5_PIN_MAX);
	} else {
		/* held from here: h5_chunk_pin releases it on failure too */
		p->held[p->nheld++] = ref.obj;
		p->held[p->nheld++] = ref.ent;
		ref.ent = NULL;
		rc = rows_each(x, ilo, ihi, base, row_pin, &m);
	}
	pthread_mutex_unlock(&x->lock);
	if (ref.ent)
		h5_cache_release(ci->f->chunks, &ref);
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
	if (x->ext)
		return map_direct(x, &rec, scaled, ilo, ihi, base);
	if (x->pin)
		rc = pin_filtered(x, &rec, scaled, ilo, ihi, base);
	else if (!h5_addr_defined(rec.addr))
		return rows_each(x, ilo, ihi, base, row_fill, x);
	else if (chunk_is_filtered(ci, scaled))
		rc = read_filtered(x, &rec, ilo, ihi, base);
	else
		return read_direct(x, &rec, ilo, ihi, base);
	if (rc == 0 && x->stream)
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

static void *worker(void *arg)
{
	read_ctx *x = arg;

	for (;;) {
		size_t t = __atomic_fetch_add(&x->next, 1, __ATOMIC_ACQ_REL);
		int rc;

		if (t >= x->ntasks || __atomic_load_n(&x->err, __ATOMIC_ACQUIRE))
			break;
		rc = run_task(x, t);
		if (rc < 0)
			record_error(x, rc);
	}
	return NULL;
}

/* Run the batch; with filtered chunks, on up to f->nthreads threads (the
 * caller's included). */
static int run_batch(read_ctx *x)
{
	h5_chunk_index *ci = x->ci;
	unsigned nthreads = 1;
	pthread_t tid[64];
	unsigned started = 0;

	x->next = 0;
	if (ci->filtered && x->ntasks >= 2 && ci->f->nthreads > 1) {
		nthreads = ci->f->nthreads;
		if (nthreads > 64)
			nthreads = 64;
		if (nthreads > x->ntasks)
			nthreads = (unsigned)x->ntasks;
	}
	for (unsigned i = 1; i < nthreads; i++) {
		if (pthread_create(&tid[started], NULL, worker, x) != 0)
			break; /* fewer helpers: the caller still does all the work */
		started++;
	}
	worker(x);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	if (x->err)
		return h5_err_set(x->err, "%s", x->msg);
	return 0;
}

/* Visit every (box, chunk) pair of [off, off+len): read into buf, or with
 * ext, collect where the bytes lie in FILE, or with pin, hold the decoded
 * chunks and collect where the bytes lie in them. */
static int chunk_walk(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len, struct ext_sink *ext,
		      struct pin_sink *pin, bool stream)
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
	x->ext = ext;
	x->pin = pin;
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
	while (more && rc == 0) {
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

	return chunk_walk(d, buf, off, len, NULL, NULL, stream);
}

void h5_pin_release(h5_pin *p)
{
	for (size_t i = 0; i + 1 < p->nheld; i += 2) {
		h5_cache_ref ref = { p->held[i], p->held[i + 1] };

		h5_cache_release(p->cache, &ref);
	}
	for (size_t i = 0; i < p->nsrc_held; i++) {
		h5_source *src = p->src;

		src->ops->unpin(src, p->src_held[i]);
	}
	p->nheld = 0;
	p->nsrc_held = 0;
	p->niov = 0;
}

int h5_chunk_pin(h5_pin *out, h5_dataset *d, uint64_t off, size_t len)
{
	struct pin_sink *s;
	uint64_t pos = off;
	size_t k = 0;
	int rc;

	out->niov = 0;
	out->nheld = 0;
	out->nsrc_held = 0;
	out->cache = d->f->chunks;
	if (!d->cidx || !d->cidx->filtered)
		return h5_err_set(H5_ERR_UNSUPPORTED, "unfiltered chunks are read from FILE");
	if (len == 0)
		return 0;
	s = malloc(sizeof(*s));
	if (!s)
		return h5_err_set(H5_ERR_NOMEM, "out of memory pinning a window");
	s->out = out;
	rc = chunk_walk(d, NULL, off, len, NULL, s, h5_chunk_stream_note(d, off, len));
	if (rc < 0)
		goto out;
	/* chunk order is not the stream's order when the window spans several
	 * chunks of a row: sort by dataset offset (few pieces, mostly sorted) */
	for (size_t i = 1; i < out->niov; i++) {
		uint64_t dk = s->ds[i];
		struct iovec vk = out->iov[i];
		size_t j = i;

		for (; j > 0 && s->ds[j - 1] > dk; j--) {
			s->ds[j] = s->ds[j - 1];
			out->iov[j] = out->iov[j - 1];
		}
		s->ds[j] = dk;
		out->iov[j] = vk;
	}
	/* the pieces must tile the window exactly; merge neighbours that are
	 * neighbours in memory too */
	for (size_t i = 0; i < out->niov; i++) {
		const uint8_t *b = out->iov[i].iov_base;

		if (s->ds[i] != pos) {
			rc = h5_err_set(H5_ERR_FORMAT, "chunk map of [%llu, +%zu) has a gap or overlap at %llu",
					(unsigned long long)off, len, (unsigned long long)pos);
			goto out;
		}
		pos += out->iov[i].iov_len;
		if (k > 0 && (const uint8_t *)out->iov[k - 1].iov_base + out->iov[k - 1].iov_len == b)
			out->iov[k - 1].iov_len += out->iov[i].iov_len;
		else
			out->iov[k++] = out->iov[i];
	}
	if (pos != off + len) {
		rc = h5_err_set(H5_ERR_FORMAT, "chunk map of [%llu, +%zu) ends at %llu", (unsigned long long)off, len,
				(unsigned long long)pos);
		goto out;
	}
	out->niov = k;
out:
	if (rc < 0)
		h5_pin_release(out);
	free(s);
	return rc;
}

int h5_chunk_extents(h5_extent *out, size_t max, size_t *n, h5_dataset *d, uint64_t off, size_t len)
{
	struct ext_sink e = { out, NULL, max, 0 };
	uint64_t pos = off;
	size_t k = 0;
	int rc;

	*n = 0;
	if (!d->cidx || d->cidx->filtered)
		return h5_err_set(H5_ERR_UNSUPPORTED, "filtered chunks are not stored as plain bytes");
	if (len == 0)
		return 0;
	if (max == 0)
		return h5_err_set(H5_ERR_LIMIT, "no room for a piece");
	e.ds = malloc(sizeof(*e.ds) * max);
	if (!e.ds)
		return h5_err_set(H5_ERR_NOMEM, "out of memory mapping a window");
	rc = chunk_walk(d, NULL, off, len, &e, NULL, false);
	if (rc < 0)
		goto out;
	/* Chunks are visited in chunk order, which is not the stream's order
	 * when the window spans several chunks of a row: sort by dataset
	 * offset (few pieces, mostly in order already). */
	for (size_t i = 1; i < e.n; i++) {
		uint64_t dk = e.ds[i];
		h5_extent ek = e.out[i];
		size_t j = i;

		for (; j > 0 && e.ds[j - 1] > dk; j--) {
			e.ds[j] = e.ds[j - 1];
			e.out[j] = e.out[j - 1];
		}
		e.ds[j] = dk;
		e.out[j] = ek;
	}
	/* The pieces must tile the window exactly; merge neighbours that are
	 * neighbours in FILE too. */
	for (size_t i = 0; i < e.n; i++) {
		if (e.ds[i] != pos) {
			rc = h5_err_set(H5_ERR_FORMAT, "chunk map of [%llu, +%zu) has a gap or overlap at %llu",
					(unsigned long long)off, len, (unsigned long long)pos);
			goto out;
		}
		pos += e.out[i].len;
		if (k > 0 && out[k - 1].file_off + out[k - 1].len == e.out[i].file_off)
			out[k - 1].len += e.out[i].len;
		else
			out[k++] = e.out[i];
	}
	if (pos != off + len) {
		rc = h5_err_set(H5_ERR_FORMAT, "chunk map of [%llu, +%zu) ends at %llu", (unsigned long long)off, len,
				(unsigned long long)pos);
		goto out;
	}
	*n = k;
out:
	free(e.ds);
	return rc;
}
