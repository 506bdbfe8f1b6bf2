/* link_store.h - the ways a group keeps its links, as a table (after
 * libhdf5's H5G_obj dispatch over compact, dense and symbol-table
 * storage; spec IV.A.2.c Link Info, IV.A.2.g Link, IV.A.2.r Symbol Table).
 *
 * link_write.c (h5_link_insert, h5_link_delete, h5_group_create) takes
 * write_lock, checks names, finds the group's form (h5_lstore_of) and calls
 * its ops; each form is one file and one entry of the table in
 * link_write.c:
 *   compact   link messages in the group's object header (link_compact.c)
 *   dense     a fractal heap of link messages and v2 B-trees of name hashes
 *             and creation orders, written anew per change (link_dense.c)
 *   stab      a local heap of names and a v1 B-tree of symbol table nodes,
 *             what libhdf5 writes by default (link_stab.c)
 * Every op runs under f->write_lock and is one ordered commit of its own
 * (its crash states in doc/MODIFY.md), and drops the cached copies of what
 * it changed: lookups and listings go through the read path
 * (h5_group_lookup, h5_group_iterate), which must see the change. */
#ifndef H5_WRITE_LINK_STORE_H
#define H5_WRITE_LINK_STORE_H

#include "base.h"
#include "file.h"
#include "ohdr.h"
#include "linkmsg.h"
#include "ohdr_edit.h"

typedef enum h5_lstore_kind {
	H5_LSTORE_COMPACT,
	H5_LSTORE_DENSE,
	H5_LSTORE_STAB,
	H5_LSTORE_NKINDS
} h5_lstore_kind;

/* What a group tracks the creation order of (bit 0 tracked, bit 1
 * indexed): its links (the Link Info message's flags, IV.A.2.c) and its
 * attributes (its v2 header's flags bits 2-3, IV.A.1.b). */
typedef struct h5_group_crt {
	uint8_t links, attrs;
} h5_group_crt;
void h5_group_crt_of(h5_group_crt *crt, const struct h5_ohdr *oh);

typedef struct h5_lstore_ops {
	const char *name;
	/* Add l (its name not in the group: checked here) to the group at
	 * group. start: the allocation end before the caller wrote new space
	 * that this link makes visible (UINT64_MAX: none), so that the commit
	 * makes it durable first. durable: fsync'd before returning. */
	int (*insert)(h5_file *f, uint64_t group, const h5_link *l, uint64_t start, bool durable);
	/* Optional: the n hard links l (their names in none of the group,
	 * nor twice among them: checked here) added in one commit, not
	 * durable; start as insert's. NULL: one insert each
	 * (h5_link_insert_batch). */
	int (*insert_many)(h5_file *f, uint64_t group, const h5_link *l, size_t n, uint64_t start);
	/* With insert_many: the disk space it may take for n names of
	 * name_bytes in all (an upper bound), *need. */
	int (*room_many)(uint64_t *need, h5_file *f, uint64_t group, size_t n, uint64_t name_bytes);
	/* Remove the link NAME from the group at group. */
	int (*remove)(h5_file *f, uint64_t group, const char *name, size_t name_len, bool durable);
	/* Optional: the links names[0..n) (distinct) removed in one commit;
	 * NULL: one remove each (h5_link_remove_batch). */
	int (*remove_many)(h5_file *f, uint64_t group, char *const *names, size_t n);
	/* Optional: link NAME renamed NEWNAME in one commit. NEWNAME must
	 * not be in the group (checked here), unless replace: then its link
	 * goes in the same commit (rename(2) over a name: the old link stays
	 * until the new one is in, issue 56). NULL: the move is an insert,
	 * then a remove (link_move.c). */
	int (*rename)(h5_file *f, uint64_t group, const char *name, size_t name_len, const char *newname,
		      size_t newname_len, bool replace, bool durable);
	/* Optional: names[0..n) (distinct) afterwards hard links to the
	 * existing objects addrs[i], or removed (H5_ADDR_UNDEF: the name must
	 * be there), all in one commit, not durable; no counts changed here
	 * (link_batch.c orders them around it). *changed: anything written.
	 * NULL: the form has no such commit (h5_link_change_batch refuses). */
	int (*change_many)(bool *changed, h5_file *f, uint64_t group, char *const *names, const uint64_t *addrs,
			   size_t n);
	/* Optional, with change_many: how many names (net) one change_many
	 * may add to the group before it would keep them in a form not its
	 * own (compact storage: its limit less its links; past it, it stays
	 * compact, which a caller may rather leave to an insert that moves
	 * the group to dense storage). NULL: no bound. */
	int (*names_room)(uint64_t *room, h5_file *f, uint64_t group);
	/* An empty group of the form a group of this form gets for its
	 * children (mkdir): b NULL: *len, its size (fixed for a given f and
	 * crt); else encoded into b (*len bytes) for address addr, with a
	 * fresh birth tag; the caller takes the space and writes it whole
	 * (link_write.c, gslot.h). A v2 header of compact storage in a compact
	 * group, an old-style group in a symbol-table group, as libhdf5 makes
	 * them in files of the latest and of the earliest format; a v2 header
	 * tracks (and indexes) the creation order of links and attributes as
	 * crt says (the parent's: h5_group_crt_of). Reads nothing of FILE:
	 * safe without write_lock. */
	int (*new_group)(uint8_t *b, size_t *len, h5_file *f, const struct h5_group_crt *crt, uint64_t addr);
	/* Optional (unmount): when the group's link storage ends at the
	 * allocation end and freed space takes all of it, the same links
	 * written anew there (freesp.low: the lowest space that fits), one
	 * ordinary durable commit. 1 moved, 0 not, or a negative h5_err. */
	int (*move_down)(h5_file *f, uint64_t group);
} h5_lstore_ops;

