/*
 * overwrite.c - writing bytes of existing datasets (h5core.h "overwriting
 * bytes", doc/OVERWRITE.md): the written extents are collected in memory
 * and committed together, through the overwriters' layout table
 * (ow_int.h h5_ow_layout_ops, one entry per layout beside its writer):
 * contiguous storage in place (ow_contig.c), compact data in its layout
 * message (ow_compact.c: one write of the object header chunk, checksum
 * included), chunked data through chunk_rewrite.c (new chunks, the index
 * writers, one ordered commit) - a chunk a write covers whole is filtered
 * and written at the write instead, and only its record waits for the
 * commit (chunk_whole.c). This file keeps the public calls and the append
 * streams held around a commit; what the entries share with it (the kept
 * extents, the header edit) is ow_ext.c's, beneath them all.
 *
 * Whole elements: a periodic commit keeps an extent's trailing partial
 * element back until the rest of it arrives; the last commit (flush,
 * fsync, close) writes what there is.
 */
#include "ow_int.h"
#include "txn.h"
#include "space.h"
#include "base.h"
#include "rd.h"
#include "file.h"
#include "cidx.h"
#include "h5util.h"
#include "cidx_write.h"
#include "dataset.h"
#include "h5core.h"
#include "append_int.h"
#include "file_ws.h"
#include "loose.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* The overwriters' layout table (ow_int.h), as the read side's
 * (dataset/layout_table.c): one entry per layout, each beside its
 * writer; a layout with none cannot be written. */
const h5_ow_layout_ops *h5_ow_layout_of(uint8_t cls)
{
	switch (cls) {
	case H5_LAYOUT_COMPACT: return &h5_ow_compact;
	case H5_LAYOUT_CONTIGUOUS: return &h5_ow_contig;
	case H5_LAYOUT_CHUNKED: return &h5_ow_chunked;
	default: return NULL;
	}
}

/* Why d's bytes cannot be written, or 0. */
int h5_overwrite_check(const h5_dataset *d)
{
	const h5_ow_layout_ops *lops;

	if (d->layout.cls == H5_LAYOUT_VIRTUAL)
		return h5_err_set(H5_ERR_UNSUPPORTED, "virtual dataset: its bytes live in its source datasets");
	if (d->efl.n)
		return h5_err_set(H5_ERR_UNSUPPORTED, "external storage: its bytes live in other files");
	if (d->has_vlen || !d->dtype || d->dtype->size == 0)
		return h5_err_set(H5_ERR_UNSUPPORTED, "variable-length datatype: its bytes are not stored in place");
	/* its reads show values converted from the bits (dataset/view.c) */
	if (d->conv)
		return h5_err_set(H5_ERR_UNSUPPORTED, "numbers at a bit offset or precision (n-bit datatype): "
				  "they read converted, and h5fs writes no bits back");
	lops = h5_ow_layout_of(d->layout.cls);
	if (!lops)
		return h5_err_set(H5_ERR_UNSUPPORTED, "layout class %u", d->layout.cls);
	return lops->check ? lops->check(d) : 0;
}

/* Whether d's chunks are runs of its byte stream (rank 1, or every
 * other dimension whole and fixed), so a byte offset names its chunk. */
static void dirty_init(h5_overwriter *w, const h5_dataset *d)
{
	w->dset_key = d->layout.cls == H5_LAYOUT_CHUNKED && d->space.rank > 0 && d->chunk_bytes;
	for (unsigned i = 1; w->dset_key && i < d->space.rank; i++)
		if (d->layout.chunk[i] != d->space.dims[i] || d->space.maxdims[i] != d->space.dims[i])
			w->dset_key = false;
}

uint64_t h5_overwrite_dirty(const h5_overwriter *w)
{
	if (!w)
		return 0;
	if (!w->dset_key)
		return h5_overwrite_kept(w);
	return (uint64_t)__atomic_load_n(&w->ndirty, __ATOMIC_RELAXED) * w->chunk_bytes + w->wc.bytes;
}

