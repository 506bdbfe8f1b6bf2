/*
 * append.c - growing a chunked dataset along dimension 0 (`cat >>`).
 *
 * A dataset can grow this way when it is chunked with an extensible array
 * index (layout v4, spec IV.A.2.i; VII.D) and dimension 0 is its one
 * unlimited dimension: a row (one index of dimension 0) is then
 * prod(dims[1:]) elements, and appending rows means writing the chunk rows
 * they fall into, setting their array elements, and raising dims[0] in the
 * dataspace message (IV.A.2.b).
 *
 * Bytes arrive in any sizes; they are buffered until a batch of complete
 * rows is worth applying (or the file is flushed). One application
 * ("apply") is crash-safe by ordering alone (doc/APPEND.md):
 *   1. new chunks (including a rewritten copy of a partly filled last
 *      chunk) and new copies of every changed EA block, all beyond the end
 *      of allocated space; fsync;
 *   2. the superblock's end-of-file address; fsync;
 *   3. the switch: the EA header in place (or, for a dataset that never had
 *      an index, the layout message's index address); fsync;
 *   4. the modification time, then dims[0] LAST; fsync.
 * Until 4, readers see the old dims[0], and everything the old dims cover
 * reads the same bytes through either the old or the new index.
 */
#include "internal.h"

#include <stdio.h>
#include <time.h>

/* Complete rows are applied once this much is buffered (or at flush); at
 * least one chunk row, so that a steady stream does not rewrite the same
 * partial chunk again and again. */
#define APPEND_BATCH_MIN ((uint64_t)1 << 20)
#define APPEND_BATCH_MAX ((uint64_t)64 << 20)
/* Chunk images are collected up to this size before one pwrite. */
#define APPEND_WBUF ((size_t)1 << 20)

struct h5_appender {
	h5_file *f;
	uint64_t addr;          /* dataset object header */
	uint64_t row_bytes;     /* bytes of one row */
	uint64_t batch;         /* apply when this many complete-row bytes wait */
	uint64_t committed;     /* dataset bytes as of the last apply (or open) */
	uint8_t *buf;           /* bytes received and not applied */
	size_t len, cap;
	int failed;             /* sticky error after a failed apply */
};

/* ---- what can grow ------------------------------------------------------------ */

static int check_layout(const h5_dataset *d, uint64_t *row_bytes)
{
	const h5_layout *l = &d->layout;
	uint64_t rb;

	if (l->cls != H5_LAYOUT_CHUNKED)
		return h5_err_set(H5_ERR_PERM, "not chunked (layout class %u): cannot grow", l->cls);
	if (l->idx_type != H5_CIDX_EARRAY || l->version < 4)
		return h5_err_set(H5_ERR_PERM, "chunk index type %u is not an extensible array: cannot grow",
				  l->idx_type);
	if (d->space.type != H5_SPACE_SIMPLE || d->space.rank == 0 || d->space.rank != l->ndims)
		return h5_err_set(H5_ERR_PERM, "dataspace is not simple: cannot grow");
	if (d->space.maxdims[0] != H5_UNLIMITED)
		return h5_err_set(H5_ERR_PERM, "dimension 0 is not unlimited: cannot grow");
	for (unsigned i = 1; i < d->space.rank; i++)
		if (d->space.maxdims[i] == H5_UNLIMITED)
			return h5_err_set(H5_ERR_PERM, "dimension %u is unlimited too: cannot grow", i);
	if (d->has_vlen || !d->dtype || d->dtype->size == 0)
		return h5_err_set(H5_ERR_PERM, "variable-length datatype: cannot append raw rows");
	rb = d->dtype->size;
	for (unsigned i = 1; i < d->space.rank; i++)
		if (h5_mul_overflow(rb, d->space.dims[i], &rb))
			return h5_err_set(H5_ERR_PERM, "row size overflows");
	if (rb == 0 || rb > (uint64_t)1 << 40)
		return h5_err_set(H5_ERR_PERM, "rows of %llu bytes cannot be appended", (unsigned long long)rb);
	*row_bytes = rb;
	return 0;
}

