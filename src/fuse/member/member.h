/*
 * member.h - what the member root's files share (src/fuse/member): the
 * single-file root class (root.h) that root_member.c assembles from
 * read.c (lookup, attributes, directories, reads), write.c, wqueue.c,
 * idle.c and overwrite.c (bytes written), npy.c and npy_rename.c
 * (np.save), xattr.c and xbatch.c (attributes, and changes made
 * durable), link.c (links), setattr.c, views.c and setup.c. The node
 * model they work on is src/fuse/node's (node.h), below them.
 */
#ifndef H5FS_MEMBER_H
#define H5FS_MEMBER_H

#include "node.h"

struct dirsnap;

/* root_member.c: a reader section of the current generation's FILE (its
 * space freed meanwhile is not reused until the section ends): every
 * request that reads FILE is one, on a mount that writes */
struct rd {
	struct gen *g;
	uint64_t t;
};
struct rd member_rd_begin(h5fs *fs);
void member_rd_end(struct rd *x);

/* member/read.c: the member root's reads (root.h) */
void dirsnap_free(struct dirsnap *d);
void handle_add(h5fs *fs, struct hlink *list, struct hlink *h);
void handle_del(h5fs *fs, struct hlink *h);
int member_lookup(void *r, struct root_entry *e, uint64_t parent, const char *name);
int member_lookup_as(void *r, struct root_entry *e, uint64_t parent, const char *name, bool listed);
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

/* member/wbtimer.c: the timer thread of a write-behind batch: commit()
 * idle_ms after the last change (wbt_changed), max_ms after the first at
 * the latest, then fs_meta_sync; a failed commit (non-zero) is tried again
 * idle_ms later. mu is the batch's lock, held around count() and commit()
 * and by wbt_changed's caller. wbt_start: 0 or an errno; wbt_stop joins
 * the thread (mu not held). */
struct wbt {
	h5fs *fs;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	bool stop, timed;
	int64_t first_ns, last_ns, idle_ns, max_ns;
	size_t (*count)(void *owner);
	int (*commit)(void *owner);
	void *owner;
};
int wbt_start(struct wbt *t, h5fs *fs, unsigned idle_ms, unsigned max_ms, size_t (*count)(void *),
	      int (*commit)(void *), void *owner);
void wbt_changed(struct wbt *t, bool first);
void wbt_stop(struct wbt *t);

/* member/lbatch.c: the write-behind of new files. lbatch_create: 0 when
 * NAME's dataset is made in group p (not linked yet: linked with its
 * batch), an errno, or -1 when there is no batch (the caller makes it at
 * once). lbatch_lookup: whether NAME is a pending new file of group
 * (*addr: its header). Every readdir, link change and fsync flushes first
 * (lbatch_flush: 0, or the errno of a commit that failed, tried again by
 * the next flush);
 * lbatch_stop links what is left and ends the batch's thread. */
int lbatch_create(h5fs *fs, struct node *p, const char *name, const h5_dset_new *d);
bool lbatch_lookup(h5fs *fs, h5_file *f, uint64_t group, const char *name, uint64_t *addr);
/* Batches linked so far: a lookup that found NAME neither in FILE nor
 * pending looks in FILE again when a batch was linked meanwhile. */
uint64_t lbatch_commits(h5fs *fs);
int lbatch_flush(h5fs *fs);
void lbatch_stop(h5fs *fs);

/* member/write.c: the member root's open and append path (root.h) */
void handles_free(h5fs *fs);
/* The idle commit's thread (write.c): started with the member root on a
 * read-write single-FILE mount, stopped before unmounting */
void wfile_idler_start(h5fs *fs);
void wfile_idler_stop(h5fs *fs);
/* (idle.c) every write handle of n with bytes not committed committed
 * now, as fsync does (an error stays in its handle) */
void wfile_commit_node(h5fs *fs, struct node *n);
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
/* link.c: the object at addr of f lost its last link (rmdir; unlink and
 * rename over: member_gone_keep): no later lookup gets its nodes. */
void member_unlinked(h5fs *fs, h5_file *f, uint64_t addr);
/* setattr.c: truncate(2) of n to size bytes (member_resize with FILE
 * taken, rows of n's handles not committed yet first); op names the
 * request in log lines. 0 or an errno. */
int member_set_size(h5fs *fs, struct node *n, uint64_t size, const char *op);
/* link.c: a removed or replaced dataset's storage freed now when no
 * descriptor reads the object, else when the last closes (member_closed)
 * or its node is forgotten (node.c node_unref). */
