/*
 * dset_enc.c - the messages of a new dataset's object header, byte for
 * byte as h5py (libhdf5, default file format) writes them (dset_enc.h):
 * dataspace (IV.A.2.b, version 1, maximum dimensions always present),
 * datatype (IV.A.2.d, version 1: integers, IEEE floats, h5py's bool enum
 * and complex compound), fill value (IV.A.2.f, version 2: the library
 * default, allocation late or incremental), filter pipeline (IV.A.2.l,
 * version 1: deflate, shuffle, fletcher32 as h5py's compression=,
 * shuffle=, fletcher32= make them) and data layout (IV.A.2.i, version 3,
 * contiguous or chunked with a version 1 B-tree). The mirrors of
 * dspace.c, dtype.c, fillval.c, pline.c and layout.c's decoders.
 *
 * For issue 32 item 2 (new datasets through the mount); the object
 * header and the link that would hold them are not built here.
 */
#include "dset_enc.h"
#include "base.h"
#include "rd.h"
#include "dtype.h"
#include "filter.h"

#include <math.h>
#include <string.h>

/* out must hold n more bytes */
#define ROOM(n)                                                                          \
	do {                                                                             \
		if (*len + (size_t)(n) > cap)                                            \
			return h5_err_set(H5_ERR_RANGE, "message buffer of %zu bytes too small", cap); \
	} while (0)

int h5_enc_dspace(uint8_t *out, size_t *len, size_t cap, const h5_fmt *fmt, unsigned rank, const uint64_t *dims,
		  const uint64_t *maxdims)
{
	size_t ss = fmt->sizeof_size;

	*len = 0;
	if (rank > H5_MAX_RANK)
		return h5_err_set(H5_ERR_INVAL, "rank %u", rank);
	ROOM(8 + 2 * rank * ss);
	memset(out, 0, 8);
	out[0] = 1;                     /* version 1 */
	out[1] = (uint8_t)rank;
	out[2] = 1;                     /* maximum dimensions present (libhdf5 always writes them) */
	*len = 8;
	for (unsigned i = 0; i < rank; i++, *len += ss)
		h5_le_encode(out + *len, dims[i], (unsigned)ss);
	for (unsigned i = 0; i < rank; i++, *len += ss)
		h5_le_encode(out + *len, maxdims ? maxdims[i] : dims[i], (unsigned)ss);
	return 0;
}

static void head(uint8_t *p, unsigned cls, uint32_t bits, uint32_t size)
{
	p[0] = (uint8_t)(0x10 | cls);   /* version 1 */
	h5_le_encode(p + 1, bits, 3);
	h5_le_encode(p + 4, size, 4);
}

/* Integer (class 0) or IEEE float (class 1) of size bytes: 12 or 20 bytes. */
static int number(uint8_t *p, size_t *n, char kind, unsigned size, bool be)
{
	if (kind == 'i' || kind == 'u') {
		if (size != 1 && size != 2 && size != 4 && size != 8)
			return h5_err_set(H5_ERR_INVAL, "integers of %u bytes", size);
		head(p, H5T_INTEGER, (be ? 1u : 0u) | (kind == 'i' ? 8u : 0u), size);
		h5_le_encode(p + 8, 0, 2);              /* bit offset */
		h5_le_encode(p + 10, size * 8, 2);      /* precision */
		*n = 12;
		return 0;
	}
	if (kind == 'f') {
		unsigned esz, msz, bias;

		switch (size) {
		case 2: esz = 5; msz = 10; bias = 15; break;
		case 4: esz = 8; msz = 23; bias = 127; break;
		case 8: esz = 11; msz = 52; bias = 1023; break;
		default: return h5_err_set(H5_ERR_INVAL, "floats of %u bytes", size);
		}
		/* byte order, mantissa normalization 2 (implied one), sign bit */
		head(p, H5T_FLOAT, (be ? 1u : 0u) | 0x20u | ((size * 8 - 1) << 8), size);
		h5_le_encode(p + 8, 0, 2);
		h5_le_encode(p + 10, size * 8, 2);
		p[12] = (uint8_t)msz;           /* exponent location */
		p[13] = (uint8_t)esz;
		p[14] = 0;                      /* mantissa location */
		p[15] = (uint8_t)msz;
		h5_le_encode(p + 16, bias, 4);
		*n = 20;
		return 0;
	}
	return h5_err_set(H5_ERR_INVAL, "no number of kind '%c'", kind);
}

