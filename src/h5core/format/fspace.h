/*
 * fspace.h - free-space managers (fspace.c; III.H): the header and where
 * its serialized section list lies, for the space report. No reader
 * needs the sections themselves.
 */
#ifndef H5_FORMAT_FSPACE_H
#define H5_FORMAT_FSPACE_H

#include "base.h"
#include "file.h"

enum { H5_FS_CLIENT_FHEAP = 0, H5_FS_CLIENT_FILE = 1 };

typedef struct h5_fspace_hdr {
	uint8_t client;         /* H5_FS_CLIENT_* */
	uint64_t tot_space;     /* bytes of free space the sections describe */
	uint64_t nsects;        /* sections tracked */
	uint64_t sect_addr;     /* serialized section list ("FSSE"), or UNDEF */
	uint64_t sect_used;     /* bytes of it used */
	uint64_t sect_alloc;    /* bytes allocated for it */
} h5_fspace_hdr;

/* Bytes of an FSHD (checksum included). */
size_t h5_fspace_hdr_size(const h5_fmt *fmt);
/* Pure decoder of an FSHD image of h5_fspace_hdr_size() bytes or more. */
int h5_fspace_hdr_decode(h5_fspace_hdr *out, const h5_fmt *fmt, uint64_t addr, const uint8_t *buf, size_t len);
/* The manager at addr: its header decoded into out (may be NULL), the
 * header and the section list's allocation handed to cb. */
int h5_fspace_blocks(h5_fspace_hdr *out, h5_file *f, uint64_t addr, h5_block_cb cb, void *ud);

#endif
