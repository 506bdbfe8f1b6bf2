/*
 * dtype_enc.c - encoding datatype messages (IV.A.2.d) for the types a new
 * attribute gets: IEEE floats, integers, the variable-length UTF-8
 * string h5py writes for a Python str, and fixed-length strings (netCDF's
 * NC_CHAR, NumPy's S<n>). The mirror of dtype.c's decoder.
 */
#include "base.h"
#include "rd.h"
#include "dtype.h"

/* Class and version 1 in the first byte, the 24 class bits, the size. */
static void enc_head(uint8_t *p, unsigned cls, uint32_t bits, uint32_t size)
{
	p[0] = (uint8_t)(0x10 | cls);
	h5_le_encode(p + 1, bits, 3);
	h5_le_encode(p + 4, size, 4);
}

int h5_dtype_encode_number(uint8_t *out, size_t *len, char kind, unsigned size, bool big_endian)
{
	if (kind == 'i' || kind == 'u') {
		if (size != 1 && size != 2 && size != 4 && size != 8)
			return h5_err_set(H5_ERR_INVAL, "integers of %u bytes cannot be made", size);
		/* IV.A.2.d class 0: bit 0 byte order, bit 3 signed; offset, precision */
		enc_head(out, H5T_INTEGER, (big_endian ? 1u : 0u) | (kind == 'i' ? 8u : 0u), size);
		h5_le_encode(out + 8, 0, 2);
		h5_le_encode(out + 10, size * 8, 2);
		*len = 12;
		return 0;
	}
	if (kind == 'f') {
		/* class 1: bit 0 byte order, bits 4-5 mantissa normalization (2:
		 * implied leading one), bits 8-15 sign position; offset,
		 * precision, exponent location and size, mantissa location and
		 * size, exponent bias */
		unsigned esz, msz, bias;

		switch (size) {
		case 2: esz = 5; msz = 10; bias = 15; break;
		case 4: esz = 8; msz = 23; bias = 127; break;
		case 8: esz = 11; msz = 52; bias = 1023; break;
		default:
			return h5_err_set(H5_ERR_INVAL, "floats of %u bytes cannot be made", size);
		}
		enc_head(out, H5T_FLOAT, (big_endian ? 1u : 0u) | 0x20u | ((size * 8 - 1) << 8), size);
		h5_le_encode(out + 8, 0, 2);
		h5_le_encode(out + 10, size * 8, 2);
		out[12] = (uint8_t)msz;
		out[13] = (uint8_t)esz;
		out[14] = 0;
		out[15] = (uint8_t)msz;
		h5_le_encode(out + 16, bias, 4);
		*len = 20;
		return 0;
	}
	return h5_err_set(H5_ERR_INVAL, "no number type of kind '%c'", kind);
}

int h5_dtype_encode_vstr(uint8_t *out, size_t *len, uint8_t cset)
{
	/* class 9, type 1 (string), null-terminated, cset; 16 bytes on disk
	 * (length, global heap collection, index); base: an unsigned byte */
	enc_head(out, H5T_VLEN, 1u | ((uint32_t)(cset & 0x0f) << 8), 16);
	enc_head(out + 8, H5T_INTEGER, 0, 1);
	h5_le_encode(out + 16, 0, 2);
	h5_le_encode(out + 18, 8, 2);
	*len = 20;
	return 0;
}

int h5_dtype_encode_fstr(uint8_t *out, size_t *len, size_t size, uint8_t pad, uint8_t cset)
{
	/* class 3: bits 0-3 padding (0 null-terminated, 1 null-padded, 2
	 * space-padded), bits 4-7 character set; no properties */
	if (size == 0 || size > UINT32_MAX || pad > 2 || cset > 1)
		return h5_err_set(H5_ERR_INVAL, "a fixed-length string of %zu bytes cannot be made", size);
	enc_head(out, H5T_STRING, (uint32_t)pad | ((uint32_t)cset << 4), (uint32_t)size);
	*len = 8;
	return 0;
}