int h5_overwrite_open(h5_overwriter **out, h5_file *f, uint64_t dset_addr)
{
	h5_overwriter *w;
	h5_dataset *d = NULL;
	int rc;

	*out = NULL;
	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "file opened read-only");
	rc = h5_dataset_open(&d, f, dset_addr);
	if (rc == 0)
		rc = h5_overwrite_check(d);
	if (rc < 0) {
		h5_dataset_close(d);
		return rc;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		h5_dataset_close(d);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	w->f = f;
	w->addr = dset_addr;
	w->dirty = H5_KEYTAB(uint64_t);
	w->relayouts = __atomic_load_n(&h5_ws(f)->relayouts, __ATOMIC_ACQUIRE);
	w->nbytes = d->nbytes;
	w->esize = d->dtype->size;
	if (h5_dataset_row_bytes(&w->row_bytes, d) < 0) {
		h5_err_clear();
		w->row_bytes = 0;       /* (no resize: its rows cannot be counted) */
	}
	w->cls = d->layout.cls;
	w->lops = h5_ow_layout_of(d->layout.cls);
	w->caddr = d->layout.cls == H5_LAYOUT_CONTIGUOUS ? d->layout.addr : H5_ADDR_UNDEF;
	w->chunk_bytes = d->layout.cls == H5_LAYOUT_CHUNKED ? d->chunk_bytes : 0;
	w->resize = UINT64_MAX;
	dirty_init(w, d);
	h5_ow_whole_init(w, d);
	h5_dataset_close(d);
	*out = w;
	return 0;
}

uint64_t h5_overwrite_buffered(const h5_overwriter *w)
{
	return w ? w->buffered + w->direct + w->wc.bytes : 0;
}

/* (chunks taken whole count as kept: not visible until the commit) */
uint64_t h5_overwrite_kept(const h5_overwriter *w)
{
	return w ? w->buffered + w->wc.bytes : 0;
}

int h5_overwrite_peek(const h5_overwriter *w, uint64_t off, void *buf, size_t len)
{
	int any;

	if (!w)
		return 0;
	/* (the pool's chunks in flight noted; an error of theirs is the
	 * commit's to report) */
	if (h5_ow_whole_wait((h5_overwriter *)w) < 0)
		h5_err_clear();
	/* chunks taken whole first: no kept extent before them overlaps
	 * them (chunk_whole.c), later ones win */
	any = h5_ow_whole_peek(w, off, buf, len);
	if (any < 0)
		return any;
	/* in the order written: a later extent over an earlier one wins, as
	 * at the commit (h5_ow_merge) */
	for (size_t i = 0; i < w->n; i++) {
		const h5_ow_ext *x = &w->ext[i];
		uint64_t lo = x->off > off ? x->off : off, hi = x->off + x->len;

		if (hi > off + len)
			hi = off + len;
		if (lo >= hi)
			continue;
		any = 1;
		if (!buf)
			return 1;
		memcpy((uint8_t *)buf + (lo - off), x->p + (lo - x->off), (size_t)(hi - lo));
	}
	return any;
}

int h5_overwrite_pending(const h5_overwriter *w)
{
	return w && (h5_overwrite_buffered(w) || w->unsynced);
}

/* Each kept extent touches its chunks and at most two more at its ends;
 * the extents of one commit are merged (ow_int.h), so twice what is
 * kept is an upper bound, plus the index's copied blocks. A contiguous
 * dataset never allocated takes its whole storage at its first commit. */
int h5_overwrite_reserve(h5_overwriter *w, uint64_t len)
{
	uint64_t need = 0;
	int rc;

	if (!w || !w->lops->need)
		return 0;
	rc = w->lops->need(&need, w, len);
	return rc < 0 || !need ? rc : h5_file_reserve(w->f, &w->reserved, need);
}

/* A new file's chunks made smaller at its first commit (append_commit.c
 * rechunk_small), after this overwriter was opened (cp's handle opens it
 * at create): its chunk geometry taken again, or whole chunks of the old
 * size were written as one of the new (an mmap write of 64 KiB at
 * 0x40000 of a file rechunked to 4 KiB chunks became chunk 4: issue 71).
 * A rechunk happens only while the dataset holds no rows, so nothing was
 * taken whole yet; kept extents are byte ranges, which any geometry
 * takes. */
