/*
 * table.h - what node_table.c and light.c share inside state/ (callers
 * hold fs->lock): the chained tables' growth, each table's lookup, and
 * the objects table (objects.c) under light.c's records.
 */
#ifndef H5FS_STATE_TABLE_H
#define H5FS_STATE_TABLE_H

#include "fs.h"

/* Double a chained table when it is full (n entries, cap buckets); on
 * allocation failure keep the old one (longer chains, still correct) */
void table_rehash(void ***tab, size_t *cap, size_t n, size_t next_off, size_t (*bucket)(const void *e, size_t cap));
/* The struct node of ino, or NULL (never a stat-only one) */
struct node *node_full_find_locked(h5fs *fs, uint64_t ino);

/* objects.c: the objects table (fs.h struct lslot) */
/* ino's slot (a kind map entry, a record or both), or NULL */
struct lslot *lobj_find_locked(h5fs *fs, uint64_t ino);
/* ino's slot, made (key only) when it had none; NULL when out of memory */
struct lslot *lobj_get_locked(h5fs *fs, uint64_t ino);
/* s, with no record and no kind known, out of the table */
void lobj_drop_locked(h5fs *fs, struct lslot *s);
/* fn for every slot holding a record, in place (fn may let the record go
 * or make it a node; no slot is added meanwhile) */
void lobj_each_locked(h5fs *fs, void (*fn)(h5fs *fs, struct lslot *s, void *arg), void *arg);
void lobj_free_all(h5fs *fs);
/* The records' names: an entry of (parent directory, name), by reference
 * (0: none) */
bool lname_parent_code(uint64_t parent, uint64_t *code);       /* false: not kept */
uint32_t lname_new_locked(h5fs *fs, uint64_t code, const char *name);   /* 0: out of memory */
void lname_free_locked(h5fs *fs, uint32_t ref);
const char *lname_str(h5fs *fs, uint32_t ref);
uint64_t lname_parent(h5fs *fs, uint32_t ref);
void lname_set_parent(h5fs *fs, uint32_t ref, uint64_t code);
/* the record's birth tag (0 none; a new entry's is 0) */
uint32_t lname_tag(h5fs *fs, uint32_t ref);
void lname_set_tag(h5fs *fs, uint32_t ref, uint32_t tag);
/* The generations records hold, by index (0: none): the index of g and
 * FILE's time ft, with one more record (g held once per index); 0 when all
 * are in use */
uint8_t lgen_take_locked(h5fs *fs, struct gen *g, struct timespec ft);
struct gen *lgen_of(const h5fs *fs, uint8_t i);
/* One record of index i less: the reference for the caller (keep_ref:
 * always; else only the index's own, when it was the last, to release) */
struct gen *lgen_put_locked(h5fs *fs, uint8_t i, bool keep_ref);

/* light.c: ino's record, or NULL */
struct lslot *light_find_locked(h5fs *fs, uint64_t ino);
/* s made a struct node in the node table (no I/O: what its lookup read;
 * its slot stays the kind map's), or NULL (out of memory) */
struct node *light_promote_locked(h5fs *fs, struct lslot *s);

#endif
