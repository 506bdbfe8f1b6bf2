/* txn.h - the ordered commit: making what a writer staged visible,
 * crash-safe by the order of writes alone (doc/APPEND.md "Commit").
 *
 * A writer first writes everything new beyond what any structure
 * references (space.h) and sets its index entries on an index writer
 * (cidx_write.h's write ops), then, under f->write_lock:
 *   h5_txn_stage   the index writer's new and copied blocks after that;
 *                  fsync; when the new space lies beyond the end of
 *                  allocated space, the superblock's EOF address (with
 *                  room reserved ahead); fsync;
 *   h5_txn_switch  the one in-place switch to the new index: its header,
 *                  or the layout message's index address; fsync;
 *   (the caller)   every other change of the object header;
 *   h5_txn_last    the last write (the chunk holding dims[0]); fsync when
 *                  durable. Room reserved past the end stays (the next
 *                  commits take it); h5_txn_sync gives it back.
 * Until the last write, readers and a crash see the old state; after it,
 * the complete new one. */
#ifndef H5_TXN_H
#define H5_TXN_H

#include "base.h"
#include "file.h"
#include "ohdr.h"
#include "cidx_write.h"

typedef struct h5_txn {
	h5_file *f;
	const h5_cidx_write_ops *wops;
	void *w;                /* the index writer */
	bool durable;           /* fsync the last write before h5_txn_last returns */
	uint64_t end;           /* the allocation end once staged */
	uint64_t new_eoa;       /* 0, or the EOF address the superblock got */
	uint64_t ticket;        /* after the last write: the fsync what the commit freed waits for (space.h) */
	/* durable, sync_later: the last write's fsync is the caller's, after
	 * it gave write_lock back (h5_file_sync_since(want)): commits of other
	 * writers meanwhile share it (group commit, issue 55) */
	bool sync_later;
	uint64_t want;
} h5_txn;

/* wops NULL: no index writer (object header edits, ohdr_edit.h): the new
 * space is what the caller wrote up to the allocation end. */
void h5_txn_begin(h5_txn *t, h5_file *f, bool durable, const h5_cidx_write_ops *wops, void *w);

/* A commit that is not durable reserves room ahead (four times what the
 * space used since last_end took, 1..256 MiB), so that the next commits
 * need no superblock write. */
int h5_txn_stage(h5_txn *t, uint64_t last_end);

/* e: an edit of the object header whose layout message is lay. */
int h5_txn_switch(h5_txn *t, h5_ohdr_edit *e, const h5_msg *lay);

/* Chunk c of e, written after every other change. */
int h5_txn_last(h5_txn *t, h5_ohdr_edit *e, size_t c);

/* The same, the last write being len bytes at addr in place (a group's
 * B-tree root, link_stab.c). */
int h5_txn_last_write(h5_txn *t, uint64_t addr, const void *buf, size_t len);

/* The fsync between two writes of one commit that must reach the disk in
 * that order (under f->write_lock, inside a commit): skipped in a loose
 * object's commit (loose.h), whose order the commit linking it keeps.
 * Every fsync of write/ is one of these three. */
int h5_txn_barrier(h5_file *f);
/* An fsync outside a commit, never skipped (space freed by earlier
 * commits released before a reserve refuses: space.c). */
int h5_txn_flush(h5_file *f);
/* A durable commit's last fsync after write_lock was given back (group
 * commit, sync_later): shared with other writers' (h5_file_sync_since). */
int h5_txn_sync_since(h5_file *f, uint64_t want);

/* Nothing new to show, but a durable request: fsync what earlier commits
 * left unsynced (unsynced), and give back a reserve. */
int h5_txn_sync(h5_file *f, bool unsynced);

#endif
