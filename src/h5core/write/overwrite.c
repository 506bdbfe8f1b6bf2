/*
 * overwrite.c - writing bytes of existing datasets (h5core.h "overwriting
 * bytes", doc/OVERWRITE.md): the written extents are collected in memory
 * and committed together - contiguous storage in place, compact data in
 * its layout message (one write of the object header chunk, checksum
 * included), chunked data through chunk_rewrite.c (new chunks, the index
 * writers, one ordered commit) - a chunk a write covers whole is filtered
 * and written at the write instead, and only its record waits for the
 * commit (chunk_whole.c).
 *
 * Whole elements: a periodic commit keeps an extent's trailing partial
 * element back until the rest of it arrives; the last commit (flush,
 * fsync, close) writes what there is.
 *
 * Allocated contiguous storage takes the whole elements of each put in
 * place at once, from the caller's buffer (no copy; dd through the mount
 * runs near the disk's speed); only its partial elements are kept, so an
 * element is still written whole, and its bytes from several writes
 * together, at the commit. The commit then fsyncs and sets the
 * modification time. A kill before it leaves elements of the writes so
 * far new, as in-place commits always could (doc/OVERWRITE.md).
 */
#include "overwrite.h"
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

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* Why d's bytes cannot be written, or 0. */
int h5_overwrite_check(const h5_dataset *d)
{
	if (d->layout.cls == H5_LAYOUT_VIRTUAL)
		return h5_err_set(H5_ERR_UNSUPPORTED, "virtual dataset: its bytes live in its source datasets");
	if (d->efl.n)
		return h5_err_set(H5_ERR_UNSUPPORTED, "external storage: its bytes live in other files");
	if (d->has_vlen || !d->dtype || d->dtype->size == 0)
		return h5_err_set(H5_ERR_UNSUPPORTED, "variable-length datatype: its bytes are not stored in place");
	if (d->layout.cls == H5_LAYOUT_CHUNKED)
		return h5_ow_chunked_check(d);
	if (d->layout.cls == H5_LAYOUT_COMPACT && d->layout.version < 3)
		return h5_err_set(H5_ERR_UNSUPPORTED, "compact layout message version %u", d->layout.version);
	if (d->layout.cls == H5_LAYOUT_CONTIGUOUS && !h5_addr_defined(d->layout.addr) && d->layout.version < 3)
		return h5_err_set(H5_ERR_UNSUPPORTED, "unallocated contiguous storage, layout message version %u",
				  d->layout.version);
	if (d->layout.cls != H5_LAYOUT_COMPACT && d->layout.cls != H5_LAYOUT_CONTIGUOUS &&
	    d->layout.cls != H5_LAYOUT_CHUNKED)
		return h5_err_set(H5_ERR_UNSUPPORTED, "layout class %u", d->layout.cls);
	return 0;
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
	w->nbytes = d->nbytes;
	w->esize = d->dtype->size;
	w->cls = d->layout.cls;
	w->caddr = d->layout.cls == H5_LAYOUT_CONTIGUOUS ? d->layout.addr : H5_ADDR_UNDEF;
	w->chunk_bytes = d->layout.cls == H5_LAYOUT_CHUNKED ? d->chunk_bytes : 0;
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
 * the extents of one commit are merged (overwrite.h), so twice what is
 * kept is an upper bound, plus the index's copied blocks. A contiguous
 * dataset never allocated takes its whole storage at its first commit. */
int h5_overwrite_reserve(h5_overwriter *w, uint64_t len)
{
	uint64_t need;

	if (!w)
		return 0;
	if (w->cls == H5_LAYOUT_CONTIGUOUS && !h5_addr_defined(w->caddr))
		need = w->nbytes;
	else if (w->cls != H5_LAYOUT_CHUNKED)
		return 0;
	/* (read by a write before its turn: atomic, as each change of it) */
	else if (h5_add_overflow(__atomic_load_n(&w->buffered, __ATOMIC_RELAXED), len, &need) ||
		 h5_mul_overflow(need, 2, &need) ||
		 h5_add_overflow(need, 4 * w->chunk_bytes + ((uint64_t)256 << 10), &need))
		return h5_err_set(H5_ERR_LIMIT, "write of %llu bytes: too large", (unsigned long long)len);
	return h5_file_reserve(w->f, need);
}

int h5_ow_keep(h5_overwriter *w, uint64_t off, const uint8_t *buf, size_t len)
{
	h5_ow_ext *x = w->n ? &w->ext[w->n - 1] : NULL;

	if (!len)
		return 0;
	/* a write continuing the last one grows it (dd, cp: one extent) */
	if (!x || x->off + x->len != off) {
		if (w->n == w->cap) {
			size_t nc = w->cap ? w->cap * 2 : 8;
			h5_ow_ext *ne = realloc(w->ext, nc * sizeof(*ne));

			if (!ne)
				return h5_err_set(H5_ERR_NOMEM, "out of memory");
			w->ext = ne;
			w->cap = nc;
		}
		x = &w->ext[w->n++];
		*x = (h5_ow_ext){ .off = off };
	}
	if (x->len + len > x->cap) {
		size_t nc = x->cap ? x->cap : 4096;
		uint8_t *np;

		while (nc < x->len + len)
			nc *= 2;
		np = realloc(x->p, nc);
		if (!np) {
			if (!x->len)
				w->n--;
			return h5_err_set(H5_ERR_NOMEM, "out of memory buffering %zu bytes", len);
		}
		h5_mem_populate(np + x->len, nc - x->len, (size_t)1 << 20);
		x->p = np;
		x->cap = nc;
	}
	memcpy(x->p + x->len, buf, len);
	x->len += len;
	__atomic_store_n(&w->buffered, w->buffered + len, __ATOMIC_RELAXED);
	return 0;
}

/* Whole elements [a, b) written in place: kept bytes they cover are
 * older, and take the new ones (the commit writes kept bytes last). */
static int put_in_place(h5_overwriter *w, uint64_t a, const uint8_t *p, uint64_t b)
{
	for (size_t i = 0; i < w->n; i++) {
		h5_ow_ext *x = &w->ext[i];
		uint64_t lo = x->off > a ? x->off : a, hi = x->off + x->len < b ? x->off + x->len : b;

		if (lo < hi)
			memcpy(x->p + (lo - x->off), p + (lo - a), (size_t)(hi - lo));
	}
	w->direct += b - a;
	return h5_file_write(w->f, w->caddr + a, p, (size_t)(b - a));
}

int h5_overwrite_put(h5_overwriter *w, uint64_t off, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint64_t end, a, b;
	int rc;

	if (h5_add_overflow(off, len, &end))
		return h5_err_set(H5_ERR_RANGE, "write of %zu bytes at %llu overflows", len, (unsigned long long)off);
	if (!len)
		return 0;
	if (end > w->nbytes)
		return h5_ow_keep(w, off, p, len);    /* (past the end: the commit says so) */
	if (w->cls == H5_LAYOUT_CHUNKED)
		return h5_ow_put_chunked(w, off, p, len);
	if (!h5_addr_defined(w->caddr))
		return h5_ow_keep(w, off, p, len);
	a = (off + w->esize - 1) / w->esize * w->esize;
	b = end / w->esize * w->esize;
	if (a >= b)
		return h5_ow_keep(w, off, p, len);
	rc = put_in_place(w, a, p + (a - off), b);
	if (rc == 0)
		rc = h5_ow_keep(w, off, p, (size_t)(a - off));
	if (rc == 0)
		rc = h5_ow_keep(w, b, p + (b - off), (size_t)(end - b));
	return rc;
}

/* Whether d's fill value reads as zeros. */
static bool fill_is_zero(const h5_dataset *d)
{
	for (size_t i = 0; d->fill_elem && i < d->dtype->size; i++)
		if (d->fill_elem[i])
			return false;
	return true;
}

int h5_overwrite_punch(h5_overwriter *w, uint64_t off, uint64_t len)
{
	static const uint8_t zeros[65536];
	uint64_t end;
	int rc = 0;

	if (h5_add_overflow(off, len, &end) || end > w->nbytes)
		return h5_err_set(H5_ERR_RANGE, "punching %llu bytes at %llu: past the dataset's %llu",
				  (unsigned long long)len, (unsigned long long)off, (unsigned long long)w->nbytes);
	if (w->cls == H5_LAYOUT_CHUNKED)
		return h5_ow_punch_chunked(w, off, len);
	/* contiguous storage never allocated reads as the fill value: zeros
	 * already, or bytes only writing all of it would change */
	if (w->cls == H5_LAYOUT_CONTIGUOUS && !h5_addr_defined(w->caddr)) {
		h5_dataset *d = NULL;
		bool zero;

		rc = h5_dataset_open(&d, w->f, w->addr);
		if (rc < 0)
			return rc;
		zero = fill_is_zero(d);
		h5_dataset_close(d);
		if (zero)
			return 0;
	}
	for (uint64_t a = off; rc == 0 && a < end; a += sizeof(zeros))
		rc = h5_overwrite_put(w, a, zeros, (size_t)(end - a < sizeof(zeros) ? end - a : sizeof(zeros)));
	return rc;
}

/* Set the header's modification time; the chunk holding `keep` (if any)
 * is left to the caller to write last. */
static int touch_header(h5_ohdr_edit *e, h5_file *f, size_t keep)
{
	int rc = h5_ohdr_touch(e, (uint32_t)time(NULL));

	for (size_t c = 0; rc == 0 && c < e->oh->nchunks; c++)
		if (c != keep)
			rc = h5_ohdr_write_chunk(f, e, c);
	return rc;
}

static int edit_begin(h5_ohdr_edit *e, const h5_msg **lay, h5_file *f, uint64_t addr)
{
	int rc = h5_ohdr_load(&e->oh, f, addr);

	if (rc < 0)
		return rc;
	*lay = h5_ohdr_find(e->oh, H5_MSG_LAYOUT);
	if (!*lay || ((*lay)->flags & H5_MSG_FLAG_SHARED))
		return h5_err_set(H5_ERR_UNSUPPORTED, "object header 0x%llx: no layout message of its own",
				  (unsigned long long)addr);
	return h5_ohdr_edit_ranges(e);
}

static void edit_end(h5_ohdr_edit *e, h5_file *f, uint64_t addr)
{
	h5_cache_invalidate(f->meta, H5_CK_OHDR, addr);
	if (e->oh)
		h5_ohdr_free(e->oh);
	free(e->lo);
	free(e->hi);
}

/* Compact (IV.A.2.i, layout v3: version, class, size, then the data): the
 * data changes in the header copy, written in one write of its chunk. */
static int commit_compact(h5_overwriter *w, size_t n, bool durable)
{
	h5_ohdr_edit e = { 0 };
	const h5_msg *lay = NULL;
	size_t lc;
	int rc = edit_begin(&e, &lay, w->f, w->addr);

	if (rc == 0 && (lay->size < 4 || lay->data[1] != H5_LAYOUT_COMPACT ||
			(uint64_t)h5_le_decode(lay->data + 2, 2) < w->nbytes || lay->size - 4 < w->nbytes))
		rc = h5_err_set(H5_ERR_FORMAT, "compact layout message smaller than the dataset");
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = h5_ohdr_patch(&e, lay->addr + 4 + w->ext[i].off, w->ext[i].p, w->ext[i].len);
	lc = rc == 0 ? h5_ohdr_chunk_of(e.oh, lay->addr) : 0;
	if (rc == 0)
		rc = touch_header(&e, w->f, lc);
	if (rc == 0)
		rc = h5_ohdr_write_chunk(w->f, &e, lc);
	if (rc == 0 && durable)
		rc = h5_file_sync(w->f);
	edit_end(&e, w->f, w->addr);
	return rc;
}

/* txn.c stages an index writer's blocks; contiguous storage has none. */
static int noidx_write(void *w)
{
	(void)w;
	return 0;
}

static const h5_cidx_write_ops noidx = { .write = noidx_write };

/* Contiguous storage never allocated (libhdf5 allocates it at the first
 * write): all of it is written at the allocation end - fill, then the
 * extents - made durable and covered by the end of allocated space, and
 * then the layout message (v3: version, class, address, size) points at
 * it in one write of its chunk. */
static int commit_contig_new(h5_overwriter *w, h5_dataset *d, size_t n, bool durable)
{
	h5_ohdr_edit e = { 0 };
	const h5_msg *lay = NULL;
	uint8_t *fill = NULL, v[8];
	uint64_t addr = 0;
	size_t fl = 1 << 20, lc;
	h5_txn t;
	int rc = edit_begin(&e, &lay, w->f, w->addr);

	if (rc == 0 && (lay->size < 2u + w->f->fmt.sizeof_addr + w->f->fmt.sizeof_size || lay->data[1] != 1))
		rc = h5_err_set(H5_ERR_FORMAT, "contiguous layout message too short");
	if (rc == 0 && !(fill = malloc(fl)))
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (rc == 0)
		rc = h5_space_alloc(&addr, w->f, w->nbytes);
	for (uint64_t o = 0; rc == 0 && o < w->nbytes; o += fl) {
		size_t k = w->nbytes - o < fl ? (size_t)(w->nbytes - o) : fl;

		h5_dataset_fill(d, fill, o, k);
		rc = h5_file_write(w->f, addr + o, fill, k);
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = h5_file_write(w->f, addr + w->ext[i].off, w->ext[i].p, w->ext[i].len);
	if (rc == 0) {
		h5_txn_begin(&t, w->f, durable, &noidx, NULL);
		rc = h5_txn_stage(&t, w->last_end);
	}
	if (rc == 0) {
		h5_le_encode(v, addr, w->f->fmt.sizeof_addr);
		rc = h5_ohdr_patch(&e, lay->addr + 2, v, w->f->fmt.sizeof_addr);
	}
	lc = rc == 0 ? h5_ohdr_chunk_of(e.oh, lay->addr) : 0;
	if (rc == 0)
		rc = touch_header(&e, w->f, lc);
	if (rc == 0)
		rc = h5_txn_last(&t, &e, lc);
	if (rc == 0)
		w->last_end = t.end;
	free(fill);
	edit_end(&e, w->f, w->addr);
	return rc;
}

static int by_off(const void *a, const void *b)
{
	uint64_t x = ((const h5_ow_ext *)a)->off, y = ((const h5_ow_ext *)b)->off;

	return x < y ? -1 : x > y;
}

void h5_ow_free(h5_ow_ext *r, size_t m)
{
	for (size_t i = 0; r && i < m; i++)
		free(r[i].p);
	free(r);
}

int h5_ow_merge(h5_ow_ext **out, size_t *m, const h5_ow_ext *ext, size_t n)
{
	h5_ow_ext *s = malloc(n * sizeof(*s)), *r = calloc(n, sizeof(*r));
	size_t k = 0;
	int rc = 0;

	*out = r;
	*m = 0;
	if (!s || !r) {
		free(s);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	if (n == 0) {
		free(s);
		return 0;       /* nothing written (ext may be NULL) */
	}
	memcpy(s, ext, n * sizeof(*s));
	qsort(s, n, sizeof(*s), by_off);
	for (size_t i = 0; i < n; i++) {
		if (k && s[i].off <= r[k - 1].off + r[k - 1].len) {
			uint64_t e = s[i].off + s[i].len;

			if (e > r[k - 1].off + r[k - 1].len)
				r[k - 1].len = (size_t)(e - r[k - 1].off);
		} else {
			r[k].off = s[i].off;
			r[k++].len = s[i].len;
		}
	}
	for (size_t j = 0; j < k && rc == 0; j++)
		if (!(r[j].p = malloc(r[j].len ? r[j].len : 1)))
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	/* the extents in the order they were written: later ones win */
	for (size_t i = 0; i < n && rc == 0; i++) {
		size_t lo = 0, hi = k;

		while (hi - lo > 1) {
			size_t mid = (lo + hi) / 2;

			if (r[mid].off <= ext[i].off)
				lo = mid;
			else
				hi = mid;
		}
		memcpy(r[lo].p + (ext[i].off - r[lo].off), ext[i].p, ext[i].len);
	}
	*m = k;
	free(s);
	return rc;
}

/* Contiguous, allocated: in place, each byte written once (doc/OVERWRITE.md
 * on what a kill in the middle of a write leaves). */
static int commit_contig(h5_overwriter *w, h5_dataset *d, size_t n, bool durable)
{
	h5_ohdr_edit e = { 0 };
	const h5_msg *lay = NULL;
	int rc = 0;

	h5_ow_ext *r = NULL;
	size_t m = 0;

	if (!h5_addr_defined(d->layout.addr))
		return commit_contig_new(w, d, n, durable);
	if (n)      /* (none: only bytes written in place, to sync and date) */
		rc = h5_ow_merge(&r, &m, w->ext, n);
	for (size_t i = 0; i < m && rc == 0; i++)
		rc = h5_file_write(w->f, d->layout.addr + r[i].off, r[i].p, r[i].len);
	h5_ow_free(r, m);
	if (rc == 0)
		rc = edit_begin(&e, &lay, w->f, w->addr);
	if (rc == 0)
		rc = touch_header(&e, w->f, SIZE_MAX);
	if (rc == 0 && durable)
		rc = h5_file_sync(w->f);
	edit_end(&e, w->f, w->addr);
	return rc;
}

/* ---- append streams of the same dataset ---------------------------------------
 * An append stream (append.c) keeps the rows of a partly filled last chunk
 * row and the index address it builds on. An overwrite commits only while
 * every stream of the dataset is idle (nothing staged: its appenders
 * flushed), holding their locks (tried: append commits take them before
 * f->write_lock), and reloads them after it. */
static int streams_hold(h5_file *f, uint64_t addr)
{
	for (h5_astream *s = f->astreams; s; s = s->next) {
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
		for (h5_astream *t = f->astreams; t != s; t = t->next)
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

	for (h5_astream *s = f->astreams; s && n < SHOW_MAX; s = s->next)
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

static void streams_reload(h5_file *f, uint64_t addr, bool changed)
{
	for (h5_astream *s = f->astreams; s; s = s->next) {
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
	if (rc == 0 && (n || durable || w->direct || w->wc.n))
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
	/* Bytes past the end were taken before the dataset was emptied (a
	 * truncate through another descriptor: the later change wins, as in
	 * a plain file); they go. (A put past the end is refused by the
	 * caller before it is taken: issue 53.) */
	for (size_t i = 0; rc == 0 && d && i < n; i++)
		if (w->ext[i].off + w->ext[i].len > d->nbytes)
			w->ext[i].len = w->ext[i].off >= d->nbytes ? 0 : (size_t)(d->nbytes - w->ext[i].off);
	if (rc == 0 && d) {
		if (w->cls == H5_LAYOUT_CHUNKED)
			rc = h5_ow_chunked_commit(d, w->wc.v, w->wc.n, w->ext, n, durable, &w->last_end, &w->gone);
		else if (!n && !w->direct)
			rc = h5_file_sync(w->f);
		/* in place: every commit is synced, so that a later one's
		 * writes cannot reach the disk before an earlier one's (an
		 * element written in both would mix them after a power cut) */
		else if (w->cls == H5_LAYOUT_COMPACT)
			rc = commit_compact(w, n, true);
		else
			rc = commit_contig(w, d, n, true);
	}
	if (held)
		streams_reload(w->f, w->addr, rc == 0);
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
	w->direct = 0;
	/* (an error: their space is leaked, as FILE may reference them;
	 * but not when the commit was not tried) */
	if (arc < 0)
		h5_ow_whole_drop(w);
	w->wc.n = 0;
	w->wc.bytes = 0;
	h5_ow_whole_release(w);
	if (keep_n) {
		w->ext[0] = keep;
		w->n = 1;
		__atomic_store_n(&w->buffered, keep.len, __ATOMIC_RELAXED);
	}
	return rc;
}

void h5_overwrite_close(h5_overwriter *w)
{
	if (!w)
		return;
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
	for (size_t i = 0; i < w->n; i++)
		free(w->ext[i].p);
	free(w->ext);
	free(w);
}
