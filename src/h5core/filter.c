/* filter.c - the I/O filter pipeline (spec IV.A.2.l "Data Storage - Filter
 * Pipeline Message") applied to one chunk.
 *
 * Decoding undoes the pipeline in reverse order and skips filters whose bit
 * is set in the chunk's filter mask.  Every decoder is written against
 * hostile input: sizes come from the stream or from client data (cd) values
 * and are checked before anything is allocated, and no decoder produces more
 * than the chunk can legitimately hold.
 *
 * Optional filters (flags bit 0): "During output, if an optional filter
 * fails it will be silently skipped in the pipeline" (IV.A.2.l), and libhdf5
 * (H5Z_pipeline) then sets the chunk's mask bit and stores the chunk without
 * that filter.  So a filter whose bit is clear WAS applied, and if undoing it
 * fails on read the chunk is corrupt: libhdf5 reports "filter returned failure
 * during read" for optional filters too.  We do the same: a failing decoder
 * is always an error, whatever the optional flag says, and a filter this
 * build lacks is H5_ERR_UNSUPPORTED.  Only the encoder honours the flag.
 *
 * Sizes through the pipeline: `expect` is the size of the decoded chunk.
 * Walking the pipeline in write order we know the exact input size of each
 * filter as long as only size-preserving filters (shuffle) or fletcher32 (+4)
 * come before it; after a compressor only an upper bound is known.  Each
 * decoder gets that (size, exact) pair and must produce exactly / at most
 * that many bytes: more is cut off and reported as a decompression bomb,
 * fewer is a corrupt chunk.
 */
#include "config.h"

#include "internal.h"

#include <limits.h>
#include <math.h>
#include <zlib.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#ifdef HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif
#ifdef HAVE_ZSTD
#include <zstd.h>
#include <zstd_errors.h>
#endif
#ifdef HAVE_LZ4
#include <lz4.h>
#endif
#ifdef HAVE_BLOSC
#include <blosc.h>
#endif
#ifdef HAVE_BZ2
#include <bzlib.h>
#endif
#ifdef HAVE_AEC
#include <libaec.h>
#endif

#define FILTER_FLAG_OPTIONAL 0x0001
/* A pipeline message holds at most 32 filters (IV.A.2.l), one mask bit each. */
#define FILTER_MAX_PIPELINE 32

/* What one decoder must produce: exactly `size` bytes when `exact`, else at
 * most `size` bytes. */
typedef struct fstage {
	size_t size;
	bool exact;
} fstage;

const char *h5_filter_name(uint16_t id)
{
	switch (id) {
	case H5_FILTER_DEFLATE: return "deflate";
	case H5_FILTER_SHUFFLE: return "shuffle";
	case H5_FILTER_FLETCHER32: return "fletcher32";
	case H5_FILTER_SZIP: return "szip";
	case H5_FILTER_NBIT: return "nbit";
	case H5_FILTER_SCALEOFFSET: return "scaleoffset";
	case H5_FILTER_BZIP2: return "bzip2";
	case H5_FILTER_LZF: return "lzf";
	case H5_FILTER_BLOSC: return "blosc";
	case H5_FILTER_LZ4: return "lz4";
	case H5_FILTER_BITSHUFFLE: return "bitshuffle";
	case H5_FILTER_ZSTD: return "zstd";
	default: return "unknown";
	}
}

bool h5_filter_available(uint16_t id)
{
	switch (id) {
	case H5_FILTER_DEFLATE:
	case H5_FILTER_SHUFFLE:
	case H5_FILTER_FLETCHER32:
	case H5_FILTER_NBIT:
	case H5_FILTER_SCALEOFFSET:
	case H5_FILTER_LZF:
		return true;
	case H5_FILTER_BITSHUFFLE:
		/* plain bitshuffle is built in; its LZ4 / zstd modes need the
		 * libraries and say so when a chunk uses them */
		return true;
#ifdef HAVE_AEC
	case H5_FILTER_SZIP: return true;
#endif
#ifdef HAVE_BZ2
	case H5_FILTER_BZIP2: return true;
#endif
#ifdef HAVE_BLOSC
	case H5_FILTER_BLOSC: return true;
#endif
#ifdef HAVE_LZ4
	case H5_FILTER_LZ4: return true;
#endif
#ifdef HAVE_ZSTD
	case H5_FILTER_ZSTD: return true;
#endif
	default:
		return false;
	}
}

bool h5_filter_can_encode(uint16_t id)
{
	return id == H5_FILTER_DEFLATE || id == H5_FILTER_SHUFFLE || id == H5_FILTER_FLETCHER32;
}

/* ---- small helpers --------------------------------------------------------- */

