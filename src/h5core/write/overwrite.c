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
	w->row_bytes = d->dtype->size;
	for (unsigned i = 1; i < d->space.rank; i++)
		if (h5_mul_overflow(w->row_bytes, d->space.dims[i], &w->row_bytes))
			w->row_bytes = 0;       /* (no resize: its rows cannot be counted) */
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

/* ---- append streams of the same dataset ---------------------------------------
 * An append stream (append.c) keeps the rows of a partly filled last chunk
 * row and the index address it builds on. An overwrite commits only while
 * every stream of the dataset is idle (nothing staged: its appenders
 * flushed), holding their locks (tried: append commits take them before
 * f->write_lock), and reloads them after it. */
static int streams_hold(h5_file *f, uint64_t addr)
{
	for (h5_astream *s = h5_ws(f)->astreams; s; s = s->next) {
		if (s->addr != addr || s->unlinked)
			continue;
		if (pthread_mutex_trylock(&s->lock) == 0) {
			/* (a failed stream commits nothing more, its writers are
			 * told: it holds no overwrite back - else every later
			 * overwrite of the dataset was EBUSY, and a release that
			 * met it marked the mount lost: test_concurrent_fault) */
			if (s->failed || (!s->ea && s->row0 + s->nbuf == s->committed))
				continue;
			pthread_mutex_unlock(&s->lock);
		}
		for (h5_astream *t = h5_ws(f)->astreams; t != s; t = t->next)
			if (t->addr == addr && !t->unlinked)
				pthread_mutex_unlock(&t->lock);
		return h5_err_set(H5_ERR_BUSY, "rows appended to the dataset are not committed yet");
	}
	return 0;
}

/* The rows other descriptors appended and this commit met (streams_hold
 * refused): committed now, ordered as every commit and not fsync'd, as a
 * reader's h5_append_show does. Called with f->write_lock held: the
 * dataset's streams are held, the lock let go (a stream's commit takes
 * its own lock, then f->write_lock), each committed, and the lock taken
 * again. Four processes writing one name (test_procs) met EBUSY at a
 * close: an O_APPEND writer's rows came in between this handle's show
 * and its commit. */
#define SHOW_MAX 8
static void streams_show(h5_file *f, uint64_t addr)
{
	h5_astream *v[SHOW_MAX];
	size_t n = 0;

	for (h5_astream *s = h5_ws(f)->astreams; s && n < SHOW_MAX; s = s->next)
		if (s->addr == addr && !s->unlinked) {
			s->refs++;      /* (h5_astream_hold's, under the same lock) */
			v[n++] = s;
		}
	pthread_mutex_unlock(&f->write_lock);
	for (size_t i = 0; i < n; i++) {
		pthread_mutex_lock(&v[i]->lock);
		if (!h5_astream_failed(v[i]) && h5_astream_commit(v[i], true, false) < 0)
			h5_err_clear();         /* the stream's own error, its writers' */
		pthread_mutex_unlock(&v[i]->lock);
		h5_astream_release(f, v[i]);
	}
	pthread_mutex_lock(&f->write_lock);
}

/* The streams held, after a resize to rows: on from there (their partly
 * filled chunk row read again by streams_reload). */
static void streams_cut(h5_file *f, uint64_t addr, uint64_t rows)
{
	for (h5_astream *s = h5_ws(f)->astreams; s; s = s->next)
		if (s->addr == addr && !s->unlinked && !h5_astream_failed(s) && h5_astream_cut(s, rows) < 0)
			h5_err_clear();         /* (the stream's failure, its writers') */
}

