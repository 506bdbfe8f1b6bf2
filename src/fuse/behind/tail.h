/* tail.h - rows accepted at a dataset's end and not committed yet, kept
 * and shown to readers (tail.c; the node holds them: fs.h struct ntail,
 * freed with the node). Used by the write path (write.c, wfile.c,
 * wclose.c, overwrite.c, truncate.c) and the member root's reads
 * (member/read.c). */
#ifndef H5FS_TAIL_H
#define H5FS_TAIL_H

#include "node.h"

/* The node's size is the accepted end; rows of rb bytes, the trailing
 * partial one kept; n->lk taken inside unless said. ENOMEM. */
int tail_accept(struct node *n, const char *buf, size_t len, uint64_t rb);
/* (under n->lk, write) committed bytes of the dataset now: what is left
 * waiting, and the node's size */
void tail_committed(struct node *n, uint64_t committed);
/* (under n->lk) the committed end: where the waiting bytes begin */
uint64_t tail_base(const struct node *n);
/* The last len accepted bytes (a dropped partial row), or everything
 * waiting (len UINT64_MAX: an append failed) are gone: the old size */
uint64_t tail_drop(struct node *n, uint64_t len);
/* (under n->lk) whether [off, off+len) reaches bytes not committed, and
 * its answer then (committed bytes read, then the kept partial row), or 1:
 * whole rows not committed are in it, commit them first (wfile_show_node) */
bool tail_covers(const struct node *n, uint64_t off, size_t len);
int tail_read(h5_read_plan *out, struct node *n, uint64_t off, size_t len);

#endif
