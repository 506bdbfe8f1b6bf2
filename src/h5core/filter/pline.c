/* pline.c - the Filter Pipeline message (IV.A.2.l "The Data Storage -
 * Filter Pipeline Message", versions 1 and 2). */
#include "base.h"
#include "rd.h"
#include "pline.h"

/* The spec caps a pipeline at 32 filters (H5Z_MAX_NFILTERS). */
#define PLINE_MAX_FILTERS 32
/* Filter ids below this are the library's own: v2 stores no name for them. */
#define PLINE_FILTER_RESERVED 256

void h5_pline_clear(h5_pline *p)
{
	for (size_t i = 0; i < p->n && p->filters; i++) {
		free(p->filters[i].name);
		free(p->filters[i].cd);
	}
	free(p->filters);
	memset(p, 0, sizeof(*p));
}

static int decode_filter(h5_filter *f, h5_rd *r, uint8_t version, size_t idx)
{
	uint16_t name_len = 0;
	const uint8_t *name;
	size_t n;

	f->id = h5_rd_u16(r);
	if (version == 1 || f->id >= PLINE_FILTER_RESERVED)
		name_len = h5_rd_u16(r);
	f->flags = h5_rd_u16(r);
	f->ncd = h5_rd_u16(r);
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "filter pipeline message: filter %zu truncated", idx);
	if (version == 1 && name_len % 8 != 0)
		return h5_err_set(H5_ERR_FORMAT,
				  "filter pipeline message: filter %zu name length %u not a multiple of 8",
				  idx, name_len);
	if (name_len > 0) {
		name = h5_rd_bytes(r, name_len);
		if (!name)
			return h5_err_set(H5_ERR_FORMAT, "filter pipeline message: filter %zu name truncated", idx);
		/* The stored length includes the NUL (and v1 padding); keep what
		 * precedes the first NUL, tolerating a name that fills the field. */
		n = strnlen((const char *)name, name_len);
		f->name = malloc(n + 1);
		if (!f->name)
			return h5_err_set(H5_ERR_NOMEM, "filter pipeline message: out of memory");
		memcpy(f->name, name, n);
		f->name[n] = '\0';
	}
	if (f->ncd > h5_rd_left(r) / 4)
		return h5_err_set(H5_ERR_FORMAT,
				  "filter pipeline message: filter %zu claims %zu client values in %zu bytes",
				  idx, f->ncd, h5_rd_left(r));
	if (f->ncd > 0) {
		f->cd = malloc(f->ncd * sizeof(*f->cd));
		if (!f->cd)
			return h5_err_set(H5_ERR_NOMEM, "filter pipeline message: out of memory");
		for (size_t j = 0; j < f->ncd; j++)
			f->cd[j] = h5_rd_u32(r);
	}
	/* Version 1 pads the client data to an even number of values. */
	if (version == 1 && (f->ncd & 1))
		h5_rd_skip(r, 4);
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "filter pipeline message: filter %zu padding truncated", idx);
	return 0;
}

int h5_pline_decode(h5_pline *out, const uint8_t *buf, size_t len)
{
	h5_rd r;
	uint8_t n;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	h5_rd_init(&r, buf, len);
	out->version = h5_rd_u8(&r);
	n = h5_rd_u8(&r);
	if (!h5_rd_ok(&r)) {
		ret = h5_err_set(H5_ERR_FORMAT, "filter pipeline message: truncated");
		goto out;
	}
	if (out->version != 1 && out->version != 2) {
		ret = h5_err_set(H5_ERR_FORMAT, "filter pipeline message: bad version %u", out->version);
		goto out;
	}
	if (out->version == 1)
		h5_rd_skip(&r, 6); /* reserved */
	if (n > PLINE_MAX_FILTERS) {
		ret = h5_err_set(H5_ERR_FORMAT, "filter pipeline message: %u filters (max %d)", n,
				 PLINE_MAX_FILTERS);
		goto out;
	}
	/* A filter description takes at least 6 bytes (v2, library filter). */
	if (!h5_rd_ok(&r) || n > h5_rd_left(&r) / 6) {
		ret = h5_err_set(H5_ERR_FORMAT, "filter pipeline message: %u filters in %zu bytes", n,
				 h5_rd_left(&r));
		goto out;
	}
	if (n == 0)
		goto out;
	out->filters = calloc(n, sizeof(*out->filters));
	if (!out->filters) {
		ret = h5_err_set(H5_ERR_NOMEM, "filter pipeline message: out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		out->n = i + 1; /* so h5_pline_clear() frees a partial filter */
		ret = decode_filter(&out->filters[i], &r, out->version, i);
		if (ret < 0)
			goto out;
	}
out:
	if (ret < 0)
		h5_pline_clear(out);
	return ret;
}
