/*
 * vlen.h - datasets of variable-length types read as text (vlen.c).
 */
#ifndef H5_DATASET_VLEN_H
#define H5_DATASET_VLEN_H

#include "base.h"
#include "dataset.h"

/* A dataset of a type holding variable-length data reads as text (vlen.c):
 * the text is measured once, on first use (h5_vtext_ensure), and read by
 * window; h5_vtext_read's caller checked off+len <= h5_vtext_size(). */
typedef struct h5_vtext h5_vtext;
int h5_vtext_new(h5_vtext **out);
void h5_vtext_free(h5_vtext *vt);
int h5_vtext_ensure(h5_vtext **out, h5_dataset *d);
uint64_t h5_vtext_size(const h5_vtext *vt);
int h5_vtext_read(h5_dataset *d, const h5_vtext *vt, uint8_t *out, uint64_t off, size_t len);

#endif
