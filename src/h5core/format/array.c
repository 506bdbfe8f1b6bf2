/* array.c - the chunk records in the data block elements of the fixed and
 * extensible arrays (VII.C/VII.D "Data Block Element"), below both arrays
 * and the chunk indexes that use them. */
#include "array.h"
#include "base.h"
#include "rd.h"
#include "chunk_rec.h"

unsigned h5_chunk_size_len(uint64_t chunk_bytes)
{
	unsigned l2 = chunk_bytes ? 63u - (unsigned)__builtin_clzll(chunk_bytes) : 0;
	unsigned n = 1 + (l2 + 8) / 8;

	return n > 8 ? 8 : n;
}

unsigned h5_chunk_size_len_v(const h5_fmt *fmt, unsigned layout_version, uint64_t chunk_bytes)
{
	return layout_version >= 5 ? fmt->sizeof_size : h5_chunk_size_len(chunk_bytes);
}

int h5_chunk_elmt_size_ok(const h5_fmt *fmt, unsigned layout_version, bool filtered, uint64_t chunk_bytes,
			  unsigned elmt_size)
{
	unsigned want = fmt->sizeof_addr + (filtered ? h5_chunk_size_len_v(fmt, layout_version, chunk_bytes) + 4 : 0);

	if (elmt_size == want)
		return 0;
	if (layout_version >= 5 && filtered && elmt_size >= fmt->sizeof_addr + 1u + 4u &&
	    elmt_size <= fmt->sizeof_addr + 8u + 4u)
		return 0;
	return h5_err_set(H5_ERR_FORMAT, "index entries of %u bytes, expected %u (layout version %u, %s chunks)",
			  elmt_size, want, layout_version, filtered ? "filtered" : "unfiltered");
}

int h5_chunk_elmt_check(const h5_fmt *fmt, unsigned client, unsigned elmt_size)
{
	if (client == H5_ARR_CLIENT_CHUNK && elmt_size == fmt->sizeof_addr)
		return 0;
	if (client == H5_ARR_CLIENT_FILT_CHUNK && elmt_size >= fmt->sizeof_addr + 1u + 4u &&
	    elmt_size <= fmt->sizeof_addr + 8u + 4u)
		return 0;
	if (client > H5_ARR_CLIENT_FILT_CHUNK)
		return h5_err_set(H5_ERR_FORMAT, "unknown array client id %u", client);
	return h5_err_set(H5_ERR_FORMAT, "element size %u is impossible for %s chunks", elmt_size,
			  client ? "filtered" : "unfiltered");
}

void h5_chunk_elmt_decode(h5_chunk_rec *out, const h5_fmt *fmt, unsigned client, unsigned elmt_size,
			  const uint8_t *p)
{
	unsigned sa = fmt->sizeof_addr;
	uint64_t a = h5_le_decode(p, sa);

	out->addr = a == (sa >= 8 ? UINT64_MAX : (UINT64_C(1) << (8 * sa)) - 1) ? H5_ADDR_UNDEF : a;
	out->size = 0;
	out->filter_mask = 0;
	if (client == H5_ARR_CLIENT_FILT_CHUNK) {
		out->size = h5_le_decode(p + sa, elmt_size - sa - 4);
		out->filter_mask = (uint32_t)h5_le_decode(p + elmt_size - 4, 4);
	}
}

void h5_chunk_elmt_encode(uint8_t *p, const h5_fmt *fmt, unsigned client, unsigned elmt_size,
			  const h5_chunk_rec *rec)
{
	unsigned sa = fmt->sizeof_addr;

	h5_le_encode(p, rec->addr, sa); /* UNDEF encodes as all ones */
	if (client == H5_ARR_CLIENT_FILT_CHUNK) {
		h5_le_encode(p + sa, rec->size, elmt_size - sa - 4);
		h5_le_encode(p + elmt_size - 4, rec->filter_mask, 4);
	}
}

