/*
 * fs.h - the state of a single-file mount, shared by the member root
 * (src/fuse/member) and the live-file machinery below it (src/fuse/live):
 * the node (inode) table's types and tables (node_table.c), generations
 * of FILE (gen.c), and errors -> errno and logging (log.c). What the
 * numbers mean: node/node.c's header comment.
 */
#ifndef H5FS_FS_H
#define H5FS_FS_H

#ifdef HAVE_CONFIG_H
#include <config.h>
#endif

#include "fuse_ops.h"
#include "root.h"
#include "notify.h"
#include "h5util.h"
#include "pager.h"
#include "owner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <time.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <unistd.h>

#define H5FS_APPEND_BLKSIZE (1 << 20)  /* = max_write (op_init) */
/* (H5FS_TIMEOUT, H5FS_SYNTH_BIT, H5FS_NAME_MAX, H5FS_BLKSIZE, blocks_of
 * and name_ok are every root's: root.h) */

enum node_type { NT_DIR, NT_FILE, NT_LINK };

/* A generation: FILE as opened once (live/live.c). A change of FILE opens it
 * anew as the next generation; nodes, and reads in flight, hold the one
 * they were read in, which is closed when the last of them lets go. */
struct gen {
	h5_file *f;
	uint64_t num;           /* 1, 2, ...; the kernel's entry generation of a
				 * node made again for another object */
	uint64_t ver;           /* FILE's version: the previous generation's
				 * when FILE was opened anew without a change
				 * (a racy stamp, a failed read's doubt), which
				 * a write descriptor may follow (behind/write.c) */
	unsigned refs;          /* atomic */
	bool racy;              /* opened within a clock tick of FILE's last
				 * change: its stamp cannot vouch for its bytes */
	bool swmr;              /* a SWMR writer has FILE open (superblock) */
	bool broken;            /* FILE was rewritten and cannot be opened anew:
				 * this generation's bytes are gone (EIO) */
};

/* Rows accepted at a dataset's end, not committed yet (behind/tail.c,
 * which alone changes them; freed with the node) */
struct ntail {
	/* [base, base + len): accepted, not committed; base is the committed
	 * end. [base + len - plen, base + len), the trailing partial row
	 * (rows of rb bytes), kept in part. */
	uint64_t base, len, rb;
	char *part;
	size_t plen, pcap;
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
				 * the last lookup (the entry live/live.c invalidates) */
	unsigned lkids;         /* directories: the records (struct lslot) whose parent it
				 * is (under fs->lock): their paths are built
				 * from its own, so a directory forgotten while
				 * some are left stays, kids_hold, until the last
				 * goes (node_unref) */
	bool kids_hold;         /* forgotten (nlookup 0), kept for its records */
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
	 * the node stale (live/live.c node_rebuild) and the path a new node. */
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
	uint32_t tag;           /* its header's birth tag (node_make_obj), 0: none */
	bool links_many;        /* a group of more than one link (node_make_obj):
				 * not numbered by its address (member/lookup.c) */
	struct wqueue *wq;      /* the write order of its write handles (under fs->lock) */
	/* Page-cached write handles (behind/overwrite.c "Page cache"): how
	 * many of its write handles hold accepted bytes not committed yet,
	 * and whether a read answered meanwhile may have put old bytes in
	 * the kernel's page cache (atomics) */
	unsigned wholders;
	unsigned cached_writers;   /* its write handles using the page cache */
	bool pages_stale;
	/* rows written through the mount, not committed yet, as readers see
	 * them (behind/tail.c; under lk) */
	struct ntail *tail;
	struct stat st;
	struct pcache *pc;      /* what cached handles were answered (live/pcache.c;
				 * made at the first such answer) */
	uint64_t fast_end;      /* how far unchecked answers to cached handles
				 * reached (atomic max): what the first change
				 * must verify (pcache_keep_old) */
	/* Every xattr of the object as read in gen (node/xattr_cache.c), so a walk's
	 * listxattr and getxattr requests decode its header once; NULL until
	 * asked, and dropped (xattr_cache_drop, under lk) whenever f, addr,
	 * gen or the object itself change. xs_epoch counts the drops: a set
	 * read meanwhile is not kept. */
	struct xa_set *xs;
	unsigned xs_epoch;
	bool xs_skip;           /* not kept (too large, an error): ask the
				 * engine for each xattr until dropped */
	/* An append (behind/write.c) or a live FILE's refresh (live/live.c) replaces
	 * f, addr, ds, st, gen of this node: readers of them hold it shared.
	 * One per node: a refresh of one object never waits for reads of
	 * another. */
	pthread_rwlock_t lk;
	/* A view of a dataset (views.c): its kind (enum vw_kind of
	 * src/common/views.h; 0: not a view) and frame; path is the view's */
	unsigned char vkind;
	uint64_t vframe;
	/* An unlinked dataset's storage (member/link.c): freed when the last
	 * node of the object is forgotten - the kernel forgets an inode only
	 * once no descriptor has it open (node.c node_unref) */
	struct h5_gone *gone;
	struct gen *gone_gen;   /* (held: gone's file stays open) */
	bool unlinked;          /* the object's last link went: its address may
				 * hold another object soon, which never gets
				 * this node (member/lookup.c show_object) */
	unsigned opens;         /* open descriptors of it (member/open.c; atomic) */
	/* A type and shape set back on a byte dataset (tar --xattrs, cp -a:
	 * member/retype.c), made at its last close; NULL: none. One
	 * allocation, freed with the node. */
	struct retype *retype;
};

