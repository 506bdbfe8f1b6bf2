/* filter_lz4.c - LZ4 (32004), the HDF5 LZ4 plugin framing (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "pline.h"
#include "filter.h"

#ifdef HAVE_LZ4
#include "dl.h"

#include <lz4.h>

/* liblz4, opened when first needed (dl.h) */
#define LZ4_FUNCTIONS(X) X(LZ4_decompress_safe) X(LZ4_compress_default)
static struct { LZ4_FUNCTIONS(H5_DL_FIELD) } lz4_fn;
#define LZ4_SLOT(name) H5_DL_SLOT(lz4_fn, name)
static const h5_dl_sym lz4_syms[] = { LZ4_FUNCTIONS(LZ4_SLOT) { NULL, NULL } };
static h5_dl lz4_lib = {
	.what = "lz4 filter", .package = "liblz4-1",
	.names = (const char *const[]){ "liblz4.so.1", NULL }, .syms = lz4_syms,
};
#define LZ4_decompress_safe (lz4_fn.p_LZ4_decompress_safe)
#define LZ4_compress_default (lz4_fn.p_LZ4_compress_default)

int h5_filter_lz4_unpack(uint8_t *dst, size_t n, const uint8_t *src, size_t csz, const char *what, size_t pos)
{
	int r, rc = h5_dl_need(&lz4_lib);

	if (rc < 0)
		return rc;
	r = csz > INT_MAX || n > INT_MAX ? -1 : LZ4_decompress_safe((const char *)src, (char *)dst, (int)csz, (int)n);
	if (r < 0 || (size_t)r != n)
		return h5_err_set(H5_ERR_FORMAT, "%s: corrupt LZ4 block at offset %zu", what, pos);
	return 0;
}

int h5_filter_lz4_pack(uint8_t *dst, size_t cap, size_t *got, const uint8_t *src, size_t n, const char *what)
{
	int r, rc = h5_dl_need(&lz4_lib);

	if (rc < 0)
		return rc;
	r = n > LZ4_MAX_INPUT_SIZE || cap > INT_MAX ? 0 :
		LZ4_compress_default((const char *)src, (char *)dst, (int)n, (int)cap);
	if (r <= 0)
		return h5_err_set(H5_ERR_INVAL, "%s: LZ4 cannot compress a block of %zu bytes", what, n);
	*got = (size_t)r;
	return 0;
}

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
	if ((rc = h5_dl_need(&lz4_lib)) < 0)
		return rc;
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
	out = h5_buf_alloc(orig ? (size_t)orig : 1);
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
	h5_buf_free(out);
	return rc;
}

/* H5Zlz4.c's compression: cd[0] the block size (0 or none: 1 GiB), cut to
 * the chunk; each block LZ4_compress_default'ed, or stored raw when that
 * does not make it smaller. */
#define LZ4_H5_DEFAULT_BLOCK (1u << 30)

static void be_put(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = n; i-- > 0; v >>= 8)
		p[i] = (uint8_t)v;
}

static int enc_lz4(uint8_t **buf, size_t *len, const h5_filter *f)
{
	size_t blk = f->ncd >= 1 && f->cd[0] > 0 ? f->cd[0] : LZ4_H5_DEFAULT_BLOCK;
	size_t nblocks, cap, pos = 12;
	uint8_t *out;
	int rc;

	if ((rc = h5_dl_need(&lz4_lib)) < 0)
		return rc;
	if (blk > *len)
		blk = *len;
	if (blk > LZ4_MAX_INPUT_SIZE)
		return h5_err_set(H5_ERR_LIMIT, "lz4: block of %zu bytes too large", blk);
	nblocks = blk ? (*len + blk - 1) / blk : 0;
	cap = 12 + nblocks * (4 + (size_t)LZ4_COMPRESSBOUND((int)blk));
	out = h5_buf_alloc(cap);
	if (!out)
		return h5_err_set(H5_ERR_NOMEM, "lz4: out of memory");
	be_put(out, *len, 8);
	be_put(out + 8, blk, 4);
	for (size_t done = 0; done < *len;) {
		size_t this = *len - done < blk ? *len - done : blk;
		int c = LZ4_compress_default((const char *)*buf + done, (char *)out + pos + 4, (int)this,
					     LZ4_COMPRESSBOUND((int)this));

		if (c <= 0) {
			h5_buf_free(out);
			return h5_err_set(H5_ERR_INVAL, "lz4: cannot compress a block of %zu bytes", this);
		}
		if ((size_t)c >= this) {
			c = (int)this;
			memcpy(out + pos + 4, *buf + done, this);
		}
		be_put(out + pos, (uint64_t)c, 4);
		pos += 4 + (size_t)c;
		done += this;
	}
	swap_buf(buf, len, out, pos);
	return 0;
}
#endif

const h5_filter_class h5_filter_lz4 = {
	.id = H5_FILTER_LZ4,
	.name = "lz4",
	.size = H5_FSIZE_BOUND,
#ifdef HAVE_LZ4
	.decode = dec_lz4,
	.encode = enc_lz4,
#endif
};
