/*
 * dset_create.c - a new dataset, linked into a group (h5core.h "new
 * datasets"; issue 32 item 2; doc/MODIFY.md "New datasets").
 *
 * The object header is version 1 (IV.A.1.a), as h5py writes one in a file
 * of the default format and as libhdf5 reads in a file of any format:
 * Dataspace (version 1, maximum dimensions present), Datatype (version 1,
 * constant), Fill Value (version 2, the library default, constant) and
 * Data Layout (version 3) messages, the encoders of format/dset_enc.c, and
 * a NIL message of room for a few attributes. It is written at the
 * allocation end, then the link makes it visible: one commit through the
 * group's entry of the link-store table (link_store.h), whose stage makes
 * the header (and data written before, from `start`) durable and covered
 * by the EOF address before the one write that links it.
 */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "ohdr.h"
#include "dset_enc.h"
#include "space.h"
#include "link_store.h"

#define ROOM 128                /* NIL bytes for attributes (setfattr) */
#define MSG_CONSTANT 0x01

/* One v1 message (type, flags, body padded to 8) at b + *p. */
static void put_msg(uint8_t *b, size_t *p, unsigned type, unsigned flags, const uint8_t *body, size_t len)
{
	h5_le_encode(b + *p, type, 2);
	h5_le_encode(b + *p + 2, h5_align8(len), 2);
	b[*p + 4] = (uint8_t)flags;
	memcpy(b + *p + 8, body, len);
	*p += 8 + h5_align8(len);
}

static int new_header(uint64_t *addr, h5_file *f, const h5_dset_new *d)
{
	const h5_fmt *fmt = &f->fmt;
	uint8_t sp[16 + 2 * 8 * H5_MAX_RANK], ty[256], fv[16], lay[32 + 4 * H5_MAX_RANK];
	size_t lsp, lty, lfv, llay, msgs, p = 16;
	uint64_t maxdims[H5_MAX_RANK];
	uint8_t *b = NULL;
	int rc;

	for (unsigned i = 0; i < d->rank; i++)
		maxdims[i] = d->chunked && i == 0 && d->growable ? H5_UNLIMITED : d->dims[i];
	rc = h5_enc_dspace(sp, &lsp, sizeof(sp), fmt, d->rank, d->dims, maxdims);
	if (rc == 0)
		rc = h5_enc_dtype(ty, &lty, sizeof(ty), d->kind, d->size, d->big_endian);
	if (rc == 0)
		rc = h5_enc_fill_default(fv, &lfv, sizeof(fv), d->chunked);
	if (rc == 0)
		rc = h5_enc_layout(lay, &llay, sizeof(lay), fmt, d->rank, d->chunked ? d->chunk : NULL, d->size,
				   d->chunked ? H5_ADDR_UNDEF : d->data_addr, d->chunked ? 0 : d->data_size);
	if (rc < 0)
		return rc;
	msgs = 4 * 8 + h5_align8(lsp) + h5_align8(lty) + h5_align8(lfv) + h5_align8(llay) + ROOM;
	b = calloc(1, 16 + msgs);
	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	b[0] = 1;                       /* version */
	h5_le_encode(b + 2, 5, 2);      /* messages */
	h5_le_encode(b + 4, 1, 4);      /* reference count */
	h5_le_encode(b + 8, msgs, 4);
	put_msg(b, &p, H5_MSG_DSPACE, 0, sp, lsp);
	put_msg(b, &p, H5_MSG_DTYPE, MSG_CONSTANT, ty, lty);
	put_msg(b, &p, H5_MSG_FILL, MSG_CONSTANT, fv, lfv);
	put_msg(b, &p, H5_MSG_LAYOUT, 0, lay, llay);
	h5_le_encode(b + p, H5_MSG_NIL, 2);
	h5_le_encode(b + p + 2, ROOM - 8, 2);
	rc = h5_space_alloc(addr, f, 16 + msgs);
	if (rc == 0)
		rc = h5_file_write(f, *addr, b, 16 + msgs);
	free(b);
	return rc;
}