/* The objects table (state/objects.c): one open-addressed table keyed by
 * the object's st_ino (file_ino: FILE's objects addr + 2), a 32-byte slot
 * an object, holding two things at once (issue 64):
 * - the kind map: every object listed has its kind for readdir's d_type
 *   (`known`; the key's low 2 bits), so a listing decodes no header twice;
 * - the stat-only record of a dataset or named datatype of FILE that a
 *   lookup showed and nothing has asked of since but its stat (find, du,
 *   ls -l): what the kernel's name needs (`name` != 0), beside the 0.5 KB
 *   of a struct node and the 1.4 KB of an opened dataset. The kernel keeps
 *   every name a walk looked up while it has memory, so this is paid per
 *   object seen: a slot (32 bytes, 40-50 with the table's free slots at
 *   64-80% in use) and its name entry (its parent's number and the name:
 *   8 bytes + the name + NUL, rounded to 4: 16 for make_many's "d000") -
 *   ~62 bytes a held name at 1 M objects (it was a 96-byte slot of a slab,
 *   its hash slot and a kind map slot: ~110-130).
 * Anything else asked of a record (open, getxattr, setattr, a link change,
 * a live FILE's new generation) makes it a struct node first, from these
 * fields alone, with no I/O (node_find_locked: light_promote); the dataset
 * is opened there when a descriptor needs it (node.c node_ds_need). The
 * slot stays as the kind map's entry then, and after FORGET. Its path is
 * its parent directory node's and the name (light_path_locked): the kernel
 * keeps a name's directory while it keeps the name, and a directory node
 * counts the records that name it (lkids), so that a directory forgotten
 * before them (a hard link's inode kept by another name; a few
 * directories of every cold walk of 1 M) stays, kids_hold, until the last
 * of them goes (node.c node_unref). One whose last record went otherwise
 * (made a node, named again elsewhere) stays until a lookup or the
 * unmount: at most one node a directory. What does not fit the packed fields (sizes
 * of 256 TiB, 2 TiB allocated, 64 links, times before 1970 or after 2106
 * with nanoseconds of their own, a parent that is no directory of FILE) is kept as
 * a struct node instead (light_fits). */
struct lslot {
	uint64_t key;           /* st_ino << 2 | the kind map's kind; 0: empty,
				 * 1: a tombstone (st_ino >= 1) */
	uint64_t size : 48;     /* st_size */
	uint64_t nlookup : 16;  /* (made a node before it would wrap) */
	uint32_t blocks;        /* st_blocks */
	uint32_t mtime_s;       /* st_mtime (unless mt_file) */
	uint32_t name;          /* its name entry (fs->names, in 4-byte units);
				 * 0: no record, a kind map entry only */
	uint8_t gen;            /* the generation it was read in: fs->lgen's
				 * index (held there); 0 once a live FILE's
				 * sweep let it go (an old generation's FILE is
				 * closed when its last holder goes:
				 * light_orphan_old); its node is then
				 * re-resolved (checked 0) */
	uint8_t nlink : 6;      /* st_nlink */
	uint8_t kind : 2;       /* the record's h5_obj_kind */
	uint16_t perm : 12;     /* st_mode & 07777 (S_IFREG) */
	uint16_t mt_file : 1;   /* st_mtim is FILE's as the lookup saw it
				 * (fs->lgen[gen].ft: nanoseconds) */
	uint16_t append_blk : 1;        /* st_blksize H5FS_APPEND_BLKSIZE */
	uint16_t unlinked : 1;  /* its last link went (struct node's) */
	uint16_t known : 1;     /* the kind map's kind is known */
};
#define LSLOT_INO(s) ((s)->key >> 2)
#define LOBJ_SHARDS 16          /* each grows alone: a growth copies 1/16 */
#define NODES_SEEN 32768        /* bits of struct h5fs nodes_seen */
/* a shard's slot array, or a spare one (objects.c lslots_take): res, the
 * bytes of address space it may grow into in place (0: malloc'd), dirty,
 * the slots of it ever written */
