/*
 * superblock.h - the superblock (superblock.c; II.A).
 */
#ifndef H5_FORMAT_SUPERBLOCK_H
#define H5_FORMAT_SUPERBLOCK_H

#include "base.h"
#include "file.h"

/* superblock.c: find the signature (0, 512, 1024, ...), decode and verify. */
int h5_superblock_read(h5_file *f);
/* Rewrite the superblock's end-of-file address (superblock.c). */
int h5_superblock_write_eoa(h5_file *f, uint64_t eoa);
/* Pure decoder of a superblock image starting at the signature. */
int h5_superblock_decode(h5_file *f, const uint8_t *buf, size_t len);
/* Bytes of the shared message table (III.I "SMTB") of nindexes indexes,
 * and of a shared message record list ("SMLI") of list_max records. */
size_t h5_sohm_table_size(const h5_fmt *fmt, unsigned nindexes);
size_t h5_sohm_list_size(const h5_fmt *fmt, unsigned list_max);

#endif
