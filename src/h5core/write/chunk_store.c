/*
 * chunk_store.c - new chunk bytes into FILE and their records onto the
 * index writer (chunk_store.h): the one place every chunked writer's
 * bytes take space and are written.
 */
#include "chunk_store.h"
#include "space.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Staged images are gathered up to this size before one pwrite. */
#define GATHER_BYTES ((size_t)1 << 20)

static void lock(const h5_cstore *s)
{
	if (!s->locked)
		pthread_mutex_lock(&s->f->write_lock);
}

static void unlock(const h5_cstore *s)
{
	if (!s->locked)
		pthread_mutex_unlock(&s->f->write_lock);
}

static int take(const h5_cstore *s, uint64_t *addr, uint64_t len)
{
	return s->at_end ? h5_space_alloc(addr, s->f, len) : h5_space_take(addr, s->f, len);
}

/* Start writing a large run back now, so that the commit's fsync finds
 * little left to do (a hint: errors show up at that fsync). */
static void writeback_hint(const h5_cstore *s, uint64_t addr, uint64_t len)
{
	if (len >= ((uint64_t)1 << 20))
		h5_file_sync_hint(s->f, addr, len);
}

/* Where the index places item i itself: 1 and *addr, 0 (new space), or a
 * negative h5_err. */
static int placed(uint64_t *addr, const h5_cstore *s, const h5_cstore_item *it)
{
	if (s->filtered || !s->wops || !s->wops->place || !s->w)
		return 0;
	return s->wops->place(s->w, it->idx, addr);
}

static int write_placed(const h5_cstore *s, h5_cstore_item *it, size_t n)
{
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		uint64_t addr = 0;

		rc = placed(&addr, s, &it[i]);
		if (rc == 0)
			rc = h5_err_set(H5_ERR_FORMAT, "chunk index places some chunks only");
		if (rc < 0)
			break;
		lock(s);
		rc = h5_file_write(s->f, addr, it[i].img, it[i].len);
		unlock(s);
		it[i].rec = (h5_chunk_rec){ addr, s->cb, 0 };
	}
	return rc;
}

/* The images in one extent at addr, gathered into writes of up to
 * GATHER_BYTES where they are apart in memory (one write when they lie
 * in a row already); under the write lock. */
static int write_run(const h5_cstore *s, uint64_t addr, const h5_cstore_item *it, size_t n)
{
	uint8_t *buf = NULL;
	size_t blen = 0;
	uint64_t at = addr;
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0;) {
		size_t j = i + 1, len = it[i].len;

		/* images already side by side: one write */
		while (j < n && it[j].img == it[j - 1].img + it[j - 1].len) {
			len += it[j].len;
			j++;
		}
		if (j > i + 1 || len >= GATHER_BYTES) {
			if (blen)
				rc = h5_file_write(s->f, at - blen, buf, blen);
			blen = 0;
			if (rc == 0)
				rc = h5_file_write(s->f, at, it[i].img, len);
			at += len;
			i = j;
			continue;
		}
		if (!buf && !(buf = malloc(GATHER_BYTES)))
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory gathering chunks");
		if (rc == 0 && blen + len > GATHER_BYTES) {
			rc = h5_file_write(s->f, at - blen, buf, blen);
			blen = 0;
		}
		if (rc == 0) {
			memcpy(buf + blen, it[i].img, len);
			blen += len;
			at += len;
		}
		i = j;
	}
	if (rc == 0 && blen)
		rc = h5_file_write(s->f, at - blen, buf, blen);
	free(buf);
	return rc;
}

static h5_chunk_rec rec_of(const h5_cstore *s, const h5_cstore_item *it, uint64_t addr)
{
	/* H5D__earray_idx_insert: filtered elements carry size and mask */
	return (h5_chunk_rec){ addr, s->filtered ? it->len : 0, s->filtered ? it->mask : 0 };
}

static int write_new(const h5_cstore *s, h5_cstore_item *it, size_t n)
{
	uint64_t addr = 0, sum = 0;
	int rc = 0;

	if (!s->run) {
		for (size_t i = 0; i < n && rc == 0; i++) {
			lock(s);
			rc = take(s, &addr, it[i].len);         /* written whole below */
			if (rc == 0)
				rc = h5_file_write(s->f, addr, it[i].img, it[i].len);
			unlock(s);
			it[i].rec = rec_of(s, &it[i], addr);
		}
		return rc;
	}
	for (size_t i = 0; i < n; i++)
		if (h5_add_overflow(sum, it[i].len, &sum))
			return h5_err_set(H5_ERR_LIMIT, "chunks too large");
	lock(s);
	rc = take(s, &addr, sum);                       /* written whole below */
	if (rc == 0)
		rc = write_run(s, addr, it, n);
	unlock(s);
	if (rc < 0)
		return rc;
	writeback_hint(s, addr, sum);
	for (size_t i = 0; i < n; i++) {
		it[i].rec = rec_of(s, &it[i], addr);
		addr += it[i].len;
	}
	return 0;
}

int h5_cstore_put(size_t *done, const h5_cstore *s, h5_cstore_item *it, size_t n)
{
	uint64_t addr = 0;
	size_t i = 0;
	int rc = 0;

	if (done)
		*done = 0;
	if (n == 0)
		return 0;
	rc = placed(&addr, s, &it[0]);
	if (rc > 0)
		rc = write_placed(s, it, n);
	else if (rc == 0)
		rc = write_new(s, it, n);
	if (rc < 0)
		return rc;
	while (s->w && i < n && (rc = s->wops->set(s->w, it[i].scaled, it[i].idx, &it[i].rec)) == 0)
		i++;
	if (done)
		*done = rc == 0 ? n : i;
	return rc;
}