static int check_filters(const h5_dataset *d)
{
	for (size_t i = 0; i < d->pline.n; i++) {
		uint16_t id = d->pline.filters[i].id;

		if ((id != H5_FILTER_DEFLATE && id != H5_FILTER_SHUFFLE && id != H5_FILTER_FLETCHER32) ||
		    !h5_filter_can_encode(id))
			return h5_err_set(H5_ERR_PERM, "filter %s (%u) cannot be written: cannot grow",
					  h5_filter_name(id), id);
	}
	/* Whether a chunk is filtered would then depend on dims[0], which
	 * changes last: the in-between state would be misread. */
	if (d->pline.n && (d->layout.flags & H5_LAYOUT_FLAG_NO_FILTER_EDGE))
		return h5_err_set(H5_ERR_PERM, "partial edge chunks are stored unfiltered: cannot grow");
	return 0;
}

int h5_append_check(const h5_dataset *d)
{
	uint64_t rb;
	int rc = check_layout(d, &rb);

	return rc < 0 ? rc : check_filters(d);
}

/* ---- object header edits ---------------------------------------------------------
 * A private copy of the header (h5_ohdr_load) is patched; each changed chunk
 * is written back with one pwrite of [first changed byte, end of chunk), so
 * a v2 chunk's checksum lands in the same write as the bytes it covers. */

typedef struct oh_edit {
	h5_ohdr *oh;
	size_t *lo;             /* per chunk: first changed byte, or SIZE_MAX */
	size_t *hi;
} oh_edit;

static int oh_patch(oh_edit *e, uint64_t addr, const void *bytes, size_t n)
{
	for (size_t c = 0; c < e->oh->nchunks; c++) {
		h5_ohdr_chunk *ch = &e->oh->chunks[c];
		uint64_t off;

		if (addr < ch->addr || addr - ch->addr > ch->len || ch->len - (addr - ch->addr) < n)
			continue;
		off = addr - ch->addr;
		memcpy(ch->buf + off, bytes, n);
		if ((size_t)off < e->lo[c])
			e->lo[c] = (size_t)off;
		if ((size_t)off + n > e->hi[c])
			e->hi[c] = (size_t)off + n;
		return 0;
	}
	return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: address 0x%llx is in none of its chunks",
			  (unsigned long long)e->oh->addr, (unsigned long long)addr);
}

static int oh_write_chunk(h5_file *f, oh_edit *e, size_t c)
{
	h5_ohdr_chunk *ch = &e->oh->chunks[c];
	size_t end = e->hi[c];
	int rc;

	if (e->lo[c] == SIZE_MAX)
		return 0;
	if (e->oh->version >= 2) {
		h5_le_encode(ch->buf + ch->len - 4, h5_checksum_metadata(ch->buf, ch->len - 4), 4);
		end = ch->len;
	}
	rc = h5_file_write(f, ch->addr + e->lo[c], ch->buf + e->lo[c], end - e->lo[c]);
	e->lo[c] = SIZE_MAX;
	e->hi[c] = 0;
	return rc;
}

static size_t oh_chunk_of(const h5_ohdr *oh, uint64_t addr)
{
	for (size_t c = 0; c < oh->nchunks; c++)
		if (addr >= oh->chunks[c].addr && addr - oh->chunks[c].addr < oh->chunks[c].len)
			return c;
	return SIZE_MAX;
}

/* Set the modification time everywhere the header records one: the
 * modification time messages (IV.A.2.r, IV.A.2.o) and the v2 prefix
 * (whose change time libhdf5's H5O_touch also updates). */
static int oh_touch(oh_edit *e, uint32_t now)
{
	h5_ohdr *oh = e->oh;
	uint8_t v[16];
	int rc = 0;

	for (size_t i = 0; i < oh->nmsgs && rc == 0; i++) {
		const h5_msg *m = &oh->msgs[i];

		if (m->flags & H5_MSG_FLAG_SHARED)
			continue;
		if (m->type == H5_MSG_MTIME && m->size >= 8 && m->data[0] == 1) {
			h5_le_encode(v, now, 4);
			rc = oh_patch(e, m->addr + 4, v, 4);
		} else if (m->type == H5_MSG_MTIME_OLD && m->size >= 14) {
			time_t t = (time_t)now;
			struct tm tm;
			char s[32];

			if (!gmtime_r(&t, &tm))
				continue;
			snprintf(s, sizeof(s), "%04d%02d%02d%02d%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1,
				 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
			rc = oh_patch(e, m->addr, s, 14);
		}
	}
	if (rc == 0 && oh->version >= 2 && oh->has_times) {
		/* "OHDR", version, flags, then access, modification, change, birth */
		h5_le_encode(v, now, 4);
		h5_le_encode(v + 4, now, 4);
		rc = oh_patch(e, oh->addr + 10, v, 8);
	}
	return rc;
}

/* The dataspace and layout messages must be unshared and stored in this
 * header, because they are rewritten in place. */
static int find_msgs(const h5_msg **ds, const h5_msg **lay, const h5_ohdr *oh)
{
	*ds = h5_ohdr_find(oh, H5_MSG_DSPACE);
	*lay = h5_ohdr_find(oh, H5_MSG_LAYOUT);
	if (!*ds || !*lay)
		return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: no dataspace or layout message",
				  (unsigned long long)oh->addr);
	if (((*ds)->flags | (*lay)->flags) & H5_MSG_FLAG_SHARED)
		return h5_err_set(H5_ERR_PERM, "object header 0x%llx: shared dataspace or layout message: cannot grow",
				  (unsigned long long)oh->addr);
	if ((*ds)->size < 4 || ((*ds)->data[0] != 1 && (*ds)->data[0] != 2))
		return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: bad dataspace message",
				  (unsigned long long)oh->addr);
	return 0;
}

