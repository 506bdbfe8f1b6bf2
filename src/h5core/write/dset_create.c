/*
 * dset_create.c - a new dataset, linked into a group (h5core.h "new
 * datasets"; issue 32 item 2; doc/MODIFY.md "New datasets").
 *
 * The object header is version 1 (IV.A.1.a), as h5py writes one in a file
 * of the default format and as libhdf5 reads in a file of any format:
 * Dataspace (version 1, maximum dimensions present), Datatype (version 1,
 * constant), Fill Value (version 2, the library default, constant) and
 * Data Layout (version 3) messages, Filter Pipeline (version 1) when
 * deflated, the encoders of format/dset_enc.c, and a NIL message of room
 * for a few attributes. It is written at the
 * allocation end, then the link makes it visible: one commit through the
 * group's entry of the link-store table (link_store.h), whose stage makes
 * the header (and data written before, from `start`) durable and covered
 * by the EOF address before the one write that links it.
 */
#include "base.h"
#include "dtype.h"
#include "rd.h"
#include "file.h"
#include "ohdr.h"
#include "birthtag.h"
#include "dset_enc.h"
#include "space.h"
#include "link_store.h"
#include "loose.h"
#include "btree1_write.h"
#include "chunk_store.h"
#include "filter.h"
#include "pline.h"
#include "pool.h"

#include <errno.h>

#define ROOM 128                /* NIL bytes for attributes (setfattr) */
/* A chunked writer's slab: rows of chunks filled before they are filtered,
 * at least this many bytes (one request's: np.save's 64 KiB chunks are
 * then filtered 16 at a time on the pool's threads, bench/README.md). */
#define SLAB_MIN_BYTES ((uint64_t)1 << 20)
#define BATCH 16                /* chunks filtered together, at most */
#define THREAD_MIN_BYTES ((uint64_t)256 << 10)  /* less: not worth waking a helper */
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

/* The filters -o compress= takes for new data, their level range (0..max,
 * 0 the default) and default. Lossy (zfp) or type-bound ones (n-bit,
 * scale-offset, szip's pixel parameters) are kept for datasets their
 * writers made. */
static const struct new_filter {
	uint16_t id;
	const char *name;
	unsigned max, def;
} new_filters[] = {
	{ H5_FILTER_ZSTD, "zstd", 22, 3 },       /* level 0: the default */        /* hdf5plugin.Zstd: (clevel,) */
	{ H5_FILTER_LZ4, "lz4", 0, 0 },           /* hdf5plugin.LZ4: (nbytes 0,) */
	{ H5_FILTER_BZIP2, "bzip2", 9, 9 },       /* hdf5plugin.BZip2: (blocksize,) */
	{ H5_FILTER_LZF, "lzf", 0, 0 },           /* h5py: (4, 0x105, chunk bytes) */
	{ H5_FILTER_BLOSC, "blosc", 9, 5 },       /* blosc_filter.c set_local, lz4 + shuffle */
	{ H5_FILTER_BITSHUFFLE, "bitshuffle", 0, 0 }, /* bshuf set_local, LZ4 */
};

static const struct new_filter *new_filter(uint16_t id)
{
	for (size_t i = 0; i < sizeof(new_filters) / sizeof(new_filters[0]); i++)
		if (new_filters[i].id == id)
			return &new_filters[i];
	return NULL;
}

