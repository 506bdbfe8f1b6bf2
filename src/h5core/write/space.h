/* space.h - file space: where new structures go, and the end of the file.
 *
 * Space is handed out only here: at the end (h5_ws(f)->alloc_end, which starts
 * at the superblock's end of allocated space), or from space this
 * session's committed changes freed once that is safe (h5_space_free,
 * h5_space_take), so a staged chunk or block is never overwritten.
 * Every function is called under f->write_lock. The superblock's EOF field
 * and the file's length follow through txn.h's ordered commit. */
#ifndef H5_SPACE_H
#define H5_SPACE_H

#include "base.h"
#include "file.h"

/* Whether an end address fits the file's offset size (II.A "Size of
 * Offsets") and is not the undefined address. */
bool h5_space_fits(const h5_file *f, uint64_t end);

/* Whether [addr, addr + len) crosses a 4 KiB disk page: a write across
 * its boundary may be torn by a power cut, one page new, the other old,
 * so an index header there is copied, never rewritten in place (issue 65
 * item 4: btree2_write.c, farray_write.c, earray_write.c). */
bool h5_space_spans_page(uint64_t addr, uint64_t len);

/* The next free address (the allocation end). */
uint64_t h5_space_end(h5_file *f);

/* len bytes of new space at *addr; the allocation end moves past them. */
int h5_space_alloc(uint64_t *addr, h5_file *f, uint64_t len);

/* len bytes of space that the caller writes whole before anything
 * references it: a released extent of the free list (best fit) when one
 * holds them, else new space at the end (h5_space_alloc). Only for
 * blocks written in full: space at the end reads as zeros until written,
 * reused space does not. */
int h5_space_take(uint64_t *addr, h5_file *f, uint64_t len);
/* h5_space_alloc / h5_space_take for metadata rewritten in place later
 * (object header chunks, issue 71 item 5): a block of at most a page
 * never spans a 4 KiB page boundary, which a power cut may tear (doc/
 * DESIGN.md "Torn pages"). Placed in len + 4096 bytes when the first
 * place found spans one; what is not used is freed at once (nothing
 * references it; reused after a later sync, as any free). */
int h5_space_alloc_page(uint64_t *addr, h5_file *f, uint64_t len);
int h5_space_take_page(uint64_t *addr, h5_file *f, uint64_t len);

/* [addr, addr + len) is referenced by nothing once the commit that just
 * returned success is on disk: the caller's commit replaced or removed
 * what lay there. It is reused (h5_space_take) only after the fsync of
 * `ticket` (taken after the commit's last write: a durable commit's own
 * fsync) completes - never by the commit that freed it, and
 * never while a state a crash could fall back to references it. A
 * failed commit frees nothing. Errors are not the caller's: the space
 * is then leaked, as before any reuse. */
void h5_space_free(h5_file *f, uint64_t addr, uint64_t len, uint64_t ticket);

/* Every extent of `from` (each with its ticket) to h5_space_free; from
 * emptied. A writer whose readers may still hold the old addresses
 * until its caller shows the commit (the daemon reopens a dataset after
 * an overwrite) keeps its frees there until then. */
void h5_space_free_all(h5_file *f, h5_freesp *from);

/* An h5_block_cb (format/'s block walks): [addr, addr + len) noted in
 * the h5_freesp ud (never released there), the blocks of a structure a
 * change is about to stop referencing; H5_ERR_INVAL for a block noted
 * twice. */
int h5_space_note(uint64_t addr, uint64_t len, void *ud);

/* Every extent noted (h5_space_note) freed with `ticket` (h5_space_free:
 * the commit that stopped referencing them returned success); noted
 * emptied. */
void h5_space_free_noted(h5_file *f, h5_freesp *noted, uint64_t ticket);

/* The ticket of the next fsync to begin (h5_file_sync): taken right after
 * a commit's last write, it is the ticket that commit's frees wait for
 * (txn.h t->ticket; 0 given to h5_space_free: the next from now). */
uint64_t h5_space_ticket(h5_file *f);

/* Freed space whose sync came goes to the free list (merged); an extent
 * at the allocation end lowers it instead. Only between changes (a sync,
 * a reserve): a change under way compares the allocation end with where
 * it began (h5_space_take never lowers it). */
void h5_space_settle(h5_file *f);

/* The file must be at least base + eoa bytes long before a superblock
 * claiming eoa can reach the disk: libhdf5 refuses a file shorter than its
 * end of allocated space ("truncated file"). */
int h5_space_extend(h5_file *f, uint64_t eoa);

/* The end of allocated space is now `end` (the superblock says so already,
 * durably): the file is cut there. */
int h5_space_cut(h5_file *f, uint64_t end);
/* Space [start, mark) that nothing references goes back when the
 * allocation end is still mark (nothing allocated after it): the
 * allocation end drops to start and the file is cut to its EOF address
 * or start, whichever is larger (f->write_lock held). */
int h5_space_give_back(h5_file *f, uint64_t mark, uint64_t start);


#endif
