/*
 * append_commit.c - making an append stream's staged rows visible
 * (append.c has the streams and the appender API, append_stage.c the
 * staging): the ordered commit of doc/APPEND.md through txn.c - the index
 * writer's blocks, fsync, the EOF address, fsync, the switch, fsync, the
 * modification time and dims[0] last - and when a commit is due.
 */
#include "base.h"
#include "rd.h"
#include "cache.h"
#include "file.h"
#include "ohdr.h"
#include "dataset.h"
#include "dspace.h"
#include "freesp.h"
#include "space.h"
#include "txn.h"
#include "loose.h"
#include "append_int.h"
#include "dset_commit.h"
#include "file_ws.h"

#include <pthread.h>
#include <time.h>

/* ... or once this many array elements are set (bounds the EA writer) */
#define COMMIT_MAX_ELMTS ((uint64_t)1 << 20)

/* ---- committing ---------------------------------------------------------------- */

/* Chunks of a new file's dataset (loose.h) made exactly its rows at its
 * first commit, 4 KiB at least, when they are fewer than one chunk (cp
 * makes 64 KiB chunks, for large copies: cp -r of 1,000 files of 4 KiB
 * wrote and kept 64 KiB each, 17 times the bytes; issue 55. The smallest
 * power of two, as it was, kept cp -r of files of 1-64 KiB at 1.4 times
 * their bytes, a multiple of 4 KiB at 1.14: issue 69 item 4; the 4 KiB
 * floor keeps a later append to a tiny file from making tiny chunks). Only before anything was staged, indexed or committed, and
 * only while the header is loose: its layout message (v3, chunked, as
 * dset_enc.c writes one) is patched in place with no order to keep.
 * Later rows (cat >> of the file) go into the smaller chunks. Under
 * write_lock; 0 also when nothing was changed. */
static int rechunk_small(h5_astream *s)
{
	h5_file *f = s->f;
	h5_ohdr_edit e = { 0 };
	const h5_msg *ds, *lay;
	h5_dataset *d = NULL;
	uint64_t unit = s->esize && s->esize < 4096 ? 4096 / s->esize : 1, c0;
	uint8_t v[4];
	bool written = false;
	int rc;

	if (s->rank != 1 || s->filtered || s->committed || s->row0 || s->ea || s->nstaged || !s->nbuf ||
	    !h5_loose_enter(f, s->addr))
		return 0;
	h5_loose_leave(f, true);
	c0 = s->nbuf > unit ? s->nbuf : unit;
	if (c0 >= s->chunk[0])
		return 0;
	/* the dataset as FILE has it now, not as the stream last saw it: a
	 * truncate(2) through another path may have grown it meanwhile */
	rc = h5_dataset_open(&d, f, s->addr);
	if (rc < 0 || d->space.dims[0] != 0 || h5_addr_defined(d->layout.idx_addr) || d->layout.chunk[0] != s->chunk[0]) {
		if (d)
			h5_dataset_close(d);
		h5_err_clear();
		return 0;
	}
	h5_dataset_close(d);
	d = NULL;
	rc = h5_ohdr_load(&e.oh, f, s->addr);
	if (rc == 0)
		rc = h5_dset_commit_msgs(&ds, &lay, e.oh);
	if (rc < 0 || lay->size < 3 + (uint32_t)f->fmt.sizeof_addr + 8 || lay->data[0] != 3 || lay->data[1] != 2 ||
	    lay->data[2] != 2)
		goto out;       /* (an error: the commit below reports it) */
	rc = h5_ohdr_edit_ranges(&e);
	h5_le_encode(v, c0, 4);
	if (rc == 0)
		rc = h5_ohdr_patch(&e, lay->addr + 3 + f->fmt.sizeof_addr, v, 4);
	if (rc == 0)
		rc = h5_ohdr_write_chunk(f, &e, h5_ohdr_chunk_of(e.oh, lay->addr));
	written = true;         /* (perhaps partly, when it failed) */
	h5_cache_invalidate(f->meta, H5_CK_OHDR, s->addr);
	if (rc == 0)
		rc = h5_dataset_open(&d, f, s->addr);
	if (rc == 0 && (d->layout.chunk[0] != c0 || d->chunk_bytes != c0 * s->row_bytes)) {
		h5_dataset_close(d);
		rc = h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: chunks not %llu after the patch",
				(unsigned long long)s->addr, (unsigned long long)c0);
	}
	if (rc == 0) {
		h5_dataset_close(s->d);
		s->d = d;
		s->chunk[0] = c0;
		s->crow_bytes = c0 * s->row_bytes;
		s->chunk_bytes = d->chunk_bytes;
		h5_astream_stage_rows(s);
		__atomic_add_fetch(&h5_ws(f)->relayouts, 1, __ATOMIC_RELEASE);
	}