int h5_dataset_compress_parse(uint16_t *filter, unsigned *level_plus1, const char *spec)
{
	const char *colon = strchr(spec, ':');
	size_t nl = colon ? (size_t)(colon - spec) : strlen(spec);
	const struct new_filter *nf = NULL;
	unsigned long v;
	char *end;

	for (size_t i = 0; i < sizeof(new_filters) / sizeof(new_filters[0]); i++)
		if (strlen(new_filters[i].name) == nl && strncmp(spec, new_filters[i].name, nl) == 0)
			nf = &new_filters[i];
	if ((nl == 4 && strncmp(spec, "gzip", 4) == 0) || (nl == 7 && strncmp(spec, "deflate", 7) == 0)) {
		static const struct new_filter gzip = { H5_FILTER_DEFLATE, "deflate", 9, 4 };

		nf = &gzip;
	}
	if (!nf)
		return h5_err_set(H5_ERR_INVAL, "unknown filter name");
	if (nf->id != H5_FILTER_DEFLATE && !h5_filter_can_encode(nf->id))
		return h5_err_set(H5_ERR_INVAL, "filter %s not compiled in", nf->name);
	v = nf->id == H5_FILTER_DEFLATE ? nf->def : 0;
	if (colon) {
		errno = 0;
		v = strtoul(colon + 1, &end, 10);
		if (errno || end == colon + 1 || *end || v > nf->max || (nf->max == 0))
			return h5_err_set(H5_ERR_INVAL, "level of %s out of range (%s%u)", nf->name,
					  nf->max ? "at most " : "none: ", nf->max);
	}
	*filter = nf->id == H5_FILTER_DEFLATE ? 0 : nf->id;
	*level_plus1 = (unsigned)v + 1;
	return 0;
}

/* The filter pipeline message of d (deflate, or d->filter, at level
 * d->deflate - 1). */
static int dset_pline(uint8_t *out, size_t *len, size_t cap, const h5_dset_new *d)
{
	h5_enc_filters fl = { .deflate = (int)d->deflate - 1, .elem_size = d->size };
	const struct new_filter *nf;
	uint64_t cb = d->size;
	uint32_t cd[8];
	unsigned lv;

	if (!d->filter || d->filter == H5_FILTER_DEFLATE)
		return h5_enc_pline(out, len, cap, &fl);
	nf = new_filter(d->filter);
	lv = d->deflate - 1;
	if (!nf || lv > nf->max)
		return h5_err_set(H5_ERR_INVAL, "filter %u at level %u cannot make new datasets", d->filter, lv);
	if (lv == 0)
		lv = nf->def;
	for (unsigned i = 0; i < d->rank; i++)
		cb *= d->chunk[i];
	fl.deflate = -1;
	fl.codec = d->filter;
	fl.codec_name = nf->name;
	fl.codec_cd = cd;
	switch (d->filter) {
	case H5_FILTER_ZSTD:
	case H5_FILTER_BZIP2:
		cd[0] = lv;
		fl.codec_ncd = 1;
		break;
	case H5_FILTER_LZ4:
		cd[0] = 0;
		fl.codec_ncd = 1;
		break;
	case H5_FILTER_LZF:
		cd[0] = 4;
		cd[1] = 0x105;
		cd[2] = (uint32_t)(cb > UINT32_MAX ? 0 : cb);
		fl.codec_ncd = 3;
		break;
	case H5_FILTER_BLOSC:
		/* filter and format versions, type size, chunk bytes, level,
		 * byte shuffle, codec lz4 (1) */
		cd[0] = 2;
		cd[1] = 2;
		cd[2] = d->size;
		cd[3] = (uint32_t)(cb > UINT32_MAX ? 0 : cb);
		cd[4] = lv;
		cd[5] = 1;
		cd[6] = 1;
		fl.codec_ncd = 7;
		break;
	default:        /* bitshuffle 0.3, element size, default blocks, LZ4 */
		cd[0] = 0;
		cd[1] = 3;
		cd[2] = d->size;
		cd[3] = 0;
		cd[4] = 2;
		fl.codec_ncd = 5;
		break;
	}
	return h5_enc_pline(out, len, cap, &fl);
}

/* a datatype message's most: a v1 header message is at most 64 KiB with
 * the dataset's other messages */
#define DTYPE_MAX 49152