static uint64_t be_decode(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

static size_t sat_add(size_t a, size_t b)
{
	size_t r;

	return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* Check a decoder's declared output size against its stage before allocating. */
static int stage_check(const char *what, uint64_t n, fstage st)
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

/* Replace *buf by out (out_len bytes). */
static void swap_buf(uint8_t **buf, size_t *len, uint8_t *out, size_t out_len)
{
	free(*buf);
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

static void br_init(bitrd *b, const uint8_t *p, size_t len)
{
	b->p = p;
	b->len = len;
	b->pos = 0;
	b->left = 8;
	b->bad = false;
}

static uint64_t br_get(bitrd *b, unsigned n)
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

/* ---- deflate (1) ------------------------------------------------------------ */

/* zlib inflate into at most st.size bytes (+1 byte of slack that detects a
 * stream that would go on).  Used without libdeflate and, with it, to report
 * size mismatches precisely. */
static int inflate_zlib(uint8_t **out, size_t *out_len, const uint8_t *in, size_t in_len, fstage st)
{
	z_stream zs;
	size_t cap = sat_add(st.size, 1);
	size_t in_done = 0, out_done = 0;
	uint8_t *o = NULL;
	int zrc, rc = 0;

	if (cap == SIZE_MAX)
		return h5_err_set(H5_ERR_LIMIT, "deflate: chunk too large");
	o = malloc(cap);
	if (!o)
		return h5_err_set(H5_ERR_NOMEM, "deflate: out of memory for %zu bytes", cap);
	memset(&zs, 0, sizeof(zs));
	if (inflateInit(&zs) != Z_OK) {
		free(o);
		return h5_err_set(H5_ERR_NOMEM, "deflate: inflateInit failed");
	}
	for (;;) {
		size_t in_chunk = in_len - in_done, out_chunk = cap - out_done;

		/* zlib counts in uInt: feed huge buffers in pieces */
		zs.next_in = (Bytef *)(uintptr_t)(in + in_done);
		zs.avail_in = (uInt)(in_chunk > UINT_MAX ? UINT_MAX : in_chunk);
		zs.next_out = o + out_done;
		zs.avail_out = (uInt)(out_chunk > UINT_MAX ? UINT_MAX : out_chunk);
		{
			uInt ai = zs.avail_in, ao = zs.avail_out;

			zrc = inflate(&zs, Z_NO_FLUSH);
			in_done += ai - zs.avail_in;
			out_done += ao - zs.avail_out;
		}
		if (zrc == Z_STREAM_END)
			break;
		if (out_done > st.size) {
			rc = h5_err_set(H5_ERR_FORMAT,
					"deflate: decompression bomb: output exceeds the %zu bytes of the chunk",
					st.size);
			goto out;
		}
		if (zrc == Z_OK)
			continue;
		if (zrc == Z_BUF_ERROR && in_done == in_len) {
			rc = h5_err_set(H5_ERR_FORMAT,
					"deflate: stream truncated after %zu input bytes (%zu bytes decoded)",
					in_len, out_done);
			goto out;
		}
		if (zrc == Z_MEM_ERROR) {
			rc = h5_err_set(H5_ERR_NOMEM, "deflate: out of memory");
			goto out;
		}
		rc = h5_err_set(H5_ERR_FORMAT, "deflate: corrupt stream at input byte %zu: %s",
				in_done, zs.msg ? zs.msg : "inflate failed");
		goto out;
	}
	if (out_done > st.size) {
		rc = h5_err_set(H5_ERR_FORMAT,
				"deflate: decompression bomb: output exceeds the %zu bytes of the chunk", st.size);
		goto out;
	}
	if (st.exact && out_done != st.size) {
		rc = h5_err_set(H5_ERR_FORMAT, "deflate: stream decodes to %zu bytes, expected %zu",
				out_done, st.size);
		goto out;
	}
	*out = o;
	*out_len = out_done;
	o = NULL;
out:
	inflateEnd(&zs);
	free(o);
	return rc;
}

static int dec_deflate(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	uint8_t *out = NULL;
	size_t out_len = 0;
	int rc;

#ifdef HAVE_LIBDEFLATE
	{
		struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
		enum libdeflate_result r;
		size_t in_used = 0;

		if (!d)
			return h5_err_set(H5_ERR_NOMEM, "deflate: cannot allocate decompressor");
		out = malloc(st.size ? st.size : 1);
		if (!out) {
			libdeflate_free_decompressor(d);
			return h5_err_set(H5_ERR_NOMEM, "deflate: out of memory for %zu bytes", st.size);
		}
		/* With actual_out given libdeflate accepts a shorter output, and
		 * like zlib it stops at the end of the stream (libhdf5 ignores
		 * trailing bytes too). */
		r = libdeflate_zlib_decompress_ex(d, *buf, *len, out, st.size, &in_used, &out_len);
		libdeflate_free_decompressor(d);
		if (r == LIBDEFLATE_SUCCESS && (!st.exact || out_len == st.size)) {
			swap_buf(buf, len, out, out_len);
			return 0;
		}
		free(out);
		out = NULL;
		/* Size mismatch or damage: let zlib say precisely what is wrong. */
	}
#endif
	(void)f;
	rc = inflate_zlib(&out, &out_len, *buf, *len, st);
	if (rc < 0)
		return rc;
	swap_buf(buf, len, out, out_len);
	return 0;
}

static int enc_deflate(uint8_t **buf, size_t *len, const h5_filter *f)
{
	unsigned level = 6;
	uLongf dlen;
	uint8_t *out;
	int zrc;

	/* H5Z_filter_deflate: exactly one cd value, the level 0..9 */
	if (f->ncd >= 1)
		level = f->cd[0];
	if (level > 9)
		return h5_err_set(H5_ERR_INVAL, "deflate: invalid level %u", level);
#ifdef HAVE_LIBDEFLATE
	/* libdeflate writes the same zlib format several times faster than zlib
	 * at the same level (appends are compression-bound); level 0 (stored)
	 * stays with zlib, whose stored blocks libdeflate does not promise. */
	if (level > 0) {
		struct libdeflate_compressor *c = libdeflate_alloc_compressor((int)level);
		size_t bound, n;

		if (!c)
			return h5_err_set(H5_ERR_NOMEM, "deflate: out of memory");
		bound = libdeflate_zlib_compress_bound(c, *len);
		out = malloc(bound ? bound : 1);
		n = out ? libdeflate_zlib_compress(c, *buf, *len, out, bound) : 0;
		libdeflate_free_compressor(c);
		if (!out)
			return h5_err_set(H5_ERR_NOMEM, "deflate: out of memory");
		if (n == 0) {
			free(out);
			return h5_err_set(H5_ERR_INVAL, "deflate: libdeflate could not compress %zu bytes", *len);
		}
		swap_buf(buf, len, out, n);
		return 0;
	}
#endif
	dlen = compressBound((uLong)*len);
	out = malloc(dlen ? dlen : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "deflate: out of memory");
	zrc = compress2(out, &dlen, *buf, (uLong)*len, (int)level);
	if (zrc != Z_OK) {
		free(out);
		return h5_err_set(zrc == Z_MEM_ERROR ? H5_ERR_NOMEM : H5_ERR_INVAL, "deflate: compress2 failed (%d)", zrc);
	}
	swap_buf(buf, len, out, dlen);
	return 0;
}

/* ---- shuffle (2) ------------------------------------------------------------- */

/* H5Z_filter_shuffle: byte i of every element goes to plane i; the trailing
 * nbytes % elsize bytes are not shuffled and stay at the end.  Nothing is
 * done for 1-byte elements or fewer than 2 whole elements. */
static int shuffle_params(size_t *elsize, const h5_filter *f)
{
	if (f->ncd < 1 || f->cd[0] == 0)
		return h5_err_set(H5_ERR_FORMAT, "shuffle: invalid parameters (%zu values, element size %u)",
				  f->ncd, f->ncd ? f->cd[0] : 0);
	*elsize = f->cd[0];
	return 0;
}

/* Elements per block of the generic loops: the block's output (or input)
 * of at most SHUFFLE_BLOCK_BYTES stays in L1 while every plane is visited,
 * so each byte is touched once in cache instead of striding across the
 * whole chunk once per plane. */
#define SHUFFLE_BLOCK_BYTES 8192

/* Byte i of element j: src[i * n + j] -> dst[j * es + i], elements [j0, j1). */
static void unshuffle_generic(uint8_t *dst, const uint8_t *src, size_t n, size_t es, size_t j0, size_t j1)
{
	size_t blk = SHUFFLE_BLOCK_BYTES / es ? SHUFFLE_BLOCK_BYTES / es : 1;

	for (size_t b = j0; b < j1; b += blk) {
		size_t e = j1 - b < blk ? j1 : b + blk;

		for (size_t i = 0; i < es; i++) {
			const uint8_t *s = src + i * n;
			uint8_t *d = dst + i;

			for (size_t j = b; j < e; j++)
				d[j * es] = s[j];
		}
	}
}

#if defined(__SSE2__)
/* 16 elements per step: byte planes are interleaved with unpack
 * instructions (8 -> 16 -> 32 bit lanes), which writes whole elements in
 * order. Returns the elements done; the caller finishes the rest. */
static size_t unshuffle_sse2(uint8_t *dst, const uint8_t *src, size_t n, size_t es)
{
	size_t j = 0;

	if (es == 2) {
		for (; j + 16 <= n; j += 16) {
			__m128i a = _mm_loadu_si128((const __m128i *)(src + j));
			__m128i b = _mm_loadu_si128((const __m128i *)(src + n + j));

			_mm_storeu_si128((__m128i *)(dst + 2 * j), _mm_unpacklo_epi8(a, b));
			_mm_storeu_si128((__m128i *)(dst + 2 * j + 16), _mm_unpackhi_epi8(a, b));
		}
	} else if (es == 4) {
		for (; j + 16 <= n; j += 16) {
			__m128i a = _mm_loadu_si128((const __m128i *)(src + j));
			__m128i b = _mm_loadu_si128((const __m128i *)(src + n + j));
			__m128i c = _mm_loadu_si128((const __m128i *)(src + 2 * n + j));
			__m128i d = _mm_loadu_si128((const __m128i *)(src + 3 * n + j));
			__m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
			__m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);
			uint8_t *o = dst + 4 * j;

			_mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi16(ab0, cd0));
			_mm_storeu_si128((__m128i *)(o + 16), _mm_unpackhi_epi16(ab0, cd0));
			_mm_storeu_si128((__m128i *)(o + 32), _mm_unpacklo_epi16(ab1, cd1));
			_mm_storeu_si128((__m128i *)(o + 48), _mm_unpackhi_epi16(ab1, cd1));
		}
	} else if (es == 8) {
		for (; j + 16 <= n; j += 16) {
			__m128i p[8], q[8], r[8];
			uint8_t *o = dst + 8 * j;

			for (unsigned k = 0; k < 8; k++)
				p[k] = _mm_loadu_si128((const __m128i *)(src + k * n + j));
			/* q: planes (0,1) (2,3) (4,5) (6,7) paired byte-wise, low/high halves */
			for (unsigned k = 0; k < 4; k++) {
				q[2 * k] = _mm_unpacklo_epi8(p[2 * k], p[2 * k + 1]);
				q[2 * k + 1] = _mm_unpackhi_epi8(p[2 * k], p[2 * k + 1]);
			}
			/* r: bytes 0-3 and 4-7 of each element in 32-bit lanes */
			for (unsigned h = 0; h < 2; h++) {
				r[4 * h] = _mm_unpacklo_epi16(q[h], q[2 + h]);
				r[4 * h + 1] = _mm_unpackhi_epi16(q[h], q[2 + h]);
				r[4 * h + 2] = _mm_unpacklo_epi16(q[4 + h], q[6 + h]);
				r[4 * h + 3] = _mm_unpackhi_epi16(q[4 + h], q[6 + h]);
			}
			/* r[4h+m] (m 0,1: bytes 0-3; m 2,3: bytes 4-7) holds elements
			 * 8h + 4(m&1) .. +3; join the two halves of each element */
			for (unsigned h = 0; h < 2; h++)
				for (unsigned m = 0; m < 2; m++) {
					__m128i lo = r[4 * h + m], hi = r[4 * h + 2 + m];
					uint8_t *e = o + 8 * (8 * h + 4 * m);

					_mm_storeu_si128((__m128i *)e, _mm_unpacklo_epi32(lo, hi));
					_mm_storeu_si128((__m128i *)(e + 16), _mm_unpackhi_epi32(lo, hi));
				}
		}
	}
	return j;
}
#endif

/* Forward shuffle, blocked like unshuffle_generic. */
static void shuffle_generic(uint8_t *dst, const uint8_t *src, size_t n, size_t es)
{
	size_t blk = SHUFFLE_BLOCK_BYTES / es ? SHUFFLE_BLOCK_BYTES / es : 1;

	for (size_t b = 0; b < n; b += blk) {
		size_t e = n - b < blk ? n : b + blk;

		for (size_t i = 0; i < es; i++) {
			const uint8_t *s = src + i;
			uint8_t *d = dst + i * n;

			for (size_t j = b; j < e; j++)
				d[j] = s[j * es];
		}
	}
}

static void shuffle_run(uint8_t *dst, const uint8_t *src, size_t len, size_t es, bool reverse)
{
	size_t n = len / es, left = len % es;

	if (es <= 1 || n <= 1) {
		memcpy(dst, src, len);
		return;
	}
	if (reverse) {
		size_t done = 0;

#if defined(__SSE2__)
		done = unshuffle_sse2(dst, src, n, es);
#endif
		unshuffle_generic(dst, src, n, es, done, n);
	} else {
		shuffle_generic(dst, src, n, es);
	}
	memcpy(dst + n * es, src + n * es, left);
}

static int dec_shuffle(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	size_t es = 0;
	uint8_t *out;
	int rc;

	if ((rc = shuffle_params(&es, f)) < 0)
		return rc;
	if ((rc = stage_check("shuffle", *len, st)) < 0)
		return rc;
	if (es <= 1 || *len / es <= 1)
		return 0;
	out = malloc(*len);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "shuffle: out of memory");
	shuffle_run(out, *buf, *len, es, true);
	swap_buf(buf, len, out, *len);
	return 0;
}

