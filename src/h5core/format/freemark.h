/* freemark.h - h5fs's free marker (freemark.c): 48 bytes at the start of
 * a free extent of FILE whose other blocks are a punched hole, naming
 * that extent, so that the next mount reuses it (write/space_punch.c) and
 * the space report counts it (dataset/space_report.c). Not an HDF5
 * structure: it lies in space nothing references, which libhdf5 never
 * reads. */
#ifndef H5_FREEMARK_H
#define H5_FREEMARK_H

#include "base.h"

#define H5_FREEMARK_LEN 48
#define H5_FREEMARK_BLOCK ((uint64_t)4096)      /* the blocks punched */

/* The marker of [addr, addr + len) (relative) of a file whose superblock
 * lies at base. */
void h5_freemark_encode(uint8_t *b, uint64_t base, uint64_t addr, uint64_t len);

/* The length of the extent a marker read at addr names (its magic,
 * version, block size, address, base and checksum matching; whole blocks,
 * two at least; below eoa), or 0 when b holds none. */
uint64_t h5_freemark_decode(const uint8_t *b, uint64_t base, uint64_t addr, uint64_t eoa);

#endif
