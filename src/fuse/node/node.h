/*
 * node.h - the node model of a single-file mount (src/fuse/node), below
 * the member root's operations (src/fuse/member) that use it:
 *   node.c         how an object is shown, building a node, its lifetime
 *   names.c        names, paths and where a link leads
 *   fresh.c        nodes re-resolved in a live FILE's new generation
 *   view_node.c    the nodes of datasets' views (NAME.npy, .csv, ...) made
 *   xattr_cache.c  every xattr of an object kept in its node
 *   hold.c         FILE held for writing, and the lost-change state
 *   gone.c         objects that lost their last link: nodes no longer
 *                  matched, storage kept while a descriptor reads it
 *   handles.c      the lists of open handles (directories, write handles)
 * Nothing here calls up into member/: what an operation must learn from
 * the model is returned to it. The state is fs.h's; the live-file
 * machinery it calls is live.h's.
 */
#ifndef H5FS_NODE_H
#define H5FS_NODE_H

#include "fs.h"
#include "live.h"
#include "views.h"

#include <time.h>

/* ---- hold.c ---- */
/* Appends are possible: FILE is open read-write and the mount is not -o ro */
bool fs_writable(const h5fs *fs);
/* Every write (a write descriptor's first bytes, setfattr, mkdir, rm, mv,
 * ...) runs between these two: fs_write_begin returns 0 when FILE is held
 * for writing, or an errno (EROFS on a mount that cannot write, EBUSY when
 * another program holds FILE's lock, ESTALE when another program changed
 * it and the mount does not follow: -o refresh=0); fs_write_end gives
 * FILE back once the write is committed. The write goes through the
 * current generation (a live mount opens FILE anew first when another
 * program changed it), whose nodes the writer takes with
 * node_use_current. The lock policy lives behind them alone. */
int fs_write_begin(h5fs *fs);
/* the same for putting back what a failed change took away: also on a
 * mount that lost a change (fs_lost) */
int fs_write_begin_undo(h5fs *fs);
void fs_write_end(h5fs *fs);
/* A change of this mount (a FILE write, a request that changes a name,
 * a stat or what is kept in memory to be written) runs between these
 * two. fs_change_mark: the changes begun so far (*mark), and true when
 * none is under way; fs_change_since: one began after mark. What a
 * listing read after a quiet mark is what a lookup would read while
 * none began since (member/read.c: a read-write mount's cold walk,
 * issue 82). */
void fs_change_begin(h5fs *fs);
void fs_change_end(h5fs *fs);
bool fs_change_mark(h5fs *fs, uint64_t *mark);
bool fs_change_since(h5fs *fs, uint64_t mark);
/* After an attribute or link change committed, or storage freed (an
 * unlinked dataset's, released at its last close): remembered until
 * fs_meta_sync (commit/durable.c) makes it durable and cuts FILE to its
 * end of allocation (fsync, syncfs, idle, unmount). */
void fs_meta_changed(h5fs *fs);
/* A sync of FILE began when the pager's seq was seq, and succeeded: the changes
 * remembered before it are durable (unless another came meanwhile) */
void fs_meta_synced(h5fs *fs, uint64_t seq);
/* A change answered success could not be written (err: its errno): from
 * now on every write gets EIO and the next fsync err (the pager LOST), until
 * unmount, which exits non-zero. fs_lost: 0 or that errno. */
void fs_lost_set(h5fs *fs, int err);
int fs_lost(h5fs *fs);

/* ---- node.c ---- */
int node_make_obj(struct node **out, h5fs *fs, h5_file *f, uint64_t addr, uint64_t nodeid,
			 const char *path);
/* remember false: the kind map holds the object's kind already (a lookup
 * found it there: its probe and lock saved, issue 70) */
int node_make_obj_as(struct node **out, h5fs *fs, h5_file *f, uint64_t addr, uint64_t nodeid,
		     const char *path, bool remember);
/* What node_make_obj_as's node of the object at addr of f would show
 * stat, and its kind and birth tag, without making a node (a listing's one
 * pass over its children's headers gives READDIRPLUS a stat-only answer,
 * member/read.c), its header's first bytes read through w (NULL: none):
 * 0, or a negative h5_err */
int node_obj_stat(struct stat *st, h5_obj_kind *kind, uint32_t *tag, h5fs *fs, h5_file *f, uint64_t addr,
		  h5_window *w);
int node_make_link(struct node **out, h5fs *fs, uint64_t ino, const char *path,
			  const char *dir, const h5_link *l, int depth);
void node_free(struct node *n);
/* A dataset node's opened dataset let go after its lookup (what stat
 * shows is kept), and opened again where its bytes are needed (open,
 * truncate, views): 0, or an errno (ESTALE; EIO logged) */
void node_ds_shed(struct node *n);
int node_ds_need(h5fs *fs, struct node *n);
struct node *node_publish(h5fs *fs, struct node *fresh);
struct node *node_ref_existing(h5fs *fs, uint64_t ino);
void node_unref(h5fs *fs, uint64_t ino, uint64_t count);

/* ---- names.c ---- */
int ancestor_depth(h5fs *fs, const struct node *dir, uint64_t ino);
/* The st_ino of dir and of each directory above it on its path, dir's
 * first (inos[d]: ancestor_depth d), read at once under one lock: how
 * many, or -1 when there are more than max (a listing's children are
 * compared with them, not walked up to each: issue 82) */
