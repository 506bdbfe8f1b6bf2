/* file_space.c - FILE's disk blocks against the host's margin (issue 65).
 *
 * Every byte written into FILE takes a disk block unless one backs it
 * already: past FILE's end, and in a hole inside it (storage grown
 * sparsely, freed extents never written, chunks an index placed in a
 * region libhdf5 allocated without writing it). ext4 refuses before the
 * disk is full (its root reserve); so does FILE here: blocks are given
 * (posix_fallocate) only while the file system keeps its margin
 * (h5_open_opts min_free_*), one test and allocation at a time
 * (fill_lock), else H5_ERR_NOSPC and nothing is written.
 * - h5_file_allocate: a reserve's space past the allocation end, before a
 *   change is answered (write/reserve.c h5_file_reserve);
 * - h5_file_fill: a range inside FILE before a write there is answered
 *   (a write in place, a freed extent handed out again);
 * - h5_file_backed: the last guard, in h5_file_write itself, for a write
 *   no earlier test covered: a commit's, after its answer. Four stress-ng
 *   writers filled a 200 MiB file system to its last block through holes
 *   before it (stress-ng aiol), past a margin every reserve had kept.
 *   A commit may use the lower half of the margin, as ext4's root may use
 *   its reserve: refused at the full margin, four writers' files were
 *   lost whole at their link's commit (328 bytes) - changes answered
 *   already, whose reserves the other writers' rows had used (reserves
 *   are of the allocation end, not summed over the writers waiting).
 * FILE below solid_end holds disk blocks throughout (probed with
 * SEEK_HOLE, raised by allocations): a write there costs no system call.
 * h5fs makes holes by growing FILE (truncate, a write past a gap) and by
 * punching space its durable commits freed (h5_file_punch, called by
 * write/space_punch.c only: issue 69).
 */
#define _GNU_SOURCE /* SEEK_HOLE, SEEK_DATA */
#include "source.h"
#include "base.h"
#include "file.h"

#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Reserves are asked before every create and write that may commit
 * (h5_file_reserve: the write-behind of new files, appended rows), each
 * a posix_fallocate of what lies past the allocation end: cp -r of small
 * files spent a quarter of the daemon's time there (issue 55). What was
 * allocated since the last truncate is remembered, and an allocation
 * goes as far again as asked (at most 64 KiB) when the disk has it, so
 * the next few reserves need none (h5_txn_idle cuts FILE back to its end
 * of allocation). */
#define FALLOC_AHEAD ((uint64_t)64 << 10)

static bool guarded(const h5_file *f)
{
	return (f->min_free_bytes || f->min_free_pct) && f->src->ops->fd && f->src->ops->allocate;
}

/* need more bytes of FILE's file system (fd) leave it the margin (of
 * which the commit of a change answered already may use half: part 2):
 * 0, or H5_ERR_NOSPC with a message */
static int keep_margin(const h5_file *f, int fd, uint64_t need, unsigned part)
{
	struct statvfs vs;
	uint64_t avail, margin = 0;

	if (!need || fstatvfs(fd, &vs) < 0)
		return 0;       /* (nothing to measure against: the allocation says) */
	avail = (uint64_t)vs.f_bavail * (uint64_t)vs.f_frsize;
	if (f->min_free_pct)
		margin = (uint64_t)vs.f_blocks * (uint64_t)vs.f_frsize / 100 * f->min_free_pct;
	if (f->min_free_bytes && (!f->min_free_pct || f->min_free_bytes < margin))
		margin = f->min_free_bytes;
	margin /= part;
	if (avail >= need && avail - need >= margin)
		return 0;
	return h5_err_set(H5_ERR_NOSPC,
			  "%s: %llu more bytes would leave its file system %llu bytes free, less than the %llu "
			  "it must keep free",
			  f->path, (unsigned long long)need, (unsigned long long)(avail > need ? avail - need : 0),
			  (unsigned long long)margin);
}

/* lseek(fd, pos, SEEK_HOLE) past the data it found last time (under
 * fill_lock). SEEK_HOLE walks every page from pos to the hole (a tmpfs's
 * page cache, ext4's extents), and a reserve's look at the largest freed
 * extent (space.c reusable), whose end lies before the chunks a rewrite
 * adds, walked all of those again for every chunk: dd over a 256 MiB
 * blosc dataset spent 16% of the daemon's CPU in the kernel's
 * mapping_seek_hole_data, more as FILE grows (issue 70). */
