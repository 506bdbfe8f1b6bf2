/*
 * checksum.h - checksums (checksum.c).
 */
#ifndef H5_BASE_CHECKSUM_H
#define H5_BASE_CHECKSUM_H

#include "base.h"

/* ---- checksums (checksum.c) -------------------------------------------- */

/* Jenkins lookup3 hashlittle(), as H5_checksum_metadata (initval 0). */
uint32_t h5_checksum_lookup3(const void *buf, size_t len, uint32_t initval);
static inline uint32_t h5_checksum_metadata(const void *buf, size_t len) { return h5_checksum_lookup3(buf, len, 0); }
/* Fletcher-32 as libhdf5's H5_checksum_fletcher32. */
uint32_t h5_checksum_fletcher32(const void *buf, size_t len);
/* Verify the 4-byte little-endian checksum stored at buf[len-4..len) over buf[0..len-4). */
int h5_checksum_verify(const uint8_t *buf, size_t len, const char *what, uint64_t addr);

#endif
