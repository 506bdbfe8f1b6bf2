/*
 * fillval.h - the fill value message (fillval.c; IV.A.2.e, IV.A.2.f).
 */
#ifndef H5_FORMAT_FILLVAL_H
#define H5_FORMAT_FILLVAL_H

#include "base.h"

typedef struct h5_fill {
	uint8_t version;
	uint8_t alloc_time, fill_time;
	bool defined;           /* a value is stored */
	size_t size;
	uint8_t *value;         /* size bytes, or NULL */
} h5_fill;

/* type is H5_MSG_FILL or H5_MSG_FILL_OLD. */
int h5_fill_decode(h5_fill *out, uint16_t type, const uint8_t *buf, size_t len);
void h5_fill_clear(h5_fill *fv);
/* One element (esize bytes, malloc'd) of the fill fv stores, or *out NULL
 * meaning zeros; H5_ERR_FORMAT when the stored size is not esize. */
int h5_fill_elem(uint8_t **out, const h5_fill *fv, uint32_t esize);

#endif