static int geometry_refresh(h5_overwriter *w)
{
	uint64_t gen = __atomic_load_n(&h5_ws(w->f)->relayouts, __ATOMIC_ACQUIRE);
	h5_dataset *d = NULL;
	int rc;

	if (gen == w->relayouts || w->cls != H5_LAYOUT_CHUNKED)
		return 0;
	if (w->wc.n || w->wc.bytes)
		return h5_err_set(H5_ERR_BUSY, "the dataset's chunks changed under chunks written whole");
	if (h5_ow_whole_wait(w) < 0)
		return h5_err_set(H5_ERR_IO, "%s", h5_err_msg());
	rc = h5_dataset_open(&d, w->f, w->addr);
	if (rc < 0)
		return rc;
	if (d->layout.cls != H5_LAYOUT_CHUNKED || !d->chunk_bytes) {
		h5_dataset_close(d);
		return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: no longer chunked",
				  (unsigned long long)w->addr);
	}
	h5_ow_whole_release(w);
	w->chunk_bytes = d->chunk_bytes;
	w->wc.ok = false;
	h5_ow_dirty_clear(w);   /* (kept extents: nothing but what a rechunk allows) */
	dirty_init(w, d);
	for (size_t i = 0; i < w->n; i++)
		if (h5_ow_dirty_note(w, w->ext[i].off, w->ext[i].len) < 0)
			h5_err_clear();
	h5_ow_whole_init(w, d);
	h5_dataset_close(d);
	w->relayouts = gen;
	return 0;
}

int h5_overwrite_put(h5_overwriter *w, uint64_t off, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t end;
	int rc;

	if (h5_add_overflow(off, len, &end))
		return h5_err_set(H5_ERR_RANGE, "write of %zu bytes at %llu overflows", len, (unsigned long long)off);
	if (!len)
		return 0;
	if ((rc = geometry_refresh(w)) < 0)
		return rc;
	if (end > w->nbytes)
		return h5_ow_keep(w, off, p, len);    /* (past the end: the commit says so) */
	return w->lops->put(w, off, p, len);
}

int h5_overwrite_punch(h5_overwriter *w, uint64_t off, uint64_t len)
{
	uint64_t end;
	int rc = geometry_refresh(w);

	if (rc < 0)
		return rc;
	if (h5_add_overflow(off, len, &end) || end > w->nbytes)
		return h5_err_set(H5_ERR_RANGE, "punching %llu bytes at %llu: past the dataset's %llu",
				  (unsigned long long)len, (unsigned long long)off, (unsigned long long)w->nbytes);
	/* the layout's own (chunks dropped, storage never allocated left),
	 * else zeros written as any write */
	return w->lops->punch ? w->lops->punch(w, off, len) : h5_ow_put_zeros(w, off, len, w->lops->put);
}

/* A growth (h5core.h): dims[0] raised at the commit, nothing written -
 * whether the dataset may grow to it is the append path's question
 * (h5_append_check: its index can take the new chunks, its filters
 * encode, dimension 0 below its maximum). */
static int grow(h5_overwriter *w, uint64_t size)
{
	h5_dataset *d = NULL;
	int rc = h5_dataset_open(&d, w->f, w->addr);

	if (rc == 0)
		rc = h5_append_check(d);
	if (rc == 0 && d->space.maxdims[0] != H5_UNLIMITED && size / w->row_bytes > d->space.maxdims[0])
		rc = h5_err_set(H5_ERR_PERM, "%llu rows: dimension 0's maximum is %llu",
				(unsigned long long)(size / w->row_bytes), (unsigned long long)d->space.maxdims[0]);
	h5_dataset_close(d);
	if (rc == 0) {
		w->resize = size;
		w->grow = true;
	}
	return rc;
}