int h5_enc_dtype(uint8_t *out, size_t *len, size_t cap, char kind, unsigned size, bool big_endian)
{
	size_t n = 0;
	int rc;

	*len = 0;
	if (kind == 'b') {
		/* h5py: enum of a signed byte {FALSE = 0, TRUE = 1}; names
		 * padded with NULs to multiples of 8 (version 1) */
		ROOM(8 + 12 + 16 + 2);
		head(out, H5T_ENUM, 2, 1);
		rc = number(out + 8, &n, 'i', 1, false);
		if (rc < 0)
			return rc;
		memset(out + 20, 0, 16);
		memcpy(out + 20, "FALSE", 5);
		memcpy(out + 28, "TRUE", 4);
		out[36] = 0;
		out[37] = 1;
		*len = 38;
		return 0;
	}
	if (kind == 'c') {
		/* h5py: compound {r, i} of two floats of half the size;
		 * version 1 members: name (8 bytes padded), offset, rank 0,
		 * reserved, permutation, reserved, four dimension sizes, type */
		unsigned h = size / 2;

		if (size != 8 && size != 16)
			return h5_err_set(H5_ERR_INVAL, "complex of %u bytes", size);
		ROOM(8 + 2 * (8 + 4 + 4 + 4 + 4 + 16 + 20));
		head(out, H5T_COMPOUND, 2, size);
		*len = 8;
		for (unsigned m = 0; m < 2; m++) {
			uint8_t *p = out + *len;

			memset(p, 0, 40);
			p[0] = m ? 'i' : 'r';
			h5_le_encode(p + 8, m * h, 4);
			*len += 40;
			rc = number(out + *len, &n, 'f', h, big_endian);
			if (rc < 0)
				return rc;
			*len += n;
		}
		return 0;
	}
	ROOM(20);
	rc = number(out, &n, kind, size, big_endian && size > 1);
	if (rc == 0)
		*len = n;
	return rc;
}

int h5_enc_fill_default(uint8_t *out, size_t *len, size_t cap, bool chunked)
{
	*len = 0;
	ROOM(8);
	out[0] = 2;                     /* version 2 */
	out[1] = chunked ? 3 : 2;       /* allocation: incremental / late */
	out[2] = chunked ? 0 : 2;       /* write fill: at allocation / if set */
	out[3] = 1;                     /* defined: the library default (zeros) */
	h5_le_encode(out + 4, 0, 4);    /* size 0: no value stored */
	*len = 8;
	return 0;
}

/* Version 1 filter description: id, name length, flags, count of client
 * values, the name padded to 8, the values, padded to an even count. */
static int filter1(uint8_t *out, size_t *len, size_t cap, uint16_t id, const char *name, const uint32_t *cv,
		   unsigned ncv)
{
	size_t nl = strlen(name) + 1, padded = (nl + 7) & ~(size_t)7;

	ROOM(8 + padded + 4 * (size_t)(ncv + (ncv & 1)));
	h5_le_encode(out + *len, id, 2);
	h5_le_encode(out + *len + 2, padded, 2);
	h5_le_encode(out + *len + 4, 1, 2);     /* optional, as h5py sets them */
	h5_le_encode(out + *len + 6, ncv, 2);
	*len += 8;
	memset(out + *len, 0, padded);
	memcpy(out + *len, name, nl);
	*len += padded;
	for (unsigned i = 0; i < ncv + (ncv & 1); i++, *len += 4)
		h5_le_encode(out + *len, i < ncv ? cv[i] : 0, 4);
	return 0;
}

