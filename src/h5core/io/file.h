/*
 * file.h - the file (file.c): its state, reads and writes through its byte
 * source, loading metadata blocks through the cache; opened and closed as
 * an HDF5 file by file/open.c.
 */
#ifndef H5_IO_FILE_H
#define H5_IO_FILE_H

#include "source.h"
#include "base.h"
#include "cache.h"
#include "ctx.h"
#include "freesp.h"

#include <pthread.h>

/* ---- the file (file.c, superblock.c) ----------------------------------- */

/* One index of the shared object header message table (III.I "SMTB"),
 * decoded when the file is opened. */
#define H5_SOHM_MAX_INDEXES 8
/* Message type flags of an index: bit N stands for message type N, as
 * libhdf5 stores them (H5O_SHMESG_*_FLAG = 1 << type id); the spec's
 * table numbers the bits 0..4 instead, which no file follows. */
enum {
	H5_SOHM_DSPACE = 1u << 0x01, H5_SOHM_DTYPE = 1u << 0x03, H5_SOHM_FILL = 1u << 0x05,
	H5_SOHM_PLINE = 1u << 0x0B, H5_SOHM_ATTR = 1u << 0x0C
};
typedef struct h5_sohm_index {
	uint8_t index_type;     /* 0 list ("SMLI"), 1 v2 B-tree (record type 7) */
	uint16_t mesg_types;    /* H5_SOHM_* bits of the message types it tracks */
	uint32_t min_mesg_size;
	uint16_t list_max, btree_min;
	uint16_t nmesgs;
	uint64_t index_addr;    /* SMLI list or v2 B-tree */
	uint64_t heap_addr;     /* fractal heap holding the shared messages */
} h5_sohm_index;

/* Free-space managers a File Space Info message names: 6 (version 0, one
 * per H5FD_MEM type) or 12 (version 1, small and large pages of each). */
#define H5_FSM_MAX 12

