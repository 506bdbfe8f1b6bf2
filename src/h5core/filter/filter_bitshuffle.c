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

/* bshuf_trans_bit_elem for n elements (n % 8 == 0), the inverse of
 * bshuf_untrans (an 8x8 bit transposition is its own inverse). */
static void bshuf_trans(uint8_t *out, const uint8_t *in, size_t n, size_t es)
{
	size_t nb = n / 8;

	for (size_t j = 0; j < es; j++)
		for (size_t g = 0; g < nb; g++) {
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
