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
#define _GNU_SOURCE /* SEEK_HOLE, SEEK_DATA */
#include "space.h"
#include "base.h"
#include "file.h"
#include "freesp.h"
#include "checksum.h"
#include "rd.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLK ((uint64_t)4096)
#define MARK_LEN 48
static const char magic[8] = { 'H', '5', 'F', 'S', 'F', 'R', 'E', 'E' };

static void mark_encode(uint8_t *b, const h5_file *f, uint64_t addr, uint64_t len)
{
	memset(b, 0, MARK_LEN);
	memcpy(b, magic, sizeof(magic));
	b[8] = 1;               /* version */
	h5_le_encode(b + 12, BLK, 4);
	h5_le_encode(b + 16, addr, 8);
	h5_le_encode(b + 24, len, 8);
	h5_le_encode(b + 32, f->base, 8);
	h5_le_encode(b + 40, h5_checksum_lookup3(b, 40, 0), 4);
}

/* The extent a marker read at addr names (relative), or 0. */
static uint64_t mark_decode(const uint8_t *b, const h5_file *f, uint64_t addr)
{
	uint64_t len = h5_le_decode(b + 24, 8);

	if (memcmp(b, magic, sizeof(magic)) || b[8] != 1 || h5_le_decode(b + 12, 4) != BLK ||
	    h5_le_decode(b + 16, 8) != addr || h5_le_decode(b + 32, 8) != f->base ||
	    h5_le_decode(b + 40, 4) != h5_checksum_lookup3(b, 40, 0))
		return 0;
	if (len < 2 * BLK || len % BLK || addr > f->eoa || len > f->eoa - addr)
		return 0;
	return len;
}

/* The first mark at or above addr. */
static size_t mark_lower(const h5_freesp *m, uint64_t addr)
{
	size_t lo = 0, hi = m->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The marker of mark i overwritten (its magic zeroed): 0, or the error
 * (the marker may still be on disk). The mark stays listed. */
static int mark_zero(h5_file *f, size_t i)
{
	static const uint8_t zero[sizeof(magic)];

	if (f->marks.v[i].ticket != H5_PUNCH_MARKED)
		return 0;
	return h5_file_write(f, f->marks.v[i].addr, zero, sizeof(zero));
}

static void mark_forget(h5_file *f, size_t i)
{
	uint64_t len;

	(void)h5_freesp_pop(&f->marks, f->marks.v[i].addr, &len);
}

void h5_space_punch_taken(h5_file *f, uint64_t addr, uint64_t len)
{
	size_t i = mark_lower(&f->marks, addr);

	/* (the caller writes the block over it anyway: a failure leaves it to
	 * that write) */
	while (i < f->marks.n && f->marks.v[i].addr < addr + len) {
		if (mark_zero(f, i) < 0)
			h5_err_clear();
		mark_forget(f, i);
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
	h5_freesp *m = &f->marks;

	while (m->n && m->v[m->n - 1].addr + m->v[m->n - 1].len > f->alloc_end) {
		const h5_free_ext x = m->v[m->n - 1];

		if (mark_zero(f, m->n - 1) < 0) {
			/* the end back above it: leaked for this mount, the
			 * marker still true */
			h5_err_clear();
			f->alloc_end = x.addr + x.len;
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
	h5_freesp *m = &f->marks;
	uint8_t b[MARK_LEN];
	uint64_t a, e, from, kind = H5_PUNCH_BARE;
	size_t j;
	int rc;

	if (!whole_blocks(f, x, &a, &e))
		return;
	j = mark_lower(m, x->addr);
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
		mark_encode(b, f, a, e - a);
		if (h5_file_write(f, a, b, sizeof(b)) == 0) {
			kind = H5_PUNCH_MARKED;
			from = a + BLK;
		} else {
			h5_err_clear(); /* (a full disk: the block stays a hole) */
		}
	}
	rc = h5_file_punch(f, from, e - from);
	if (rc == H5_ERR_UNSUPPORTED)
		f->punch_off = true;    /* (tmpfs, ext4, xfs, btrfs have it) */
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
	h5_freesp *s = &f->freesp;

	if (!f->writable || !h5_space_punch_ready(f))
		return;
	if (f->alloc_end)
		marks_above_end(f);
	if (!f->src->ops->punch)
		f->punch_off = true;    /* (memory, a trace of one) */
	/* a reserve held for an answered change may count a released extent
	 * as disk blocks it has (space.c reusable: a change that fits freed
	 * space is made on a full disk): punched under it, the commit found a
	 * hole and no disk, and changes answered were lost (test_durable
	 * enospc). Given back once no reserve is held: the daemon's idle
	 * sync, the next reserve when nothing else waits */
	if (f->punch_off || h5_space_held(f) || (s->released == f->marks_rel && s->n == f->marks_n))
		return;
	for (size_t i = 0; i < s->n && !f->punch_off; i++) {
		const h5_free_ext x = s->v[i];

		if (!x.ticket)
			give_back(f, &x);
	}
	f->marks_rel = s->released;
	f->marks_n = s->n;
}

/* A hole of FILE at [h, d) (absolute): the extent its marker names
 * found free. */
static void found(h5_file *f, int fd, uint64_t h, uint64_t d)
{
	uint8_t b[MARK_LEN];
	uint64_t a, len;

	if (h % BLK || h < f->base + BLK)
		return;
	a = h - BLK - f->base;
	if (pread(fd, b, sizeof(b), (off_t)(h - BLK)) != (ssize_t)sizeof(b))
		return;
	len = mark_decode(b, f, a);
	/* the hole reaches the extent's end: nothing written into it since */
	if (!len || d < f->base + a + len)
		return;
	if (h5_freesp_add(&f->freesp, a, len, 0) < 0) {
		h5_err_clear();
		return;
	}
	if (h5_freesp_add(&f->marks, a, len, H5_PUNCH_MARKED) < 0)
		h5_err_clear();
}

void h5_space_punch_recover(h5_file *f)
{
	struct stat st;
	uint64_t pos, lim;
	int fd;

	if (f->marks_found || !f->writable || !h5_space_punch_ready(f) || !f->src->ops->fd)
		return;
	f->marks_found = true;
	fd = f->src->ops->fd(f->src);
	if (fd < 0 || fstat(fd, &st) < 0 || h5_add_overflow(f->base, f->eoa, &lim))
		return;
	if (lim > (uint64_t)st.st_size)
		lim = (uint64_t)st.st_size;
	for (pos = f->base; pos < lim;) {
		off_t h = lseek(fd, (off_t)pos, SEEK_HOLE), d;

		if (h < 0 || (uint64_t)h >= lim)
			break;
		d = lseek(fd, h, SEEK_DATA);
		if (d < 0)
			d = st.st_size; /* (ENXIO: a hole to the end) */
		if (d <= h)
			break;
		found(f, fd, (uint64_t)h, (uint64_t)d);
		pos = (uint64_t)d;
	}
	f->marks_rel = f->freesp.released;
	f->marks_n = f->freesp.n;
}
