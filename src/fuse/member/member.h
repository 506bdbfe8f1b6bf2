/*
 * member.h - the member root's operations (src/fuse/member): the
 * single-file root class (root.h) that root_member.c assembles, each
 * entry the file's that implements it (lookup.c, read.c, open.c,
 * xattr.c, link.c, setattr.c, size.c; write, flush and fsync are
 * behind/'s) and views.c's around
 * them. What the files share among themselves: retype.h (renames of
 * bytes over a typed dataset, rename_keep.c; types set back by xattrs,
 * retype.c). Below the operations, in headers of their own:
 *   behind/    the write-behind kinds (handle.h write handles, pending
 *              bytes and overwrites; wstate.h their insides; resize.h a
 *              dataset's size; batch.h the attribute and link batches;
 *              npystream.h np.save streams)
 * The commit layer (commit.h) and the node model (node.h) are below.
 */
#ifndef H5FS_MEMBER_H
#define H5FS_MEMBER_H

#include "commit.h"

/* read.c: a directory snapshot freed (setup.c: one never released) */
struct dirsnap;
void dirsnap_free(struct dirsnap *d);
/* ahead.c: its thread stopped and what it holds freed, for good (the
 * unmount; again: nothing) */
void ahead_stop(h5fs *fs);
/* setup.c: handles whose release never came, freed at exit */
void handles_free(h5fs *fs);
/* member/read.c: the member root's reads (root.h) */
int member_lookup(void *r, struct root_entry *e, uint64_t parent, const char *name);
/* What a listing knew of a name it listed (read.c member_listed), for
 * READDIRPLUS's lookup of it: the object its hard link leads to in the
 * generation listed, so the lookup need not find the name in the group's
 * B-tree again nor its kind in the kind map (issue 70: ~10% of a cold
 * walk's daemon CPU). addr UINT64_MAX: only the name is known. */
struct listed {
	const struct gen *gen;  /* the generation listed */
	uint64_t addr;          /* FILE's object (a hard link's) */
	int group;              /* 1 a group, 0 not one, -1 not known */
	/* has_st: what the listing read of it (read.c struct dstat): the
	 * stat a stat-only answer shows, its kind and birth tag */
	bool has_st;
	h5_obj_kind kind;
	uint32_t tag;
	struct stat st;
	/* a mount that writes: the listing was read with none of its
	 * changes under way (quiet), after chg of them had begun
	 * (node.h fs_change_mark): its word holds while none began since */
	bool quiet;
	uint64_t chg;
};
/* lookup.c: NAME in group (f, group) as lookup and mkdir see it: FILE's link (*l,
 * the h5_group_lookup's rc returned) less an rmdir's answered and not
 * committed (*removed), or a new file not linked yet (*pending, its
 * header *taddr), all read with no batch committed in between. */
int member_name_seen(h5_link *l, bool *removed, bool *pending, uint64_t *taddr, h5fs *fs, h5_file *f,
		     uint64_t group, const char *name);
/* entry i of listing dh (as member_readdir gave it), of root r */
void member_listed(struct listed *out, void *r, void *dh, size_t i);
/* listed: READDIRPLUS's lookup (root.h lookup_listed), else NULL */
int member_lookup_as(void *r, struct root_entry *e, uint64_t parent, const char *name, const struct listed *listed);
void member_forget(void *r, uint64_t ino, uint64_t nlookup);
/* export.c: file handles. LOOKUP of "." (dotdot: "..") on node id ino,
 * what the kernel asks to open a handle of an inode it dropped: 0 and
 * *e (one reference), or ESTALE. export_freed_locked: ino lost its last
 * link (under fs->lock; gone.c), its generation one more */
int member_lookup_dot(void *r, struct root_entry *e, uint64_t ino, bool dotdot);
void export_freed_locked(h5fs *fs, uint64_t ino);
/* idgen.c: the generation of node id ino: its object's birth tag (export_tag),
 * else 0, or one more per object removed there in this mount */
uint64_t export_gen(h5fs *fs, uint64_t ino);
/* an object whose birth tag is tag (0: none) is shown: export_gen looks
 * for tags from now on (the node or record made keeps it) */
void export_tag(h5fs *fs, uint32_t tag);
/* idgen.c: a table of node ids (fs->freed; export.c's search): id's
 * entry or NULL; id's entry made (gen 0) when new (*made), NULL: out of
 * memory */
