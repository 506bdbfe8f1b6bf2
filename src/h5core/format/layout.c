/* layout.c - the Data Layout message (IV.A.2.i "The Data Layout Message",
 * versions 1-5; 5 is encoded exactly like 4). */
#include "base.h"
#include "rd.h"
#include "ohdr.h"
#include "layout.h"

/* Chunk "dimensionality" counts the dataset rank plus one trailing
 * dimension holding the element size, in every version of the message
 * (libhdf5 keeps u.chunk.ndims = rank + 1 and writes it as is). */
#define LAYOUT_MAX_NDIMS (H5_MAX_RANK + 1)
#define LAYOUT_V4_FLAGS_ALL (H5_LAYOUT_FLAG_NO_FILTER_EDGE | H5_LAYOUT_FLAG_SINGLE_FILTERED)

void h5_layout_clear(h5_layout *l)
{
	free(l->compact);
	memset(l, 0, sizeof(*l));
}

static int copy_compact(h5_layout *out, h5_rd *r, size_t size)
{
	const uint8_t *p = h5_rd_bytes(r, size);

	if (!p)
		return h5_err_set(H5_ERR_FORMAT, "layout message: compact data of %zu bytes truncated", size);
	out->compact_size = size;
	if (size == 0)
		return 0;
	out->compact = malloc(size);
	if (!out->compact)
		return h5_err_set(H5_ERR_NOMEM, "layout message: out of memory");
	memcpy(out->compact, p, size);
	return 0;
}

/* Split the stored chunk dimensions (rank + 1 of them) into chunk[] and the
 * trailing element size, and check them. */
static int set_chunk_dims(h5_layout *out, unsigned stored, const uint64_t *dims)
{
	unsigned i;

	if (stored < 2 || stored > LAYOUT_MAX_NDIMS)
		return h5_err_set(H5_ERR_FORMAT, "layout message: chunk dimensionality %u out of range", stored);
	out->ndims = stored - 1;
	for (i = 0; i < out->ndims; i++) {
		if (dims[i] == 0)
			return h5_err_set(H5_ERR_FORMAT, "layout message: chunk dimension %u is 0", i);
		out->chunk[i] = dims[i];
	}
	if (dims[out->ndims] == 0 || dims[out->ndims] > UINT32_MAX)
		return h5_err_set(H5_ERR_FORMAT, "layout message: chunk element size %llu out of range",
				  (unsigned long long)dims[out->ndims]);
	out->chunk_elem_size = (uint32_t)dims[out->ndims];
	return 0;
}

/* Versions 1 and 2: one layout for all classes, 4-byte dimensions. */
static int decode_v1(h5_layout *out, const h5_fmt *fmt, h5_rd *r)
{
	unsigned ndims = h5_rd_u8(r), i;
	uint64_t dims[LAYOUT_MAX_NDIMS];
	uint64_t prod = 1;
	uint32_t csize;

	out->cls = h5_rd_u8(r);
	h5_rd_skip(r, 5); /* reserved */
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "layout message: truncated");
	if (ndims == 0 || ndims > LAYOUT_MAX_NDIMS)
		return h5_err_set(H5_ERR_FORMAT, "layout message: dimensionality %u out of range", ndims);
	if (out->cls > H5_LAYOUT_CHUNKED)
		return h5_err_set(H5_ERR_FORMAT, "layout message v%u: bad class %u", out->version, out->cls);
	out->addr = out->cls == H5_LAYOUT_COMPACT ? H5_ADDR_UNDEF : h5_rd_addr(r, fmt);
	for (i = 0; i < ndims; i++)
		dims[i] = h5_rd_u32(r);
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "layout message: dimensions truncated");
	switch (out->cls) {
	case H5_LAYOUT_CHUNKED:
		out->idx_type = H5_CIDX_BTREE1;
		out->idx_addr = out->addr;
		out->addr = H5_ADDR_UNDEF;
		return set_chunk_dims(out, ndims, dims);
	case H5_LAYOUT_CONTIGUOUS:
		/* No size is stored: the dimensions (the last one being the element
		 * size) give it. libhdf5 recomputes it from the dataspace because
		 * old writers could truncate dims to 32 bits; dataset.c should too. */
		for (i = 0; i < ndims; i++)
			if (h5_mul_overflow(prod, dims[i], &prod))
				return h5_err_set(H5_ERR_FORMAT, "layout message: contiguous size overflows");
		out->size = prod;
		return 0;
	default:
		csize = h5_rd_u32(r);
		if (!h5_rd_ok(r))
			return h5_err_set(H5_ERR_FORMAT, "layout message: compact size truncated");
		return copy_compact(out, r, csize);
	}
}