static void streams_reload(h5_file *f, uint64_t addr, bool changed)
{
	for (h5_astream *s = h5_ws(f)->astreams; s; s = s->next) {
		h5_dataset *nd = NULL;
		int rc;

		if (s->addr != addr || s->unlinked)
			continue;
		if (changed && !h5_astream_failed(s)) {
			rc = h5_dataset_open(&nd, f, addr);
			if (rc == 0 && s->nbuf)
				rc = h5_dataset_read(nd, s->buf, s->row0 * s->row_bytes, (size_t)(s->nbuf * s->row_bytes));
			if (rc == 0) {
				h5_dataset_close(s->d);
				s->d = nd;
				s->ea_addr = nd->layout.idx_addr;
				/* the rewrite may have moved its partial chunk row's
				 * chunks (and freed the old copies itself): that row's
				 * chunks found again where the new index has them
				 * (forgetting them leaked one chunk per periodic
				 * commit of a rewrite below a growing end: a 100 MB
				 * truncate(2) up, then written over, kept FILE at
				 * 100 MB after rm - the chunk sat above the rest) */
				h5_freesp_clear(&s->partial);
				s->prow = UINT64_MAX;
				h5_astage_partial_find(s);
			} else {
				h5_dataset_close(nd);
				__atomic_store_n(&s->failed, rc, __ATOMIC_RELEASE);
			}
		}
		pthread_mutex_unlock(&s->lock);
	}
}

int h5_overwrite_commit(h5_overwriter *w, int all, int durable)
{
	h5_dataset *d = NULL;
	size_t n, keep_n = 0;
	h5_ow_ext keep = { 0 };
	uint64_t lim;
	bool held = false;
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
	pthread_mutex_lock(&w->f->write_lock);
	h5_space_free_all(w->f, &w->gone);
	rc = arc;
	if (rc == 0 && (n || durable || w->direct || w->wc.n || w->resize != UINT64_MAX))
		rc = h5_dataset_open(&d, w->f, w->addr);
	/* the streams held first (rows they have not committed are
	 * committed and the dataset opened again: the bytes over them are
	 * kept below, not cut as past the end) */
	for (int tries = 0; rc == 0 && d; tries++) {
		rc = streams_hold(w->f, w->addr);
		if (rc != H5_ERR_BUSY || tries >= 8)
			break;
		h5_err_clear();
		streams_show(w->f, w->addr);
		/* the dataset as the rows' commit left it */
		h5_dataset_close(d);
		d = NULL;
		rc = h5_dataset_open(&d, w->f, w->addr);
	}
	held = rc == 0 && d;
	if (rc == 0 && d)
		w->nbytes = d->nbytes;  /* appends may have grown it */
	/* the size changed since the resize was asked, past it (appends of
	 * another descriptor): the later change wins, as in a plain file */
	if (rc == 0 && d && w->resize != UINT64_MAX &&
	    (w->grow ? w->resize <= d->nbytes : !d->space.dims[0] || w->resize >= d->nbytes))
		rc = h5_err_set(H5_ERR_RANGE, "%s to %llu bytes: the dataset has %llu", w->grow ? "growing" : "shrinking",
				(unsigned long long)w->resize, (unsigned long long)d->nbytes);
	lim = rc == 0 && d && w->resize != UINT64_MAX && w->grow ? w->resize : d ? d->nbytes : 0;
	/* Bytes past the end were taken before the dataset was emptied or
	 * shrunk (a truncate through another descriptor: the later change
	 * wins, as in a plain file); they go. (A put past
	 * the end is refused by the caller before it is taken: issue 53.) */
	for (size_t i = 0; rc == 0 && d && i < n; i++)
		if (w->ext[i].off + w->ext[i].len > lim)
			w->ext[i].len = w->ext[i].off >= lim ? 0 : (size_t)(lim - w->ext[i].off);
	if (rc == 0 && d) {
		rc = w->lops->commit(w, d, n, durable);
	}
	if (held && rc == 0 && w->resize != UINT64_MAX)
		streams_cut(w->f, w->addr, w->resize / w->row_bytes);
	if (held)
		streams_reload(w->f, w->addr, rc == 0);
	if (rc == 0 && w->resize != UINT64_MAX)
		w->nbytes = w->resize;
	w->resize = UINT64_MAX;
	w->grow = false;
	if (rc == 0 && durable)
		w->unsynced = false;
	else if (rc == 0 && (n || w->direct))
		w->unsynced = true;
	pthread_mutex_unlock(&w->f->write_lock);
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