static int enc_shuffle(uint8_t **buf, size_t *len, const h5_filter *f)
{
	size_t es = 0;
	uint8_t *out;
	int rc;

	if ((rc = shuffle_params(&es, f)) < 0)
		return rc;
	if (es <= 1 || *len / es <= 1)
		return 0;
	out = malloc(*len);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "shuffle: out of memory");
	shuffle_run(out, *buf, *len, es, false);
	swap_buf(buf, len, out, *len);
	return 0;
}

/* ---- fletcher32 (3) ---------------------------------------------------------- */

/* H5Z_filter_fletcher32 appends the checksum little-endian (UINT32ENCODE).
 * Files from libhdf5 <= 1.6.2 on little-endian hosts hold it with the bytes
 * of each 16-bit half swapped; libhdf5 accepts both, so do we. */
static int dec_fletcher32(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	uint32_t stored, sum, reversed;
	int rc;

	(void)f;
	if (*len < 4)
		return h5_err_set(H5_ERR_FORMAT, "fletcher32: chunk of %zu bytes has no room for the checksum", *len);
	if ((rc = stage_check("fletcher32", *len - 4, st)) < 0)
		return rc;
	stored = (uint32_t)h5_le_decode(*buf + *len - 4, 4);
	sum = h5_checksum_fletcher32(*buf, *len - 4);
	reversed = ((sum & 0x00ff00ffu) << 8) | ((sum >> 8) & 0x00ff00ffu);
	if (stored != sum && stored != reversed)
		return h5_err_set(H5_ERR_CHECKSUM, "fletcher32: chunk checksum mismatch (stored 0x%08x, computed 0x%08x)",
				  stored, sum);
	*len -= 4;
	return 0;
}

static int enc_fletcher32(uint8_t **buf, size_t *len, const h5_filter *f)
{
	uint8_t *out;

	(void)f;
	if (*len > SIZE_MAX - 4)
		return h5_err_set(H5_ERR_LIMIT, "fletcher32: chunk too large");
	out = malloc(*len + 4);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "fletcher32: out of memory");
	memcpy(out, *buf, *len);
	h5_le_encode(out + *len, h5_checksum_fletcher32(*buf, *len), 4);
	swap_buf(buf, len, out, *len + 4);
	return 0;
}

/* ---- n-bit (5) ------------------------------------------------------------------ */

/* H5Znbit.c.  cd values: [0] number of cd values, [1] "no need to compress",
 * [2] elements in the chunk, then the datatype description starting with a
 * class code at [3]:
 *   atomic (1):   size, byte order (0 LE, 1 BE), precision, bit offset
 *   array (2):    size, then the base type's description
 *   compound (3): size, nmembers, then per member: offset, description
 *   no-op (4):    size (bytes copied as they are)
 * Each element is packed MSB first, only its `precision` significant bits.
 * The walk below mirrors libhdf5's, including its parameter index handling
 * (an array of arrays/compounds rewinds the index to its base description),
 * but every cd read, size and output offset is bounds-checked. */

enum { NBIT_ATOMIC = 1, NBIT_ARRAY = 2, NBIT_COMPOUND = 3, NBIT_NOOPTYPE = 4 };

typedef struct nbit_ctx {
	const uint32_t *cd;
	size_t ncd;
	bitrd br;
	uint8_t *out;
	size_t out_len;
} nbit_ctx;

typedef struct nbit_atomic {
	uint32_t size, order, precision, offset;
} nbit_atomic;

static int nbit_parm(uint32_t *v, const nbit_ctx *c, size_t *idx)
{
	if (*idx >= c->ncd)
		return h5_err_set(H5_ERR_FORMAT, "nbit: datatype description runs past the %zu cd values", c->ncd);
	*v = c->cd[(*idx)++];
	return 0;
}

static int nbit_peek(uint32_t *v, const nbit_ctx *c, size_t idx)
{
	return nbit_parm(v, c, &idx);
}

static int nbit_atomic_check(const nbit_atomic *p)
{
	if (p->size == 0 || p->precision == 0 || p->order > 1 ||
	    (uint64_t)p->precision + p->offset > (uint64_t)p->size * 8)
		return h5_err_set(H5_ERR_FORMAT, "nbit: invalid atomic type (size %u, order %u, precision %u, offset %u)",
				  p->size, p->order, p->precision, p->offset);
	return 0;
}

static int nbit_out_check(const nbit_ctx *c, size_t off, uint64_t size)
{
	if (off > c->out_len || size > c->out_len - off)
		return h5_err_set(H5_ERR_FORMAT, "nbit: datatype description writes past the element");
	return 0;
}

/* H5Z__nbit_decompress_one_byte: byte k of the element gets dat_len bits
 * at bit dat_offset. */
static void nbit_one_byte(nbit_ctx *c, size_t off, unsigned k, unsigned begin_i, unsigned end_i,
			  const nbit_atomic *p, unsigned dtype_len)
{
	unsigned dat_len, dat_offset = 0;

	if (begin_i != end_i) {
		if (k == begin_i) {
			dat_len = 8 - (dtype_len - p->precision - p->offset) % 8;
		} else if (k == end_i) {
			dat_len = 8 - p->offset % 8;
			dat_offset = 8 - dat_len;
		} else {
			dat_len = 8;
		}
	} else {
		dat_offset = p->offset % 8;
		dat_len = p->precision;
	}
	c->out[off + k] = (uint8_t)(br_get(&c->br, dat_len) << dat_offset);
}

static int nbit_one_atomic(nbit_ctx *c, size_t off, const nbit_atomic *p)
{
	unsigned dtype_len = p->size * 8, begin_i, end_i;
	int rc;

	if ((rc = nbit_out_check(c, off, p->size)) < 0)
		return rc;
	if (p->order == 0) {
		begin_i = (p->precision + p->offset) / 8 - ((p->precision + p->offset) % 8 == 0);
		end_i = p->offset / 8;
		for (unsigned k = begin_i + 1; k-- > end_i;)
			nbit_one_byte(c, off, k, begin_i, end_i, p, dtype_len);
	} else {
		begin_i = (dtype_len - p->precision - p->offset) / 8;
		end_i = (dtype_len - p->offset) / 8 - (p->offset % 8 == 0);
		for (unsigned k = begin_i; k <= end_i; k++)
			nbit_one_byte(c, off, k, begin_i, end_i, p, dtype_len);
	}
	if (c->br.bad)
		return h5_err_set(H5_ERR_FORMAT, "nbit: packed data truncated (%zu bytes)", c->br.len);
	return 0;
}

static int nbit_one_nooptype(nbit_ctx *c, size_t off, uint32_t size)
{
	int rc;

	if ((rc = nbit_out_check(c, off, size)) < 0)
		return rc;
	for (uint32_t i = 0; i < size; i++)
		c->out[off + i] = (uint8_t)br_get(&c->br, 8);
	if (c->br.bad)
		return h5_err_set(H5_ERR_FORMAT, "nbit: packed data truncated (%zu bytes)", c->br.len);
	return 0;
}

static int nbit_read_atomic(nbit_atomic *p, const nbit_ctx *c, size_t *idx, bool have_size)
{
	int rc = 0;

	if (!have_size)
		rc = nbit_parm(&p->size, c, idx);
	if (rc == 0)
		rc = nbit_parm(&p->order, c, idx);
	if (rc == 0)
		rc = nbit_parm(&p->precision, c, idx);
	if (rc == 0)
		rc = nbit_parm(&p->offset, c, idx);
	if (rc == 0)
		rc = nbit_atomic_check(p);
	return rc;
}

static int nbit_one_compound(nbit_ctx *c, size_t off, size_t *idx, unsigned depth);

