/*
 * fheap.h - fractal heaps (fheap.c; III.G).
 */
#ifndef H5_FORMAT_FHEAP_H
#define H5_FORMAT_FHEAP_H

#include "base.h"
#include "file.h"

/* ---- fractal heap (fheap.c) ------------------------------------------------ */

typedef struct h5_fheap h5_fheap;
int h5_fheap_open(h5_fheap **out, h5_file *f, uint64_t addr);
void h5_fheap_close(h5_fheap *h);
/* Object bytes for a heap ID (tiny, managed or huge). *out is malloc'd. */
int h5_fheap_read(uint8_t **out, size_t *out_len, h5_fheap *h, const uint8_t *id, size_t id_len);
size_t h5_fheap_id_len(const h5_fheap *h);

#endif
