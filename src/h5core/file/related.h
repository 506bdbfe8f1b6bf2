/*
 * related.h - other files reached from FILE (related.c).
 */
#ifndef H5_DATASET_RELATED_H
#define H5_DATASET_RELATED_H

#include "base.h"
#include "file.h"

/* related.c: kind of name being resolved (which prefix variable applies) */
enum { H5_RELATED_EXT = 0, H5_RELATED_VDS = 1 };
int h5_related_open(h5_file **out, h5_file *from, const char *name, int kind);
void h5_related_release(h5_file *f);
void h5_related_free(h5_file *top);
/* h5_file_changed() bits of every related file open (under its table's lock). */
int h5_related_changed(h5_file *top);

#endif
