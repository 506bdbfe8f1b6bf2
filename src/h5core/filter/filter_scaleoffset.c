/* filter_scaleoffset.c - scale-offset (6): minimum-bits integers and D-scaled floats (spec IV.A.2.l; filter.c runs the pipeline). */
#include "filter_impl.h"
#include "rd.h"
#include "pline.h"
#include "filter.h"

#include <math.h>

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
	out = h5_buf_alloc(out_size ? (size_t)out_size : 1);
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
	h5_buf_free(out);
	return rc;
}

/* ---- encoding: H5Z__filter_scaleoffset's compression ------------------------ */

static uint64_t so_load(const uint8_t *p, unsigned size, bool be)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)p[be ? size - 1 - i : i] << (8 * i);
	return v;
}

/* H5Z__scaleoffset_log2: ceil(log2(num)), 0 for 0 and 1. */
static unsigned so_log2(uint64_t num)
{
	unsigned v = 0;
	uint64_t lower = 1, val = num;

	while (val >>= 1) {
		v++;
		lower <<= 1;
	}
	return num == lower ? v : v + 1;
}

/* H5Z__scaleoffset_rnd: half away from zero. */
static double so_rnd(double v)
{
	double u = ceil(v), l = floor(v);

	if (v > 0)
		return u - v <= v - l ? u : l;
	return v - l <= u - v ? l : u;
}

/* H5Z_scaleoffset_precompress_1/_2: minimum and maximum of the values that
 * are not the fill value, minbits from their span (plus the all-ones code
 * for the fill value) unless cd[1] fixed it; the codes replace the values
 * in v (each the type's width). A span too wide for codes leaves the
 * values as they are at full precision, minval 0 (libhdf5 returns early). */
static void so_pre_int(uint64_t *v, uint32_t n, unsigned size, bool sgn, bool filavail, uint64_t fill,
		       unsigned *minbits, uint64_t *minval)
{
	unsigned bits = size * 8, sh = 64 - bits;
	uint64_t wmask = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
	uint64_t min = 0, max = 0, span;
	uint32_t i = 0;

/* values of the type compared as its sign says */
#define SO_LT(a, b) (sgn ? (int64_t)((a) << sh) < (int64_t)((b) << sh) : (a) < (b))
	fill &= wmask;
	while (i < n && filavail && v[i] == fill)
		i++;
	if (i < n)
		min = max = v[i];
	for (; i < n; i++) {
		if (filavail && v[i] == fill)
			continue;
		if (SO_LT(max, v[i]))
			max = v[i];
		if (SO_LT(v[i], min))
			min = v[i];
	}
#undef SO_LT
	if (*minbits == 0) {
		span = (max - min) & wmask;
		if (span > wmask - 2) {
			*minbits = bits;
			*minval = 0;
			return;
		}
		*minbits = so_log2(span + 1 + (filavail ? 1 : 0));
	}
	if (*minbits != bits)
		for (i = 0; i < n; i++)
			v[i] = (filavail && v[i] == fill) ? (UINT64_C(1) << *minbits) - 1 : (v[i] - min) & wmask;
	/* sign-extended into the 8 bytes of minval, as libhdf5 casts */
	*minval = sgn && bits < 64 ? (uint64_t)((int64_t)(min << sh) >> sh) : min;
}

/* H5Z_scaleoffset_precompress_3 for float (size 4) and double: values
 * within 10^-D of the fill value are the fill value; min and max of the
 * others; codes round(v * 10^D - min * 10^D) in the type's arithmetic.  A
 * span beyond the codes: full precision, minval 0. */
static void so_pre_float(uint64_t *v, uint32_t n, unsigned size, bool filavail, uint64_t fill, int d,
			 unsigned *minbits, uint64_t *minval)
{
	uint32_t i = 0;

	*minval = 0;
	if (size == 4) {
		float min = 0, max = 0, fl, x, p10 = powf(10.0f, (float)d), n10 = powf(10.0f, (float)-d);
		uint32_t fb = (uint32_t)fill, b;
		double r;

		memcpy(&fl, &fb, 4);
#define SO_F(k) (b = (uint32_t)v[k], memcpy(&x, &b, 4), x)
		while (i < n && filavail && fabs((double)(SO_F(i) - fl)) < pow(10.0, -d))
			i++;
		if (i < n)
			min = max = SO_F(i);
		for (; i < n; i++) {
			if (filavail && fabs((double)(SO_F(i) - fl)) < pow(10.0, -d))
				continue;
			if (SO_F(i) > max)
				max = x;
			if (SO_F(i) < min)
				min = x;
		}
		r = so_rnd((double)(max * p10 - min * p10));
		if (r > (double)(UINT32_MAX - 2)) {
			*minbits = 32;
			return;
		}
		*minbits = so_log2((uint64_t)(r + 1) + (filavail ? 1 : 0));
		for (i = 0; i < n; i++) {
			if (filavail && fabsf(SO_F(i) - fl) < n10)
				v[i] = (uint32_t)(((uint32_t)1 << *minbits) - 1);
			else
				v[i] = (uint32_t)(int32_t)lroundf(SO_F(i) * p10 - min * p10);
		}
#undef SO_F
		memcpy(&b, &min, 4);
		*minval = b;
	} else {
		double min = 0, max = 0, fl, x, p10 = pow(10.0, (double)d), n10 = pow(10.0, (double)-d), r;

		memcpy(&fl, &fill, 8);
#define SO_D(k) (memcpy(&x, &v[k], 8), x)
		while (i < n && filavail && fabs(SO_D(i) - fl) < n10)
			i++;
		if (i < n)
			min = max = SO_D(i);
		for (; i < n; i++) {
			if (filavail && fabs(SO_D(i) - fl) < n10)
				continue;
			if (SO_D(i) > max)
				max = x;
			if (SO_D(i) < min)
				min = x;
		}
		r = so_rnd(max * p10 - min * p10);
		if (r > (double)(UINT64_MAX - 2)) {
			*minbits = 64;
			return;
		}
		*minbits = so_log2((uint64_t)(r + 1) + (filavail ? 1 : 0));
		for (i = 0; i < n; i++) {
			if (filavail && fabs(SO_D(i) - fl) < n10)
				v[i] = *minbits >= 64 ? UINT64_MAX : (UINT64_C(1) << *minbits) - 1;
			else
				v[i] = (uint64_t)(int64_t)llround(SO_D(i) * p10 - min * p10);
		}
#undef SO_D
		memcpy(minval, &min, 8);
	}
}

