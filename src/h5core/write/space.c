/*
 * space.c - allocation and the end of the file (space.h).
 *
 * HDF5 keeps free-space managers (spec III.H) and aggregators; h5fs keeps
 * one pointer and a list: new space starts at the allocation end, which
 * starts at the superblock's end of allocated space (II.A "End of File
 * Address"), or comes from the free list (base/freesp.c) of extents this
 * session's commits stopped referencing (replaced chunks and index
 * blocks, old attribute values' global heap collections, old dense
 * stores, old continuation chunks: h5_space_free). A freed extent waits
 * for an fsync that began after the commit that freed it (the ticket of
 * h5_file_sync): before, the commit's last write may not be on disk and a
 * crash falls back to a state that still references it. Released
 * extents that reach the allocation end lower it. The allocation end may
 * lie below f->eoa when a commit reserved room ahead (doc/APPEND.md) or
 * freed space at the end; the superblock field itself is written by the
 * ordered commit (txn.c).
 * The disk space the next commits will write is reserved before a change
 * is answered (reserve.c); the file is cut back to its end of allocation
 * by h5_txn_idle.
 */
#include "space.h"
#include "ordered.h"
#include "base.h"
#include "file.h"
#include "freesp.h"
#include "space_punch.h"
#include "cache.h"
#include "file_ws.h"

#include <time.h>

bool h5_space_fits(const h5_file *f, uint64_t end)
{
	return end < H5_ADDR_UNDEF && (f->fmt.sizeof_addr >= 8 || end < UINT64_C(1) << (8 * f->fmt.sizeof_addr));
}

bool h5_space_spans_page(uint64_t addr, uint64_t len)
{
	return len && addr / 4096 != (addr + len - 1) / 4096;
}

uint64_t h5_space_end(h5_file *f)
{
	struct h5_wstate *ws = h5_ws(f);

	/* 0: nothing allocated since the file was opened */
	if (ws->alloc_end == 0) {
		ws->alloc_end = f->eoa;
		h5_ws_publish(f);
	}
	/* the free space an earlier mount gave back (space_punch.c) */
	if (!ws->marks_found)
		h5_space_punch_recover(f);
	return ws->alloc_end;
}

/* The allocation end lowered to end: the space above it was handed out
 * (by the end, the free list or a reserve), so what readers decoded there
 * stays suspect until h5_space_alloc hands it out again - alloc_high
 * covers it. (It counted only h5_space_alloc's own ends: a group's header
 * taken from the free list, removed, the freed tail given back to the
 * end, then a new dataset's header allocated there kept the group's
 * decoded header in the cache, and the new file was answered as a
 * directory - EISDIR after 3,000 mkdir/rmdir, issue 65.) */
static void end_lower(h5_file *f, uint64_t end)
{
	struct h5_wstate *ws = h5_ws(f);

	if (ws->alloc_end > ws->alloc_high)
		ws->alloc_high = ws->alloc_end;
	ws->alloc_end = end;
	h5_ws_publish(f);
}

int h5_space_alloc(uint64_t *addr, h5_file *f, uint64_t len)
{
	struct h5_wstate *ws = h5_ws(f);
	uint64_t end;

	*addr = h5_space_end(f);
	if (h5_add_overflow(*addr, len, &end) || !h5_space_fits(f, end))
		return h5_err_set(H5_ERR_LIMIT, "file address space exhausted");
	ws->alloc_end = end;
	/* below an end lowered (h5_space_settle, give_back, a commit's cut):
	 * what readers decoded from the old bytes there is stale, as for
	 * space the free list gives (h5_space_take). A filtered chunk decoded
	 * at an address a later chunk took read as the old one (issue 53:
	 * a growable gzip dataset's last chunk one version old) */
	if (*addr < ws->alloc_high) {
		uint64_t hi = end < ws->alloc_high ? end : ws->alloc_high;

		h5_cache_invalidate_range(f->meta, *addr, hi);
		if (f->chunks && f->chunks != f->meta)
			h5_cache_invalidate_range(f->chunks, *addr, hi);
	}
	if (end > ws->alloc_high)
		ws->alloc_high = end;
	h5_ws_publish(f);
	return 0;
}

/* Extents held back for reader sections (h5_space_free) go to the free
 * list once every section that began before their free ended. */
