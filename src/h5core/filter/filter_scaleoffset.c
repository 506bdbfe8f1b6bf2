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

const h5_filter_class h5_filter_scaleoffset = {
	.id = H5_FILTER_SCALEOFFSET,
	.name = "scaleoffset",
	.size = H5_FSIZE_BOUND,
	.decode = dec_scaleoffset,
};
