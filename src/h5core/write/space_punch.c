/*
 * space_punch.c - freed space given back to the host, and found again by
 * the next mount (space.h h5_space_punch_*; issue 69, doc/DESIGN.md
 * "Free space" 5).
 *
 * A released extent of the free list (space.c: its freeing commit is
 * durable, no reader section is in it) is referenced by nothing on disk
 * and by no state a crash can fall back to, the same condition under
 * which space.c hands it out again. Its whole 4 KiB blocks are punched
 * (fallocate PUNCH_HOLE|KEEP_SIZE: FILE's length and the superblock's EOF
 * address stay), so a removed dataset stops taking disk blocks once its
 * removal is durable; space at the allocation end is cut instead
 * (txn.c). Bytes of a block shared with live data are never touched: no
 * write lands in a page a live structure shares (a partial punch zeroes
 * through the page).
 *
 * Across mounts: the first block of an extent of two blocks or more
 * keeps a free marker (48 bytes: "H5FSFREE", version, block size, the
 * extent's address and length, the file's base, a lookup3 checksum) and
 * the blocks after it are the hole. The next mount (h5_space_end's first
 * call) walks FILE's holes (SEEK_HOLE/SEEK_DATA: a few system calls per
 * hole, no walk of the HDF5 structures) and takes as free exactly the
 * extents whose marker sits in the block before the hole, names that
 * block's own address, and whose hole reaches its end below the EOF
 * address. A hole alone proves nothing: libhdf5's unwritten contiguous
 * storage, h5fs's own sparse growth and a `cp --sparse` copy's zero
 * pages are holes inside live data; the marker is what makes it sound.
 * libhdf5 and other software see only unreferenced bytes (as any
 * leaked space): the format is unchanged.
 *
 * Why a marker on disk never names space that is referenced (every
 * crash state included):
 * - it is written only inside a released extent, naming that extent's
 *   blocks: free, durably so;
 * - space leaves the free list only by h5_space_take (from an extent's
 *   front; its caller writes the block whole before anything references
 *   it, and the ordered commit fsyncs that before the switch) - a marker
 *   inside the taken range is zeroed there first
 *   (h5_space_punch_taken), so it is gone before the reference is
 *   durable; a marker above the taken range still names free space;
 * - or by the allocation end dropping over it (space.c h5_space_settle:
 *   h5_space_alloc's space need not be written whole): the sweep zeroes
 *   those markers before any allocation; when that write fails, the end
 *   goes back up (the space stays unreferenced and leaks for this mount:
 *   the marker still tells the truth);
 * - another program changes FILE: libhdf5 allocates only at its EOF
 *   address, never in space it did not free itself, so a marked extent
 *   stays unreferenced; a marker whose hole data was written into, or
 *   whose range passes the EOF address, is not taken;
 * - a crash before the punch or before the marker reached the disk
 *   loses the extent for the next mount (leaked, as before this file):
 *   never the reverse.
 */
#include "space_punch.h"
#include "base.h"
#include "file.h"
#include "freesp.h"
#include "freemark.h"
#include "file_ws.h"

#define BLK H5_FREEMARK_BLOCK
#define MARK_LEN H5_FREEMARK_LEN

/* The marker of mark i overwritten (its magic zeroed): 0, or the error
 * (the marker may still be on disk). The mark stays listed. */
static int mark_zero(h5_file *f, size_t i)
{
	static const uint8_t zero[8];   /* (its magic) */

	if (h5_ws(f)->marks.v[i].ticket != H5_PUNCH_MARKED)
		return 0;
	return h5_file_write(f, h5_ws(f)->marks.v[i].addr, zero, sizeof(zero));
}

static void mark_forget(h5_file *f, size_t i)
{
	uint64_t len;

	(void)h5_freesp_pop(&h5_ws(f)->marks, h5_ws(f)->marks.v[i].addr, &len);
}

void h5_space_punch_taken(h5_file *f, uint64_t addr, uint64_t len)
{
	struct h5_wstate *ws = h5_ws(f);
	size_t i = h5_freesp_lower(&ws->marks, addr);

	/* (the caller writes the block over it anyway: a failure leaves it to
	 * that write) */
	while (i < ws->marks.n && ws->marks.v[i].addr < addr + len) {
		if (mark_zero(f, i) < 0)
			h5_err_clear();
		mark_forget(f, i);
		/* the rest of its extent marked again at the next sweep, even
		 * when a free of the same size leaves the list's sums as they
		 * were */
		ws->marks_n = SIZE_MAX;
	}
}

bool h5_space_punch_ready(const h5_file *f)
{
	return !f->lazy_lock || __atomic_load_n(&f->locked, __ATOMIC_ACQUIRE);
}

/* Marks at or above the allocation end (lowered over them): their
 * markers zeroed before h5_space_alloc hands that space out. */
static void marks_above_end(h5_file *f)
{
	struct h5_wstate *ws = h5_ws(f);
	h5_freesp *m = &ws->marks;

	while (m->n && m->v[m->n - 1].addr + m->v[m->n - 1].len > ws->alloc_end) {
		const h5_free_ext x = m->v[m->n - 1];

		if (mark_zero(f, m->n - 1) < 0) {
			/* the end back above it: leaked for this mount, the
			 * marker still true */
			h5_err_clear();
			ws->alloc_end = x.addr + x.len;
			h5_ws_publish(f);
			return;
		}
		mark_forget(f, m->n - 1);
	}
}