struct idgen *u64set_find(const struct u64set *s, uint64_t id);
struct idgen *u64set_add(struct u64set *s, uint64_t id, bool *made);
void u64set_free(struct u64set *s);
int member_getattr(void *r, struct stat *st, double *timeout, uint64_t ino);
int member_readlink(void *r, char **target, uint64_t ino);
int member_opendir(void *r, void **dh, bool *keep, uint64_t ino);
int member_readdir(void *r, struct root_dirent *out, void *dh, size_t i);
void member_releasedir(void *r, void *dh);
int member_read(void *r, struct root_read *out, uint64_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void member_read_done(void *r, struct root_read *out);
void member_usage(void *r, uint64_t *bytes, uint64_t *objects);

/* size.c: fallocate(2) (root.h): mode 0, a dataset grown sparsely to
 * off + len bytes when that is past its end, else nothing to do;
 * PUNCH_HOLE | KEEP_SIZE, the range inside it reads zeros (ow_punch) */
int member_fallocate(void *r, uint64_t ino, int mode, uint64_t off, uint64_t len);
/* setattr.c: chmod, chown, utimens, truncate (root.h) */
int member_setattr(void *r, struct stat *out, double *timeout, uint64_t ino, const struct stat *attr, int to_set);
/* member/open.c: read or write handle, page cache or not */
int member_open(void *r, struct fuse_file_info *fi, uint64_t ino);
int member_release(void *r, uint64_t ino, struct fuse_file_info *fi);
/* write, flush, fsync: the write-behind's (behind/handle.h behind_write) */

/* views.c: the member root's lookup, listing, open and xattrs with the
 * views of datasets (root_member.c's table) */
int views_lookup(void *r, struct root_entry *e, uint64_t parent, const char *name);
/* READDIRPLUS's lookup of entry i of listing dh (root.h lookup_listed) */
int views_lookup_listed(void *r, struct root_entry *e, uint64_t parent, const char *name, void *dh, size_t i);
int views_opendir(void *r, void **dh, bool *keep, uint64_t ino);
int views_readdir(void *r, struct root_dirent *out, void *dh, size_t i);
void views_releasedir(void *r, void *dh);
int views_open(void *r, struct fuse_file_info *fi, uint64_t ino);
int views_getattr(void *r, struct stat *st, double *timeout, uint64_t ino);
int views_listxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino);
int views_getxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino, const char *name);
int views_setxattr(void *r, uint64_t ino, const char *name, const char *value, size_t size, int flags);
int views_removexattr(void *r, uint64_t ino, const char *name);
int views_mkdir(void *r, uint64_t parent, const char *name);
int views_rmdir(void *r, uint64_t parent, const char *name);
int views_unlink(void *r, uint64_t parent, const char *name);
int views_symlink(void *r, const char *target, uint64_t parent, const char *name);
int views_create(void *r, uint64_t parent, const char *name);
int views_rename(void *r, uint64_t parent, const char *name, uint64_t newparent, const char *newname, unsigned flags);
int views_link(void *r, uint64_t ino, uint64_t newparent, const char *newname);

int member_listxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino);
int member_getxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino, const char *name);
int member_setxattr(void *r, uint64_t ino, const char *name, const char *value, size_t size, int flags);
int member_removexattr(void *r, uint64_t ino, const char *name);
/* fsync of a directory: the changes made durable, and a lost one's errno */
int member_fsyncdir(void *r, uint64_t ino);
/* (member/link.c) */
int member_mkdir(void *r, uint64_t parent, const char *name);
int member_rmdir(void *r, uint64_t parent, const char *name);
int member_unlink(void *r, uint64_t parent, const char *name);
int member_symlink(void *r, const char *target, uint64_t parent, const char *name);
/* create(2): a new growable 1-D uint8 dataset NAME, written by appends;
 * NAME.npy: the placeholder of an np.save stream (npy.c) */
int member_create(void *r, uint64_t parent, const char *name);
int member_rename(void *r, uint64_t parent, const char *name, uint64_t newparent, const char *newname,
		  unsigned flags);
int member_link(void *r, uint64_t ino, uint64_t newparent, const char *newname);

#endif
