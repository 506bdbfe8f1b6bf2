/* fillval.c - the Fill Value messages: the old one (IV.A.2.e, type 0x0004)
 * and the current one (IV.A.2.f, type 0x0005, versions 1-3). */
#include "base.h"
#include "rd.h"
#include "ohdr.h"
#include "fillval.h"

/* Version 3 flag bits (IV.A.2.f, "Flags"). */
#define FILL_V3_ALLOC_MASK 0x03
#define FILL_V3_TIME_SHIFT 2
#define FILL_V3_TIME_MASK 0x03
#define FILL_V3_UNDEFINED 0x10
#define FILL_V3_DEFINED 0x20
#define FILL_V3_RESERVED 0xc0

/* libhdf5's defaults for datasets that only carry the old message. */
#define FILL_ALLOC_LATE 2
#define FILL_TIME_IFSET 2

void h5_fill_clear(h5_fill *fv)
{
	free(fv->value);
	memset(fv, 0, sizeof(*fv));
}

/* Copy `size` value bytes at the cursor. */
static int read_value(h5_fill *out, h5_rd *r, uint64_t size)
{
	const uint8_t *p;

	if (size > h5_rd_left(r))
		return h5_err_set(H5_ERR_FORMAT, "fill value message: value of %llu bytes, only %zu left",
				  (unsigned long long)size, h5_rd_left(r));
	if (size == 0)
		return 0;
	p = h5_rd_bytes(r, (size_t)size);
	out->value = malloc((size_t)size);
	if (!out->value)
		return h5_err_set(H5_ERR_NOMEM, "fill value message: out of memory");
	memcpy(out->value, p, (size_t)size);
	out->size = (size_t)size;
	out->defined = true;
	return 0;
}

int h5_fill_decode(h5_fill *out, uint16_t type, const uint8_t *buf, size_t len)
{
	h5_rd r;
	uint8_t defined, flags;
	uint32_t size;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	h5_rd_init(&r, buf, len);
	if (type == H5_MSG_FILL_OLD) {
		out->alloc_time = FILL_ALLOC_LATE;
		out->fill_time = FILL_TIME_IFSET;
		size = h5_rd_u32(&r);
		if (!h5_rd_ok(&r)) {
			ret = h5_err_set(H5_ERR_FORMAT, "old fill value message: truncated");
			goto out;
		}
		ret = read_value(out, &r, size);
		goto out;
	}
	if (type != H5_MSG_FILL) {
		ret = h5_err_set(H5_ERR_INVAL, "fill value: message type 0x%x is not a fill value", type);
		goto out;
	}
	out->version = h5_rd_u8(&r);
	if (!h5_rd_ok(&r) || out->version < 1 || out->version > 3) {
		ret = h5_err_set(H5_ERR_FORMAT, "fill value message: bad version %u", out->version);
		goto out;
	}
	if (out->version < 3) {
		out->alloc_time = h5_rd_u8(&r);
		out->fill_time = h5_rd_u8(&r);
		defined = h5_rd_u8(&r);
		if (!h5_rd_ok(&r)) {
			ret = h5_err_set(H5_ERR_FORMAT, "fill value message: truncated");
			goto out;
		}
		/* v1 always stores the size; v2 only when a value is defined. */
		if (out->version == 1 || defined) {
			size = h5_rd_u32(&r);
			if (!h5_rd_ok(&r)) {
				ret = h5_err_set(H5_ERR_FORMAT, "fill value message: truncated size");
				goto out;
			}
			/* libhdf5 reads the size as signed: -1 is "undefined". */
			if (size != UINT32_MAX)
				ret = read_value(out, &r, size);
		}
		goto out;
	}
	flags = h5_rd_u8(&r);
	if (!h5_rd_ok(&r)) {
		ret = h5_err_set(H5_ERR_FORMAT, "fill value message: truncated");
		goto out;
	}
	if ((flags & FILL_V3_RESERVED) ||
	    (flags & (FILL_V3_UNDEFINED | FILL_V3_DEFINED)) == (FILL_V3_UNDEFINED | FILL_V3_DEFINED)) {
		ret = h5_err_set(H5_ERR_FORMAT, "fill value message: bad flags 0x%02x", flags);
		goto out;
	}
	out->alloc_time = flags & FILL_V3_ALLOC_MASK;
	out->fill_time = (flags >> FILL_V3_TIME_SHIFT) & FILL_V3_TIME_MASK;
	if (flags & FILL_V3_DEFINED) {
		size = h5_rd_u32(&r);
		if (!h5_rd_ok(&r)) {
			ret = h5_err_set(H5_ERR_FORMAT, "fill value message: truncated size");
			goto out;
		}
		ret = read_value(out, &r, size);
	}
out:
	if (ret < 0)
		h5_fill_clear(out);
	return ret;
}

/* One element of fill: the stored value, or NULL meaning zeros when the
 * value is undefined, the library default or all zero (IV.A.2.e, IV.A.2.f).
 * Zeros need no buffer, so a huge element type (an array of 16M doubles)
 * with default fill costs nothing; a stored value is bounded by the file. */
int h5_fill_elem(uint8_t **out, const h5_fill *fv, uint32_t esize)
{
	size_t i;

	*out = NULL;
	if (!fv->defined || fv->size == 0 || !fv->value)
		return 0;
	if (fv->size != esize)
		return h5_err_set(H5_ERR_FORMAT, "fill value is %zu bytes but the datatype is %u bytes",
				  fv->size, (unsigned)esize);
	for (i = 0; i < esize && fv->value[i] == 0; i++)
		;
	if (i == esize)
		return 0;
	*out = malloc(esize);
	if (!*out)
		return h5_err_set(H5_ERR_NOMEM, "out of memory for a %u-byte fill value", (unsigned)esize);
	memcpy(*out, fv->value, esize);
	return 0;
}
