/*
 * table.h - what node_table.c and light.c share inside state/ (callers
 * hold fs->lock): the chained tables' growth, and each table's lookup.
 */
#ifndef H5FS_STATE_TABLE_H
#define H5FS_STATE_TABLE_H

#include "fs.h"

/* Double a chained table when it is full (n entries, cap buckets); on
 * allocation failure keep the old one (longer chains, still correct) */
void table_rehash(void ***tab, size_t *cap, size_t n, size_t next_off, size_t (*bucket)(const void *e, size_t cap));
/* The struct node of ino, or NULL (never a stat-only one) */
struct node *node_full_find_locked(h5fs *fs, uint64_t ino);
/* Where ino's struct lnode is (or would be) in its chain */
struct lnode **light_slot_locked(h5fs *fs, uint64_t ino);
/* *pp made a struct node in the node table, or NULL (out of memory) */
struct node *light_promote_locked(h5fs *fs, struct lnode **pp);

#endif