/* The chunk: minbits (4 bytes LE), the size of minval (8), minval (LE),
 * 8 zero bytes, then every code's low minbits bits, MSB first, in a zeroed
 * buffer; at full precision the values themselves (little-endian, libhdf5
 * works on native values). */
static int enc_scaleoffset(uint8_t **buf, size_t *len, const h5_filter *f)
{
	const uint32_t *cd = f->cd;
	uint32_t nelmts, cls, size;
	unsigned minbits = 0;
	uint64_t minval = 0, fill, *v = NULL;
	size_t out_len;
	uint8_t *out = NULL;
	bool be, filavail;
	bitwr bw;
	int rc = 0;

	if (f->ncd != 20)
		return h5_err_set(H5_ERR_FORMAT, "scaleoffset: %zu cd values, expected 20", f->ncd);
	nelmts = cd[2];
	cls = cd[3];
	size = cd[4];
	be = cd[6] == 1;
	filavail = cd[7] == 1;
	fill = (uint64_t)cd[8] | (uint64_t)cd[9] << 32;
	if (cd[6] > 1 || (cls == 0 && (cd[0] != 2 || (size != 1 && size != 2 && size != 4 && size != 8))) ||
	    (cls == 1 && (cd[0] != 0 || (size != 4 && size != 8))) || cls > 1)
		return h5_err_set(cls == 1 && cd[0] == 1 ? H5_ERR_UNSUPPORTED : H5_ERR_FORMAT,
				  "scaleoffset: cannot encode (scale type %u, class %u, size %u)", cd[0], cls, size);
	if ((uint64_t)nelmts * size != *len)
		return h5_err_set(H5_ERR_FORMAT, "scaleoffset: chunk of %zu bytes, the cd values give %u elements of %u",
				  *len, nelmts, size);
	if (cls == 0) {
		int32_t sf = (int32_t)cd[1];

		if (sf < 0 || (uint32_t)sf > size * 8)
			return h5_err_set(H5_ERR_FORMAT, "scaleoffset: invalid minimum bits %d", sf);
		/* minbits fixed at full precision: the chunk stays as it is */
		if ((uint32_t)sf == size * 8)
			return 0;
		minbits = (unsigned)sf;
	}
	v = malloc((nelmts ? nelmts : 1) * sizeof(*v));
	if (!v)
		return h5_err_set(H5_ERR_NOMEM, "scaleoffset: out of memory");
	for (uint32_t i = 0; i < nelmts; i++)
		v[i] = so_load(*buf + (size_t)i * size, size, be);
	if (cls == 0)
		so_pre_int(v, nelmts, size, cd[5] == 1, filavail, fill, &minbits, &minval);
	else
		so_pre_float(v, nelmts, size, filavail, fill, (int32_t)cd[1], &minbits, &minval);
	/* libhdf5's size: buf_offset + nbytes * minbits / (size * 8) + 1, a
	 * byte more than the bits need when they end on a byte boundary; at
	 * full precision the header and the values */
	out_len = SO_HEADER + *len;
	if (minbits != size * 8)
		out_len = SO_HEADER + (size_t)((uint64_t)*len * minbits / (size * 8)) + 1;
	out = h5_buf_alloc(out_len);
	if (!out) {
		rc = h5_err_set(H5_ERR_NOMEM, "scaleoffset: out of memory");
		goto out;
	}
	memset(out, 0, out_len);
	h5_le_encode(out, minbits, 4);
	out[4] = 8;
	h5_le_encode(out + 5, minval, 8);
	if (minbits == size * 8) {
		for (uint32_t i = 0; i < nelmts; i++)
			h5_le_encode(out + SO_HEADER + (size_t)i * size, so_load(*buf + (size_t)i * size, size, be), size);
	} else {
		bw_init(&bw, out + SO_HEADER);
		for (uint32_t i = 0; i < nelmts && minbits; i++)
			bw_put(&bw, v[i], minbits);
	}
	swap_buf(buf, len, out, out_len);
	out = NULL;
out:
	h5_buf_free(out);
	free(v);
	return rc;
}

const h5_filter_class h5_filter_scaleoffset = {
	.id = H5_FILTER_SCALEOFFSET,
	.name = "scaleoffset",
	.size = H5_FSIZE_BOUND,
	.decode = dec_scaleoffset,
	.encode = enc_scaleoffset,
};
