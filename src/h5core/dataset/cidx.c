/* cidx.c - the table of chunk indexes (cidx.h) and what the array
 * indexes share. */
#include "cidx.h"
#include "base.h"
#include "chunk_rec.h"
#include "dataset.h"

static const h5_cidx_ops *const table[] = {
	&h5_cidx_btree1, &h5_cidx_single, &h5_cidx_implicit, &h5_cidx_farray, &h5_cidx_earray, &h5_cidx_btree2,
};

const h5_cidx_ops *h5_cidx_ops_of(unsigned type)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i]->type == type)
			return table[i];
	return NULL;
}

/* The name comes from the index's table entry. */
const char *h5_layout_index_name(unsigned idx_type)
{
	const h5_cidx_ops *o = h5_cidx_ops_of(idx_type);

	return o ? o->name : "unknown";
}

/* The array headers must agree with the dataset: a filtered dataset stores
 * client 1 elements, and a fixed array covers every chunk of max dims. */
int h5_cidx_check_client(const h5_chunk_index *ci, unsigned client, const char *what, uint64_t addr)
{
	unsigned want = ci->filtered ? H5_ARR_CLIENT_FILT_CHUNK : H5_ARR_CLIENT_CHUNK;

	if (client != want)
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx stores %s chunks but the dataset is %s", what,
				  (unsigned long long)addr, client ? "filtered" : "unfiltered",
				  ci->filtered ? "filtered" : "unfiltered");
	return 0;
}

/* Linearisation for the array indexes (H5VM_array_offset_pre over
 * max_down_chunks; EA: swizzled so the unlimited dimension comes first). */
int h5_cidx_set_down(h5_chunk_index *ci, int unlim)
{
	unsigned r = ci->rank, k = 0;
	uint64_t acc = 1;

	if (unlim >= 0)
		ci->perm[k++] = (unsigned)unlim;
	for (unsigned i = 0; i < r; i++)
		if ((int)i != unlim)
			ci->perm[k++] = i;
	for (unsigned i = r; i-- > 0;) {
		uint64_t mc = ci->max_chunks[ci->perm[i]];

		ci->down[i] = acc;
		if (i == 0 && unlim >= 0)
			break; /* the unlimited extent only scales the first term */
		if (mc == H5_UNLIMITED || h5_mul_overflow(acc, mc, &acc))
			return h5_err_set(H5_ERR_FORMAT, "chunk grid of the maximum dimensions overflows");
	}
	ci->max_nchunks = unlim >= 0 ? UINT64_MAX : acc;
	return 0;
}

int h5_cidx_linear(uint64_t *out, const h5_chunk_index *ci, const uint64_t *scaled)
{
	uint64_t idx = 0, t;

	for (unsigned i = 0; i < ci->rank; i++)
		if (h5_mul_overflow(scaled[ci->perm[i]], ci->down[i], &t) || h5_add_overflow(idx, t, &idx))
			return h5_err_set(H5_ERR_FORMAT, "chunk index overflows");
	*out = idx;
	return 0;
}

void h5_cidx_unlinear(uint64_t *scaled, const h5_chunk_index *ci, uint64_t idx)
{
	for (unsigned i = 0; i < ci->rank; i++) {
		uint64_t dn = ci->down[i] ? ci->down[i] : 1;

		scaled[ci->perm[i]] = idx / dn;
		idx %= dn;
	}
}

struct arr_iter {
	h5_chunk_index *ci;
	h5_cidx_iter_cb cb;
	void *ud;
};

static int arr_iter_cb(uint64_t idx, const h5_chunk_rec *rec, void *ud)
{
	struct arr_iter *a = ud;
	uint64_t scaled[H5_MAX_RANK];

	h5_cidx_unlinear(scaled, a->ci, idx);
	return a->cb(scaled, rec, a->ud);
}

int h5_cidx_arr_iterate(h5_chunk_index *ci, h5_arr_iterate_fn walk, h5_cidx_iter_cb cb, void *ud)
{
	struct arr_iter a = { ci, cb, ud };

	return walk(ci->f, ci->d->layout.idx_addr, arr_iter_cb, &a);
}

static int arr_sum_cb(uint64_t idx, const h5_chunk_rec *rec, void *ud)
{
	struct alloc_sum *s = ud;

	(void)idx;
	sum_add(s, s->ci->filtered ? rec->size : s->ci->chunk_bytes);
	return 0;
}

int h5_cidx_arr_allocated(uint64_t *out, h5_chunk_index *ci, h5_arr_iterate_fn walk)
{
	struct alloc_sum s = { ci, 0 };
	int rc = walk(ci->f, ci->d->layout.idx_addr, arr_sum_cb, &s);

	*out = s.total;
	return rc;
}