out:
	if (e.oh)
		h5_ohdr_free(e.oh);
	free(e.lo);
	free(e.hi);
	if (rc < 0 && !written) {
		h5_err_clear();         /* nothing changed: the chunks stay as they were */
		rc = 0;
	}
	return rc;              /* else the header and the stream disagree: it fails */
}

/* Nothing new to show, but a durable request: fsync what earlier commits
 * left unsynced, and give back a reserve. */
static int commit_sync(h5_astream *s)
{
	h5_file *f = s->f;
	int rc;

	h5_txn t;
	bool loose;

	pthread_mutex_lock(&f->write_lock);
	/* a loose object: nothing to make durable yet (loose.h), and the
	 * EOF address lowered and FILE cut without an fsync between could
	 * land in the wrong order (the txn skips it) */
	loose = h5_loose_enter(f, s->addr);
	h5_txn_begin(&t, f, true, NULL, NULL);
	rc = h5_txn_idle(&t, s->unsynced);
	h5_loose_leave(f, loose);
	pthread_mutex_unlock(&f->write_lock);
	if (rc == 0)
		s->unsynced = false;
	return rc;
}

/* After a commit of the stream's staged rows: when it staged the chunk
 * row a previous commit left partly filled, the chunks that commit wrote
 * for it are referenced no more (freed, as the index blocks it copied, at
 * the next commit or the close, with this commit's ticket). */
static void partial_release(h5_astream *s, uint64_t ticket)
{
	bool again = false;

	for (size_t i = 0; i < s->nstaged && !again; i++)
		again = s->staged[i].r == s->prow;
	if (!again)
		return;
	for (size_t i = 0; i < s->partial.n; i++)
		if (h5_freesp_add(&s->gone, s->partial.v[i].addr, s->partial.v[i].len, ticket) < 0)
			break;  /* (out of memory: left unreferenced) */
	h5_freesp_clear(&s->partial);
	s->prow = UINT64_MAX;
}

/* After the stream's own commit that made n1 rows visible: the old
 * partial chunks released (partial_release); a chunk row left partly
 * filled now remembers its chunks. */
static void partial_settle(h5_astream *s, uint64_t n1, uint64_t ticket)
{
	uint64_t r = n1 % s->chunk[0] ? n1 / s->chunk[0] : UINT64_MAX;

	partial_release(s, ticket);
	if (r != UINT64_MAX) {
		if (s->prow != r)
			h5_freesp_clear(&s->partial);
		s->prow = r;
		for (size_t i = 0; i < s->nstaged; i++) {
			const h5_chunk_rec *c = &s->staged[i].rec;

			if (s->staged[i].r == r && h5_freesp_add(&s->partial, c->addr, c->size ? c->size : s->chunk_bytes, 0) < 0)
				break;
		}
	}
	s->nstaged = 0;
}

/* Every complete chunk row in the buffer staged, and (partial) the
 * incomplete one with fill, unless its rows are all committed: the
 * staging of the stream's own commit and of one another writer makes. */
static int stage_all(h5_astream *s, bool partial)
{
	int rc = h5_astage_complete(s);

	if (rc == 0 && partial && s->nbuf && s->row0 + s->nbuf > s->committed)
		rc = h5_astage_chunks(s, s->row0 / s->chunk[0], s->row0 / s->chunk[0] + 1, s->row0 + s->nbuf);
	return rc < 0 ? h5_astream_fail(s, rc) : 0;
}

/* Make the staged rows visible: all whole rows received (partial: the
 * incomplete chunk row is staged with fill first) or only the complete
 * chunk rows. durable: dims[0] is fsync'd before returning. */
