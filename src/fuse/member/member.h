/*
 * member.h - what the member root's files share (src/fuse/member): the
 * single-file root class (root.h) that root_member.c assembles from
 * read.c (lookup, attributes, directories, reads), node.c and names.c
 * (building nodes, names and paths), write.c and overwrite.c (bytes
 * written), xattr.c, link.c (attribute and link changes), fresh.c (nodes
 * re-resolved in a live FILE's new generation), views.c and setup.c.
 * The state it works on is fs.h's; the live-file machinery it calls is
 * live.h's.
 */
#ifndef H5FS_MEMBER_H
#define H5FS_MEMBER_H

#include "fs.h"
#include "live.h"

#include <time.h>

struct dirsnap;

/* member/read.c: the member root's reads (root.h) */
void dirsnap_free(struct dirsnap *d);
void handle_add(h5fs *fs, struct hlink *list, struct hlink *h);
void handle_del(h5fs *fs, struct hlink *h);
int member_lookup(void *r, struct root_entry *e, uint64_t parent, const char *name);
void member_forget(void *r, uint64_t ino, uint64_t nlookup);
int member_getattr(void *r, struct stat *st, double *timeout, uint64_t ino);
int member_readlink(void *r, char **target, uint64_t ino);
int member_opendir(void *r, void **dh, bool *keep, uint64_t ino);
int member_readdir(void *r, struct root_dirent *out, void *dh, size_t i);
void member_releasedir(void *r, void *dh);
int member_read(void *r, struct root_read *out, uint64_t ino, size_t size, off_t off,
		struct fuse_file_info *fi);
void member_read_done(void *r, struct root_read *out);
void member_usage(void *r, uint64_t *bytes, uint64_t *objects);

/* member/node.c */
int ancestor_depth(h5fs *fs, const struct node *dir, uint64_t ino);
uint64_t file_ino(const h5_file *f, uint64_t addr);
uint64_t file_nodeid(const h5fs *fs, h5_file *f, uint64_t addr);
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
void fs_write_end(h5fs *fs);
/* A change answered success could not be written (err: its errno): from
 * now on every write gets EIO and the next fsync err (fs->lost), until
 * unmount, which exits non-zero. fs_lost: 0 or that errno. */
void fs_lost_set(h5fs *fs, int err);
int fs_lost(h5fs *fs);
void node_free(struct node *n);
int node_make_link(struct node **out, h5fs *fs, uint64_t ino, const char *path,
			  const char *dir, const h5_link *l, int depth);
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
int node_make_obj(struct node **out, h5fs *fs, h5_file *f, uint64_t addr, uint64_t nodeid,
			 const char *path);
struct node *node_publish(h5fs *fs, struct node *fresh);
struct node *node_ref_existing(h5fs *fs, uint64_t ino);
void node_unref(h5fs *fs, uint64_t ino, uint64_t count);




/* Nanoseconds on the monotonic clock (idle commits, the write-behind). */
static inline int64_t member_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* member/xbatch.c: setfattr's write-behind of new string attributes.
 * xbatch_add: 0 when the change is accepted (committed with its batch),
 * an errno, or 1 when it is not one for a batch (a name that is there, or
 * pending): the caller makes it at once, after xbatch_flush. Every other
 * xattr request, link change and fsync flushes first; xbatch_stop commits
 * what is left and ends the batch's thread. */
int xbatch_add(h5fs *fs, struct node *n, const char *name, size_t name_len, const char *val, size_t len,
	       int flags);
void xbatch_flush(h5fs *fs);
void xbatch_stop(h5fs *fs);

/* member/write.c: the member root's open and append path (root.h) */
void handles_free(h5fs *fs);
/* The idle commit's thread (write.c): started with the member root on a
 * read-write single-FILE mount, stopped before unmounting */
void wfile_idler_start(h5fs *fs);
void wfile_idler_stop(h5fs *fs);
/* (idle.c) every write handle of n with bytes not committed committed
 * now, as fsync does (an error stays in its handle) */