/* The whole blocks of extent x, relative: [*a, *e), false when none. */
static bool whole_blocks(const h5_file *f, const h5_free_ext *x, uint64_t *a, uint64_t *e)
{
	uint64_t lo = f->base + x->addr, hi = lo + x->len;

	lo = (lo + BLK - 1) / BLK * BLK;
	hi = hi / BLK * BLK;
	if (hi <= lo)
		return false;
	*a = lo - f->base;
	*e = hi - f->base;
	return true;
}

/* Extent x (released) given back: its marker written, its blocks after
 * it punched, the mark listed. */
static void give_back(h5_file *f, const h5_free_ext *x)
{
	h5_freesp *m = &h5_ws(f)->marks;
	uint8_t b[MARK_LEN];
	uint64_t a, e, from, kind = H5_PUNCH_BARE;
	size_t j;
	int rc;

	if (!whole_blocks(f, x, &a, &e))
		return;
	j = h5_freesp_lower(m, x->addr);
	if (j < m->n && m->v[j].addr == a && m->v[j].len == e - a)
		return;         /* as it was given back last */
	/* older marks inside (an extent merged with its neighbours since):
	 * in the blocks punched now, or rewritten below */
	while (j < m->n && m->v[j].addr < x->addr + x->len)
		mark_forget(f, j);
	if (m->n >= H5_FREESP_MAX)
		return;         /* (not listed, not given back: as before) */
	from = a;
	if (e - a >= 2 * BLK) {
		h5_freemark_encode(b, f->base, a, e - a);
		if (h5_file_write(f, a, b, sizeof(b)) == 0) {
			kind = H5_PUNCH_MARKED;
			from = a + BLK;
		} else {
			h5_err_clear(); /* (a full disk: the block stays a hole) */
		}
	}
	rc = h5_file_punch(f, from, e - from);
	if (rc == H5_ERR_UNSUPPORTED)
		h5_ws(f)->punch_off = true;    /* (tmpfs, ext4, xfs, btrfs have it) */
	if (rc < 0)
		h5_err_clear();
	if (h5_freesp_add(m, a, e - a, kind) < 0) {
		h5_err_clear();
		if (kind == H5_PUNCH_MARKED && h5_file_punch(f, a, BLK) < 0)
			h5_err_clear(); /* (unlisted: never zeroed, so not kept) */
	}
}

void h5_space_punch_sweep(h5_file *f)
{
	struct h5_wstate *ws = h5_ws(f);
	h5_freesp *s = &ws->freesp;

	if (!f->writable || !h5_space_punch_ready(f))
		return;
	if (ws->alloc_end)
		marks_above_end(f);
	if (!f->src->ops->punch)
		ws->punch_off = true;    /* (memory, a trace of one) */
	/* a reserve held for an answered change may count a released extent
	 * as disk blocks it has (space.c reusable: a change that fits freed
	 * space is made on a full disk): punched under it, the commit found a
	 * hole and no disk, and changes answered were lost (test_durable
	 * enospc). Given back once no reserve is held: the daemon's idle
	 * sync, the next reserve when nothing else waits */
	if (ws->punch_off || h5_space_held(f) || (s->released == ws->marks_rel && s->n == ws->marks_n))
		return;
	for (size_t i = 0; i < s->n && !ws->punch_off; i++) {
		const h5_free_ext x = s->v[i];

		if (!x.ticket)
			give_back(f, &x);
	}
	ws->marks_rel = s->released;
	ws->marks_n = s->n;
}

/* A hole of FILE at [h, d) (relative): the extent the marker in the
 * block before it names found free, when the hole reaches its end. */
static int found(void *ud, uint64_t h, uint64_t d)
{
	h5_file *f = ud;
	uint8_t b[MARK_LEN];
	uint64_t a, len;

	if ((f->base + h) % BLK || h < BLK)
		return 0;
	a = h - BLK;
	if (h5_file_read(f, a, b, sizeof(b)) < 0) {
		h5_err_clear();
		return 0;
	}
	len = h5_freemark_decode(b, f->base, a, f->eoa);
	/* (nothing written into the hole since) */
	if (!len || d < a + len)
		return 0;
	if (h5_freesp_add(&h5_ws(f)->freesp, a, len, 0) < 0) {
		h5_err_clear();
		return 0;
	}
	if (h5_freesp_add(&h5_ws(f)->marks, a, len, H5_PUNCH_MARKED) < 0)
		h5_err_clear();
	return 0;
}

void h5_space_punch_recover(h5_file *f)
{
	struct h5_wstate *ws = h5_ws(f);

	if (ws->marks_found || !f->writable || !h5_space_punch_ready(f))
		return;
	ws->marks_found = true;
	(void)h5_file_holes(f, 0, f->eoa, found, f);
	ws->marks_rel = ws->freesp.released;
	ws->marks_n = ws->freesp.n;
}