static off_t hole_at(h5_file *f, int fd, uint64_t pos)
{
	uint64_t from = pos;
	off_t h;

	if (f->data_hi && pos >= f->data_lo && pos < f->data_hi)
		from = f->data_hi;      /* (data up to there: no hole before it) */
	h = lseek(fd, (off_t)from, SEEK_HOLE);
	if (h > 0 && (uint64_t)h > pos) {
		if (from == pos || !f->data_hi)
			f->data_lo = pos;   /* (else [data_lo, h) as one span) */
		f->data_hi = (uint64_t)h;
	}
	return h;
}

/* Bytes of [from, end) (absolute) that no disk block backs: holes inside
 * FILE's size and what lies past it (at most: ext4 shows fallocated
 * blocks never written as holes too). *first: the first such byte (end
 * when none). any: 1 at the first (whether there is one is the
 * question, not how many bytes). Under fill_lock. */
static uint64_t unbacked(uint64_t *first, h5_file *f, int fd, uint64_t from, uint64_t end, uint64_t size, bool any)
{
	uint64_t need = 0, pos = from, lim = end < size ? end : size;

	*first = end;
	while (pos < lim) {
		off_t h = hole_at(f, fd, pos), d;

		if (h < 0 || (uint64_t)h >= lim)
			break;
		if (*first == end)
			*first = (uint64_t)h;
		if (any)        /* (not where it ends: SEEK_DATA walks the hole) */
			return 1;
		d = lseek(fd, h, SEEK_DATA);
		if (d < 0 || (uint64_t)d > lim)
			d = (off_t)lim;         /* (ENXIO: a hole to the end) */
		need += (uint64_t)d - (uint64_t)h;
		pos = (uint64_t)d;
	}
	if (end > size) {
		uint64_t past = from > size ? from : size;

		/* in whole blocks: bytes counted, many small extensions took
		 * 57 KB of a 10 MiB margin on a tmpfs */
		need += (end + 4095) / 4096 * 4096 - past / 4096 * 4096;
		if (*first == end)
			*first = past;
	}
	return need;
}

/* solid_end raised to FILE's first hole from it (under fill_lock) */
static void solid_probe(h5_file *f, int fd)
{
	uint64_t s = __atomic_load_n(&f->solid_end, __ATOMIC_RELAXED);
	off_t h = hole_at(f, fd, s);

	if (h > 0 && (uint64_t)h > s)
		__atomic_store_n(&f->solid_end, (uint64_t)h, __ATOMIC_RELEASE);
}

/* [abs, end) given disk blocks within the margin's part (under
 * fill_lock) */
static int back_locked(h5_file *f, uint64_t abs, uint64_t end, unsigned part)
{
	struct stat st;
	uint64_t first, need;
	int fd = f->src->ops->fd(f->src), rc;

	if (f->falloc_hi && abs >= f->falloc_lo && end <= f->falloc_hi)
		return 0;
	if (fd < 0 || fstat(fd, &st) < 0)
		return 0;
	need = unbacked(&first, f, fd, abs, end, (uint64_t)st.st_size, false);
	if (!need)
		rc = 0;
	else if ((rc = keep_margin(f, fd, need, part)) == 0)
		rc = f->src->ops->allocate(f->src, first, end - first);
	if (rc == 0)
		solid_probe(f, fd);
	return rc;
}

/* any: also without a margin (h5_file_fill: a hole the caller is about to
 * use gets its blocks before the answer, margin or not) */
static int backed(h5_file *f, uint64_t abs, uint64_t len, unsigned part, bool any)
{
	uint64_t end;
	int rc;

	if (!(any ? f->src->ops->fd && f->src->ops->allocate : guarded(f)) || len == 0 || h5_add_overflow(abs, len, &end) ||
	    end <= __atomic_load_n(&f->solid_end, __ATOMIC_ACQUIRE))
		return 0;
	pthread_mutex_lock(&f->fill_lock);
	rc = back_locked(f, abs, end, part);
	pthread_mutex_unlock(&f->fill_lock);
	return rc;
}

int h5_file_backed(h5_file *f, uint64_t abs, uint64_t len)
{
	return backed(f, abs, len, 2, false);
}

int h5_file_fill(h5_file *f, uint64_t addr, uint64_t len, bool answered)
{
	uint64_t abs;

	if (h5_add_overflow(f->base, addr, &abs))
		return h5_err_set(H5_ERR_LIMIT, "file size overflows");
	/* (punched holes, write/space_punch.c, are made with or without a
	 * margin: a freed extent handed out again must hold its blocks before
	 * the change is answered) */
	return backed(f, abs, len, answered ? 2 : 1, true);
}