/* Version 4 chunked properties (index type and its parameters). */
static int decode_v4_chunked(h5_layout *out, const h5_fmt *fmt, h5_rd *r)
{
	uint64_t dims[LAYOUT_MAX_NDIMS];
	unsigned ndims, i;
	int ret;

	out->flags = h5_rd_u8(r);
	ndims = h5_rd_u8(r);
	out->dim_enc_size = h5_rd_u8(r);
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "layout message: chunked properties truncated");
	if (out->flags & ~LAYOUT_V4_FLAGS_ALL)
		return h5_err_set(H5_ERR_FORMAT, "layout message: unknown chunk flags 0x%02x", out->flags);
	if (ndims < 2 || ndims > LAYOUT_MAX_NDIMS)
		return h5_err_set(H5_ERR_FORMAT, "layout message: chunk dimensionality %u out of range", ndims);
	if (out->dim_enc_size < 1 || out->dim_enc_size > 8)
		return h5_err_set(H5_ERR_FORMAT, "layout message: chunk dimension size %u bytes",
				  out->dim_enc_size);
	for (i = 0; i < ndims; i++)
		dims[i] = h5_rd_uint(r, out->dim_enc_size);
	out->idx_type = h5_rd_u8(r);
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "layout message: chunk dimensions truncated");
	ret = set_chunk_dims(out, ndims, dims);
	if (ret < 0)
		return ret;
	switch (out->idx_type) {
	case H5_CIDX_SINGLE:
		if (out->flags & H5_LAYOUT_FLAG_SINGLE_FILTERED) {
			out->single_size = h5_rd_size(r, fmt);
			out->single_mask = h5_rd_u32(r);
		}
		break;
	case H5_CIDX_IMPLICIT:
		break;
	case H5_CIDX_FARRAY:
		out->fa_page_bits = h5_rd_u8(r);
		if (h5_rd_ok(r) && out->fa_page_bits == 0)
			return h5_err_set(H5_ERR_FORMAT, "layout message: fixed array page bits 0");
		break;
	case H5_CIDX_EARRAY:
		out->ea_max_bits = h5_rd_u8(r);
		out->ea_idx_elmts = h5_rd_u8(r);
		out->ea_min_ptrs = h5_rd_u8(r);
		out->ea_min_elmts = h5_rd_u8(r);
		out->ea_page_bits = h5_rd_u8(r);
		if (h5_rd_ok(r) && (!out->ea_max_bits || !out->ea_idx_elmts || !out->ea_min_ptrs ||
				    !out->ea_min_elmts || !out->ea_page_bits))
			return h5_err_set(H5_ERR_FORMAT, "layout message: zero extensible array parameter");
		break;
	case H5_CIDX_BTREE2:
		out->bt2_node_size = h5_rd_u32(r);
		out->bt2_split = h5_rd_u8(r);
		out->bt2_merge = h5_rd_u8(r);
		if (h5_rd_ok(r) && (!out->bt2_node_size || !out->bt2_split || !out->bt2_merge))
			return h5_err_set(H5_ERR_FORMAT, "layout message: zero v2 B-tree parameter");
		break;
	default:
		/* 0 (v1 B-tree) is never written in a v4 message. */
		return h5_err_set(H5_ERR_FORMAT, "layout message: bad chunk index type %u", out->idx_type);
	}
	out->idx_addr = h5_rd_addr(r, fmt);
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "layout message: chunk index information truncated");
	return 0;
}

