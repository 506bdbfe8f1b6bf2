/* handle.h - write handles as the member root's other files see
 * them (their insides: wstate.h), what reads get of the bytes they were
 * told of (pending.c), bytes written inside datasets (overwrite.c), and
 * the lists of open handles (handles.c, setup.c). */
#ifndef H5FS_HANDLE_H
#define H5FS_HANDLE_H

#include "commit.h"

/* The write descriptors' kind (idle.c; commit.h struct commit_kind):
 * registered with the mount by member/setup.c (its policy: the bound
 * of a descriptor's pending bytes, max_bytes, which overwrite.c and the
 * append stream apply; its admit, wfile.c wfile_admit); its slot, a
 * periodic kind of the scheduler, started with the member root on a
 * read-write single-FILE mount and stopped at the unmount (its stop: what
 * descriptors still hold committed) */
extern const struct commit_kind idle_kind;
void wfile_idler_start(h5fs *fs);
void wfile_idler_stop(h5fs *fs);
/* (wclose.c) every write handle of n with bytes not committed committed
 * now, as fsync does (an error stays in its handle) */
void wfile_commit_node(h5fs *fs, struct node *n);
/* (wclose.c) n's whole rows not committed committed now, not fsync'd (a
 * reader wants them: tail.c); false when no handle holds any (the last
 * one is being closed: its release commits them) */
bool wfile_show_node(h5fs *fs, struct node *n);
/* (wclose.c) whether a write handle that appends is open on the object at
 * addr (its rows may come, or wait uncommitted); and the rows such
 * handles hold committed, not fsync'd (lbatch.c: a name is linked only
 * with its rows) */
bool wfile_writing_addr(h5fs *fs, uint64_t addr);
void wfile_show_addr(h5fs *fs, uint64_t addr);
/* (idle.c) n's open np.save stream given the time (npy_set_mtime): 1 when
 * it has one (*err its errno), else 0 */
int wfile_npy_mtime(h5fs *fs, struct node *n, int64_t sec, int *err);
/* The member root's write, flush and fsync (root.h; root_member.c's
 * table): write.c, wclose.c */
void behind_write(void *r, fuse_req_t req, uint64_t ino, const char *buf, size_t size, off_t off,
		  struct fuse_file_info *fi);
int behind_flush(void *r, uint64_t ino, struct fuse_file_info *fi);
int behind_fsync(void *r, uint64_t ino, struct fuse_file_info *fi);
/* Write handles (wfile.c; open and release: wopen.c): fi->fh of one, or NULL for a read handle;
 * open one on n (fills fi), release it */
struct wfile;
struct wfile *wfile_of(const struct fuse_file_info *fi);
int wfile_open(h5fs *fs, struct node *n, struct fuse_file_info *fi);
void wfile_release(h5fs *fs, struct wfile *w, fuse_ino_t ino);
/* every handle whose release never came freed (the unmount, after the
 * session loop: member/setup.c) */
void wfile_free_all(h5fs *fs);
/* A read descriptor of n, a dataset that grows on a read-write mount:
 * whether it uses the page cache (as n's other descriptors; the first
 * decides: behind/tail.c) */
bool wfile_reader_cached(h5fs *fs, struct node *n);
/* behind/pending.c: a read of n answered with what its write handles were
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
/* The node's kept bytes over [off, off + len) committed (before a
 * punched hole there); the caller holds n's apply lock. 0 or an errno
 * (logged). */
int pending_commit_over(h5fs *fs, struct node *n, fuse_ino_t ino, uint64_t off, uint64_t len);
/* behind/overwrite.c: bytes written inside datasets (doc/OVERWRITE.md),
 * through the node's one overwriter (wstate.h struct wqueue's ow). check:
 * whether n can be written so (0, or the errno, logged: EOPNOTSUPP).
 * put: w's bytes into it (n's apply lock held); commit: what it keeps
 * committed (all: the trailing partial element too; durable), the node
 * shown the result; 0 or the errno (logged), which is each contributing
 * handle's too. */
struct wfile;
struct wqueue;
int ow_check(h5fs *fs, struct node *n);
int ow_put(h5fs *fs, struct wfile *w, fuse_ino_t ino, uint64_t off, const char *buf, size_t len);
int ow_commit(h5fs *fs, struct wqueue *q, struct node *n, fuse_ino_t ino, bool all, bool durable);
/* the space a put of len bytes at the node's overwriter may take at its
 * commit, reserved (under the node's queue's mu): 0 or a negative h5_err */
int ow_reserve(h5fs *fs, struct wfile *w, uint64_t len);
/* fallocate(PUNCH_HOLE | KEEP_SIZE) of [off, off + len), inside n's
 * dataset u: one durable commit of an overwriter of its own (engine
 * h5_overwrite_punch), the node reopened. The caller holds FILE and n's
 * apply lock, and settles the pages after (ow_pages_settle). 0 or an
 * errno (logged; EOPNOTSUPP: a dataset that cannot be punched). */
int ow_punch(h5fs *fs, struct node *n, const struct use *u, fuse_ino_t ino, uint64_t off, uint64_t len);
/* After a page-cached handle's commit or error, no lock held: drop n's
 * pages if a read may have cached old bytes (not from a WRITE handler:
 * the kernel may hold that request's pages locked) */
void ow_pages_settle(h5fs *fs, struct node *n, fuse_ino_t ino);

#endif