struct h5_file {
	h5_source *src;         /* where the bytes are (source.h): every read,
				 * write and sync of FILE goes through it */
	char *path;
	int writable;
	uint64_t base;          /* absolute offset of the superblock (user block size) */
	uint64_t eof;           /* bytes readable from base: addresses must stay below */
	int64_t file_mtime;
	/* a local file as opened (fstat of its descriptor): what
	 * h5_file_changed() compares with; has_stamp false for other sources */
	h5_file_stamp stamp;    /* under stamp_mu: our own commits take it
				 * again (h5_file_unlock) while lookups read it */
	pthread_mutex_t stamp_mu;
	bool has_stamp;
	bool lazy_lock;         /* the write lock is taken by h5_file_lock */
	bool locked;            /* h5_file_lock holds it (under write_lock) */
	bool wrote;             /* written or truncated while locked (under write_lock) */
	/* under fill_lock: [falloc_lo, falloc_hi) allocated by
	 * h5_file_allocate since FILE was last truncated or locked (hi 0:
	 * nothing known) */
	uint64_t falloc_lo, falloc_hi;
	/* atomic: the largest record an ordered copy of this file took so
	 * far (io/ordered.c; h5_ordered_room counts at least a header chunk
	 * of a page's) */
	uint64_t ordered_room;
	/* atomic: a block a commit may rewrite in place was seen across a
	 * 4 KiB page (an object header chunk decoded: h5_ordered_note) */
	bool ordered_cross;
	/* absolute; atomic, raised under fill_lock: FILE below it holds disk
	 * blocks throughout (no hole: file_space.c) */
	uint64_t solid_end;
	/* under fill_lock: [data_lo, data_hi) held data when SEEK_HOLE last
	 * looked (hi 0: nothing known); a punch, a truncate and FILE's lock
	 * taken again (another program may have cut it) forget it */
	uint64_t data_lo, data_hi;
	/* h5_open_opts min_free_bytes, min_free_pct (file_space.c) */
	uint64_t min_free_bytes;
	unsigned min_free_pct;
	/* lazy_lock: FILE's first bytes (superblock and, in most files, the
	 * root group's and other early metadata) as of the stamp, so a stamp
	 * moved by a program that rewrote the same bytes (libhdf5 opening
	 * FILE r+ and closing it) is not taken for a change */
	uint8_t *front;
	size_t front_len;
	h5_fmt fmt;
	int sb_version;
	uint8_t sb_flags;       /* file consistency flags */
	uint16_t sym_leaf_k;    /* group leaf node K (v0/v1; default 4) */
	uint16_t btree_k;       /* group internal node K (default 16) */
	uint16_t chunk_btree_k; /* indexed storage internal node K (default 32) */
	uint64_t sb_addr;       /* relative, always 0 */
	uint64_t eoa;           /* end of allocated space, relative to base (the
				 * stored EOF field minus the stored base address) */
	uint64_t eoa_field_off; /* absolute file offset of the EOF address field */
	uint64_t sb_base_field; /* base address as stored: the EOF field holds eoa + this */
	uint64_t root_addr;     /* root group object header */
	uint64_t ext_addr;      /* superblock extension object header or UNDEF */
	uint64_t fs_page_size;  /* paged aggregation's file space page, or 0 */
	/* v0/v1: the root symbol table entry's scratch pad (cache type 1) */
	bool root_stab_cached;
	uint64_t root_btree_addr, root_heap_addr;
	/* what the superblock occupies besides its extension's header (the
	 * space report): its own bytes, the v0/v1 driver information block
	 * (II.B), and the file's free-space managers (III.H) the extension's
	 * File Space Info message names when libhdf5 persists free space */
	uint32_t sb_size;
	uint64_t drvinfo_addr, drvinfo_size;
	unsigned nfsm;
	uint64_t fsm_addr[H5_FSM_MAX];
	/* shared object header message table (from the superblock extension) */
	uint64_t sohm_addr;     /* SMTB address or UNDEF */
	unsigned sohm_nindexes;
	h5_sohm_index sohm_index[H5_SOHM_MAX_INDEXES];
	/* the context it was opened in (ctx.c: a reference), and what it
	 * reads through of it: a view of its cache, its worker pool */
	struct h5_ctx *ctx;
	h5_cache *meta;         /* decoded metadata blocks */
	h5_cache *chunks;       /* decoded chunks: the same cache as meta (file.c) */
	unsigned nthreads;      /* the context's: threads decoding at once */
	bool efl_any;           /* h5_open_opts.efl_any */
	pthread_mutex_t write_lock; /* one writer at a time */
	/* taken inside write_lock or alone, never the other way: one margin
	 * test and allocation at a time (file_space.c) */
	pthread_mutex_t fill_lock;
	/* Reader sections (h5_file_read_begin/end: the daemon's metadata
	 * requests): space freed while one that began before is active is
	 * held back until it ends (write/file_ws.h quar) - a reader may be
	 * walking the structure that space held (issue 56: a dense store
	 * reused under a concurrent listxattr) */
	struct h5_readers *rd;  /* (file.c) shared with the files FILE's space
				 * was handed over to (h5_file_readers_share) */
	/* the write side's state (write/file_ws.h): made by the first writer,
	 * freed at close through ws_free; io/ and file/ never look inside */
	struct h5_wstate *ws;
	void (*ws_free)(struct h5_wstate *ws);
	/* what io/ordered.c's in-place writes need of the write side, which
	 * sets them under write_lock: the larger of the allocation ends
	 * write/space.c handed out (relative; an ordered copy's record goes
	 * above it and eoa), and (atomic) whether the commit under way is a
	 * loose object's (write/loose.c: nothing references its bytes, so it
	 * needs no ordered copy and no fsyncs) */
	uint64_t space_top;
	bool loose_on;
	/* fsyncs begun and the last ticket completed (h5_file_sync): space
	 * freed by a change is reused only after an fsync that began after
	 * the change's last write completed */
	uint64_t sync_started, sync_done;
	struct h5_pool *pool;   /* the context's workers (pool.h), or NULL */
	/* other files (related.c): the table of files reached from this one
	 * (top file only), the top file of a related file, the options */
	struct h5_related *related;
	char *real_path;        /* absolute path of FILE when opened (what its
				 * descriptor leads to), or NULL: the base for
				 * names of related files */
	/* the folder FILE was opened from, taken at mount (h5_open_opts.dir_fd,
	 * the caller's; -1: none) and FILE's name in it: what a change of the
	 * name is looked at through (h5_file_bytes_changed), never a path a
	 * symlink swapped in since could redirect */
	int dir_fd;
	char *dir_name;
	struct h5_file *top;
	uint32_t file_id;
	bool ext_any;
	char *ext_prefix;
	char *ext_root;         /* h5_open_opts.ext_root (NULL: FILE's directory) */
	int related_idle;       /* h5_open_opts.related_idle */
	int (*fd_gate)(void *ud, int delta);    /* h5_open_opts.fd_gate */
	void *fd_gate_ud;
	/* a remote FILE (its URL is path): the class that opened it, which
	 * says where its related files are (its resolve op), and how they
	 * are opened: the same class options (related.c) */
	/* atomic: h5_file_attr_epoch's number (h5_file_attr_moved) */
	uint64_t attr_epoch;
	struct h5_remote_opts {
		const h5_source_class *cls;     /* NULL: not remote */
		char **params;          /* h5_open_opts.source_params, copied */
		size_t cache_bytes;
	} remote;
};

/* eof grows while FUSE threads read: an append (append.c) extends FILE
 * under write_lock, so readers take it with an atomic load (found by
 * ThreadSanitizer, tests/stress/stress.py). */
