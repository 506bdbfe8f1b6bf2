/*
 * strbuf.h - the engine's string builder (strbuf.c).
 */
#ifndef H5_BASE_STRBUF_H
#define H5_BASE_STRBUF_H

#include "base.h"

/* Text encodings are refused beyond this size (H5_ERR_LIMIT). */
#define H5_VALUE_MAX_TEXT ((size_t)16 << 20)

/* The engine's string builder (strbuf.c): grows up to H5_VALUE_MAX_TEXT;
 * each call returns 0 or an h5_err. h5_sb_printf is for short pieces
 * (numbers); strings of any length go through h5_sb_puts. */
typedef struct h5_sb {
	char *p;
	size_t len, cap;
} h5_sb;
int h5_sb_put(h5_sb *s, const void *d, size_t n);
int h5_sb_puts(h5_sb *s, const char *str);
int h5_sb_printf(h5_sb *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int h5_sb_finish(char **out, size_t *len, h5_sb *s);

#endif
