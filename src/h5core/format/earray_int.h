/* earray_int.h - what earray.c (the reader) shares with earray_write.c (the
 * appending writer): the cached loaders of the blocks, which check that a
 * cached block belongs to the header asking for it (spec VII.D). */
#ifndef H5_EARRAY_INT_H
#define H5_EARRAY_INT_H

#include "array.h"
#include "cache.h"
#include "file.h"
#include "array_int.h"

/* A data block page (the cached H5_CK_EA_PAGE object; its tag is the
 * elements per page). */
typedef h5_arr_page h5_ea_page;

/* Pages of a data block of nelmts elements (0: not paged). */
uint64_t h5_ea_dblock_npages(const h5_ea_hdr *h, uint64_t nelmts);

/* Cached blocks of the array of header h; *ref is released by the caller
 * (h5_cache_release). */
int h5_ea_iblock_get(const h5_ea_iblock **out, h5_cache_ref *ref, h5_file *f, const h5_ea_hdr *h);
int h5_ea_sblock_get(const h5_ea_sblock **out, h5_cache_ref *ref, h5_file *f, const h5_ea_hdr *h,
		     uint64_t addr, unsigned sblk_idx);
int h5_ea_dblock_get(const h5_ea_dblock **out, h5_cache_ref *ref, h5_file *f, const h5_ea_hdr *h,
		     uint64_t addr, uint64_t nelmts, uint64_t expect_off);
int h5_ea_page_get(const h5_ea_page **out, h5_cache_ref *ref, h5_file *f, const h5_ea_hdr *h, uint64_t addr);

#endif
