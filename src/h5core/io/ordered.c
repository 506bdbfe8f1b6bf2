/*
 * ordered.c - the ordered copy of a write in place across a 4 KiB page
 * (ordered.h for the record and the argument; doc/DESIGN.md "Torn pages").
 */
#include "ordered.h"
#include <stdlib.h>
#include <string.h>
#include "base.h"
#include "checksum.h"
#include "rd.h"
#include "h5core.h"

#define PAGE 4096
#define MAGIC "H5FSOCP2"
/* a record larger than this is not one of ours (h5fs writes no block in
 * place beyond a few MiB) */
#define REC_MAX ((uint64_t)64 << 20)

static bool spans_page(uint64_t abs, uint64_t len)
{
	return len && abs / PAGE != (abs + len - 1) / PAGE;
}

/* the pages of a record of an in-place write of n bytes (it starts at
 * a page boundary) */
static uint64_t record_pages(uint64_t n)
{
	return (2 * n + H5_ORDERED_TRAILER + PAGE - 1) / PAGE * PAGE;
}

uint64_t h5_ordered_room(h5_file *f)
{
	uint64_t seen = __atomic_load_n(&f->ordered_room, __ATOMIC_RELAXED), page = record_pages(PAGE);

	if (!seen && !__atomic_load_n(&f->ordered_cross, __ATOMIC_RELAXED))
		return 0;
	return seen > page ? seen : page;
}

void h5_ordered_note(h5_file *f, uint64_t addr, uint64_t len)
{
	if (f->writable && !__atomic_load_n(&f->ordered_cross, __ATOMIC_RELAXED) && spans_page(f->base + addr, len))
		__atomic_store_n(&f->ordered_cross, true, __ATOMIC_RELAXED);
}

void h5_ordered_encode(uint8_t *rec, uint64_t abs, uint64_t n)
{
	uint8_t *t = rec + 2 * n;

	h5_le_encode(t, abs, 8);
	h5_le_encode(t + 8, n, 8);
	memset(t + 16, 0, 20);
	/* over the new and old bytes and trailer bytes 0-31, one run */
	h5_le_encode(t + 32, h5_checksum_metadata(rec, (size_t)(2 * n) + 32), 4);
	memcpy(t + 40, MAGIC, 8);
}

int h5_ordered_decode(uint64_t *abs, uint64_t *n, const uint8_t *rec, size_t len)
{
	const uint8_t *t;

	if (len < H5_ORDERED_TRAILER)
		return h5_err_set(H5_ERR_FORMAT, "ordered copy: %zu bytes, no trailer", len);
	t = rec + len - H5_ORDERED_TRAILER;
	if (memcmp(t + 40, MAGIC, 8) != 0)
		return h5_err_set(H5_ERR_FORMAT, "ordered copy: no signature");
	*abs = h5_le_decode(t, 8);
	*n = h5_le_decode(t + 8, 8);
	if (*n > REC_MAX || 2 * *n != len - H5_ORDERED_TRAILER)
		return h5_err_set(H5_ERR_FORMAT, "ordered copy: %llu bytes in a record of %zu",
				  (unsigned long long)*n, len);
	if (h5_checksum_metadata(rec, (size_t)(2 * *n) + 32) != (uint32_t)h5_le_decode(t + 32, 4))
		return h5_err_set(H5_ERR_FORMAT, "ordered copy: checksum mismatch");
	return 0;
}

int h5_file_write_inplace(h5_file *f, uint64_t addr, const void *buf, size_t len)
{
	static const uint8_t zero[8];
	uint64_t abs = f->base + addr, size, top, at, end;
	uint8_t *rec = NULL;
	int rc;

	/* within a page (the kernel writes it back whole), or a loose
	 * object's commit (nothing references its bytes: loose.h) */
	if (!spans_page(abs, len) || __atomic_load_n(&f->loose_on, __ATOMIC_ACQUIRE) || !f->src->ops->truncate ||
	    !f->src->ops->read || len > REC_MAX)
		return h5_file_write(f, addr, buf, len);
	/* the next reserves count a record this large (a libhdf5 chunk
	 * beyond a page: h5_ordered_room) */
	if (record_pages(len) > __atomic_load_n(&f->ordered_room, __ATOMIC_RELAXED))
		__atomic_store_n(&f->ordered_room, record_pages(len), __ATOMIC_RELAXED);
	rc = h5_file_size(f, &size);
	if (rc < 0)
		return rc;
	/* past FILE's end and everything ever handed out (write/space.c's
	 * ends, space_top, read here only): no other write lands there while
	 * write_lock is held (staged chunks are written below the allocation
	 * end) */
	top = f->space_top > f->eoa ? f->space_top : f->eoa;
	top += f->base;
	if (top < size)
		top = size;
	if (top < abs + len)
		top = abs + len;
	at = (top + PAGE - 1) / PAGE * PAGE;
	end = at + 2 * (uint64_t)len + H5_ORDERED_TRAILER;
	rec = calloc(1, 2 * len + H5_ORDERED_TRAILER);
	if (!rec)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	memcpy(rec, buf, len);
	/* the old bytes as FILE holds them (the page cache: after the fsync
	 * below, the disk too); past FILE's end, zeros */
	rc = abs < size ? f->src->ops->read(f->src, abs, rec + len, (size_t)(size - abs < len ? size - abs : len)) : 0;
	if (rc < 0)
		goto out;
	h5_ordered_encode(rec, abs, len);
	/* 1. the copy, durable before the first byte in place changes */
	rc = h5_file_write(f, at - f->base, rec, (size_t)(end - at));
	if (rc == 0)
		rc = h5_file_sync(f);
	/* 2. in place, durable before the copy goes */
	if (rc == 0)
		rc = h5_file_write(f, addr, buf, len);
	if (rc == 0)
		rc = h5_file_sync(f);
	/* 3. the copy cut off, FILE as long as it was or as what is
	 * allocated (staged chunks are written below alloc_end without
	 * write_lock); also after a failure (the write may not have been
	 * made: the copy must not be redone over later changes). Should FILE
	 * have grown past it, its signature is cleared instead. */
	if (h5_file_size(f, &size) == 0 && size == end) {
		int rc2 = h5_file_truncate(f, top);

		rc = rc < 0 ? rc : rc2;
	} else if (size > at) {
		int rc2 = h5_file_write(f, end - H5_ORDERED_TRAILER + 40 - f->base, zero, 8);

		rc = rc < 0 ? rc : rc2;
	}
out:
	free(rec);
	return rc;
}