/* The form of the group whose header is oh (format/group.h's one rule,
 * h5_group_storage_get; an error: no group), and its ops (NULL: a form
 * h5fs does not write, with H5_ERR_UNSUPPORTED set). */
int h5_lstore_of(const h5_lstore_ops **ops, h5_lstore_kind *kind, h5_file *f, const h5_ohdr *oh);

/* The ops of the group at addr. */
int h5_lstore_at(const h5_lstore_ops **ops, h5_file *f, uint64_t addr);

/* Under f->write_lock (link_write.c): link l added as NAME (its other
 * fields copied: target, external file and path, object); the link NAME
 * removed, with h5_link_delete's `want` checks, the count of its object
 * lowered after when it had other links. */
int h5_link_insert_locked(h5_file *f, uint64_t group, const h5_link *l, const char *name, size_t name_len);
/* Under f->write_lock: a hard link NAME to a new object at addr, written
 * after start (the allocation end before it), one commit. */
int h5_link_insert_new_locked(h5_file *f, uint64_t group, const char *name, size_t name_len, uint64_t addr,
			      uint64_t start);
int h5_link_remove_locked(h5_file *f, uint64_t group, const char *name, size_t name_len, int want);

/* Under f->write_lock (link_move.c): the reference count of the object
 * header at addr (v1: its prefix field; v2: the Reference Count message,
 * IV.A.2.w, added when the count first passes 1) changed by delta, one
 * commit. A count that would drop below 1 is left alone. */
int h5_obj_refcount_add(h5_file *f, uint64_t addr, int delta);

/* (link_dense.c) The compact group of header change c, whose Link Info
 * message (number linfo) says li, moves to dense storage with one more
 * link l, one commit (link_compact.c's insert at the compact limit). */
int h5_link_dense_convert(h5_ohdr_change *c, h5_file *f, h5_linfo *li, size_t linfo, const h5_link *l,
			  bool durable);

/* (link_write.c) Under f->write_lock, at unmount (h5_file_compact):
 * the first group a change noted (ohdr_edit.h, H5_NOTE_GROUP) whose link
 * storage ends at the allocation end, written anew into the lowest freed
 * space (its form's move_down). 1 moved, 0 nothing to do
 * (h5_ohdr_notes_each). */
int h5_link_move_down(h5_file *f);

extern const h5_lstore_ops h5_lstore_compact;
extern const h5_lstore_ops h5_lstore_stab;
extern const h5_lstore_ops h5_lstore_dense;

/* (link_write.c) A new h5_gone holding what the dataset at addr stores
 * when its last link is about to go (*out NULL: none, or not a dataset
 * with one link); under f->write_lock. */
int h5_gone_collect(struct h5_gone **out, h5_file *f, uint64_t addr);

#endif
