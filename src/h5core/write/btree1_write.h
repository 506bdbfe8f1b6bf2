/*
 * btree1_write.h - the appending writer of v1 B-tree chunk indexes (btree1_write.c).
 */
#ifndef H5_WRITE_BTREE1_WRITE_H
#define H5_WRITE_BTREE1_WRITE_H

#include "base.h"
#include "file.h"
#include "chunk_rec.h"
#include "freesp.h"

/* The appending writer of v1 B-tree chunk indexes (btree1_write.c):
 * records set in memory (scaled chunk offsets, rank entries), changed nodes
 * written as new nodes by h5_bt1w_write (new root: h5_bt1w_root), then
 * after the layout switch h5_bt1w_patch fixes unchanged siblings' pointers. */
typedef struct h5_bt1w h5_bt1w;
int h5_bt1w_open(h5_bt1w **out, h5_file *f, uint64_t root, unsigned rank, const uint64_t *chunk,
		 uint32_t esize);
int h5_bt1w_set(h5_bt1w *w, const uint64_t *scaled, const h5_chunk_rec *rec);
/* The record of the chunk at `scaled` removed (a punched hole, issue 65;
 * a shrink): 0 (also when there is none); a node it empties leaves the
 * tree. The cidx op `set` with an undefined address calls it. */
int h5_bt1w_remove(h5_bt1w *w, const uint64_t *scaled);
int h5_bt1w_write(h5_bt1w *w);
uint64_t h5_bt1w_root(const h5_bt1w *w);
int h5_bt1w_patch(h5_bt1w *w);
void h5_bt1w_invalidate(h5_bt1w *w);
/* After a commit that succeeded: the old copies of the nodes written anew,
 * added to `to` with the commit's ticket. */
void h5_bt1w_freed(h5_bt1w *w, h5_freesp *to, uint64_t ticket);
void h5_bt1w_free(h5_bt1w *w);

#endif