void member_gone_keep(h5fs *fs, struct gen *g, h5_file *f, uint64_t addr, struct h5_gone *gone);
/* open.c: a descriptor of n closed (storage kept for it freed when last). */
void member_closed(h5fs *fs, struct node *n);
/* (idle.c) n's whole rows not committed committed now, not fsync'd (a
 * reader wants them: tail.c); false when no handle holds any (the last
 * one is being closed: its release commits them) */
bool wfile_show_node(h5fs *fs, struct node *n);
/* (idle.c) whether a write handle that appends is open on the object at
 * addr (its rows may come, or wait uncommitted); and the rows such
 * handles hold committed, not fsync'd (lbatch.c: a name is linked only
 * with its rows) */
bool wfile_writing_addr(h5fs *fs, uint64_t addr);
void wfile_show_addr(h5fs *fs, uint64_t addr);
/* setattr.c: fallocate(2) mode 0 (root.h): a dataset grown sparsely to
 * off + len bytes when that is past its end, else nothing to do */
int member_fallocate(void *r, uint64_t ino, uint64_t off, uint64_t len);
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
 * decides: node/tail.c) */
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
int views_lookup_as(void *r, struct root_entry *e, uint64_t parent, const char *name, bool listed);
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

/* member/pending.c: a read of n answered with what its write handles were
 * told is written. begin: the writes answered before it applied, and none
 * applied until end (NULL: n has no write handle); peek: the kept bytes
 * over [off, off + len) into buf (NULL: whether any), 1 when any; read:
 * 1 when none lie there, else a buffer plan of FILE's bytes under them
 * (0) or a negative h5_err. No lock taken by peek and read (under n->lk). */
struct pending;
struct pending *pending_begin(h5fs *fs, struct node *n);
void pending_end(h5fs *fs, struct node *n, struct pending *p);
int pending_peek(const struct pending *p, uint64_t off, void *buf, size_t len);
int pending_read(h5_read_plan *out, const struct pending *p, struct node *n, uint64_t off, size_t len);
/* Other handles of w's node keeping bytes over [off, off + len) commit
 * them, before w keeps its own there (the later write wins); the caller
 * holds the node's apply lock. 0 or an errno (logged). */
struct wfile;
int pending_supersede(h5fs *fs, struct wfile *w, fuse_ino_t ino, uint64_t off, size_t len);

/* member/overwrite.c: bytes written inside datasets (doc/OVERWRITE.md) */
int ow_open(h5fs *fs, struct node *n, h5_overwriter **out);
/* cached: the handle writes through the kernel's page cache (a dataset
 * that cannot grow: memmap r+), whose pages then hold the new bytes */
int ow_put(h5fs *fs, struct node *n, h5_overwriter *ow, fuse_ino_t ino, uint64_t off, const char *buf, size_t len,
	   bool cached);
int ow_commit(h5fs *fs, struct node *n, h5_overwriter *ow, fuse_ino_t ino, bool all, bool durable, bool cached);
/* After a page-cached handle's commit or error, no lock held: drop n's
 * pages if a read may have cached old bytes (not from a WRITE handler:
 * the kernel may hold that request's pages locked) */
void ow_pages_settle(h5fs *fs, struct node *n, fuse_ino_t ino);
int member_listxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino);
int member_getxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino, const char *name);
int member_setxattr(void *r, uint64_t ino, const char *name, const char *value, size_t size, int flags);
int member_removexattr(void *r, uint64_t ino, const char *name);
/* (member/durable.c) A kind of write-behind: answered changes kept in a
 * batch (lbatch.c, xbatch.c), registered when first made; flush commits
 * its batch (0, or the errno of a commit that failed, tried again
 * later). */
#define WB_KINDS_MAX 4
enum { WB_ORDER_NAMES = 10, WB_ORDER_ATTRS = 20 };
struct wb_kind {
	const char *name;
	unsigned order;         /* flushed in this order */
	int (*flush)(void *owner);
};
int wb_register_locked(h5fs *fs, const struct wb_kind *k, void *owner);   /* fs->lock held */
void wb_unregister(h5fs *fs, void *owner);
/* every kind's batch committed, in order: 0 or the first errno */
int wb_flush_all(h5fs *fs);
/* (member/durable.c) What fs_meta_changed (node.h) remembered made
 * durable: every kind flushed, then FILE fsync'd and cut: fsync, syncfs,
 * idle, unmount. */
int fs_meta_sync(h5fs *fs);
/* Unmounting: the last rewritten chunk moved down when FILE can end lower
 * (h5_file_compact); failures are logged only. */
void fs_compact(h5fs *fs);
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

#endif
