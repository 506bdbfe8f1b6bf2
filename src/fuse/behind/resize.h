/* resize.h - a dataset's size set (truncate.c; trunc_set_size: wclose.c,
 * above the node's commits), for the requests that set it
 * (member/setattr.c truncate, member/size.c fallocate, write.c a write
 * past the end, wopen.c O_TRUNC, wopen.c's release trunc_unempty). Objects that lost their last
 * link: node/gone.c. */
#ifndef H5FS_RESIZE_H
#define H5FS_RESIZE_H

#include "commit.h"

/* truncate.c: n's dataset (u: as the current generation shows it, FILE
 * held for writing) made size bytes: emptied, grown (dims[0] raised, the
 * new rows reading the fill value), shrunk, or refused (logged), keeping what emptying replaced in *undo
 * (NULL: not kept; O_TRUNC: a replacement); trunc_unempty puts it back
 * after the replacement failed (FILE's lock taken there; g: the
 * generation the handle wrote through). */
int trunc_resize_undoable(h5fs *fs, struct node *n, const struct use *u, uint64_t size, h5_empty_undo *undo,
			  const char *op);
void trunc_unempty(h5fs *fs, struct node *n, fuse_ino_t ino, struct gen *g, h5_empty_undo *undo);
/* wclose.c: truncate(2) of n to size bytes (the same with FILE taken, rows of n's
 * handles not committed yet first); op names the request in log lines.
 * 0 or an errno. */
int trunc_set_size(h5fs *fs, struct node *n, uint64_t size, const char *op);

#endif
