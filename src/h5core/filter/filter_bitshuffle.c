/* filter_bitshuffle.c - bitshuffle (32008), with its LZ4 / zstd block compression (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "pline.h"
#include "filter.h"

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

#if defined(__x86_64__)
#include <immintrin.h>
#define BSHUF_PLANES_MAX ((size_t)16 << 10)

/* The bit planes of byte plane p (n bytes, n % 16 == 0 for the part
 * done here) into out as bshuf_trans lays them out: SSE2's movemask
 * takes bit 7 of 16 bytes at once (x86-64 always has SSE2), the bytes
 * shifted left a bit after each plane, as the bitshuffle library's
 * SSE2 kernel does (issue 55: the scalar transposition was half of an
 * overwrite's CPU). Returns the bytes done. */
static size_t bit_planes_sse2(uint8_t *out, const uint8_t *p, size_t n, size_t nb, size_t j)
{
	size_t i;

	for (i = 0; i + 16 <= n; i += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));

		for (unsigned k = 8; k-- > 0;) {
			unsigned m = (unsigned)_mm_movemask_epi8(v);

			out[(j * 8 + k) * nb + i / 8] = (uint8_t)m;
			out[(j * 8 + k) * nb + i / 8 + 1] = (uint8_t)(m >> 8);
			v = _mm_slli_epi16(v, 1);
		}
	}
	return i;
}

/* Byte planes (each n bytes apart) of count 4-byte elements (count %
 * 16 == 0): pshufb groups each
 * element's bytes by position within 16 bytes, a 4x4 transposition of
 * 32-bit lanes across four loads makes each plane's 16 bytes. */
__attribute__((target("ssse3"))) static void byte_planes4_ssse3(uint8_t *planes, size_t n, const uint8_t *in,
								   size_t count)
{
	const __m128i m = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);

	for (size_t i = 0; i + 16 <= count; i += 16) {
		const __m128i *q = (const __m128i *)(const void *)(in + i * 4);
		__m128i v0 = _mm_shuffle_epi8(_mm_loadu_si128(q), m), v1 = _mm_shuffle_epi8(_mm_loadu_si128(q + 1), m);
		__m128i v2 = _mm_shuffle_epi8(_mm_loadu_si128(q + 2), m), v3 = _mm_shuffle_epi8(_mm_loadu_si128(q + 3), m);
		__m128i a = _mm_unpacklo_epi32(v0, v1), b = _mm_unpacklo_epi32(v2, v3);
		__m128i c = _mm_unpackhi_epi32(v0, v1), d = _mm_unpackhi_epi32(v2, v3);

		_mm_storeu_si128((__m128i *)(void *)(planes + i), _mm_unpacklo_epi64(a, b));
		_mm_storeu_si128((__m128i *)(void *)(planes + n + i), _mm_unpackhi_epi64(a, b));
		_mm_storeu_si128((__m128i *)(void *)(planes + 2 * n + i), _mm_unpacklo_epi64(c, d));
		_mm_storeu_si128((__m128i *)(void *)(planes + 3 * n + i), _mm_unpackhi_epi64(c, d));
	}
}

static bool have_ssse3(void)
{
	static int v = -1;

	if (v < 0) {
		__builtin_cpu_init();
		v = __builtin_cpu_supports("ssse3") ? 1 : 0;
	}
	return v == 1;
}
#endif

/* bshuf_trans_bit_elem for n elements (n % 8 == 0), the inverse of
 * bshuf_untrans (an 8x8 bit transposition is its own inverse). */
static void bshuf_trans(uint8_t *out, const uint8_t *in, size_t n, size_t es)
{
	size_t nb = n / 8, g0 = 0;

#if defined(__x86_64__)
	/* the byte planes first (in the caches: a block is 8 KiB by
	 * default), then their bits 16 elements at a time */
	if (n * es <= BSHUF_PLANES_MAX && n >= 16) {
		uint8_t planes[BSHUF_PLANES_MAX];
		size_t done = 0;

		size_t i0 = 0;

		if (es == 4 && have_ssse3()) {
			i0 = n / 16 * 16;
			byte_planes4_ssse3(planes, n, in, i0);
		}
		for (size_t i = i0; i < n; i++)
			for (size_t j = 0; j < es; j++)
				planes[j * n + i] = in[i * es + j];
		for (size_t j = 0; j < es; j++)
			done = bit_planes_sse2(out, planes + j * n, n, nb, j);
		g0 = done / 8;
	}
#endif
	for (size_t j = 0; j < es; j++)
		for (size_t g = g0; g < nb; g++) {
			uint64_t x = 0;

			for (unsigned b = 0; b < 8; b++)
				x |= (uint64_t)in[(g * 8 + b) * es + j] << (8 * b);
			x = trans_bit_8x8(x);
			for (unsigned k = 0; k < 8; k++)
				out[(j * 8 + k) * nb + g] = (uint8_t)(x >> (8 * k));
		}
}