struct lslots {
	struct lslot *v;
	size_t res, dirty;
};
struct lshard {
	struct lslot *v;
	size_t cap, n, used;    /* used: with tombstones */
	size_t res, dirty;      /* (struct lslots's) */
	uint32_t epoch;         /* one more at each rebuild (its slots moved) */
};
/* A generation the records hold, with FILE's time as they saw it (a
 * commit of ours takes FILE's stamp again: records read after it get
 * another index, so that each shows the time of its lookup) */
#define LGEN_MAX 32
struct lgen {
	struct gen *g;          /* held once per index while n > 0 */
	size_t n;               /* records of it */
	struct timespec ft;     /* gen_file_time(g->f) then (mt_file's time) */
};

/* (parent ino, name) -> synthetic ino, kept for the whole mount so a
 * symlink keeps its number across FORGET and shows it in readdir too;
 * directories' node ids come from here as well, dropped at FORGET. */
/* node ids, each with a number (member/export.c) */
struct idgen {
	uint64_t id, gen;
};
struct u64set {
	struct idgen *v;
	size_t cap, n;
};

struct synth {
	struct synth *next;
	uint64_t parent;
	char *name;
	uint64_t ino;
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
	mode_t write_mode;      /* write bits added to groups and to datasets that
				 * can be written, on a read-write mount: FILE's
				 * own (-o umask: 0222 less it); 0 on -o ro */
	/* FILE's mtime and size: a live refresh stores them (under lock), readers
	 * without it load them atomically (st_mtime of links, statfs) */
	int64_t file_mtime;
	uint64_t file_size;
	pthread_mutex_t lock;
	struct node **nodes;
	size_t nodes_cap, nnodes;
	/* a bit per hash_u64(ino, NODES_SEEN), set for each node put in the
	 * table, and rebuilt from the table after as many removals as it
	 * holds nodes (nodes_gone): a look-up of an ino no node has (every
	 * object of a cold walk, often several times) mostly ends here, in
	 * 4 KiB that stay cached, not at a cold node of its bucket's chain
	 * (node_full_find_locked was 3.5% of a cold walk's CPU, issue 70) */
	uint64_t nodes_seen[NODES_SEEN / 64];
	size_t nodes_gone;
	/* every object listed or held (struct lslot, state/objects.c): the
	 * kind map and the stat-only records */
	struct lshard lobj[LOBJ_SHARDS];
	struct lslots lobj_spare;       /* a rebuild's last old array, kept */
	size_t nlnodes;         /* slots holding a record */
	/* the records' names (objects.c): 4-byte units, mmap'd; free entries
	 * chained by size (in units: 3..66) */
	char *names;
	size_t names_len, names_cap;
	uint32_t names_free[68];
	struct lgen lgen[LGEN_MAX];     /* [0] unused: "let go" */
	struct synth **synth;
	size_t synth_cap, nsynth;
	uint64_t next_synth;
	/* node ids of FILE's objects that lost their last link in this
	 * mount, with how many times (under lock): the generation of the
	 * object there now, so an old file handle of that id is stale
	 * (member/export.c) */
	struct u64set freed;
	/* fs->freed counted one more for node id ino (under lock): the member
	 * root's export.c (export_freed_locked, set by setup.c), called by
	 * node/gone.c, which is below it */
	void (*freed_locked)(h5fs *fs, uint64_t ino);
	/* atomic: an object with a birth tag (h5_obj_info tag: every one h5fs
	 * made) was shown: its generation, the same in every mount, is the
	 * tag its node (n->tag) or stat-only record (its name entry: objects.c
	 * lname_tag) keeps while the kernel holds the id (member/export.c
	 * export_gen); false: none to look for (no lock) */
	bool tagged;
	/* Open directory snapshots and write handles (under lock): when FILE
	 * is unmounted while some are open, the kernel drops their pending
	 * RELEASE requests, so h5fs_free() frees what is left. */
	struct hlink open_dirs, open_wfiles;
	struct npy_pending *npy_pending; /* placeholders of np.save (behind/npy.c; under lock) */
	struct npy_stream *npy_taken;   /* their streams, open (behind/npy_move.c; under lock) */
	/* np.save's open streams, a kind of commit/sched.c (behind/npy.c;
	 * made at the first stream, under lock) */
	struct npy_kind *npy_kind;
	/* the netCDF dimension ids this mount gave (src/common/ncdims.c):
	 * every nc_attach_var and nc_detach_var of FILE goes through it */
	struct nc_ids nc_ids;
	struct fuse_session *se;        /* for notify_inval_inode (h5fs_set_session) */
	/* The mount's node id of one of ours, for those notifications (NULL:
	 * the same; 0: the kernel does not know it): h5fs_set_ino_map. */
	uint64_t (*ino_out)(void *ud, uint64_t local);
	void *ino_out_ud;
	char *label;            /* a collection's member: its path, before log lines */
	char *mnt;              /* the mountpoint, resolved (single-file mounts) */
	bool shared_watch;      /* a collection's member: its one thread looks
				 * (live_tick), no watcher of its own */
	/* FILE's write lock (fs_write_begin/end, node/node.c): writes under
	 * way, and whether a refusal was logged since the last granted one */
	pthread_mutex_t wmu;
	/* the pager (state/pager.h: the write state every decision reads,
	 * its diagram and invariants checked at every transition), under
	 * wmu; pg_logged: a broken invariant logged (release builds) */
	struct pager pg;
	bool pg_logged;
	bool busy_logged, stale_logged;
	/* atomic: unmounting (member_stop): the last commits wait for FILE's
	 * lock instead of failing EBUSY (node/hold.c write_lock) */
	bool final_commit;
	/* atomic: when a refusal for space was last logged (s, monotonic) and
	 * how many were not since (commit_refuse: a writer at the margin is
	 * refused at every write, 46,000 lines in 5 s of stress-ng aiol) */
	int64_t nospc_at;
	uint64_t nospc_quiet;
	/* the FILE the lock was taken on (a live mount's generation changes
	 * only while writers is 0), and how many times it was taken: a
	 * refresh that opened FILE while one of our writes ran is dropped */
	h5_file *locked_f;
	uint64_t wepoch;
	/* write_begin calls granted (under wmu): a sync that saw no other
	 * writer begin meanwhile may keep FILE's mtime (commit/durable.c) */
	uint64_t wbegins;
	/* atomic: this mount's changes begun and ended (node/hold.c
	 * fs_change_begin: every FILE write, and every request that may
	 * change what a name or stat shows): a listing taken while none
	 * was under way stays what a lookup reads until the next begins
	 * (member/read.c, issue 82) */
	uint64_t chg_begun, chg_done;
	/* setfattr's write-behind (behind/xbatch.c; made at its first use) */
	struct xbatch *xb;
	struct lbatch *lb;      /* behind/lbatch.c: new files not linked yet */
	/* member/ahead.c: the next directory's listing made ahead (made at
	 * the first listing of several directories; atomic) */
	struct ahead *ahead;
	/* the write-behind kinds and their scheduler (commit/sched.c; made at
	 * the first registration, under lock), stopped at the unmount */
	struct commit_sched *sched;
	bool sched_stopped;
	/* the kinds known to the mount, their policies (commit/sched.c
	 * commit_kind_register: at its start, freed by h5fs_free) */
	struct commit_kinds *kinds;
	/* when the last attribute or link change not fsync'd was committed
	 * (under wmu; the pager says whether one waits; behind/idle.c makes
	 * them durable) */
	int64_t meta_ns;
	bool meta_freed;        /* storage freed since: the idle kind syncs at its
				 * next look (node/gone.c, behind/idle.c: issue 69) */
	/* shown as writable although opened read-only: FILE may be written
	 * but another process holds it (a collection's member), so that
	 * the modes shown never depend on who holds the lock */
	bool write_busy;
	/* the idle commit of write descriptors (behind/idle.c): a periodic
	 * kind of the scheduler (its slot); idle_cv (with lock) says a
	 * handle was let go */
	void *idle_slot;
	pthread_cond_t idle_cv;
	/* live files (live/live.c): refresh > 0 (read-write mounts too: they
	 * follow other programs' changes while they hold no write) */
	bool live;
	struct gen *gen;        /* the current generation (under lock) */
	struct live *lv;        /* the watcher (live/live.c) */
};