/* ---- open / write / flush / close ------------------------------------------------ */

int h5_append_open(h5_appender **out, h5_file *f, uint64_t dset_addr)
{
	h5_dataset *d = NULL;
	h5_ohdr *oh = NULL;
	const h5_msg *ds, *lay;
	h5_appender *a = NULL;
	uint64_t rb = 0;
	int rc;

	*out = NULL;
	if (!f->writable)
		return h5_err_set(H5_ERR_ROFS, "%s is open read-only", f->path);
	rc = h5_dataset_open(&d, f, dset_addr);
	if (rc < 0)
		return rc;
	rc = check_layout(d, &rb);
	if (rc == 0)
		rc = check_filters(d);
	if (rc == 0)
		rc = h5_ohdr_get(&oh, f, dset_addr);
	if (rc == 0)
		rc = find_msgs(&ds, &lay, oh);
	if (rc < 0)
		goto out;
	a = calloc(1, sizeof(*a));
	if (!a) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory opening an appender");
		goto out;
	}
	a->f = f;
	a->addr = dset_addr;
	a->row_bytes = rb;
	a->committed = h5_dataset_size(d);
	/* at least one chunk row per apply, within [BATCH_MIN, BATCH_MAX] */
	a->batch = d->layout.chunk[0] <= APPEND_BATCH_MAX / rb ? d->layout.chunk[0] * rb : APPEND_BATCH_MAX;
	if (a->batch < APPEND_BATCH_MIN)
		a->batch = APPEND_BATCH_MIN;
	*out = a;
out:
	if (oh)
		h5_ohdr_release(f, oh);
	h5_dataset_close(d);
	if (rc < 0)
		h5_err_wrap(rc, "dataset at 0x%llx: ", (unsigned long long)dset_addr);
	return rc;
}

uint64_t h5_append_size(const h5_appender *a) { return a->committed + a->len; }
uint64_t h5_append_committed(const h5_appender *a) { return a->committed; }
size_t h5_append_pending(const h5_appender *a) { return a->len; }
uint64_t h5_append_row_bytes(const h5_appender *a) { return a->row_bytes; }

/* ---- applying rows --------------------------------------------------------------- */

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

typedef struct apply_ctx {
	h5_appender *a;
	h5_file *f;
	h5_dataset *d;
	unsigned rank;
	uint64_t esize;
	uint64_t n0, n1;                    /* rows before / after */
	uint64_t dims[H5_MAX_RANK];         /* new dims */
	uint64_t chunk[H5_MAX_RANK];
	uint64_t nch[H5_MAX_RANK];          /* chunks per dimension over the new dims */
	uint64_t down[H5_MAX_RANK];         /* EA linearisation over max dims (chunk.c set_down) */
	const uint8_t *old_rows;            /* rows [old_first, n0) of the first chunk row */
	uint64_t old_first;
	const uint8_t *new_rows;            /* rows [n0, n1) */
	h5_ea_writer *ea;
	wbuf wb;
	uint64_t eoa;
	uint64_t *old_chunks;               /* replaced chunk addresses (cache invalidation) */
	size_t nold, old_cap;
} apply_ctx;

static const uint8_t *row_ptr(const apply_ctx *x, uint64_t row)
{
	if (row < x->n0)
		return x->old_rows + (row - x->old_first) * x->a->row_bytes;
	return x->new_rows + (row - x->n0) * x->a->row_bytes;
}

