/* file_ws.h - a file's write state (file_ws.c): what the writers of write/
 * keep of one open FILE between calls (allocation ends, free lists, the
 * append streams, the attribute values and objects this session made),
 * hung off struct h5_file by one pointer. io/ and file/ never look inside
 * (the layers: io/ must not include write/): they keep what reads need,
 * and close frees this through f->ws_free. Issue 71 item 6. */
#ifndef H5_WRITE_FILE_WS_H
#define H5_WRITE_FILE_WS_H

#include "base.h"
#include "file.h"
#include "freesp.h"

struct h5_wstate {
	/* atomic: disk space held for answered changes (h5_file_reserve's
	 * holders, added under write_lock), kept past the allocation end */
	uint64_t promised;
	/* under write_lock: the datasets being appended to (append.c), and
	 * where the next new space starts (space.c; 0: at eoa; may lie below
	 * eoa when a commit reserved space ahead, doc/APPEND.md) */
	struct h5_astream *astreams;
	uint64_t alloc_end;
	/* under write_lock: the highest allocation end handed out, or had
	 * before it was lowered (space.c end_lower: space the free list gave
	 * counts too): space below it handed out again may hold blocks and
	 * chunks readers decoded from its old bytes. space.c publishes the
	 * larger of the two ends as f->space_top (io/ordered.c's) */
	uint64_t alloc_high;
	/* under write_lock: space this session's commits freed (space.c),
	 * the collections it wrote for one attribute value each (its own to
	 * free when that value is replaced, attr_write.c), and a count of
	 * allocations from the free list (a commit whose new space went
	 * there still fsyncs it before its switch: ohdr_edit.c) */
	h5_freesp freesp;
	/* under write_lock: the released extents given back to the host
	 * (space_punch.c), each by its whole 4 KiB blocks [addr, +len):
	 * a hole punched after a free marker in its first block (ticket
	 * H5_PUNCH_MARKED) or, one block, a hole alone (H5_PUNCH_BARE); the
	 * free list's released bytes and count when last matched (a sweep
	 * only after a change), and punching found unsupported */
	h5_freesp marks;
	uint64_t marks_rel;
	size_t marks_n;
	bool punch_off;
	bool marks_found;       /* FILE's free markers read (h5_space_end) */
	/* under write_lock: space freed while a reader section that began
	 * before is active (h5_file_read_begin, io/file.c), held back until
	 * it ends - a reader may be walking the structure that space held
	 * (issue 56: a dense store reused under a concurrent listxattr) */
	struct h5_quar { uint64_t addr, len, ticket, rseq; } *quar;
	size_t nquar, cquar;
	/* under write_lock: global heap collections this session wrote for
	 * attribute values, each with the number of attribute messages that
	 * reference it (one, or a write-behind batch's); freed when the last
	 * is replaced or removed (attr_build.c) */
	struct h5_owned { uint64_t addr, len; uint32_t refs; } *owned;
	size_t nowned, cowned;
	uint64_t reused;
	/* under write_lock: objects made and not linked yet (loose.c, the
	 * daemon's write-behind of new files): nothing on disk references
	 * them, so a commit of one keeps no order against a power cut and
	 * skips its fsyncs (f->loose_on, io/file.h: the commit under way is
	 * one); loose_start: the allocation end before the first of them,
	 * which the commit linking them stages from */
	uint64_t *loose;
	size_t nloose, cloose;
	uint64_t loose_start;
	/* room for new groups taken ahead (gslot.c, its own lock): made
	 * once under write_lock, read atomically by mkdir without it */
	struct h5_gpool *gpool;
	/* set by gslot.c with the pool: what a writer hangs off the state
	 * it frees itself (file_ws.c lies beneath every writer) */
	void (*gpool_free)(struct h5_gpool *p);
	/* under write_lock: names removed from symbol tables' local heaps
	 * (their bytes in the data segment, each with the ticket of the
	 * removal's commit), given back to the heap's free list by a later
	 * change of that group (link_stab.c) */
	h5_freesp lheap_names;
	/* under write_lock: objects whose blocks a change placed and that
	 * may move down at unmount (h5_file_compact), by the address of their
	 * header and a kind (ohdr_edit.h: a header with continuation chunks,
	 * a group's link storage, a dense attribute store); a header freed
	 * drops its own */
	struct h5_cont_note { uint64_t hdr; unsigned kind; } conts[32];
	unsigned nconts, next_cont;
	/* layouts changed in place (atomic): a new file's chunks made smaller
	 * at its first commit (append_commit.c rechunk_small); an overwriter
	 * opened before takes its chunk geometry again (overwrite.c) */
	uint64_t relayouts;
	/* the chunk at the highest address a rewrite placed last (chunk
	 * index coordinates), for h5_file_compact; dset 0: none */
	struct {
		uint64_t dset, addr, size;
		uint64_t scaled[H5_MAX_RANK];
	} last_chunk;
};

/* f's write state, made at the first call of any writer on f. It is
 * never NULL, so no writer has an error path for it: made once per open
 * FILE, about 1 KiB, and a failure to allocate that aborts with a message
 * (file_ws.c). Safe from any thread: the first makers race by a
 * compare-and-swap, the loser frees its copy. */
struct h5_wstate *h5_ws_make(const h5_file *f);
static inline struct h5_wstate *h5_ws(const h5_file *f)
{
	struct h5_wstate *w = __atomic_load_n(&f->ws, __ATOMIC_ACQUIRE);

	return w ? w : h5_ws_make(f);
}

/* After alloc_end or alloc_high changed (space.c, space_punch.c): their
 * larger published as f->space_top, under write_lock, where io/ordered.c
 * reads it (an in-place write's ordered copy goes above it). */
static inline void h5_ws_publish(h5_file *f)
{
	const struct h5_wstate *w = h5_ws(f);

	f->space_top = w->alloc_end > w->alloc_high ? w->alloc_end : w->alloc_high;
}

/* The disk space reserves hold for answered changes (reserve.c; read
 * under write_lock): kept past the allocation end when FILE is cut. */
static inline uint64_t h5_space_held(const h5_file *f)
{
	return __atomic_load_n(&h5_ws(f)->promised, __ATOMIC_RELAXED);
}

#endif