/* Versions 3-5: properties specific to each class. */
static int decode_v3(h5_layout *out, const h5_fmt *fmt, h5_rd *r)
{
	uint64_t dims[LAYOUT_MAX_NDIMS];
	unsigned ndims, i;
	uint16_t csize;

	out->cls = h5_rd_u8(r);
	if (!h5_rd_ok(r))
		return h5_err_set(H5_ERR_FORMAT, "layout message: truncated");
	out->addr = H5_ADDR_UNDEF;
	out->idx_addr = H5_ADDR_UNDEF;
	switch (out->cls) {
	case H5_LAYOUT_COMPACT:
		csize = h5_rd_u16(r);
		if (!h5_rd_ok(r))
			return h5_err_set(H5_ERR_FORMAT, "layout message: compact size truncated");
		return copy_compact(out, r, csize);
	case H5_LAYOUT_CONTIGUOUS:
		out->addr = h5_rd_addr(r, fmt);
		out->size = h5_rd_size(r, fmt);
		if (!h5_rd_ok(r))
			return h5_err_set(H5_ERR_FORMAT, "layout message: contiguous properties truncated");
		return 0;
	case H5_LAYOUT_CHUNKED:
		if (out->version >= 4)
			return decode_v4_chunked(out, fmt, r);
		ndims = h5_rd_u8(r);
		out->idx_type = H5_CIDX_BTREE1;
		out->idx_addr = h5_rd_addr(r, fmt);
		if (!h5_rd_ok(r))
			return h5_err_set(H5_ERR_FORMAT, "layout message: chunked properties truncated");
		if (ndims < 2 || ndims > LAYOUT_MAX_NDIMS)
			return h5_err_set(H5_ERR_FORMAT, "layout message: chunk dimensionality %u out of range",
					  ndims);
		for (i = 0; i < ndims; i++)
			dims[i] = h5_rd_u32(r);
		if (!h5_rd_ok(r))
			return h5_err_set(H5_ERR_FORMAT, "layout message: chunk dimensions truncated");
		return set_chunk_dims(out, ndims, dims);
	case H5_LAYOUT_VIRTUAL:
		if (out->version < 4)
			return h5_err_set(H5_ERR_FORMAT, "layout message v%u: virtual class needs version 4",
					  out->version);
		/* The mapping lives in the global heap (III.F); we only note where.
		 * dataset.c refuses virtual datasets. */
		out->vds_heap_addr = h5_rd_addr(r, fmt);
		out->vds_heap_index = h5_rd_u32(r);
		if (!h5_rd_ok(r))
			return h5_err_set(H5_ERR_FORMAT, "layout message: virtual properties truncated");
		return 0;
	default:
		return h5_err_set(H5_ERR_FORMAT, "layout message v%u: bad class %u", out->version, out->cls);
	}
}

int h5_layout_decode(h5_layout *out, const h5_fmt *fmt, const uint8_t *buf, size_t len)
{
	h5_rd r;
	int ret;

	memset(out, 0, sizeof(*out));
	h5_rd_init(&r, buf, len);
	out->version = h5_rd_u8(&r);
	if (!h5_rd_ok(&r)) {
		ret = h5_err_set(H5_ERR_FORMAT, "layout message: empty");
		goto out;
	}
	if (out->version == 1 || out->version == 2)
		ret = decode_v1(out, fmt, &r);
	else if (out->version >= 3 && out->version <= 5)
		ret = decode_v3(out, fmt, &r);
	else
		ret = h5_err_set(H5_ERR_FORMAT, "layout message: bad version %u", out->version);
out:
	if (ret < 0)
		h5_layout_clear(out);
	return ret;
}