int h5_overwrite_resize(h5_overwriter *w, uint64_t size)
{
	int rc = geometry_refresh(w);

	if (rc < 0 || size == w->nbytes)
		return rc;
	/* contiguous and compact storage is as large as the dataspace was
	 * made (IV.A.2.i): only a chunked dataset's dims change */
	if (w->cls != H5_LAYOUT_CHUNKED)
		return h5_err_set(H5_ERR_UNSUPPORTED, "the %s layout's size cannot change", w->lops->name);
	if (!w->row_bytes || size % w->row_bytes)
		return h5_err_set(H5_ERR_INVAL, "%s to %llu bytes: not whole rows", size < w->nbytes ? "shrinking" :
				  "growing", (unsigned long long)size);
	if (size > w->nbytes)
		return grow(w, size);
	/* bytes kept past the new end go (the later change wins); the fill
	 * value the shrink puts after them is its own */
	for (size_t i = 0; i < w->n; i++)
		if (w->ext[i].off + w->ext[i].len > size)
			w->ext[i].len = w->ext[i].off >= size ? 0 : (size_t)(size - w->ext[i].off);
	w->grow = false;
	return h5_ow_shrink_chunked(w, size);
}

/* ---- the append stream of the same dataset ---------------------------------------
 * An append stream (append.c) keeps rows not committed yet, a partly
 * filled last chunk row and the index address it builds on. A commit
 * holds the dataset's stream (its lock, taken before f->write_lock, the
 * order of the stream's own commits) and takes the rows it has not
 * committed into its own one ordered commit: the stream stages them as
 * its commit would and lends its index writer (h5_astream_join), so that
 * rows appended and bytes written over them become visible together, in
 * the commit's last write (issue 81 item 3). When the commit also changes
 * committed rows (only_past), or resizes, the rows are committed first
 * by the stream, then the overwrite: two ordered commits, in the order
 * the rows came first (before, the held stream was let go and taken
 * again around its commit, and an O_APPEND writer's rows arriving in
 * between made the close EBUSY: test_procs). After the commit the stream
 * goes on from the dataset as it is now. */

/* The stream's view after a commit of the dataset (changed: it was made):
 * the dataset opened again, its buffered rows - a partly filled chunk row,
 * committed - read again, and that row's chunks found again where the new
 * index has them (the rewrite may have moved them and freed the old
 * copies itself: forgetting them leaked one chunk per periodic commit of
 * a rewrite below a growing end - a 100 MB truncate(2) up, then written
 * over, kept FILE at 100 MB after rm). Under s->lock and write_lock. */
static void stream_reload(h5_file *f, h5_astream *s, uint64_t addr, bool changed)
{
	h5_dataset *nd = NULL;
	int rc;

	if (!changed || h5_astream_failed(s))
		return;
	rc = h5_dataset_open(&nd, f, addr);
	if (rc == 0 && s->nbuf)
		rc = h5_dataset_read(nd, s->buf, s->row0 * s->row_bytes, (size_t)(s->nbuf * s->row_bytes));
	if (rc == 0) {
		h5_dataset_close(s->d);
		s->d = nd;
		s->ea_addr = nd->layout.idx_addr;
		h5_freesp_clear(&s->partial);
		s->prow = UINT64_MAX;
		h5_astage_partial_find(s);
	} else {
		h5_dataset_close(nd);
		h5_astream_fail(s, rc);
	}
}

static void join_chunk(const void *ctx, size_t i, uint64_t *scaled, h5_chunk_rec *rec)
{
	h5_astream_staged(ctx, i, scaled, rec);
}

/* Whether this commit changes nothing the dataset shows now (rows
 * committed: below end): then the rows appended after them and the bytes
 * written over those rows become visible in the commit's one last write,
 * dims[0]. Bytes written over committed rows become visible at the
 * switch to the new index instead, before dims[0]: the rows are then
 * committed first, in order (a crash shows the rows with what they held
 * before, never those bytes without the rows appended before them). */
