/* filter_shuffle.c - shuffle (2): byte transposition by element (spec IV.A.2.l; filter.c runs the pipeline).
 *
 * Unshuffling is the step after inflate on most compressed HDF5 data, so
 * it has SIMD kernels for the common element sizes (2, 4, 8 bytes): AVX2
 * where the CPU has it (chosen at run time: one binary for every x86-64),
 * SSE2 (always there on x86-64), and a blocked scalar loop for the rest.
 * All produce the same bytes (tests/unit/test_filter.c compares them with
 * the scalar loop over element sizes 1..16 and odd lengths).
 *
 * Fused with the decoder before it (filter.c's fused step): the decoder
 * writes into a scratch buffer that stays in the CPU's caches, and the
 * unshuffle reads it from there in windows of elements small enough for
 * the first-level cache. (Summing a zlib stream's adler32 per plane in
 * the same windows was tried: no faster than libdeflate's own pass over
 * the hot scratch for 4-byte elements, 4x slower for 8-byte ones, whose
 * planes 128 KiB apart evict each other; bench/README.md.)
 */
#include "filter_impl.h"
#include "pline.h"
#include "filter.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SHUF_X86 1
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

/* Elements per window: the window's output (and its planes' input) of at
 * most SHUFFLE_BLOCK_BYTES stays in L1 while every plane is visited, so
 * each byte is touched once in cache instead of striding across the whole
 * chunk once per plane. */
#define SHUFFLE_BLOCK_BYTES 16384

/* A kernel: elements [j0, j1) of a chunk of n elements of es bytes, planes
 * at src + i * n, elements at dst + j * es. Returns the first element it
 * did not do (the SIMD kernels stop at their last whole step). */
typedef size_t (*unshuffle_fn)(uint8_t *dst, const uint8_t *src, size_t n, size_t es, size_t j0, size_t j1);

static size_t unshuffle_scalar(uint8_t *dst, const uint8_t *src, size_t n, size_t es, size_t j0, size_t j1)
{
	for (size_t i = 0; i < es; i++) {
		const uint8_t *s = src + i * n;
		uint8_t *d = dst + i;

		for (size_t j = j0; j < j1; j++)
			d[j * es] = s[j];
	}
	return j1;
}

#ifdef SHUF_X86
/* 16 elements per step: byte planes are interleaved with unpack
 * instructions (8 -> 16 -> 32 bit lanes), which writes whole elements in
 * order. */