/* H5Z__nbit_decompress_one_array; *idx points at the array's size. */
static int nbit_one_array(nbit_ctx *c, size_t off, size_t *idx, unsigned depth)
{
	uint32_t total = 0, base_class = 0, base_size = 0;
	size_t begin;
	nbit_atomic p;
	int rc;

	if (depth > H5_MAX_DTYPE_DEPTH)
		return h5_err_set(H5_ERR_LIMIT, "nbit: datatype nested deeper than %d", H5_MAX_DTYPE_DEPTH);
	if ((rc = nbit_parm(&total, c, idx)) < 0 || (rc = nbit_parm(&base_class, c, idx)) < 0)
		return rc;
	if ((rc = nbit_out_check(c, off, total)) < 0)
		return rc;
	switch (base_class) {
	case NBIT_ATOMIC:
		if ((rc = nbit_read_atomic(&p, c, idx, false)) < 0)
			return rc;
		for (uint32_t i = 0; i < total / p.size; i++)
			if ((rc = nbit_one_atomic(c, off + (size_t)i * p.size, &p)) < 0)
				return rc;
		return 0;
	case NBIT_ARRAY:
	case NBIT_COMPOUND:
		if ((rc = nbit_peek(&base_size, c, *idx)) < 0)
			return rc;
		if (base_size == 0)
			return h5_err_set(H5_ERR_FORMAT, "nbit: array base type of size 0");
		begin = *idx;
		for (uint32_t i = 0; i < total / base_size; i++) {
			size_t eoff = off + (size_t)i * base_size;

			rc = base_class == NBIT_ARRAY ? nbit_one_array(c, eoff, idx, depth + 1)
						      : nbit_one_compound(c, eoff, idx, depth + 1);
			if (rc < 0)
				return rc;
			*idx = begin;
		}
		return 0;
	case NBIT_NOOPTYPE:
		(*idx)++;       /* the no-op type's own size: total is used */
		return nbit_one_nooptype(c, off, total);
	default:
		return h5_err_set(H5_ERR_FORMAT, "nbit: invalid array base class %u", base_class);
	}
}

