/* root_coll.h - what the two halves of a collection share: root_coll.c
 * (the folder root: folder nodes, what a file is, the folder root's
 * operations) and coll_mount.c (the mount of a collection and the
 * dispatcher's hooks that open its members). Private to them. */
#ifndef H5FS_ROOT_COLL_H
#define H5FS_ROOT_COLL_H

#include "dispatch.h"
#include "coll_backend.h"
#include "coll_walk.h"
#include "coll_index.h"

enum fkind { FK_UNKNOWN, FK_DIR, FK_PLAIN, FK_MEMBER };

struct fnode {
	struct fnode *next_p, *next_i;
	uint64_t ino;
	char *path;             /* "" the top, "a/b.h5" */
	/* the signature answer and the stamp it was read at */
	enum fkind kind;
	uint64_t sig_size;
	int64_t sig_mtime;
	bool logged;            /* the member's open failure was logged (this stamp) */
	/* a member: its file's stamp at its last opening (under c->mu), so
	 * that one changed while it was closed has the kernel's pages of
	 * the old file dropped (coll_mount.c note_opened) */
	struct member_stamp opened;
	bool opened_set;
};

struct coll {
	h5fs_mount *m;
	const struct coll_backend *be;
	void *b;
	h5fs_config cfg;
	h5_open_opts oo;        /* members' (ext_root: the collection's tree) */
	int tree_fd;            /* that tree, opened at mount (oo.dir_fd), or -1 */
	pthread_mutex_t mu;
	struct fnode **by_path, **by_ino;
	size_t cap, n;
	uint64_t next_ino;
	unsigned fds;           /* plain files open and signature reads (atomic) */
	double timeout;
	/* the persistent index (coll_index.h), NULL with -o noindex */
	struct coll_index *ci;
};

/* root_coll.c */
extern const struct root_ops coll_folder_ops;
struct fnode *coll_fnode_by_ino(struct coll *c, uint64_t ino);
struct fnode *coll_fnode_get(struct coll *c, const char *path);
void coll_stamp_of(struct member_stamp *ms, const struct coll_stat *cs);
int coll_gate(void *ud, int delta);

#endif