int ancestor_chain(h5fs *fs, const struct node *dir, uint64_t *inos, int max);
uint64_t file_ino(const h5_file *f, uint64_t addr);
uint64_t file_nodeid(const h5fs *fs, h5_file *f, uint64_t addr);
char *mount_target(const struct node *dir, const char *target);
int dir_anchor(struct node *d, h5_file *top, const struct node *p, h5_file *tf, const char *name, const char *path,
	       const char *fpath);
int link_place(h5_file **tf, uint64_t *taddr, char **fpath, const struct node *p, h5_file *pf, const h5_link *l);
int link_shown(h5_link *shown, char **mtarget, const struct node *p, h5_file *pf, const h5_link *l, int rc);
unsigned path_ncomps(const char *p);
/* "..", "../..": the symlink text of a link up depth levels */
char *updirs(int depth);
/* a soft link's target, relative to dir, as the mount shows it */
char *symlink_text(const char *dir, const char *target);
/* Whether path t has a ".." component (HDF5 paths have none: libhdf5
 * looks for a link of that name; names.c) */
bool path_has_dotdot(const char *t);

/* ---- fresh.c: n re-resolved by its path in the current generation when
 * a newer one exists; its object held for a request (node_use) ---- */
int node_fresh(h5fs *fs, struct node *n);
/* ino a stat-only object (a record of state/fs.h struct lslot) of an older
 * generation than a live FILE's current one: re-resolved in place, as
 * the sweep does (light_refresh); true when it is one of the current
 * generation now (ask light_getattr/light_ref again), false when it was
 * none or is a struct node now */
bool node_light_fresh(h5fs *fs, uint64_t ino);
int node_use(struct use *u, h5fs *fs, struct node *n);
/* While FILE's lock is held (fs_write_begin): n as the current generation
 * shows it (re-resolved first if it was read in another), or ESTALE */
int node_use_current(struct use *u, h5fs *fs, struct node *n);
void node_use_end(struct use *u);
/* (lv->mu held): 0, ESTALE, or EIO (logged when log) */
int node_rebuild(h5fs *fs, struct node *n, bool log);
/* After a new generation, from the watcher: every node resolved in it */
void node_sweep(h5fs *fs);
/* After a rename of name in directory p to newname in np: the nodes at
 * the old path and below take the new one (the moved directory its new
 * (parent, name) number too), symlinks among them resolved again */
void node_moved(h5fs *fs, const struct node *p, const char *name, const struct node *np, const char *newname);
/* The same for a file (no names below it) whose node id is ino */
void node_moved_file(h5fs *fs, const struct node *p, const char *name, const struct node *np, const char *newname,
		     uint64_t ino);

/* ---- view_node.c ---- */
/* Make n (a dataset's node, just made) the view kind/frame numbered ino:
 * 0, H5_ERR_NOTFOUND when the dataset cannot have it, or an h5_err. */
int views_apply(h5fs *fs, struct node *n, int kind, uint64_t frame, uint64_t ino);
/* The mount path of the dataset view node n shows (malloc'd) */
char *views_base_path(const struct node *n);
/* View node n made again of the object taddr of tf (a live refresh):
 * 0 and *out, *out NULL when it cannot have the view now, or an h5_err. */
int views_make(struct node **out, h5fs *fs, h5_file *tf, uint64_t taddr, const struct node *n);

/* n changed by the mount (issue 72 item 7, xfstests' generic tests): its
 * st_ctime now, and st_mtime too when data (a write; a directory's
 * entries). Kept in the node, consistent within the mount; what the
 * object's header stores is set where it has one (setattr.c, appends). */
void node_touch(struct node *n, bool data);

/* ---- xattr_cache.c ---- */
/* n's kept set dropped (under n->lk, write): f, addr or gen changed, or an
 * attribute of it was written */
void xattr_cache_drop(struct node *n);
/* Answer listxattr (name NULL) or getxattr from n's set, reading it first
 * when it has none: 1 answered, 0 not (the engine answers). u: what the
 * request reads of n (node_use). */
int xattr_cached(h5fs *fs, struct node *n, const struct use *u, const char *name, char *buf, size_t size,
		 size_t *len);

/* ---- gone.c: objects that lost their last link ---- */
/* The object at addr of f lost its last link (rmdir; unlink and rename
 * over: gone_keep): no later lookup gets its nodes. */
void gone_unlinked(h5fs *fs, h5_file *f, uint64_t addr);
/* A removed or replaced dataset's storage freed now when no descriptor
 * reads the object, else when the last closes (gone_closed) or its node
 * is forgotten (node.c node_unref). */
void gone_keep(h5fs *fs, struct gen *g, h5_file *f, uint64_t addr, struct h5_gone *gone);
/* A descriptor of n closed (storage kept for it freed when last). */
void gone_closed(h5fs *fs, struct node *n);
/* Whether a descriptor reads the object at addr of f (through any node
 * of it). Takes fs->lock. */
bool gone_object_open(h5fs *fs, h5_file *f, uint64_t addr);
/* Whether n's object lost its last link and no node of it keeps its
 * storage (no descriptor reads it): its space may hold another object
 * now, so a change must not read it (fresh.c node_use_current: ENOENT) */
bool gone_freed(h5fs *fs, const struct node *n);

/* ---- handles.c: a handle put on and taken off one of the lists of open
 * handles (fs->open_dirs, fs->open_wfiles; under fs->lock) ---- */
void handle_add(h5fs *fs, struct hlink *list, struct hlink *h);
void handle_del(h5fs *fs, struct hlink *h);

#endif