static bool only_past(const h5_overwriter *w, uint64_t end)
{
	if (w->wc.n)
		return false;   /* (chunks taken whole lie below the end) */
	for (size_t i = 0; i < w->n; i++)
		if (w->ext[i].len && w->ext[i].off < end)
			return false;
	return true;
}

/* The dataset's stream held (its lock taken; NULL: none, or failed: its
 * rows are its writers' error and hold nothing back) and its rows staged
 * for this commit (*j), or - a resize, or bytes over committed rows
 * (only_past) - committed first. Not under write_lock. */
static h5_astream *stream_take(h5_overwriter *w, h5_ow_join *j)
{
	h5_astream *s = h5_astream_hold(w->f, w->addr);

	if (!s)
		return NULL;
	pthread_mutex_lock(&s->lock);
	if (h5_astream_failed(s))
		return s;
	if (w->resize != UINT64_MAX || w->cls != H5_LAYOUT_CHUNKED ||
	    !only_past(w, __atomic_load_n(&s->committed, __ATOMIC_ACQUIRE) * w->row_bytes)) {
		if (h5_astream_commit(s, true, false) < 0)
			h5_err_clear();         /* the stream's own error, its writers' */
		return s;
	}
	if (h5_astream_join(s, &j->rows) < 0) {
		h5_err_clear();                 /* (failed: the same) */
		return s;
	}
	j->wops = s->wops;
	j->w = s->ea;
	j->n = s->nstaged;
	j->chunk = join_chunk;
	j->ctx = s;
	return s;
}