int h5_astream_commit(h5_astream *s, bool partial, bool durable)
{
	h5_file *f = s->f;
	h5_txn t = { 0 };
	uint64_t n1;
	bool loose = false;
	int rc;

	if (h5_astream_failed(s))
		return h5_astream_refuse(s);
	if (partial && !s->committed && !s->row0 && !s->ea) {
		pthread_mutex_lock(&f->write_lock);
		rc = rechunk_small(s);
		pthread_mutex_unlock(&f->write_lock);
		if (rc < 0)
			return h5_astream_fail(s, rc);
	}
	rc = stage_all(s, partial);
	if (rc < 0)
		return rc;
	n1 = partial ? s->row0 + s->nbuf : s->row0 > s->committed ? s->row0 : s->committed;
	if (n1 == s->committed) {
		rc = durable ? commit_sync(s) : 0;
		if (partial)
			h5_file_unreserve(f, &s->reserved);     /* (nothing waits) */
		return rc < 0 ? h5_astream_fail(s, rc) : 0;
	}

	pthread_mutex_lock(&f->write_lock);
	/* a new file not linked yet: nothing to order (loose.h) */
	loose = h5_loose_enter(f, s->addr);
	h5_space_free_all(f, &s->gone);
	if (!s->ea) {
		rc = h5_err_set(H5_ERR_INVAL, "append: rows staged without index entries");
		goto out;
	}
	/* the dataset's one ordered commit (dset_commit.c), dims[0] last;
	 * its last fsync after write_lock, below: shared with other writers */
	h5_txn_begin(&t, f, durable, s->wops, s->ea);
	t.sync_later = true;
	rc = h5_dset_commit(&t, s->addr, n1, s->last_end);
	if (rc < 0)
		goto out;
	s->ea_addr = s->wops->addr(s->ea);
	if (s->wops->freed)
		s->wops->freed(s->ea, &s->gone, t.ticket);
	partial_settle(s, n1, t.ticket);
	s->last_end = t.end;
	s->unsynced = !durable;
	__atomic_store_n(&s->committed, n1, __ATOMIC_RELEASE);
out:
	if (s->ea)
		s->wops->invalidate(s->ea);
	h5_loose_leave(f, loose);
	pthread_mutex_unlock(&f->write_lock);
	/* the rows answered so far committed (or the stream failed): what
	 * was held for them goes back */
	h5_file_unreserve(f, &s->reserved);
	if (s->ea)
		s->wops->free(s->ea);
	s->ea = NULL;
	s->nset = 0;
	s->nstaged = 0;
	/* the last write durable (a loose dataset: with the commit linking it) */
	if (rc == 0)
		rc = h5_txn_done(&t);
	if (rc < 0)
		/* the file holds the old state or a complete newer one; which,
		 * this stream cannot tell: it takes no more rows */
		return h5_astream_fail(s, rc);
	s->since = s->row0 + s->nbuf > n1 ? h5_astream_now_ns() : 0;
	return 0;
}

/* ---- a commit another writer of the dataset makes -------------------------------
 * An overwrite that meets rows not committed yet (overwrite.c) commits
 * them with its own bytes, in its one ordered commit: the stream stages
 * them as its own commit would, lends its index writer, and hears how it
 * went (append_int.h). */
int h5_astream_join(h5_astream *s, uint64_t *rows)
{
	int rc;

	*rows = __atomic_load_n(&s->committed, __ATOMIC_ACQUIRE);
	if (h5_astream_failed(s))
		return h5_astream_refuse(s);
	rc = stage_all(s, true);
	if (rc < 0)
		return rc;
	if (s->row0 + s->nbuf > *rows)
		*rows = s->row0 + s->nbuf;
	return 0;
}

void h5_astream_joined(h5_astream *s, int rc, uint64_t rows, uint64_t ticket, uint64_t end, bool durable)
{
	if (rc == 0 && s->ea) {
		/* the old partial chunks released; the partly filled chunk
		 * row's chunks now are found again by the caller's reload (the
		 * overwrite may have replaced what was staged) */
		partial_release(s, ticket);
		h5_freesp_clear(&s->partial);
		s->prow = UINT64_MAX;
		s->last_end = end;
		s->unsynced = !durable;
		__atomic_store_n(&s->committed, rows, __ATOMIC_RELEASE);
		s->since = 0;
	}
	if (s->ea) {
		s->wops->invalidate(s->ea);
		s->wops->free(s->ea);
		s->ea = NULL;
	}
	s->nset = 0;
	s->nstaged = 0;
	/* the file holds the old state or the complete new one; which, the
	 * stream cannot tell: it takes no more rows */
	if (rc < 0)
		h5_astream_fail(s, rc);
}

void h5_astream_joined_end(h5_astream *s)
{
	h5_file_unreserve(s->f, &s->reserved);
}

/* After rows arrived: commit when enough wait or the oldest waited long
 * enough. Only complete chunk rows, unless none is staged (chunk rows
 * larger than commit_bytes, or a slow writer). */
int h5_astream_maybe_commit(h5_astream *s)
{
	uint64_t total = s->row0 + s->nbuf, staged;

	if (total == s->committed)
		return 0;
	staged = s->row0 > s->committed ? s->row0 - s->committed : 0;
	if ((total - s->committed) * s->row_bytes < s->commit_bytes && s->nset < COMMIT_MAX_ELMTS &&
	    h5_astream_now_ns() - s->since < s->commit_ns)
		return 0;
	return h5_astream_commit(s, staged == 0, false);
}

