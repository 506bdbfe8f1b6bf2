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
 * h5_file_reserve allocates the disk space the next commits will write
 * before a change is answered (the daemon's write-behind), so that they
 * cannot run out of it; the file is cut back to its end of allocation by
 * h5_txn_sync.
 */
#include "space.h"
#include "base.h"
#include "file.h"
#include "freesp.h"
#include "cache.h"

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

static void release(h5_file *f, uint64_t *end)
{
	h5_freesp_release(&f->freesp, __atomic_load_n(&f->sync_done, __ATOMIC_ACQUIRE), end);
}

void h5_space_settle(h5_file *f)
{
	uint64_t end = h5_space_end(f);

	release(f, &end);
	if (end < f->alloc_end) {
		/* space below the old end is handed out again: new space for
		 * every "did the end move" test (ohdr_edit.c's stage) */
		f->alloc_end = end;
		f->reused++;
	}
}

int h5_space_take(uint64_t *addr, h5_file *f, uint64_t len)
{
	/* the allocation end stays: only h5_space_settle (a sync between
	 * changes) lowers it, never a change under way, whose commit may
	 * compare it with where it began */
	release(f, NULL);
	if (!h5_freesp_take(&f->freesp, len, addr))
		return h5_space_alloc(addr, f, len);
	f->reused++;
	/* what readers decoded from the old bytes is stale now */
	h5_cache_invalidate_range(f->meta, *addr, *addr + len);
	if (f->chunks && f->chunks != f->meta)
		h5_cache_invalidate_range(f->chunks, *addr, *addr + len);
	return 0;
}

uint64_t h5_space_ticket(h5_file *f)
{
	return __atomic_load_n(&f->sync_started, __ATOMIC_ACQUIRE) + 1;
}

void h5_space_free(h5_file *f, uint64_t addr, uint64_t len, uint64_t ticket)
{
	uint64_t end;

	if (ticket == 0)
		ticket = h5_space_ticket(f);
	if (!h5_addr_defined(addr) || len == 0 || h5_add_overflow(addr, len, &end) || end > h5_space_end(f))
		return;
	if (h5_freesp_add(&f->freesp, addr, len, ticket) < 0)
		h5_err_clear();         /* leaked: a double free is refused, never handed out twice */
}

void h5_space_free_all(h5_file *f, h5_freesp *from)
{
	for (size_t i = 0; i < from->n; i++)
		h5_space_free(f, from->v[i].addr, from->v[i].len, from->v[i].ticket);
	h5_freesp_clear(from);
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

/* Of len bytes a commit may take, those the free list can give: released
 * bytes in extents that hold a block of RESERVE_BLOCK (a global heap
 * collection's least size; a smaller extent may not fit the blocks the
 * commit writes). */
#define RESERVE_BLOCK 4096
static uint64_t reusable(const h5_file *f, uint64_t len)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < f->freesp.n && sum < len; i++)
		if (!f->freesp.v[i].ticket && f->freesp.v[i].len >= RESERVE_BLOCK)
			sum += f->freesp.v[i].len;
	return sum < len ? sum : len;
}

int h5_file_reserve(h5_file *f, uint64_t len)
{
	uint64_t at;
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	pthread_mutex_lock(&f->write_lock);
	/* space the free list holds takes no disk space: a change that
	 * fits there is made on a full disk too */
	h5_space_settle(f);
	rc = h5_add_overflow(f->base, h5_space_end(f), &at) ? h5_err_set(H5_ERR_LIMIT, "file size overflows") : 0;
	if (rc == 0)
		rc = h5_file_allocate(f, at, len - reusable(f, len));
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}
