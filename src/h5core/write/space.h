/* space.h - file space: where new structures go, and the end of the file.
 *
 * Space is handed out only here, always at the end (f->alloc_end, which
 * starts at the superblock's end of allocated space), and never given back
 * while the file is open, so a staged chunk or block is never overwritten.
 * Every function is called under f->write_lock. The superblock's EOF field
 * and the file's length follow through txn.h's ordered commit. */
#ifndef H5_SPACE_H
#define H5_SPACE_H

#include "base.h"
#include "file.h"

/* Whether an end address fits the file's offset size (II.A "Size of
 * Offsets") and is not the undefined address. */
bool h5_space_fits(const h5_file *f, uint64_t end);

/* The next free address (the allocation end). */
uint64_t h5_space_end(h5_file *f);

/* len bytes of new space at *addr; the allocation end moves past them. */
int h5_space_alloc(uint64_t *addr, h5_file *f, uint64_t len);

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
