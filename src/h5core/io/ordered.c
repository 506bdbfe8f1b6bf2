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
#define MAGIC "H5FSOCP1"
/* a record larger than this is not one of ours (an object header chunk
 * is at most 4 GiB, but h5fs writes none beyond a few MiB) */
#define REC_MAX ((uint64_t)64 << 20)

static bool spans_page(uint64_t abs, uint64_t len)
{
	return len && abs / PAGE != (abs + len - 1) / PAGE;
}

void h5_ordered_encode(uint8_t *rec, uint64_t abs, uint64_t n, uint64_t blk_abs, uint64_t blen)
{
	uint8_t *out = rec + n;
	uint32_t ck;

	h5_le_encode(out, abs, 8);
	h5_le_encode(out + 8, n, 8);
	h5_le_encode(out + 16, blk_abs, 8);
	h5_le_encode(out + 24, blen, 8);
	/* over the bytes and trailer bytes 0-31, one run */
	ck = h5_checksum_metadata(rec, (size_t)n + 32);
	h5_le_encode(out + 32, ck, 4);
	memset(out + 36, 0, 4);
	memcpy(out + 40, MAGIC, 8);
}

int h5_ordered_decode(uint64_t *abs, uint64_t *n, uint64_t *blk_abs, uint64_t *blen, const uint8_t *rec,
		      size_t len)
{
	const uint8_t *t;

	if (len < H5_ORDERED_TRAILER)
		return h5_err_set(H5_ERR_FORMAT, "ordered copy: %zu bytes, no trailer", len);
	t = rec + len - H5_ORDERED_TRAILER;
	if (memcmp(t + 40, MAGIC, 8) != 0)
		return h5_err_set(H5_ERR_FORMAT, "ordered copy: no signature");
	*abs = h5_le_decode(t, 8);
	*n = h5_le_decode(t + 8, 8);
	*blk_abs = h5_le_decode(t + 16, 8);
	*blen = h5_le_decode(t + 24, 8);
	if (*n != len - H5_ORDERED_TRAILER)
		return h5_err_set(H5_ERR_FORMAT, "ordered copy: %llu bytes in a record of %zu",
				  (unsigned long long)*n, len);
	if (h5_checksum_metadata(rec, (size_t)*n + 32) != (uint32_t)h5_le_decode(t + 32, 4))
		return h5_err_set(H5_ERR_FORMAT, "ordered copy: checksum mismatch");
	return 0;
}

int h5_file_write_inplace(h5_file *f, uint64_t addr, const void *buf, size_t len, uint64_t blk, uint64_t blen)
{
	uint64_t abs = f->base + addr, size, top, at, end;
	uint8_t *rec = NULL;
	int rc;

	/* within a page (the kernel writes it back whole), or a loose
	 * object's commit (nothing references its bytes: loose.h) */
	if (!spans_page(abs, len) || __atomic_load_n(&f->loose_on, __ATOMIC_ACQUIRE) || !f->src->ops->truncate)
		return h5_file_write(f, addr, buf, len);
	rc = h5_file_size(f, &size);
	if (rc < 0)
		return rc;
	/* past FILE's end and everything ever handed out (write/space.c's
	 * ends, read here only): no other write lands there while write_lock
	 * is held (staged chunks are written below the allocation end) */
	top = f->alloc_end > f->eoa ? f->alloc_end : f->eoa;
	if (top < f->alloc_high)
		top = f->alloc_high;
	top += f->base;
	if (top < size)
		top = size;
	if (top < abs + len)
		top = abs + len;
	at = (top + PAGE - 1) / PAGE * PAGE;
	rec = malloc(len + H5_ORDERED_TRAILER);
	if (!rec)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	memcpy(rec, buf, len);
	h5_ordered_encode(rec, abs, len, h5_addr_defined(blk) ? f->base + blk : H5_ADDR_UNDEF, blen);
	end = at + len + H5_ORDERED_TRAILER;
	/* 1. the copy, durable before the first byte in place changes */
	rc = h5_file_write(f, at - f->base, rec, len + H5_ORDERED_TRAILER);
	if (rc == 0)
		rc = h5_file_sync(f);
	/* 2. in place, durable before the copy goes */
	if (rc == 0)
		rc = h5_file_write(f, addr, buf, len);
	if (rc == 0)
		rc = h5_file_sync(f);
	/* 3. the copy cut off, FILE as long as it was or as what is
	 * allocated (staged chunks are written below alloc_end without
	 * write_lock); should FILE have grown past the record, it stays
	 * (ordered.h: a record left behind is harmless) */
	if (rc == 0 && h5_file_size(f, &size) == 0 && size == end)
		rc = h5_file_truncate(f, top);
	free(rec);
	return rc;
}

