/*
 * snod.h - symbol table nodes and entries (snod.c; III.B, III.C).
 */
#ifndef H5_FORMAT_SNOD_H
#define H5_FORMAT_SNOD_H

#include "base.h"
#include "rd.h"
#include "file.h"

/* ---- symbol table nodes (snod.c) ------------------------------------------ */

typedef struct h5_snod_entry {
	uint64_t name_off;
	uint64_t obj_addr;
	uint32_t cache_type;
	uint64_t btree_addr, heap_addr; /* cache_type 1 */
	uint32_t link_off;              /* cache_type 2: soft link value offset */
} h5_snod_entry;

typedef struct h5_snod {
	size_t n;
	h5_snod_entry *e;
} h5_snod;

int h5_snod_decode(h5_snod *out, const h5_fmt *fmt, unsigned leaf_k, const uint8_t *buf, size_t len);
void h5_snod_clear(h5_snod *s);
/* Load the SNOD at addr (2 * f->sym_leaf_k entries), cached (H5_CK_SNOD). */
int h5_snod_get(h5_snod **out, h5_file *f, uint64_t addr);
/* A walk's node at addr, read through w and decoded into *tmp, which the
 * cache does not keep (w NULL: as h5_snod_get); given back by
 * h5_snod_walk_release(f, *out, tmp) */
int h5_snod_walk_get(h5_snod **out, h5_snod *tmp, h5_file *f, uint64_t addr, h5_window *w);
void h5_snod_walk_release(h5_file *f, h5_snod *s, h5_snod *tmp);
void h5_snod_release(h5_file *f, h5_snod *s);
/* Decode a symbol table entry (also used by the v0/v1 superblock). */
int h5_symentry_decode(h5_snod_entry *out, h5_rd *r, const h5_fmt *fmt);

/* Encoders (write/link_stab.c): the bytes of one entry (III.C; cache
 * types 0, 1 and 2), and of a whole node, sized for 2K entries as libhdf5
 * allocates it (h5_snod_size), the unused entries zero. */
size_t h5_symentry_size(const h5_fmt *fmt);
size_t h5_snod_size(const h5_fmt *fmt, unsigned leaf_k);
void h5_symentry_encode(uint8_t *buf, const h5_fmt *fmt, const h5_snod_entry *e);
int h5_snod_encode(uint8_t *buf, size_t len, const h5_fmt *fmt, unsigned leaf_k, const h5_snod_entry *e,
		   size_t n);

#endif
