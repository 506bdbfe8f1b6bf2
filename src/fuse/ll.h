/*
 * ll.h - what the daemon's files share (private to src/fuse): the node
 * (inode) table, the mount state, and the functions one file offers the
 * others. The split follows squashfuse: ll_inode.c (inode table, names,
 * node lifetime), ll_log.c (errors -> errno, logging), ll_setup.c (mount
 * state), ll.c (lookup, attributes, directories, reads), ll_write.c (the
 * append path), ll_xattr.c (extended attributes); root_member.c makes
 * them the member root class (root.h), which dispatch.c serves FUSE
 * requests with.
 *
 * Mapping and inode numbers: see ll_inode.c.
 */
#ifndef H5FS_LL_H
#define H5FS_LL_H

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "fuse_ops.h"
#include "root.h"
#include "h5util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <unistd.h>

/* The kind map only speeds up readdir; stop growing it on huge files. */
#define H5FS_KIND_MAP_MAX ((size_t)1 << 22)
#define H5FS_APPEND_BLKSIZE (1 << 20)  /* = max_write (op_init) */
/* (H5FS_TIMEOUT, H5FS_SYNTH_BIT, H5FS_NAME_MAX, H5FS_BLKSIZE, blocks_of
 * and name_ok are every root's: root.h) */

enum node_type { NT_DIR, NT_FILE, NT_LINK };

/* A generation: FILE as opened once (ll_live.c). A change of FILE opens it
 * anew as the next generation; nodes, and reads in flight, hold the one
 * they were read in, which is closed when the last of them lets go. */
struct gen {
	h5_file *f;
	uint64_t num;           /* 1, 2, ...; the kernel's entry generation of a
				 * node made again for another object */
	unsigned refs;          /* atomic */
	bool racy;              /* opened within a clock tick of FILE's last
				 * change: its stamp cannot vouch for its bytes */
	bool swmr;              /* a SWMR writer has FILE open (superblock) */
	bool broken;            /* FILE was rewritten and cannot be opened anew:
				 * this generation's bytes are gone (EIO) */
};

struct node {
	struct node *next;      /* hash chain */
	uint64_t ino;
	uint64_t nlookup;
	unsigned busy;          /* the live watcher uses it (under fs->lock) */
	bool dead;              /* forgotten while busy: the watcher frees it */
	uint64_t addr;          /* object header address; UINT64_MAX for links */
	h5_file *f;             /* the file of the object: FILE, or one reached by
				 * an external link (a reference held, node_free) */
	uint64_t parent;        /* directories: the directory looked up in (one node
				 * per path, so it never changes); others: that of
				 * the last lookup (the entry ll_live.c invalidates) */
	h5_obj_kind kind;
	enum node_type type;
	char *path;             /* directories: their path ("" = root); others: the
				 * path of the first lookup (logs) */
	/* Directories of a file other than FILE (NULL/0 in FILE, whose root
	 * is the mount's): the group's path in its file ("/a/b"), and where
	 * that file is shown: the first a_file components of fpath are at
	 * the first a_mnt components of path (the target of the external
	 * link that led there). Absolute soft links map through this. Fixed
	 * for the node's life: a live FILE's change that moves them makes
	 * the node stale (ll_live.c node_rebuild) and the path a new node. */
	char *fpath;
	unsigned a_mnt, a_file;
	char *target;           /* NT_LINK: readlink text */
	h5_dataset *ds;         /* datasets: opened once, closed when forgotten */
	const h5_view_ops *view; /* how ds's bytes are shown: its size and reads
				 * (raw bytes, or vlen data as text; changed
				 * with ds, under lk) */
	struct gen *gen;        /* the generation f, addr, ds, st were read in
				 * (a reference; changed under lk) */
	uint64_t checked;       /* the generation n was last resolved in (gen,
				 * which its fields belong to, may be older) */
	bool stale;             /* then, its path no longer led to this object */
	struct wqueue *wq;      /* the write order of its write handles (under fs->lock) */
	struct stat st;
	struct pcache *pc;      /* what cached handles were answered (ll_pcache.c;
				 * made at the first such answer) */
	/* Every xattr of the object as read in gen (ll_xattr.c), so a walk's
	 * listxattr and getxattr requests decode its header once; NULL until
	 * asked, and dropped (xattr_cache_drop, under lk) whenever f, addr,
	 * gen or the object itself change. xs_epoch counts the drops: a set
	 * read meanwhile is not kept. */
	struct xa_set *xs;
	unsigned xs_epoch;
	bool xs_skip;           /* not kept (too large, an error): ask the
				 * engine for each xattr until dropped */
	/* An append (ll_write.c) or a live FILE's refresh (ll_live.c) replaces
	 * f, addr, ds, st, gen of this node: readers of them hold it shared.
	 * One per node: a refresh of one object never waits for reads of
	 * another. */
	pthread_rwlock_t lk;
	/* A view of a dataset (views.c): its kind (enum vw_kind of
	 * src/common/views.h; 0: not a view) and frame; path is the view's */
	unsigned char vkind;
	uint64_t vframe;
};