void wfile_commit_node(h5fs *fs, struct node *n);
/* (idle.c) n's whole rows not committed committed now, not fsync'd (a
 * reader wants them: tail.c); false when no handle holds any (the last
 * one is being closed: its release commits them) */
bool wfile_show_node(h5fs *fs, struct node *n);
/* setattr.c: chmod, chown, utimens, truncate (root.h) */
int member_setattr(void *r, struct stat *out, double *timeout, uint64_t ino, const struct stat *attr, int to_set);
/* Write handles (write.c): fi->fh of one, or NULL for a read handle;
 * open one on n (fills fi), release it */
struct wfile;
struct wfile *wfile_of(const struct fuse_file_info *fi);
int wfile_open(h5fs *fs, struct node *n, struct fuse_file_info *fi);
void wfile_release(h5fs *fs, struct wfile *w, fuse_ino_t ino);
/* A read descriptor of n, a dataset that grows on a read-write mount:
 * whether it uses the page cache (as n's other descriptors; the first
 * decides: member/tail.c) */
bool wfile_reader_cached(h5fs *fs, struct node *n);
/* member/open.c: read or write handle, page cache or not */
int member_open(void *r, struct fuse_file_info *fi, uint64_t ino);
int member_release(void *r, uint64_t ino, struct fuse_file_info *fi);
void member_write(void *r, fuse_req_t req, uint64_t ino, const char *buf, size_t size, off_t off,
		  struct fuse_file_info *fi);
int member_flush(void *r, uint64_t ino, struct fuse_file_info *fi);
int member_fsync(void *r, uint64_t ino, struct fuse_file_info *fi);

/* views.c: the member root's lookup, listing, open and xattrs with the
 * views of datasets (root_member.c's table) */
int views_lookup(void *r, struct root_entry *e, uint64_t parent, const char *name);
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
/* Make n (a dataset's node, just made) the view kind/frame numbered ino:
 * 0, H5_ERR_NOTFOUND when the dataset cannot have it, or an h5_err. */
int views_apply(h5fs *fs, struct node *n, int kind, uint64_t frame, uint64_t ino);
/* The mount path of the dataset view node n shows (malloc'd) */
char *views_base_path(const struct node *n);
/* View node n made again of the object taddr of tf (a live refresh):
 * 0 and *out, *out NULL when it cannot have the view now, or an h5_err. */
int views_make(struct node **out, h5fs *fs, h5_file *tf, uint64_t taddr, const struct node *n);

/* member/xattr.c */
void xattr_cache_drop(struct node *n);

/* member/overwrite.c: bytes written inside datasets (doc/OVERWRITE.md) */
int ow_open(h5fs *fs, struct node *n, h5_overwriter **out);
/* cached: the handle writes through the kernel's page cache (a dataset
 * that cannot grow: memmap r+), whose pages then hold the new bytes */
int ow_put(h5fs *fs, struct node *n, h5_overwriter *ow, fuse_ino_t ino, uint64_t off, const char *buf, size_t len,
	   bool cached);
int ow_commit(h5fs *fs, struct node *n, h5_overwriter *ow, fuse_ino_t ino, bool all, bool durable, bool cached);
/* A read of n is being answered: remember when it may cache old bytes */
void ow_read_mark(struct node *n);
/* After a page-cached handle's commit or error, no lock held: drop n's
 * pages if a read may have cached old bytes (not from a WRITE handler:
 * the kernel may hold that request's pages locked) */
void ow_pages_settle(h5fs *fs, struct node *n, fuse_ino_t ino);
/* member/tail.c: rows accepted at the end, not committed yet, shown (the
 * node's size is the accepted end; rows of rb bytes, the trailing partial
 * one kept); n->lk taken inside unless said. ENOMEM. */
int tail_accept(struct node *n, const char *buf, size_t len, uint64_t rb);
/* (under n->lk, write) committed bytes of the dataset now: what is left
 * waiting, and the node's size */
