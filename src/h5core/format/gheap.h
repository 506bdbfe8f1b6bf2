/*
 * gheap.h - global heaps (gheap.c; III.E).
 */
#ifndef H5_FORMAT_GHEAP_H
#define H5_FORMAT_GHEAP_H

#include "base.h"
#include "file.h"

/* ---- global heap (gheap.c) ------------------------------------------------- */

int h5_gheap_read(uint8_t **out, size_t *out_len, h5_file *f, uint64_t coll_addr, uint32_t index);

#endif
