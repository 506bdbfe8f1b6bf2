/*
 * ohdr_patch.c - a loaded object header edited in place: byte ranges
 * patched, the changed part of each chunk written back with its
 * checksum, and the times a header holds moved (appends, overwrites).
 */
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "file.h"
#include "ohdr.h"
#include "ordered.h"
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- editing a loaded header in place (appends, append.c) ------------------------
 * A private copy of the header (h5_ohdr_load) is patched; each changed chunk
 * is written back with one pwrite of [first changed byte, end of chunk), so
 * a v2 chunk's checksum lands in the same write as the bytes it covers -
 * preceded by an ordered copy when that write spans a 4 KiB page, which a
 * power cut could tear (io/ordered.h). */

int h5_ohdr_edit_ranges(h5_ohdr_edit *e)
{
	e->lo = malloc(e->oh->nchunks * sizeof(size_t));
	e->hi = calloc(e->oh->nchunks, sizeof(size_t));
	if (!e->lo || !e->hi)
		return h5_err_set(H5_ERR_NOMEM, "out of memory editing an object header");
	for (size_t c = 0; c < e->oh->nchunks; c++)
		e->lo[c] = SIZE_MAX;
	return 0;
}

int h5_ohdr_patch(h5_ohdr_edit *e, uint64_t addr, const void *bytes, size_t n)
{
	for (size_t c = 0; c < e->oh->nchunks; c++) {
		h5_ohdr_chunk *ch = &e->oh->chunks[c];
		uint64_t off;

		if (addr < ch->addr || addr - ch->addr > ch->len || ch->len - (addr - ch->addr) < n)
			continue;
		off = addr - ch->addr;
		memcpy(ch->buf + off, bytes, n);
		if ((size_t)off < e->lo[c])
			e->lo[c] = (size_t)off;
		if ((size_t)off + n > e->hi[c])
			e->hi[c] = (size_t)off + n;
		return 0;
	}
	return h5_err_set(H5_ERR_FORMAT, "object header 0x%llx: address 0x%llx is in none of its chunks",
			  (unsigned long long)e->oh->addr, (unsigned long long)addr);
}

int h5_ohdr_write_chunk(h5_file *f, h5_ohdr_edit *e, size_t c)
{
	h5_ohdr_chunk *ch = &e->oh->chunks[c];
	size_t end = e->hi[c];
	int rc;

	if (e->lo[c] == SIZE_MAX)
		return 0;
	if (e->oh->version >= 2) {
		h5_le_encode(ch->buf + ch->len - 4, h5_checksum_metadata(ch->buf, ch->len - 4), 4);
		end = ch->len;
	}
	/* across a 4 KiB page: an ordered copy first (io/ordered.h) */
	rc = h5_file_write_inplace(f, ch->addr + e->lo[c], ch->buf + e->lo[c], end - e->lo[c]);
	e->lo[c] = SIZE_MAX;
	e->hi[c] = 0;
	return rc;
}

size_t h5_ohdr_chunk_of(const h5_ohdr *oh, uint64_t addr)
{
	for (size_t c = 0; c < oh->nchunks; c++)
		if (addr >= oh->chunks[c].addr && addr - oh->chunks[c].addr < oh->chunks[c].len)
			return c;
	return SIZE_MAX;
}

/* "YYYYMMDDhhmmss" of sec (UTC) into s[15]; false: no 4-digit year */
static bool old_time_text(char *s, int64_t sec)
{
	time_t t = (time_t)sec;
	struct tm tm;

	if ((int64_t)t != sec || !gmtime_r(&t, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
		return false;
	snprintf(s, 15, "%04d%02d%02d%02d%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec);
	return true;
}

bool h5_ohdr_old_time(uint8_t body[16], int64_t sec)
{
	char s[15];

	if (!old_time_text(s, sec))
		return false;
	memcpy(body, s, 14);
	body[14] = body[15] = 0;        /* reserved */
	return true;
}

int h5_ohdr_time_places(unsigned *places, unsigned *narrow, const h5_ohdr *oh, int64_t sec, size_t prefix_off,
			h5_ohdr_time_put put, void *ud)
{
	/* the 32-bit places hold 0 to 2^32-1 s since 1970 (IV.A.2.s,
	 * IV.A.1.b); the old message a 4-digit year (IV.A.2.o) */
	bool fits = sec >= 0 && sec <= (int64_t)UINT32_MAX;
	uint8_t v[16];
	int rc = 0;

	*places = 0;
	*narrow = 0;
	for (size_t i = 0; i < oh->nmsgs && rc == 0; i++) {
		const h5_msg *m = &oh->msgs[i];

		if (m->flags & H5_MSG_FLAG_SHARED)
			continue;
		if (m->type == H5_MSG_MTIME && m->size >= 8 && m->data[0] == 1) {
			if (!fits) {
				++*narrow;
				continue;
			}
			h5_le_encode(v, (uint64_t)sec, 4);
			rc = put(ud, m->addr + 4, v, 4, m->chunk);
			++*places;
		} else if (m->type == H5_MSG_MTIME_OLD && m->size >= 14) {
			char s[15];

			if (!old_time_text(s, sec))
				return h5_err_set(H5_ERR_RANGE, "time %lld has no 4-digit UTC year", (long long)sec);
			rc = put(ud, m->addr, s, 14, m->chunk);
			++*places;
		}
	}
	if (rc == 0 && oh->version >= 2 && oh->has_times) {
		/* "OHDR", version, flags, then access, modification, change,
		 * birth: the two at prefix_off */
		if (!fits) {
			++*narrow;
			return 0;
		}
		h5_le_encode(v, (uint64_t)sec, 4);
		h5_le_encode(v + 4, (uint64_t)sec, 4);
		rc = put(ud, oh->addr + prefix_off, v, 8, 0);
		++*places;
	}
	return rc;
}

static int touch_put(void *ud, uint64_t addr, const void *bytes, size_t n, size_t chunk)
{
	(void)chunk;
	return h5_ohdr_patch(ud, addr, bytes, n);
}

/* Set the modification time everywhere the header records one: the
 * modification time messages (IV.A.2.r, IV.A.2.o) and the v2 prefix
 * (whose change time libhdf5's H5O_touch also updates). */
int h5_ohdr_touch(h5_ohdr_edit *e, uint32_t now)
{
	unsigned places, narrow;

	return h5_ohdr_time_places(&places, &narrow, e->oh, now, 10, touch_put, e);
}
