/*
 * chunk.c - chunked datasets: the chunk grid over an index, and decoded
 * chunks. chunk_walk.c reads byte windows over them, layout_chunked.c is
 * the layout's table entry.
 *
 * Indexes (spec VII "Appendix C", IV.A.2.i layout message):
 *  - v1 B-tree (III.A.1, node type 1): layout v1-v3;
 *  - single chunk, implicit (address arithmetic), fixed array (farray.c),
 *    extensible array (earray.c) and v2 B-tree (III.A.2, record types
 *    10/11): layout v4.
 * The array indexes address chunks by a linear index over the chunk grid of
 * the *maximum* dimensions (libhdf5 max_down_chunks); for the extensible
 * array the unlimited dimension is moved to the front first
 * (H5VM_swizzle_coords), so growing it appends.
 *
 * Filtered chunks are decoded once into f->chunks, keyed by chunk address
 * (the cache's load-once semantics make concurrent readers share a
 * decode); the owner check keeps a hostile file's shared chunks apart.
 */
#include "source.h"
#include "base.h"
#include "cache.h"
#include "file.h"
#include "layout.h"
#include "filter.h"
#include "chunk_rec.h"
#include "dataset.h"
#include "chunk.h"
#include "chunk_int.h"
#include "cidx.h"
#include "pool.h"

#include <pthread.h>
#include <stdio.h>

#define CHUNK_MAX_BYTES UINT32_MAX          /* libhdf5 refuses chunks of 4 GiB or more */

/* ---- opening ----------------------------------------------------------------- */

int h5_chunk_index_open(h5_chunk_index **out, h5_dataset *d)
{
	const h5_layout *l = &d->layout;
	h5_chunk_index *ci;
	uint64_t cb;
	int unlim = -1, nunlim = 0;
	int rc = 0;

	*out = NULL;
	if (l->cls != H5_LAYOUT_CHUNKED || l->ndims == 0 || l->ndims > H5_MAX_RANK || l->ndims != d->space.rank)
		return h5_err_set(H5_ERR_FORMAT, "chunked layout of rank %u for a dataspace of rank %u", l->ndims,
				  d->space.rank);
	if (!d->dtype || d->dtype->size == 0)
		return h5_err_set(H5_ERR_FORMAT, "chunked dataset with a zero-size datatype");
	ci = calloc(1, sizeof(*ci));
	if (!ci)
		return h5_err_set(H5_ERR_NOMEM, "out of memory opening chunk index");
	if (pthread_mutex_init(&ci->stream_lock, NULL) != 0) {
		free(ci);
		return h5_err_set(H5_ERR_NOMEM, "cannot create a chunk index mutex");
	}
	ci->d = d;
	ci->f = d->f;
	ci->type = l->idx_type;
	ci->rank = l->ndims;
	ci->esize = d->dtype->size;
	ci->filtered = d->pline.n > 0;
	ci->bt1_elem = l->chunk_elem_size ? l->chunk_elem_size : ci->esize;
	cb = ci->esize;
	for (unsigned i = 0; i < ci->rank; i++) {
		uint64_t dim = d->space.dims[i], max = d->space.maxdims[i], c = l->chunk[i];

		if (c == 0) {
			rc = h5_err_set(H5_ERR_FORMAT, "chunk dimension %u is 0", i);
			goto out;
		}
		if (h5_mul_overflow(cb, c, &cb) || cb > CHUNK_MAX_BYTES) {
			rc = h5_err_set(H5_ERR_FORMAT, "chunk of more than %llu bytes", (unsigned long long)CHUNK_MAX_BYTES);
			goto out;
		}
		if (max != H5_UNLIMITED && dim > max) {
			rc = h5_err_set(H5_ERR_FORMAT, "dimension %u: size %llu exceeds maximum %llu", i,
					(unsigned long long)dim, (unsigned long long)max);
			goto out;
		}
		ci->chunk[i] = c;
		ci->dims[i] = dim;
		ci->nchunks[i] = dim / c + (dim % c != 0);
		if (max == H5_UNLIMITED) {
			ci->max_chunks[i] = H5_UNLIMITED;
			unlim = (int)i;
			nunlim++;
		} else {
			ci->max_chunks[i] = max / c + (max % c != 0);
		}
	}
	ci->chunk_bytes = cb;
	ci->drop_keep = h5_chunk_stream_keep(ci);

	ci->ops = h5_cidx_ops_of(ci->type);
	if (!ci->ops) {
		rc = h5_err_set(H5_ERR_FORMAT, "unknown chunk index type %u", ci->type);
		goto out;
	}
	rc = ci->ops->open(ci, nunlim, unlim);
out:
	if (rc < 0) {
		h5_chunk_index_close(ci);
		return rc;
	}
	*out = ci;
	return 0;
}

void h5_chunk_index_close(h5_chunk_index *ci)
{
	if (!ci)
		return;
	h5_chunk_stream_forget(ci);
	if (ci->ops && ci->ops->close)
		ci->ops->close(ci);
	pthread_mutex_destroy(&ci->stream_lock);
	free(ci);
}

/* ---- lookup -------------------------------------------------------------------- */

