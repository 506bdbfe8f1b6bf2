/*
 * gheap.h - global heaps (gheap.c; III.E).
 */
#ifndef H5_FORMAT_GHEAP_H
#define H5_FORMAT_GHEAP_H

#include "base.h"
#include "file.h"

/* ---- global heap (gheap.c) ------------------------------------------------- */

int h5_gheap_read(uint8_t **out, size_t *out_len, h5_file *f, uint64_t coll_addr, uint32_t index);
/* Bytes of the collection at coll_addr (its size field, checked as a read
 * checks it): the space report counts a collection whole. */
int h5_gheap_coll_size(uint64_t *out, h5_file *f, uint64_t coll_addr);

/* (gheap_enc.c) The bytes h5_gheap_encode makes of n objects of lens[i]
 * bytes. */
uint64_t h5_gheap_size(const h5_fmt *fmt, const size_t *lens, size_t n);
/* A collection holding objects 1..n (lens[i] bytes each), *len bytes (at
 * least 4096), malloc'd. */
int h5_gheap_encode(uint8_t **out, size_t *len, const h5_fmt *fmt, const uint8_t *const *objs,
		    const size_t *lens, size_t n);

#endif
