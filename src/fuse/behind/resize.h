/* resize.h - a dataset's size set (truncate.c: the rows; size.c:
 * the requests). Objects that lost their last link: node/gone.c. */
#ifndef H5FS_RESIZE_H
#define H5FS_RESIZE_H

#include "commit.h"

/* truncate.c: n's dataset (u: as the current generation shows it, FILE
 * held for writing) made size bytes: emptied, rows of the fill value
 * appended, or refused (logged). op names the request in log lines. 0 or
 * an errno. */
int member_resize(h5fs *fs, struct node *n, const struct use *u, uint64_t size, const char *op);
/* The same, keeping what emptying replaced in *undo (O_TRUNC: a
 * replacement), and putting it back after the replacement failed
 * (FILE's lock taken here; g: the generation the handle wrote through). */
int member_resize_undoable(h5fs *fs, struct node *n, const struct use *u, uint64_t size, h5_empty_undo *undo,
			   const char *op);
void member_unempty(h5fs *fs, struct node *n, fuse_ino_t ino, struct gen *g, h5_empty_undo *undo);
/* size.c: truncate(2) of n to size bytes (member_resize with FILE
 * taken, rows of n's handles not committed yet first); op names the
 * request in log lines. 0 or an errno. */
int member_set_size(h5fs *fs, struct node *n, uint64_t size, const char *op);

#endif
