/*
 * strbuf.h - the engine's string builder (strbuf.c).
 */
#ifndef H5_BASE_STRBUF_H
#define H5_BASE_STRBUF_H

#include "base.h"

/* Text encodings are refused beyond this size (H5_ERR_LIMIT): an h5_sb's
 * default max. */
#define H5_VALUE_MAX_TEXT ((size_t)16 << 20)

/* The string builder (strbuf.c) is the utility surface's (h5util.h). */
#include "h5util.h"

#endif
