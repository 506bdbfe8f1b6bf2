/* link_stab_int.h - what link_stab.c (the symbol table's nodes, the
 * commit), link_stab_heap.c (its local heap: names in, names given
 * back) and link_stab_many.c (the batches' changes) share: one change of a symbol-table group as it is edited in
 * memory. Every call runs under f->write_lock. */
#ifndef H5_WRITE_LINK_STAB_INT_H
#define H5_WRITE_LINK_STAB_INT_H

#include "base.h"
#include "file.h"
#include "linkmsg.h"
#include "snod.h"

/* One symbol table node of the group, in name order. */
typedef struct stab_leaf {
	uint64_t addr;
	uint64_t rkey;          /* heap offset of its last name */
	h5_snod_entry *e;       /* loaded entries (NULL: not loaded) */
	size_t n;
	bool changed;
} stab_leaf;

typedef struct stab_edit {
	h5_file *f;
	uint64_t group;         /* the group's object header */
	h5_stab st;
	/* the local heap's data segment as it will be, and its header */
	uint8_t *heap;
	uint64_t hsize, hfree, haddr;
	uint64_t ofree;         /* the free list's head on disk */
	bool moved;             /* a new data segment: written whole */
	struct { uint64_t off, len; } dirty[8];
	size_t ndirty;          /* in-place writes of the old segment */
	stab_leaf *lv;
	size_t nl, cl;
	uint64_t left_key;      /* key 0 of the root */
	unsigned twok_leaf, k_int;
	uint64_t ohsize;        /* the data segment's size on disk */
	h5_freesp gone;         /* blocks the commit stops referencing (h5_space_note) */
	h5_freesp names;        /* names it removes (offsets in the data segment) */
} stab_edit;

/* The local heap's header and data segment read into s. */
int h5_stab_heap_load(stab_edit *s);
/* The name at off, or NULL when off is outside the heap or unterminated. */
const char *h5_stab_hname(const stab_edit *s, uint64_t off);
/* str (len bytes, a NUL added) into the heap: *off (a free block's tail,
 * or a data segment twice as large). */
int h5_stab_heap_add(uint64_t *off, stab_edit *s, const char *str, size_t len);
/* One name removed by an earlier commit, released, back to the heap's
 * free list (written now, in an order a crash cannot tear). */
int h5_stab_heap_release(stab_edit *s);
/* The name at off removed by this change: noted (s->names). */
void h5_stab_name_gone(stab_edit *s, uint64_t off);
/* The commit returned: the names it removed into h5_ws(f)->lheap_names with its
 * ticket, at the data segment's address seg. */
void h5_stab_names_commit(stab_edit *s, uint64_t seg, uint64_t ticket);

/* (link_stab.c) The group's list of nodes read (h5_stab_open) and let go;
 * where name is (node *li, entry *ei; li == nl: no node could hold it);
 * entry re of node ri taken out (*out: a copy; drop_soft: a soft link's
 * value goes back to the heap too); add put in its place as add_name
 * (soft: a soft link's value); the entry a hard link l gets (a group's
 * cached symbol table); the change committed (the nodes changed written
 * anew, one stage, the root's one write; start: the allocation end before
 * new space it makes visible). */
int h5_stab_open(stab_edit *s, h5_file *f, uint64_t group);
void h5_stab_close(stab_edit *s);
int h5_stab_locate(size_t *li, size_t *ei, bool *found, stab_edit *s, const char *name);
int h5_stab_take(stab_edit *s, size_t ri, size_t re, h5_snod_entry *out, bool drop_soft);
int h5_stab_put(stab_edit *s, const h5_snod_entry *add, const char *add_name, const char *soft);
int h5_stab_entry_of(h5_snod_entry *e, h5_file *f, const h5_link *l);
int h5_stab_commit(stab_edit *s, uint64_t start, bool durable);

/* (link_stab_many.c) link_store.h's insert_many, room_many, remove_many,
 * change_many of this form */
int h5_stab_insert_many(h5_file *f, uint64_t group, const h5_link *l, size_t n, uint64_t start);
int h5_stab_room_many(uint64_t *need, h5_file *f, uint64_t group, size_t n, uint64_t name_bytes);
int h5_stab_remove_many(h5_file *f, uint64_t group, char *const *names, size_t n);
int h5_stab_change_many(bool *changed, h5_file *f, uint64_t group, char *const *names, const uint64_t *addrs,
			size_t n);

#endif
