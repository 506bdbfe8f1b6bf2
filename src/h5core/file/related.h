/*
 * related.h - other files reached from FILE (related.c).
 */
#ifndef H5_DATASET_RELATED_H
#define H5_DATASET_RELATED_H

#include "base.h"
#include "file.h"

/* related.c: kind of name being resolved (which prefix variable applies),
 * and H5_RELATED_NOWAIT or'ed in: the descriptor gate is asked for room
 * now or never (H5_GATE_TRY), for a caller that can do without the file
 * kept open (a virtual dataset being opened turns scarce instead of
 * waiting for other requests, which may be waiting for it). */
enum { H5_RELATED_EXT = 0, H5_RELATED_VDS = 1, H5_RELATED_NOWAIT = 2 };
int h5_related_open(h5_file **out, h5_file *from, const char *name, int kind);
/* An external data file (IV.A.2.h) named by a dataset of from: opened
 * beside from, beneath FILE's directory tree as opened at mount unless -o
 * efl_any; a regular file only (0 and *fd, the caller's), else a negative
 * h5_err (H5_ERR_PERM: it leads out of the tree). */
int h5_related_open_data(int *fd, h5_file *from, const char *name);
void h5_related_release(h5_file *f);
void h5_related_free(h5_file *top);
/* h5_file_changed() bits of every related file open (under its table's lock). */
int h5_related_changed(h5_file *top);

/* related_ids.c: the numbers of the files reached from one FILE, and the
 * list of them (the caller holds its table's lock). */
struct rel_id;
struct rel_ids {
	struct rel_id *v;
	size_t n;
};
struct stat;
/* *out: the number of the local file (st) at real path path, or of url
 * for a remote file (st and path NULL): its path's own unless another
 * file of t holds it; its stamp (st) noted for h5_file_related_reached. */
int rel_ids_number(uint32_t *out, struct rel_ids *t, const struct stat *st, const char *path, const char *url);
/* fn(arg, ri) for each file of t in the order first numbered, until fn
 * returns nonzero (returned). */
int rel_ids_each(const struct rel_ids *t, int (*fn)(void *arg, const h5_related_info *ri), void *arg);
void rel_ids_free(struct rel_ids *t);

#endif
