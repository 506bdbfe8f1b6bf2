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
 * All appenders of one dataset share a stream. Rows are STAGED as they
 * arrive: complete chunk rows are built (filtered on f->nthreads threads)
 * and written as new chunks beyond everything any structure references,
 * and their array elements are set on private copies of the EA blocks.
 * Nothing on disk points at them yet (staging is append_stage.c's). A
 * COMMIT (append_commit.c) makes staged rows visible, crash-safe by ordering alone
 * (doc/APPEND.md; the order is txn.c's, the space space.c's):
 *   1. the changed EA blocks as new blocks after the chunks; fsync;
 *   2. only when that space lies beyond the end of allocated space: the
 *      superblock's EOF address (reserving room ahead); fsync;
 *   3. the switch: the EA header in place (or, for a dataset that never
 *      had an index, the layout message's index address); fsync;
 *   4. the modification time, then dims[0] LAST; fsync only when the
 *      commit must be durable (fsync(), close).
 * Until 4, readers see the old dims[0], and everything the old dims cover
 * reads the same bytes through either the old or the new index. Commits
 * happen every commit_bytes of rows or commit_ns after the oldest
 * uncommitted row arrived, and on flush and close. Memory: the rows of
 * the incomplete chunk row plus one staging batch.
 */
#define _GNU_SOURCE /* sync_file_range */
#include "base.h"
#include "cache.h"
#include "file.h"
#include "ohdr.h"
#include "dspace.h"
#include "layout.h"
#include "filter.h"
#include "dataset.h"
#include "cidx.h"
#include "space.h"
#include "txn.h"
#include "append_int.h"
#include "dset_commit.h"
#include "file_ws.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A commit once this many bytes of rows are not committed, or this long
 * after the oldest of them arrived: the defaults of a new stream
 * (H5FS_APPEND_COMMIT_BYTES and H5FS_APPEND_COMMIT_MS override both, for
 * the tools and tests that use the engine alone); a caller with a policy
 * of its own gives it (h5_append_set_policy: the daemon's write
 * descriptors' kind). */
#define COMMIT_BYTES ((uint64_t)64 << 20)
#define COMMIT_MS 1000

struct h5_appender {
	h5_astream *s;
	uint8_t *part;          /* the beginning of a row not complete yet */
	size_t plen, pcap;
};

/* ---- what can grow ------------------------------------------------------------ */

static int check_layout(const h5_dataset *d, uint64_t *row_bytes)
{
	const h5_layout *l = &d->layout;
	uint64_t rb;

	if (l->cls != H5_LAYOUT_CHUNKED)
		return h5_err_set(H5_ERR_PERM, "not chunked (layout class %u): cannot grow", l->cls);
	if (!h5_cidx_write_ops_of(l->idx_type))
		return h5_err_set(H5_ERR_PERM, "chunk index %s: cannot grow", h5_layout_index_name(l->idx_type));
	if (d->space.type != H5_SPACE_SIMPLE || d->space.rank == 0 || d->space.rank != l->ndims)
		return h5_err_set(H5_ERR_PERM, "dataspace is not simple: cannot grow");
	/* unlimited, or a fixed maximum not reached yet (fixed array, implicit
	 * and single-chunk indexes grow within it) */
	if (d->space.maxdims[0] != H5_UNLIMITED && d->space.maxdims[0] <= d->space.dims[0])
		return h5_err_set(H5_ERR_PERM, "dimension 0 is at its maximum (%llu): cannot grow",
				  (unsigned long long)d->space.maxdims[0]);
	/* an extensible array indexes one unlimited dimension, dimension 0;
	 * the others any: dims[1:] stay as they are while appending */
	/* libhdf5 allocates an implicit index's chunks (all of the maximum
	 * dimensions) only once the dataset has elements; appending places
	 * chunks there and never allocates them, so refuse here, before
	 * anything is written, rather than at the first write. */
	if (l->idx_type == H5_CIDX_IMPLICIT && !h5_addr_defined(l->idx_addr))
		return h5_err_set(H5_ERR_PERM, "implicit index without allocated chunks (empty dataset): cannot grow");
	if (l->idx_type == H5_CIDX_EARRAY && d->space.maxdims[0] != H5_UNLIMITED)
		return h5_err_set(H5_ERR_PERM, "extensible array over a dimension 0 that is not unlimited: cannot grow");
	for (unsigned i = 1; i < d->space.rank && l->idx_type == H5_CIDX_EARRAY; i++)
		if (d->space.maxdims[i] == H5_UNLIMITED)
			return h5_err_set(H5_ERR_PERM, "dimension %u is unlimited too: cannot grow", i);
	if (d->has_vlen || !d->dtype || d->dtype->size == 0)
		return h5_err_set(H5_ERR_PERM, "variable-length datatype: cannot append raw rows");
	if (h5_dataset_row_bytes(&rb, d) < 0)
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

		if (h5_filter_encode_check(&d->pline.filters[i]) < 0)
			return h5_err_wrap(H5_ERR_PERM, "filter %s (%u) cannot be written: cannot grow: ",
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

/* ---- streams ------------------------------------------------------------------- */

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);
	unsigned long long x;
	char *end;

	if (!v || !*v)
		return dflt;
	errno = 0;
	x = strtoull(v, &end, 10);
	return errno || *end || x == 0 ? dflt : (uint64_t)x;
}

static void stream_free(h5_astream *s)
{
	if (!s)
		return;
	h5_file_unreserve(s->f, &s->reserved);
	if (s->ea)
		s->wops->free(s->ea);
	h5_freesp_clear(&s->gone);      /* (freed by h5_append_close) */
	h5_freesp_clear(&s->partial);
	free(s->staged);
	h5_dataset_close(s->d);
	free(s->buf);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static int buf_reserve(h5_astream *s, uint64_t rows)
{
	uint64_t ncap;
	uint8_t *nb;

	if (rows <= s->cap)
		return 0;
	ncap = s->cap ? s->cap : ((uint64_t)64 << 10) / s->row_bytes + 1;
	while (ncap < rows)
		ncap *= 2;
	if (ncap > s->stage_rows && rows <= s->stage_rows)
		ncap = s->stage_rows;
	nb = realloc(s->buf, (size_t)(ncap * s->row_bytes));
	if (!nb)
		return h5_err_set(H5_ERR_NOMEM, "out of memory buffering %llu rows",
				  (unsigned long long)rows);
	s->buf = nb;
	s->cap = ncap;
	return 0;
}

int h5_astream_cut(h5_astream *s, uint64_t rows)
{
	int rc = 0;

	if (rows == s->committed)
		return 0;
	/* (a growth: the rows past the old end read the fill value, the
	 * partly filled chunk row they end in is read again by the caller) */
	stream_set_row0(s, rows - rows % s->chunk[0]);
	s->nbuf = rows - s->row0;
	if (s->nbuf)
		rc = buf_reserve(s, s->nbuf);
	__atomic_store_n(&s->committed, rows, __ATOMIC_RELEASE);
	s->since = 0;
	return rc < 0 ? h5_astream_fail(s, rc) : 0;
}

static int stream_new(h5_astream **out, h5_file *f, uint64_t addr)
{
	h5_astream *s = NULL;
	h5_dataset *d = NULL;
	h5_ohdr *oh = NULL;
	const h5_msg *ds, *lay;
	uint64_t rb = 0, acc = 1, k;
	int rc;

	*out = NULL;
	rc = h5_dataset_open(&d, f, addr);
	if (rc < 0)
		return rc;
	rc = check_layout(d, &rb);
	if (rc == 0)
		rc = check_filters(d);
	/* rows are the values the reads show, not the bits stored (a
	 * truncate, which writes no values, still grows or empties it) */
	if (rc == 0 && d->conv)
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "numbers at a bit offset or precision (n-bit datatype): "
				"they read converted, rows are not appended as bits");
	if (rc == 0)
		rc = h5_ohdr_get(&oh, f, addr);
	if (rc == 0)
		rc = h5_dset_commit_msgs(&ds, &lay, oh);
	if (oh)
		h5_ohdr_release(f, oh);
	if (rc < 0) {
		h5_dataset_close(d);
		return rc;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		h5_dataset_close(d);
		return h5_err_set(H5_ERR_NOMEM, "out of memory opening an appender");
	}
	pthread_mutex_init(&s->lock, NULL);
	s->f = f;
	s->addr = addr;
	s->d = d;
	s->rank = d->space.rank;
	s->esize = d->dtype->size;
	s->row_bytes = rb;
	s->filtered = d->pline.n != 0;
	s->ea_addr = d->layout.idx_addr;
	for (unsigned i = 0; i < s->rank; i++) {
		s->chunk[i] = d->layout.chunk[i];
		if (s->chunk[i] == 0) {
			rc = h5_err_set(H5_ERR_FORMAT, "chunk dimension %u is 0", i);
			goto out;
		}
	}
	s->ncells = 1;
	for (unsigned i = s->rank; i-- > 1;) {
		uint64_t mx = d->space.maxdims[i];
		/* the arrays' linearisation is over the maximum dims; a v1 B-tree
		 * may have other unlimited ones (it uses the coordinates) */
		uint64_t mc = mx == H5_UNLIMITED ? 1 : mx / s->chunk[i] + (mx % s->chunk[i] != 0);

		s->dims[i] = d->space.dims[i];
		s->nch[i] = s->dims[i] / s->chunk[i] + (s->dims[i] % s->chunk[i] != 0);
		s->down[i] = acc;
		if (h5_mul_overflow(acc, mc, &acc) || h5_mul_overflow(s->ncells, s->nch[i], &s->ncells)) {
			rc = h5_err_set(H5_ERR_LIMIT, "chunk grid overflows");
			goto out;
		}
	}
	s->down[0] = acc;
	if (h5_mul_overflow(s->chunk[0], rb, &s->crow_bytes) || s->crow_bytes > SIZE_MAX / 4 ||
	    d->chunk_bytes == 0 || d->chunk_bytes > SIZE_MAX / 4) {
		rc = h5_err_set(H5_ERR_LIMIT, "chunks of %llu bytes in rows of %llu bytes are too large to append",
				(unsigned long long)d->chunk_bytes, (unsigned long long)rb);
		goto out;
	}
	s->simple = s->ncells == 1 && d->chunk_bytes == s->crow_bytes;
	s->chunk_bytes = d->chunk_bytes;
	s->prow = UINT64_MAX;
	for (unsigned i = 1; i < s->rank; i++)
		if (s->chunk[i] != s->dims[i])
			s->simple = false;

	s->commit_bytes = env_u64("H5FS_APPEND_COMMIT_BYTES", COMMIT_BYTES);
	k = env_u64("H5FS_APPEND_COMMIT_MS", COMMIT_MS);
	s->commit_ns = k > UINT64_MAX / 1000000 ? UINT64_MAX : k * 1000000;
	h5_astream_stage_rows(s);

	s->committed = d->space.dims[0];
	stream_set_row0(s, s->committed - s->committed % s->chunk[0]);
	s->nbuf = s->committed - s->row0;
	if (s->nbuf) {
		rc = buf_reserve(s, s->nbuf);
		if (rc == 0)
			rc = h5_dataset_read(d, s->buf, s->row0 * rb, (size_t)(s->nbuf * rb));
		if (rc < 0)
			goto out;
		h5_astage_partial_find(s);
	}
	s->last_end = h5_space_end(f);
	*out = s;
out:
	if (rc < 0)
		stream_free(s);
	return rc;
}

/* Whole rows only: never more than the limits of the dataspace. */
static int check_rows(const h5_astream *s, uint64_t add)
{
	uint64_t n, bytes;

	if (h5_add_overflow(s->row0 + s->nbuf, add, &n) || h5_mul_overflow(n, s->row_bytes, &bytes) ||
	    bytes > (uint64_t)INT64_MAX ||
	    (s->f->fmt.sizeof_size < 8 && n >= (UINT64_C(1) << (8 * s->f->fmt.sizeof_size)) - 1))
		return h5_err_set(H5_ERR_LIMIT, "dataset would exceed the size limit");
	if (n > s->d->space.maxdims[0])
		return h5_err_set(H5_ERR_PERM, "%llu rows would exceed the maximum of %llu: nothing appended",
				  (unsigned long long)n, (unsigned long long)s->d->space.maxdims[0]);
	return 0;
}

/* Take n whole rows: buffered, and staged once a batch is complete. Whole
 * chunk rows of a simple unfiltered dataset go from src to the file when
 * nothing is buffered. */
static int push_rows(h5_astream *s, const uint8_t *src, uint64_t n)
{
	int rc;

	if (n && s->row0 + s->nbuf == s->committed)
		s->since = h5_astream_now_ns();
	while (n) {
		uint64_t m;

		if (s->nbuf == 0 && s->simple && !s->filtered && n >= s->chunk[0]) {
			m = n / s->chunk[0];
			if (m > WINDOW_BYTES / s->crow_bytes)
				m = WINDOW_BYTES / s->crow_bytes ? WINDOW_BYTES / s->crow_bytes : 1;
			rc = h5_astage_contiguous(s, src, s->row0 / s->chunk[0], m, s->crow_bytes);
			if (rc < 0)
				return h5_astream_fail(s, rc);
			m *= s->chunk[0];
			stream_set_row0(s, s->row0 + m);
		} else {
			bool direct_next = false;

			m = s->stage_rows - s->nbuf < n ? s->stage_rows - s->nbuf : n;
			/* A simple unfiltered stream with a chunk row begun and
			 * whole ones to follow: only the rest of the begun one is
			 * copied, and staged, so that the whole ones go from src
			 * (a writer whose buffers are not page-aligned sends
			 * requests cut at page edges: every byte was copied) */
			if (s->simple && !s->filtered && s->nbuf && n >= s->chunk[0] + s->chunk[0] - s->nbuf % s->chunk[0]) {
				uint64_t to = s->chunk[0] - s->nbuf % s->chunk[0];

				if (to < m)
					m = to;
				direct_next = (s->nbuf + m) % s->chunk[0] == 0;
			}
			rc = buf_reserve(s, s->nbuf + m);
			if (rc < 0)
				return h5_astream_fail(s, rc);
			memcpy(s->buf + s->nbuf * s->row_bytes, src, (size_t)(m * s->row_bytes));
			s->nbuf += m;
			if ((s->nbuf >= s->stage_rows || direct_next) && (rc = h5_astage_complete(s)) < 0)
				return h5_astream_fail(s, rc);
		}
		src += m * s->row_bytes;
		n -= m;
	}
	return 0;
}

/* ---- open / write / flush / close ---------------------------------------------- */

int h5_append_open(h5_appender **out, h5_file *f, uint64_t dset_addr)
{
	struct h5_wstate *ws = h5_ws(f);
	h5_astream *s;
	h5_appender *a;
	int rc = 0;

	*out = NULL;
	if (!f->writable)
		return h5_err_set(H5_ERR_ROFS, "%s is open read-only", f->path);
	a = calloc(1, sizeof(*a));
	if (!a)
		return h5_err_set(H5_ERR_NOMEM, "out of memory opening an appender");
	pthread_mutex_lock(&f->write_lock);
	for (h5_astream **pp = &ws->astreams; (s = *pp) != NULL; pp = &s->next) {
		if (s->addr != dset_addr)
			continue;
		if (!h5_astream_failed(s))
			break;
		/* a failed stream takes no rows: a fresh one starts from the file */
		*pp = s->next;
		s->unlinked = true;
		s = NULL;
		break;
	}
	if (s) {
		s->refs++;
	} else {
		rc = stream_new(&s, f, dset_addr);
		if (rc == 0) {
			s->refs = 1;
			s->next = ws->astreams;
			ws->astreams = s;
		}
	}
	pthread_mutex_unlock(&f->write_lock);
	if (rc < 0) {
		free(a);
		return h5_err_wrap(rc, "dataset at 0x%llx: ", (unsigned long long)dset_addr);
	}
	a->s = s;
	*out = a;
	return 0;
}

void h5_append_set_policy(h5_appender *a, uint64_t commit_bytes, uint64_t commit_ms)
{
	h5_astream *s = a->s;
	uint64_t rows;

	pthread_mutex_lock(&s->lock);
	if (commit_bytes)
		s->commit_bytes = commit_bytes;
	if (commit_ms)
		s->commit_ns = commit_ms > UINT64_MAX / 1000000 ? UINT64_MAX : commit_ms * 1000000;
	/* the staging batch follows commit_bytes; never below the rows
	 * buffered now (a batch completes when they reach it: push_rows) */
	rows = s->stage_rows;
	h5_astream_stage_rows(s);
	if (s->stage_rows <= s->nbuf)
		s->stage_rows = rows;
	pthread_mutex_unlock(&s->lock);
}

uint64_t h5_append_size(const h5_appender *a)
{
	h5_astream *s = a->s;
	uint64_t n;

	pthread_mutex_lock(&s->lock);
	n = (s->row0 + s->nbuf) * s->row_bytes + a->plen;
	pthread_mutex_unlock(&s->lock);
	return n;
}

uint64_t h5_append_committed(const h5_appender *a)
{
	return __atomic_load_n(&a->s->committed, __ATOMIC_ACQUIRE) * a->s->row_bytes;
}

size_t h5_append_pending(const h5_appender *a)
{
	h5_astream *s = a->s;
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = (size_t)((s->row0 + s->nbuf - s->committed) * s->row_bytes) + a->plen;
	pthread_mutex_unlock(&s->lock);
	return n;
}

uint64_t h5_append_row_bytes(const h5_appender *a) { return a->s->row_bytes; }

static int part_add(h5_appender *a, const uint8_t *p, size_t n)
{
	if (a->plen + n > a->pcap) {
		size_t ncap = a->pcap ? a->pcap : 256;
		uint8_t *np;

		while (ncap < a->plen + n)
			ncap *= 2;
		np = realloc(a->part, ncap);
		if (!np)
			return h5_err_set(H5_ERR_NOMEM, "out of memory buffering a row");
		a->part = np;
		a->pcap = ncap;
	}
	memcpy(a->part + a->plen, p, n);
	a->plen += n;
	return 0;
}

int h5_append_write(h5_appender *a, const void *buf, size_t len)
{
	h5_astream *s = a->s;
	const uint8_t *p = buf;
	uint64_t rb = s->row_bytes, whole;
	int rc;

	pthread_mutex_lock(&s->lock);
	if (h5_astream_failed(s)) {
		rc = h5_astream_refuse(s);
		goto out;
	}
	rc = check_rows(s, (uint64_t)(a->plen + len) / rb);   /* plen + len cannot wrap: plen < rb */
	if (rc < 0)
		goto out;
	if (a->plen) {
		size_t take = rb - a->plen < len ? (size_t)(rb - a->plen) : len;

		rc = part_add(a, p, take);
		if (rc < 0)
			goto out;
		p += take;
		len -= take;
		if (a->plen < rb)
			goto out;
		rc = push_rows(s, a->part, 1);
		a->plen = 0;
		if (rc < 0)
			goto out;
	}
	whole = len / rb;
	if (whole) {
		rc = push_rows(s, p, whole);
		if (rc < 0)
			goto out;
		p += whole * rb;
		len -= (size_t)(whole * rb);
	}
	if (len) {
		rc = part_add(a, p, len);
		if (rc < 0)
			goto out;
	}
	rc = h5_astream_maybe_commit(s);
out:
	pthread_mutex_unlock(&s->lock);
	if (rc < 0)
		return h5_err_wrap(rc, "append to dataset at 0x%llx: ", (unsigned long long)s->addr);
	return 0;
}

int h5_append_flush(h5_appender *a)
{
	h5_astream *s = a->s;
	int rc;

	pthread_mutex_lock(&s->lock);
	rc = h5_astream_commit(s, true, true);
	pthread_mutex_unlock(&s->lock);
	if (rc < 0)
		return h5_err_wrap(rc, "append to dataset at 0x%llx: ", (unsigned long long)s->addr);
	return 0;
}

/* A reader wants rows not committed yet (the daemon keeps none of their
 * bytes: member/tail.c): every whole row received is committed now, the
 * incomplete chunk row staged with fill as fsync's commit does, in the
 * same order as every commit; only the last fsync is left out, as for a
 * periodic commit (h5_astream_commit(s, true, false) is maybe_commit's when nothing
 * is staged). */
int h5_append_show(h5_appender *a)
{
	h5_astream *s = a->s;
	int rc;

	pthread_mutex_lock(&s->lock);
	rc = h5_astream_commit(s, true, false);
	pthread_mutex_unlock(&s->lock);
	if (rc < 0)
		return h5_err_wrap(rc, "append to dataset at 0x%llx: ", (unsigned long long)s->addr);
	return 0;
}

void h5_append_discard(h5_appender *a)
{
	a->plen = 0;
}

h5_astream *h5_astream_hold(h5_file *f, uint64_t addr)
{
	h5_astream *s;

	pthread_mutex_lock(&f->write_lock);
	for (s = h5_ws(f)->astreams; s && s->addr != addr; s = s->next)
		;
	if (s)
		s->refs++;
	pthread_mutex_unlock(&f->write_lock);
	return s;
}

void h5_astream_release(h5_file *f, h5_astream *s)
{
	bool last;

	pthread_mutex_lock(&f->write_lock);
	last = --s->refs == 0;
	if (last)
		h5_space_free_all(f, &s->gone);
	if (last && !s->unlinked) {
		for (h5_astream **pp = &h5_ws(f)->astreams; *pp; pp = &(*pp)->next)
			if (*pp == s) {
				*pp = s->next;
				break;
			}
	}
	pthread_mutex_unlock(&f->write_lock);
	if (last)
		stream_free(s);
}

void h5_append_drop(h5_appender *a)
{
	if (!a)
		return;
	h5_astream_release(a->s->f, a->s);
	free(a->part);
	free(a);
}

int h5_append_close(h5_appender *a, size_t *pending_partial)
{
	h5_astream *s;
	h5_file *f;
	int rc;

	if (pending_partial)
		*pending_partial = 0;
	if (!a)
		return 0;
	s = a->s;
	f = s->f;
	rc = h5_append_flush(a);
	if (rc == 0 && a->plen) {
		if (pending_partial)
			*pending_partial = a->plen;
		rc = h5_err_set(H5_ERR_INVAL, "%zu trailing bytes do not make a whole row of %llu bytes: not appended",
				a->plen, (unsigned long long)s->row_bytes);
	}
	h5_astream_release(f, s);
	free(a->part);
	free(a);
	return rc;
}

/* Index blocks and headers a commit may write besides the chunks: the
 * blocks it copies (a few, each at most a few KiB; a v1 B-tree path, an
 * extensible array's data block and super block) - generous, for a disk
 * that fills, not a bound anybody relies on for more. */
#define RESERVE_INDEX ((uint64_t)64 << 10)

int h5_append_reserve(h5_appender *a, uint64_t len)
{
	h5_astream *s = a->s;
	uint64_t crows, cells, need, placed, committed, staged;

	/* The caller counts every byte not committed; those of rows staged
	 * already (or skipped: sparse growth) have their space (taken at the
	 * allocation end, which this reserve starts from): counted again,
	 * an append could use half the free disk (a 32 MiB file system
	 * refused at 16 MiB) */
	placed = __atomic_load_n(&s->placed, __ATOMIC_ACQUIRE);
	committed = __atomic_load_n(&s->committed, __ATOMIC_ACQUIRE);
	if (placed > committed && !h5_mul_overflow(placed - committed, s->row_bytes, &staged))
		len = staged < len ? len - staged : 0;

	/* whole chunk rows staged (a partial one filled; one more for rows
	 * straddling), each at its raw size - a filter's output larger than
	 * its input is stored raw. Constant fields only: no wait for the
	 * stream's lock, which an append's staging holds */
	crows = (len / s->row_bytes + s->chunk[0]) / s->chunk[0] + 1;
	if (h5_mul_overflow(crows, s->ncells, &cells) || h5_mul_overflow(cells, s->chunk_bytes, &need) ||
	    h5_add_overflow(need, RESERVE_INDEX, &need))
		return h5_err_set(H5_ERR_LIMIT, "append of %llu bytes: too large", (unsigned long long)len);
	return h5_file_reserve(s->f, &s->reserved, need);
}
