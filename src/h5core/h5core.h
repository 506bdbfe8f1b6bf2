/*
 * h5core.h - public API of libh5core, the FUSE-free HDF5 format engine.
 *
 * Every function returns 0 on success or a negative h5_err code; the
 * message explaining the failure is kept per thread (h5_err_msg()).
 * The FUSE daemon, the h5fs-ls tool and what they share (src/common/)
 * only use what is declared here; tests also have h5core_test.h.
 */
#ifndef H5CORE_H
#define H5CORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors (err.c) ---------------------------------------------------- */

typedef enum h5_err {
	H5_OK = 0,
	H5_ERR_NOMEM = -1,       /* allocation failed */
	H5_ERR_IO = -2,          /* the underlying file could not be read/written */
	H5_ERR_FORMAT = -3,      /* corrupt or malformed on-disk structure */
	H5_ERR_CHECKSUM = -4,    /* checksum mismatch */
	H5_ERR_UNSUPPORTED = -5, /* valid HDF5, feature not supported (or filter not compiled in) */
	H5_ERR_NOTFOUND = -6,    /* no such link / attribute / message */
	H5_ERR_RANGE = -7,       /* output buffer too small */
	H5_ERR_INVAL = -8,       /* bad argument from the caller */
	H5_ERR_NOTHDF5 = -9,     /* no HDF5 signature found */
	H5_ERR_PERM = -10,       /* operation not permitted on this object */
	H5_ERR_ROFS = -11,       /* file opened read-only */
	H5_ERR_LOOP = -12,       /* cycle detected in on-disk structure */
	H5_ERR_LIMIT = -13,      /* a size/depth limit was exceeded */
	H5_ERR_BUSY = -14,       /* file locked by another writer */
	H5_ERR_NOSPC = -15,      /* no space left where the file lies (writing) */
	H5_ERR_NOFD = -16,       /* the process has no descriptor left (EMFILE,
				  * ENFILE): a caller holding idle files may
				  * close some and try again */
	H5_ERR_LAST = H5_ERR_NOFD  /* the lowest code: checks of "a documented code" */
} h5_err;

/* Record an error: stores the formatted message for this thread and returns
 * code, so callers write `return h5_err_set(H5_ERR_FORMAT, "...", ...);`. */