int h5_dataset_create(uint64_t *addr, h5_file *f, uint64_t group, const char *name, size_t name_len,
		      const h5_dset_new *d, uint64_t start)
{
	int rc;

	*addr = H5_ADDR_UNDEF;
	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	if (d->rank == 0 ? d->chunked : d->rank > H5_MAX_RANK)
		return h5_err_set(H5_ERR_INVAL, "a %s dataset of rank %u", d->chunked ? "chunked" : "contiguous", d->rank);
	pthread_mutex_lock(&f->write_lock);
	if (start == UINT64_MAX)
		start = h5_space_end(f);
	rc = new_header(addr, f, d);
	if (rc == 0)
		rc = h5_link_insert_new_locked(f, group, name, name_len, *addr, start);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

/* ---- a contiguous dataset written first, linked last ------------------------------
 * Its data space is taken at once (one allocation, so contiguous whatever
 * else is written meanwhile), filled in order by the caller (np.save
 * through the mount), and the dataset made and linked by the commit; until
 * then nothing references the space (a crash leaves it unreachable). */
struct h5_dset_writer {
	h5_file *f;
	h5_dset_new d;
	uint64_t start;         /* the allocation end before the data */
	uint64_t filled;        /* bytes written, from the start, in order */
};

int h5_dset_writer_open(h5_dset_writer **out, h5_file *f, const h5_dset_new *d)
{
	h5_dset_writer *w;
	uint64_t n = d->size;
	int rc = 0;

	*out = NULL;
	if (d->chunked || d->rank > H5_MAX_RANK)
		return h5_err_set(H5_ERR_INVAL, "a written-first dataset is contiguous, of rank 32 at most");
	for (unsigned i = 0; i < d->rank; i++)
		if (h5_mul_overflow(n, d->dims[i], &n))
			return h5_err_set(H5_ERR_INVAL, "a dataset of more than 2^64 bytes");
	if (!h5_space_fits(f, n))
		return h5_err_set(H5_ERR_NOSPC, "%llu bytes do not fit the file's offsets", (unsigned long long)n);
	w = calloc(1, sizeof(*w));
	if (!w)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	w->f = f;
	w->d = *d;
	w->d.data_size = n;
	w->d.data_addr = H5_ADDR_UNDEF;
	pthread_mutex_lock(&f->write_lock);
	w->start = h5_space_end(f);
	if (n)
		rc = h5_space_alloc(&w->d.data_addr, f, n);
	pthread_mutex_unlock(&f->write_lock);
	if (rc < 0) {
		free(w);
		return rc;
	}
	*out = w;
	return 0;
}

int h5_dset_writer_put(h5_dset_writer *w, uint64_t off, const void *buf, size_t len)
{
	int rc;

	if (off > w->filled)
		return h5_err_set(H5_ERR_INVAL, "bytes at %llu before those at %llu: written out of order",
				  (unsigned long long)off, (unsigned long long)w->filled);
	if (len > w->d.data_size || off > w->d.data_size - len)
		return h5_err_set(H5_ERR_RANGE, "%zu bytes at %llu pass the dataset's %llu", len,
				  (unsigned long long)off, (unsigned long long)w->d.data_size);
	if (len == 0)
		return 0;
	pthread_mutex_lock(&w->f->write_lock);
	rc = h5_file_write(w->f, w->d.data_addr + off, buf, len);
	pthread_mutex_unlock(&w->f->write_lock);
	if (rc == 0 && off + len > w->filled)
		w->filled = off + len;
	return rc;
}

uint64_t h5_dset_writer_missing(const h5_dset_writer *w)
{
	return w->d.data_size - w->filled;
}

int h5_dset_writer_commit(uint64_t *addr, h5_dset_writer *w, uint64_t group, const char *name, size_t name_len)
{
	if (w->filled != w->d.data_size)
		return h5_err_set(H5_ERR_INVAL, "%llu of %llu bytes written", (unsigned long long)w->filled,
				  (unsigned long long)w->d.data_size);
	return h5_dataset_create(addr, w->f, group, name, name_len, &w->d, w->start);
}

void h5_dset_writer_free(h5_dset_writer *w)
{
	free(w);
}