void tail_committed(struct node *n, uint64_t committed);
/* (under n->lk) the committed end: where the waiting bytes begin */
uint64_t tail_base(const struct node *n);
/* The last len accepted bytes (a dropped partial row), or everything
 * waiting (len UINT64_MAX: an append failed) are gone: the old size */
uint64_t tail_drop(struct node *n, uint64_t len);
/* (under n->lk) whether [off, off+len) reaches bytes not committed, and
 * its answer then (committed bytes read, then the kept partial row), or 1:
 * whole rows not committed are in it, commit them first (wfile_show_node) */
bool tail_covers(const struct node *n, uint64_t off, size_t len);
int tail_read(h5_read_plan *out, struct node *n, uint64_t off, size_t len);
void tail_free(struct node *n);
int member_listxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino);
int member_getxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino, const char *name);
int member_setxattr(void *r, uint64_t ino, const char *name, const char *value, size_t size, int flags);
int member_removexattr(void *r, uint64_t ino, const char *name);
/* (member/link.c) After an attribute or link change committed: remembered
 * until fs_meta_sync makes it durable (fsync, unmount). */
void fs_meta_changed(h5fs *fs);
int fs_meta_sync(h5fs *fs);
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

/* npy.c: np.save through the mount. A placeholder registered by create,
 * taken by the handle that opens it (NULL: none; g: the generation it
 * writes through), its writes, close's
 * flush and fsync (the dataset made once every byte is in), the last
 * close. */
struct npy_stream;
void npy_pending_add(h5fs *fs, uint64_t addr, uint64_t group, uint64_t parent, const char *path);
struct npy_stream *npy_stream_take(h5fs *fs, uint64_t addr, struct gen *g);
void npy_pending_free(h5fs *fs);
/* npy_write: 0, an errno, or NPY_DEMOTE: the stream is no NPY h5fs
 * makes a dataset of (not NPY, Fortran order, a structured dtype, ...)
 * and is the bytes themselves, which npy_demote hands back (the first
 * *hlen bytes written, malloc'd; the rest of the write is past them) as
 * it frees s: the placeholder, a uint8 dataset NAME.npy, takes them as
 * cp's new files do. */
#define NPY_DEMOTE (-1)
int npy_write(h5fs *fs, struct npy_stream *s, const char *buf, size_t size, off_t off);
void npy_demote(h5fs *fs, struct npy_stream *s, uint8_t **head, size_t *hlen);
/* A modification time set on a placeholder whose stream is open (cp -p
 * sets it before close): kept for the dataset the stream makes, or set
 * on it when made already. 0 or an errno (logged). */
int npy_set_mtime(h5fs *fs, struct npy_stream *s, int64_t sec);
/* (idle.c) n's open np.save stream given the time (npy_set_mtime): 1 when
 * it has one (*err its errno), else 0 */
int wfile_npy_mtime(h5fs *fs, struct node *n, int64_t sec, int *err);
int npy_flush(h5fs *fs, struct npy_stream *s, bool closing);
void npy_release(h5fs *fs, struct npy_stream *s);
/* npy_rename.c: rename(2) of a dataset (link src in group sgroup, node p)
 * to NAME.npy in dgroup (node np) whose bytes are one NPY stream h5fs
 * takes: dataset NAME made of it (replacing one), the old name removed,
 * *done 1. Else *done 0 (an ordinary rename). An errno, logged. */
int npy_rename(int *done, h5fs *fs, h5_file *f, const struct node *p, uint64_t sgroup, const char *name,
	       const h5_link *src, const struct node *np, uint64_t dgroup, const char *newname);
/* Before unmounting: the kernel notifications npy_rename left running
 * have ended (at most 2 s) */
void npy_rename_stop(h5fs *fs);
int member_rename(void *r, uint64_t parent, const char *name, uint64_t newparent, const char *newname,
		  unsigned flags);
int member_link(void *r, uint64_t ino, uint64_t newparent, const char *newname);

/* fresh.c: n re-resolved by its path in the current generation when a
 * newer one exists; its object held for a request (node_use) */
int node_fresh(h5fs *fs, struct node *n);
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

#endif