bool h5_file_solid(h5_file *f, uint64_t addr, uint64_t len)
{
	struct stat st;
	uint64_t abs, end, first;
	int fd;
	bool solid;

	/* (with or without a margin: a punched extent, write/space_punch.c,
	 * has no blocks a reserve may count) */
	if (!f->src->ops->fd || len == 0 || h5_add_overflow(f->base, addr, &abs) ||
	    h5_add_overflow(abs, len, &end) || end <= __atomic_load_n(&f->solid_end, __ATOMIC_ACQUIRE))
		return true;
	fd = f->src->ops->fd(f->src);
	if (fd < 0 || fstat(fd, &st) < 0)
		return true;
	pthread_mutex_lock(&f->fill_lock);
	solid = (f->falloc_hi && abs >= f->falloc_lo && end <= f->falloc_hi) ||
		unbacked(&first, f, fd, abs, end, (uint64_t)st.st_size, true) == 0;
	if (solid)
		solid_probe(f, fd);     /* (the next asks below it: no system call) */
	pthread_mutex_unlock(&f->fill_lock);
	return solid;
}

int h5_file_truncate(h5_file *f, uint64_t size)
{
	int rc;

	if (!f->src->ops->truncate)
		return h5_err_set(H5_ERR_ROFS, "file is not open for writing");
	if (f->lazy_lock && !__atomic_load_n(&f->locked, __ATOMIC_ACQUIRE))
		return h5_err_set(H5_ERR_BUSY, "%s: truncated without its lock", f->path);
	__atomic_store_n(&f->wrote, true, __ATOMIC_RELAXED);
	pthread_mutex_lock(&f->fill_lock);
	f->falloc_hi = 0;
	f->data_hi = 0;
	rc = f->src->ops->truncate(f->src, size);
	/* (growth is a hole: solid_end stays where it was) */
	if (__atomic_load_n(&f->solid_end, __ATOMIC_RELAXED) > size)
		__atomic_store_n(&f->solid_end, size, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&f->fill_lock);
	return rc;
}

/* spare bytes more than need (of FILE's file system, fd) free beyond the
 * commit's half of the margin: 0 or H5_ERR_NOSPC with a message */
static int keep_spare(const h5_file *f, int fd, uint64_t need, uint64_t spare)
{
	int rc;

	if (!spare || fd < 0)
		return 0;
	rc = keep_margin(f, fd, need + spare, 2);
	return rc < 0 ? h5_err_wrap(rc, "with %llu bytes kept for an ordered copy's record: ",
				    (unsigned long long)spare)
		      : 0;
}

int h5_file_allocate(h5_file *f, uint64_t addr, uint64_t len, uint64_t spare)
{
	struct stat st;
	uint64_t end, from, ahead, first, need = 0;
	int fd, rc = 0;

	if (!f->src->ops->truncate)
		return h5_err_set(H5_ERR_ROFS, "file is not open for writing");
	if (f->lazy_lock && !__atomic_load_n(&f->locked, __ATOMIC_ACQUIRE))
		return h5_err_set(H5_ERR_BUSY, "%s: allocated without its lock", f->path);
	if (!f->src->ops->allocate)
		return 0;
	if (h5_add_overflow(addr, len, &end))
		return h5_err_set(H5_ERR_LIMIT, "file size overflows");
	pthread_mutex_lock(&f->fill_lock);
	/* allocated already: no system call, as a reserve comes before every
	 * create and write (the spare was left when it was allocated) */
	if (len && f->falloc_hi && addr >= f->falloc_lo && end <= f->falloc_hi)
		goto out;
	/* the spare alone: a change whose space the free list holds */
	fd = f->src->ops->fd ? f->src->ops->fd(f->src) : -1;
	if (!len) {
		rc = keep_spare(f, fd, 0, spare);
		goto out;
	}
	from = f->falloc_hi && addr >= f->falloc_lo && addr <= f->falloc_hi ? f->falloc_hi : addr;
	/* the margin: what the range adds to FILE's blocks - past its end,
	 * and holes inside it, which take blocks as surely. Changes that free
	 * space (rm, rename) take no reserve, so they still work on a disk at
	 * its margin. And the spare past it, with or without a margin. */
	if (fd >= 0 && (guarded(f) || spare) && fstat(fd, &st) == 0) {
		need = unbacked(&first, f, fd, from, end, (uint64_t)st.st_size, false);
		rc = guarded(f) ? keep_margin(f, fd, need, 1) : 0;
		if (rc == 0)
			rc = keep_spare(f, fd, need, spare);
	}
	if (rc < 0)
		goto out;
	__atomic_store_n(&f->wrote, true, __ATOMIC_RELAXED);
	/* as far again as asked, at most FALLOC_AHEAD: FILE's length stays
	 * near its end of allocation - where the disk has it beside the
	 * spare (a 64 KiB reserve on a disk with 128 KiB free took it all
	 * ahead, and its change's record found no page: test_append_enospc
	 * record_room) */
	rc = h5_add_overflow(end, len < FALLOC_AHEAD ? len : FALLOC_AHEAD, &ahead) ? H5_ERR_NOSPC : 0;
	if (rc == 0 && spare && fd >= 0 && keep_spare(f, fd, need + (ahead - end), spare) < 0)
		rc = H5_ERR_NOSPC;
	if (rc == 0)
		rc = f->src->ops->allocate(f->src, from, ahead - from);
	if (rc == H5_ERR_NOSPC) {
		h5_err_clear();
		ahead = end;
		rc = f->src->ops->allocate(f->src, from, end - from);
	}
	if (rc == 0) {
		if (from != f->falloc_hi)
			f->falloc_lo = addr;
		f->falloc_hi = ahead;
		/* [0, solid_end) and [from, ahead) hold blocks: so does all
		 * below ahead when they meet */
		if (from <= __atomic_load_n(&f->solid_end, __ATOMIC_RELAXED) &&
		    ahead > __atomic_load_n(&f->solid_end, __ATOMIC_RELAXED))
			__atomic_store_n(&f->solid_end, ahead, __ATOMIC_RELEASE);
	}
out:
	pthread_mutex_unlock(&f->fill_lock);
	return rc;
}

