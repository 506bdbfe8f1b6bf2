/* gslot.h - room for new groups taken ahead (gslot.c; issue 70 item 3,
 * doc/MODIFY.md "Write-behind of new files"): the daemon's mkdir makes a
 * loose group (h5_group_create_loose) while the link batch's commit may
 * hold f->write_lock for milliseconds (its writes and barrier fsyncs).
 * A new group's blocks have a fixed size for a given parent (link_store.h
 * new_group: a v1 header, B-tree root and local heap; or a v2 header), so
 * the space for several is taken at once under write_lock, and each mkdir
 * takes the next slot under the pool's own lock and writes its group
 * there without write_lock: nothing references those bytes until the
 * batch's commit links the group, as for any loose object. A slot written
 * is counted in the next link commit's stage range (h5_gslot_stage), so
 * that commit makes it durable and inside the EOF address before the
 * link names it. Slots never handed out are freed at a sync that finds
 * the pool idle, when their parent goes, and at unmount. */
#ifndef H5_WRITE_GSLOT_H
#define H5_WRITE_GSLOT_H

#include "base.h"
#include "file.h"
#include "link_store.h"

/* One slot: its address, the allocation end before it was taken, and
 * whether it lies in reused (free-list) space; once taken, the pool's
 * release count then (h5_gslot_untake). */
typedef struct h5_gslot {
	uint64_t addr, start;
	bool reused;
	uint64_t epoch;
} h5_gslot;

/* Without write_lock: the next slot for a child of parent, with the ops
 * and creation order its group is made with and its size. false: none
 * (no pool for this parent, or empty). */
bool h5_gslot_take(h5_gslot *s, const h5_lstore_ops **ops, h5_group_crt *crt, size_t *len, h5_file *f,
		   uint64_t parent);
/* Without write_lock, after the slot's group was written whole: counted in
 * the next link commit's stage. */
void h5_gslot_written(h5_file *f, const h5_gslot *s);
/* Without write_lock: a slot taken and not written (an error before its
 * write) goes back to the pool. */
void h5_gslot_untake(h5_file *f, const h5_gslot *s);

/* Under write_lock: the pool for children of parent (made with ops, crt,
 * len bytes each) filled up; a pool for another parent released first. */
int h5_gslot_fill_locked(h5_file *f, uint64_t parent, const h5_lstore_ops *ops, const h5_group_crt *crt,
			 size_t len);
/* Under write_lock, at a link batch's commit (link_write.c): *start
 * lowered to the allocation end before the slots written since the last
 * commit that succeeded; true when one of them lies in reused space (then
 * the commit makes it durable first: an ordering fsync, txn.h
 * h5_txn_order, as group_create_locked's).
 * *seq: for h5_gslot_staged once the commit succeeded, which forgets
 * them unless more were written meanwhile (their names in the next
 * batch: kept, which only stages that one from lower). */
bool h5_gslot_stage(h5_file *f, uint64_t *start, uint64_t *seq);
void h5_gslot_staged(h5_file *f, uint64_t seq);
/* Under write_lock, after a link batch into parent: its pool filled up
 * again when it is running low (the next mkdirs take from it). */
int h5_gslot_refill_locked(h5_file *f, uint64_t parent);
/* Without write_lock (mkdir, after its slot): the pool filled up when
 * it runs low and write_lock is free now; else nothing (never waits). */
void h5_gslot_top_up(h5_file *f, uint64_t parent);
/* Under write_lock: the pool's slots freed (its parent is removed: addr
 * == parent, or H5_ADDR_UNDEF: any; idle_only: only when no slot was
 * taken since the last such call - a sync between two batches of mkdir
 * keeps it). */
void h5_gslot_release_locked(h5_file *f, uint64_t parent, bool idle_only);

#endif