/* Whether the bytes at abs are, page by page, the old or the new ones
 * (a write in place torn, landed, or not begun): 1 to write the new ones
 * again, 0 to leave them (landed: nothing to do; some page holds
 * neither: the copy is older than a later change, which stays). */
static int torn_here(h5_file *f, uint64_t abs, const uint8_t *nw, const uint8_t *old, uint64_t n)
{
	uint8_t *cur = malloc(n ? (size_t)n : 1);
	bool all_new = true;
	int rc;

	if (!cur)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = f->src->ops->read(f->src, abs, cur, (size_t)n);
	for (uint64_t p = 0; rc == 0 && p < n;) {
		uint64_t e = (abs + p) / PAGE * PAGE + PAGE - abs;

		if (e > n)
			e = n;
		if (memcmp(cur + p, nw + p, (size_t)(e - p)) != 0) {
			all_new = false;
			if (memcmp(cur + p, old + p, (size_t)(e - p)) != 0)
				rc = 1;         /* neither */
		}
		p = e;
	}
	free(cur);
	if (rc < 0)
		return rc;
	return rc == 0 && !all_new;
}

int h5_ordered_recover(h5_file *f)
{
	uint8_t t[H5_ORDERED_TRAILER], *rec = NULL;
	uint64_t size, abs, n, at;
	bool lazy = false;
	int rc;

	if (!f->writable || !f->src->ops->truncate || !f->src->ops->read)
		return 0;
	rc = h5_file_size(f, &size);
	if (rc < 0 || size < H5_ORDERED_TRAILER)
		return rc < 0 ? rc : 0;
	rc = f->src->ops->read(f->src, size - H5_ORDERED_TRAILER, t, sizeof(t));
	if (rc < 0)
		return rc;
	n = h5_le_decode(t + 8, 8);
	/* none, or not where h5fs puts one (a page boundary) */
	if (memcmp(t + 40, MAGIC, 8) != 0 || n > REC_MAX || 2 * n + H5_ORDERED_TRAILER > size ||
	    (size - 2 * n - H5_ORDERED_TRAILER) % PAGE)
		return 0;
	at = size - 2 * n - H5_ORDERED_TRAILER;
	/* (the daemon's lazy lock: FILE is written now, so locked now, and
	 * given back after, as the daemon holds it only while it writes) */
	lazy = f->lazy_lock && !__atomic_load_n(&f->locked, __ATOMIC_ACQUIRE);
	rc = h5_file_lock(f);
	if (rc < 0)
		return rc;
	rec = malloc((size_t)(2 * n) + H5_ORDERED_TRAILER);
	if (!rec) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
		goto out;
	}
	rc = f->src->ops->read(f->src, at, rec, (size_t)(2 * n) + H5_ORDERED_TRAILER);
	if (rc < 0)
		goto out;
	if (h5_ordered_decode(&abs, &n, rec, (size_t)(2 * n) + H5_ORDERED_TRAILER) < 0) {
		h5_err_clear();         /* torn itself: its write in place never began */
	} else if (abs + n <= at) {     /* (else not ours: it would write over itself) */
		rc = torn_here(f, abs, rec, rec + n, n);
		if (rc == 1)
			rc = f->src->ops->write(f->src, abs, rec, (size_t)n);
		if (rc == 0 && f->src->ops->sync)
			rc = f->src->ops->sync(f->src);
		if (rc < 0)
			goto out;
	}
	/* the record cut off (also a torn one: its write never began) */
	rc = f->src->ops->truncate(f->src, at);
	if (rc == 0 && f->eof > at)
		f->eof = at;    /* (base is 0 until the superblock is read) */
out:
	free(rec);
	if (lazy)
		h5_file_unlock(f);
	return rc < 0 ? rc : 1;
}