/* The record's bytes written again unless the block they end verifies. */
static int replay(h5_file *f, uint64_t abs, const uint8_t *bytes, uint64_t n, uint64_t blk, uint64_t blen,
		  uint64_t at)
{
	uint8_t *b = NULL;
	int rc = 0;

	if (blk != H5_ADDR_UNDEF && blen >= 4 && blen <= REC_MAX && blk + blen <= at) {
		b = malloc((size_t)blen);
		if (!b)
			return h5_err_set(H5_ERR_NOMEM, "out of memory");
		rc = f->src->ops->read(f->src, blk, b, (size_t)blen);
		if (rc == 0 && h5_checksum_metadata(b, (size_t)blen - 4) == (uint32_t)h5_le_decode(b + blen - 4, 4)) {
			free(b);
			return 1;       /* whole: the write landed, or never began */
		}
		free(b);
	}
	rc = f->src->ops->write(f->src, abs, bytes, (size_t)n);
	return rc < 0 ? rc : 0;
}

int h5_ordered_recover(h5_file *f)
{
	uint8_t t[H5_ORDERED_TRAILER], *rec = NULL;
	uint64_t size, abs, n, blk, blen, at;
	int rc;

	if (!f->writable || !f->src->ops->truncate || !f->src->ops->read)
		return 0;
	rc = h5_file_size(f, &size);
	if (rc < 0 || size < H5_ORDERED_TRAILER)
		return rc < 0 ? rc : 0;
	rc = f->src->ops->read(f->src, size - H5_ORDERED_TRAILER, t, sizeof(t));
	if (rc < 0)
		return rc;
	if (memcmp(t + 40, MAGIC, 8) != 0)
		return 0;
	/* (the daemon's lazy lock: FILE is written now, so locked now) */
	rc = h5_file_lock(f);
	if (rc < 0)
		return rc;
	n = h5_le_decode(t + 8, 8);
	if (n > REC_MAX || n + H5_ORDERED_TRAILER > size)
		return 0;
	at = size - n - H5_ORDERED_TRAILER;
	if (at % PAGE)
		return 0;       /* not where h5fs puts one */
	rec = malloc((size_t)n + H5_ORDERED_TRAILER);
	if (!rec)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = f->src->ops->read(f->src, at, rec, (size_t)n + H5_ORDERED_TRAILER);
	if (rc == 0 && h5_ordered_decode(&abs, &n, &blk, &blen, rec, (size_t)n + H5_ORDERED_TRAILER) < 0) {
		h5_err_clear();         /* torn itself: its write in place never began */
		rc = 1;
	}
	if (rc == 0 && abs + n > at) {
		rc = 1;                 /* not ours: it would write over itself */
	}
	if (rc == 0) {
		rc = replay(f, abs, rec, n, blk, blen, at);
		if (rc >= 0 && f->src->ops->sync)
			rc = f->src->ops->sync(f->src);
	}
	/* the record cut off (also a torn one: its write never began) */
	if (rc >= 0)
		rc = f->src->ops->truncate(f->src, at);
	if (rc == 0 && f->eof > at)
		f->eof = at;    /* (base is 0 until the superblock is read) */
	free(rec);
	return rc < 0 ? rc : 1;
}
