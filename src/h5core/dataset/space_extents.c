/* space_extents.c - the extents the space report's walk finds
 * (space_report.h): kept in a list, then sorted and merged, so a block
 * reached twice (an object linked from two groups, a heap's header and
 * data segment allocated as one) or overlapping another is counted once. */
#include "base.h"
#include "space_report.h"

int h5_space_list_add(h5_space_list *l, uint64_t addr, uint64_t len, unsigned kind)
{
	if (len == 0)
		return 0;
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 256;
		h5_space_ext *nv = realloc(l->v, ncap * sizeof(*nv));

		if (!nv)
			return h5_err_set(H5_ERR_NOMEM, "out of memory listing %zu extents", l->n);
		l->v = nv;
		l->cap = ncap;
	}
	l->v[l->n++] = (h5_space_ext){ addr, len, kind };
	return 0;
}

void h5_space_list_free(h5_space_list *l)
{
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int ext_cmp(const void *a, const void *b)
{
	const h5_space_ext *x = a, *y = b;

	return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The end of an extent, saturated: a length from disk may be anything. */
static uint64_t ext_end(const h5_space_ext *e)
{
	return e->len > UINT64_MAX - e->addr ? UINT64_MAX : e->addr + e->len;
}

static uint64_t u64_min(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* The union of the sorted extents of one kind (kind < 0: all of them),
 * split at eoa. */
static void merge_kind(uint64_t *below, uint64_t *above, const h5_space_ext *v, size_t n, uint64_t eoa, int kind)
{
	uint64_t lo = 0, hi = 0;
	bool open = false;

	*below = *above = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && kind >= 0 && v[i].kind != (unsigned)kind)
			continue;
		if (i < n && open && v[i].addr <= hi) {
			if (ext_end(&v[i]) > hi)
				hi = ext_end(&v[i]);
			continue;
		}
		if (open) {
			/* [lo, hi) is one run: its part below eoa, and the rest */
			uint64_t cut = u64_min(hi, eoa);

			*below += cut - u64_min(lo, eoa);
			*above += hi - (lo > cut ? lo : cut);
		}
		if (i < n) {
			lo = v[i].addr;
			hi = ext_end(&v[i]);
			open = true;
		}
	}
}

void h5_space_merge(h5_space_sums *out, h5_space_ext *v, size_t n, uint64_t eoa)
{
	uint64_t above;

	memset(out, 0, sizeof(*out));
	if (n > 1)
		qsort(v, n, sizeof(*v), ext_cmp);
	merge_kind(&out->used, &out->past_eoa, v, n, eoa, -1);
	for (int k = 0; k < H5_SPACE_NKINDS; k++)
		merge_kind(&out->by_kind[k], &above, v, n, eoa, k);
}
