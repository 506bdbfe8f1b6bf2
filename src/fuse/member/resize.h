/* resize.h - a dataset's size set (truncate.c: the rows; size.c:
 * the requests) and objects that lost their last link (gone.c). */
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
/* gone.c: the object at addr of f lost its last link (rmdir; unlink and
 * rename over: member_gone_keep): no later lookup gets its nodes. */
void member_unlinked(h5fs *fs, h5_file *f, uint64_t addr);
/* size.c: truncate(2) of n to size bytes (member_resize with FILE
 * taken, rows of n's handles not committed yet first); op names the
 * request in log lines. 0 or an errno. */
int member_set_size(h5fs *fs, struct node *n, uint64_t size, const char *op);
/* gone.c: a removed or replaced dataset's storage freed now when no
 * descriptor reads the object, else when the last closes (member_closed)
 * or its node is forgotten (node.c node_unref). */
void member_gone_keep(h5fs *fs, struct gen *g, h5_file *f, uint64_t addr, struct h5_gone *gone);
/* gone.c: a descriptor of n closed (storage kept for it freed when last). */
void member_closed(h5fs *fs, struct node *n);

#endif
