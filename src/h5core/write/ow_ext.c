/*
 * ow_ext.c - what the overwriters' layout entries (ow_contig.c,
 * ow_compact.c, chunk_rewrite.c, chunk_whole.c) share with overwrite.c
 * (ow_int.h; doc/OVERWRITE.md): the written extents kept in memory until
 * a commit and the chunks they touch, zeros put through a layout's put,
 * the extents merged into disjoint ranges, and the object header's edit
 * an entry's commit makes. Beneath overwrite.c and every entry, so that
 * no entry calls back into the file that dispatches to it.
 */
#include "ow_int.h"
#include "base.h"
#include "file.h"
#include "ohdr.h"
#include "ohdr_edit.h"
#include "cache.h"
#include "h5util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void h5_ow_dirty_clear(h5_overwriter *w)
{
	h5_keytab_clear(&w->dirty);
	__atomic_store_n(&w->ndirty, 0, __ATOMIC_RELAXED);
}

/* The chunks of [off, off + len) noted as touched. */
int h5_ow_dirty_note(h5_overwriter *w, uint64_t off, uint64_t len)
{
	uint64_t cb = w->chunk_bytes;

	if (!w->dset_key || !cb || !len)
		return 0;
	for (uint64_t c = off / cb; c <= (off + len - 1) / cb; c++) {
		void *e;
		int rc = h5_keytab_get(&e, &w->dirty, c + 1);

		if (rc < 0)
			return rc;
		if (rc == 1)
			__atomic_store_n(&w->ndirty, w->ndirty + 1, __ATOMIC_RELAXED);
	}
	return 0;
}

int h5_ow_keep(h5_overwriter *w, uint64_t off, const uint8_t *buf, size_t len)
{
	h5_ow_ext *x = w->n ? &w->ext[w->n - 1] : NULL;

	if (!len)
		return 0;
	/* a write continuing the last one grows it (dd, cp: one extent) */
	if (!x || x->off + x->len != off) {
		if (w->n == w->cap) {
			size_t nc = w->cap ? w->cap * 2 : 8;
			h5_ow_ext *ne = realloc(w->ext, nc * sizeof(*ne));

			if (!ne)
				return h5_err_set(H5_ERR_NOMEM, "out of memory");
			w->ext = ne;
			w->cap = nc;
		}
		x = &w->ext[w->n++];
		*x = (h5_ow_ext){ .off = off };
		__atomic_store_n(&w->spans, w->n, __ATOMIC_RELAXED);
	}
	if (x->len + len > x->cap) {
		size_t nc = x->cap ? x->cap : 4096;
		uint8_t *np;

		while (nc < x->len + len)
			nc *= 2;
		np = realloc(x->p, nc);
		if (!np) {
			if (!x->len)
				w->n--;
			return h5_err_set(H5_ERR_NOMEM, "out of memory buffering %zu bytes", len);
		}
		h5_mem_populate(np + x->len, nc - x->len, (size_t)1 << 20);
		x->p = np;
		x->cap = nc;
	}
	if (h5_ow_dirty_note(w, off, len) < 0)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	memcpy(x->p + x->len, buf, len);
	x->len += len;
	__atomic_store_n(&w->buffered, w->buffered + len, __ATOMIC_RELAXED);
	return 0;
}

/* Whether d's fill value reads as zeros. */
bool h5_ow_fill_is_zero(const h5_dataset *d)
{
	for (size_t i = 0; d->fill_elem && i < d->dtype->size; i++)
		if (d->fill_elem[i])
			return false;
	return true;
}

int h5_ow_put_zeros(h5_overwriter *w, uint64_t off, uint64_t len,
		    int (*put)(h5_overwriter *w, uint64_t off, const uint8_t *p, size_t len))
{
	static const uint8_t zeros[65536];
	int rc = 0;

	for (uint64_t a = off; rc == 0 && a < off + len; a += sizeof(zeros))
		rc = put(w, a, zeros, (size_t)(off + len - a < sizeof(zeros) ? off + len - a : sizeof(zeros)));
	return rc;
}

/* Set the header's modification time; the chunk holding `keep` (if any)
 * is left to the caller to write last. */
int h5_ow_touch_header(h5_ohdr_edit *e, h5_file *f, size_t keep)
{
	int rc = h5_ohdr_touch(e, (uint32_t)time(NULL));

	for (size_t c = 0; rc == 0 && c < e->oh->nchunks; c++)
		if (c != keep)
			rc = h5_ohdr_write_chunk(f, e, c);
	return rc;
}

int h5_ow_edit_begin(h5_ohdr_edit *e, const h5_msg **lay, h5_file *f, uint64_t addr)
{
	int rc = h5_ohdr_load(&e->oh, f, addr);

	if (rc < 0)
		return rc;
	*lay = h5_ohdr_find(e->oh, H5_MSG_LAYOUT);
	if (!*lay || ((*lay)->flags & H5_MSG_FLAG_SHARED))
		return h5_err_set(H5_ERR_UNSUPPORTED, "object header 0x%llx: no layout message of its own",
				  (unsigned long long)addr);
	return h5_ohdr_edit_ranges(e);
}

void h5_ow_edit_end(h5_ohdr_edit *e, h5_file *f, uint64_t addr)
{
	h5_cache_invalidate(f->meta, H5_CK_OHDR, addr);
	if (e->oh)
		h5_ohdr_free(e->oh);
	free(e->lo);
	free(e->hi);
}

static int by_off(const void *a, const void *b)
{
	uint64_t x = ((const h5_ow_ext *)a)->off, y = ((const h5_ow_ext *)b)->off;

	return x < y ? -1 : x > y;
}

void h5_ow_free(h5_ow_ext *r, size_t m)
{
	for (size_t i = 0; r && i < m; i++)
		free(r[i].p);
	free(r);
}

int h5_ow_merge(h5_ow_ext **out, size_t *m, const h5_ow_ext *ext, size_t n)
{
	h5_ow_ext *s = malloc(n * sizeof(*s)), *r = calloc(n, sizeof(*r));
	size_t k = 0;
	int rc = 0;

	*out = r;
	*m = 0;
	if (!s || !r) {
		free(s);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	if (n == 0) {
		free(s);
		return 0;       /* nothing written (ext may be NULL) */
	}
	memcpy(s, ext, n * sizeof(*s));
	qsort(s, n, sizeof(*s), by_off);
	for (size_t i = 0; i < n; i++) {
		if (k && s[i].off <= r[k - 1].off + r[k - 1].len) {
			uint64_t e = s[i].off + s[i].len;

			if (e > r[k - 1].off + r[k - 1].len)
				r[k - 1].len = (size_t)(e - r[k - 1].off);
		} else {
			r[k].off = s[i].off;
			r[k++].len = s[i].len;
		}
	}
	for (size_t j = 0; j < k && rc == 0; j++)
		if (!(r[j].p = malloc(r[j].len ? r[j].len : 1)))
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	/* the extents in the order they were written: later ones win */
	for (size_t i = 0; i < n && rc == 0; i++) {
		size_t lo = 0, hi = k;

		while (hi - lo > 1) {
			size_t mid = (lo + hi) / 2;

			if (r[mid].off <= ext[i].off)
				lo = mid;
			else
				hi = mid;
		}
		memcpy(r[lo].p + (ext[i].off - r[lo].off), ext[i].p, ext[i].len);
	}
	*m = k;
	free(s);
	return rc;
}
