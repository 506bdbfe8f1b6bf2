/* space_punch.h - freed space given back to the host and found again by
 * the next mount (space_punch.c: free markers and holes; every function
 * under write_lock). Beneath space.c, which calls it at its allocation,
 * release and first open. */
#ifndef H5_WRITE_SPACE_PUNCH_H
#define H5_WRITE_SPACE_PUNCH_H

#include "base.h"
#include "file.h"

/* The marks list's tickets: */
#define H5_PUNCH_MARKED UINT64_MAX              /* a marker, then the hole */
#define H5_PUNCH_BARE (UINT64_MAX - 1)          /* a hole alone (one block) */
/* Whether FILE may be written now (its lock held, or none needed). */
bool h5_space_punch_ready(const h5_file *f);
/* After a release (h5_space_settle): markers the allocation end dropped
 * over zeroed; released extents changed since the last sweep marked and
 * punched. */
void h5_space_punch_sweep(h5_file *f);
/* [addr, addr + len) taken from the free list (h5_space_take): markers
 * inside zeroed before the caller's block is written and referenced. */
void h5_space_punch_taken(h5_file *f, uint64_t addr, uint64_t len);
/* Once per open FILE (h5_space_end): the extents FILE's free markers
 * name, whose holes are intact, put on the free list, released. */
void h5_space_punch_recover(h5_file *f);

#endif