static void quar_drain(h5_file *f)
{
	struct h5_wstate *ws = h5_ws(f);
	uint64_t oldest;
	size_t w = 0;

	if (!ws->nquar)
		return;
	oldest = h5_file_read_oldest(f, NULL);
	for (size_t i = 0; i < ws->nquar; i++) {
		struct h5_quar *q = &ws->quar[i];

		if (q->rseq < oldest) {
			if (h5_freesp_add(&ws->freesp, q->addr, q->len, q->ticket) < 0)
				h5_err_clear();
		} else {
			ws->quar[w++] = *q;
		}
	}
	ws->nquar = w;
}

static void release(h5_file *f, uint64_t *end)
{
	quar_drain(f);
	h5_freesp_release(&h5_ws(f)->freesp, __atomic_load_n(&f->sync_done, __ATOMIC_ACQUIRE), end);
}

void h5_space_settle(h5_file *f)
{
	struct h5_wstate *ws = h5_ws(f);
	uint64_t end = h5_space_end(f);

	/* FILE not ours to write now: the end stays above free markers it
	 * could not zero (space_punch.c) */
	if (ws->marks.n && !h5_space_punch_ready(f)) {
		release(f, NULL);
		return;
	}
	release(f, &end);
	if (end < ws->alloc_end) {
		/* space below the old end is handed out again: new space for
		 * every "did the end move" test (ohdr_edit.c's stage); the
		 * caches forget its old bytes when h5_space_alloc hands it out
		 * (a freed heap's direct block, cached, was met at the same
		 * address in a new heap: test_dense) */
		end_lower(f, end);
		ws->reused++;
	}
	/* what is free now, durably, back to the host */
	h5_space_punch_sweep(f);
}

/* Released extents a take looks at before it goes to the end. */
#define TAKE_TRIES 8

/* A released extent of len bytes whose disk blocks exist, or are given
 * within the host's margin: 1 and *addr, or 0 when none. An extent that
 * is a hole in FILE (storage grown sparsely, freed before it was written)
 * takes blocks that no reserve counted (reusable() counts only solid
 * ones); where the margin refuses them it is set aside - back in the
 * list, for the end to lower - and the commit takes the end, which its
 * reserve allocated. (Four stress-ng writers filled a 200 MiB file system
 * to its last block through such extents, past the margin: issue 65.) */
static int take_backed(uint64_t *addr, h5_file *f, uint64_t len)
{
	struct h5_wstate *ws = h5_ws(f);
	h5_freesp aside = { 0 };
	bool refused = false;
	int got = 0;

	for (int k = 0; k < TAKE_TRIES && h5_freesp_take(&ws->freesp, len, addr); k++) {
		uint64_t rest = 0, at = *addr + len;

		if (h5_file_solid(f, *addr, len) || (!refused && h5_file_fill(f, *addr, len, true) == 0)) {
			got = 1;
			break;
		}
		h5_err_clear();
		refused = true;
		/* the rest of that extent too: taken len bytes at a time, a
		 * deleted sparse GiB would come back here again and again */
		for (size_t i = 0; i < ws->freesp.n; i++)
			if (ws->freesp.v[i].addr == at && !ws->freesp.v[i].ticket) {
				(void)h5_freesp_pop(&ws->freesp, at, &rest);
				break;
			}
		if (h5_freesp_add(&aside, *addr, len + rest, 0) < 0)
			h5_err_clear();         /* (lost to this session, as a refused free) */
	}
	for (size_t i = 0; i < aside.n; i++)
		if (h5_freesp_add(&ws->freesp, aside.v[i].addr, aside.v[i].len, 0) < 0)
			h5_err_clear();
	h5_freesp_clear(&aside);
	return got;
}

int h5_space_take(uint64_t *addr, h5_file *f, uint64_t len)
{
	/* the allocation end stays: only h5_space_settle (a sync between
	 * changes) lowers it, never a change under way, whose commit may
	 * compare it with where it began */
	release(f, NULL);
	if (!take_backed(addr, f, len))
		return h5_space_alloc(addr, f, len);
	h5_ws(f)->reused++;
	h5_space_punch_taken(f, *addr, len);
	/* what readers decoded from the old bytes is stale now */
	h5_cache_invalidate_range(f->meta, *addr, *addr + len);
	if (f->chunks && f->chunks != f->meta)
		h5_cache_invalidate_range(f->chunks, *addr, *addr + len);
	return 0;
}