/* Names for users (xattrs user.h5.layout/index, h5fs-ls): one vocabulary;
 * an index's name is its table entry's (dataset/cidx.c,
 * h5_layout_index_name). */
const char *h5_layout_class_name(unsigned cls)
{
	switch (cls) {
	case H5_LAYOUT_COMPACT: return "compact";
	case H5_LAYOUT_CONTIGUOUS: return "contiguous";
	case H5_LAYOUT_CHUNKED: return "chunked";
	case H5_LAYOUT_VIRTUAL: return "virtual";
	default: return "unknown";
	}
}

/* Where a version 4 layout message stores the index address (IV.A.2.i:
 * version, class, flags, dimensionality, dimension size encoding, the
 * dimensions - rank + 1 of them, the last being the element size - index
 * type, the index's parameters - 1 byte for a fixed array, 5 for an
 * extensible array, 6 for a v2 B-tree - then the address). */
static int v4_idx_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt, unsigned type, unsigned nparam,
			     const char *what)
{
	uint64_t off;

	/* version 5 lays the chunked properties out as version 4 does */
	if (lay->size < 5 || (lay->data[0] != 4 && lay->data[0] != 5) || lay->data[1] != H5_LAYOUT_CHUNKED)
		return h5_err_set(H5_ERR_FORMAT, "layout message at 0x%llx: not a v4/v5 chunked layout",
				  (unsigned long long)lay->addr);
	off = 5 + (uint64_t)lay->data[3] * lay->data[4];
	if (lay->size < off + 1 + nparam + fmt->sizeof_addr || lay->data[off] != type)
		return h5_err_set(H5_ERR_FORMAT, "layout message at 0x%llx: no %s index field",
				  (unsigned long long)lay->addr, what);
	*addr = lay->addr + off + 1 + nparam;
	return 0;
}

int h5_layout_ea_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt)
{
	return v4_idx_addr_field(addr, lay, fmt, H5_CIDX_EARRAY, 5, "extensible array");
}

/* Single chunk: filtered (flags bit 1), the size and mask come first. */
int h5_layout_single_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt)
{
	unsigned nparam = lay->size > 2 && (lay->data[2] & H5_LAYOUT_FLAG_SINGLE_FILTERED) ? fmt->sizeof_size + 4u : 0;

	return v4_idx_addr_field(addr, lay, fmt, H5_CIDX_SINGLE, nparam, "single chunk");
}

int h5_layout_fa_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt)
{
	return v4_idx_addr_field(addr, lay, fmt, H5_CIDX_FARRAY, 1, "fixed array");
}

int h5_layout_bt2_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt)
{
	return v4_idx_addr_field(addr, lay, fmt, H5_CIDX_BTREE2, 6, "v2 B-tree");
}

/* Where a layout v1-v3 chunked message holds its v1 B-tree address
 * (spec IV.A.2.i "Data Layout Message": v3 version, class,
 * dimensionality, address; v1/v2 version, dimensionality, class, 5
 * reserved bytes, address). */
int h5_layout_bt1_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt)
{
	uint64_t off;

	if (lay->size < 3)
		return h5_err_set(H5_ERR_FORMAT, "layout message at 0x%llx: truncated", (unsigned long long)lay->addr);
	if (lay->data[0] == 3 && lay->data[1] == H5_LAYOUT_CHUNKED)
		off = 3;
	else if ((lay->data[0] == 1 || lay->data[0] == 2) && lay->data[2] == H5_LAYOUT_CHUNKED)
		off = 8;
	else
		return h5_err_set(H5_ERR_FORMAT, "layout message at 0x%llx: not a v1-v3 chunked layout",
				  (unsigned long long)lay->addr);
	if (lay->size < off + fmt->sizeof_addr)
		return h5_err_set(H5_ERR_FORMAT, "layout message at 0x%llx: truncated", (unsigned long long)lay->addr);
	*addr = lay->addr + off;
	return 0;
}