/* (parent ino, name) -> synthetic ino, kept for the whole mount so a
 * symlink keeps its number across FORGET and shows it in readdir too;
 * directories' node ids come from here as well, dropped at FORGET. */
struct synth {
	struct synth *next;
	uint64_t parent;
	char *name;
	uint64_t ino;
};

/* object header address -> h5_obj_kind, for readdir's d_type. */
struct kind_ent {
	struct kind_ent *next;
	uint64_t addr;
	h5_obj_kind kind;
};

/* A node of a circular list with a sentinel (struct h5fs: open handles). */
struct hlink {
	struct hlink *prev, *next;
};

struct h5fs {
	h5_file *f;
	h5fs_config cfg;
	uid_t uid;
	gid_t gid;
	mode_t file_mode;       /* permission bits of datasets and named datatypes */
	mode_t dir_mode;        /* permission bits of groups */
	/* FILE's mtime and size: a live refresh stores them (under lock), readers
	 * without it load them atomically (st_mtime of links, statfs) */
	int64_t file_mtime;
	uint64_t file_size;
	pthread_mutex_t lock;
	struct node **nodes;
	size_t nodes_cap, nnodes;
	struct synth **synth;
	size_t synth_cap, nsynth;
	uint64_t next_synth;
	struct kind_ent **kinds;
	size_t kinds_cap, nkinds;
	/* Open directory snapshots and write handles (under lock): when FILE
	 * is unmounted while some are open, the kernel drops their pending
	 * RELEASE requests, so h5fs_free() frees what is left. */
	struct hlink open_dirs, open_wfiles;
	struct fuse_session *se;        /* for notify_inval_inode (h5fs_set_session) */
	/* The mount's node id of one of ours, for those notifications (NULL:
	 * the same; 0: the kernel does not know it): h5fs_set_ino_map. */
	uint64_t (*ino_out)(void *ud, uint64_t local);
	void *ino_out_ud;
	char *label;            /* a collection's member: its path, before log lines */
	bool shared_watch;      /* a collection's member: its one thread looks
				 * (live_tick), no watcher of its own */
	bool writable;          /* appends possible (fs_writable) */
	/* FILE's write lock (fs_write_begin/end, ll_inode.c): writes under
	 * way, and whether a refusal was logged since the last granted one */
	pthread_mutex_t wmu;
	unsigned writers;
	bool busy_logged, stale_logged;
	/* attribute or link changes committed but not fsync'd (under wmu) */
	bool meta_unsynced;
	/* shown as writable although opened read-only: FILE may be written
	 * but another process holds it (a collection's member), so that
	 * the modes shown never depend on who holds the lock */
	bool write_busy;
	/* live files (ll_live.c): refresh > 0 on a mount that does not append */
	bool live;
	struct gen *gen;        /* the current generation (under lock) */
	struct live *lv;        /* the watcher (ll_live.c) */
};

/* What a request reads of a node: its file, object and generation, held
 * (node_use) until node_use_end, whatever a refresh does meanwhile. */
struct use {
	h5_file *f;
	uint64_t addr;
	struct gen *g;
};

struct dirsnap;

static inline uint64_t fs_ino_out(const h5fs *fs, uint64_t local)
{
	return fs->ino_out ? fs->ino_out(fs->ino_out_ud, local) : local;
}

/* ll.c: the member root's reads (root.h) */
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

/* ll_inode.c */
int ancestor_depth(h5fs *fs, const struct node *dir, uint64_t ino);
uint64_t file_ino(const h5_file *f, uint64_t addr);
uint64_t file_nodeid(const h5fs *fs, h5_file *f, uint64_t addr);
bool fs_writable(const h5fs *fs);
/* Every write (a write descriptor's first bytes, setfattr, mkdir, rm, mv,
 * ...) runs between these two: fs_write_begin returns 0 when FILE is held
 * for writing, or an errno (EROFS on a mount that cannot write, EBUSY when
 * another program holds FILE's lock); fs_write_end gives FILE back once the
 * write is committed. The lock policy lives behind them alone. */