/* Copy the part of rows [lo, hi) that chunk (r, j[1..]) covers into cbuf,
 * which holds fill already. Walks the chunk's box in dims 1..rank-1 as
 * runs along the last dimension. */
static void chunk_gather(const apply_ctx *x, uint8_t *cbuf, uint64_t r, const uint64_t *j, uint64_t lo, uint64_t hi)
{
	unsigned k = x->rank;
	uint64_t ext[H5_MAX_RANK], idx[H5_MAX_RANK], cstride[H5_MAX_RANK], dstride[H5_MAX_RANK];
	uint64_t run;

	/* strides in elements: within the chunk and within one dataset row */
	cstride[k - 1] = 1;
	dstride[k - 1] = 1;
	for (unsigned i = k - 1; i-- > 0;) {
		cstride[i] = cstride[i + 1] * x->chunk[i + 1];
		dstride[i] = i == 0 ? 0 : dstride[i + 1] * x->dims[i + 1];
	}
	for (unsigned i = 1; i < k; i++) {
		uint64_t start = j[i] * x->chunk[i];

		ext[i] = x->dims[i] - start < x->chunk[i] ? x->dims[i] - start : x->chunk[i];
	}
	run = (k == 1 ? 1 : ext[k - 1]) * x->esize;
	for (uint64_t row = lo; row < hi; row++) {
		const uint8_t *src = row_ptr(x, row);
		uint8_t *dst = cbuf + (row - r * x->chunk[0]) * cstride[0] * x->esize;

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
				so += (j[i] * x->chunk[i] + idx[i]) * dstride[i];
				co += idx[i] * cstride[i];
			}
			memcpy(dst + co * x->esize, src + so * x->esize, (size_t)run);
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

static int note_old_chunk(apply_ctx *x, uint64_t addr)
{
	if (x->nold == x->old_cap) {
		size_t ncap = x->old_cap ? x->old_cap * 2 : 16;
		uint64_t *n = realloc(x->old_chunks, ncap * sizeof(*n));

		if (!n)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		x->old_chunks = n;
		x->old_cap = ncap;
	}
	x->old_chunks[x->nold++] = addr;
	return 0;
}

/* Build, filter and place one chunk, then point its array element at it. */
static int write_chunk(apply_ctx *x, uint64_t r, const uint64_t *j)
{
	h5_dataset *d = x->d;
	uint64_t scaled[H5_MAX_RANK], idx = 0, lo = r * x->chunk[0], hi = lo + x->chunk[0];
	size_t len = (size_t)d->chunk_bytes;
	uint8_t *cbuf;
	h5_chunk_rec rec = { H5_ADDR_UNDEF, 0, 0 };
	int rc;

	if (lo < x->n0) {
		/* the partly filled last chunk: its new copy replaces it */
		h5_chunk_rec old;

		scaled[0] = r;
		for (unsigned i = 1; i < x->rank; i++)
			scaled[i] = j[i];
		rc = h5_chunk_lookup(&old, d->cidx, scaled);
		if (rc < 0)
			return rc;
		if (h5_addr_defined(old.addr) && (rc = note_old_chunk(x, old.addr)) < 0)
			return rc;
	}
	if (hi > x->n1)
		hi = x->n1;
	cbuf = malloc(len);
	if (!cbuf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for a %zu-byte chunk", len);
	/* chunks are full-size on disk; what no row covers holds the fill value */
	h5_dataset_fill(d, cbuf, 0, len);
	chunk_gather(x, cbuf, r, j, lo, hi);
	if (d->pline.n) {
		rc = h5_filter_encode(&cbuf, &len, &rec.filter_mask, &d->pline, d->dtype);
		if (rc < 0)
			goto out;
		rec.size = len;
	}
	rec.addr = x->eoa;
	if (h5_add_overflow(x->eoa, len, &x->eoa)) {
		rc = h5_err_set(H5_ERR_LIMIT, "file address space exhausted");
		goto out;
	}
	rc = wb_put(&x->wb, cbuf, len);
	if (rc < 0)
		goto out;
	idx = r * x->down[0];
	for (unsigned i = 1; i < x->rank; i++)
		idx += j[i] * x->down[i];
	rc = h5_ea_writer_set(x->ea, idx, &rec);
out:
	free(cbuf);
	return rc;
}

static int write_sb_eoa(h5_file *f, uint64_t eoa)
{
	uint64_t rel = f->eoa_field_off - f->base, stored;
	uint8_t sb[12 + 4 * 8 + 4];
	size_t sb_len;
	int rc;

	if (h5_add_overflow(eoa, f->sb_base_field, &stored))
		return h5_err_set(H5_ERR_LIMIT, "end-of-file address overflows");
	if (f->sb_version <= 1) {
		uint8_t v[8];

		h5_le_encode(v, stored, f->fmt.sizeof_addr);
		return h5_file_write(f, rel, v, f->fmt.sizeof_addr);
	}
	/* v2/v3 (II.A): the EOF address, root address and checksum end the
	 * superblock; they are rewritten in one piece */
	sb_len = 12 + 4 * (size_t)f->fmt.sizeof_addr + 4;
	rc = h5_file_read(f, 0, sb, sb_len);
	if (rc < 0)
		return rc;
	if (rel >= sb_len)
		return h5_err_set(H5_ERR_FORMAT, "superblock: EOF field outside the superblock");
	h5_le_encode(sb + rel, stored, f->fmt.sizeof_addr);
	h5_le_encode(sb + sb_len - 4, h5_checksum_metadata(sb, sb_len - 4), 4);
	return h5_file_write(f, rel, sb + rel, sb_len - (size_t)rel);
}

static int ea_cparam(h5_ea_cparam *cp, const h5_dataset *d, const h5_fmt *fmt)
{
	const h5_layout *l = &d->layout;

	cp->client = d->pline.n ? H5_ARR_CLIENT_FILT_CHUNK : H5_ARR_CLIENT_CHUNK;
	/* H5D__earray_idx_create: filtered elements carry the chunk size in
	 * 1 + (log2(chunk bytes) + 8) / 8 bytes, and a filter mask */
	cp->elmt_size = (uint8_t)(fmt->sizeof_addr + (d->pline.n ? h5_chunk_size_len(d->chunk_bytes) + 4 : 0));
	cp->max_nelmts_bits = l->ea_max_bits;
	cp->idx_blk_elmts = l->ea_idx_elmts;
	cp->data_blk_min_elmts = l->ea_min_elmts;
	cp->sup_blk_min_data_ptrs = l->ea_min_ptrs;
	cp->max_dblk_page_nelmts_bits = l->ea_page_bits;
	return 0;
}

/* Where the layout message stores the index address (IV.A.2.i, version 4:
 * version, class, flags, dimensionality, dimension size encoding, the
 * dimensions - rank + 1 of them, the last being the element size - index
 * type, the 5 EA parameters, then the address). */
static int layout_idx_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt)
{
	uint64_t off;

	if (lay->size < 5 || lay->data[1] != H5_LAYOUT_CHUNKED)
		return h5_err_set(H5_ERR_FORMAT, "layout message at 0x%llx: not chunked", (unsigned long long)lay->addr);
	off = 5 + (uint64_t)lay->data[3] * lay->data[4];
	if (lay->size < off + 1 + 5 + fmt->sizeof_addr || lay->data[off] != H5_CIDX_EARRAY)
		return h5_err_set(H5_ERR_FORMAT, "layout message at 0x%llx: no extensible array index field",
				  (unsigned long long)lay->addr);
	*addr = lay->addr + off + 1 + 5;
	return 0;
}

static int apply_rows(h5_appender *a, uint64_t nrows)
{
	h5_file *f = a->f;
	apply_ctx x;
	oh_edit e = { 0 };
	h5_ea_cparam cp;
	const h5_msg *ds, *lay;
	uint8_t *old = NULL, v[8];
	uint64_t r0, r1, j[H5_MAX_RANK], acc, ncells, n1_bytes;
	size_t dsc;
	int rc;

	memset(&x, 0, sizeof(x));
	x.a = a;
	x.f = f;
	rc = h5_dataset_open(&x.d, f, a->addr);
	if (rc == 0)
		rc = h5_append_check(x.d);
	if (rc == 0)
		rc = h5_ohdr_load(&e.oh, f, a->addr);
	if (rc == 0)
		rc = find_msgs(&ds, &lay, e.oh);
	if (rc < 0)
		goto out;
	e.lo = malloc(e.oh->nchunks * sizeof(size_t));
	e.hi = calloc(e.oh->nchunks, sizeof(size_t));
	if (!e.lo || !e.hi) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t c = 0; c < e.oh->nchunks; c++)
		e.lo[c] = SIZE_MAX;

	x.rank = x.d->space.rank;
	x.esize = x.d->dtype->size;
	x.n0 = x.d->space.dims[0];
	if (h5_add_overflow(x.n0, nrows, &x.n1) || h5_mul_overflow(x.n1, a->row_bytes, &n1_bytes) ||
	    n1_bytes > (uint64_t)INT64_MAX ||
	    (f->fmt.sizeof_size < 8 && x.n1 >= (UINT64_C(1) << (8 * f->fmt.sizeof_size)) - 1)) {
		rc = h5_err_set(H5_ERR_LIMIT, "dataset would exceed the size limit");
		goto out;
	}
	for (unsigned i = 0; i < x.rank; i++) {
		x.dims[i] = i ? x.d->space.dims[i] : x.n1;
		x.chunk[i] = x.d->layout.chunk[i];
		x.nch[i] = x.dims[i] / x.chunk[i] + (x.dims[i] % x.chunk[i] != 0);
	}
	/* chunk.c set_down with the unlimited dimension 0 first: the other
	 * dimensions count chunks of their maximum extent */
	acc = 1;
	ncells = 1;
	for (unsigned i = x.rank; i-- > 1;) {
		uint64_t mc = x.d->space.maxdims[i] / x.chunk[i] + (x.d->space.maxdims[i] % x.chunk[i] != 0);

		x.down[i] = acc;
		if (h5_mul_overflow(acc, mc, &acc) || h5_mul_overflow(ncells, x.nch[i], &ncells)) {
			rc = h5_err_set(H5_ERR_LIMIT, "chunk grid overflows");
			goto out;
		}
	}
	x.down[0] = acc;

	/* the rows already in the first chunk row, read through the old index */
	r0 = x.n0 / x.chunk[0];
	r1 = x.n1 / x.chunk[0] + (x.n1 % x.chunk[0] != 0);
	x.old_first = r0 * x.chunk[0];
	if (x.old_first < x.n0) {
		uint64_t n = (x.n0 - x.old_first) * a->row_bytes;

		old = malloc((size_t)n);
		if (!old) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory reading the last chunk row");
			goto out;
		}
		rc = h5_dataset_read(x.d, old, x.old_first * a->row_bytes, (size_t)n);
		if (rc < 0)
			goto out;
	}
	x.old_rows = old;
	x.new_rows = a->buf;

	rc = ea_cparam(&cp, x.d, &f->fmt);
	if (rc == 0)
		rc = h5_ea_writer_open(&x.ea, f, x.d->layout.idx_addr, &cp);
	if (rc < 0)
		goto out;
	x.eoa = f->eoa;
	x.wb.f = f;
	x.wb.start = x.eoa;
	x.wb.cap = APPEND_WBUF;
	x.wb.p = malloc(x.wb.cap);
	if (!x.wb.p) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}

	/* 1. chunks, then the EA blocks, all beyond the old end */
	for (uint64_t r = r0; r < r1; r++) {
		for (unsigned i = 1; i < x.rank; i++)
			j[i] = 0;
		for (uint64_t cell = 0; cell < ncells; cell++) {
			unsigned i;

			rc = write_chunk(&x, r, j);
			if (rc < 0)
				goto out;
			for (i = x.rank; i-- > 1;) {
				if (++j[i] < x.nch[i])
					break;
				j[i] = 0;
			}
		}
	}
	rc = wb_flush(&x.wb);
	if (rc == 0)
		rc = h5_ea_writer_write(x.ea, &x.eoa);
	if (rc == 0)
		rc = h5_file_sync(f);
	if (rc < 0)
		goto out;
	/* 2. the superblock covers the new space before anything points there */
	rc = write_sb_eoa(f, x.eoa);
	if (rc == 0)
		rc = h5_file_sync(f);
	if (rc < 0)
		goto out;
	f->eoa = x.eoa;
	/* 3. the switch to the new index */
	if (h5_ea_writer_hdr_is_new(x.ea)) {
		uint64_t field = H5_ADDR_UNDEF;

		rc = layout_idx_field(&field, lay, &f->fmt);
		if (rc == 0) {
			h5_le_encode(v, h5_ea_writer_hdr(x.ea)->addr, f->fmt.sizeof_addr);
			rc = oh_patch(&e, field, v, f->fmt.sizeof_addr);
		}
		if (rc == 0)
			rc = oh_write_chunk(f, &e, oh_chunk_of(e.oh, field));
	} else {
		rc = h5_ea_writer_commit(x.ea);
	}
	if (rc == 0)
		rc = h5_file_sync(f);
	if (rc < 0)
		goto out;
	/* 4. modification time, then dims[0] last: the dataspace's chunk is
	 * written after every other chunk */
	rc = oh_touch(&e, (uint32_t)time(NULL));
	dsc = oh_chunk_of(e.oh, ds->addr);
	for (size_t c = 0; rc == 0 && c < e.oh->nchunks; c++)
		if (c != dsc)
			rc = oh_write_chunk(f, &e, c);
	if (rc == 0) {
		h5_le_encode(v, x.n1, f->fmt.sizeof_size);
		rc = oh_patch(&e, ds->addr + (ds->data[0] == 1 ? 8 : 4), v, f->fmt.sizeof_size);
	}
	if (rc == 0)
		rc = oh_write_chunk(f, &e, dsc);
	if (rc == 0)
		rc = h5_file_sync(f);
	if (rc < 0)
		goto out;
	a->committed = n1_bytes;
