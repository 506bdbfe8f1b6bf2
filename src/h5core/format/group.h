/*
 * group.h - groups (group.c).
 */
#ifndef H5_FORMAT_GROUP_H
#define H5_FORMAT_GROUP_H

#include "base.h"
#include "ohdr.h"
#include "linkmsg.h"

/* ---- groups (group.c) ------------------------------------------------------ */
/* public: h5_group_iterate, h5_group_lookup (h5core.h) */
/* Whether the object header describes a group (stab, linfo or link messages). */
bool h5_ohdr_is_group(const h5_ohdr *oh);

/* How a group keeps its links (IV.A.2.c Link Info: compact or dense by its
 * heap address, asked first as libhdf5 does; IV.A.2.r Symbol Table, also
 * a v0/v1 root's superblock scratch pad): the one rule of the readers
 * (h5_group_iterate, h5_group_lookup) and the writers (write/link_store.h). */
typedef enum h5_group_form { H5_GROUP_STAB, H5_GROUP_COMPACT, H5_GROUP_DENSE } h5_group_form;

typedef struct h5_group_storage {
	h5_group_form form;
	h5_stab stab;           /* H5_GROUP_STAB */
	h5_linfo linfo;         /* H5_GROUP_COMPACT, H5_GROUP_DENSE */
} h5_group_storage;

/* H5_ERR_* when oh (at addr) is no group. */
int h5_group_storage_get(h5_group_storage *gs, h5_file *f, const h5_ohdr *oh, uint64_t addr);
/* The blocks of a symbol table (the space report): the local heap's header
 * and data segment, every v1 B-tree node and symbol table node, each as
 * libhdf5 allocates it. */
int h5_group_stab_blocks(h5_file *f, const h5_stab *st, h5_block_cb cb, void *ud);

#endif
