/* checksum.c - the two checksums of the HDF5 format.
 *
 * Metadata blocks of the newer formats (v2 superblock, OHDR/OCHK, B-tree v2,
 * fractal heap, SOHM table, ...) end with Bob Jenkins' lookup3 hashlittle()
 * over the block (libhdf5 H5_checksum_metadata, initval 0). The Fletcher-32
 * filter (filter id 3) uses libhdf5's own Fletcher-32 variant, which sums
 * big-endian 16-bit words and has its own rule for an odd trailing byte.
 * Both must match libhdf5 bit for bit, so they follow H5checksum.c. */
#include "base.h"
#include "rd.h"
#include "checksum.h"

#define LOOKUP3_ROT(x, k) (((x) << (k)) | ((x) >> (32 - (k))))

#define LOOKUP3_MIX(a, b, c)                                    \
	do {                                                    \
		a -= c; a ^= LOOKUP3_ROT(c, 4);  c += b;        \
		b -= a; b ^= LOOKUP3_ROT(a, 6);  a += c;        \
		c -= b; c ^= LOOKUP3_ROT(b, 8);  b += a;        \
		a -= c; a ^= LOOKUP3_ROT(c, 16); c += b;        \
		b -= a; b ^= LOOKUP3_ROT(a, 19); a += c;        \
		c -= b; c ^= LOOKUP3_ROT(b, 4);  b += a;        \
	} while (0)

#define LOOKUP3_FINAL(a, b, c)                                  \
	do {                                                    \
		c ^= b; c -= LOOKUP3_ROT(b, 14);                \
		a ^= c; a -= LOOKUP3_ROT(c, 11);                \
		b ^= a; b -= LOOKUP3_ROT(a, 25);                \
		c ^= b; c -= LOOKUP3_ROT(b, 16);                \
		a ^= c; a -= LOOKUP3_ROT(c, 4);                 \
		b ^= a; b -= LOOKUP3_ROT(a, 14);                \
		c ^= b; c -= LOOKUP3_ROT(b, 24);                \
	} while (0)

/* Byte-wise hashlittle(): independent of host endianness and alignment,
 * identical in result to the word-wise variants on little-endian hosts.
 * The length enters the initial state truncated to 32 bits, as in lookup3. */
uint32_t h5_checksum_lookup3(const void *buf, size_t len, uint32_t initval)
{
	const uint8_t *k = buf;
	uint32_t a, b, c;

	a = b = c = 0xdeadbeefU + (uint32_t)len + initval;
	while (len > 12) {
		a += (uint32_t)k[0] | (uint32_t)k[1] << 8 | (uint32_t)k[2] << 16 | (uint32_t)k[3] << 24;
		b += (uint32_t)k[4] | (uint32_t)k[5] << 8 | (uint32_t)k[6] << 16 | (uint32_t)k[7] << 24;
		c += (uint32_t)k[8] | (uint32_t)k[9] << 8 | (uint32_t)k[10] << 16 | (uint32_t)k[11] << 24;
		LOOKUP3_MIX(a, b, c);
		len -= 12;
		k += 12;
	}
	/* the last 1..12 bytes; an exact multiple of 12 (or empty input) keeps
	 * its final full block here, and empty input skips the final mix */
	switch (len) {
	case 12: c += (uint32_t)k[11] << 24; /* fall through */
	case 11: c += (uint32_t)k[10] << 16; /* fall through */
	case 10: c += (uint32_t)k[9] << 8;   /* fall through */
	case 9:  c += k[8];                  /* fall through */
	case 8:  b += (uint32_t)k[7] << 24;  /* fall through */
	case 7:  b += (uint32_t)k[6] << 16;  /* fall through */
	case 6:  b += (uint32_t)k[5] << 8;   /* fall through */
	case 5:  b += k[4];                  /* fall through */
	case 4:  a += (uint32_t)k[3] << 24;  /* fall through */
	case 3:  a += (uint32_t)k[2] << 16;  /* fall through */
	case 2:  a += (uint32_t)k[1] << 8;   /* fall through */
	case 1:  a += k[0]; break;
	case 0:  return c;
	}
	LOOKUP3_FINAL(a, b, c);
	return c;
}

uint32_t h5_checksum_fletcher32(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t words = len / 2;
	uint32_t sum1 = 0, sum2 = 0;

	/* 360 is the most 16-bit words that can be summed before sum2 could
	 * overflow 32 bits; fold after each batch. */
	while (words) {
		size_t n = words > 360 ? 360 : words;

		words -= n;
		do {
			sum1 += (uint32_t)p[0] << 8 | p[1];
			p += 2;
			sum2 += sum1;
		} while (--n);
		sum1 = (sum1 & 0xffff) + (sum1 >> 16);
		sum2 = (sum2 & 0xffff) + (sum2 >> 16);
	}
	/* libhdf5 treats an odd trailing byte as the high byte of a last word */
	if (len % 2) {
		sum1 += (uint32_t)p[0] << 8;
		sum2 += sum1;
		sum1 = (sum1 & 0xffff) + (sum1 >> 16);
		sum2 = (sum2 & 0xffff) + (sum2 >> 16);
	}
	sum1 = (sum1 & 0xffff) + (sum1 >> 16);
	sum2 = (sum2 & 0xffff) + (sum2 >> 16);
	return sum2 << 16 | sum1;
}

int h5_checksum_verify(const uint8_t *buf, size_t len, const char *what, uint64_t addr)
{
	uint32_t stored, computed;

	if (len < 4)
		return h5_err_set(H5_ERR_FORMAT, "%s at 0x%llx: %zu bytes is too short to hold a checksum",
				  what, (unsigned long long)addr, len);
	stored = (uint32_t)h5_le_decode(buf + len - 4, 4);
	computed = h5_checksum_metadata(buf, len - 4);
	if (stored != computed)
		return h5_err_set(H5_ERR_CHECKSUM, "%s at 0x%llx: checksum mismatch (stored 0x%08x, computed 0x%08x)",
				  what, (unsigned long long)addr, stored, computed);
	return 0;
}