static int new_header(uint64_t *addr, h5_file *f, const h5_dset_new *d)
{
	const h5_fmt *fmt = &f->fmt;
	uint8_t sp[16 + 2 * 8 * H5_MAX_RANK], fv[16], lay[32 + 4 * H5_MAX_RANK], pl[64], tag[H5_BIRTHTAG_LEN];
	uint8_t *ty = malloc(DTYPE_MAX);
	size_t lsp, lty, lfv, llay, lpl = 0, msgs, p = 16;
	unsigned nmsgs = 6;     /* with the birth tag and the free NIL */
	uint64_t maxdims[H5_MAX_RANK];
	uint8_t *b = NULL;
	int rc;

	for (unsigned i = 0; i < d->rank; i++)
		maxdims[i] = d->chunked && i == 0 && d->growable ? H5_UNLIMITED : d->dims[i];
	rc = ty ? h5_enc_dspace(sp, &lsp, sizeof(sp), fmt, d->rank, d->dims, maxdims)
		: h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (rc == 0 && d->vstr) {
		rc = h5_dtype_encode_vstr(ty, &lty, 1);        /* UTF-8, as h5py's string_dtype() */
		if (rc == 0 && d->size != h5_file_vlen_size(f))
			rc = h5_err_set(H5_ERR_INVAL, "variable-length elements of %u bytes", d->size);
	} else if (rc == 0 && d->descr) {
		size_t isz = 0;

		rc = h5_enc_dtype_descr(ty, &lty, DTYPE_MAX, &isz, d->descr, d->descr_len);
		if (rc == 0 && isz != d->size)
			rc = h5_err_set(H5_ERR_INVAL, "dtype of %zu bytes, %u given", isz, d->size);
	} else if (rc == 0) {
		rc = h5_enc_dtype(ty, &lty, DTYPE_MAX, d->kind, d->size, d->big_endian);
	}
	if (rc == 0)
		rc = h5_enc_fill_default(fv, &lfv, sizeof(fv), d->chunked);
	if (rc == 0)
		rc = h5_enc_layout(lay, &llay, sizeof(lay), fmt, d->rank, d->chunked ? d->chunk : NULL, d->size,
				   d->chunked && !d->indexed ? H5_ADDR_UNDEF : d->data_addr,
				   d->chunked ? 0 : d->data_size);
	if (rc == 0 && d->chunked && d->deflate)
		rc = dset_pline(pl, &lpl, sizeof(pl), d);
	if (rc < 0) {
		free(ty);
		return rc;
	}
	if (lpl)
		nmsgs++;
	msgs = 4 * 8 + h5_align8(lsp) + h5_align8(lty) + h5_align8(lfv) + h5_align8(llay) +
	       (lpl ? 8 + h5_align8(lpl) : 0) + 8 + H5_BIRTHTAG_LEN + ROOM;
	b = calloc(1, 16 + msgs);
	if (!b) {
		free(ty);
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	b[0] = 1;                       /* version */
	h5_le_encode(b + 2, nmsgs, 2);  /* messages */
	h5_le_encode(b + 4, 1, 4);      /* reference count */
	h5_le_encode(b + 8, msgs, 4);
	put_msg(b, &p, H5_MSG_DSPACE, 0, sp, lsp);
	put_msg(b, &p, H5_MSG_DTYPE, MSG_CONSTANT, ty, lty);
	put_msg(b, &p, H5_MSG_FILL, MSG_CONSTANT, fv, lfv);
	if (lpl)
		put_msg(b, &p, H5_MSG_PLINE, MSG_CONSTANT, pl, lpl);
	put_msg(b, &p, H5_MSG_LAYOUT, 0, lay, llay);
	/* the generation of its file handles, in this mount and the next
	 * (src/fuse/member/export.c) */
	h5_birthtag_encode(tag, h5_birthtag_new());
	put_msg(b, &p, H5_MSG_NIL, 0, tag, sizeof(tag));
	h5_le_encode(b + p, H5_MSG_NIL, 2);
	h5_le_encode(b + p + 2, ROOM - 8, 2);
	rc = h5_space_alloc_page(addr, f, 16 + msgs);    /* rewritten in place later: within a page */
	if (rc == 0)
		rc = h5_file_write(f, *addr, b, 16 + msgs);
	if (rc == 0)
		h5_ohdr_prime(f, *addr, b, 16 + msgs);  /* (the caller's entry reads it next) */
	free(b);
	free(ty);
	return rc;
}

int h5_numpy_descr_size(size_t *itemsize, const char *descr, size_t len)
{
	uint8_t *ty = malloc(DTYPE_MAX);
	size_t lty;
	int rc = ty ? h5_enc_dtype_descr(ty, &lty, DTYPE_MAX, itemsize, descr, len)
		    : h5_err_set(H5_ERR_NOMEM, "out of memory");

	free(ty);
	return rc;
}

/* What h5_dataset_create and h5_dataset_create_loose refuse first. */
static int create_check(uint64_t *addr, h5_file *f, const h5_dset_new *d)
{
	*addr = H5_ADDR_UNDEF;
	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	if (d->rank == 0 ? d->chunked : d->rank > H5_MAX_RANK)
		return h5_err_set(H5_ERR_INVAL, "a %s dataset of rank %u", d->chunked ? "chunked" : "contiguous", d->rank);
	return 0;
}

int h5_dataset_create(uint64_t *addr, h5_file *f, uint64_t group, const char *name, size_t name_len,
		      const h5_dset_new *d, uint64_t start)
{
	int rc = create_check(addr, f, d);

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&f->write_lock);
	if (start == UINT64_MAX)
		start = h5_space_end(f);
	rc = new_header(addr, f, d);
	if (rc == 0)
		rc = h5_link_insert_new_locked(f, group, name, name_len, *addr, start);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

int h5_dataset_create_loose(uint64_t *addr, h5_file *f, const h5_dset_new *d)
{
	uint64_t start;
	int rc = create_check(addr, f, d);

	if (rc < 0)
		return rc;
	pthread_mutex_lock(&f->write_lock);
	start = h5_space_end(f);
	rc = new_header(addr, f, d);
	if (rc == 0)
		rc = h5_loose_add(f, *addr, start);
	pthread_mutex_unlock(&f->write_lock);
	return rc;
}

void h5_dataset_loose_drop(h5_file *f, uint64_t addr)
{
	pthread_mutex_lock(&f->write_lock);
	h5_loose_drop(f, addr);
	pthread_mutex_unlock(&f->write_lock);
}

/* ---- a dataset written first, linked last ---------------------------------
 * Nothing references what the writer writes until the commit links the
 * dataset (a crash leaves the space unreachable), and the commit's stage
 * makes all of it durable first (h5_dataset_create's start).
 *
 * Contiguous: the data space is taken at once (one allocation, so
 * contiguous whatever else is written meanwhile) and filled in order.
 *
 * Chunked (-o compress: h5py's create_dataset(..., compression="gzip")):
 * the bytes arrive in C order, so the chunks of one row of chunks (chunk[0]
 * rows of the whole dataset) are complete together, when its last byte is
 * in. Such rows (the slab: one, or as many as make SLAB_MIN_BYTES) are
 * kept in memory, then cut into chunks (edge chunks padded with the fill
 * value, 0, as libhdf5 writes them), filtered BATCH at a time on the
 * context's threads (h5_pool_each: the caller and idle pool workers; the
 * filters are CPU-bound, and with 64 KiB chunks a request of 1 MiB is
 * one batch), then, in order, each written at the allocation end and its
 * record set in a v1 B-tree writer (write/btree1_write.c), whose nodes
 * the commit writes before the header. */
typedef struct dset_job {
	uint8_t *buf;           /* the chunk, then its filtered image (h5_buf_alloc'd) */
	size_t len;
	uint32_t mask;
} dset_job;

struct h5_dset_writer {
	h5_file *f;
	h5_dset_new d;
	char *descr;            /* d.descr's copy */
	uint64_t start;         /* the allocation end before the data */
	uint64_t filled;        /* bytes written, from the start, in order */
	uint64_t total;         /* the dataset's bytes */
	/* chunked */
	uint8_t *slab;          /* the rows of chunks being filled */
	uint64_t row_bytes;     /* one row of dims[0]: the product of the rest */
	uint64_t crow_bytes;    /* one row of chunks: chunk[0] rows */
	uint64_t slab_bytes, slab_at;   /* its size, and its first byte's offset */
	uint64_t nch[H5_MAX_RANK];      /* chunks along each dimension */
	uint64_t per_crow;      /* chunks in one row of chunks */
	size_t chunk_bytes;     /* one chunk's, unfiltered */
	uint64_t batch_at;      /* the batch's first chunk, in the slab */
	dset_job jobs[BATCH];
	h5_pline pl;
	h5_bt1w *bt;
	/* the allocation end this writer left (UINT64_MAX: another write
	 * allocated after it), and whether the dataset was made: a stream
	 * that stops gives its space back (h5_dset_writer_free) */
	uint64_t mark;
	bool made;
};

static int writer_open_chunked(h5_dset_writer *w)
{
	h5_dset_new *d = &w->d;
	uint8_t pl[64];
	size_t lpl;
	uint64_t cb = d->size, rows;
	int rc;

	if (d->chunk[0] == 0)
		h5_enc_guess_chunk(d->chunk, d->rank, d->dims, d->size);
	w->row_bytes = d->size;
	for (unsigned i = 1; i < d->rank; i++)
		w->row_bytes *= d->dims[i];     /* no overflow: total did not */
	for (unsigned i = 0; i < d->rank; i++)
		if (d->chunk[i] == 0 || d->chunk[i] > UINT32_MAX || h5_mul_overflow(cb, d->chunk[i], &cb))
			return h5_err_set(H5_ERR_INVAL, "chunk dimension %llu", (unsigned long long)d->chunk[i]);
	if (cb > UINT32_MAX)
		return h5_err_set(H5_ERR_INVAL, "a chunk of %llu bytes", (unsigned long long)cb);
	if (h5_mul_overflow(w->row_bytes, d->chunk[0], &w->crow_bytes) || w->crow_bytes > H5_DSET_SLAB_MAX)
		return h5_err_set(H5_ERR_LIMIT, "a row of chunks over %llu MiB",
				  (unsigned long long)(H5_DSET_SLAB_MAX >> 20));
	w->per_crow = 1;
	for (unsigned i = 0; i < d->rank; i++) {
		w->nch[i] = (d->dims[i] + d->chunk[i] - 1) / d->chunk[i];
		if (i > 0)
			w->per_crow *= w->nch[i];       /* <= the row's bytes: no overflow */
	}
	rows = w->crow_bytes < SLAB_MIN_BYTES ? (SLAB_MIN_BYTES + w->crow_bytes - 1) / w->crow_bytes : 1;
	if (rows > w->nch[0])
		rows = w->nch[0];
	w->slab_bytes = w->crow_bytes * rows;   /* < 2 * SLAB_MIN_BYTES when rows > 1 */
	w->chunk_bytes = (size_t)cb;
	w->slab = malloc((size_t)w->slab_bytes);
	if (!w->slab)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	rc = dset_pline(pl, &lpl, sizeof(pl), d);
	if (rc == 0)
		rc = h5_pline_decode(&w->pl, pl, lpl);
	if (rc == 0)
		rc = h5_bt1w_open(&w->bt, w->f, H5_ADDR_UNDEF, d->rank, d->chunk, d->size);
	return rc;
}

int h5_dset_writer_open(h5_dset_writer **out, h5_file *f, const h5_dset_new *d)
{
	h5_dset_writer *w;
	uint64_t n = d->size;
	int rc = 0;

	*out = NULL;
	if (d->rank > H5_MAX_RANK || (d->chunked && (d->rank == 0 || d->growable)))
		return h5_err_set(H5_ERR_INVAL, "a written-first dataset: rank %u%s", d->rank,
				  d->chunked ? ", chunked (rank 1 at least, not growable)" : "");
	for (unsigned i = 0; i < d->rank; i++)
		if (h5_mul_overflow(n, d->dims[i], &n))
			return h5_err_set(H5_ERR_INVAL, "a dataset of more than 2^64 bytes");
	if (d->chunked && n == 0)
		return h5_err_set(H5_ERR_INVAL, "an empty chunked dataset: nothing to write first");
	if (!h5_space_fits(f, n))
		return h5_err_set(H5_ERR_NOSPC, "%llu bytes do not fit the file's offsets", (unsigned long long)n);
	w = calloc(1, sizeof(*w));
	if (!w)
		return h5_err_set(H5_ERR_NOMEM, "out of memory");
	w->f = f;
	w->d = *d;
	w->total = n;
	if (d->descr) {
		/* the caller's text may go before the commit */
		w->d.descr = w->descr = malloc(d->descr_len ? d->descr_len : 1);
		if (!w->descr) {
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
			goto out;
		}
		memcpy(w->descr, d->descr, d->descr_len);
	}
	if (d->chunked) {
		w->d.indexed = 1;
		rc = writer_open_chunked(w);
		if (rc < 0)
			goto out;
	} else {
		w->d.data_size = n;
		w->d.data_addr = H5_ADDR_UNDEF;
	}
	pthread_mutex_lock(&f->write_lock);
	w->start = h5_space_end(f);
	if (n && !d->chunked)
		rc = h5_space_alloc(&w->d.data_addr, f, n);
	w->mark = h5_space_end(f);
	pthread_mutex_unlock(&f->write_lock);
out:
	if (rc < 0) {
		h5_dset_writer_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

/* The chunk at scaled offsets sc (sc[0]: a row of chunks of the slab) cut
 * from the slab into out (chunk_bytes): whole rows of its last dimension at a time,
 * the parts past the dataset's edge left 0. */
static void cut_chunk(uint8_t *out, const h5_dset_writer *w, const uint64_t *sc)
{
	const h5_dset_new *d = &w->d;
	uint64_t row0 = sc[0] * d->chunk[0] - w->slab_at / w->row_bytes;  /* its first row, in the slab */
	unsigned r = d->rank, last = r - 1;
	uint64_t idx[H5_MAX_RANK] = { 0 }, ext[H5_MAX_RANK];
	size_t run;

	memset(out, 0, w->chunk_bytes);
	for (unsigned i = 0; i < r; i++) {
		uint64_t o = sc[i] * d->chunk[i];

		ext[i] = d->dims[i] - o < d->chunk[i] ? d->dims[i] - o : d->chunk[i];
	}
	run = (size_t)(ext[last] * d->size);
	for (;;) {
		uint64_t src = 0, dst = 0;

		/* the element (idx..., 0) of the chunk: in the slab (rows from
		 * the slab's first) and in the chunk */
		for (unsigned i = 0; i < r; i++) {
			uint64_t at = (i == 0 ? row0 : sc[i] * d->chunk[i]) + (i == last ? 0 : idx[i]);

			src = src * (i == 0 ? 1 : d->dims[i]) + at;
			dst = dst * d->chunk[i] + (i == last ? 0 : idx[i]);
		}
		memcpy(out + dst * d->size, w->slab + src * d->size, run);
		/* the next row of the last dimension, odometer-wise */
		unsigned k = last;

		while (k > 0) {
			k--;
			if (++idx[k] < ext[k])
				break;
			idx[k] = 0;
			if (k == 0)
				return;
		}
		if (last == 0)
			return;
	}
}

/* The k-th chunk of the slab (row-major) at scaled offsets sc. */
static void slab_chunk(const h5_dset_writer *w, uint64_t k, uint64_t *sc)
{
	for (unsigned i = w->d.rank; i-- > 1;) {
		sc[i] = k % w->nch[i];
		k /= w->nch[i];
	}
	sc[0] = w->slab_at / w->crow_bytes + k;
}

/* h5_pool_each's item i: chunk batch_at + i cut and filtered into
 * jobs[i] (any thread: reads the slab, writes only its job). */
static int filter_job(void *ctx, size_t i)
{
	const h5_dset_writer *w = ctx;
	dset_job *j = &((h5_dset_writer *)ctx)->jobs[i];
	uint64_t sc[H5_MAX_RANK];

	slab_chunk(w, w->batch_at + i, sc);
	j->buf = h5_buf_alloc(w->chunk_bytes);
	if (!j->buf)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for a %zu-byte chunk", w->chunk_bytes);
	j->len = w->chunk_bytes;
	j->mask = 0;
	cut_chunk(j->buf, w, sc);
	return h5_filter_encode(&j->buf, &j->len, &j->mask, &w->pl);
}

/* The array's v1 B-tree writer as the chunk store sets records on it */
static int batch_set(void *bt, const uint64_t *scaled, uint64_t idx, const h5_chunk_rec *rec)
{
	(void)idx;
	return h5_bt1w_set(bt, scaled, rec);
}

static const h5_cidx_write_ops batch_index = { .set = batch_set };

/* The batch's n filtered chunks written at the allocation end and
 * recorded, in order (f->write_lock taken here), their buffers given
 * back; rc: the filtering's result (on an error nothing is written). */
static int write_batch(h5_dset_writer *w, size_t n, int rc)
{
	uint64_t want = 0;

	/* their disk space first, against the host's whole margin, as an
	 * append's rows are (h5_file_reserve, held by nobody: they are written
	 * at once): a full disk is ENOSPC for the write that completed them,
	 * before it is answered (issue 71 item 1) */
	for (size_t i = 0; rc == 0 && i < n; i++)
		want += w->jobs[i].len;
	if (rc == 0)
		rc = h5_file_reserve(w->f, NULL, want);
	pthread_mutex_lock(&w->f->write_lock);
	if (h5_space_end(w->f) != w->mark)
		w->mark = UINT64_MAX;
	/* through the chunk store, in one run at the end that was reserved */
	if (rc == 0) {
		h5_cstore c = { .f = w->f, .wops = &batch_index, .w = w->bt, .filtered = true, .run = true,
				.at_end = true, .locked = true };
		h5_cstore_item it[BATCH];
		uint64_t sc[BATCH][H5_MAX_RANK];

		for (size_t i = 0; i < n; i++) {
			slab_chunk(w, w->batch_at + i, sc[i]);
			it[i] = (h5_cstore_item){ .img = w->jobs[i].buf, .len = w->jobs[i].len, .mask = w->jobs[i].mask,
						  .scaled = sc[i] };
		}
		rc = h5_cstore_put(NULL, &c, it, n);
	}
	for (size_t i = 0; i < n; i++) {
		h5_buf_free(w->jobs[i].buf);
		w->jobs[i].buf = NULL;
	}
	if (w->mark != UINT64_MAX)
		w->mark = h5_space_end(w->f);
	pthread_mutex_unlock(&w->f->write_lock);
	return rc;
}

/* The slab complete (or the last, shorter one): its chunks (those of
 * rows of chunks that begin inside the dataset) filtered, written and
 * recorded, BATCH at a time. */
static int write_slab(h5_dset_writer *w)
{
	uint64_t crow = w->slab_at / w->crow_bytes, rows = w->slab_bytes / w->crow_bytes, n;
	unsigned helpers = w->f->nthreads > 1 ? w->f->nthreads - 1 : 0;
	int rc = 0;

	if (rows > w->nch[0] - crow)
		rows = w->nch[0] - crow;
	n = rows * w->per_crow;
	for (uint64_t k = 0; k < n && rc == 0; k += BATCH) {
		size_t b = n - k < BATCH ? (size_t)(n - k) : BATCH;

		w->batch_at = k;
		memset(w->jobs, 0, sizeof(w->jobs));
		rc = h5_pool_each(w->f->pool, filter_job, w, b,
				  (uint64_t)b * w->chunk_bytes < THREAD_MIN_BYTES ? 0 : helpers);
		rc = write_batch(w, b, rc);
	}
	return rc;
}

int h5_dset_writer_put(h5_dset_writer *w, uint64_t off, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	int rc = 0;

	if (off > w->filled)
		return h5_err_set(H5_ERR_INVAL, "bytes at %llu before those at %llu: written out of order",
				  (unsigned long long)off, (unsigned long long)w->filled);
	if (len > w->total || off > w->total - len)
		return h5_err_set(H5_ERR_RANGE, "%zu bytes at %llu pass the dataset's %llu", len,
				  (unsigned long long)off, (unsigned long long)w->total);
	if (len == 0)
		return 0;
	if (!w->d.chunked) {
		pthread_mutex_lock(&w->f->write_lock);
		/* the bytes' disk blocks, inside the space the header took,
		 * against the host's whole margin before the write is answered
		 * (h5_file_write's own guard allows a commit half of it): the
		 * space follows the bytes that came, a full disk is ENOSPC for
		 * the write that would cross the margin (issue 71 item 1) */
		rc = h5_file_fill(w->f, w->d.data_addr + off, len, false);
		if (rc == 0)
			rc = h5_file_write(w->f, w->d.data_addr + off, buf, len);
		pthread_mutex_unlock(&w->f->write_lock);
		if (rc == 0 && off + len > w->filled)
			w->filled = off + len;
		return rc;
	}
	if (off < w->slab_at)
		return h5_err_set(H5_ERR_INVAL, "bytes at %llu written again after their chunks were",
				  (unsigned long long)off);
	while (rc == 0 && len) {
		uint64_t in = off - w->slab_at;
		size_t k = w->slab_bytes - in < len ? (size_t)(w->slab_bytes - in) : len;

		memcpy(w->slab + in, p, k);
		p += k;
		off += k;
		len -= k;
		if (off > w->filled)
			w->filled = off;
		if (w->filled == w->slab_at + w->slab_bytes || w->filled == w->total) {
			if (w->filled - w->slab_at < w->slab_bytes)   /* the last: rows past the end 0 */
				memset(w->slab + (w->filled - w->slab_at), 0,
				       (size_t)(w->slab_bytes - (w->filled - w->slab_at)));
			rc = write_slab(w);
			w->slab_at += w->slab_bytes;
		}
	}
	return rc;
}

uint64_t h5_dset_writer_missing(const h5_dset_writer *w)
{
	return w->total - w->filled;
}

int h5_dset_writer_commit(uint64_t *addr, h5_dset_writer *w, uint64_t group, const char *name, size_t name_len)
{
	int rc = 0;

	if (w->filled != w->total)
		return h5_err_set(H5_ERR_INVAL, "%llu of %llu bytes written", (unsigned long long)w->filled,
				  (unsigned long long)w->total);
	if (w->d.chunked) {
		/* the B-tree's nodes, after the chunks, before the header */
		pthread_mutex_lock(&w->f->write_lock);
		rc = h5_bt1w_write(w->bt);
		if (rc == 0)
			rc = h5_bt1w_patch(w->bt);
		pthread_mutex_unlock(&w->f->write_lock);
		w->d.data_addr = h5_bt1w_root(w->bt);
	}
	if (rc == 0)
		rc = h5_dataset_create(addr, w->f, group, name, name_len, &w->d, w->start);
	w->made = rc == 0;
	return rc;
}

/* A stream that stopped (never made): its space - the whole dataset a
 * header declared, or the chunks written - goes back when nothing was
 * allocated after it, and FILE is cut to what is referenced, so that
 * space follows the data that arrived, never a header's promise: an
 * np.save declaring 2**40 elements and stopping leaves no 8 TiB file,
 * and the next dataset is not placed past it. Nothing points there (the
 * dataset is linked by its commit only), so the cut is safe in any order. */
static void give_back(h5_dset_writer *w)
{
	pthread_mutex_lock(&w->f->write_lock);
	if (w->mark != UINT64_MAX && h5_space_give_back(w->f, w->mark, w->start) < 0)
		h5_err_clear();    /* a longer file only costs space */
	pthread_mutex_unlock(&w->f->write_lock);
}

void h5_dset_writer_abandon(h5_dset_writer *w)
{
	if (w && w->f && !w->made && h5_file_writable(w->f)) {
		give_back(w);
		w->mark = UINT64_MAX;   /* once */
	}
}

void h5_dset_writer_free(h5_dset_writer *w)
{
	if (!w)
		return;
	h5_dset_writer_abandon(w);
	h5_bt1w_free(w->bt);
	h5_pline_clear(&w->pl);
	free(w->slab);
	free(w->descr);
	free(w);
}
