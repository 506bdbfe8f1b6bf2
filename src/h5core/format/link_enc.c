/*
 * link_enc.c - encoding the link message (IV.A.2.g), the mirror of
 * h5_link_decode (link.c): version 1; flags say the size of the name's
 * length field, and whether the link type (hard links leave it out), the
 * creation order and the character set (ASCII leaves it out) follow.
 */
#include "base.h"
#include "rd.h"
#include "linkmsg.h"

int h5_link_encode(uint8_t **out, size_t *len, const h5_fmt *fmt, const h5_link *l)
{
	size_t tlen = l->type == H5_LINK_SOFT ? strlen(l->target) : 0;
	unsigned nsz = l->name_len < 256 ? 1 : l->name_len < 65536 ? 2 : 4;
	uint8_t flags = (uint8_t)(nsz == 1 ? 0 : nsz == 2 ? 1 : 2);
	size_t n = 2, p;
	uint8_t *b;

	*out = NULL;
	if (l->type != H5_LINK_HARD && l->type != H5_LINK_SOFT)
		return h5_err_set(H5_ERR_UNSUPPORTED, "only hard and soft links are written");
	if (l->name_len == 0 || tlen > 65535)
		return h5_err_set(H5_ERR_INVAL, "link: empty name, or a soft link target over 64 KiB");
	if (l->type != H5_LINK_HARD)
		flags |= 0x08, n++;
	if (l->has_corder)
		flags |= 0x04, n += 8;
	if (l->cset)
		flags |= 0x10, n++;
	n += nsz + l->name_len + (l->type == H5_LINK_HARD ? fmt->sizeof_addr : 2 + tlen);
	b = calloc(1, n);
	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory encoding a link");
	b[0] = 1;
	b[1] = flags;
	p = 2;
	if (flags & 0x08)
		b[p++] = (uint8_t)l->type;
	if (flags & 0x04) {
		h5_le_encode(b + p, (uint64_t)l->corder, 8);
		p += 8;
	}
	if (flags & 0x10)
		b[p++] = l->cset;
	h5_le_encode(b + p, l->name_len, nsz);
	p += nsz;
	memcpy(b + p, l->name, l->name_len);
	p += l->name_len;
	if (l->type == H5_LINK_HARD) {
		h5_le_encode(b + p, l->addr, fmt->sizeof_addr);
	} else {
		h5_le_encode(b + p, tlen, 2);
		memcpy(b + p + 2, l->target, tlen);
	}
	*out = b;
	*len = n;
	return 0;
}