/* Nanoseconds on the monotonic clock (idle commits, the write-behind). */
static inline int64_t h5fs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* What a request reads of a node: its file, object and generation, held
 * (node_use) until node_use_end, whatever a refresh does meanwhile. */
struct use {
	h5_file *f;
	uint64_t addr;
	struct gen *g;
};

/* FILE as the current generation opened it, read without a lock (a live
 * refresh stores it under fs->wmu and fs->lock): whether an object is
 * FILE's own or another file's */
static inline h5_file *fs_file(const h5fs *fs)
{
	return __atomic_load_n(&fs->f, __ATOMIC_ACQUIRE);
}

static inline uint64_t fs_ino_out(const h5fs *fs, uint64_t local)
{
	return fs->ino_out ? fs->ino_out(fs->ino_out_ud, local) : local;
}

/* objects.c: the kind map (key: file_ino) */
int kind_lookup(h5fs *fs, uint64_t addr, h5_obj_kind *kind);
void kind_remember(h5fs *fs, uint64_t addr, h5_obj_kind kind);
/* The same for a listing's n keys under one lock: kinds[i] the kind, or
 * KIND_NONE (looked up: none known; remembered: skipped). Looking up
 * makes the slot of a key the table does not hold (its kind unknown)
 * and keeps where it is in at[i], where remembering writes the kind
 * without probing again unless the shard moved its slots meanwhile
 * (issue 82: the second probe was a tenth of a cold walk's CPU at 1 M
 * objects); a slot made so whose kind is not remembered is let go. */
