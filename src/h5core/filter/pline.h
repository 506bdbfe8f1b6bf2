/*
 * pline.h - the filter pipeline message (pline.c; IV.A.2.l).
 */
#ifndef H5_FORMAT_PLINE_H
#define H5_FORMAT_PLINE_H

#include "base.h"

typedef struct h5_filter {
	uint16_t id;
	uint16_t flags;         /* bit 0: optional */
	char *name;             /* may be NULL */
	size_t ncd;
	uint32_t *cd;
} h5_filter;

typedef struct h5_pline {
	uint8_t version;
	size_t n;
	h5_filter *filters;     /* in application (write) order */
} h5_pline;

int h5_pline_decode(h5_pline *out, const uint8_t *buf, size_t len);
void h5_pline_clear(h5_pline *p);

#endif
