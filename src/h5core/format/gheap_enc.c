/*
 * gheap_enc.c - encoding a global heap collection (III.E), the mirror of
 * gheap.c's reader: "GCOL", version 1, the collection size; objects 1..n
 * (index, reference count 0 as libhdf5 writes for variable-length data,
 * reserved, size, data padded to 8 bytes); then the free space as object
 * 0, whose size counts its own header. At least 4096 bytes, as libhdf5
 * makes them (H5HG_MINSIZE: its reader loads that much first).
 */
#include "base.h"
#include "rd.h"
#include "gheap.h"

#define GCOL_MIN 4096

uint64_t h5_gheap_size(const h5_fmt *fmt, const size_t *lens, size_t n)
{
	uint64_t ohdr = 8 + fmt->sizeof_size, need = 8 + fmt->sizeof_size + ohdr;

	for (size_t i = 0; i < n; i++)
		need += ohdr + h5_align8(lens[i]);
	if (need < GCOL_MIN)
		need = GCOL_MIN;
	return h5_align8(need);
}

int h5_gheap_encode(uint8_t **out, size_t *len, const h5_fmt *fmt, const uint8_t *const *objs,
		    const size_t *lens, size_t n)
{
	size_t hdr = 8 + fmt->sizeof_size, ohdr = 8 + fmt->sizeof_size, need, p;
	uint64_t want = h5_gheap_size(fmt, lens, n);
	uint8_t *b;

	*out = NULL;
	if (n > 65535)
		return h5_err_set(H5_ERR_LIMIT, "%zu objects do not fit one global heap collection", n);
	if (want > SIZE_MAX)
		return h5_err_set(H5_ERR_LIMIT, "a global heap collection of %llu bytes", (unsigned long long)want);
	need = (size_t)want;
	b = calloc(1, need);
	if (!b)
		return h5_err_set(H5_ERR_NOMEM, "out of memory encoding a global heap collection");
	memcpy(b, "GCOL", 4);
	b[4] = 1;
	h5_le_encode(b + 8, need, fmt->sizeof_size);
	p = hdr;
	for (size_t i = 0; i < n; i++) {
		h5_le_encode(b + p, i + 1, 2);
		h5_le_encode(b + p + 8, lens[i], fmt->sizeof_size);
		if (lens[i])
			memcpy(b + p + ohdr, objs[i], lens[i]);
		p += ohdr + (size_t)h5_align8(lens[i]);
	}
	h5_le_encode(b + p + 8, need - p, fmt->sizeof_size);
	*out = b;
	*len = need;
	return 0;
}