#define KIND_NONE 0xff
struct kind_at {
	struct lslot *s;        /* NULL: none made */
	uint32_t epoch;         /* its shard's then */
	bool named;             /* the key has a stat-only record (light.c) */
};
void kind_lookup_many(h5fs *fs, const uint64_t *keys, uint8_t *kinds, struct kind_at *at, size_t n);
/* the objects table's slot of ino fetched into the CPU's cache, without
 * the lock (a hint: READDIRPLUS's look-ups of the next entries) */
void kind_prefetch(h5fs *fs, uint64_t ino);
void kind_remember_many(h5fs *fs, const uint64_t *keys, const uint8_t *kinds, const struct kind_at *at, size_t n);
void kind_forget_all(h5fs *fs);
/* The object at addr lost its last link: the kind remembered there
 * forgotten (its space may hold another object of another kind soon) */
void kind_forget(h5fs *fs, uint64_t addr);
void kind_forget_locked(h5fs *fs, uint64_t addr);
/* node_table.c (callers of *_locked hold fs->lock) */
/* Whether n's object lost its last link and its storage was freed then
 * (no descriptor held it: member/link.c gone_keep): its space may
 * hold another object now, so nothing may read or write it through n
 * (ENOENT, as the name; an open ESTALE, on which the kernel looks the
 * name up again: O_CREAT makes a new one). */
bool node_storage_gone(h5fs *fs, const struct node *n);
/* The node for ino, or NULL; a stat-only one (a record) is made a
 * struct node first (node_find_locked, node_get) */
struct node *node_get(h5fs *fs, fuse_ino_t ino);
/* The node for ino when it is one already (a stat-only object gives
 * NULL, and stays one): for what asks only whether it is a view */
struct node *node_peek(h5fs *fs, fuse_ino_t ino);
void node_insert_locked(h5fs *fs, struct node *n);
struct node *node_find_locked(h5fs *fs, uint64_t ino);
/* ---- stat-only objects (struct lslot's records; light.c) ---- */
/* fresh (a dataset or named datatype of FILE just made by a lookup,
 * read in generation g, shown in directory parent) kept as a struct
 * lslot record with one lookup, when it qualifies and ino has no node yet:
 * true, and the caller frees fresh and answers with its st; false: the
 * caller publishes it (node_publish) */
bool light_keep(h5fs *fs, const struct node *fresh, struct gen *g, uint64_t parent);
/* ino's record, when it shows object addr of generation g's file
 * and is still current: one more lookup of it (now in parent), *st its
 * stat, true; else false (node_ref_existing then makes it a node) */
bool light_ref(h5fs *fs, uint64_t ino, uint64_t addr, const h5_file *f, uint64_t parent, const char *name,
	       struct stat *st);
