/*
 * filter.h - the filter pipeline applied (filter.c).
 */
#ifndef H5_FILTER_FILTER_H
#define H5_FILTER_FILTER_H

#include "base.h"
#include "pline.h"

/* ---- filters (filter.c) ---------------------------------------------------- */

enum {
	H5_FILTER_DEFLATE = 1, H5_FILTER_SHUFFLE = 2, H5_FILTER_FLETCHER32 = 3,
	H5_FILTER_SZIP = 4, H5_FILTER_NBIT = 5, H5_FILTER_SCALEOFFSET = 6,
	H5_FILTER_LZO = 305, H5_FILTER_BZIP2 = 307, H5_FILTER_LZF = 32000, H5_FILTER_BLOSC = 32001,
	H5_FILTER_LZ4 = 32004, H5_FILTER_BITSHUFFLE = 32008, H5_FILTER_ZFP = 32013, H5_FILTER_ZSTD = 32015
};

/* Undo the pipeline on one chunk. *buf (malloc'd, *len bytes) is replaced
 * by the decoded bytes; filters whose bit is set in mask are skipped.
 * expect is the decoded chunk size: output larger than that is cut off and
 * reported (decompression bombs); smaller is an error.  On failure *buf is
 * still a malloc'd buffer the caller frees (contents unspecified); the same
 * holds for h5_filter_encode. The filters need no datatype: their cd
 * values carry what they need (libhdf5's set_local put it there). */
int h5_filter_decode(uint8_t **buf, size_t *len, const h5_pline *pl, uint32_t mask, size_t expect);
/* Apply the pipeline for writing. An optional filter that cannot be applied
 * is skipped and its bit set in *mask_out (as libhdf5); a required one fails. */
int h5_filter_encode(uint8_t **buf, size_t *len, uint32_t *mask_out, const h5_pline *pl);
/* Whether this build can decode / encode the filter. */
bool h5_filter_available(uint16_t id);
bool h5_filter_can_encode(uint16_t id);
/* Whether this filter, with its client values, can be encoded as the
 * dataset's readers expect: 0, or H5_ERR_UNSUPPORTED with the reason. */
int h5_filter_encode_check(const h5_filter *f);
const char *h5_filter_name(uint16_t id);

/* ---- unshuffle kernels (filter_shuffle.c) ---------------------------------- */

/* The implementations, best last; the fastest the CPU has is used. */
typedef enum h5_unshuffle_impl {
	H5_UNSHUFFLE_SCALAR, H5_UNSHUFFLE_SSE2, H5_UNSHUFFLE_AVX2, H5_UNSHUFFLE_NIMPL
} h5_unshuffle_impl;

/* Undo shuffle (element size es) of len bytes from src into dst. */
void h5_unshuffle(uint8_t *dst, const uint8_t *src, size_t len, size_t es);
/* The same with one implementation (tests compare them): 0, or
 * H5_ERR_UNSUPPORTED when this build or CPU lacks it. */
int h5_unshuffle_with(h5_unshuffle_impl impl, uint8_t *dst, const uint8_t *src, size_t len, size_t es);
bool h5_unshuffle_available(h5_unshuffle_impl impl);

#endif