/* H5Z__nbit_decompress_one_compound; *idx points at the compound's size. */
static int nbit_one_compound(nbit_ctx *c, size_t off, size_t *idx, unsigned depth)
{
	uint32_t size = 0, nmembers = 0, used = 0;
	int rc;

	if (depth > H5_MAX_DTYPE_DEPTH)
		return h5_err_set(H5_ERR_LIMIT, "nbit: datatype nested deeper than %d", H5_MAX_DTYPE_DEPTH);
	if ((rc = nbit_parm(&size, c, idx)) < 0 || (rc = nbit_parm(&nmembers, c, idx)) < 0)
		return rc;
	if ((rc = nbit_out_check(c, off, size)) < 0)
		return rc;
	for (uint32_t i = 0; i < nmembers; i++) {
		uint32_t moff = 0, mclass = 0, msize = 0;
		nbit_atomic p;

		if ((rc = nbit_parm(&moff, c, idx)) < 0 || (rc = nbit_parm(&mclass, c, idx)) < 0 ||
		    (rc = nbit_peek(&msize, c, *idx)) < 0)
			return rc;
		/* libhdf5 checks the member sizes add up to at most the compound;
		 * we also keep every member inside it and refuse empty members,
		 * which bounds the work by the output size. */
		if (msize == 0 || msize > size - used || moff > size || msize > size - moff)
			return h5_err_set(H5_ERR_FORMAT, "nbit: compound member %u (offset %u, size %u) outside the compound of %u bytes",
					  i, moff, msize, size);
		used += msize;
		switch (mclass) {
		case NBIT_ATOMIC:
			p.size = msize;
			(*idx)++;
			if ((rc = nbit_read_atomic(&p, c, idx, true)) < 0)
				return rc;
			rc = nbit_one_atomic(c, off + moff, &p);
			break;
		case NBIT_ARRAY:
			rc = nbit_one_array(c, off + moff, idx, depth + 1);
			break;
		case NBIT_COMPOUND:
			rc = nbit_one_compound(c, off + moff, idx, depth + 1);
			break;
		case NBIT_NOOPTYPE:
			(*idx)++;
			rc = nbit_one_nooptype(c, off + moff, msize);
			break;
		default:
			rc = h5_err_set(H5_ERR_FORMAT, "nbit: invalid compound member class %u", mclass);
			break;
		}
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int dec_nbit(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	nbit_ctx c;
	uint64_t out_size;
	uint32_t nelmts, size;
	int rc = 0;

	if (f->ncd < 3 || f->cd[0] != f->ncd)
		return h5_err_set(H5_ERR_FORMAT, "nbit: cd value count %zu does not match cd[0]", f->ncd);
	if (f->cd[1])   /* full-precision type: the chunk was stored as is */
		return stage_check("nbit", *len, st);
	if (f->ncd < 5)
		return h5_err_set(H5_ERR_FORMAT, "nbit: %zu cd values are too few", f->ncd);
	nelmts = f->cd[2];
	size = f->cd[4];
	out_size = (uint64_t)nelmts * size;
	if (size == 0)
		return h5_err_set(H5_ERR_FORMAT, "nbit: datatype size 0");
	if ((rc = stage_check("nbit", out_size, st)) < 0)
		return rc;
	memset(&c, 0, sizeof(c));
	c.cd = f->cd;
	c.ncd = f->ncd;
	if (f->cd[3] == NBIT_ATOMIC) {
		/* Every element of an atomic type stores exactly `precision` bits:
		 * refuse a stream too short for the declared element count before
		 * allocating the (possibly huge) output. */
		nbit_atomic p;
		size_t idx = 4;

		if ((rc = nbit_read_atomic(&p, &c, &idx, false)) < 0)
			return rc;
		if ((uint64_t)nelmts * p.precision > (uint64_t)*len * 8)
			return h5_err_set(H5_ERR_FORMAT, "nbit: truncated: %zu input bytes cannot hold %u elements of %u bits",
					  *len, nelmts, p.precision);
	}
	c.out_len = (size_t)out_size;
	c.out = calloc(1, c.out_len ? c.out_len : 1);
	if (!c.out)
		return h5_err_set(H5_ERR_NOMEM, "nbit: out of memory for %zu bytes", c.out_len);
	br_init(&c.br, *buf, *len);

	switch (f->cd[3]) {
	case NBIT_ATOMIC: {
		nbit_atomic p;
		size_t idx = 4;

		if ((rc = nbit_read_atomic(&p, &c, &idx, false)) < 0)
			goto out;
		for (uint32_t i = 0; i < nelmts; i++)
			if ((rc = nbit_one_atomic(&c, (size_t)i * p.size, &p)) < 0)
				goto out;
		break;
	}
	case NBIT_ARRAY:
	case NBIT_COMPOUND:
		for (uint32_t i = 0; i < nelmts; i++) {
			size_t idx = 4;

			rc = f->cd[3] == NBIT_ARRAY ? nbit_one_array(&c, (size_t)i * size, &idx, 1)
						    : nbit_one_compound(&c, (size_t)i * size, &idx, 1);
			if (rc < 0)
				goto out;
		}
		break;
	default:
		rc = h5_err_set(H5_ERR_FORMAT, "nbit: invalid datatype class %u", f->cd[3]);
		goto out;
	}
	swap_buf(buf, len, c.out, c.out_len);
	c.out = NULL;
out:
	free(c.out);
	return rc;
}

/* ---- scale-offset (6) ------------------------------------------------------------ */

/* H5Zscaleoffset.c.  20 cd values: [0] scale type (0 float D-scale, 1 float
 * E-scale (never implemented), 2 integer), [1] scale factor, [2] elements,
 * [3] class (0 int, 1 float), [4] size, [5] sign, [6] byte order (0 LE,
 * 1 BE), [7] fill value defined, [8..] the fill value, 4 bytes per cd value
 * starting with the least significant.
 * The chunk starts with a 21-byte header: minbits (4 bytes LE), the size of
 * minval (1 byte), minval (LE).  Then every element as `minbits` bits, MSB
 * first, holding value - minval (integers) or round(value * 10^D) - min
 * (floats); the all-ones code stands for the fill value when one is defined.
 * libhdf5 works on native values and byte-swaps for big-endian types; the
 * packed stream does not depend on the host, so we compute on integers and
 * store in the dataset's byte order. */

#define SO_HEADER 21

static void so_store(uint8_t *p, uint64_t v, unsigned size, bool be)
{
	for (unsigned i = 0; i < size; i++)
		p[be ? size - 1 - i : i] = (uint8_t)(v >> (8 * i));
}

static int dec_scaleoffset(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	const uint32_t *cd = f->cd;
	uint32_t scale_type, nelmts, cls, size, order, filavail, minbits;
	int32_t scale_factor;
	uint64_t out_size, minval = 0, fill, mask;
	unsigned minval_size;
	bool be;
	uint8_t *out = NULL;
	bitrd br;
	int rc = 0;

	if (f->ncd != 20)
		return h5_err_set(H5_ERR_FORMAT, "scaleoffset: %zu cd values, expected 20", f->ncd);
	scale_type = cd[0];
	scale_factor = (int32_t)cd[1];
	nelmts = cd[2];
	cls = cd[3];
	size = cd[4];
	order = cd[6];
	filavail = cd[7];
	if (order > 1)
		return h5_err_set(H5_ERR_FORMAT, "scaleoffset: invalid byte order %u", order);
	be = order == 1;
	if (cls == 1) {
		if (scale_type == 1)
			return h5_err_set(H5_ERR_UNSUPPORTED, "scaleoffset: E-scale method is not supported");
		if (scale_type != 0)
			return h5_err_set(H5_ERR_FORMAT, "scaleoffset: invalid scale type %u for floats", scale_type);
		if (size != 4 && size != 8)
			return h5_err_set(H5_ERR_FORMAT, "scaleoffset: invalid float size %u", size);
	} else if (cls == 0) {
		if (scale_type != 2)
			return h5_err_set(H5_ERR_FORMAT, "scaleoffset: invalid scale type %u for integers", scale_type);
		if (size != 1 && size != 2 && size != 4 && size != 8)
			return h5_err_set(H5_ERR_FORMAT, "scaleoffset: invalid integer size %u", size);
		if (cd[5] > 1)
			return h5_err_set(H5_ERR_FORMAT, "scaleoffset: invalid integer sign %u", cd[5]);
		if (scale_factor < 0)
			scale_factor = 0;
		if ((uint32_t)scale_factor > size * 8)
			return h5_err_set(H5_ERR_FORMAT, "scaleoffset: minimum bits %d exceed the type", scale_factor);
		/* minbits fixed at full precision: libhdf5 stored the chunk as is */
		if ((uint32_t)scale_factor == size * 8)
			return stage_check("scaleoffset", *len, st);
	} else {
		return h5_err_set(H5_ERR_FORMAT, "scaleoffset: invalid datatype class %u", cls);
	}
	out_size = (uint64_t)nelmts * size;
	if ((rc = stage_check("scaleoffset", out_size, st)) < 0)
		return rc;
	if (*len < SO_HEADER)
		return h5_err_set(H5_ERR_FORMAT, "scaleoffset: chunk of %zu bytes is shorter than its header", *len);
	minbits = (uint32_t)h5_le_decode(*buf, 4);
	minval_size = (*buf)[4] < 8 ? (*buf)[4] : 8;
	minval = h5_le_decode(*buf + 5, minval_size);
	if (minbits > size * 8)
		return h5_err_set(H5_ERR_FORMAT, "scaleoffset: minbits %u exceed the %u-bit type", minbits, size * 8);
	out = malloc(out_size ? (size_t)out_size : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "scaleoffset: out of memory");

	if (minbits == size * 8) {
		/* full precision: native values copied behind the header */
		if (*len - SO_HEADER < out_size) {
			rc = h5_err_set(H5_ERR_FORMAT, "scaleoffset: chunk truncated");
			goto out;
		}
		for (uint32_t i = 0; i < nelmts; i++)
			so_store(out + (size_t)i * size, h5_le_decode(*buf + SO_HEADER + (size_t)i * size, size), size, be);
		goto done;
	}

	fill = (uint64_t)cd[8] | (uint64_t)cd[9] << 32;
	mask = (UINT64_C(1) << minbits) - 1;   /* minbits < 64 here */
	br_init(&br, *buf + SO_HEADER, *len - SO_HEADER);
	for (uint32_t i = 0; i < nelmts; i++) {
		uint64_t v = minbits ? br_get(&br, minbits) : 0, r;

		if (br.bad) {
			rc = h5_err_set(H5_ERR_FORMAT, "scaleoffset: packed data truncated at element %u", i);
			goto out;
		}
		if (cls == 0) {
			/* postdecompress_1/_2: all-ones is the fill value, else add
			 * minval; both wrap modulo the type's width */
			r = (filavail == 1 && v == mask) ? fill : v + minval;
		} else if (size == 4) {
			/* postdecompress_3 for float: int code / 10^D + min in
			 * float arithmetic, min being the low 4 bytes of minval */
			float fmin, fval, ffill;
			uint32_t bits = (uint32_t)minval, fb = (uint32_t)fill;

			memcpy(&fmin, &bits, 4);
			memcpy(&ffill, &fb, 4);
			if (filavail == 1 && v == mask)
				fval = ffill;
			else
				fval = (float)(int32_t)v / powf(10.0f, (float)scale_factor) + fmin;
			memcpy(&bits, &fval, 4);
			r = bits;
		} else {
			double dmin, dval, dfill;

			memcpy(&dmin, &minval, 8);
			memcpy(&dfill, &fill, 8);
			if (filavail == 1 && v == mask)
				dval = dfill;
			else
				dval = (double)(int64_t)v / pow(10.0, (double)scale_factor) + dmin;
			memcpy(&r, &dval, 8);
		}
		so_store(out + (size_t)i * size, r, size, be);
	}
done:
	swap_buf(buf, len, out, (size_t)out_size);
	out = NULL;
out:
	free(out);
	return rc;
}

/* ---- szip (4) via libaec ------------------------------------------------------- */

#ifdef HAVE_AEC
/* H5Z_filter_szip stores the decoded size (4 bytes LE) then the szip stream;
 * cd (H5Zprivate.h H5Z_SZIP_PARM_*): [0] options mask, [1] pixels per block,
 * [2] bits per pixel, [3] pixels per scanline.  The szip parameters map to
 * libaec as libaec's own szip compatibility layer does (sz_compat.c
 * SZ_BufftoBuffDecompress): 32/64-bit pixels are coded as interleaved bytes,
 * and scanlines that are not a multiple of the block are padded. */
#define SZ_MSB_OPTION_MASK 16
#define SZ_NN_OPTION_MASK 32

static int dec_szip(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	struct aec_stream strm;
	uint32_t opts, bpp, ppb, pps, orig;
	size_t pixel_size, scanlines = 0, tmp_size, total_out;
	bool pad, deinterleave;
	uint8_t *out = NULL, *tmp = NULL;
	int arc, rc = 0;

	if (f->ncd < 4)
		return h5_err_set(H5_ERR_FORMAT, "szip: %zu cd values, expected 4", f->ncd);
	opts = f->cd[0];
	ppb = f->cd[1];
	bpp = f->cd[2];
	pps = f->cd[3];
	if (ppb == 0 || ppb > 32 || (ppb & 1) || pps == 0 || pps > 128 * 32 ||
	    bpp == 0 || (bpp > 32 && bpp != 64))
		return h5_err_set(H5_ERR_FORMAT, "szip: invalid parameters (bpp %u, ppb %u, pps %u)", bpp, ppb, pps);
	if (*len < 4)
		return h5_err_set(H5_ERR_FORMAT, "szip: chunk of %zu bytes has no size header", *len);
	orig = (uint32_t)h5_le_decode(*buf, 4);
	if ((rc = stage_check("szip", orig, st)) < 0)
		return rc;

	memset(&strm, 0, sizeof(strm));
	strm.block_size = ppb;
	strm.rsi = (pps + ppb - 1) / ppb;
	strm.flags = ((opts & SZ_MSB_OPTION_MASK) ? AEC_DATA_MSB : 0) |
		     ((opts & SZ_NN_OPTION_MASK) ? AEC_DATA_PREPROCESS : 0);
	strm.next_in = *buf + 4;
	strm.avail_in = *len - 4;
	pad = pps % ppb != 0;
	deinterleave = bpp == 32 || bpp == 64;
	strm.bits_per_sample = deinterleave ? 8 : bpp;
	pixel_size = strm.bits_per_sample > 16 ? 4 : strm.bits_per_sample > 8 ? 2 : 1;

	out = malloc(orig ? orig : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "szip: out of memory");
	tmp_size = orig;
	if (pad) {
		/* lines padded to whole blocks: rsi*ppb/pps < 1 + ppb/pps, so
		 * at most 32 times the chunk (ppb <= 32) */
		scanlines = (orig / pixel_size + pps - 1) / pps;
		tmp_size = (size_t)strm.rsi * ppb * pixel_size * scanlines;
	}
	if (pad || deinterleave) {
		tmp = malloc(tmp_size ? tmp_size : 1);
		if (!tmp) {
			rc = h5_err_set(H5_ERR_NOMEM, "szip: out of memory");
			goto out;
		}
		strm.next_out = tmp;
		strm.avail_out = tmp_size;
	} else {
		strm.next_out = out;
		strm.avail_out = orig;
	}
	arc = aec_buffer_decode(&strm);
	if (arc != AEC_OK) {
		rc = h5_err_set(arc == AEC_MEM_ERROR ? H5_ERR_NOMEM : H5_ERR_FORMAT,
				"szip: decoding failed (libaec error %d)", arc);
		goto out;
	}
	total_out = strm.total_out;
	if (pad) {
		size_t line = (size_t)pps * pixel_size, padded = (size_t)strm.rsi * ppb * pixel_size, i = line;

		/* remove_padding: keep the first `line` bytes of every padded line */
		for (size_t j = padded; j < total_out; j += padded) {
			memmove(tmp + i, tmp + j, total_out - j < line ? total_out - j : line);
			i += line;
		}
		total_out = scanlines * line;
		if (strm.total_out < tmp_size)
			total_out = 0;  /* short stream: reported below */
	}
	if (total_out < orig) {
		rc = h5_err_set(H5_ERR_FORMAT, "szip: stream decodes to %zu bytes, expected %u", total_out, orig);
		goto out;
	}
	if (deinterleave) {
		size_t ws = bpp / 8, n = orig / ws;

		for (size_t i = 0; i < n; i++)
			for (size_t j = 0; j < ws; j++)
				out[i * ws + j] = tmp[j * n + i];
		/* libaec leaves any bytes past whole words unset; keep them */
		if (orig % ws)
			memcpy(out + n * ws, tmp + n * ws, orig % ws);
	} else if (pad) {
		memcpy(out, tmp, orig);
	}
	swap_buf(buf, len, out, orig);
	out = NULL;
out:
	free(tmp);
	free(out);
	return rc;
}
#endif

/* ---- LZF (32000) ------------------------------------------------------------------ */

/* The h5py LZF filter stores a raw liblzf stream (when compression does not
 * pay, the optional filter fails at write time and the mask bit is set).
 * liblzf format: a control byte < 32 starts a literal run of ctrl+1 bytes;
 * otherwise len = ctrl >> 5 (7: plus the next byte) and a back reference of
 * len+2 bytes at distance ((ctrl & 31) << 8 | next byte) + 1. */
static int dec_lzf(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	const uint8_t *ip = *buf, *ie = *buf + *len;
	uint8_t *out, *op;
	size_t cap = st.size;
	int rc = 0;

	(void)f;
	out = malloc(cap ? cap : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "lzf: out of memory");
	op = out;
	while (ip < ie) {
		unsigned ctrl = *ip++;

		if (ctrl < 32) {
			size_t n = ctrl + 1;

			if (n > cap - (size_t)(op - out)) {
				rc = h5_err_set(H5_ERR_FORMAT, "lzf: decompression bomb: output exceeds the %zu bytes of the chunk", cap);
				goto out;
			}
			if (n > (size_t)(ie - ip)) {
				rc = h5_err_set(H5_ERR_FORMAT, "lzf: literal run past the end of the stream");
				goto out;
			}
			memcpy(op, ip, n);
			op += n;
			ip += n;
		} else {
			size_t n = ctrl >> 5, dist = (size_t)(ctrl & 31) << 8;

			if (ip >= ie)
				goto truncated;
			if (n == 7) {
				n += *ip++;
				if (ip >= ie)
					goto truncated;
			}
			dist += (size_t)*ip++ + 1;
			n += 2;
			if (n > cap - (size_t)(op - out)) {
				rc = h5_err_set(H5_ERR_FORMAT, "lzf: decompression bomb: output exceeds the %zu bytes of the chunk", cap);
				goto out;
			}
			if (dist > (size_t)(op - out)) {
				rc = h5_err_set(H5_ERR_FORMAT, "lzf: back reference before the start of the output");
				goto out;
			}
			/* byte by byte: the copy may overlap itself */
			for (size_t i = 0; i < n; i++, op++)
				*op = *(op - dist);
		}
	}
	if (st.exact && (size_t)(op - out) != st.size) {
		rc = h5_err_set(H5_ERR_FORMAT, "lzf: stream decodes to %zu bytes, expected %zu", (size_t)(op - out), st.size);
		goto out;
	}
	swap_buf(buf, len, out, (size_t)(op - out));
	return 0;
truncated:
	rc = h5_err_set(H5_ERR_FORMAT, "lzf: back reference truncated at the end of the stream");
out:
	free(out);
	return rc;
}

/* ---- Blosc (32001) ------------------------------------------------------------------ */

#ifdef HAVE_BLOSC
/* The Blosc HDF5 filter stores one blosc buffer; its header gives the
 * decoded size (which may differ from the chunk when other filters follow). */
static int dec_blosc(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	size_t nbytes = 0, cbytes = 0, blocksize = 0;
	uint8_t *out;
	int r, rc;

	(void)f;
	if (*len < BLOSC_MIN_HEADER_LENGTH)
		return h5_err_set(H5_ERR_FORMAT, "blosc: chunk of %zu bytes is shorter than the blosc header", *len);
	if (blosc_cbuffer_validate(*buf, *len, &nbytes) != 0)
		return h5_err_set(H5_ERR_FORMAT, "blosc: invalid blosc header");
	blosc_cbuffer_sizes(*buf, &nbytes, &cbytes, &blocksize);
	if (cbytes > *len)
		return h5_err_set(H5_ERR_FORMAT, "blosc: buffer of %zu bytes claims %zu", *len, cbytes);
	if ((rc = stage_check("blosc", nbytes, st)) < 0)
		return rc;
	if (nbytes > INT_MAX)
		return h5_err_set(H5_ERR_FORMAT, "blosc: decoded size %zu too large", nbytes);
	out = malloc(nbytes ? nbytes : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "blosc: out of memory");
	r = blosc_decompress_ctx(*buf, out, nbytes, 1);
	if (r < 0 || (size_t)r != nbytes) {
		const char *lib = blosc_cbuffer_complib(*buf);

		free(out);
		return h5_err_set(H5_ERR_FORMAT, "blosc: decompression failed (%d; codec %s)", r, lib ? lib : "unknown");
	}
	swap_buf(buf, len, out, nbytes);
	return 0;
}
#endif

/* ---- Zstandard (32015) --------------------------------------------------------------- */

#ifdef HAVE_ZSTD
static int zstd_into(uint8_t *out, size_t cap, size_t *got, const uint8_t *in, size_t in_len, const char *what)
{
	size_t r = ZSTD_decompress(out, cap, in, in_len);

	if (ZSTD_isError(r)) {
		if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
			return h5_err_set(H5_ERR_FORMAT, "%s: decompression bomb: output exceeds %zu bytes", what, cap);
		if (ZSTD_getErrorCode(r) == ZSTD_error_memory_allocation)
			return h5_err_set(H5_ERR_NOMEM, "%s: out of memory", what);
		return h5_err_set(H5_ERR_FORMAT, "%s: %s", what, ZSTD_getErrorName(r));
	}
	*got = r;
	return 0;
}

static int dec_zstd(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	unsigned long long fcs;
	uint8_t *out;
	size_t got = 0;
	int rc;

	(void)f;
	fcs = ZSTD_getFrameContentSize(*buf, *len);
	if (fcs == ZSTD_CONTENTSIZE_ERROR)
		return h5_err_set(H5_ERR_FORMAT, "zstd: not a zstd frame");
	if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && (rc = stage_check("zstd", fcs, st)) < 0)
		return rc;
	out = malloc(st.size ? st.size : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "zstd: out of memory");
	if ((rc = zstd_into(out, st.size, &got, *buf, *len, "zstd")) < 0 ||
	    (rc = stage_check("zstd", got, st)) < 0) {
		free(out);
		return rc;
	}
	swap_buf(buf, len, out, got);
	return 0;
}
#endif

/* ---- LZ4 (32004) ---------------------------------------------------------------------- */

#ifdef HAVE_LZ4
/* H5Zlz4.c framing: decoded size (8 bytes BE), block size (4 bytes BE), then
 * per block its compressed size (4 bytes BE) and the data; a block whose
 * compressed size equals its decoded size is stored raw. */
static int dec_lz4(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	const uint8_t *in = *buf;
	uint64_t orig, blk;
	size_t pos = 12, done = 0;
	uint8_t *out;
	int rc;

	(void)f;
	if (*len < 12)
		return h5_err_set(H5_ERR_FORMAT, "lz4: chunk of %zu bytes is shorter than its header", *len);
	orig = be_decode(in, 8);
	blk = be_decode(in + 8, 4);
	if ((rc = stage_check("lz4", orig, st)) < 0)
		return rc;
	if (blk > orig)
		blk = orig;
	if (orig > 0 && blk == 0)
		return h5_err_set(H5_ERR_FORMAT, "lz4: block size 0");
	if (blk > INT_MAX)
		return h5_err_set(H5_ERR_FORMAT, "lz4: block size %llu too large", (unsigned long long)blk);
	out = malloc(orig ? (size_t)orig : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "lz4: out of memory");
	while (done < orig) {
		size_t this = orig - done < blk ? (size_t)(orig - done) : (size_t)blk;
		uint64_t csz;

		if (*len - pos < 4) {
			rc = h5_err_set(H5_ERR_FORMAT, "lz4: stream truncated at block header (offset %zu)", pos);
			goto out;
		}
		csz = be_decode(in + pos, 4);
		pos += 4;
		if (csz > *len - pos) {
			rc = h5_err_set(H5_ERR_FORMAT, "lz4: block of %llu bytes at offset %zu runs past the chunk",
					(unsigned long long)csz, pos);
			goto out;
		}
		if (csz == this) {
			memcpy(out + done, in + pos, this);
		} else {
			int r = LZ4_decompress_safe((const char *)in + pos, (char *)out + done, (int)csz, (int)this);

			if (r < 0 || (size_t)r != this) {
				rc = h5_err_set(H5_ERR_FORMAT, "lz4: corrupt block at offset %zu", pos);
				goto out;
			}
		}
		pos += (size_t)csz;
		done += this;
	}
	swap_buf(buf, len, out, (size_t)orig);
	return 0;
out:
	free(out);
	return rc;
}
#endif

/* ---- bitshuffle (32008) ------------------------------------------------------------------- */

/* bitshuffle (bshuf_h5filter.c).  cd: [2] element size, [3] block size in
 * elements (0: default), [4] compression (0 none, 2 LZ4, 3 zstd).  With
 * compression the chunk starts with the decoded size (8 bytes BE) and the
 * block size in bytes (4 bytes BE), then each block as its compressed size
 * (4 bytes BE) and data.  Blocks hold a multiple of 8 elements; the last
 * size % 8 elements are stored unshuffled after the blocks. */

#define BSHUF_TARGET_BLOCK_SIZE_B 8192
#define BSHUF_MIN_RECOMMEND_BLOCK 128

static size_t bshuf_default_block(size_t es)
{
	size_t bs = BSHUF_TARGET_BLOCK_SIZE_B / es;

	bs = bs / 8 * 8;
	return bs > BSHUF_MIN_RECOMMEND_BLOCK ? bs : BSHUF_MIN_RECOMMEND_BLOCK;
}

/* Transpose an 8x8 bit matrix held as 8 bytes (row r = byte r). */
static uint64_t trans_bit_8x8(uint64_t x)
{
	uint64_t t;

	t = (x ^ (x >> 7)) & UINT64_C(0x00AA00AA00AA00AA);
	x = x ^ t ^ (t << 7);
	t = (x ^ (x >> 14)) & UINT64_C(0x0000CCCC0000CCCC);
	x = x ^ t ^ (t << 14);
	t = (x ^ (x >> 28)) & UINT64_C(0x00000000F0F0F0F0);
	x = x ^ t ^ (t << 28);
	return x;
}

/* bshuf_untrans_bit_elem for n elements (n % 8 == 0): the input holds one
 * bit plane per bit of the element (byte j bit k = plane 8j+k), each plane
 * n/8 bytes with element i at bit i%8 of byte i/8. */
static void bshuf_untrans(uint8_t *out, const uint8_t *in, size_t n, size_t es)
{
	size_t nb = n / 8;

	for (size_t j = 0; j < es; j++)
		for (size_t g = 0; g < nb; g++) {
			uint64_t x = 0;

			for (unsigned k = 0; k < 8; k++)
				x |= (uint64_t)in[(j * 8 + k) * nb + g] << (8 * k);
			x = trans_bit_8x8(x);
			for (unsigned b = 0; b < 8; b++)
				out[(g * 8 + b) * es + j] = (uint8_t)(x >> (8 * b));
		}
}

/* Decompress one bitshuffle block (comp 2 LZ4, 3 zstd) of exactly nbytes. */
static int bshuf_block(uint8_t *dst, size_t nbytes, const uint8_t *src, size_t csz, uint32_t comp, size_t pos)
{
	if (comp == 2) {
#ifdef HAVE_LZ4
		int r = csz > INT_MAX || nbytes > INT_MAX ? -1 :
			LZ4_decompress_safe((const char *)src, (char *)dst, (int)csz, (int)nbytes);

		if (r < 0 || (size_t)r != nbytes)
			return h5_err_set(H5_ERR_FORMAT, "bitshuffle: corrupt LZ4 block at offset %zu", pos);
		return 0;
#endif
	} else if (comp == 3) {
#ifdef HAVE_ZSTD
		size_t got = 0;
		int rc = zstd_into(dst, nbytes, &got, src, csz, "bitshuffle zstd");

		if (rc < 0)
			return rc;
		if (got != nbytes)
			return h5_err_set(H5_ERR_FORMAT, "bitshuffle: zstd block at offset %zu decodes to %zu bytes, expected %zu",
					  pos, got, nbytes);
		return 0;
#endif
	}
	(void)dst, (void)nbytes, (void)src, (void)csz;
	return h5_err_set(H5_ERR_UNSUPPORTED, "filter bitshuffle (32008): compression %u not compiled in", comp);
}

static int dec_bitshuffle(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	const uint8_t *in = *buf;
	size_t in_len = *len, pos = 0, es, bs, total, nelm, opos = 0, left;
	uint32_t comp;
	uint8_t *out = NULL, *tmp = NULL;
	int rc = 0;

	if (f->ncd < 3 || f->cd[2] == 0)
		return h5_err_set(H5_ERR_FORMAT, "bitshuffle: invalid parameters");
	es = f->cd[2];
	bs = f->ncd > 3 ? f->cd[3] : 0;
	comp = f->ncd > 4 ? f->cd[4] : 0;
	if (comp == 2 || comp == 3) {
		if (in_len < 12)
			return h5_err_set(H5_ERR_FORMAT, "bitshuffle: chunk of %zu bytes is shorter than its header", in_len);
		{
			uint64_t t = be_decode(in, 8);

			if ((rc = stage_check("bitshuffle", t, st)) < 0)
				return rc;
			total = (size_t)t;
		}
		bs = (size_t)be_decode(in + 8, 4) / es;
		pos = 12;
	} else if (comp == 0) {
		total = in_len;
		if ((rc = stage_check("bitshuffle", total, st)) < 0)
			return rc;
	} else {
		return h5_err_set(H5_ERR_UNSUPPORTED, "bitshuffle: unknown compression %u", comp);
	}
	if (bs == 0)
		bs = bshuf_default_block(es);
	if (bs % 8)
		return h5_err_set(H5_ERR_FORMAT, "bitshuffle: block size %zu is not a multiple of 8", bs);
	if (total % es)
		return h5_err_set(H5_ERR_FORMAT, "bitshuffle: %zu bytes are not whole %zu-byte elements", total, es);
	nelm = total / es;
	out = malloc(total ? total : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "bitshuffle: out of memory");
	if (comp != 0) {
		size_t tb;

		if (__builtin_mul_overflow(bs > nelm ? nelm : bs, es, &tb)) {
			rc = h5_err_set(H5_ERR_FORMAT, "bitshuffle: block too large");
			goto out;
		}
		tmp = malloc(tb ? tb : 1);
		if (!tmp) {
			rc = h5_err_set(H5_ERR_NOMEM, "bitshuffle: out of memory");
			goto out;
		}
	}
	left = nelm;
	while (left >= 8) {
		size_t n = left >= bs ? bs : left / 8 * 8, nbytes = n * es;
		const uint8_t *src;

		if (comp == 0) {
			src = in + pos;     /* nbytes fit: total == in_len */
			pos += nbytes;
		} else {
			uint64_t csz;

			if (in_len - pos < 4) {
				rc = h5_err_set(H5_ERR_FORMAT, "bitshuffle: stream truncated at block header (offset %zu)", pos);
				goto out;
			}
			csz = be_decode(in + pos, 4);
			pos += 4;
			if (csz > in_len - pos) {
				rc = h5_err_set(H5_ERR_FORMAT, "bitshuffle: block of %llu bytes at offset %zu runs past the chunk",
						(unsigned long long)csz, pos);
				goto out;
			}
			if ((rc = bshuf_block(tmp, nbytes, in + pos, (size_t)csz, comp, pos)) < 0)
				goto out;
			pos += (size_t)csz;
			src = tmp;
		}
		bshuf_untrans(out + opos, src, n, es);
		opos += nbytes;
		left -= n;
	}
	/* the last size % 8 elements are copied as they are */
	if (left * es > in_len - pos) {
		rc = h5_err_set(H5_ERR_FORMAT, "bitshuffle: stream truncated in the trailing elements");
		goto out;
	}
	memcpy(out + opos, in + pos, left * es);
	swap_buf(buf, len, out, total);
	out = NULL;
out:
	free(tmp);
	free(out);
	return rc;
}

/* ---- BZip2 (307) ---------------------------------------------------------------------- */

#ifdef HAVE_BZ2
/* H5Zbzip2.c: one bzip2 stream. */
static int dec_bzip2(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	bz_stream bz;
	size_t cap = sat_add(st.size, 1), in_done = 0, out_done = 0;
	uint8_t *out;
	int brc, rc = 0;

	(void)f;
	if (cap == SIZE_MAX)
		return h5_err_set(H5_ERR_LIMIT, "bzip2: chunk too large");
	out = malloc(cap);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "bzip2: out of memory");
	memset(&bz, 0, sizeof(bz));
	if (BZ2_bzDecompressInit(&bz, 0, 0) != BZ_OK) {
		free(out);
		return h5_err_set(H5_ERR_NOMEM, "bzip2: cannot initialise the decompressor");
	}
	for (;;) {
		size_t in_chunk = *len - in_done, out_chunk = cap - out_done;
		unsigned ai, ao;

		bz.next_in = (char *)(uintptr_t)(*buf + in_done);
		bz.avail_in = ai = (unsigned)(in_chunk > UINT_MAX ? UINT_MAX : in_chunk);
		bz.next_out = (char *)out + out_done;
		bz.avail_out = ao = (unsigned)(out_chunk > UINT_MAX ? UINT_MAX : out_chunk);
		brc = BZ2_bzDecompress(&bz);
		in_done += ai - bz.avail_in;
		out_done += ao - bz.avail_out;
		if (out_done > st.size) {
			rc = h5_err_set(H5_ERR_FORMAT, "bzip2: decompression bomb: output exceeds the %zu bytes of the chunk", st.size);
			goto out;
		}
		if (brc == BZ_STREAM_END)
			break;
		if (brc == BZ_MEM_ERROR) {
			rc = h5_err_set(H5_ERR_NOMEM, "bzip2: out of memory");
			goto out;
		}
		if (brc != BZ_OK) {
			rc = h5_err_set(H5_ERR_FORMAT, "bzip2: corrupt stream (error %d)", brc);
			goto out;
		}
		if (in_done == *len && bz.avail_out > 0) {
			/* all input used, room left, and the stream has not ended */
			rc = h5_err_set(H5_ERR_FORMAT, "bzip2: stream truncated after %zu input bytes", in_done);
			goto out;
		}
	}
	if (st.exact && out_done != st.size) {
		rc = h5_err_set(H5_ERR_FORMAT, "bzip2: stream decodes to %zu bytes, expected %zu", out_done, st.size);
		goto out;
	}
	BZ2_bzDecompressEnd(&bz);
	swap_buf(buf, len, out, out_done);
	return 0;
out:
	BZ2_bzDecompressEnd(&bz);
	free(out);
	return rc;
}
#endif