int fs_write_begin(h5fs *fs);
void fs_write_end(h5fs *fs);
int kind_lookup(h5fs *fs, uint64_t addr, h5_obj_kind *kind);
void kind_remember(h5fs *fs, uint64_t addr, h5_obj_kind kind);
void kind_forget_all(h5fs *fs);
void node_free(struct node *n);
struct node *node_get(h5fs *fs, fuse_ino_t ino);
void node_insert_locked(h5fs *fs, struct node *n);
struct node *node_find_locked(h5fs *fs, uint64_t ino);
void node_remove_locked(h5fs *fs, struct node *n);
void synth_drop_locked(h5fs *fs, const struct node *n);
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
uint64_t synth_ino(h5fs *fs, uint64_t parent, const char *name);
uint64_t synth_renew(h5fs *fs, uint64_t parent, const char *name, uint64_t old);

/* ll_live.c, ll_live_node.c, ll_live_watch.c (ll_live.h) */
/* attempts at a read while a live FILE changes (the last one's error is
 * logged; the earlier ones', met while a writer writes, are not) */
#define H5FS_LIVE_READ_TRIES 4
void gen_hold(struct gen *g);
void gen_release(struct gen *g);
struct gen *gen_current(h5fs *fs);
int live_new(h5fs *fs, h5_file *f);
void live_free(h5fs *fs);
void live_start(h5fs *fs);
void live_tick(h5fs *fs);
double node_timeout(const h5fs *fs);
int node_fresh(h5fs *fs, struct node *n);
int node_use(struct use *u, h5fs *fs, struct node *n);
void node_use_end(struct use *u);
int live_read_check(h5fs *fs, struct gen *g, int attempt, bool failed, const char *path);
/* Reads of this live FILE are checked (hashed, copied, verified): it has
 * changed since the mount, or -o live=strict; else they are answered as a
 * frozen mount answers them. */
bool live_checked(const h5fs *fs);
/* A read answered unchecked (true: FILE has not changed yet), counted until
 * its reply is written (live_fast_end), so that the sweep after the first
 * change drops the kernel's pages only once no such answer is still on its
 * way into them. */
bool live_fast_begin(h5fs *fs);
void live_fast_end(h5fs *fs);
/* After an engine error (EIO) of attempt: true when a live FILE is being
 * written and a fresh generation is worth another attempt. */
bool live_retry(h5fs *fs, int attempt);

/* ll_pcache.c */
/* fi->fh of a read handle that uses the page cache on a live mount (write
 * handles hold a struct wfile, other read handles 0) */
#define H5FS_FH_CACHED ((uint64_t)1)
enum pc_verdict { PC_SAME, PC_VERIFIED, PC_DIFFERS, PC_UNREADABLE };
/* An answer to a cached handle, hashed before it is checked and recorded
 * (pcache_commit) once it passed live_read_check. */
struct pc_answer {
	uint64_t gen;           /* the generation answered from */
	uint64_t base, adds;    /* the ledger as pcache_prepare saw it */
	enum pc_verdict verdict;
	uint64_t first;         /* the first page */
	size_t npages;
	bool aligned;
	uint64_t *h;
};
struct pcache;
/* Under n->lk (shared): hash the answer (iov: a buffer, or pinned decoded
 * chunks), and when the ledger holds another generation's pages, read
 * them again in g (n->ds) and compare. */
int pcache_prepare(struct pc_answer *pa, h5fs *fs, struct node *n, struct gen *g, uint64_t off,
		   const struct iovec *iov, size_t niov);
/* After live_read_check: 0 (recorded: reply), EAGAIN (the ledger moved
 * meanwhile: read again) or EIO (logged once per node: the kernel may hold
 * pages of another version). */
int pcache_commit(h5fs *fs, struct node *n, struct pc_answer *pa, const char *path);
void pcache_answer_clear(struct pc_answer *pa);
void pcache_free(struct pcache *pc);
/* A cached read handle of n opens (0; *fresh: the ledger was started anew
 * after a rewrite, the kernel must drop the inode's pages) or EBUSY: a
 * rewrite made n's recorded pages differ and handles that may hold them
 * are still open (this one reads with direct_io). pcache_close when a
 * handle pcache_open let in is released. */
int pcache_open(h5fs *fs, struct node *n, bool *fresh);
void pcache_close(struct node *n);
/* A page's fingerprint (hash and length, never 0), its length, and an
 * answer's, page by page from its start (ll_dio.c uses them too). */
