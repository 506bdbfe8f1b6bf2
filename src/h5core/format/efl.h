/*
 * efl.h - the external data files message (efl.c; IV.A.2.h).
 */
#ifndef H5_FORMAT_EFL_H
#define H5_FORMAT_EFL_H

#include "base.h"

typedef struct h5_efl_entry {
	uint64_t name_off;      /* offset in the local heap */
	uint64_t offset;        /* byte offset inside the external file */
	uint64_t size;          /* bytes reserved (H5_UNLIMITED = rest of file) */
} h5_efl_entry;

typedef struct h5_efl {
	uint64_t heap_addr;
	size_t n;
	h5_efl_entry *e;
} h5_efl;

int h5_efl_decode(h5_efl *out, const h5_fmt *fmt, const uint8_t *buf, size_t len);
void h5_efl_clear(h5_efl *e);

#endif
