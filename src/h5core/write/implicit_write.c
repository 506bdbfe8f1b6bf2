/* implicit_write.c - appends to a dataset with the implicit index
 * (layout v4, index type 2; its reader is dataset/cidx_implicit.c): the
 * write ops of cidx_write.h. */
#include "cidx_write.h"
#include "base.h"
#include "file.h"
#include "layout.h"
#include "chunk_rec.h"
#include "dataset.h"

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

static int iw_write(void *w) { (void)w; return 0; }
static uint64_t iw_addr(void *w) { return ((implicit_w *)w)->base; }
static bool iw_addr_is_new(void *w) { (void)w; return false; }
static int iw_commit(void *w) { (void)w; return 0; }
static void iw_invalidate(void *w) { (void)w; }
static void iw_free(void *w) { free(w); }

const h5_cidx_write_ops h5_cidx_write_implicit = {
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