int h5_space_alloc_page(uint64_t *addr, h5_file *f, uint64_t len)
{
	uint64_t a = h5_space_end(f), pad;
	int rc;

	/* at the end: the rest of the page skipped (and given back) */
	if (len <= 4096 && h5_space_spans_page(a, len)) {
		rc = h5_space_alloc(&pad, f, (a / 4096 + 1) * 4096 - a);
		if (rc < 0)
			return rc;
		h5_space_free(f, pad, (a / 4096 + 1) * 4096 - a, 0);
	}
	return h5_space_alloc(addr, f, len);
}

/* The first place spans a page: given back, and len + 4096 bytes taken
 * instead, of which the block takes the part from the first page
 * boundary on (or the start, if that does not span one), the rest given
 * back. */
int h5_space_take_page(uint64_t *addr, h5_file *f, uint64_t len)
{
	uint64_t a, p, n = len + 4096;
	int rc = h5_space_take(&a, f, len);

	*addr = a;
	if (rc < 0 || len > 4096 || !h5_space_spans_page(a, len))
		return rc;
	h5_space_free(f, a, len, 0);
	rc = h5_space_take(&a, f, n);
	if (rc < 0)
		return rc;
	p = h5_space_spans_page(a, len) ? (a / 4096 + 1) * 4096 : a;
	if (p > a)
		h5_space_free(f, a, p - a, 0);
	if (a + n > p + len)
		h5_space_free(f, p + len, a + n - (p + len), 0);
	*addr = p;
	return 0;
}

uint64_t h5_space_ticket(h5_file *f)
{
	return __atomic_load_n(&f->sync_started, __ATOMIC_ACQUIRE) + 1;
}

static int quar_add(h5_file *f, uint64_t addr, uint64_t len, uint64_t ticket, uint64_t seq)
{
	struct h5_wstate *ws = h5_ws(f);

	if (ws->nquar == ws->cquar) {
		size_t cap = ws->cquar ? 2 * ws->cquar : 16;
		struct h5_quar *v = realloc(ws->quar, cap * sizeof(*v));

		if (!v)
			return -1;      /* (straight to the list, as before) */
		ws->quar = v;
		ws->cquar = cap;
	}
	ws->quar[ws->nquar++] = (struct h5_quar){ addr, len, ticket, seq };
	return 0;
}

void h5_space_free(h5_file *f, uint64_t addr, uint64_t len, uint64_t ticket)
{
	struct h5_wstate *ws = h5_ws(f);
	uint64_t end, seq;

	if (ticket == 0)
		ticket = h5_space_ticket(f);
	if (!h5_addr_defined(addr) || len == 0 || h5_add_overflow(addr, len, &end) || end > h5_space_end(f))
		return;
	/* a reader section active since before this free: held back */
	if (h5_file_read_oldest(f, &seq) != UINT64_MAX && quar_add(f, addr, len, ticket, seq) == 0)
		goto names;
	if (h5_freesp_add(&ws->freesp, addr, len, ticket) < 0)
		h5_err_clear();         /* leaked: a double free is refused, never handed out twice */
names:
	/* names removed from a local heap whose data segment this was
	 * (link_stab.c): never given back into what another structure
	 * may take */
	for (size_t i = 0; i < ws->lheap_names.n;) {
		uint64_t a = ws->lheap_names.v[i].addr, n;

		if (a < end && addr < a + ws->lheap_names.v[i].len)
			h5_freesp_pop(&ws->lheap_names, a, &n);
		else
			i++;
	}
}

void h5_space_free_all(h5_file *f, h5_freesp *from)
{
	for (size_t i = 0; i < from->n; i++)
		h5_space_free(f, from->v[i].addr, from->v[i].len, from->v[i].ticket);
	h5_freesp_clear(from);
}

int h5_space_note(uint64_t addr, uint64_t len, void *ud)
{
	return h5_freesp_add(ud, addr, len, UINT64_MAX);
}

void h5_space_free_noted(h5_file *f, h5_freesp *noted, uint64_t ticket)
{
	for (size_t i = 0; i < noted->n; i++)
		h5_space_free(f, noted->v[i].addr, noted->v[i].len, ticket);
	h5_freesp_clear(noted);
}

int h5_space_extend(h5_file *f, uint64_t eoa)
{
	uint64_t want, size;
	int rc;

	if (h5_add_overflow(f->base, eoa, &want) || want > (uint64_t)INT64_MAX)
		return h5_err_set(H5_ERR_LIMIT, "file size overflows");
	if ((rc = h5_file_size(f, &size)) < 0)
		return h5_err_wrap(rc, "%s: ", f->path);
	if (size < want && (rc = h5_file_truncate(f, want)) < 0)
		return h5_err_wrap(rc, "extending %s: ", f->path);
	return 0;
}

