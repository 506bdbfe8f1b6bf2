/* freemark.c - the free marker (freemark.h).
 *
 *   0  "H5FSFREE"
 *   8  version (1), 3 bytes 0
 *  12  u32 block size (4096)
 *  16  u64 the extent's address (relative to the superblock), the
 *      marker's own
 *  24  u64 the extent's length (whole blocks; the marker's block first)
 *  32  u64 the superblock's base (the user block)
 *  40  u32 lookup3 of bytes 0-39; 4 bytes 0
 * The address, base and checksum make a marker copied elsewhere (a file
 * inside a dataset, shifted) or torn count for nothing. */
#include "freemark.h"
#include "checksum.h"
#include "rd.h"

static const char magic[8] = { 'H', '5', 'F', 'S', 'F', 'R', 'E', 'E' };

void h5_freemark_encode(uint8_t *b, uint64_t base, uint64_t addr, uint64_t len)
{
	memset(b, 0, H5_FREEMARK_LEN);
	memcpy(b, magic, sizeof(magic));
	b[8] = 1;
	h5_le_encode(b + 12, H5_FREEMARK_BLOCK, 4);
	h5_le_encode(b + 16, addr, 8);
	h5_le_encode(b + 24, len, 8);
	h5_le_encode(b + 32, base, 8);
	h5_le_encode(b + 40, h5_checksum_lookup3(b, 40, 0), 4);
}

uint64_t h5_freemark_decode(const uint8_t *b, uint64_t base, uint64_t addr, uint64_t eoa)
{
	uint64_t len = h5_le_decode(b + 24, 8);

	if (memcmp(b, magic, sizeof(magic)) || b[8] != 1 || h5_le_decode(b + 12, 4) != H5_FREEMARK_BLOCK ||
	    h5_le_decode(b + 16, 8) != addr || h5_le_decode(b + 32, 8) != base ||
	    h5_le_decode(b + 40, 4) != h5_checksum_lookup3(b, 40, 0))
		return 0;
	if (len < 2 * H5_FREEMARK_BLOCK || len % H5_FREEMARK_BLOCK || addr > eoa || len > eoa - addr)
		return 0;
	return len;
}
