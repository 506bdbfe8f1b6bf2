/*
 * attr_enc.c - encoding the attribute message (IV.A.2.m), the mirror of
 * h5_attr_hdr_decode (attr.c): versions 1 (every field padded to 8 bytes),
 * 2 and 3 (packed; 3 adds the name's character set).
 */
#include "base.h"
#include "rd.h"
#include "attr.h"

int h5_attr_encode(uint8_t **out, size_t *len, const h5_attr_hdr *h, const uint8_t *data, size_t data_len)
{
	bool v1 = h->version == 1;
	size_t fixed = h->version == 3 ? 9 : 8;
	size_t nsz = v1 ? (size_t)h5_align8(h->name_size) : h->name_size;
	size_t tsz = v1 ? (size_t)h5_align8(h->dt_size) : h->dt_size;
	size_t ssz = v1 ? (size_t)h5_align8(h->ds_size) : h->ds_size;
	size_t n = fixed + nsz + tsz + ssz + data_len;
	uint8_t *p;

	*out = NULL;
	if (h->version < 1 || h->version > 3)
		return h5_err_set(H5_ERR_INVAL, "attribute message: cannot encode version %u", h->version);
	if (h->name_size > 65535 || h->dt_size > 65535 || h->ds_size > 65535 || h->name_size == 0 ||
	    h->name[h->name_size - 1] != '\0')
		return h5_err_set(H5_ERR_INVAL, "attribute message: a field is too long, or the name has no NUL");
	p = calloc(1, n);
	if (!p)
		return h5_err_set(H5_ERR_NOMEM, "out of memory encoding an attribute");
	p[0] = h->version;
	p[1] = v1 ? 0 : h->flags;
	h5_le_encode(p + 2, h->name_size, 2);
	h5_le_encode(p + 4, h->dt_size, 2);
	h5_le_encode(p + 6, h->ds_size, 2);
	if (h->version == 3)
		p[8] = h->cset;
	memcpy(p + fixed, h->name, h->name_size);
	memcpy(p + fixed + nsz, h->dt, h->dt_size);
	memcpy(p + fixed + nsz + tsz, h->ds, h->ds_size);
	if (data_len)
		memcpy(p + fixed + nsz + tsz + ssz, data, data_len);
	*out = p;
	*len = n;
	return 0;
}
