/* cidx_implicit.c - the implicit index (layout v4, index type 2): every
 * chunk of the maximum dimensions allocated at creation, back to back
 * (libhdf5's H5Dnone.c). */
#include "cidx.h"
#include "base.h"
#include "file.h"
#include "layout.h"
#include "chunk_rec.h"
#include "dataset.h"

static int implicit_open(h5_chunk_index *ci, int nunlim, int unlim)
{
	(void)unlim;
	if (nunlim)
		return h5_err_set(H5_ERR_FORMAT, "implicit index with an unlimited dimension");
	if (ci->filtered)
		return h5_err_set(H5_ERR_FORMAT, "implicit chunk index on a filtered dataset");
	return h5_cidx_set_down(ci, -1);
}

static int implicit_lookup(h5_chunk_rec *out, h5_chunk_index *ci, const uint64_t *scaled)
{
	uint64_t idx = 0;
	int rc = h5_cidx_linear(&idx, ci, scaled);

	if (rc < 0)
		return rc;
	/* H5D__none_idx_get_addr: the chunks sit back to back */
	if (h5_mul_overflow(idx, ci->chunk_bytes, &idx) || h5_add_overflow(idx, ci->d->layout.idx_addr, &out->addr))
		return h5_err_set(H5_ERR_FORMAT, "implicit chunk address overflows");
	out->size = ci->chunk_bytes;
	return 0;
}

/* Space for every chunk of the maximum dimensions is allocated at creation
 * (H5D__none_idx_create), but libhdf5 reports (and H5Dget_storage_size /
 * h5dump show) the chunks of the current dimensions (H5D__none_idx_iterate);
 * so do we. */
static int implicit_allocated(uint64_t *out, h5_chunk_index *ci)
{
	uint64_t nc = 1;

	for (unsigned i = 0; i < ci->rank; i++)
		if (h5_mul_overflow(nc, ci->nchunks[i], &nc))
			nc = UINT64_MAX;
	*out = h5_mul_overflow(nc, ci->chunk_bytes, out) ? UINT64_MAX : *out;
	return 0;
}

/* The chunks of the current dimensions, in C order of the grid. */
static int implicit_iterate(h5_chunk_index *ci, h5_cidx_iter_cb cb, void *ud)
{
	uint64_t scaled[H5_MAX_RANK] = { 0 };
	int rc = 0;

	for (unsigned i = 0; i < ci->rank; i++)
		if (ci->nchunks[i] == 0)
			return 0;
	while (rc == 0) {
		h5_chunk_rec r = { H5_ADDR_UNDEF, 0, 0 };
		unsigned k;

		rc = implicit_lookup(&r, ci, scaled);
		if (rc == 0)
			rc = cb(scaled, &r, ud);
		for (k = ci->rank; k-- > 0;) {
			if (++scaled[k] < ci->nchunks[k])
				break;
			scaled[k] = 0;
		}
		if (k == (unsigned)-1)
			break;
	}
	return rc;
}

/* ---- appends: every chunk has its place already; nothing to index ---- */

typedef struct implicit_w {
	uint64_t base, chunk_bytes;
} implicit_w;

static int iw_open(void **out, h5_file *f, const h5_dataset *d, uint64_t idx_addr)
{
	implicit_w *w;

	(void)f;
	*out = NULL;
	if (!h5_addr_defined(idx_addr) || d->pline.n)
		return h5_err_set(H5_ERR_FORMAT, "implicit index without its chunks, or filtered");
	w = calloc(1, sizeof(*w));
	if (!w)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	w->base = idx_addr;
	w->chunk_bytes = d->chunk_bytes;
	*out = w;
	return 0;
}

/* H5D__none_idx_get_addr: chunk idx is at base + idx * chunk bytes */
static int iw_place(void *p, uint64_t idx, uint64_t *addr)
{
	implicit_w *w = p;

	if (h5_mul_overflow(idx, w->chunk_bytes, addr) || h5_add_overflow(*addr, w->base, addr))
		return h5_err_set(H5_ERR_FORMAT, "implicit chunk address overflows");
	return 1;
}

static int iw_set(void *p, const uint64_t *scaled, uint64_t idx, const h5_chunk_rec *rec)
{
	uint64_t want;
	int rc = iw_place(p, idx, &want);

	(void)scaled;
	if (rc >= 0 && rec->addr != want)
		rc = h5_err_set(H5_ERR_INVAL, "implicit index: a chunk written elsewhere than its place");
	return rc < 0 ? rc : 0;
}

static int iw_write(void *w, uint64_t *alloc_end) { (void)w; (void)alloc_end; return 0; }
static uint64_t iw_addr(void *w) { return ((implicit_w *)w)->base; }
static bool iw_addr_is_new(void *w) { (void)w; return false; }
static int iw_commit(void *w) { (void)w; return 0; }
static void iw_invalidate(void *w) { (void)w; }
static void iw_free(void *w) { free(w); }

static const h5_cidx_write_ops implicit_write_ops = {
	.open = iw_open,
	.set = iw_set,
	.write = iw_write,
	.addr = iw_addr,
	.addr_is_new = iw_addr_is_new,
	.addr_field = NULL,
	.place = iw_place,
	.commit = iw_commit,
	.invalidate = iw_invalidate,
	.free = iw_free,
};

const h5_cidx_ops h5_cidx_implicit = {
	.type = H5_CIDX_IMPLICIT,
	.name = "implicit",
	.open = implicit_open,
	.lookup = implicit_lookup,
	.allocated = implicit_allocated,
	.iterate = implicit_iterate,
	.write = &implicit_write_ops,
};