static inline uint64_t h5_file_eof(const h5_file *f)
{
	return __atomic_load_n(&f->eof, __ATOMIC_ACQUIRE);
}

/* Read len bytes at relative address addr. Fails with H5_ERR_FORMAT when the
 * range leaves the file (addr+len > eof), so callers can pass disk values. */
int h5_file_read(h5_file *f, uint64_t addr, void *buf, size_t len);
/* h5_file_read through window w (h5core.h h5_window; NULL, or a file
 * that is not local: the plain read) */
int h5_file_read_window(h5_window *w, h5_file *f, uint64_t addr, void *buf, size_t len);
/* Metadata at these addresses will be read soon: the byte source may fetch
 * them together in the background (its prefetch op; remote sources). At
 * most H5_PREFETCH_MAX are passed on; undefined ones are skipped. */
#define H5_PREFETCH_MAX 64
void h5_file_prefetch(h5_file *f, const uint64_t *addr, size_t n);
/* The relative range [addr, end) is one object read front to back: the
 * byte source reads ahead no further than end (its extent_hint op). */
void h5_file_extent_hint(h5_file *f, uint64_t addr, uint64_t end);
/* The relative ranges r[0..n) (chunks ahead of a stream) will be read
 * next, in this order: the byte source may fetch them in the background
 * (its ranges_hint op; remote sources). restart: a new stream or a jump.
 * At most H5_PREFETCH_MAX are passed on; ranges outside the file are
 * skipped. */
void h5_file_ranges_hint(h5_file *f, const h5_range *r, size_t n, bool restart);
/* Same, into a fresh malloc'd buffer. len is checked against eof first, so
 * no allocation is larger than the file. */
int h5_file_read_alloc(uint8_t **out, h5_file *f, uint64_t addr, size_t len);
/* The same into an h5_buf_alloc buffer (chunk bytes about to be decoded). */
int h5_file_read_buf(uint8_t **out, h5_file *f, uint64_t addr, size_t len);
/* True if [addr, addr+len) lies inside the file. */
bool h5_file_range_ok(const h5_file *f, uint64_t addr, uint64_t len);

/* Signature, version and checksum of a block of exactly `size` bytes whose
 * image starts "SIGN" version (extensible and fixed arrays, VII.B/VII.C);
 * errors name the block by its signature. */
int h5_block_check(const uint8_t *buf, size_t len, uint64_t size, const char *sig, unsigned version,
		   uint64_t addr);

/* Every cache loader of a metadata block reads the block whole and hands it
 * to a pure (buf, len) decoder; h5_file_load_block() is that sequence once,
 * so the size, read and buffer-ownership checks cannot drift apart between
 * modules. A loader's context embeds this as its FIRST member, which is
 * how decode() gets the rest of it back. */
typedef struct h5_block_load h5_block_load;
struct h5_block_load {
	h5_file *f;
	uint64_t addr;
	uint64_t size;          /* bytes of the image; 0 or beyond size_t: "size overflows" */
	const char *what;       /* names the block in errors */
	size_t obj_size;        /* nonzero: *obj is a malloc'd struct decode() fills */
	/* *cost is obj_size unless decode() sets it; the image is freed after. */
	int (*decode)(void **obj, size_t *cost, const uint8_t *buf, size_t len, const h5_block_load *b);
};
/* One block a structure occupies on disk, [addr, addr + len) relative to
 * the base: what the structures' block walks (h5_bt2_blocks,
 * h5_fheap_blocks, the chunk indexes' blocks op, ...) hand to the space
 * report (dataset/space_report.c); non-zero stops the walk. */
typedef int (*h5_block_cb)(uint64_t addr, uint64_t len, void *ud);

/* An h5_cache_load_fn: ud is the h5_block_load. */
int h5_file_load_block(void **obj, size_t *cost, void *ud);

/* An open handle (h5_bt2, h5_fheap) that keeps its structure's cached
 * header pinned in f->meta while it is open; handles embed it first. */
typedef struct h5_pinned {
	h5_file *f;
	h5_cache_ref ref;
} h5_pinned;
/* calloc's a size-byte handle and pins the header loaded by load(ud=b);
 * what names the structure in errors ("v2 B-tree"). */
int h5_pinned_open(h5_pinned **out, size_t size, const char *what, uint32_t kind, h5_cache_load_fn load,
		   h5_cache_free_fn free_fn, h5_block_load *b);
void h5_pinned_close(h5_pinned *p);
int h5_file_write(h5_file *f, uint64_t addr, const void *buf, size_t len);
/* Whether FILE was opened for writing and its source writes (h5core.h;
 * beneath every writer, so that none asks a higher one). */