int h5_enc_pline(uint8_t *out, size_t *len, size_t cap, const h5_enc_filters *fl)
{
	unsigned n = (fl->shuffle ? 1u : 0u) + (fl->deflate >= 0 ? 1u : 0u) + (fl->codec ? 1u : 0u) +
		     (fl->fletcher32 ? 1u : 0u);
	uint32_t v;
	int rc = 0;

	*len = 0;
	ROOM(8);
	memset(out, 0, 8);
	out[0] = 1;                     /* version 1 */
	out[1] = (uint8_t)n;
	*len = 8;
	/* h5py's order: shuffle, deflate, fletcher32 */
	if (fl->shuffle) {
		v = fl->elem_size;
		rc = filter1(out, len, cap, H5_FILTER_SHUFFLE, "shuffle", &v, 1);
	}
	if (rc == 0 && fl->deflate >= 0) {
		if (fl->deflate > 9)
			return h5_err_set(H5_ERR_INVAL, "deflate level %d", fl->deflate);
		v = (uint32_t)fl->deflate;
		rc = filter1(out, len, cap, H5_FILTER_DEFLATE, "deflate", &v, 1);
	}
	if (rc == 0 && fl->codec)
		rc = filter1(out, len, cap, fl->codec, fl->codec_name, fl->codec_cd, fl->codec_ncd);
	if (rc == 0 && fl->fletcher32)
		rc = filter1(out, len, cap, H5_FILTER_FLETCHER32, "fletcher32", NULL, 0);
	return rc;
}

int h5_enc_layout(uint8_t *out, size_t *len, size_t cap, const h5_fmt *fmt, unsigned rank, const uint64_t *chunk,
		  uint32_t elem_size, uint64_t addr, uint64_t size)
{
	size_t sa = fmt->sizeof_addr, ss = fmt->sizeof_size;

	*len = 0;
	if (!chunk) {
		/* contiguous: address (undefined until written), size */
		ROOM(2 + sa + ss);
		out[0] = 3;
		out[1] = 1;
		h5_le_encode(out + 2, addr, (unsigned)sa);
		h5_le_encode(out + 2 + sa, size, (unsigned)ss);
		*len = 2 + sa + ss;
		return 0;
	}
	if (rank == 0 || rank + 1 > H5_MAX_RANK + 1)
		return h5_err_set(H5_ERR_INVAL, "chunked rank %u", rank);
	/* chunked: dimensionality (rank + the element size), B-tree address,
	 * chunk sizes in 4 bytes each, the element size last */
	ROOM(3 + sa + 4 * (rank + 1));
	out[0] = 3;
	out[1] = 2;
	out[2] = (uint8_t)(rank + 1);
	h5_le_encode(out + 3, addr, (unsigned)sa);
	*len = 3 + sa;
	for (unsigned i = 0; i < rank; i++, *len += 4) {
		if (chunk[i] == 0 || chunk[i] > UINT32_MAX)
			return h5_err_set(H5_ERR_INVAL, "chunk dimension %llu", (unsigned long long)chunk[i]);
		h5_le_encode(out + *len, chunk[i], 4);
	}
	h5_le_encode(out + *len, elem_size, 4);
	*len += 4;
	return 0;
}

/* h5py's guess_chunk (h5py/_hl/filters.py): the shape (0 as 1024) halved
 * one dimension after another, round-robin, until the chunk is below a
 * target size (16 KiB * 2^log10(dataset MiB), within 8 KiB..1 MiB) or
 * within half of it, and under 1 MiB. */
void h5_enc_guess_chunk(uint64_t *chunk, unsigned rank, const uint64_t *dims, size_t elem_size)
{
	double c[H5_MAX_RANK], dset = (double)elem_size, target;
	unsigned idx = 0;

	for (unsigned i = 0; i < rank; i++) {
		c[i] = dims[i] ? (double)dims[i] : 1024;
		dset *= c[i];
	}
	target = 16.0 * 1024 * pow(2, log10(dset / (1024.0 * 1024)));
	if (target > 1024.0 * 1024)
		target = 1024.0 * 1024;
	else if (target < 8.0 * 1024)
		target = 8.0 * 1024;
	for (;;) {
		double n = 1, bytes;

		for (unsigned i = 0; i < rank; i++)
			n *= c[i];
		bytes = n * (double)elem_size;
		if ((bytes < target || fabs(bytes - target) / target < 0.5) && bytes < 1024.0 * 1024)
			break;
		if (n == 1)
			break;
		c[idx % rank] = ceil(c[idx % rank] / 2.0);
		idx++;
	}
	for (unsigned i = 0; i < rank; i++)
		chunk[i] = (uint64_t)c[i];
}