/* ---- the pipeline ------------------------------------------------------------------ */

#if !defined(HAVE_AEC) || !defined(HAVE_BLOSC) || !defined(HAVE_ZSTD) || !defined(HAVE_LZ4) || !defined(HAVE_BZ2)
static int not_compiled(uint16_t id)
{
	return h5_err_set(H5_ERR_UNSUPPORTED, "filter %s (%u) not compiled in", h5_filter_name(id), id);
}
#endif

static int decode_one(uint8_t **buf, size_t *len, const h5_filter *f, fstage st)
{
	switch (f->id) {
	case H5_FILTER_DEFLATE: return dec_deflate(buf, len, f, st);
	case H5_FILTER_SHUFFLE: return dec_shuffle(buf, len, f, st);
	case H5_FILTER_FLETCHER32: return dec_fletcher32(buf, len, f, st);
	case H5_FILTER_NBIT: return dec_nbit(buf, len, f, st);
	case H5_FILTER_SCALEOFFSET: return dec_scaleoffset(buf, len, f, st);
	case H5_FILTER_LZF: return dec_lzf(buf, len, f, st);
	case H5_FILTER_BITSHUFFLE: return dec_bitshuffle(buf, len, f, st);
#ifdef HAVE_AEC
	case H5_FILTER_SZIP: return dec_szip(buf, len, f, st);
#else
	case H5_FILTER_SZIP: return not_compiled(f->id);
#endif
#ifdef HAVE_BLOSC
	case H5_FILTER_BLOSC: return dec_blosc(buf, len, f, st);
#else
	case H5_FILTER_BLOSC: return not_compiled(f->id);
#endif
#ifdef HAVE_ZSTD
	case H5_FILTER_ZSTD: return dec_zstd(buf, len, f, st);
#else
	case H5_FILTER_ZSTD: return not_compiled(f->id);
#endif
#ifdef HAVE_LZ4
	case H5_FILTER_LZ4: return dec_lz4(buf, len, f, st);
#else
	case H5_FILTER_LZ4: return not_compiled(f->id);
#endif
#ifdef HAVE_BZ2
	case H5_FILTER_BZIP2: return dec_bzip2(buf, len, f, st);
#else
	case H5_FILTER_BZIP2: return not_compiled(f->id);
#endif
	default:
		return h5_err_set(H5_ERR_UNSUPPORTED, "filter %u (%s) not supported", f->id,
				  f->name ? f->name : "unnamed");
	}
}