int h5_err_set(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prefix the current message with context ("dataset /a/b: " + old). Returns code. */
int h5_err_wrap(int code, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
const char *h5_err_msg(void);
/* The code of the error h5_err_msg() describes (the last set or wrapped
 * in this thread), 0 when none. */
int h5_err_code(void);
void h5_err_clear(void);
const char *h5_err_name(int code);

/* ---- engine context (ctx.c) ---------------------------------------------
 * What every file opened in it shares: one cache budget (decoded metadata
 * and chunks of all its files in one LRU, keyed per file so no file sees
 * another's entries, and a closed file's entries dropped), one bounded
 * pool of worker threads (chunk prefetch and parallel decode, the
 * filtering of appends), started lazily at the first work, and its share
 * of the buffer pool's budget. A daemon makes one per mount, a tool one
 * per run; a file opened without one gets a private context, sized from
 * its h5_open_opts (cache_bytes, nthreads), as before contexts existed.
 * Files hold a reference: h5_ctx_free() drops the caller's, and the
 * context ends when its last file is closed. Thread-safe. */
typedef struct h5_ctx h5_ctx;

typedef struct h5_ctx_opts {
	size_t cache_bytes;      /* the cache budget; 0 = h5_default_cache_bytes(),
				  * its metadata within H5_DEFAULT_META_MAX_BYTES */
	unsigned nthreads;       /* threads decoding at once, the reader's own
				  * included (the pool has nthreads - 1 workers);
				  * 0 = number of CPUs */
} h5_ctx_opts;

int h5_ctx_new(h5_ctx **out, const h5_ctx_opts *opts);
void h5_ctx_free(h5_ctx *ctx);
size_t h5_ctx_cache_budget(const h5_ctx *ctx);
size_t h5_ctx_cache_used(const h5_ctx *ctx);    /* bytes cached, every file's */
unsigned h5_ctx_threads(const h5_ctx *ctx);     /* workers started so far */

/* ---- file (file.c, superblock.c) --------------------------------------- */

typedef struct h5_file h5_file;

/* h5_open_opts.fd_gate's deltas */
enum { H5_GATE_GIVE = -1, H5_GATE_SHED = 0, H5_GATE_TAKE = 1, H5_GATE_TRY = 2 };

typedef struct h5_open_opts {
	int writable;            /* open O_RDWR and take an exclusive flock */
	int lazy_lock;           /* writable: take the flock only between
				  * h5_file_lock and h5_file_unlock (h5fs),
				  * not from open to close */
	h5_ctx *ctx;             /* the context to open in (its cache, threads);
				  * NULL: a private one from cache_bytes and nthreads */
	size_t cache_bytes;      /* total cache budget; 0 = h5_default_cache_bytes()
				  * (with ctx: only a remote source's block cache) */
	unsigned nthreads;       /* decompression threads; 0 = number of CPUs (not with ctx) */
	int efl_any;             /* follow external file names that are absolute or
				  * contain "..": off, a file may only name files in
				  * its own directory tree (h5fs -o efl_any) */
	int ext_any;             /* open external-link targets and virtual dataset
				  * sources outside FILE's directory tree (-o ext_any) */
	const char *ext_prefix;  /* ':'-separated directories tried for them first
				  * (-o ext_prefix=), after HDF5_EXT_PREFIX/HDF5_VDS_PREFIX */
	const char *ext_root;    /* the directory tree they may lie in (NULL:
				  * FILE's directory; a collection: its DIR) */
	const int *dir_fd;       /* FILE's folder as opened at mount (O_PATH,
				  * the caller's, open while the file is): the
				  * tree related files are opened beneath, and
				  * where FILE's name is looked at for changes.
				  * NULL: opened from FILE's real path when
				  * first needed */
	const char *dir_name;    /* with dir_fd: FILE's name in it (not taken
				  * from the descriptor's path afterwards: a
				  * rename over FILE meanwhile makes that
				  * "NAME (deleted)") */
	const char *real_path;   /* FILE's real path as the caller knows it (a
				  * collection's walk: its DIR's real path and a
				  * name reached without symlinks); NULL: what
				  * the descriptor leads to (/proc) */
	int meta_blocks;         /* read-only local FILE read once for its
				  * metadata (h5fs-ls): small reads served from
				  * a few blocks read whole (io/source.h) */
	int related_idle;        /* those files kept open while unused: 0 the
				  * default (32), negative none (a collection,
				  * which counts descriptors) */
	/* Asked before another file is opened for FILE (delta H5_GATE_TAKE:
	 * 0 to go on, or a negative h5_err, after waiting a while for room;
	 * H5_GATE_TRY: the same without waiting) and told when it is closed
	 * (H5_GATE_GIVE): a collection bounds its open descriptors (-o
	 * max_files). H5_GATE_SHED: the kernel refused a descriptor (EMFILE,
	 * ENFILE: H5_ERR_NOFD) for such a file; 0 when the gate closed an
	 * idle file of its own (the open is tried again), negative when it
	 * has none. NULL: none. */
	int (*fd_gate)(void *ud, int delta);
	void *fd_gate_ud;
	/* the byte-source classes' own options (remote FILEs: -o
	 * s3_endpoint=URL, s3_region=R, s3_path_style, retries=N,
	 * timeout=S), "key=value" or "key" each, NULL-terminated; NULL: none.
	 * h5_source_param() (io/source.h) tells the keys some class owns;
	 * each class parses its own (source_http.h, source_s3.h). */
	const char *const *source_params;
	/* Writable local FILE: free space the file system holding it keeps
	 * after every reserve (h5_file_reserve), the smaller of
	 * min_free_bytes and min_free_pct percent of its size where both are
	 * set (0: that bound unset; both 0: no margin). A reserve that would
	 * leave less is refused (H5_ERR_NOSPC) before anything is written:
	 * FILE never takes the host's last space (issue 65). */
	uint64_t min_free_bytes;
	unsigned min_free_pct;
} h5_open_opts;

/* The default cache budget (h5_default_cache_bytes) is 1/16 of the memory
 * available (physical RAM, or the cgroup limit when lower), kept within
 * [H5_DEFAULT_CACHE_BYTES, H5_DEFAULT_CACHE_MAX_BYTES]. */
#define H5_DEFAULT_CACHE_BYTES ((size_t)256 << 20)
#define H5_DEFAULT_CACHE_MAX_BYTES ((size_t)2048 << 20)
/* With the default budget (h5_ctx_opts.cache_bytes 0) decoded metadata
 * holds at most this much (else a quarter of the budget): a walk of
 * millions of objects reads each header once, and what a daemon keeps
 * per name beside the cache grows with them (issue 64: 10 M objects
 * within 1 GB, the default 1.5 GB budget's quarter was 376 MiB of
 * headers read once) */
#define H5_DEFAULT_META_MAX_BYTES ((size_t)128 << 20)
size_t h5_default_cache_bytes(void);

int h5_file_open(h5_file **out, const char *path, const h5_open_opts *opts);
/* Open FILE from a descriptor of a local file the caller opened (O_RDONLY,
 * or O_RDWR with opts->writable), which the file then owns, also on
 * failure: FILE opened once at mount through its folder, and opened anew
 * from there (never by a path). name for messages. */
int h5_file_open_fd(h5_file **out, int fd, const char *name, const h5_open_opts *opts);
/* (Test hooks, such as a trace of every write: h5core_test.h, tests only.) */
/* Open FILE from a byte source (source.h), which the file then owns (also
 * on failure); name is FILE's name for messages, and, when the source has
 * a descriptor, the path related files (external links, VDS sources,
 * external storage) are found from. */
struct h5_source;
int h5_file_open_source(h5_file **out, struct h5_source *src, const char *name, const h5_open_opts *opts);
/* Open an in-memory image (fuzzing, tests). The buffer must outlive the file. */
int h5_file_open_mem(h5_file **out, const void *buf, size_t len, const h5_open_opts *opts);
void h5_file_close(h5_file *f);
uint64_t h5_file_root(const h5_file *f);        /* root group object header address */
int h5_file_sb_version(const h5_file *f);
uint64_t h5_file_userblock(const h5_file *f);
int64_t h5_file_mtime(const h5_file *f);         /* mtime of FILE (seconds) */
const char *h5_file_path(const h5_file *f);
/* The absolute path a local FILE's descriptor led to when opened (a name
 * given through a symlink: its target), or NULL (remote, in memory). */
const char *h5_file_real_path(const h5_file *f);
/* Whether f was reached from another file (an external link's target, a
 * virtual dataset's source: related.c), not opened by the caller. */
int h5_file_is_related(const h5_file *f);

/* FILE is a remote object whose server ignores Range requests (python3 -m
 * http.server): it was downloaded whole into a temporary file at open
 * (at most -o cache_max MiB) and is read from there. Its size in bytes,
 * else 0. */
uint64_t h5_file_downloaded(const h5_file *f);

/* The superblock's end-of-file address is past FILE's end: H5_ERR_FORMAT
 * "truncated file: eof = SIZE, stored_eof = ADDR" (libhdf5's words and
 * check, H5F__super_read), else 0. A file a SWMR writer has open is not
 * checked (libhdf5's SWMR reader does not either). Asked just after the
 * open: a local FILE's size is the one its open saw (its stamp). */
int h5_file_check_truncated(h5_file *f);

/* A writable FILE opened with lazy_lock: take its write lock for a write
 * (0), or H5_ERR_BUSY at once when another program holds it (libhdf5 has
 * FILE open, for reading or writing). h5_file_unlock gives it back; when
 * something was written meanwhile, FILE's stamp (below) becomes the file
 * as written, so only other programs' writes count as changes. A FILE
 * opened without lazy_lock holds the lock from open to close: both are
 * no-ops then. */
int h5_file_lock(h5_file *f);
void h5_file_unlock(h5_file *f);
/* While holding that lock: has another program changed FILE since it was
 * opened or last unlocked after a write? 1 when its size, device or inode
 * differ, or its times moved and its first H5_FRONT_BYTES differ; 0 (the
 * times moved over the same bytes, a writer that opened and closed FILE:
 * the stamp is taken again). A change past those bytes that keeps the
 * size (a value overwritten in place) is not seen: libhdf5 grows the file
 * for anything it allocates. 0 for files without a stamp. */
#define H5_FRONT_BYTES 65536
int h5_file_changed_by_others(h5_file *f);

/* ---- change detection (file.c; h5fs -o refresh) ------------------------
 * A local FILE is stamped when opened (fstat of its descriptor): device,
 * inode, size, modification and change times. Any write to the file moves
 * its mtime or ctime (at the clock tick's granularity, see h5fs's
 * live/live.c for how a write within the tick of the stamp is handled). */
typedef struct h5_file_stamp {
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns;
} h5_file_stamp;
enum {
	H5_CHANGED_BYTES = 1,   /* the open file was written or truncated */
	H5_CHANGED_PATH = 2,    /* FILE's path now names another file (rename) */
	H5_CHANGED_GONE = 4     /* no file at FILE's path any more */
};
/* 0 when f has no stamp (remote or memory sources), else 1 and *out. */
int h5_file_stamp_get(h5_file_stamp *out, const h5_file *f);
/* H5_CHANGED_* bits for f against its stamp: the descriptor always, path
 * too unless NULL (FILE's name as given may be relative to a directory
 * the caller left), and every related file the top file opened (external
 * link targets, VDS sources, by their real paths). 0: unchanged, or no
 * stamp. */
int h5_file_changed(h5_file *f, const char *path);
/* fn(arg, real path) for each local related file f has open now (external
 * link targets, VDS sources: what h5_file_changed looks at), so that a
 * watcher can be told of their changes as of FILE's (inotify). */
void h5_file_related_each(h5_file *f, void (*fn)(void *arg, const char *path), void *arg);
/* A remote FILE (no stamp; its byte source's changed op): ask the server
 * whether the object was replaced (H5_CHANGED_BYTES) - a request, so the
 * caller rate-limits it; h5_file_changed() above only tells what replies
 * so far said. 0 for other files. */
int h5_file_probe(h5_file *f);
/* f can tell it changed: a local file (stamped) or a source that can. */
int h5_file_watchable(const h5_file *f);
/* The superblock says a writer has the file open in SWMR mode (v3 status
 * flags, spec II.A: bit 2 "SWMR write access"). */
int h5_file_swmr(const h5_file *f);

/* ---- S3 prefix listings (io/source_s3_list.c) -------------------------
 * One directory level of s3://BUCKET/PREFIX/: ListObjectsV2 with the
 * delimiter "/", every page (continuation tokens), the same endpoint,
 * region, path style and credentials as an object (h5_open_opts). */
typedef struct h5_s3_entry {
	char *name;              /* relative to the prefix; a common prefix
				  * without its trailing '/' */
	int is_prefix;           /* a CommonPrefix: a folder */
	uint64_t size;           /* objects: Size */
	int64_t mtime_ns;        /* objects: LastModified (ns since the epoch) */
	char *etag;              /* objects: ETag as sent (quotes kept); NULL for a prefix */
} h5_s3_entry;
typedef struct h5_s3_listing {
	h5_s3_entry *v;          /* sorted by name (bytes), duplicates dropped */
	size_t n, cap;
	unsigned pages;          /* list requests answered (pages decoded) */
	int truncated;           /* the last page said IsTruncated */
	char *next_token;        /* and gave this NextContinuationToken */
} h5_s3_listing;
/* url: s3://BUCKET/ or s3://BUCKET/PREFIX/ (a trailing '/' is required:
 * H5_ERR_INVAL otherwise). A missing bucket is H5_ERR_NOTFOUND, refused
 * access and failed requests H5_ERR_IO, a reply that is not a listing
 * H5_ERR_FORMAT; transient failures are retried as object reads are.
 * H5_ERR_UNSUPPORTED when built without libcurl. */
int h5_s3_list(h5_s3_listing *out, const char *url, const h5_open_opts *opts);
/* One ListBucketResult page (buf, len): its Contents and CommonPrefixes
 * appended to *l (names relative to prefix, which every key must start
 * with), truncated and next_token set. No I/O. An <Error> document is
 * its Code and Message as the error (NoSuchBucket, NoSuchKey:
 * H5_ERR_NOTFOUND); anything else not a well-formed listing is
 * H5_ERR_FORMAT. */
int h5_s3_list_decode(h5_s3_listing *l, const char *prefix, const void *buf, size_t len);
/* Sorts by name and drops repeated entries (a prefix repeated on two pages). */
void h5_s3_listing_sort(h5_s3_listing *l);
void h5_s3_listing_free(h5_s3_listing *l);
/* Objects of a prefix are HDF5 members by name (an object's signature
 * would take a GET each): suffixes is a ':'-separated list (h5fs and
 * h5fs-ls -o h5_suffixes=), compared without regard to case; NULL or ""
 * is the default list. 1 if name ends in one of them (and is longer). */
#define H5_SUFFIXES_DEFAULT ".h5:.hdf5:.he5:.nc:.nc4:.nwb:.h5ad"
int h5_name_has_suffix(const char *name, const char *suffixes);

/* ---- other files (related.c) ------------------------------------------- */

/* Open the file an external link names, as seen from file `from` (resolved
 * like libhdf5, and only inside FILE's directory tree unless ext_any):
 * 0 and *out, 1 when no such file exists, or a negative h5_err (H5_ERR_PERM
 * for a file outside the tree). *out may be FILE itself or a file already
 * open; release every successful open with h5_file_release_related(). */
int h5_file_open_related(h5_file **out, h5_file *from, const char *name);
void h5_file_release_related(h5_file *f);
/* One more reference on a file h5_file_open_related() gave (none on FILE). */
void h5_file_hold_related(h5_file *f);

/* A number for the file, unique among the files reached from one FILE and
 * stable while the mount lives (0 for FILE itself): for inode numbers.
 * It is the file's path's own (h5_related_info.home), whatever order the
 * files were reached in, unless another file of FILE's took it first. */
uint32_t h5_file_id(const h5_file *f);
/* A file reached from FILE since it was opened (external link targets,
 * VDS sources; open now or closed since). */
typedef struct h5_related_info {
	const char *path;       /* its real path, or URL (remote) */
	uint32_t id;            /* h5_file_id of it */
	int home;               /* 1: id is the path's own, not taken in order */
	int remote;
	/* local files: as stat gave them when last opened (remote: 0) */
	uint64_t size;
	int64_t mtime_ns;
	uint64_t ino;
} h5_related_info;
/* fn(arg, ri) for each file reached from top, in the order first reached,
 * until fn returns nonzero (returned); 0 when all were seen. fn must not
 * open or release related files. */
int h5_file_related_reached(h5_file *top, int (*fn)(void *arg, const h5_related_info *ri), void *arg);
/* The object at an absolute path in f (hard and soft links followed;
 * an external link on the way is H5_ERR_NOTFOUND). */
int h5_path_lookup(uint64_t *addr, h5_file *f, const char *path);
/* The object at path from the group at `group` (a relative path, as a
 * relative soft link's target is read: from the group holding the link;
 * an absolute one from the root), links followed as h5_path_lookup does. */
int h5_path_lookup_from(uint64_t *addr, h5_file *f, uint64_t group, const char *path);

/* ---- objects (object.c) ------------------------------------------------ */

typedef enum h5_obj_kind {
	H5_OBJ_UNKNOWN = 0,
	H5_OBJ_GROUP = 1,
	H5_OBJ_DATASET = 2,
	H5_OBJ_DATATYPE = 3
} h5_obj_kind;

typedef struct h5_obj_info {
	h5_obj_kind kind;
	uint64_t addr;        /* object header address: stable identity (inode) */
	uint32_t nlink;       /* object header reference count */
	int has_mtime;
	int64_t mtime;        /* modification time, seconds since epoch */
	int64_t atime, ctime, btime; /* only when has_times (v2 headers) */
	int has_times;
	uint64_t nattrs;      /* number of attributes (may be approximate for dense: -1 unknown) */
	uint32_t tag;         /* the birth tag of a header h5fs made (format/birthtag.h:
			       * random, different for each object made at one
			       * address), 0: none */
} h5_obj_info;

int h5_obj_info_get(h5_obj_info *out, h5_file *f, uint64_t addr);
/* A hint: h5_obj_info_get of addr comes soon (a listing's next entries):
 * the memory its cache look-up reads is fetched now. Nothing else. */
void h5_obj_prefetch(h5_file *f, uint64_t addr);

/* ---- links and groups (link.c, group.c) -------------------------------- */

typedef enum h5_link_type {
	H5_LINK_HARD = 0,
	H5_LINK_SOFT = 1,
	H5_LINK_EXTERNAL = 64
} h5_link_type;

typedef struct h5_link {
	char *name;           /* UTF-8 or ASCII, NUL-terminated (may be unsafe: caller filters) */
	size_t name_len;      /* length as stored (name may contain NUL: then strlen != name_len) */
	h5_link_type type;
	uint64_t addr;        /* hard: object header address */
	/* hard: the link itself says the object is a group (a symbol table
	 * entry of cache type 1 caches its group's B-tree and heap: spec
	 * III.C), so a listing's d_type needs no read of its header; 0: not
	 * said (link messages carry no type) */
	uint8_t is_group;
	char *target;         /* soft: the path as stored */
	char *ext_file;       /* external: file name */
	char *ext_path;       /* external: object path in that file */
	int has_corder;
	int64_t corder;
	uint8_t cset;         /* 0 ASCII, 1 UTF-8 */
} h5_link;

void h5_link_clear(h5_link *l);
/* (related.c) Follow an external link, or an absolute soft link, of file `from` as
 * libhdf5 does: soft and external links met on the way are followed too
 * (chains of external links), at most 16 such links in all counting l
 * itself (libhdf5's default "nlinks"), so a loop of links is H5_ERR_LOOP.
 * 0 with *gf (a reference held: h5_file_release_related), *addr, and
 * *fpath (malloc'd): the path in *gf by which the object was reached,
 * "/a/b" ("/" for the root), that of the last link's target when links
 * were followed; or a negative h5_err saying why not. */
int h5_link_follow(h5_file **gf, uint64_t *addr, char **fpath, h5_file *from, const h5_link *l);

/* Called once per link; return non-zero to stop (that value is returned). */
typedef int (*h5_link_cb)(const h5_link *link, void *ud);

/* Iterate every link of the group at addr (any storage form). Order: the
 * storage's natural order (name order for all forms libhdf5 writes). */
int h5_group_iterate(h5_file *f, uint64_t addr, h5_link_cb cb, void *ud);
/* Look one name up without scanning (B-tree search / hash). H5_ERR_NOTFOUND. */
int h5_group_lookup(h5_link *out, h5_file *f, uint64_t addr, const char *name);

/* ---- datasets (dataset.c) ---------------------------------------------- */

typedef struct h5_dataset h5_dataset;

int h5_dataset_open(h5_dataset **out, h5_file *f, uint64_t addr);
/* A caller's window onto a local file's bytes, for many small reads near
 * one another (a listing's children's headers, which libhdf5 writes one
 * after the other, ~270 bytes apart for h5py's datasets): one read of
 * H5_WINDOW_LEN bytes answers the ones that fall inside it, instead of a
 * pread each (issue 82). Zeroed to start; h5_window_clear frees it. Its
 * fields are the engine's (io/file.c). */
#define H5_WINDOW_LEN ((size_t)64 << 10)
typedef struct h5_window {
	h5_file *f;
	uint64_t addr;
	size_t len;
	uint8_t *buf;
	void *spare;    /* a dataset h5_dataset_close_once closed: its memory,
			 * for the next h5_obj_open_once */
} h5_window;
void h5_window_clear(h5_window *w);
/* h5_obj_info_get and, for a dataset, h5_dataset_open (*ds; else NULL)
 * from one read of the header from FILE, which the engine's cache does
 * not keep (a listing's pass over its children's headers, each read once:
 * issue 82); w (NULL: none): the header's first bytes read through it */
int h5_obj_open_once(h5_obj_info *info, h5_dataset **ds, h5_file *f, uint64_t addr, h5_window *w);
void h5_dataset_close(h5_dataset *d);
/* h5_dataset_close of one h5_obj_open_once opened through w (NULL: as
 * h5_dataset_close), its memory kept in w for the next: a listing opens
 * and closes one per child, and a dataset (~1.1 KB) is past the size
 * malloc keeps per thread, each a calloc and free of its own arena's
 * bins (10% of a cold walk's daemon instructions with the datatype's,
 * issue 82) */
void h5_dataset_close_once(h5_dataset *d, h5_window *w);
/* Logical byte size: nelmts * element size. A dataset of a type holding
 * variable-length data reads as text (doc/h5fs.1, MAPPING): its size is
 * that text's, measured on the first call (one newline per element when
 * the elements cannot be decoded; reads then report why). */
uint64_t h5_dataset_size(const h5_dataset *d);
/* Bytes of storage allocated in the file for this dataset. */
uint64_t h5_dataset_allocated(const h5_dataset *d);
/* 1 when its layout is chunked (IV.A.2.i), else 0: no error set; asked
 * before h5_append_check, whose refusal of the other layouts formats a
 * message (the stat of every dataset of a read-write mount asks: 4% of
 * a cold walk's CPU, issue 82) */
int h5_dataset_chunked(const h5_dataset *d);
int h5_dataset_mtime(const h5_dataset *d, int64_t *mtime);
/* The files other than FILE that d's bytes are read from, each with its
 * stat: the file holding d when an external link led there, each external
 * data file (IV.A.2.h) and each virtual dataset source file (printf-named
 * sources left out), opened as a read would open them (one that cannot be
 * is left out: its reads fail or give fill values). fn's non-zero return
 * stops the walk and is returned. */
struct stat;
int h5_dataset_each_file(h5_dataset *d, int (*fn)(void *arg, const char *name, const struct stat *st), void *arg);
/* Read exactly len bytes at off; off+len must be <= h5_dataset_size(). */
int h5_dataset_read(h5_dataset *d, void *buf, uint64_t off, size_t len);
/* Where the bytes [off, off+len) of a dataset lie in FILE, for zero-copy
 * reads (splice): *n pieces in dataset order, piece i being out[i].len
 * bytes at absolute offset out[i].file_off of h5_file_fd(). Fails (with
 * H5_ERR_UNSUPPORTED, or H5_ERR_LIMIT beyond max pieces) when any part is
 * not stored as plain bytes in FILE - fill value, filtered chunk, compact
 * or external storage, variable-length text, memory image; the caller then
 * reads with h5_dataset_read, which also reports any real error. */
typedef struct h5_extent {
	uint64_t file_off;
	uint64_t len;
	int fd;                 /* the descriptor to read it from: FILE's, or
				 * a source file's (virtual datasets) */
} h5_extent;
int h5_dataset_extents(h5_extent *out, size_t max, size_t *n, h5_dataset *d, uint64_t off, size_t len);
/* The descriptor of FILE (-1 for memory images); for reading only. */
int h5_file_fd(const h5_file *f);

/* Zero-copy reads from the engine's memory: the bytes [off, off+len) of a
 * dataset as iov[0..niov), in dataset order, pointing into decoded chunks
 * held in the cache (filtered chunks), or for a FILE without a descriptor
 * (remote) into the byte source's cached blocks (contiguous storage,
 * unfiltered chunks). The chunks and blocks stay pinned (never evicted,
 * freed or reused) until h5_pin_release, so a reply can be written from
 * them straight (writev) without a copy into a reply buffer. Fails like
 * h5_dataset_extents (H5_ERR_UNSUPPORTED: some part is neither - a local
 * FILE's plain bytes (spliced instead), fill value, other layouts;
 * H5_ERR_LIMIT: more than H5_PIN_MAX pieces or chunks, or the source
 * holds enough pinned already); the caller then reads with
 * h5_dataset_read, which also reports any real error. Nothing is held
 * after a failure. */
#define H5_PIN_MAX 64
typedef struct h5_pin {
	struct iovec iov[H5_PIN_MAX];
	size_t niov;
	void *cache;                    /* opaque: where the chunks are held */
	void *held[2 * H5_PIN_MAX];     /* opaque: (object, entry) per chunk */
	size_t nheld;
	void *src;                      /* opaque: the byte source holding blocks */
	void *src_held[H5_PIN_MAX];     /* opaque: its holds, one per piece of FILE */
	size_t nsrc_held;
} h5_pin;
int h5_dataset_pin(h5_pin *out, h5_dataset *d, uint64_t off, size_t len);
void h5_pin_release(h5_pin *p);

/* The read plan: how the bytes [off, off+len) of a dataset are answered,
 * decided in one call (one walk of a chunk index) from what the layout
 * maps them to (plan.c, doc/DESIGN.md "The path of a read"):
 *  - H5_PLAN_EXTENTS: ext[0..next), pieces of files to splice from their
 *    descriptors (plain bytes of a local FILE, or of a virtual dataset's
 *    sources), in dataset order;
 *  - H5_PLAN_PINNED: pin.iov[0..pin.niov), the engine's memory (decoded
 *    chunks, a remote FILE's cached blocks), held until the release;
 *  - H5_PLAN_BUFFER: buf, len bytes (h5_buf_alloc'd) read, decoded,
 *    filled or converted to text (the rest: compact and external storage,
 *    fill, a mix of kinds, more than H5_PLAN_MAX pieces).
 * flags: H5_MAP_NO_SPLICE (a live FILE: its bytes are copied, never
 * spliced, so the reply cannot change after it was checked). A negative
 * h5_err is a real error (the window cannot be read); nothing is held
 * then. h5_read_plan_release frees and unpins (again harmless). */
#define H5_PLAN_MAX 64
#define H5_MAP_NO_SPLICE 0x1u
typedef enum h5_plan_kind {
	H5_PLAN_EMPTY = 0, H5_PLAN_EXTENTS, H5_PLAN_PINNED, H5_PLAN_BUFFER
} h5_plan_kind;
typedef struct h5_read_plan {
	h5_plan_kind kind;
	h5_extent ext[H5_PLAN_MAX];
	size_t next;
	h5_pin pin;
	uint8_t *buf;
	size_t len;
} h5_read_plan;
int h5_dataset_map(h5_read_plan *out, h5_dataset *d, uint64_t off, size_t len, unsigned flags);
void h5_read_plan_release(h5_read_plan *p);

/* Views (view.c): how a dataset's bytes are shown - "raw", the stored
 * element bytes as they are, or "text", variable-length data one line
 * per element (doc/h5fs.1, MAPPING), measured on first use. A daemon
 * node holds the view it shows its dataset with; h5_dataset_view is the
 * default (text for a type holding variable-length data, else raw), and
 * h5_dataset_size, h5_dataset_read and h5_dataset_map are its ops. */
typedef struct h5_view_ops {
	const char *name;
	/* the bytes shown (text: measured on the first call; one newline
	 * per element when the elements cannot be decoded, so reads reach
	 * the error) */
	uint64_t (*size)(const h5_dataset *d);
	/* exactly len bytes at off; off+len <= size */
	int (*read)(h5_dataset *d, void *buf, uint64_t off, size_t len);
	/* the read plan of [off, off+len) (h5_dataset_map) */
	int (*map)(h5_read_plan *out, h5_dataset *d, uint64_t off, size_t len, unsigned flags);
} h5_view_ops;
extern const h5_view_ops h5_view_raw;
extern const h5_view_ops h5_view_text;
/* "values": numbers stored at a bit offset or in fewer bits than their
 * container (the n-bit datatype, anywhere in the type) as values of the
 * container's type - sign-extended integers, IEEE floats of its size -
 * converted whole elements at a time (format/dtype_conv.c); always a
 * buffer. The default view of such a dataset, which takes no writes
 * (h5_overwrite_check, h5_append_open: its bytes are not its bits). */
extern const h5_view_ops h5_view_values;
const h5_view_ops *h5_dataset_view(const h5_dataset *d);
/* The fixed-size element bytes of d as its typestr describes them: raw, or
 * values (views of the elements: NPY, TIFF, frames; src/common/views.c). */
const h5_view_ops *h5_dataset_values_view(const h5_dataset *d);
/* Whether d's elements are converted to be read (h5_view_values), and
 * len bytes of whole stored elements of d (a fill value, bytes read from
 * FILE) converted in place as that view converts them. */
int h5_dataset_converted(const h5_dataset *d);
int h5_dataset_values(const h5_dataset *d, void *buf, size_t len);
/* The map op of a view whose bytes are made, never stored (text, CSV,
 * PNG, a view's header): a buffer of len bytes filled by read. */
int h5_view_map_made(h5_read_plan *out, h5_dataset *d, uint64_t off, size_t len,
		     int (*read)(h5_dataset *d, void *buf, uint64_t off, size_t len));
/* A view made outside the engine (src/common/views.c: NPY, TIFF, CSV, PNG
 * files of a dataset) keeps its state with the dataset handle it shows:
 * set once, before the handle is shared, and freed by fr when the handle
 * is closed; NULL when none was set. */
void h5_dataset_set_view_state(h5_dataset *d, void *state, void (*fr)(void *));
void *h5_dataset_view_state(const h5_dataset *d);
/* The shape of a dataset's dataspace: *rank dimensions at *dims (valid
 * while d is open); rank 0 is a scalar, and a null dataspace is
 * H5_SHAPE_NULL (h5_shape_kind, below). */
int h5_dataset_shape(unsigned *rank, const uint64_t **dims, const h5_dataset *d);
/* The text of one element of d's type stored at elem (h5_view_raw's bytes,
 * element size bytes), or of its compound member `member` (>= 0; -1: the
 * whole element), in the rules of doc/h5fs.1, ATTRIBUTES (a string member
 * verbatim, unquoted; variable-length data read from the global heap).
 * *out malloc'd and NUL-terminated. */
int h5_dataset_elem_text(char **out, size_t *len, h5_dataset *d, int member, const uint8_t *elem);
/* The mirror (a row of NAME.csv written): the text of one element, or of
 * compound member `member`, parsed into elem (the element's bytes; a
 * member's at its offset, the rest untouched): integers and IEEE floats
 * (white space around them ignored), enums by name or number,
 * fixed-length strings verbatim (padded as the type says).
 * H5_ERR_INVAL: text that does not parse, is out of the type's range or
 * too long. parsable: 0, or H5_ERR_UNSUPPORTED for a type no text sets
 * (the reason in the message). */
int h5_dataset_elem_parsable(const h5_dataset *d, int member);
int h5_dataset_elem_parse(uint8_t *elem, const h5_dataset *d, int member, const char *text, size_t len);

/* Buffers for reads, reused without page faults by the engine's decoders
 * as well (bufpool.c): plain malloc blocks, so free() of one is fine too
 * (only the reuse is lost), and h5_buf_free takes any malloc'd pointer. */
void *h5_buf_alloc(size_t n);
void h5_buf_free(void *p);

/* ---- describing a dataset (describe.c) ---------------------------------- */

/* What h5fs-ls prints about a dataset, in the engine's own vocabulary. Pointers into the dataset (dims, maxdims,
 * chunk, filters[i].cd) stay valid while it is open; the rest is freed by
 * h5_dataset_info_clear. */
typedef enum h5_shape_kind {
	H5_SHAPE_SCALAR = 0,
	H5_SHAPE_SIMPLE = 1,
	H5_SHAPE_NULL = 2
} h5_shape_kind;

typedef struct h5_filter_info {
	unsigned id;
	const char *name;         /* name stored in the file, else the codec's, or NULL */
	int optional;             /* may be skipped when it fails (flag bit 0) */
	int available;            /* this build can decode it */
	size_t ncd;
	const uint32_t *cd;       /* client data values */
} h5_filter_info;

/* One mapping of a virtual dataset: virtual selection <- file:dataset
 * source selection (selections as text, h5_sel_text). */
typedef struct h5_mapping_info {
	const char *file;         /* as stored ("." = the same file; may hold %b) */
	const char *dataset;
	char *virt_sel;
	char *src_sel;
} h5_mapping_info;

typedef struct h5_dataset_info {
	const char *dtype_class;  /* "integer", "float", ..., "unknown" */
	unsigned dtype_size;      /* bytes per element (0 unknown) */
	char *dtype_text;         /* "int32le", "compound[8]{a@0:float64le}", ... */
	char *dtype_numpy;        /* NumPy typestr as user.h5.dtype, or NULL */
	int dtype_form;           /* h5_num_form of a "|V<size>" number */
	h5_shape_kind shape;
	unsigned rank;
	const uint64_t *dims;
	const uint64_t *maxdims;  /* UINT64_MAX for unlimited */
	int has_maxshape;         /* some maximum differs from the current extent */
	const char *layout;       /* "compact", "contiguous", "chunked", "virtual", "unknown" */
	unsigned chunk_rank;      /* chunked only: chunk dims in elements */
	const uint64_t *chunk;
	const char *index;        /* chunked only: "btree1", "single", "implicit",
				   * "farray", "earray", "btree2"; else NULL */
	size_t n_external;        /* external raw data files (0: none) */
	size_t nmappings;         /* virtual datasets: the mappings */
	h5_mapping_info *mappings;
	size_t nfilters;
	h5_filter_info *filters;
	uint64_t logical_size;    /* h5_dataset_size */
	uint64_t allocated_size;  /* h5_dataset_allocated (UINT64_MAX: not asked) */
} h5_dataset_info;

int h5_dataset_describe(h5_dataset_info *out, h5_dataset *d);
/* The same; flags H5_DESCRIBE_NO_ALLOCATED: allocated_size not computed
 * (UINT64_MAX), which walks a chunked dataset's whole index. */
#define H5_DESCRIBE_NO_ALLOCATED 1u
int h5_dataset_describe_flags(h5_dataset_info *out, h5_dataset *d, unsigned flags);
void h5_dataset_info_clear(h5_dataset_info *info);

/* ---- where a dataset's bytes are stored (storage.c) --------------------- */

/* For tools handing the stored bytes to other readers (h5fs-ls --refs).
 * One allocated chunk: offsets are absolute in FILE (the user block
 * counted), `offset` the element coordinates of its first element. */
typedef struct h5_chunk_loc {
	unsigned rank;
	const uint64_t *offset;
	uint64_t file_off;
	uint64_t size;            /* bytes stored (filtered: as encoded) */
	uint32_t filter_mask;     /* bit i set: filter i of the pipeline was skipped */
} h5_chunk_loc;
/* Called once per chunk; return non-zero to stop (that value is returned). */
typedef int (*h5_chunk_cb)(const h5_chunk_loc *c, void *ud);
/* Every allocated chunk of a chunked dataset that holds elements of the
 * current extent, in the index's own order (not C order), through the
 * chunk index's walk (any of the six indexes); unallocated chunks are not
 * visited. H5_ERR_INVAL when the dataset is not chunked. */
int h5_dataset_chunks(h5_dataset *d, h5_chunk_cb cb, void *ud);

typedef struct h5_storage {
	uint64_t contig_off;      /* contiguous in FILE: absolute offset, else UINT64_MAX */
	uint64_t contig_size;
	const uint8_t *compact;   /* compact: the stored bytes */
	size_t compact_size;
	const uint8_t *fill;      /* one element of the fill value, fill_size
				   * bytes, or NULL: zeros (the file defines none,
				   * or all zero) */
	size_t fill_size;
	int fill_defined;         /* the file stores a fill value */
	size_t n_external;        /* external raw data files */
	int is_virtual;
	int has_vlen;             /* the type holds variable-length data */
	int edge_unfiltered;      /* partial edge chunks are stored unfiltered */
} h5_storage;
/* Pointers stay valid while d is open. */
int h5_dataset_storage(h5_storage *out, const h5_dataset *d);
/* len stored bytes at absolute offset file_off of FILE (a chunk h5_dataset_chunks
 * named, as stored: nothing is decoded), through FILE's byte source. */
int h5_file_pread(h5_file *f, void *buf, size_t len, uint64_t file_off);

/* ---- where FILE's bytes go (space_report.c) ------------------------------ */

/* What the structures reachable from the superblock use of FILE (the
 * root group's objects through hard links, every header, heap, B-tree,
 * array, chunk, contiguous block and global heap collection they reach),
 * each byte counted once. Sizes in bytes; addresses are relative to the
 * superblock, as in the file. */
typedef struct h5_space_report {
	uint64_t file_size;       /* FILE's size (the user block included) */
	uint64_t user_block;      /* bytes before the superblock */
	uint64_t eoa;             /* end of allocation: the superblock's end-of-file address */
	uint64_t used;            /* bytes of [0, eoa) something reachable uses */
	uint64_t meta;            /* of them: metadata (headers, heaps, B-trees, arrays, ...) */
	uint64_t raw;             /* of them: raw data (contiguous data, chunks) */
	uint64_t unreferenced;    /* eoa - used: allocated, used by nothing reachable
				   * (space freed by changes, never given back) */
	uint64_t past_eoa;        /* bytes of structures beyond eoa (0 in a sound file) */
	uint64_t tracked_free;    /* free space libhdf5's persisted free-space
				   * managers list (part of unreferenced) */
	uint64_t skipped;         /* attributes whose values could not be decoded,
				   * free-space managers named outside the file:
				   * what they reach shows as unreferenced */
	uint64_t objects;         /* object headers walked */
	uint64_t extents;         /* extents found before merging */
	uint64_t disk;            /* disk space FILE takes (st_blocks; 0: unknown) */
	uint64_t punched;         /* bytes of [0, eoa) that are holes (no disk blocks) */
	uint64_t marked_free;     /* of unreferenced: extents h5fs's free markers name
				   * (freed by a read-write mount, given back to the
				   * host; the next mount reuses them) */
} h5_space_report;
int h5_space_report_get(h5_space_report *out, h5_file *f);

/* ---- datatypes and attribute values for tools (typeview.c) --------------- */

typedef enum h5_type_kind {
	H5_TYPE_NUMBER = 0,       /* integer, float, bitfield, enum (as its base), h5py bool */
	H5_TYPE_STRING = 1,       /* fixed-length string */
	H5_TYPE_VSTRING = 2,      /* variable-length string */
	H5_TYPE_COMPOUND = 3,
	H5_TYPE_ARRAY = 4,
	H5_TYPE_OTHER = 5,        /* time, reference, sequence, odd sizes */
	H5_TYPE_OPAQUE = 6        /* opaque: bytes with no meaning to HDF5 ("|V<size>") */
} h5_type_kind;

/* A number NumPy has no typestr of (it is "|V<size>" there) but whose
 * encoding is a known one: HDF5 2.x's bfloat16 and OCP FP8 E4M3 (no
 * infinity) and E5M2 floats, a complex number (class 11) of two IEEE
 * half-precision floats. Their names are the tools' (src/common). */
typedef enum h5_num_form {
	H5_FORM_PLAIN = 0,        /* none of these */
	H5_FORM_BFLOAT16 = 1,
	H5_FORM_FLOAT8_E4M3 = 2,
	H5_FORM_FLOAT8_E5M2 = 3,
	H5_FORM_COMPLEX_HALF = 4,
	H5_FORM_FLOAT6_E2M3 = 5,  /* HDF5 2.1's OCP FP6 and FP4: no inf, no NaN */
	H5_FORM_FLOAT6_E3M2 = 6,
	H5_FORM_FLOAT4_E2M1 = 7
} h5_num_form;

/* A datatype as NumPy sees it. Compound members and an array's base are
 * the members (an array has one, named NULL). */
typedef struct h5_type_view {
	h5_type_kind kind;
	unsigned size;            /* bytes of one element */
	int str_pad;              /* fixed-length strings: 0 null-terminated,
				   * 1 null-padded, 2 space-padded */
	char *typestr;            /* NumPy typestr: "<f8", "|b1", "|S10", "|V12", "|O" */
	h5_num_form form;         /* "|V<size>" numbers of a known encoding */
	int converted;            /* n-bit numbers in it: stored bits are not the
				   * values (h5_dataset_read and attribute values
				   * give values, stored chunks bits) */
	const char *name;         /* as a compound member: its name */
	uint32_t offset;          /* as a compound member: its byte offset */
	unsigned arank;           /* array: its dimensions */
	uint32_t adims[32];
	size_t nmembers;
	struct h5_type_view *members;
} h5_type_view;
int h5_dataset_type(h5_type_view *out, const h5_dataset *d);
void h5_type_view_clear(h5_type_view *t);

/* One attribute: data is the value as stored, except variable-length
 * strings: their bytes, one NUL between two strings (h5_value_raw). */
typedef struct h5_attr_value {
	const char *name;
	size_t name_len;
	const h5_type_view *type;
	int null_space;
	unsigned rank;            /* 0: scalar */
	const uint64_t *dims;
	uint64_t nelmts;
	const uint8_t *data;
	size_t size;
} h5_attr_value;
typedef int (*h5_attr_value_cb)(const h5_attr_value *a, void *ud);
/* Every attribute of the object at addr, in the order h5_attr_iterate_names
 * gives; an attribute that cannot be decoded stops the walk with its error. */
int h5_attr_iterate_values(h5_file *f, uint64_t addr, h5_attr_value_cb cb, void *ud);

/* ---- attributes (attr.c, value.c) --------------------------------------
 * (Their names and values as extended attributes: src/common/xattrs.h.) */

typedef struct h5_attr h5_attr;
typedef int (*h5_attr_name_cb)(const char *name, size_t name_len, void *ud);
int h5_attr_iterate_names(h5_file *f, uint64_t addr, h5_attr_name_cb cb, void *ud);

/* Which of names[0..n) (NUL-terminated, n <= 32) the object at addr has
 * as attributes: bit i of *mask for names[i]; one pass over its header's
 * attribute messages (a lookup each would pass over them n times), the
 * dense index searched for each. 0 or an h5_err. */
int h5_attr_which(uint32_t *mask, h5_file *f, uint64_t addr, const char *const *names, size_t n);

/* The value of attribute NAME (name_len bytes; the first of equal names)
 * of the object at addr: as text (doc/h5fs.1, ATTRIBUTES) or, raw=1, the
 * bytes as stored (variable-length strings: their bytes, one NUL between
 * two). *out is malloc'd with a NUL after its *len bytes. The result is
 * deterministic, so a size query and the read that follows agree.
 * H5_ERR_NOTFOUND when the object has no such attribute. */
int h5_attr_value_get(void **out, size_t *len, h5_file *f, uint64_t addr, const char *name, size_t name_len,
		      int raw);
/* Every attribute of the object at once (one pass over its header, for a
 * daemon answering a walk's listxattr and getxattr from memory): the names
 * as h5_attr_iterate_names gives them and each value as h5_attr_value_get
 * gives it, or val NULL when that must be asked of h5_attr_value_get (an
 * error, which it reports; a value over max_value bytes). H5_ERR_LIMIT for
 * an object of more than max_attrs attributes (compact ones are found by a
 * scan of the header each). */
typedef struct h5_attr_ent {
	const char *name;       /* name_len bytes and a NUL */
	size_t name_len;
	void *val;              /* len bytes and a NUL, or NULL */
	size_t len;
} h5_attr_ent;
typedef struct h5_attr_set {
	h5_attr_ent *v;
	size_t n;
} h5_attr_set;
int h5_attr_all(h5_attr_set **out, h5_file *f, uint64_t addr, int raw, size_t max_value, size_t max_attrs);
void h5_attr_set_free(h5_attr_set *s);

/* ---- changing attributes (write/attr_write.c; doc/MODIFY.md) -------------
 * Attributes of a group, dataset or named datatype, in compact or dense
 * storage (a v2 header at its compact limit moves them there, as libhdf5),
 * each change one ordered commit (crash-safe, not durable:
 * h5_file_write_sync); a file open read-only: H5_ERR_ROFS. */
/* Attribute NAME set from text in the form h5_attr_value_get gives (raw:
 * the bytes as stored; variable-length strings NUL-separated): an existing
 * attribute keeps its type and shape (a fixed-length string takes the
 * length of its longest string); text that does not parse or has the wrong
 * number of elements: H5_ERR_INVAL, nothing changed. A new NAME: a scalar
 * variable-length UTF-8 string (what h5py writes for a Python str). */
int h5_attr_write(h5_file *f, uint64_t addr, const char *name, size_t name_len, const void *val, size_t len, int raw);
/* Attribute NAME (new, or replacing one) of a NumPy number type ("<f8",
 * "i4", "u1": [<>]?[iuf][1248]) from text: one element makes a scalar,
 * several (", "-joined) a 1-D array. */
int h5_attr_create_typed(h5_file *f, uint64_t addr, const char *name, size_t name_len, const char *typestr,
			 const char *text, size_t len);
/* A new attribute's fixed-length string (IV.A.2.d class 3, ASCII): how it
 * is padded. H5_FSTR_NULLTERM is netCDF-C's NC_CHAR (nc4hdf.c: a scalar of
 * the text's length, 1 for an empty text); H5_FSTR_NULLPAD is h5py's
 * numpy.bytes_. */
enum h5_fstr { H5_FSTR_NONE = 0, H5_FSTR_NULLTERM = 1, H5_FSTR_NULLPAD = 2 };
/* Attribute NAME (new, or replacing one): a scalar fixed-length string
 * holding text (no NUL byte in it: H5_ERR_INVAL), width bytes (0: the
 * text's length, at least 1; a text longer than width: H5_ERR_INVAL),
 * padded as fstr says. */
int h5_attr_create_str(h5_file *f, uint64_t addr, const char *name, size_t name_len, const char *text, size_t len,
		       size_t width, enum h5_fstr fstr);
/* H5_ERR_NOTFOUND when there is no such attribute. */
int h5_attr_delete(h5_file *f, uint64_t addr, const char *name, size_t name_len);
/* A batch of changes of one object's attributes, in order, in as few
 * commits as the storage allows: compact storage one per change (as
 * h5_attr_write), dense storage (from the start, or once a v2 header moved
 * there) one for the rest, its store written once. Each item is a new
 * attribute NAME (not there: a scalar variable-length UTF-8 string, as
 * h5_attr_write makes a new name; the batch's strings share one global
 * heap collection) or, with set, a new value of the existing NAME (text,
 * or raw, as h5_attr_write takes it). A name that is there (new) or not
 * (set), or a value that does not parse: the batch stops there with that
 * error. *done: how many changes are done (committed). */
typedef struct h5_attr_str {
	const char *name;
	size_t name_len;
	const char *val;
	size_t len;
	int set;                /* 1: a new value of an existing attribute */
	int raw;
	enum h5_fstr fstr;      /* a new name: a fixed-length string of its
				 * text's length (h5_attr_create_str), not a
				 * variable-length one */
} h5_attr_str;
int h5_attr_write_batch(size_t *done, h5_file *f, uint64_t addr, const h5_attr_str *it, size_t n);
/* What a write-behind batch of attribute changes has promised so far
 * (h5_attr_set_check adds each change it accepts; zero for a new batch). */
typedef struct h5_attr_room {
	size_t n, nnew;         /* changes, new names among them */
	uint64_t bytes;         /* their messages and new names' values */
	uint64_t need;          /* disk space their commit may take (h5_file_reserve) */
	size_t ngrow;           /* changes whose message may not stay in its place */
	uint64_t heap;          /* global heap collections their strings take */
} h5_attr_room;
/* Whether h5_attr_write(f, addr, name, ..., val, len, raw) would take the
 * value AND a batch holding room's changes and this one would commit it
 * (h5_attr_write_batch; nothing written, checked before the answer): 0
 * for an existing attribute; H5_ERR_NOTFOUND for a new name (a new string
 * attribute, fixed-length when fstr says so) that fits; else the error that write would give (or one for
 * a case it does not check: shared messages), or H5_ERR_LIMIT when the
 * batch cannot promise it (a message too large for its place, a move to
 * dense storage, the dense store near its heap's capacity): such a change
 * is made at once, which gives its real error. room (NULL: not counted)
 * grows by each change accepted. */
int h5_attr_set_check(h5_attr_room *room, h5_file *f, uint64_t addr, const char *name, size_t name_len,
		      const void *val, size_t len, int raw, enum h5_fstr fstr);
/* Disk space past f's end of allocation allocated now (the file extended
 * with zeros past its EOF address) for the commits of changes answered
 * and not committed yet, so that they cannot run out of it: H5_ERR_NOSPC
 * when the disk, less the host's margin, has not got it (then nothing is
 * promised). *held is the caller's share: once this returns 0 at least
 * want bytes are held for it, besides every other holder's, until
 * h5_file_unreserve (its commit done or dropped); held NULL: want bytes
 * besides the holders', held by nobody (appends, which write their rows
 * as they come). h5_file_write_sync gives back what no holder holds. */
int h5_file_reserve(h5_file *f, uint64_t *held, uint64_t want);
/* The same for a holder asking again (the daemon's link batch at each
 * create): when *held covers want already and a commit holds write_lock,
 * 0 at once (what was allocated for it stands, counted in what every
 * other reserve allocates past) rather than wait for that commit. */
int h5_file_reserve_again(h5_file *f, uint64_t *held, uint64_t want);
/* (takes write_lock when anything is held: not under it) */
void h5_file_unreserve(h5_file *f, uint64_t *held);
/* What earlier changes wrote, durable (fsync). */
int h5_file_write_sync(h5_file *f);
/* `to`, FILE opened anew by the writer that has `from` open (a live
 * mount's next generation, nothing written through `to` yet), takes over
 * `from`'s file space when no other writer changed FILE since: the same
 * EOF address. New space then continues at `from`'s allocation end, below
 * the room its commits reserved past it (which `to`'s next sync gives
 * back), and the space `from`'s commits freed is `to`'s to reuse, with
 * the chunk it rewrote last (h5_file_compact's; moved: `from` hands none
 * of it out again). Else nothing is taken over: `to`
 * allocates from its EOF address, as any fresh opening. No writer may use
 * either file meanwhile. */
void h5_file_space_handover(h5_file *to, h5_file *from);

/* ---- adding links (write/link_write.c) ------------------------------------
 * Link NAME added to the group at `group`, in compact link storage (link
 * messages in a v2 header: libver="latest" groups) or a symbol table
 * (h5py's default format): a hard link to the object header at addr, or
 * (H5_LINK_SOFT) a soft link to target. One ordered commit
 * (doc/MODIFY.md); durable: fsync'd. A hard link to an object that has
 * links already needs its reference count raised first (not done here:
 * for new objects, whose header counts this link). Refused: dense storage
 * (H5_ERR_UNSUPPORTED), a full compact storage (H5_ERR_NOSPC), a name the
 * group has (H5_ERR_INVAL). */
int h5_link_insert(h5_file *f, uint64_t group, const char *name, size_t name_len, h5_link_type type,
		   uint64_t addr, const char *target, int durable);
/* Whether a link of a name of name_len bytes (type, a soft link's
 * target) can be added to the group at `group` as its storage is or as
 * its next insert makes it, asked before the request that adds it is
 * answered: 0, or H5_ERR_LIMIT with the reason (a message larger than a
 * header message, or than the group's dense store keeps in place: a huge
 * heap object, which h5fs does not write). Nothing is written. */
int h5_link_fits(h5_file *f, uint64_t group, size_t name_len, h5_link_type type, const char *target);
/* A new empty group NAME in group parent, at *addr: of the parent's form
 * (a v2 header of compact link storage, or a v1 header with an empty
 * symbol table), as libhdf5 makes one in such a file; a v2 header tracks
 * and indexes the creation order of its links and attributes as its
 * parent does (netCDF-4's groups: netCDF-C writes only into such). */
int h5_group_create(uint64_t *addr, h5_file *f, uint64_t parent, const char *name, size_t name_len);
/* The same new group made loose (as h5_dataset_create_loose: not linked,
 * its commits skip their fsyncs, h5_link_insert_batch links it, made
 * durable first; a crash before leaves unreferenced space), of the form
 * parent's children take; h5_dataset_loose_drop gives it up. */
int h5_group_create_loose(uint64_t *addr, h5_file *f, uint64_t parent);

/* ---- new datasets (write/dset_create.c) ------------------------------------
 * A dataset of a NumPy numeric dtype (dset_enc.h's kinds: 'b', 'i', 'u',
 * 'f', 'c'; size bytes): contiguous at data_addr (data_size bytes the
 * caller wrote there, new space), or chunked (chunk; growable: dims[0]
 * unlimited) with no chunk yet (a v1 B-tree index once appended to), or
 * with the v1 B-tree at data_addr (indexed: h5_dset_writer's), its chunks
 * through the deflate filter at level deflate - 1 (0: no filter; h5py's
 * compression="gzip", compression_opts=deflate - 1), or, filter set (an
 * H5_FILTER_* id h5_dataset_filter_ok takes), through that filter at level
 * deflate - 1 (0: its default), with the client values its HDF5 plugin
 * gives a new dataset. */
typedef struct h5_dset_new {
	unsigned rank;          /* at most 32 (H5_MAX_RANK) */
	uint64_t dims[32];
	char kind;
	unsigned size;
	int big_endian;
	/* or (descr set) the NumPy dtype descr np.save's header gives (a
	 * typestr, or a structured dtype's list), as h5py stores it: strings
	 * S<n>, compounds of fields (arrays for a field's shape), size its
	 * itemsize (h5_numpy_descr_size) */
	const char *descr;
	size_t descr_len;
	/* or (vstr) variable-length UTF-8 strings, h5py's string_dtype (size:
	 * h5_file_vlen_size; the elements h5_dset_vstr_elements makes) */
	int vstr;
	int chunked, growable, indexed;
	unsigned deflate;
	uint16_t filter;        /* 0: deflate */
	uint64_t chunk[32];
	uint64_t data_addr, data_size;  /* contiguous; chunked: the index */
} h5_dset_new;

/* (write/dset_vstr.c) The bytes of one variable-length element in f: a
 * length, a global heap collection's address, an index. */
unsigned h5_file_vlen_size(const h5_file *f);
/* The elements (*out, n of h5_file_vlen_size bytes, malloc'd) of the
 * UTF-8 strings s[i] (l[i] bytes) for a new vstr dataset: the strings
 * written into new global heap collections at the allocation end (at
 * most 65535 strings, about 1 MiB, each), invisible until the dataset's
 * commit. The caller holds FILE's lock as for h5_dset_writer_put. */
int h5_dset_vstr_elements(uint8_t **out, h5_file *f, const char *const *s, const size_t *l, size_t n);

/* (write/dimscale.c) The dataset at var, which has none, attached to the
 * dimension scales scales[0..rank) (one per dimension), as libhdf5's
 * H5DSattach_scale writes it: each scale's REFERENCE_LIST gets an entry,
 * then var's DIMENSION_LIST is made; a commit each. A scale whose list
 * has another layout: H5_ERR_UNSUPPORTED; var attached already:
 * H5_ERR_INVAL. */
int h5_ds_attach_new(h5_file *f, uint64_t var, const uint64_t *scales, unsigned rank);
/* The dataset at var (its last link removed) taken off every dimension
 * scale its DIMENSION_LIST names: their REFERENCE_LIST entries naming it
 * removed (a list left empty goes: those scales into emptied, at most 32,
 * *nemptied of them; NULL: not said), a commit each. H5_ERR_NOTFOUND when
 * var has no DIMENSION_LIST. */
int h5_ds_detach(h5_file *f, uint64_t var, uint64_t *emptied, unsigned *nemptied);

/* The element size of a NumPy dtype descr (h5_dset_new's descr) when
 * h5py can store it: 0, or H5_ERR_UNSUPPORTED / H5_ERR_INVAL saying why
 * not (objects, datetimes, unicode, a void leaf, long double). */
int h5_numpy_descr_size(size_t *itemsize, const char *descr, size_t len);

/* -o compress=NAME[:LEVEL] for new datasets: gzip (or deflate; level 4
 * without one, as h5py), zstd, bzip2, blosc, lz4, lzf, bitshuffle (a
 * filter this build encodes; without LEVEL its plugin's default): *filter
 * (0: deflate) and *level_plus1 for h5_dset_new's filter and deflate.
 * 0, or H5_ERR_INVAL (message set). */
int h5_dataset_compress_parse(uint16_t *filter, unsigned *level_plus1, const char *spec);

/* Dataset NAME made in group (*addr: its header) and linked, one commit
 * (doc/MODIFY.md "New datasets"); start: the allocation end before the
 * data the caller wrote for it (UINT64_MAX: none), made durable first. */
int h5_dataset_create(uint64_t *addr, h5_file *f, uint64_t group, const char *name, size_t name_len,
		      const h5_dset_new *d, uint64_t start);

/* The write-behind of new files (doc/MODIFY.md "Write-behind of new
 * files"): dataset *addr made as h5_dataset_create makes one, its header
 * written at the allocation end, and not linked: nothing references it,
 * so its commits (rows appended, attributes, times) skip their fsyncs
 * until h5_link_insert_batch links it, whose commit makes it durable
 * first. A crash before that leaves it unreferenced space. */
int h5_dataset_create_loose(uint64_t *addr, h5_file *f, const h5_dset_new *d);
/* One link each names[i] -> addrs[i] (objects of h5_dataset_create_loose)
 * in group, as few commits as the group's form allows: a symbol-table
 * group one (its stage makes every object durable first, then the root's
 * one write); compact and dense storage one commit each, in order.
 * *done: how many are linked; each linked one is no longer loose. A name
 * the group has, or given twice: H5_ERR_INVAL before anything is written
 * (in a symbol-table group; in the others at that link). */
int h5_link_insert_batch(size_t *done, h5_file *f, uint64_t group, char *const *names, const uint64_t *addrs,
			 size_t n);
/* The disk space h5_link_insert_batch of n names of name_bytes in all may
 * take in group (an upper bound, for h5_file_reserve before a create is
 * answered): *need. */
int h5_link_batch_room(uint64_t *need, h5_file *f, uint64_t group, size_t n, uint64_t name_bytes);
/* A loose dataset given up (its creator's request failed after it was
 * made): no longer loose; its space stays unreferenced. */
void h5_dataset_loose_drop(h5_file *f, uint64_t addr);

/* A dataset whose data comes first (np.save through the
 * mount), filled in order by put (a gap: H5_ERR_INVAL), then made and
 * linked as NAME by commit, one commit after the data (all of it: else
 * H5_ERR_INVAL). Contiguous: its space (the product of d's dims and size)
 * taken at once. Chunked (d->deflate, a chunk shape or all 0: h5py's
 * guess): rows of chunks (one, or as many as make 1 MiB) filtered and
 * written once their bytes are in, the v1 B-tree at commit; bytes may be
 * written again only within the rows being filled, and a row of chunks over H5_DSET_SLAB_MAX bytes
 * is H5_ERR_LIMIT (the caller may write it contiguous). The caller holds
 * FILE's lock (h5_file_lock) while it writes. */
#define H5_DSET_SLAB_MAX ((uint64_t)256 << 20)
typedef struct h5_dset_writer h5_dset_writer;
int h5_dset_writer_open(h5_dset_writer **out, h5_file *f, const h5_dset_new *d);
int h5_dset_writer_put(h5_dset_writer *w, uint64_t off, const void *buf, size_t len);
uint64_t h5_dset_writer_missing(const h5_dset_writer *w);
int h5_dset_writer_commit(uint64_t *addr, h5_dset_writer *w, uint64_t group, const char *name, size_t name_len);
/* A writer whose stream stopped: the space it took goes back when nothing
 * was allocated after it (FILE cut to what is referenced), so space
 * follows the data that arrived, never a header's promise; no more bytes
 * may be put. h5_dset_writer_free does it for a dataset never made. */
void h5_dset_writer_abandon(h5_dset_writer *w);
void h5_dset_writer_free(h5_dset_writer *w);
/* Link NAME removed from the group (compact storage). want 1: only an
 * empty group (H5_ERR_INVAL if no group, H5_ERR_PERM if not empty); 2:
 * only what is not a group (H5_ERR_PERM); 0: anything. The object's
 * reference count drops when it has other links. H5_ERR_NOTFOUND. */
int h5_link_delete(h5_file *f, uint64_t group, const char *name, size_t name_len, int want);
/* rmdir's write-behind (the daemon's batch): whether NAME in group is an
 * empty group h5_link_delete(want 1) would remove (its errors), *target
 * its header; then the distinct names[0..n), each so, removed: in a
 * symbol-table group one commit (its stage, the root's one write), else
 * one commit each, in order; *done removed. */
int h5_group_rmdir_check(uint64_t *target, h5_file *f, uint64_t group, const char *name);
int h5_link_remove_batch(size_t *done, h5_file *f, uint64_t group, char *const *names, size_t n);
/* rename, link and unlink's write-behind (the daemon's batch, issue 82):
 * in group, each of the distinct names[0..n) afterwards a hard link to
 * the existing object addrs[i] (a rename's or a link's new name, over
 * whatever the name held), or removed (H5_ADDR_UNDEF: the name must be
 * there); one commit in a group whose form has one
 * (h5_link_change_batchable: 1, every form h5fs writes - a symbol-table
 * group's stage and root write, a dense store written anew, a compact
 * group's one header change; 0: H5_ERR_UNSUPPORTED here, nothing
 * written). The count of an object
 * named more is raised before the commit (durable before the root's
 * write), of one named less lowered after; a batch that would take an
 * object's last name is H5_ERR_INVAL before anything is written. A crash
 * leaves the names as before or as after, counts >= names. */
typedef struct h5_gone h5_gone;
typedef struct h5_link_gone {
	uint64_t addr;          /* an object whose last name the batch took */
	h5_gone *gone;          /* what it stored (NULL: nothing to free) */
} h5_link_gone;
/* gone (NULL: refused, as above): room for n; a dataset of one name whose
 * name the batch removes is allowed, what it stored handed back in
 * gone[0..*ngone) as h5_link_delete_gone hands it (after the commit;
 * discarded by the batch when it fails). */
int h5_link_change_batch(h5_file *f, uint64_t group, char *const *names, const uint64_t *addrs, size_t n,
			 h5_link_gone *gone, size_t *ngone);
int h5_link_change_batchable(h5_file *f, uint64_t group);
/* How many names (net) one h5_link_change_batch may add to group while
 * it keeps its form (*room; UINT64_MAX: no bound): a compact group's
 * limit less its links. Past it the batch still commits (the group stays
 * compact, which libhdf5 reads), but a caller may rather leave the next
 * name to h5_link_insert, which moves the group to dense storage. */
int h5_link_change_room(uint64_t *room, h5_file *f, uint64_t group);
/* The same for want 2; when that was the object's last link, what it
 * stored (its header, attribute storage, chunk index and chunks or
 * contiguous data) is handed back in *gone (NULL: nothing): freed by
 * h5_gone_release once nothing reads the object any more (an open
 * descriptor keeps reading an unlinked file), dropped unfreed by
 * h5_gone_discard. Global heap collections are never freed (shared). */
int h5_link_delete_gone(h5_file *f, uint64_t group, const char *name, size_t name_len, h5_gone **gone);
void h5_gone_release(h5_gone *g);
void h5_gone_discard(h5_gone *g);
/* A hard link NAME in group to the object at addr (H5Lcreate_hard): its
 * reference count raised first, then the link (write/link_move.c). A name
 * the group has: H5_ERR_INVAL. */
int h5_link_hard(h5_file *f, uint64_t group, const char *name, size_t name_len, uint64_t addr);
/* Link SNAME of sgroup moved to DNAME of dgroup (H5Lmove; an object keeps
 * its header, only links change). An existing DNAME is removed first, as
 * rename(2) replaces (what may replace what is the caller's rule); the
 * same name, or two links of one object: nothing. Within a compact group,
 * one commit; else a hard link, then the old name removed
 * (write/link_move.c, its crash states). */
int h5_link_move(h5_file *f, uint64_t sgroup, const char *sname, size_t slen, uint64_t dgroup, const char *dname,
		 size_t dlen);
/* The same; when DNAME was a dataset's last link, what it stored comes
 * back in *gone, as h5_link_delete_gone gives it (rename over a file). */
int h5_link_move_gone(h5_file *f, uint64_t sgroup, const char *sname, size_t slen, uint64_t dgroup,
		      const char *dname, size_t dlen, struct h5_gone **gone);

/* The modification time of the object at addr set to sec (seconds since
 * the epoch; utimensat through the mount), wherever its header records
 * times, or in a new Modification Time message of a version 1 header that
 * records none (write/obj_time.c). H5_ERR_UNSUPPORTED: a version 2 header
 * without times has no place (nothing written); H5_ERR_RANGE: outside
 * 0..2^32-1. */
int h5_obj_mtime_set(h5_file *f, uint64_t addr, int64_t sec);

/* ---- a dataset's metadata from its header (meta.c) ----------------------- */

/* What the object header at addr says of a dataset, without opening it (no
 * chunk index is read): for the daemon's and tools' user.h5.* xattrs
 * (src/common/xattrs.c), which name and format it. Three parts are texts
 * the engine makes, each with its own outcome, so that one which cannot be
 * made leaves the others. */
typedef struct h5_meta_text {
	char *text;               /* NUL-terminated, or NULL */
	size_t len;
	int rc;                   /* 0; H5_ERR_NOTFOUND: does not apply; else why not */
	char *msg;                /* rc an error but NOTFOUND: its message */
} h5_meta_text;

typedef struct h5_meta_filter {
	unsigned id;
	const char *name;         /* the codec's name, NULL when this build knows none */
} h5_meta_filter;

typedef struct h5_dset_meta {
	int is_dataset;           /* 0: a group or named datatype, nothing else set */
	h5_meta_text typestr;     /* the type's NumPy typestr (h5_type_view.typestr) */
	h5_num_form form;         /* and the encoding of a "|V<size>" number */
	h5_meta_text descr;       /* compound and array types: a NumPy descr
				   * (np.dtype(eval(text))) */
	h5_meta_text fill;        /* the fill value (stored, else zeros) as text */
	int has_vlen;             /* the type holds variable-length data (it
				   * reads as text, h5_dataset_size) */
	int vlen_strings;         /* ... and is a variable-length string */
	h5_shape_kind shape;
	unsigned rank;            /* SIMPLE only, else 0 */
	const uint64_t *dims;     /* a virtual dataset with live_shape: the extent
				   * its sources give it now (else as stored) */
	const uint64_t *maxdims;  /* UINT64_MAX for unlimited */
	unsigned layout_class;    /* as stored (IV.A.2.i): 0 compact, 1 contiguous,
				   * 2 chunked, 3 virtual */
	const char *layout;       /* its name: "compact", ..., "unknown" */
	int is_virtual;
	int external;             /* raw data in external files */
	const char *index;        /* chunked: "btree1", "single", ..., else NULL */
	unsigned chunk_rank;      /* chunked: the chunk dimensions as stored */
	const uint64_t *chunk;
	size_t nfilters;          /* the pipeline, in application order */
	h5_meta_filter *filters;
	void *priv;               /* what the pointers point into */
} h5_dset_meta;
int h5_dataset_meta(h5_dset_meta *out, h5_file *f, uint64_t addr, int live_shape);
void h5_dataset_meta_clear(h5_dset_meta *m);

/* ---- appending rows (append.c; doc/APPEND.md) ---------------------------- */

/* A dataset grows by whole rows (one index of dimension 0) when it is
 * chunked with an extensible array index, dimension 0 is its only
 * unlimited one, the type has a fixed size and every filter is deflate,
 * shuffle or fletcher32. h5_append_check says whether d qualifies
 * (H5_ERR_PERM with the reason otherwise). */
typedef struct h5_appender h5_appender;
int h5_append_check(const h5_dataset *d);
/* A dataset that can grow (h5_append_check) emptied: no rows, no chunk
 * index; its header, attributes, type, chunk shape and filters kept
 * (write/dset_empty.c, two fsync'd writes). H5_ERR_BUSY while an appender
 * of it is open. */
int h5_dataset_empty(h5_file *f, uint64_t addr);
/* What emptying replaced, to put back when the replacement that began
 * with it fails (cp or `cat x >` over a dataset: issue 56 item 3): the
 * old chunks stay unreferenced and unreused until the caller lets go. */
typedef struct h5_empty_undo {
	int valid;
	uint64_t idx_addr;      /* the old chunk index (undefined: none) */
	uint64_t dims0;         /* the old number of rows */
	void *gone;             /* the old index's blocks and chunks (engine's) */
} h5_empty_undo;
int h5_dataset_empty_undoable(h5_file *f, uint64_t addr, h5_empty_undo *undo);
/* The replacement succeeded: the old index's blocks and chunks are freed
 * (reused once the commits that stopped referencing them are durable:
 * doc/DESIGN.md "Free space"); undo is spent. */
void h5_dataset_empty_done(h5_file *f, h5_empty_undo *undo);
/* The old rows back: the index address, fsync, then dims[0] and the time,
 * fsync (a crash between: the old index with the new row count, rows of
 * it past that count hidden or reading fill). An append stream of the
 * dataset still open is failed ("restored"): its handles write no more. */
int h5_dataset_empty_undo(h5_file *f, uint64_t addr, h5_empty_undo *undo);
/* H5_ERR_PERM when the dataset cannot grow this way, H5_ERR_ROFS when the
 * file is open read-only. Nothing is written by open. */
int h5_append_open(h5_appender **out, h5_file *f, uint64_t dset_addr);
/* Take len bytes. Whole rows are written to the file as they arrive and
 * committed (made visible) by the stream's policy (h5_append_set_policy:
 * every 64 MiB or 1 s of rows by default); rows of all open
 * appenders of a dataset share one stream (doc/APPEND.md). */
int h5_append_write(h5_appender *a, const void *buf, size_t len);
/* When the stream of a's dataset commits by itself: once commit_bytes of
 * rows wait, or commit_ms after the oldest of them came (0: that one
 * kept). A new stream's are 64 MiB and 1 s (H5FS_APPEND_COMMIT_BYTES and
 * _MS override them); the stream is the dataset's, shared by its
 * appenders: the last policy given is every one's. */
void h5_append_set_policy(h5_appender *a, uint64_t commit_bytes, uint64_t commit_ms);
/* Commit every whole row received, durably (fsync'd); a partial row stays. */
int h5_append_flush(h5_appender *a);
/* Commit every whole row received now, ordered as every commit, without
 * the final fsync (a reader asks for rows not committed yet). */
int h5_append_show(h5_appender *a);
/* Drop this appender's partial row (after it was reported). */
void h5_append_discard(h5_appender *a);
/* Flush and free. A trailing partial row is not appended: H5_ERR_INVAL,
 * and its length in *pending_partial. */
int h5_append_close(h5_appender *a, size_t *pending_partial);
/* Disk space for committing len bytes of rows not committed yet (the
 * caller's count, this write's included: whole chunk rows, filters' worst
 * case, index blocks), allocated now (h5_file_reserve) before such a
 * write is answered: a full disk is H5_ERR_NOSPC for that write, never
 * rows lost after their answer (issue 56). The caller holds FILE's lock. */
int h5_append_reserve(h5_appender *a, uint64_t len);
/* A reader section: a request that reads FILE's metadata (a lookup, a
 * listing, xattrs). Space a commit frees while one that began before it
 * is active is reused only after it ends (it may be walking what that
 * space held). The token from begin goes to end. */
uint64_t h5_file_read_begin(h5_file *f);
void h5_file_read_end(h5_file *f, uint64_t token);
/* Free without committing or syncing anything (no write of FILE): for a
 * caller that does not hold FILE's lock, whose rows were committed
 * already; rows other appenders of the stream buffered stay theirs. */
void h5_append_drop(h5_appender *a);
uint64_t h5_append_size(const h5_appender *a);      /* bytes received (committed or not) */
uint64_t h5_append_committed(const h5_appender *a); /* dataset bytes after the last commit */
size_t h5_append_pending(const h5_appender *a);     /* bytes received, not committed */
uint64_t h5_append_row_bytes(const h5_appender *a);
/* Whether FILE was opened for writing. */
int h5_file_writable(const h5_file *f);
/* A number that differs from every one f had before once an attribute of
 * any of its objects or a link of its root group was written or removed
 * since (and from every other file's: drawn from one counter of the
 * process, so a file opened where a closed one was gets a new one).
 * What was derived from those alone (src/common/owner.c own_detect) holds
 * while it stays the same. Moved after each such change is in place: a
 * number taken, then the file read, reads at least that state. Another
 * program's changes are a new h5_file (the daemon's generations). */
uint64_t h5_file_attr_epoch(const h5_file *f);

/* ---- overwriting bytes of datasets (overwrite.c, chunk_rewrite.c;
 * doc/OVERWRITE.md) ------------------------------------------------------ */

/* Bytes inside a dataset's current size are written in place (contiguous),
 * in the object header (compact) or as rewritten chunks in new space with
 * the index updated in one ordered commit (chunked, every index with a
 * writer; filters that have an encoder). h5_overwrite_check says why a
 * dataset cannot be written this way (H5_ERR_UNSUPPORTED: virtual,
 * external storage, variable-length types, filters without an encoder;
 * 0 when it can). Nothing is written by open; put writes whole elements
 * of allocated contiguous storage in place at once (the commit then makes
 * them durable and sets the modification time), and keeps everything
 * else. */
typedef struct h5_overwriter h5_overwriter;
int h5_overwrite_check(const h5_dataset *d);
int h5_overwrite_open(h5_overwriter **out, h5_file *f, uint64_t dset_addr);
/* Take bytes [off, off + len) of the dataset (H5_ERR_RANGE past its end):
 * kept in memory until a commit, or written in place (above). */
int h5_overwrite_put(h5_overwriter *w, uint64_t off, const void *buf, size_t len);
/* Bytes taken since the last commit (kept or written in place): 0 when a
 * commit has nothing to do */
uint64_t h5_overwrite_buffered(const h5_overwriter *w);
/* Of those, the bytes kept in memory (not written in place): what a
 * periodic commit bounds */
/* Bytes the next commit rewrites: the chunks kept bytes touch, each once
 * (a chunked dataset whose chunks are runs of its bytes), else the bytes
 * kept; the daemon commits when they pass its bound */
uint64_t h5_overwrite_dirty(const h5_overwriter *w);
uint64_t h5_overwrite_kept(const h5_overwriter *w);
/* Whether a durable commit has anything to do: bytes kept or written in
 * place, or a commit since the last durable one not fsync'd yet. */
int h5_overwrite_pending(const h5_overwriter *w);
/* The kept bytes (taken, not committed; bytes written in place are in
 * FILE already) over [off, off + len) copied into buf, where they lie, a
 * later put over an earlier one winning: 1 when any lay there, else 0, or
 * a negative h5_err (a chunk taken whole is read back and decoded). buf
 * NULL: only whether any does. Readers of a dataset with a writer answer
 * with them. */
int h5_overwrite_peek(const h5_overwriter *w, uint64_t off, void *buf, size_t len);
/* Disk space for committing what is kept and len more bytes, allocated
 * now (h5_file_reserve), before such a write is answered: a full disk is
 * H5_ERR_NOSPC then, never an answered write lost at the commit (issue
 * 56). Chunked: every touched chunk rewritten to new space, plus index
 * blocks; contiguous and compact are written in place: nothing. */
int h5_overwrite_reserve(h5_overwriter *w, uint64_t len);
/* fallocate(PUNCH_HOLE | KEEP_SIZE) of [off, off + len), inside the
 * dataset (H5_ERR_RANGE past its end): after the next commit the range
 * reads zeros. Chunked: a whole chunk inside it loses its storage where
 * the index can drop it (fixed and extensible arrays: an undefined
 * address; v1 B-tree: its record removed, but the last of a leaf) and
 * the fill value is zero - its space freed by the commit -, is left alone
 * when not stored (zero fill), and is written zeros otherwise (v2
 * B-tree, non-zero fill), as partial chunks are;
 * H5_ERR_UNSUPPORTED when a chunk is not a run of whole rows.
 * Contiguous and compact: zeros written (contiguous storage never
 * allocated with a zero fill: nothing). (write/chunk_whole.c) */
int h5_overwrite_punch(h5_overwriter *w, uint64_t off, uint64_t len);
/* truncate(2) of a chunked dataset to size (whole rows; the caller asks
 * h5_append_check whether it may change size), at the next commit, as
 * libhdf5's H5D__set_extent:
 *   - fewer rows: dims[0] becomes size's rows, the chunks wholly past it
 *     leave the index where it can drop them (v1 B-tree, fixed and
 *     extensible arrays; their space freed) or get the fill value, and
 *     the boundary chunk's bytes past it get the fill value (a later
 *     growth reads it there). Kept bytes past it go.
 *     H5_ERR_UNSUPPORTED: chunks not runs of whole rows.
 *   - more rows (up to maxdims[0]): dims[0] raised and nothing written -
 *     the rows past the old end read the fill value: chunks never stored
 *     do, and the old edge chunk's part past dims[0] holds it (every
 *     writer leaves it so: libhdf5's H5D__chunk_prune_by_extent, and
 *     ours), so FILE grows by no chunk (`truncate -s 1G` writes nothing).
 *     H5_ERR_PERM (h5_append_check's reason): the dataset cannot grow.
 * One ordered commit (dset_commit.c): the new index, fsync, then dims[0]
 * (a crash between shows the old size; after a shrink's the rows past
 * the new one read the fill value). Open append streams of the dataset
 * go on from the new end. H5_ERR_UNSUPPORTED: not chunked; H5_ERR_INVAL:
 * not whole rows. (write/overwrite.c, write/chunk_whole.c) */
int h5_overwrite_resize(h5_overwriter *w, uint64_t size);
/* Make the bytes taken visible in one commit. all: every byte (else a
 * trailing partial element waits for the rest); durable: fsync'd before
 * returning. The bytes are dropped whatever the result. */
int h5_overwrite_commit(h5_overwriter *w, int all, int durable);
/* Free, without committing. */
void h5_overwrite_close(h5_overwriter *w);
/* The end of a writing session, when no reader holds an address of FILE
 * (unmount): the chunk this session rewrote last, when it lies near the
 * end of allocation and space freed below holds it, moves there in one
 * more ordered commit, and what the end then frees is cut off (the
 * superblock's EOF address lowered, fsync, FILE cut): copy-on-write
 * leaves the last copy at the end about every second rewrite, where
 * libhdf5 rewrites in place. 0 when nothing moved or it moved. */
int h5_file_compact(h5_file *f);

#ifdef __cplusplus
}
#endif
#endif