out:
	/* whatever happened, cached copies of what may have changed go */
	h5_cache_invalidate(f->meta, H5_CK_OHDR, a->addr);
	if (x.ea)
		h5_ea_writer_invalidate(x.ea);
	for (size_t i = 0; i < x.nold; i++)
		h5_cache_invalidate(f->chunks, H5_CK_CHUNK, x.old_chunks[i]);
	h5_ea_writer_free(x.ea);
	free(x.wb.p);
	free(x.old_chunks);
	free(old);
	if (e.oh)
		h5_ohdr_free(e.oh);
	free(e.lo);
	free(e.hi);
	h5_dataset_close(x.d);
	return rc;
}

/* Apply every complete row buffered. */
static int apply(h5_appender *a)
{
	uint64_t nrows = a->len / a->row_bytes;
	size_t used = (size_t)(nrows * a->row_bytes);
	int rc;

	if (a->failed)
		return a->failed;
	if (nrows == 0)
		return 0;
	pthread_mutex_lock(&a->f->write_lock);
	rc = apply_rows(a, nrows);
	pthread_mutex_unlock(&a->f->write_lock);
	if (rc < 0) {
		/* the file holds the old state or a complete newer one (the rows
		 * were committed iff a->committed moved); either way this batch
		 * cannot be retried blindly */
		a->failed = rc;
		a->len = 0;
		return h5_err_wrap(rc, "append to dataset at 0x%llx: ", (unsigned long long)a->addr);
	}
	memmove(a->buf, a->buf + used, a->len - used);
	a->len -= used;
	return 0;
}

