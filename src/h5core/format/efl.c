/* efl.c - the External Data Files message (IV.A.2.h "The Data Storage -
 * External Data Files Message", version 1). */
#include "base.h"
#include "rd.h"
#include "efl.h"

void h5_efl_clear(h5_efl *e)
{
	free(e->e);
	memset(e, 0, sizeof(*e));
}

int h5_efl_decode(h5_efl *out, const h5_fmt *fmt, const uint8_t *buf, size_t len)
{
	h5_rd r;
	uint8_t version;
	uint16_t nalloc, nused;
	size_t slot = 3 * (size_t)fmt->sizeof_size;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	if (slot == 0)
		return h5_err_set(H5_ERR_INVAL, "external file list message: sizeof_size is 0");
	h5_rd_init(&r, buf, len);
	version = h5_rd_u8(&r);
	h5_rd_skip(&r, 3); /* reserved */
	nalloc = h5_rd_u16(&r);
	nused = h5_rd_u16(&r);
	out->heap_addr = h5_rd_addr(&r, fmt);
	if (!h5_rd_ok(&r)) {
		ret = h5_err_set(H5_ERR_FORMAT, "external file list message: truncated");
		goto out;
	}
	if (version != 1) {
		ret = h5_err_set(H5_ERR_FORMAT, "external file list message: bad version %u", version);
		goto out;
	}
	if (nused > nalloc) {
		ret = h5_err_set(H5_ERR_FORMAT, "external file list message: %u slots used of %u allocated",
				 nused, nalloc);
		goto out;
	}
	if (!h5_addr_defined(out->heap_addr)) {
		ret = h5_err_set(H5_ERR_FORMAT, "external file list message: undefined name heap address");
		goto out;
	}
	/* Only the used slots are read; the rest may be absent. */
	if (nused > h5_rd_left(&r) / slot) {
		ret = h5_err_set(H5_ERR_FORMAT, "external file list message: %u slots in %zu bytes", nused,
				 h5_rd_left(&r));
		goto out;
	}
	if (nused == 0)
		goto out;
	out->e = calloc(nused, sizeof(*out->e));
	if (!out->e) {
		ret = h5_err_set(H5_ERR_NOMEM, "external file list message: out of memory");
		goto out;
	}
	out->n = nused;
	for (size_t i = 0; i < nused; i++) {
		out->e[i].name_off = h5_rd_size(&r, fmt);
		out->e[i].offset = h5_rd_size(&r, fmt);
		/* all-ones is H5F_UNLIMITED: h5_rd_size() maps it to H5_UNLIMITED */
		out->e[i].size = h5_rd_size(&r, fmt);
	}
	if (!h5_rd_ok(&r))
		ret = h5_err_set(H5_ERR_FORMAT, "external file list message: slots truncated");
out:
	if (ret < 0)
		h5_efl_clear(out);
	return ret;
}
