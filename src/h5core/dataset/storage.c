/*
 * storage.c - where a dataset's stored bytes lie, for tools that hand them
 * to other readers (h5fs-ls --refs writes them as chunk references): every
 * allocated chunk with its file offset, stored size and filter mask, walked
 * through the chunk index table (cidx.h, each index's iterate op), and the
 * contiguous, compact and fill value storage. No decoding happens here: the
 * bytes are named, not read.
 */
#include "base.h"
#include "file.h"
#include "layout.h"
#include "chunk_rec.h"
#include "dataset.h"
#include "cidx.h"

struct chunks_walk {
	h5_dataset *d;
	h5_chunk_cb cb;
	void *ud;
};

static int chunks_cb(const uint64_t *scaled, const h5_chunk_rec *rec, void *ud)
{
	struct chunks_walk *w = ud;
	const h5_chunk_index *ci = w->d->cidx;
	uint64_t offset[H5_MAX_RANK];
	h5_chunk_loc loc = { .rank = ci->rank, .offset = offset };
	h5_file *f = w->d->f;

	if (!h5_addr_defined(rec->addr))
		return 0;
	for (unsigned i = 0; i < ci->rank; i++) {
		/* a chunk left beyond the extent after a shrink holds no element */
		if (scaled[i] >= ci->nchunks[i])
			return 0;
		offset[i] = scaled[i] * ci->chunk[i];
	}
	loc.size = ci->filtered ? rec->size : ci->chunk_bytes;
	loc.filter_mask = ci->filtered ? rec->filter_mask : 0;
	if (loc.size == 0 || !h5_file_range_ok(f, rec->addr, loc.size))
		return h5_err_set(H5_ERR_FORMAT, "chunk at 0x%llx of %llu bytes lies outside the file",
				  (unsigned long long)rec->addr, (unsigned long long)loc.size);
	loc.file_off = h5_file_userblock(f) + rec->addr;
	return w->cb(&loc, w->ud);
}

int h5_dataset_chunks(h5_dataset *d, h5_chunk_cb cb, void *ud)
{
	struct chunks_walk w = { d, cb, ud };

	if (d->layout.cls != H5_LAYOUT_CHUNKED || !d->cidx)
		return h5_err_set(H5_ERR_INVAL, "dataset at 0x%llx is not chunked", (unsigned long long)d->addr);
	if (!h5_addr_defined(d->layout.idx_addr))
		return 0;
	if (!d->cidx->ops->iterate)
		return h5_err_set(H5_ERR_UNSUPPORTED, "the %s chunk index cannot be walked", d->cidx->ops->name);
	return d->cidx->ops->iterate(d->cidx, chunks_cb, &w);
}

int h5_dataset_storage(h5_storage *out, const h5_dataset *d)
{
	memset(out, 0, sizeof(*out));
	out->contig_off = UINT64_MAX;
	out->n_external = d->efl.n;
	out->is_virtual = d->layout.cls == H5_LAYOUT_VIRTUAL;
	out->has_vlen = d->has_vlen;
	out->edge_unfiltered = d->layout.cls == H5_LAYOUT_CHUNKED && (d->layout.flags & H5_LAYOUT_FLAG_NO_FILTER_EDGE);
	out->fill = d->fill_elem;
	out->fill_size = d->fill_elem ? d->dtype->size : 0;
	out->fill_defined = d->fill.defined && d->fill.value;
	switch (d->layout.cls) {
	case H5_LAYOUT_COMPACT:
		out->compact = d->layout.compact;
		out->compact_size = d->layout.compact_size;
		break;
	case H5_LAYOUT_CONTIGUOUS:
		if (d->efl.n || !h5_addr_defined(d->layout.addr))
			break;
		if (!h5_file_range_ok(d->f, d->layout.addr, d->layout.size))
			return h5_err_set(H5_ERR_FORMAT, "contiguous storage at 0x%llx of %llu bytes lies outside the file",
					  (unsigned long long)d->layout.addr, (unsigned long long)d->layout.size);
		out->contig_off = h5_file_userblock(d->f) + d->layout.addr;
		out->contig_size = d->layout.size;
		break;
	default:
		break;
	}
	return 0;
}

int h5_file_pread(h5_file *f, void *buf, size_t len, uint64_t file_off)
{
	uint64_t base = h5_file_userblock(f);

	if (file_off < base || !h5_file_range_ok(f, file_off - base, len))
		return h5_err_set(H5_ERR_INVAL, "bytes %llu+%zu are outside the file", (unsigned long long)file_off, len);
	return h5_file_read(f, file_off - base, buf, len);
}

/* ---- the blocks a writer frees ---------------------------------------------- */

struct blocks_walk {
	h5_block_cb cb;
	void *ud;
	uint64_t chunk_bytes;
};

static int block_of_chunk(const uint64_t *scaled, const h5_chunk_rec *rec, void *ud)
{
	struct blocks_walk *b = ud;

	(void)scaled;
	if (!h5_addr_defined(rec->addr))
		return 0;
	return b->cb(rec->addr, rec->size ? rec->size : b->chunk_bytes, b->ud);
}

int h5_dataset_blocks(h5_dataset *d, h5_block_cb cb, void *ud)
{
	h5_chunk_index *ci = d->cidx;
	struct blocks_walk b = { cb, ud, 0 };
	int rc = 0;

	if (d->layout.cls == H5_LAYOUT_CONTIGUOUS && !d->efl.n && h5_addr_defined(d->layout.addr))
		return h5_dataset_allocated(d) ? cb(d->layout.addr, h5_dataset_allocated(d), ud) : 0;
	if (d->layout.cls != H5_LAYOUT_CHUNKED || !ci || !h5_addr_defined(d->layout.idx_addr))
		return 0;
	b.chunk_bytes = ci->chunk_bytes;
	if (ci->ops->blocks)
		rc = ci->ops->blocks(ci, cb, ud);
	return rc < 0 ? rc : ci->ops->iterate(ci, block_of_chunk, &b);
}