int h5_append_write(h5_appender *a, const void *buf, size_t len)
{
	uint64_t need;

	if (a->failed)
		return h5_err_set(a->failed, "an earlier append to this dataset failed");
	if (h5_add_overflow(a->len, len, &need) || need > SIZE_MAX / 2)
		return h5_err_set(H5_ERR_NOMEM, "append buffer overflows");
	if (need > a->cap) {
		size_t ncap = a->cap ? a->cap : 65536;
		uint8_t *nb;

		while (ncap < need)
			ncap *= 2;
		nb = realloc(a->buf, ncap);
		if (!nb)
			return h5_err_set(H5_ERR_NOMEM, "out of memory buffering %zu bytes", need);
		a->buf = nb;
		a->cap = ncap;
	}
	memcpy(a->buf + a->len, buf, len);
	a->len = (size_t)need;
	if (a->len >= a->batch)
		return apply(a);
	return 0;
}

int h5_append_flush(h5_appender *a)
{
	return apply(a);
}

void h5_append_discard(h5_appender *a)
{
	a->len = 0;
}

int h5_append_close(h5_appender *a, size_t *pending_partial)
{
	int rc;

	if (pending_partial)
		*pending_partial = 0;
	if (!a)
		return 0;
	rc = apply(a);
	if (rc == 0 && a->len) {
		if (pending_partial)
			*pending_partial = a->len;
		rc = h5_err_set(H5_ERR_INVAL, "%zu trailing bytes do not make a whole row of %llu bytes: not appended",
				a->len, (unsigned long long)a->row_bytes);
	}
	free(a->buf);
	free(a);
	return rc;
}

int h5_file_writable(const h5_file *f)
{
	return f->writable && f->fd >= 0;
}