/* Upper bound of what any supported filter makes of n bytes (deflate adds
 * ~0.1%, LZ4 0.4% plus framing, scale-offset 22 bytes, ...). */
static size_t encoded_bound(size_t n)
{
	return sat_add(sat_add(n, n / 4), 4096);
}

int h5_filter_decode(uint8_t **buf, size_t *len, const h5_pline *pl, uint32_t mask,
		     const h5_dtype *dtype, size_t expect)
{
	fstage st[FILTER_MAX_PIPELINE];
	fstage cur = { expect, true };
	int rc;

	(void)dtype;    /* the cd values carry what the filters need */
	if (!buf || !*buf || !len || !pl)
		return h5_err_set(H5_ERR_INVAL, "h5_filter_decode: bad arguments");
	if (pl->n > FILTER_MAX_PIPELINE)
		return h5_err_set(H5_ERR_FORMAT, "filter pipeline with %zu filters (at most %d)", pl->n, FILTER_MAX_PIPELINE);

	/* Sizes in write order: the input of filter i is what its decoder
	 * must give back. */
	for (size_t i = 0; i < pl->n; i++) {
		st[i] = cur;
		if (mask & (UINT32_C(1) << i))
			continue;
		switch (pl->filters[i].id) {
		case H5_FILTER_SHUFFLE:
			break;
		case H5_FILTER_FLETCHER32:
			cur.size = sat_add(cur.size, 4);
			break;
		default:
			cur.size = encoded_bound(cur.size);
			cur.exact = false;
			break;
		}
	}
	/* Only size-preserving filters and fletcher32 applied: the stored size
	 * is known.  (After a compressor each decoder checks its own output.) */
	if (cur.exact && *len != cur.size)
		return h5_err_set(H5_ERR_FORMAT, "filtered chunk of %zu bytes, expected %zu", *len, cur.size);

	for (size_t i = pl->n; i-- > 0;) {
		const h5_filter *f = &pl->filters[i];

		if (mask & (UINT32_C(1) << i))
			continue;
		rc = decode_one(buf, len, f, st[i]);
		if (rc < 0)
			return h5_err_wrap(rc, "filter %zu (%s, id %u): ", i, h5_filter_name(f->id), f->id);
	}
	if (*len != expect)
		return h5_err_set(H5_ERR_FORMAT, "filter pipeline produced %zu bytes, expected %zu", *len, expect);
	return 0;
}