int h5_file_writable(const h5_file *f);
/* An attribute of any object written or removed: h5_file_attr_epoch
 * moves. Called by the writers after the change is in place
 * (attr_write.c; links: the link forms' callers in link_write.c,
 * link_move.c, link_batch.c), so that what is read after a number was
 * taken is at least that new. */
void h5_file_attr_moved(h5_file *f);
/* A new number from the process's counter (the open's, file/open.c) */
void h5_file_attr_epoch_init(h5_file *f);
/* The same for a link change of the group at group: moved when it is
 * the root */
void h5_file_links_moved(h5_file *f, uint64_t group);
/* fsync of FILE (called by write/txn.c alone, whose steps each commit
 * names, write/txn.h; and by io/ordered.c's ordered copy of one in-place
 * write, beneath every commit) */
int h5_file_sync(h5_file *f);
/* What was written before sync_started was want - 1 made durable: by an
 * fsync that began since and completed (another writer's), else one now
 * (group commit: several writers' commits, one fsync). */
int h5_file_sync_since(h5_file *f, uint64_t want);
/* Start writing back [addr, addr+len) early (a hint). */
void h5_file_sync_hint(h5_file *f, uint64_t addr, uint64_t len);
/* The size of the underlying object now (absolute, user block included),
 * and setting it (appends). */
int h5_file_size(h5_file *f, uint64_t *out);
int h5_file_truncate(h5_file *f, uint64_t size);
/* FILE's disk blocks against the host's margin (file_space.c; min_free_*
 * of h5_open_opts; without them, or for a source without a descriptor,
 * these allocate without a test and the fills do nothing): 0, or
 * H5_ERR_NOSPC with a message and nothing allocated.
 * [addr, addr+len) allocated (absolute; the object extended with zeros):
 * writes there find their space (a source without allocate: 0); and spare
 * bytes more left free beyond the commit's half of the margin, with or
 * without a margin (the pages of an ordered copy's record, io/ordered.h,
 * which no allocation holds; len 0: that test alone). Under write_lock. */
int h5_file_allocate(h5_file *f, uint64_t addr, uint64_t len, uint64_t spare);
/* [addr, addr+len) (relative, as space.c's) inside FILE's length given
 * disk blocks where it has none (a hole): before a write there is
 * answered, or (answered) for a commit, which may use half the margin. */
int h5_file_fill(h5_file *f, uint64_t addr, uint64_t len, bool answered);
/* The same for an absolute range, answered: h5_file_write's own guard. */
int h5_file_backed(h5_file *f, uint64_t abs, uint64_t len);
/* Whether [addr, addr+len) (relative) holds disk blocks throughout: no
 * hole in it (space freed before it was written: h5_space_take). */
bool h5_file_solid(h5_file *f, uint64_t addr, uint64_t len);
/* [addr, addr+len) (relative) given back to the host: a hole punched,
 * FILE's length kept (fallocate PUNCH_HOLE|KEEP_SIZE). Only for space no
 * durable state references (write/space_punch.c); H5_ERR_UNSUPPORTED where
 * the source or its file system has no hole punching. Under write_lock. */
int h5_file_punch(h5_file *f, uint64_t addr, uint64_t len);
/* FILE's holes in [from, to) (relative; below its length): cb(ud, h, d)
 * for each hole [h, d) (relative; d: FILE's length for a hole to its end)
 * until cb returns non-zero, which is returned. A source without a
 * descriptor has none. */
int h5_file_holes(h5_file *f, uint64_t from, uint64_t to, int (*cb)(void *ud, uint64_t h, uint64_t d), void *ud);
/* The disk space FILE takes (st_blocks), or 0 without a descriptor. */
uint64_t h5_file_disk_bytes(h5_file *f);

/* Stamps: a local file's fstat as opened (h5_file_stamp_take, at open),
 * and the H5_CHANGED_* bits of f's own bytes and path against it (the
 * files reached from f are file/open.c's h5_file_changed()). */
void h5_file_stamp_take(h5_file *f);
/* With lazy_lock and a stamp: FILE's first bytes as opened (what
 * h5_file_changed_by_others compares a moved stamp's bytes with). */
int h5_file_front_take(h5_file *f);
int h5_file_bytes_changed(h5_file *f, const char *path);

/* Reader sections (see h5_file's rd): the oldest one not ended
 * (UINT64_MAX: none), and in *seq the last begun. */
uint64_t h5_file_read_oldest(h5_file *f, uint64_t *seq);
/* to (a file FILE's space is handed over to, not yet read by anyone)
 * counts from's sections as its own from now on, and from to's (the
 * extents held back for them move with the space): 0, or -1 out of
 * memory. drop: at close. */
int h5_file_readers_share(h5_file *to, h5_file *from);
void h5_file_readers_drop(h5_file *f);

#endif