/* Decompress one bitshuffle block (comp 2 LZ4, 3 zstd) of exactly nbytes. */
static int bshuf_block(uint8_t *dst, size_t nbytes, const uint8_t *src, size_t csz, uint32_t comp, size_t pos)
{
	if (comp == 2) {
#ifdef HAVE_LZ4
		return h5_filter_lz4_unpack(dst, nbytes, src, csz, "bitshuffle", pos);
#endif
	} else if (comp == 3) {
#ifdef HAVE_ZSTD
		size_t got = 0;
		int rc = h5_filter_zstd_into(dst, nbytes, &got, src, csz, "bitshuffle zstd");

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
	out = h5_buf_alloc(total ? total : 1);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "bitshuffle: out of memory");
	if (comp != 0) {
		size_t tb;

		if (__builtin_mul_overflow(bs > nelm ? nelm : bs, es, &tb)) {
			rc = h5_err_set(H5_ERR_FORMAT, "bitshuffle: block too large");
			goto out;
		}
		tmp = h5_buf_alloc(tb ? tb : 1);
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
	h5_buf_free(tmp);
	h5_buf_free(out);
	return rc;
}

/* Compress one bitshuffled block (comp 2 LZ4, 3 zstd at level) into dst
 * (cap bytes): its size (4 bytes BE) then the data; *used the bytes. */
static int bshuf_pack(uint8_t *dst, size_t cap, size_t *used, const uint8_t *src, size_t n, uint32_t comp, int level)
{
	size_t c = 0;

	if (comp == 2) {
#ifdef HAVE_LZ4
		int rc = h5_filter_lz4_pack(dst + 4, cap - 4, &c, src, n, "bitshuffle");

		if (rc < 0)
			return rc;
#else
		return h5_err_set(H5_ERR_UNSUPPORTED, "filter bitshuffle (32008): LZ4 not compiled in");
#endif
	} else {
#ifdef HAVE_ZSTD
		int rc = h5_filter_zstd_pack(dst + 4, cap - 4, &c, src, n, level, "bitshuffle zstd");

		if (rc < 0)
			return rc;
#else
		(void)level;
		return h5_err_set(H5_ERR_UNSUPPORTED, "filter bitshuffle (32008): zstd not compiled in");
#endif
	}
	dst[0] = (uint8_t)(c >> 24);
	dst[1] = (uint8_t)(c >> 16);
	dst[2] = (uint8_t)(c >> 8);
	dst[3] = (uint8_t)c;
	*used = 4 + c;
	return 0;
}

/* bshuf_h5_filter's compression: cd [2] element size, [3] block size in
 * elements (0: the default), [4] 0, 2 (LZ4) or 3 (zstd, level cd[5]).
 * The header records the block size in bytes actually used. */
static int enc_bitshuffle(uint8_t **buf, size_t *len, const h5_filter *f)
{
	size_t es, bs, nelm, left, ipos = 0, opos = 0, cap, bound;
	uint32_t comp;
	int level;
	uint8_t *out = NULL, *tmp = NULL;
	int rc = 0;

	if (f->ncd < 3 || f->cd[2] == 0)
		return h5_err_set(H5_ERR_FORMAT, "bitshuffle: invalid parameters");
	es = f->cd[2];
	bs = f->ncd > 3 && f->cd[3] ? f->cd[3] : bshuf_default_block(es);
	comp = f->ncd > 4 ? f->cd[4] : 0;
	level = f->ncd > 5 ? (int)f->cd[5] : 0;
	if (bs % 8)
		return h5_err_set(H5_ERR_FORMAT, "bitshuffle: block size %zu is not a multiple of 8", bs);
	if (comp != 0 && comp != 2 && comp != 3)
		return h5_err_set(H5_ERR_UNSUPPORTED, "bitshuffle: unknown compression %u", comp);
	if (*len % es)
		return h5_err_set(H5_ERR_FORMAT, "bitshuffle: %zu bytes are not whole %zu-byte elements", *len, es);
	if (bs > SIZE_MAX / es / 2 || (comp && bs * es > INT32_MAX))
		return h5_err_set(H5_ERR_FORMAT, "bitshuffle: block too large");
	nelm = *len / es;
	/* every block grows by at most its compressor's bound, plus its size */
	bound = comp == 0 ? 0 : sat_add(bs * es / 255 + 16, 4);
#ifdef HAVE_ZSTD
	if (comp == 3)
		bound = sat_add(h5_filter_zstd_bound(bs * es) - bs * es, 4);
#endif
	cap = sat_add(sat_add(*len, 12), sat_add(nelm / bs + 1, 0) * bound);
	out = h5_buf_alloc(cap);
	tmp = comp ? h5_buf_alloc(bs * es) : NULL;
	if (!out || (comp && !tmp)) {
		rc = h5_err_set(H5_ERR_NOMEM, "bitshuffle: out of memory");
		goto out;
	}
	if (comp) {
		uint64_t t = *len, b = bs * es;

		for (unsigned i = 0; i < 8; i++)
			out[i] = (uint8_t)(t >> (56 - 8 * i));
		for (unsigned i = 0; i < 4; i++)
			out[8 + i] = (uint8_t)(b >> (24 - 8 * i));
		opos = 12;
	}
	left = nelm;
	while (left >= 8) {
		size_t n = left >= bs ? bs : left / 8 * 8, used = 0;

		if (!comp) {
			bshuf_trans(out + opos, *buf + ipos, n, es);
			opos += n * es;
		} else {
			bshuf_trans(tmp, *buf + ipos, n, es);
			if ((rc = bshuf_pack(out + opos, cap - opos, &used, tmp, n * es, comp, level)) < 0)
				goto out;
			opos += used;
		}
		ipos += n * es;
		left -= n;
	}
	/* the last size % 8 elements are copied as they are */
	memcpy(out + opos, *buf + ipos, left * es);
	opos += left * es;
	swap_buf(buf, len, out, opos);
	out = NULL;
out:
	h5_buf_free(tmp);
	h5_buf_free(out);
	return rc;
}

const h5_filter_class h5_filter_bitshuffle = {
	.id = H5_FILTER_BITSHUFFLE,
	.name = "bitshuffle",
	.size = H5_FSIZE_BOUND,
	.decode = dec_bitshuffle,
	.encode = enc_bitshuffle,
};
