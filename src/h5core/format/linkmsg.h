/*
 * linkmsg.h - link, link info and symbol table messages (link.c; IV.A.2.g, IV.A.2.c, IV.A.2.r).
 */
#ifndef H5_FORMAT_LINKMSG_H
#define H5_FORMAT_LINKMSG_H

#include "base.h"

/* ---- links & group messages (link.c) ------------------------------------ */

int h5_link_decode(h5_link *out, const uint8_t *buf, size_t len, const h5_fmt *fmt);

typedef struct h5_linfo {
	bool track_corder, index_corder;
	int64_t max_corder;
	uint64_t fheap_addr;
	uint64_t name_bt2_addr;
	uint64_t corder_bt2_addr;   /* UNDEF if not indexed */
} h5_linfo;

int h5_linfo_decode(h5_linfo *out, const h5_fmt *fmt, const uint8_t *buf, size_t len);

typedef struct h5_stab {
	uint64_t btree_addr;
	uint64_t heap_addr;
} h5_stab;

int h5_stab_decode(h5_stab *out, const h5_fmt *fmt, const uint8_t *buf, size_t len);

/* (link_enc.c) A link message (hard or soft) for l: name, name_len,
 * type, addr or target, has_corder/corder, cset. */
int h5_link_encode(uint8_t **out, size_t *len, const h5_fmt *fmt, const h5_link *l);

#endif
