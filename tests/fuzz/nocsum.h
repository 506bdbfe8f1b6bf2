/* nocsum.h - see nocsum.c */
#ifndef H5FUZZ_NOCSUM_H
#define H5FUZZ_NOCSUM_H

#include "base.h"

/* When set, mismatching checksums are rewritten in this image (fixcsum). */
extern uint8_t *h5fuzz_fix_image;
extern size_t h5fuzz_fix_len;
extern unsigned h5fuzz_fixed;

#endif
