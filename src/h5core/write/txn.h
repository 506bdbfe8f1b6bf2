/* txn.h - the ordered commit: making what a writer staged visible,
 * crash-safe by the order of writes alone (doc/APPEND.md "Commit"). Every
 * fsync the write path makes is one of the steps below (txn.c); no other
 * file of the engine's write path calls one, so that each commit says
 * WHICH order it keeps and txn.c decides what that costs (a loose
 * object's commit, loose.h, skips the fsyncs of its orderings).
 *
 * A writer first writes everything new beyond what any structure
 * references (space.h) and sets its index entries on an index writer
 * (cidx_write.h's write ops), then, under f->write_lock:
 *   h5_txn_begin   the commit's handle: durable or not, and whether it
 *                  is a loose object's (read once: loose.h changes it
 *                  only under write_lock, which the commit holds);
 *   h5_txn_stage   the index writer's new and copied blocks after that;
 *                  fsync; when the new space lies beyond the end of
 *                  allocated space, the superblock's EOF address (with
 *                  room reserved ahead); fsync;
 *   h5_txn_switch  the one in-place switch to the new index: its header,
 *                  or the layout message's index address; fsync;
 *   (the caller)   every other change of the object header, each in-place
 *                  write that a later one depends on made durable first
 *                  (h5_txn_order, h5_txn_write_ordered);
 *   h5_txn_last    the last write (the chunk holding dims[0]); fsync when
 *                  durable, or (sync_later) h5_txn_done after write_lock
 *                  was given back. Room reserved past the end stays (the
 *                  next commits take it); h5_txn_idle gives it back.
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
	/* a loose object's commit (loose.h, f->loose_on at h5_txn_begin):
	 * nothing on disk references what it writes, the commit linking the
	 * object keeps its order; its orderings cost no fsync */
	bool loose;
	bool last_done;         /* the last write made (h5_txn_last*) */
	uint64_t end;           /* the allocation end once staged */
	uint64_t new_eoa;       /* 0, or the EOF address the superblock got */
	uint64_t ticket;        /* after the last write: the fsync what the commit freed waits for (space.h) */
	/* durable, sync_later: the last write's fsync is the caller's, after
	 * it gave write_lock back (h5_file_sync_since(want)): commits of other
	 * writers meanwhile share it (group commit, issue 55) */
	bool sync_later;
	uint64_t want;
} h5_txn;

/* The commit's handle, under f->write_lock (held to its last write): wops
 * NULL, no index writer (object header edits, ohdr_edit.h; a step that
 * only orders or syncs): the new space is what the caller wrote up to the
 * allocation end. Writes nothing; a crash keeps what it kept before. */
void h5_txn_begin(h5_txn *t, h5_file *f, bool durable, const h5_cidx_write_ops *wops, void *w);

/* The new blocks durable, then the EOF address covering them durable: a
 * crash before it returns leaves new bytes nothing references (the old
 * state), and never an EOF address over space not written or a reference
 * past the address on disk. A commit that is not durable reserves room
 * ahead (four times what the space used since last_end took, 1..256
 * MiB), so that the next commits need no superblock write. A loose
 * object's commit writes no EOF address (the linking commit's stage
 * does) and no fsync. */
int h5_txn_stage(h5_txn *t, uint64_t last_end);

/* The one in-place switch to the new index (e: an edit of the object
 * header whose layout message is lay), durable: a crash keeps the old
 * index or the new one, which references only staged, durable blocks;
 * dims[0] still says the old rows, so readers see the old state. */
int h5_txn_switch(h5_txn *t, h5_ohdr_edit *e, const h5_msg *lay);

/* Chunk c of e, written after every other change (the write that makes
 * the new state visible: dims[0]); fsync when durable and not
 * sync_later (then h5_txn_done). A crash before it keeps the old state,
 * after its fsync the new one; without an fsync, either, whole. */
int h5_txn_last(h5_txn *t, h5_ohdr_edit *e, size_t c);

/* The same, the last write being len bytes at addr in place (a group's
 * B-tree root, link_stab.c). */
int h5_txn_last_write(h5_txn *t, uint64_t addr, const void *buf, size_t len);

/* An ordering point inside a commit (under f->write_lock): every write
 * the commit made so far reaches the disk before any later one. A power
 * cut keeps what came before it, or it and none of what follows: the new
 * bytes a later write makes reachable (a copy before the messages that
 * point at it, a header in reused space before the link naming it, a
 * heap block's fields before the list that takes it), or one in-place
 * commit's bytes before the next one's (overwrite: an element written by
 * both never mixes them). An fsync; none in a loose object's commit. */
int h5_txn_order(h5_txn *t);

/* An in-place write (len bytes at addr, over bytes something references:
 * ordered.h) that must be durable before the next write of the commit:
 * the write, then h5_txn_order. A crash keeps the old bytes or the new,
 * never a later write without it. */
int h5_txn_write_ordered(h5_txn *t, uint64_t addr, const void *buf, size_t len);

/* A durable commit's last fsync after write_lock was given back (group
 * commit, sync_later): shared with other writers' (h5_file_sync_since on
 * t->want, taken by the last write). Nothing when the commit is not
 * durable, its last write was not made, or it is a loose object's (made
 * durable by the commit linking it). A crash before it returns keeps the
 * old state or the complete new one; after it, the new one. */
int h5_txn_done(h5_txn *t);

/* A commit's sync with nothing new to show (a durable request; the end
 * of a session, after the last chunk moved down): fsync what earlier
 * commits left unsynced (unsynced), release what they freed, and give
 * back a reserve - the EOF address lowered, fsync, FILE cut: a crash
 * keeps the longer file with either address, never a file shorter than
 * the address on disk. Nothing in a loose object's commit (its address
 * lowered and FILE cut without an fsync between could land in the wrong
 * order). Under write_lock. */
int h5_txn_idle(h5_txn *t, bool unsynced);

/* Give back space (under f->write_lock NOT held): space that earlier
 * commits freed waits for an fsync that began after their last write
 * (space.h tickets); one fsync now releases it to the next reserve, as
 * ext4 commits its journal before it says ENOSPC. Outside any commit,
 * never skipped; it orders nothing. */
int h5_txn_give_back(h5_file *f);

#endif