uint64_t pcache_entry(const uint8_t *p, size_t len);
size_t pcache_entry_len(uint64_t e);
void pcache_hash_answer(uint64_t *h, const struct iovec *iov, size_t niov, size_t len);

/* ll_dio.c */
/* fi->fh of a live mount's direct_io read handle: a struct dio_ledger *
 * with this bit set (malloc'd pointers have it clear; H5FS_FH_CACHED too) */
#define H5FS_FH_DIO ((uint64_t)2)
struct dio_ledger;
static inline struct dio_ledger *fh_dio(uint64_t fh)
{
	return fh & H5FS_FH_DIO ? (struct dio_ledger *)(uintptr_t)(fh & ~H5FS_FH_DIO) : NULL;
}
/* An answer to a direct_io handle, hashed before it is checked and
 * recorded (dio_commit) once it passed live_read_check. */
struct dio_answer {
	bool used;
	pid_t tid;              /* the thread whose read() it is a piece of */
	uint64_t gen, off;
	size_t len, asked;
	enum pc_verdict verdict;
	size_t npieces;
	uint64_t *h;
};
struct dio_ledger *dio_new(void);
void dio_free(struct dio_ledger *d);
/* Under n->lk (shared): hash the answer, and when it continues tid's run
 * of another generation, read the run again in g (n->ds) and compare. */
int dio_prepare(struct dio_answer *da, struct dio_ledger *d, struct node *n, struct gen *g, pid_t tid, uint64_t off,
		size_t asked, const struct iovec *iov, size_t niov);
/* After live_read_check: 0 (recorded: reply), EAGAIN (could not verify:
 * read again) or EIO (logged: the read() would mix two versions). */
int dio_commit(h5fs *fs, struct dio_ledger *d, struct dio_answer *da, const char *path);
void dio_answer_clear(struct dio_answer *da);

/* ll_log.c */
/* The errno for an engine error, logged (every EIO, once, with the object;
 * addr UINT64_MAX when unknown): what a do_x() returns. */
int h5err_logged(h5fs *fs, int rc, const char *op, const char *path, const char *name, uint64_t addr);
void reply_h5err(h5fs *fs, fuse_req_t req, int rc, const char *op, const char *path,
			const char *name);
void reply_h5err_obj(h5fs *fs, fuse_req_t req, int rc, const char *op, const char *path,
			    const char *name, uint64_t addr);
const char *show_path(const char *p);

/* ll_write.c: the member root's open and append path (root.h) */
void handles_free(h5fs *fs);
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
/* Make n (a dataset's node, just made) the view kind/frame numbered ino:
 * 0, H5_ERR_NOTFOUND when the dataset cannot have it, or an h5_err. */
int views_apply(h5fs *fs, struct node *n, int kind, uint64_t frame, uint64_t ino);
/* The mount path of the dataset view node n shows (malloc'd) */
char *views_base_path(const struct node *n);
/* View node n made again of the object taddr of tf (a live refresh):
 * 0 and *out, *out NULL when it cannot have the view now, or an h5_err. */
int views_make(struct node **out, h5fs *fs, h5_file *tf, uint64_t taddr, const struct node *n);

/* ll_xattr.c */
void xattr_cache_drop(struct node *n);

/* ll_overwrite.c: bytes written inside datasets (doc/OVERWRITE.md) */
int ow_open(h5fs *fs, struct node *n, h5_overwriter **out);
int ow_put(h5fs *fs, struct node *n, h5_overwriter *ow, fuse_ino_t ino, uint64_t off, const char *buf, size_t len);
int ow_commit(h5fs *fs, struct node *n, h5_overwriter *ow, fuse_ino_t ino, bool all, bool durable);
void ow_refresh(h5fs *fs, struct node *n, fuse_ino_t ino);
int member_listxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino);
int member_getxattr(void *r, char *buf, size_t size, size_t *len, uint64_t ino, const char *name);
int member_setxattr(void *r, uint64_t ino, const char *name, const char *value, size_t size, int flags);
int member_removexattr(void *r, uint64_t ino, const char *name);
/* (ll_link.c) After an attribute or link change committed: remembered
 * until fs_meta_sync makes it durable (fsync, unmount). */
void fs_meta_changed(h5fs *fs);
int fs_meta_sync(h5fs *fs);
/* (ll_link.c) */
int member_mkdir(void *r, uint64_t parent, const char *name);
int member_rmdir(void *r, uint64_t parent, const char *name);
int member_unlink(void *r, uint64_t parent, const char *name);
int member_symlink(void *r, const char *target, uint64_t parent, const char *name);

#endif