int h5_chunk_lookup(h5_chunk_rec *out, h5_chunk_index *ci, const uint64_t *scaled)
{
	const h5_layout *l = &ci->d->layout;
	int rc = 0;

	out->addr = H5_ADDR_UNDEF;
	out->size = 0;
	out->filter_mask = 0;
	for (unsigned i = 0; i < ci->rank; i++)
		if (ci->max_chunks[i] != H5_UNLIMITED && scaled[i] >= ci->max_chunks[i])
			return h5_err_set(H5_ERR_INVAL, "chunk coordinate %llu of dimension %u is beyond %llu chunks",
					  (unsigned long long)scaled[i], i, (unsigned long long)ci->max_chunks[i]);
	if (!h5_addr_defined(l->idx_addr))
		return 0;
	rc = ci->ops->lookup(out, ci, scaled);
	if (rc < 0)
		return rc;
	if (h5_addr_defined(out->addr) && !ci->filtered)
		out->size = ci->chunk_bytes;
	return 0;
}

/* ---- allocated bytes ------------------------------------------------------------ */

int h5_chunk_allocated(uint64_t *out, h5_chunk_index *ci)
{
	*out = 0;
	if (!h5_addr_defined(ci->d->layout.idx_addr))
		return 0;
	return ci->ops->allocated(out, ci);
}

/* ---- decoded chunks (f->chunks) ------------------------------------------------- */

typedef struct chunk_data {
	uint64_t owner;         /* object header of the dataset that decoded it */
	uint64_t nbytes;
	uint8_t *data;
} chunk_data;

struct chunk_load {
	const h5_chunk_index *ci;
	const h5_chunk_rec *rec;
};

static void chunk_data_free(void *obj)
{
	chunk_data *cd = obj;

	if (cd) {
		h5_buf_free(cd->data);
		free(cd);
	}
}

static int chunk_data_load(void **obj, size_t *cost, void *ud)
{
	struct chunk_load *l = ud;
	const h5_chunk_index *ci = l->ci;
	uint8_t *buf = NULL;
	size_t len;
	chunk_data *cd;
	int rc;

	if (l->rec->size == 0 || l->rec->size > SIZE_MAX)
		return h5_err_set(H5_ERR_FORMAT, "filtered chunk at 0x%llx has size %llu",
				  (unsigned long long)l->rec->addr, (unsigned long long)l->rec->size);
	len = (size_t)l->rec->size;
	/* read whole, and no further: a remote source's byte-stream
	 * read-ahead would otherwise take two chunks read one after the other
	 * (random reads that happen to be neighbours) for a stream and follow
	 * the bytes past them, into other datasets. A stream over the chunks
	 * reads ahead through chunk_stream.c's hints instead. */
	h5_file_extent_hint(ci->f, l->rec->addr, l->rec->addr + l->rec->size);
	rc = h5_file_read_buf(&buf, ci->f, l->rec->addr, len);
	if (rc < 0)
		return rc;
	rc = h5_filter_decode(&buf, &len, &ci->d->pline, l->rec->filter_mask, (size_t)ci->chunk_bytes);
	if (rc < 0) {
		h5_buf_free(buf);
		return h5_err_wrap(rc, "chunk at 0x%llx: ", (unsigned long long)l->rec->addr);
	}
	cd = malloc(sizeof(*cd));
	if (!cd) {
		h5_buf_free(buf);
		return h5_err_set(H5_ERR_NOMEM, "out of memory caching a chunk");
	}
	cd->owner = ci->d->addr;
	cd->nbytes = len;
	cd->data = buf;
	*obj = cd;
	*cost = sizeof(*cd) + len;
	return 0;
}

/* libhdf5 stores partial edge chunks unfiltered when the layout asks for
 * it (H5D__chunk_is_partial_edge_chunk). */
bool h5_chunk_is_filtered(const h5_chunk_index *ci, const uint64_t *scaled)
{
	if (!ci->filtered)
		return false;
	/* scaled[i] * chunk[i] < dims[i] for chunks of the dataset */
	if (ci->d->layout.flags & H5_LAYOUT_FLAG_NO_FILTER_EDGE)
		for (unsigned i = 0; i < ci->rank; i++)
			if (ci->chunk[i] > ci->dims[i] - scaled[i] * ci->chunk[i])
				return false;
	return true;
}

int h5_chunk_decode(h5_chunk_index *ci, const uint64_t *scaled)
{
	h5_chunk_rec rec;
	struct chunk_load l = { ci, &rec };
	h5_cache_ref ref;
	int rc;

	rc = h5_chunk_lookup(&rec, ci, scaled);
	if (rc < 0 || !h5_addr_defined(rec.addr) || !h5_chunk_is_filtered(ci, scaled))
		return rc;
	rc = h5_cache_get(&ref, ci->f->chunks, H5_CK_CHUNK, rec.addr, chunk_data_load, chunk_data_free, &l);
	if (rc == 0)
		h5_cache_release(ci->f->chunks, &ref);
	return rc;
}

/* The decoded chunk rec in the cache (decoded now if missing), held. */
int h5_chunk_get(h5_cache_ref *ref, const uint8_t **data, h5_chunk_index *ci, const h5_chunk_rec *rec)
{
	struct chunk_load l = { ci, rec };
	const chunk_data *cd;
	int rc;

	rc = h5_cache_get(ref, ci->f->chunks, H5_CK_CHUNK, rec->addr, chunk_data_load, chunk_data_free, &l);
	if (rc < 0)
		return rc;
	cd = ref->obj;
	/* Keyed by address alone: bytes decoded for another dataset (a hostile
	 * file sharing chunks) must not be read with this one's geometry. */
	if (cd->owner != ci->d->addr || cd->nbytes != ci->chunk_bytes) {
		h5_cache_release(ci->f->chunks, ref);
		return h5_err_set(H5_ERR_FORMAT, "chunk at 0x%llx is shared with another dataset",
				  (unsigned long long)rec->addr);
	}
	*data = cd->data;
	return 0;
}
