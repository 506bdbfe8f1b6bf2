/*
 * btree2_write.h - the appending writer of v2 B-tree chunk indexes (btree2_write.c).
 */
#ifndef H5_WRITE_BTREE2_WRITE_H
#define H5_WRITE_BTREE2_WRITE_H

#include "base.h"
#include "file.h"
#include "chunk_rec.h"
#include "dataset.h"

/* The appending writer of v2 B-tree chunk indexes (btree2_write.c): records
 * set by scaled coordinates, changed nodes written new by h5_bt2w_write,
 * the header rewritten in place by h5_bt2w_commit (or new: the layout
 * message must then point at h5_bt2w_addr). */
typedef struct h5_bt2w h5_bt2w;
int h5_bt2w_open(h5_bt2w **out, h5_file *f, const h5_dataset *d, uint64_t idx_addr);
int h5_bt2w_set(h5_bt2w *w, const uint64_t *scaled, const h5_chunk_rec *rec);
int h5_bt2w_write(h5_bt2w *w);
uint64_t h5_bt2w_addr(const h5_bt2w *w);
bool h5_bt2w_addr_is_new(const h5_bt2w *w);
int h5_bt2w_commit(h5_bt2w *w);
void h5_bt2w_invalidate(h5_bt2w *w);
/* After a commit that succeeded: the nodes it copied into `to` with the
 * commit's ticket (cidx_write.h freed). */
void h5_bt2w_freed(h5_bt2w *w, h5_freesp *to, uint64_t ticket);
void h5_bt2w_free(h5_bt2w *w);

#endif