int h5_filter_encode(uint8_t **buf, size_t *len, uint32_t *mask_out, const h5_pline *pl,
		     const h5_dtype *dtype)
{
	uint32_t mask = 0;
	int rc;

	(void)dtype;
	if (!buf || !*buf || !len || !mask_out || !pl)
		return h5_err_set(H5_ERR_INVAL, "h5_filter_encode: bad arguments");
	if (pl->n > FILTER_MAX_PIPELINE)
		return h5_err_set(H5_ERR_FORMAT, "filter pipeline with %zu filters (at most %d)", pl->n, FILTER_MAX_PIPELINE);
	for (size_t i = 0; i < pl->n; i++) {
		const h5_filter *f = &pl->filters[i];

		switch (f->id) {
		case H5_FILTER_DEFLATE: rc = enc_deflate(buf, len, f); break;
		case H5_FILTER_SHUFFLE: rc = enc_shuffle(buf, len, f); break;
		case H5_FILTER_FLETCHER32: rc = enc_fletcher32(buf, len, f); break;
		default:
			rc = h5_err_set(H5_ERR_UNSUPPORTED, "filter %s (%u): encoding not supported",
					h5_filter_name(f->id), f->id);
			break;
		}
		if (rc == 0)
			continue;
		/* H5Z_pipeline: an optional filter that cannot be applied is
		 * skipped and its mask bit set; a required one fails the write. */
		if ((f->flags & FILTER_FLAG_OPTIONAL) && rc != H5_ERR_NOMEM) {
			mask |= UINT32_C(1) << i;
			continue;
		}
		return h5_err_wrap(rc, "filter %zu (%s, id %u): ", i, h5_filter_name(f->id), f->id);
	}
	*mask_out = mask;
	return 0;
}
