/* ohdr_edit.h - adding, removing and replacing object header messages,
 * committed crash-safely (ohdr_edit.c; spec IV.A.1, IV.A.2.a NIL, IV.A.2.q
 * continuation; doc/MODIFY.md).
 *
 * A change is made on a private copy of the header (h5_ohdr_load):
 *   h5_ohdr_change_open   load it;
 *   h5_ohdr_put           plan one message change: the new message goes
 *                         into free space (NIL messages but a birth tag,
 *                         format/birthtag.h; the old message's own space,
 *                         a v2 chunk's gap) of ONE chunk, or into
 *                         a new continuation chunk written at once at the
 *                         allocation end (space.h) and referenced by a
 *                         continuation message placed in that one chunk;
 *   h5_ohdr_aux           harmless side changes in other chunks (written
 *                         first: a crash after them leaves the old state
 *                         that libhdf5 still reads the same);
 *   h5_ohdr_commit        the ordered commit: new space fsync'd and
 *                         covered by the superblock's EOF address
 *                         (txn.h), side chunks, then the one in-place
 *                         write of the planned chunk (v2: its checksum in
 *                         the same write) that makes the change visible.
 * Every call runs under f->write_lock. */
#ifndef H5_WRITE_OHDR_EDIT_H
#define H5_WRITE_OHDR_EDIT_H

#include "base.h"
#include "file.h"
#include "ohdr.h"
#include "ohdr_note.h"

typedef struct h5_ohdr_change {
	h5_ohdr_edit e;
	size_t main;            /* the chunk whose write makes the change visible, SIZE_MAX: none yet */
	uint64_t start_end;     /* the allocation end when the change began */
	uint64_t start_reused;  /* h5_ws(f)->reused then: space taken from the free list since is new space too */
	uint64_t ticket;        /* after h5_ohdr_commit: what it freed waits for this fsync (space.h) */
	int nmsgs_delta;        /* messages added (v1 prefix count) */
} h5_ohdr_change;

int h5_ohdr_change_open(h5_ohdr_change *c, h5_file *f, uint64_t addr);
void h5_ohdr_change_close(h5_ohdr_change *c);

/* Message number old (an index into c->e.oh->msgs, SIZE_MAX: none) is
 * replaced by a message of type, flags and body (len bytes), or removed
 * (body NULL: it becomes a NIL message). crt: the v2 creation order field
 * (headers that track it). One put per change. H5_ERR_NOSPC when no
 * chunk can take it (no free space, no message to move aside). */
int h5_ohdr_put(h5_ohdr_change *c, h5_file *f, size_t old, uint16_t type, uint8_t flags, uint16_t crt,
		const void *body, size_t len);

/* n new messages at once (a dense store's links or attributes moving back
 * into the header): all in one new continuation chunk written now at the
 * allocation end, its continuation message placed as h5_ohdr_put places
 * one (free space of a chunk, or the place of a message moved into the
 * new chunk). Instead of h5_ohdr_put: one of the two per change. */
typedef struct h5_ohdr_new_msg {
	uint16_t type;
	uint8_t flags;
	uint16_t crt;
	const void *body;
	size_t len;
} h5_ohdr_new_msg;
int h5_ohdr_put_many(h5_ohdr_change *c, h5_file *f, const h5_ohdr_new_msg *m, size_t n);
/* The same where free space of one chunk holds them all, else as
 * h5_ohdr_put_many (the attribute batch's new names: one commit). */
int h5_ohdr_put_new(h5_ohdr_change *c, h5_file *f, const h5_ohdr_new_msg *m, size_t n);

/* Bytes at addr of the header changed outside the planned chunk. */
int h5_ohdr_aux(h5_ohdr_change *c, uint64_t addr, const void *bytes, size_t n);

/* Message number msg becomes a NIL message in place (its type field), a
 * side change as h5_ohdr_aux's: in the planned chunk it is written with
 * it, in another one first. */
int h5_ohdr_aux_nil(h5_ohdr_change *c, size_t msg);

/* The ordered commit. durable: fsync'd before returning. Cached copies of
 * the header are dropped whatever happens. */
int h5_ohdr_commit(h5_ohdr_change *c, h5_file *f, bool durable);

/* Changes that span chunks (a group or an object moving to dense storage:
 * every Link or Attribute message removed and the info message switched,
 * at once), made by patches and committed by h5_ohdr_commit_cow:
 *   h5_ohdr_nil        message i becomes a NIL message of its size;
 *   h5_ohdr_rewrite    message i's body replaced by len bytes (its size);
 *   h5_ohdr_commit_cow the ordered commit of the patches: those of one
 *                      chunk as h5_ohdr_commit (its one write); those
 *                      of several: every continuation chunk copied,
 *                      changed, to new space and the continuation
 *                      messages re-pointed, the copies made durable; then
 *                      chunk 0's one in-place write switches to the new
 *                      header whole.
 * The old continuation chunks are left unreferenced. */
int h5_ohdr_nil(h5_ohdr_change *c, size_t i);
int h5_ohdr_rewrite(h5_ohdr_change *c, size_t i, const void *body, size_t len);
int h5_ohdr_commit_cow(h5_ohdr_change *c, h5_file *f, bool durable);

/* h5_ohdr_move_down: when a continuation chunk of a noted header
 * (ohdr_note.h, H5_NOTE_CONT) ends at the allocation end and freed space
 * below takes all the header's continuation chunks, they are copied there
 * (h5_ohdr_commit_cow, durable) and the old ones freed - a group's chunk
 * made late in a churn otherwise keeps FILE long (h5_file_compact,
 * unmounting). 1 moved, 0 nothing to do (a header that cannot be read is
 * passed over). write_lock held (ohdr_movedown.c). */
int h5_ohdr_move_down(h5_file *f);

#endif
