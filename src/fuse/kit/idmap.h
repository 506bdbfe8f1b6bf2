/*
 * idmap.h - a collection's node ids: (slot, local id) <-> the mount's
 * global id (dispatch.c). No FUSE and no locking: the caller holds its
 * mount's lock. Entries are kept for the mount's life, so a global id is
 * never given to another object.
 *
 * A slot's local ids belong to an epoch (a member opened anew starts
 * one). Local ids below 2^48 (an object's header address + 2 in the
 * member's own file) mean the same object in every epoch and keep their
 * entry; others (directories' per-path ids, symlinks, objects of other
 * files) are keyed by epoch too.
 */
#ifndef H5FS_IDMAP_H
#define H5FS_IDMAP_H

#include <stddef.h>
#include <stdint.h>

struct gid {
	struct gid *next_g, *next_l;
	uint64_t g;
	uint64_t local;
	uint64_t epoch;         /* the epoch local was resolved in */
	uint64_t ekey;          /* 0 for ids that mean the same in every epoch */
	uint64_t parent;        /* the global id it was looked up in (0: none) */
	char *name;
	uint32_t slot;
};

struct idmap {
	struct gid **by_g, **by_l;
	size_t cap, n;
	uint64_t next;          /* the next global id */
};

/* 0, or -1 when out of memory; ids start at first */
int idmap_init(struct idmap *im, uint64_t first);
void idmap_free(struct idmap *im);
struct gid *idmap_by_global(const struct idmap *im, uint64_t g);
struct gid *idmap_by_local(const struct idmap *im, uint32_t slot, uint64_t local, uint64_t epoch);
/* The entry of (slot, local) in epoch, made when new (parent, name: how
 * it was reached, kept the first time they are known). made: the slot
 * holds the object now (a lookup), so the entry counts as resolved in
 * epoch; else (a listing, an st_ino) it is only named. NULL: no memory. */
struct gid *idmap_get(struct idmap *im, uint32_t slot, uint64_t local, uint64_t epoch, uint64_t parent,
		      const char *name, int made);
/* fn(arg, x) for every entry of slot, of any epoch (fn must not change
 * the map). */
void idmap_each(const struct idmap *im, uint32_t slot, void (*fn)(void *arg, const struct gid *x), void *arg);
/* x resolved again in epoch as local (a member opened anew). */
void idmap_rebind(struct idmap *im, struct gid *x, uint64_t local, uint64_t epoch);

#endif