__attribute__((target("sse2")))
static size_t unshuffle_sse2(uint8_t *dst, const uint8_t *src, size_t n, size_t es, size_t j0, size_t j1)
{
	size_t j = j0;

	if (es == 2) {
		for (; j + 16 <= j1; j += 16) {
			__m128i a = _mm_loadu_si128((const __m128i *)(src + j));
			__m128i b = _mm_loadu_si128((const __m128i *)(src + n + j));

			_mm_storeu_si128((__m128i *)(dst + 2 * j), _mm_unpacklo_epi8(a, b));
			_mm_storeu_si128((__m128i *)(dst + 2 * j + 16), _mm_unpackhi_epi8(a, b));
		}
	} else if (es == 4) {
		for (; j + 16 <= j1; j += 16) {
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
		for (; j + 16 <= j1; j += 16) {
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

/* The same unpacks on 256-bit registers, 32 elements per step. AVX2's
 * unpacks work within each 128-bit half, so each register holds the SSE2
 * result for elements j..j+15 in its low half and j+16..j+31 in its high
 * half; vperm2i128 puts the halves back in element order. */
__attribute__((target("avx2")))
static size_t unshuffle_avx2(uint8_t *dst, const uint8_t *src, size_t n, size_t es, size_t j0, size_t j1)
{
	size_t j = j0;

	if (es == 2) {
		for (; j + 32 <= j1; j += 32) {
			__m256i a = _mm256_loadu_si256((const __m256i *)(src + j));
			__m256i b = _mm256_loadu_si256((const __m256i *)(src + n + j));
			__m256i lo = _mm256_unpacklo_epi8(a, b), hi = _mm256_unpackhi_epi8(a, b);
			uint8_t *o = dst + 2 * j;

			_mm256_storeu_si256((__m256i *)o, _mm256_permute2x128_si256(lo, hi, 0x20));
			_mm256_storeu_si256((__m256i *)(o + 32), _mm256_permute2x128_si256(lo, hi, 0x31));
		}
	} else if (es == 4) {
		for (; j + 32 <= j1; j += 32) {
			__m256i a = _mm256_loadu_si256((const __m256i *)(src + j));
			__m256i b = _mm256_loadu_si256((const __m256i *)(src + n + j));
			__m256i c = _mm256_loadu_si256((const __m256i *)(src + 2 * n + j));
			__m256i d = _mm256_loadu_si256((const __m256i *)(src + 3 * n + j));
			__m256i ab0 = _mm256_unpacklo_epi8(a, b), ab1 = _mm256_unpackhi_epi8(a, b);
			__m256i cd0 = _mm256_unpacklo_epi8(c, d), cd1 = _mm256_unpackhi_epi8(c, d);
			__m256i o0 = _mm256_unpacklo_epi16(ab0, cd0), o1 = _mm256_unpackhi_epi16(ab0, cd0);
			__m256i o2 = _mm256_unpacklo_epi16(ab1, cd1), o3 = _mm256_unpackhi_epi16(ab1, cd1);
			uint8_t *o = dst + 4 * j;

			_mm256_storeu_si256((__m256i *)o, _mm256_permute2x128_si256(o0, o1, 0x20));
			_mm256_storeu_si256((__m256i *)(o + 32), _mm256_permute2x128_si256(o2, o3, 0x20));
			_mm256_storeu_si256((__m256i *)(o + 64), _mm256_permute2x128_si256(o0, o1, 0x31));
			_mm256_storeu_si256((__m256i *)(o + 96), _mm256_permute2x128_si256(o2, o3, 0x31));
		}
	} else if (es == 8) {
		for (; j + 32 <= j1; j += 32) {
			__m256i p[8], q[8], r[8], s[8];
			uint8_t *o = dst + 8 * j;

			for (unsigned k = 0; k < 8; k++)
				p[k] = _mm256_loadu_si256((const __m256i *)(src + k * n + j));
			for (unsigned k = 0; k < 4; k++) {
				q[2 * k] = _mm256_unpacklo_epi8(p[2 * k], p[2 * k + 1]);
				q[2 * k + 1] = _mm256_unpackhi_epi8(p[2 * k], p[2 * k + 1]);
			}
			for (unsigned h = 0; h < 2; h++) {
				r[4 * h] = _mm256_unpacklo_epi16(q[h], q[2 + h]);
				r[4 * h + 1] = _mm256_unpackhi_epi16(q[h], q[2 + h]);
				r[4 * h + 2] = _mm256_unpacklo_epi16(q[4 + h], q[6 + h]);
				r[4 * h + 3] = _mm256_unpackhi_epi16(q[4 + h], q[6 + h]);
			}
			/* s[k]: the k-th 16 bytes of the SSE2 kernel's output, per half */
			for (unsigned h = 0; h < 2; h++)
				for (unsigned m = 0; m < 2; m++) {
					__m256i lo = r[4 * h + m], hi = r[4 * h + 2 + m];

					s[4 * h + 2 * m] = _mm256_unpacklo_epi32(lo, hi);
					s[4 * h + 2 * m + 1] = _mm256_unpackhi_epi32(lo, hi);
				}
			for (unsigned k = 0; k < 4; k++) {
				_mm256_storeu_si256((__m256i *)(o + 32 * k),
						    _mm256_permute2x128_si256(s[2 * k], s[2 * k + 1], 0x20));
				_mm256_storeu_si256((__m256i *)(o + 128 + 32 * k),
						    _mm256_permute2x128_si256(s[2 * k], s[2 * k + 1], 0x31));
			}
		}
	}
	return j;
}
#endif

static const unshuffle_fn unshuffle_kernels[H5_UNSHUFFLE_NIMPL] = {
	[H5_UNSHUFFLE_SCALAR] = unshuffle_scalar,
#ifdef SHUF_X86
	[H5_UNSHUFFLE_SSE2] = unshuffle_sse2,
	[H5_UNSHUFFLE_AVX2] = unshuffle_avx2,
#endif
};

/* The best kernel this CPU runs, chosen once. */
static h5_unshuffle_impl unshuffle_best(void)
{
	static int best = -1;
	int b = __atomic_load_n(&best, __ATOMIC_RELAXED);

	if (b < 0) {
		b = H5_UNSHUFFLE_SCALAR;
#ifdef SHUF_X86
		__builtin_cpu_init();
		b = __builtin_cpu_supports("avx2") ? H5_UNSHUFFLE_AVX2 :
		    __builtin_cpu_supports("sse2") ? H5_UNSHUFFLE_SSE2 : H5_UNSHUFFLE_SCALAR;
#endif
		__atomic_store_n(&best, b, __ATOMIC_RELAXED);
	}
	return (h5_unshuffle_impl)b;
}

bool h5_unshuffle_available(h5_unshuffle_impl impl)
{
	return impl >= 0 && impl < H5_UNSHUFFLE_NIMPL && unshuffle_kernels[impl] && impl <= unshuffle_best();
}

int h5_unshuffle_with(h5_unshuffle_impl impl, uint8_t *dst, const uint8_t *src, size_t len, size_t es)
{
	unshuffle_fn k = impl >= 0 && impl < H5_UNSHUFFLE_NIMPL ? unshuffle_kernels[impl] : NULL;
	size_t n = es ? len / es : 0, blk;

	if (!k || !h5_unshuffle_available(impl))
		return h5_err_set(H5_ERR_UNSUPPORTED, "shuffle: kernel %d not available on this CPU", (int)impl);
	if (es <= 1 || n <= 1) {
		memcpy(dst, src, len);
		return 0;
	}
	blk = SHUFFLE_BLOCK_BYTES / es ? SHUFFLE_BLOCK_BYTES / es : 1;
	blk = blk >= 32 ? blk & ~(size_t)31 : blk;       /* whole SIMD steps */
	for (size_t b = 0; b < n; b += blk) {
		size_t e = n - b < blk ? n : b + blk, j;

		j = k(dst, src, n, es, b, e);
		unshuffle_scalar(dst, src, n, es, j, e);
	}
	memcpy(dst + n * es, src + n * es, len - n * es);
	return 0;
}

void h5_unshuffle(uint8_t *dst, const uint8_t *src, size_t len, size_t es)
{
	(void)h5_unshuffle_with(unshuffle_best(), dst, src, len, es);
}

/* Forward shuffle, blocked like the kernels. */
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
	h5_unshuffle(out, *buf, *len, es);
	swap_buf(buf, len, out, *len);
	return 0;
}

/* The fused step's second half (filter.c): src, what the decoder before
 * made in a scratch buffer, unshuffled into dst. */
static int dec_shuffle_copy(uint8_t *dst, const uint8_t *src, size_t len, const h5_filter *f, fstage st)
{
	size_t es = 0;
	int rc;

	if ((rc = shuffle_params(&es, f)) < 0)
		return rc;
	if ((rc = stage_check("shuffle", len, st)) < 0)
		return rc;
	h5_unshuffle(dst, src, len, es);
	return 0;
}

static int enc_shuffle(uint8_t **buf, size_t *len, const h5_filter *f)
{
	size_t es = 0, n, left;
	uint8_t *out;
	int rc;

	if ((rc = shuffle_params(&es, f)) < 0)
		return rc;
	if (es <= 1 || *len / es <= 1)
		return 0;
	out = h5_buf_alloc(*len);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "shuffle: out of memory");
	n = *len / es;
	left = *len - n * es;
	shuffle_generic(out, *buf, n, es);
	memcpy(out + n * es, *buf + n * es, left);
	swap_buf(buf, len, out, *len);
	return 0;
}

const h5_filter_class h5_filter_shuffle = {
	.id = H5_FILTER_SHUFFLE,
	.name = "shuffle",
	.size = H5_FSIZE_SAME,
	.decode = dec_shuffle,
	.decode_copy = dec_shuffle_copy,
	.encode = enc_shuffle,
};