int h5_space_cut(h5_file *f, uint64_t end)
{
	uint64_t size;
	int rc;

	f->eoa = end;
	if ((rc = h5_file_size(f, &size)) < 0)
		return h5_err_wrap(rc, "%s: ", f->path);
	/* (what reserves hold for answered changes stays allocated) */
	if (size > f->base + end + h5_space_held(f) && (rc = h5_file_truncate(f, f->base + end + h5_space_held(f))) < 0)
		return h5_err_wrap(rc, "truncating %s: ", f->path);
	return 0;
}

int h5_space_give_back(h5_file *f, uint64_t mark, uint64_t start)
{
	uint64_t size, keep;
	int rc;

	if (h5_space_end(f) != mark || start > mark)
		return 0;
	end_lower(f, start);
	keep = f->base + (f->eoa > start ? f->eoa : start);
	if ((rc = h5_file_size(f, &size)) < 0)
		return rc;
	return size > keep ? h5_file_truncate(f, keep) : 0;
}

void h5_file_space_handover(h5_file *to, h5_file *from)
{
	struct h5_wstate *wt, *wf;
	uint64_t ticket;

	if (to == from || !h5_file_writable(to) || !h5_file_writable(from))
		return;
	pthread_mutex_lock(&from->write_lock);
	pthread_mutex_lock(&to->write_lock);
	wt = h5_ws(to);
	wf = h5_ws(from);
	/* the same EOF address: nobody else allocated since (libhdf5 places
	 * new space at its EOF address and moves it). Space below it that
	 * `from` holds unused (reserved room, the free list) is referenced by
	 * nothing `to` read: the superblock's EOF address is not the end of
	 * what is referenced while a commit's room is reserved (txn.c), and
	 * `to` starting there would leave that room unreferenced for good */
	if (wf->alloc_end && !wt->alloc_end && !wt->freesp.n && to->eoa == from->eoa && to->base == from->base &&
	    wf->alloc_end <= from->eoa) {
		wt->alloc_end = wf->alloc_end;
		/* (what `from` handed out below its end: end_lower) */
		wt->alloc_high = wf->alloc_high > wf->alloc_end ? wf->alloc_high : wf->alloc_end;
		h5_ws_publish(to);
		wt->freesp = wf->freesp;
		wf->freesp = (h5_freesp){ 0 };
		/* its free markers too (space_punch.c): `to` reads none */
		h5_freesp_clear(&wt->marks);
		wt->marks = wf->marks;
		wf->marks = (h5_freesp){ 0 };
		wt->marks_found = true;
		wt->marks_rel = wf->marks_rel;
		wt->marks_n = wf->marks_n;
		wt->punch_off = wf->punch_off;
		/* and the chunk rewritten last, which h5_file_compact may move
		 * down at the end of the session */
		wt->last_chunk = wf->last_chunk;
		wf->last_chunk.dset = 0;
		memcpy(wt->conts, wf->conts, sizeof(wt->conts));
		wt->nconts = wf->nconts;
		wt->next_cont = wf->next_cont;
		wf->nconts = 0;
		/* extents waiting for a sync of `from` wait for one of `to`
		 * that begins from now on (after the commits that freed them:
		 * an fsync syncs FILE whichever descriptor it is made on) */
		ticket = h5_space_ticket(to);
		for (size_t i = 0; i < wt->freesp.n; i++)
			if (wt->freesp.v[i].ticket)
				wt->freesp.v[i].ticket = ticket;
		wt->freesp.tlow = 0;    /* (tickets of another file's count) */
		/* Reader sections of `from` go on (old generations' requests):
		 * `to` counts them with its own, so that what it frees is held
		 * back for them too, and the extents `from` held back for them
		 * move with the rest (they were lost here: FILE 204 KB after an
		 * unmount, test_stress_io). Out of memory: those stay lost to
		 * this session, never handed out under a reader. */
		if (h5_file_readers_share(to, from) == 0 && wf->nquar) {
			free(wt->quar);
			wt->quar = wf->quar;
			wt->nquar = wf->nquar;
			wt->cquar = wf->cquar;
			wf->quar = NULL;
			wf->nquar = wf->cquar = 0;
			for (size_t i = 0; i < wt->nquar; i++)
				wt->quar[i].ticket = ticket;
		}
	}
	pthread_mutex_unlock(&to->write_lock);
	pthread_mutex_unlock(&from->write_lock);
}
