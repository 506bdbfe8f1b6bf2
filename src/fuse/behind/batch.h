/* batch.h - the write-behind batches of the member root, each a kind
 * of the commit layer's scheduler (commit/sched.c): new files not linked
 * yet (lbatch.c) and attribute values answered (xbatch.c). */
#ifndef H5FS_BATCH_H
#define H5FS_BATCH_H

#include "commit.h"

/* behind/xbatch.c: setfattr's write-behind of new string attributes.
 * xbatch_add: 0 when the change is accepted (committed with its batch),
 * an errno, or 1 when it is not one for a batch (a name that is there, or
 * pending): the caller makes it at once. Every other xattr request,
 * link change and fsync flushes it first (commit_barrier COMMIT_ATTRS, a
 * kind of commit/sched.c); xbatch_stop commits what is left and
 * unregisters the kind. */
int xbatch_add(h5fs *fs, struct node *n, const char *name, size_t name_len, const char *val, size_t len,
	       int flags);
void xbatch_stop(h5fs *fs);

/* behind/lbatch.c: the write-behind of new files. lbatch_create: 0 when
 * NAME's dataset d (d NULL: an empty group, mkdir) is made in group p
 * (not linked yet: linked with its batch), an errno, or -1 when there is no batch (the caller makes it at
 * once). lbatch_lookup: whether NAME is a pending new file of group
 * (*addr: its header). Every readdir, link change and fsync flushes first
 * (commit_barrier COMMIT_NAMES: 0, or the errno of a commit that failed,
 * tried again by the next flush); lbatch_stop links what is left and
 * unregisters the kind. */
int lbatch_create(h5fs *fs, struct node *p, const char *name, const h5_dset_new *d);
bool lbatch_lookup(h5fs *fs, h5_file *f, uint64_t group, const char *name, uint64_t *addr);
/* Batches linked so far: a lookup that found NAME neither in FILE nor
 * pending looks in FILE again when a batch was linked meanwhile. */
uint64_t lbatch_commits(h5fs *fs);
/* rmdir's write-behind (issue 70 item 3): 0 when NAME, an empty group of
 * p (*target its header), is removed with the batch (lookups then miss
 * it: lbatch_removed), an errno, -2 with *h5rc the engine's refusal
 * (no such group, not empty), or -1 when there is no batch. */
int lbatch_rmdir(h5fs *fs, struct node *p, const char *name, uint64_t *target, int *h5rc);
bool lbatch_removed(h5fs *fs, h5_file *f, uint64_t group, const char *name, size_t len);
/* A pending new file (header addr in f) given up before its name was
 * linked: out of the batch, its header no longer loose (its space
 * unreferenced). 1 with *name (malloc'd) and *pino (its group's node),
 * or 0 when it is not pending (linked already, or another file's). */
int lbatch_forget(h5fs *fs, h5_file *f, uint64_t addr, char **name, uint64_t *pino);
/* A pending new file (header addr in f) that no registered handle shows
 * writing may still get rows or be given up (busy: from its create to
 * its write handle's registration, and through its handle's release):
 * the timer leaves it unlinked meanwhile (LB_HOLD_MS at most). Nothing
 * when addr is not pending. */
void lbatch_busy(h5fs *fs, struct node *n, bool busy);
void lbatch_stop(h5fs *fs);
/* behind/mbatch.c: rename, link and unlink's write-behind (issue 82
 * item 2) in a group of any form: 0 when the change joins the batch
 * (answered now, committed with it), an errno decided before the answer
 * (ENOENT, EEXIST, ENOSPC), or -1 when it is not one for the batch (the
 * caller takes today's path, whose barrier commits the batch first).
 * lbatch_rename: within group p; lbatch_link: the object at addr named
 * NEWNAME in p; lbatch_unlink: NAME of p - a soft or external link
 * (*addr UINT64_MAX), or a name of the object *addr which keeps
 * another name, or (*last) a dataset's only name when may_take_last(fs, f, addr)
 * says its file allows it and no descriptor reads it (the caller then marks its nodes unlinked). lbatch_moved: whether NAME of group names an object by
 * the batch (*addr); lbatch_removed says it removed. */
int lbatch_rename(h5fs *fs, struct node *p, const char *name, const char *newname);
int lbatch_link(h5fs *fs, struct node *p, uint64_t addr, const char *newname);
int lbatch_unlink(h5fs *fs, struct node *p, const char *name, uint64_t *addr, bool *last,
		  bool (*may_take_last)(h5fs *fs, h5_file *f, uint64_t addr));
bool lbatch_moved(h5fs *fs, h5_file *f, uint64_t group, const char *name, uint64_t *addr);
/* The count st_nlink shows for the object at addr of f (*nlink, at least
 * 1; 0 when its header counts none): FILE's with the change of it the
 * batch holds, both read under the batch's lock so that a commit
 * meanwhile is counted once; 0, or the h5_err of its header's read. */
int lbatch_nlink(h5fs *fs, h5_file *f, uint64_t addr, unsigned *nlink);
/* Whether a count of addr read from FILE when lbatch_commits said
 * commits may be off (a change of it pending, or a commit since): ask
 * lbatch_nlink then */
bool lbatch_nlink_moved(h5fs *fs, h5_file *f, uint64_t addr, uint64_t commits);
/* The kinds (commit/commit.h struct commit_kind), registered with the
 * mount by member/setup.c: new files and directories, attribute values */
extern const struct commit_kind lbatch_kind, xbatch_kind;
/* A new name asked of the names kind before its answer (commit_ask with
 * kind COMMIT_NAMES, arg one of these): whether group (f, group) can take
 * a link NAME of type (a soft link's target) as its storage is or as
 * this insert makes it (ENAMETOOLONG, logged: a message larger than a
 * header message or than the group's dense store keeps in place:
 * member/link.c's symlink, rename); for a name joining the batch (lb,
 * lbatch.c's create and mkdir, its lock held): not pending nor in the
 * group (EEXIST), and the room its commit may take reserved (ENOSPC). */
struct lbatch;
struct lb_ask {
	h5_file *f;
	uint64_t group;
	const char *name;
	h5_link_type type;
	const char *target;
	struct lbatch *lb;
};

#endif
