/* single_write.c - appends to a dataset of one chunk (layout v4, index
 * type 1; its reader is dataset/cidx_single.c): the write ops of
 * cidx_write.h. */
#include "cidx_write.h"
#include "base.h"
#include "rd.h"
#include "file.h"
#include "layout.h"
#include "chunk_rec.h"
#include "dataset.h"

/* ---- appends: rows grow within the one chunk ----
 * Unfiltered with a chunk: it is rewritten in place (its old rows' bytes
 * unchanged, the new ones past dims[0]). Filtered, or no chunk yet: the new
 * image goes to new space and the layout message is switched to it, size,
 * mask and address in one write. */

typedef struct single_w {
	uint64_t addr;          /* the chunk on disk (UNDEF: none) */
	bool filtered;
	h5_chunk_rec rec;       /* the new image (addr UNDEF: none yet) */
} single_w;

static int sw_open(void **out, h5_file *f, const h5_dataset *d, uint64_t idx_addr)
{
	single_w *w = calloc(1, sizeof(*w));

	(void)f;
	*out = NULL;
	if (!w)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	w->addr = idx_addr;
	w->filtered = d->pline.n != 0;
	w->rec.addr = H5_ADDR_UNDEF;
	*out = w;
	return 0;
}

static int sw_place(void *p, uint64_t idx, uint64_t *addr)
{
	single_w *w = p;

	if (idx != 0)
		return h5_err_set(H5_ERR_INVAL, "single-chunk dataset: chunk %llu", (unsigned long long)idx);
	if (w->filtered || !h5_addr_defined(w->addr))
		return 0;
	*addr = w->addr;
	return 1;
}

static int sw_set(void *p, const uint64_t *scaled, uint64_t idx, const h5_chunk_rec *rec)
{
	single_w *w = p;

	(void)scaled;
	if (idx != 0)
		return h5_err_set(H5_ERR_INVAL, "single-chunk dataset: chunk %llu", (unsigned long long)idx);
	w->rec = *rec;
	return 0;
}

static int sw_write(void *w) { (void)w; return 0; }

static uint64_t sw_addr(void *p)
{
	single_w *w = p;

	return h5_addr_defined(w->rec.addr) ? w->rec.addr : w->addr;
}

static bool sw_addr_is_new(void *p)
{
	single_w *w = p;

	return h5_addr_defined(w->rec.addr) && w->rec.addr != w->addr;
}

/* IV.A.2.i, layout v4 single chunk: filtered, the chunk's size (Size of
 * Lengths bytes) and filter mask precede the address. */
static int sw_switch_bytes(void *p, const h5_fmt *fmt, uint64_t *field, uint8_t *v, size_t *len)
{
	single_w *w = p;

	if (!w->filtered)
		return 0;
	*field -= fmt->sizeof_size + 4u;
	h5_le_encode(v, w->rec.size, fmt->sizeof_size);
	h5_le_encode(v + fmt->sizeof_size, w->rec.filter_mask, 4);
	h5_le_encode(v + fmt->sizeof_size + 4, w->rec.addr, fmt->sizeof_addr);
	*len = fmt->sizeof_size + 4u + fmt->sizeof_addr;
	return 0;
}

static int sw_commit(void *w) { (void)w; return 0; }
static void sw_invalidate(void *w) { (void)w; }
static void sw_free(void *w) { free(w); }

const h5_cidx_write_ops h5_cidx_write_single = {
	.open = sw_open,
	.set = sw_set,
	.write = sw_write,
	.addr = sw_addr,
	.addr_is_new = sw_addr_is_new,
	.addr_field = h5_layout_single_addr_field,
	.place = sw_place,
	.switch_bytes = sw_switch_bytes,
	.commit = sw_commit,
	.invalidate = sw_invalidate,
	.free = sw_free,
};
