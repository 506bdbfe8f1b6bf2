/*
 * space.c - allocation and the end of the file (space.h).
 *
 * HDF5 keeps free-space managers (spec III.B) and aggregators; h5fs only
 * appends, so one pointer is enough: new space starts at the allocation
 * end, which starts at the superblock's end of allocated space (II.A "End
 * of File Address") and only grows while the file is open. It may lie
 * below f->eoa when a commit reserved room ahead (doc/APPEND.md); the
 * superblock field itself is written by the ordered commit (txn.c).
 * h5_file_reserve allocates the disk space the next commits will write
 * before a change is answered (the daemon's write-behind), so that they
 * cannot run out of it; the file is cut back to its end of allocation by
 * h5_txn_sync.
 */
#include "space.h"
#include "base.h"
#include "file.h"

bool h5_space_fits(const h5_file *f, uint64_t end)
{
	return end < H5_ADDR_UNDEF && (f->fmt.sizeof_addr >= 8 || end < UINT64_C(1) << (8 * f->fmt.sizeof_addr));
}

uint64_t h5_space_end(h5_file *f)
{
	/* 0: nothing allocated since the file was opened */
	if (f->alloc_end == 0)
		f->alloc_end = f->eoa;
	return f->alloc_end;
}

int h5_space_alloc(uint64_t *addr, h5_file *f, uint64_t len)
{
	uint64_t end;

	*addr = h5_space_end(f);
	if (h5_add_overflow(*addr, len, &end) || !h5_space_fits(f, end))
		return h5_err_set(H5_ERR_LIMIT, "file address space exhausted");
	f->alloc_end = end;
	return 0;
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
	if (size > f->base + end && (rc = h5_file_truncate(f, f->base + end)) < 0)
		return h5_err_wrap(rc, "truncating %s: ", f->path);
	return 0;
}

int h5_space_give_back(h5_file *f, uint64_t mark, uint64_t start)
{
	uint64_t size, keep;
	int rc;

	if (h5_space_end(f) != mark || start > mark)
		return 0;
	f->alloc_end = start;
	keep = f->base + (f->eoa > start ? f->eoa : start);
	if ((rc = h5_file_size(f, &size)) < 0)
		return rc;
	return size > keep ? h5_file_truncate(f, keep) : 0;
}

int h5_file_reserve(h5_file *f, uint64_t len)
{
	uint64_t at;
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	pthread_mutex_lock(&f->write_lock);
	rc = h5_add_overflow(f->base, h5_space_end(f), &at) ? h5_err_set(H5_ERR_LIMIT, "file size overflows") : 0;
	if (rc == 0)
		rc = h5_file_allocate(f, at, len);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}
