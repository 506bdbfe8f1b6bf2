/* filter_shuffle.c - shuffle (2): byte transposition by element (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "pline.h"
#include "filter.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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
	out = h5_buf_alloc(*len);
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
	out = h5_buf_alloc(*len);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "shuffle: out of memory");
	shuffle_run(out, *buf, *len, es, false);
	swap_buf(buf, len, out, *len);
	return 0;
}

const h5_filter_class h5_filter_shuffle = {
	.id = H5_FILTER_SHUFFLE,
	.name = "shuffle",
	.size = H5_FSIZE_SAME,
	.decode = dec_shuffle,
	.encode = enc_shuffle,
};
