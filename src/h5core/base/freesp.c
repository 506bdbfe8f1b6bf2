/*
 * freesp.c - the free extents of a file (freesp.h).
 *
 * libhdf5 keeps free space in managers by size class (spec III.H) and
 * merges a freed block with its neighbours and with the end of allocation
 * (H5MF_xfree, H5MF__sect_simple_can_shrink); this list does the same for
 * one mount session: a sorted array (a session frees at most a few
 * thousand extents between merges), searched in full for the best fit.
 */
#include "freesp.h"

size_t h5_freesp_lower(const h5_freesp *s, uint64_t addr)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void remove_at(h5_freesp *s, size_t i)
{
	if (s->v[i].ticket)
		s->pending -= s->v[i].len;
	else
		s->released -= s->v[i].len;
	memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(*s->v));
	s->n--;
}

/* Full: the smallest released extent is forgotten (its bytes leak, as
 * they did before any reuse). false: none released, nothing forgotten. */
static bool forget_one(h5_freesp *s)
{
	size_t best = SIZE_MAX;

	if (!s->released)
		return false;   /* (every extent pending: none to look for) */
	for (size_t i = 0; i < s->n; i++)
		if (!s->v[i].ticket && (best == SIZE_MAX || s->v[i].len < s->v[best].len))
			best = i;
	if (best == SIZE_MAX)
		return false;
	remove_at(s, best);
	return true;
}

int h5_freesp_add(h5_freesp *s, uint64_t addr, uint64_t len, uint64_t ticket)
{
	uint64_t end;
	size_t i;

	if (len == 0)
		return 0;
	if (h5_add_overflow(addr, len, &end) || !h5_addr_defined(addr))
		return h5_err_set(H5_ERR_INVAL, "free extent out of range");
	i = h5_freesp_lower(s, addr);
	if ((i < s->n && s->v[i].addr < end) || (i > 0 && s->v[i - 1].addr + s->v[i - 1].len > addr))
		return h5_err_set(H5_ERR_INVAL, "space [0x%llx, +%llu) freed twice", (unsigned long long)addr,
				  (unsigned long long)len);
	/* a removed dataset's chunks, one after another, are one extent:
	 * 100 MB of 1 KiB chunks would be 100,000, past H5_FREESP_MAX, and
	 * those past it leaked (a truncate(2) up then rm left FILE 100 MB) */
	/* released space always merges with its released neighbours (the
	 * list holds no two adjacent released extents: h5_freesp_release), so
	 * with its two neighbours here, not by a pass over the list (a
	 * truncate freeing 200,000 chunks was quadratic) */
	if (s->merge || ticket == 0) {
		bool left = i > 0 && s->v[i - 1].ticket == ticket && s->v[i - 1].addr + s->v[i - 1].len == addr;
		bool right = i < s->n && s->v[i].ticket == ticket && s->v[i].addr == end;

		if (left || right) {
			if (ticket)
				s->pending += len;
			else
				s->released += len;
			if (left && right) {
				s->v[i - 1].len += len + s->v[i].len;
				memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(*s->v));
				s->n--;
			} else if (left) {
				s->v[i - 1].len += len;
			} else {
				s->v[i].addr = addr;
				s->v[i].len += len;
			}
			return 0;
		}
	}
	if (s->n == H5_FREESP_MAX) {
		if (!forget_one(s))
			return 0;       /* leaked */
		i = h5_freesp_lower(s, addr);
	}
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 16;
		h5_free_ext *nv = realloc(s->v, ncap * sizeof(*nv));

		if (!nv)
			return h5_err_set(H5_ERR_NOMEM, "out of memory for the free-space list");
		s->v = nv;
		s->cap = ncap;
	}
	memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof(*s->v));
	s->v[i] = (h5_free_ext){ addr, len, ticket };
	s->n++;
	if (ticket && ticket < s->tlow)
		s->tlow = ticket;
	if (ticket)
		s->pending += len;
	else
		s->released += len;
	return 0;
}

void h5_freesp_release(h5_freesp *s, uint64_t done, uint64_t *end)
{
	size_t w = 0;
	uint64_t low = UINT64_MAX;

	/* Nothing to release: the pass would change nothing, as the list
	 * holds no two adjacent released extents (h5_freesp_add merges them).
	 * Every space take of a commit called it: a pass over thousands of
	 * extents for each B-tree node a rename wrote (issue 82 item 2). */
	if (s->tlow > done)
		goto end;
	for (size_t i = 0; i < s->n; i++) {
		h5_free_ext e = s->v[i];

		if (e.ticket && e.ticket <= done) {
			s->pending -= e.len;
			s->released += e.len;
			e.ticket = 0;
		}
		if (e.ticket && e.ticket < low)
			low = e.ticket;
		/* released neighbours become one */
		if (w > 0 && !e.ticket && !s->v[w - 1].ticket && s->v[w - 1].addr + s->v[w - 1].len == e.addr) {
			s->v[w - 1].len += e.len;
			continue;
		}
		s->v[w++] = e;
	}
	s->n = w;
	s->tlow = low;
end:
	/* the last extent at the allocation end: the end drops instead */
	while (end && s->n && !s->v[s->n - 1].ticket && s->v[s->n - 1].addr + s->v[s->n - 1].len == *end) {
		*end = s->v[s->n - 1].addr;
		remove_at(s, s->n - 1);
	}
}

int h5_freesp_take(h5_freesp *s, uint64_t len, uint64_t *addr)
{
	size_t best = SIZE_MAX;

	if (len == 0)
		return 0;
	for (size_t i = 0; i < s->n; i++)
		if (!s->v[i].ticket && s->v[i].len >= len && (best == SIZE_MAX || s->v[i].len < s->v[best].len)) {
			best = i;
			if (s->low)
				break;  /* (sorted by address: the lowest that fits) */
		}
	if (best == SIZE_MAX)
		return 0;
	*addr = s->v[best].addr;
	if (s->v[best].len == len) {
		remove_at(s, best);
	} else {
		s->v[best].addr += len;
		s->v[best].len -= len;
		s->released -= len;
	}
	return 1;
}

int h5_freesp_pop(h5_freesp *s, uint64_t addr, uint64_t *len)
{
	size_t i = h5_freesp_lower(s, addr);

	if (i == s->n || s->v[i].addr != addr)
		return 0;
	*len = s->v[i].len;
	remove_at(s, i);
	return 1;
}

uint64_t h5_freesp_largest(const h5_freesp *s)
{
	uint64_t m = 0;

	for (size_t i = 0; i < s->n; i++)
		if (!s->v[i].ticket && s->v[i].len > m)
			m = s->v[i].len;
	return m;
}

void h5_freesp_clear(h5_freesp *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}