int h5_file_punch(h5_file *f, uint64_t addr, uint64_t len)
{
	uint64_t abs, end;
	int rc;

	if (!f->writable || !f->src->ops->punch)
		return h5_err_set(H5_ERR_UNSUPPORTED, "%s: no hole punching", f->path);
	if (f->lazy_lock && !__atomic_load_n(&f->locked, __ATOMIC_ACQUIRE))
		return h5_err_set(H5_ERR_BUSY, "%s: punched without its lock", f->path);
	if (len == 0)
		return 0;
	if (h5_add_overflow(f->base, addr, &abs) || h5_add_overflow(abs, len, &end) || end > (uint64_t)INT64_MAX)
		return h5_err_set(H5_ERR_LIMIT, "punch out of range");
	pthread_mutex_lock(&f->fill_lock);
	__atomic_store_n(&f->wrote, true, __ATOMIC_RELAXED);
	rc = f->src->ops->punch(f->src, abs, len);
	if (f->data_hi && abs < f->data_hi && end > f->data_lo)
		f->data_hi = 0;
	/* a hole now (even when the call failed half way): no block below
	 * solid_end is assumed, nor in the range allocated ahead */
	if (__atomic_load_n(&f->solid_end, __ATOMIC_RELAXED) > abs)
		__atomic_store_n(&f->solid_end, abs, __ATOMIC_RELEASE);
	if (f->falloc_hi && abs < f->falloc_hi && end > f->falloc_lo)
		f->falloc_hi = 0;
	pthread_mutex_unlock(&f->fill_lock);
	return rc;
}

int h5_file_holes(h5_file *f, uint64_t from, uint64_t to, int (*cb)(void *ud, uint64_t h, uint64_t d), void *ud)
{
	struct stat st;
	uint64_t pos, lim, size;
	int fd, rc = 0;

	if (!f->src->ops->fd || (fd = f->src->ops->fd(f->src)) < 0 || fstat(fd, &st) < 0)
		return 0;
	size = (uint64_t)st.st_size;
	if (h5_add_overflow(f->base, from, &pos) || h5_add_overflow(f->base, to, &lim))
		return 0;
	if (lim > size)
		lim = size;
	while (rc == 0 && pos < lim) {
		off_t h = lseek(fd, (off_t)pos, SEEK_HOLE), d;

		if (h < 0 || (uint64_t)h >= lim)
			break;
		d = lseek(fd, h, SEEK_DATA);
		if (d < 0)
			d = (off_t)size;        /* (ENXIO: a hole to the end) */
		if ((uint64_t)d <= (uint64_t)h)
			break;
		rc = cb(ud, (uint64_t)h - f->base, (uint64_t)d - f->base);
		pos = (uint64_t)d;
	}
	return rc;
}

uint64_t h5_file_disk_bytes(h5_file *f)
{
	struct stat st;
	int fd;

	if (!f->src->ops->fd || (fd = f->src->ops->fd(f->src)) < 0 || fstat(fd, &st) < 0)
		return 0;
	return (uint64_t)st.st_blocks * 512;
}
