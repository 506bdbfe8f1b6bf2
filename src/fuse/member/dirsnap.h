/*
 * dirsnap.h - a directory listing of the member root (read.c), shared
 * with ahead.c, which makes the next directory's ahead of its readdir.
 */
#ifndef H5FS_DIRSNAP_H
#define H5FS_DIRSNAP_H

#include "member.h"

/* A directory listing, taken at the handle's first readdir and kept by it
 * so that readdir offsets stay meaningful however the kernel splits the
 * reads. Not at opendir: where the kernel keeps listings (cache_readdir)
 * an opendir it answers from its cache brings no READDIR, and a walk's
 * every opendir built the whole listing for nothing (issue 70). */
struct dent {
	size_t name;            /* offset in the listing's names */
	uint64_t ino;
	uint64_t addr;          /* hard links: to find the kind */
	unsigned char dtype;    /* DT_* */
	bool has_st;            /* its stat-only answer is in the listing's st[] */
	h5_link *link;          /* links that may be shown in place (link_place) */
};

/* A dataset's or named datatype's stat as its READDIRPLUS entry shows it,
 * read by the listing's pass over the header (node_obj_stat), so that the
 * entry's lookup reads it no second time nor makes a node to free again
 * (issue 82) */
struct dstat {
	struct stat st;
	uint32_t tag;
	h5_obj_kind kind;
};

struct dirsnap {
	struct hlink link;      /* first: fs->open_dirs */
	size_t n, cap;
	struct dent *e;
	struct dstat *st;       /* (d->n of them once one is read; has_st) */
	/* every name, NUL-terminated, in one buffer: a walk's listings made
	 * a malloc per entry (issue 70) */
	char *names;
	size_t names_len, names_cap;
	size_t skipped;
	int nomem;
	bool keep_soft;         /* a directory of another file: soft links may lead out */
	/* taken at the first readdir (mu: the kernel serializes a handle's
	 * readdirs, but nothing here relies on it) */
	pthread_mutex_t mu;
	bool built;
	int err;                /* the listing's errno, once built */
	fuse_ino_t ino;
	/* a mount that writes: none of its changes under way as the
	 * listing was read (after chg_mark of them had begun: node.h
	 * fs_change_mark), so its entries are what a lookup reads while
	 * none began since (issue 82) */
	bool quiet;
	uint64_t chg_mark;
	struct gen *gen;        /* the generation listed (held), */
	bool told;              /* and the kernel told to drop the copy of it it
				 * may take from this handle once it is old */
	h5fs *fs;               /* while listing: the group (rf, raddr), whose */
	h5_file *rf;            /* names an rmdir answered are not listed */
	uint64_t raddr;
};

/* The listing of directory ino read into d (calloc'd, mu made, ino set):
 * 0 or an errno (EIO logged). ahead (ahead.c's thread): without the
 * commit barrier, which the readdir that takes the listing makes */
int dirsnap_list(struct dirsnap *d, h5fs *fs, fuse_ino_t ino, bool ahead);

/* ahead.c */
/* d (built, no error) is taken by a readdir: the next directory a walk
 * lists after it asked for ahead (a listing of several directories: its
 * first; one of those: the one after it) */
void ahead_listed(h5fs *fs, const struct dirsnap *d);
/* The listing of d->ino made ahead, moved into d (not built yet, d->mu
 * held): true when there was one that still reads as a listing made now
 * would; waits for one being made */
bool ahead_take(h5fs *fs, struct dirsnap *d);

#endif
