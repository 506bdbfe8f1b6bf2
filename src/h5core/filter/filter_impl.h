/* filter_impl.h - what the filter classes (filter_*.c) share with the
 * pipeline (filter.c): the class record, the size contract of a decoder
 * stage, and small helpers for parsing codec headers.
 *
 * A filter is one file with one `const h5_filter_class` and one entry in
 * filter.c's table (doc/DESIGN.md "How to add a filter").
 */
#ifndef H5_FILTER_IMPL_H
#define H5_FILTER_IMPL_H

#include "config.h"

#include "base.h"
#include "pline.h"

#include <limits.h>

#define FILTER_FLAG_OPTIONAL 0x0001

/* What one decoder must produce: exactly `size` bytes when `exact`, else at
 * most `size` bytes. */
typedef struct fstage {
	size_t size;
	bool exact;
} fstage;

/* How a filter changes the size of what it encodes; the pipeline uses it to
 * know each decoder's exact (or bounded) output size (filter.c). */
typedef enum h5_filter_size {
	H5_FSIZE_SAME,          /* shuffle: size preserved */
	H5_FSIZE_PLUS4,         /* fletcher32: 4-byte checksum appended */
	H5_FSIZE_BOUND          /* compressors: only an upper bound is known */
} h5_filter_size;

typedef struct h5_filter_class {
	uint16_t id;            /* HDF5 filter identifier (IV.A.2.l) */
	const char *name;
	h5_filter_size size;
	/* Undo the filter: *buf (*len bytes) is replaced by the decoded bytes,
	 * which must match st (exactly or at most st.size). NULL: the codec
	 * library was not compiled in. */
	int (*decode)(uint8_t **buf, size_t *len, const h5_filter *f, fstage st);
	/* A compressor's decode into out (room for st.size bytes) from in:
	 * *got bytes, checked as decode checks them. NULL: decode only. */
	int (*decode_to)(uint8_t *out, size_t *got, const uint8_t *in, size_t in_len, const h5_filter *f, fstage st);
	/* A size-preserving filter undone from src into dst (len bytes): the
	 * second half of filter.c's fused step. NULL: decode only. */
	int (*decode_copy)(uint8_t *dst, const uint8_t *src, size_t len, const h5_filter *f, fstage st);
	/* Apply the filter (appends, byte writes, new datasets); NULL:
	 * reading only. */
	int (*encode)(uint8_t **buf, size_t *len, const h5_filter *f);
	/* Whether encode can reproduce what this dataset's readers expect
	 * from these client values (NULL: always); 0 or a negative h5_err
	 * saying why not, checked when a dataset is opened for writing. */
	int (*encode_check)(const h5_filter *f);
} h5_filter_class;

extern const h5_filter_class h5_filter_deflate, h5_filter_shuffle, h5_filter_fletcher32, h5_filter_szip,
	h5_filter_nbit, h5_filter_scaleoffset, h5_filter_bzip2, h5_filter_lzf, h5_filter_blosc, h5_filter_lz4,
	h5_filter_bitshuffle, h5_filter_zstd, h5_filter_lzo, h5_filter_zfp;

#ifdef HAVE_ZSTD
/* One zstd frame into out (at most cap bytes); bitshuffle's zstd blocks too. */
int h5_filter_zstd_into(uint8_t *out, size_t cap, size_t *got, const uint8_t *in, size_t in_len, const char *what);
/* One zstd frame of in at level (as given: 0 is zstd's default) into out (cap bytes, at least h5_filter_zstd_bound(in_len)). */
int h5_filter_zstd_pack(uint8_t *out, size_t cap, size_t *got, const uint8_t *in, size_t in_len, int level,
			const char *what);
size_t h5_filter_zstd_bound(size_t n);
#endif
#ifdef HAVE_LZ4
/* One raw LZ4 block (csz bytes at offset pos of the chunk) into dst, exactly
 * n bytes; bitshuffle's LZ4 blocks. */
int h5_filter_lz4_unpack(uint8_t *dst, size_t n, const uint8_t *src, size_t csz, const char *what, size_t pos);
/* One raw LZ4 block of n bytes into dst (cap bytes): *got bytes. */
int h5_filter_lz4_pack(uint8_t *dst, size_t cap, size_t *got, const uint8_t *src, size_t n, const char *what);
#endif


static inline uint64_t be_decode(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

static inline size_t sat_add(size_t a, size_t b)
{
	size_t r;

	return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* Check a decoder's declared output size against its stage before allocating. */
static inline int stage_check(const char *what, uint64_t n, fstage st)
{
	if (n > st.size)
		return h5_err_set(H5_ERR_FORMAT,
				  "%s: decompression bomb: output of %llu bytes exceeds the %zu bytes of the chunk",
				  what, (unsigned long long)n, st.size);
	if (st.exact && n != st.size)
		return h5_err_set(H5_ERR_FORMAT, "%s: output of %llu bytes, expected %zu",
				  what, (unsigned long long)n, st.size);
	return 0;
}

/* Replace *buf by out (out_len bytes). Decoder outputs come from
 * h5_buf_alloc and the input goes back to the pool: chunk after chunk the
 * same few buffers are reused, without page faults (bufpool.c). */
static inline void swap_buf(uint8_t **buf, size_t *len, uint8_t *out, size_t out_len)
{
	h5_buf_free(*buf);
	*buf = out;
	*len = out_len;
}

/* MSB-first bit reader over a byte buffer: the packing used by the nbit and
 * scale-offset filters (a value's high bits come first in the stream). */
typedef struct bitrd {
	const uint8_t *p;
	size_t len;
	size_t pos;
	unsigned left;  /* bits not yet consumed in p[pos] (1..8) */
	bool bad;       /* read past the end */
} bitrd;

static inline void br_init(bitrd *b, const uint8_t *p, size_t len)
{
	b->p = p;
	b->len = len;
	b->pos = 0;
	b->left = 8;
	b->bad = false;
}

static inline uint64_t br_get(bitrd *b, unsigned n)
{
	uint64_t v = 0;

	while (n > 0) {
		unsigned take, bits;

		if (b->pos >= b->len) {
			b->bad = true;
			return 0;
		}
		take = n < b->left ? n : b->left;
		bits = ((unsigned)b->p[b->pos] >> (b->left - take)) & ((1u << take) - 1);
		v = (v << take) | bits;
		b->left -= take;
		n -= take;
		if (b->left == 0) {
			b->pos++;
			b->left = 8;
		}
	}
	return v;
}

/* MSB-first bit writer, the inverse of bitrd: the encoders of nbit and
 * scale-offset.  The caller sizes p (zeroed) for every bit it puts. */
typedef struct bitwr {
	uint8_t *p;
	size_t pos;
	unsigned left;  /* bits still free in p[pos] (1..8) */
} bitwr;

static inline void bw_init(bitwr *b, uint8_t *p)
{
	b->p = p;
	b->pos = 0;
	b->left = 8;
}

/* The low n bits of v (n <= 64), high bits first. */
static inline void bw_put(bitwr *b, uint64_t v, unsigned n)
{
	while (n > 0) {
		unsigned take = n < b->left ? n : b->left;
		unsigned bits = (unsigned)(v >> (n - take)) & ((1u << take) - 1);

		b->p[b->pos] |= (uint8_t)(bits << (b->left - take));
		b->left -= take;
		n -= take;
		if (b->left == 0) {
			b->pos++;
			b->left = 8;
		}
	}
}

#endif