/* getattr of a current record: true and *st; else false */
bool light_getattr(h5fs *fs, uint64_t ino, struct stat *st);
/* FORGET of a record: true when ino was one (freed at 0) */
/* (*dir: the directory node its record's drop left with no record, kept
 * for them after it was forgotten: fs.h kids_hold; else NULL) */
bool light_unref_locked(h5fs *fs, uint64_t ino, uint64_t count, struct gen **release, struct node **dir);
/* The object at addr of f lost its last link (as struct node's unlinked) */
void light_unlinked_locked(h5fs *fs, const h5_file *f, uint64_t addr);
/* The path of s's record (its parent directory node's and its name),
 * malloc'd; NULL when out of memory or the parent is gone (never while
 * the kernel holds the name: node_unref) */
char *light_path_locked(h5fs *fs, const struct lslot *s);
/* Every record whose path is prefix or below made a struct node
 * (a rename moves them: node_moved updates nodes' paths) */
void light_promote_under_locked(h5fs *fs, const char *prefix);
/* The record of node id ino, if any, made a struct node (a rename of a
 * file moves one name: node_moved_file) */
void light_promote_ino_locked(h5fs *fs, uint64_t ino);
/* A live FILE's sweep, first: the records not of generation g,
 * by node id and path (malloc'd, each path too), *n of them */
struct light_old {
	uint64_t ino;
	char *path;
};
struct light_old *light_old_list(h5fs *fs, const struct gen *g, size_t *n);
/* then each: fresh (NULL: not found), its path resolved again in g,
 * the current generation. When it is the same object and still light
 * (light_keep's rule), the record takes g and fresh's stat: 2 when
 * the stat changed (the kernel is told), 1 when not; else it is made a
 * struct node (swept with the nodes: stale, or rebuilt) and 0, as when
 * it was forgotten or looked up again meanwhile. Keeps a walk's names
 * light across a new generation (a racy stamp re-checked after mount:
 * issue 64's 100,000-object mount was 100 MB instead of 43 MB). */
int light_refresh(h5fs *fs, uint64_t ino, const struct node *fresh, struct gen *g);
/* ino's path when it is a record of a generation other than g
 * (malloc'd), else NULL: what a request re-resolves (node_light_fresh) */
char *light_old_path(h5fs *fs, uint64_t ino, const struct gen *g);
/* A live FILE's sweep: the records of generations before the
 * current one let theirs go (made nodes, they are re-resolved by path in
 * the current one: fresh.c); their node ids (the kernel is told their
 * attributes are old), malloc'd, *n of them */
uint64_t *light_orphan_old(h5fs *fs, size_t *n);
void light_free_all(h5fs *fs);
void node_remove_locked(h5fs *fs, struct node *n);
void synth_drop_locked(h5fs *fs, const struct node *n);
/* (parent, name) now numbers ino (a directory moved there), replacing
 * what it numbered; 0 or ENOMEM */
int synth_adopt_locked(h5fs *fs, uint64_t parent, const char *name, uint64_t ino);
uint64_t synth_ino(h5fs *fs, uint64_t parent, const char *name);
/* The name's link is gone (rm, rmdir): what comes under it next gets a new
 * number, never the old node's, which the kernel may still hold as another
 * kind of file (found by mkdir where a symlink had been). */
void synth_forget(h5fs *fs, uint64_t parent, const char *name);
void synth_forget_locked(h5fs *fs, uint64_t parent, const char *name);
uint64_t synth_renew(h5fs *fs, uint64_t parent, const char *name, uint64_t old);

/* gen.c: a generation is held by nodes and reads; the last to let go
 * closes it */
void gen_hold(struct gen *g);
/* FILE's mtime as f was opened, to the nanosecond where the file has a
 * stamp (a local FILE): what an object recording no time of its own shows */
struct timespec gen_file_time(const h5_file *f);
void gen_release(struct gen *g);
struct gen *gen_current(h5fs *fs);
/* g is FILE's current generation (compared, not held) */
bool gen_is_current(h5fs *fs, const struct gen *g);

/* log.c */
/* The errno for an engine error, logged (every EIO, once, with the object;
 * addr UINT64_MAX when unknown): what a do_x() returns. */
int h5err_logged(h5fs *fs, int rc, const char *op, const char *path, const char *name, uint64_t addr);
void reply_h5err(h5fs *fs, fuse_req_t req, int rc, const char *op, const char *path,
			const char *name);
void reply_h5err_obj(h5fs *fs, fuse_req_t req, int rc, const char *op, const char *path,
			    const char *name, uint64_t addr);
const char *show_path(const char *p);

#endif