int h5_overwrite_commit(h5_overwriter *w, int all, int durable)
{
	h5_dataset *d = NULL;
	size_t n, keep_n = 0;
	h5_ow_ext keep = { 0 };
	h5_ow_join join = { 0 };
	h5_astream *s;
	uint64_t lim;
	bool loose, tried = false;
	int rc = 0, arc;

	if (!w)
		return 0;
	arc = h5_ow_whole_wait(w);      /* the chunks filtered on the pool */
	n = w->n;
	/* a periodic commit keeps the trailing partial element of the last
	 * extent (the one still growing) back */
	if (!all && n) {
		h5_ow_ext *x = &w->ext[n - 1];
		uint64_t end = x->off + x->len, cut = end - end % w->esize;

		if (cut < end) {
			size_t k = (size_t)(end - (cut > x->off ? cut : x->off));

			keep.off = end - k;
			keep.len = keep.cap = k;
			keep.p = malloc(k);
			if (!keep.p)
				return h5_err_set(H5_ERR_NOMEM, "out of memory");
			memcpy(keep.p, x->p + x->len - k, k);
			x->len -= k;
			keep_n = 1;
		}
	}
	/* (a commit with nothing to make leaves the stream to its policy) */
	s = n || durable || w->direct || w->wc.n || w->resize != UINT64_MAX ? stream_take(w, &join) : NULL;
	pthread_mutex_lock(&w->f->write_lock);
	h5_space_free_all(w->f, &w->gone);
	rc = arc;
	if (rc == 0 && (n || durable || w->direct || w->wc.n || w->resize != UINT64_MAX || join.w))
		rc = h5_dataset_open(&d, w->f, w->addr);
	if (rc == 0 && d)
		w->nbytes = d->nbytes;  /* appends may have grown it */
	/* the size changed since the resize was asked, past it (appends of
	 * another descriptor): the later change wins, as in a plain file */
	if (rc == 0 && d && w->resize != UINT64_MAX &&
	    (w->grow ? w->resize <= d->nbytes : !d->space.dims[0] || w->resize >= d->nbytes))
		rc = h5_err_set(H5_ERR_RANGE, "%s to %llu bytes: the dataset has %llu", w->grow ? "growing" : "shrinking",
				(unsigned long long)w->resize, (unsigned long long)d->nbytes);
	lim = !d ? 0 : w->resize != UINT64_MAX && w->grow ? w->resize :
		join.w && join.rows > d->space.dims[0] ? join.rows * w->row_bytes : d->nbytes;
	/* Bytes past the end were taken before the dataset was emptied or
	 * shrunk (a truncate through another descriptor: the later change
	 * wins, as in a plain file); they go. (A put past the end of the
	 * rows appended is refused by the caller before it is taken: issue
	 * 53.) */
	for (size_t i = 0; rc == 0 && d && i < n; i++)
		if (w->ext[i].off + w->ext[i].len > lim)
			w->ext[i].len = w->ext[i].off >= lim ? 0 : (size_t)(lim - w->ext[i].off);
	if (rc == 0 && d) {
		/* a new file not linked yet: nothing to order (loose.h) */
		loose = h5_loose_enter(w->f, w->addr);
		w->join = join.w ? &join : NULL;
		rc = w->lops->commit(w, d, n, durable);
		w->join = NULL;
		h5_loose_leave(w->f, loose);
		tried = true;
	}
	/* (a commit not tried leaves the stream's rows staged: its own
	 * commit makes them visible later) */
	if (s && join.w && tried)
		h5_astream_joined(s, rc, join.rows, join.ticket, join.end, durable);
	if (s && rc == 0 && w->resize != UINT64_MAX && !h5_astream_failed(s) &&
	    h5_astream_cut(s, w->resize / w->row_bytes) < 0)
		h5_err_clear();         /* (the stream's failure, its writers') */
	if (s)
		stream_reload(w->f, s, w->addr, rc == 0 && d);
	if (rc == 0 && w->resize != UINT64_MAX)
		w->nbytes = w->resize;
	else if (rc == 0 && d && lim > w->nbytes)
		w->nbytes = lim;        /* the stream's rows */
	w->resize = UINT64_MAX;
	w->grow = false;
	if (rc == 0 && durable)
		w->unsynced = false;
	else if (rc == 0 && (n || w->direct || join.w))
		w->unsynced = true;
	pthread_mutex_unlock(&w->f->write_lock);
	if (s) {
		h5_astream_joined_end(s);
		pthread_mutex_unlock(&s->lock);
		h5_astream_release(w->f, s);
	}
	h5_dataset_close(d);
	/* committed or not, the extents go: on an error FILE holds the old
	 * state or the new one, and the caller reports it */
	for (size_t i = 0; i < n; i++)
		free(w->ext[i].p);
	w->n = 0;
	__atomic_store_n(&w->buffered, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&w->spans, 0, __ATOMIC_RELAXED);
	h5_ow_dirty_clear(w);
	w->direct = 0;
	/* (an error: their space is leaked, as FILE may reference them;
	 * but not when the commit was not tried) */
	if (arc < 0)
		h5_ow_whole_drop(w);
	w->wc.n = 0;
	w->wc.bytes = 0;
	h5_ow_whole_release(w);
	h5_file_unreserve(w->f, &w->reserved);  /* (committed, or lost and reported) */
	if (keep_n) {
		w->ext[0] = keep;
		w->n = 1;
		if (h5_ow_dirty_note(w, keep.off, keep.len) < 0)
			h5_err_clear();         /* (counted short by one chunk) */
		__atomic_store_n(&w->spans, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&w->buffered, keep.len, __ATOMIC_RELAXED);
	}
	return rc;
}

void h5_overwrite_close(h5_overwriter *w)
{
	if (!w)
		return;
	h5_file_unreserve(w->f, &w->reserved);
	if (w->gone.n) {
		pthread_mutex_lock(&w->f->write_lock);
		h5_space_free_all(w->f, &w->gone);
		pthread_mutex_unlock(&w->f->write_lock);
	}
	/* taken whole but never committed: referenced by nothing */
	if (h5_ow_whole_wait(w) < 0)
		h5_err_clear();
	h5_ow_whole_drop(w);
	if (w->wc.async) {
		pthread_mutex_destroy(&w->wc.amu);
		pthread_cond_destroy(&w->wc.acv);
	}
	h5_ow_whole_release(w);
	free(w->wc.v);
	h5_keytab_free(&w->dirty);
	for (size_t i = 0; i < w->n; i++)
		free(w->ext[i].p);
	free(w->ext);
	free(w);
}
