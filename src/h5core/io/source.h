/* source.h - the byte source: where FILE's bytes come from.
 *
 * Every read and write of the engine ends in one of these operations, so a
 * new place for HDF5 files to live (HTTP, S3, a test wrapper that records
 * or fails I/O) is one new file with one h5_source_ops and one entry in the
 * class table (source.c), and no decoder changes.
 *
 * Offsets are absolute byte offsets in the underlying object (the engine
 * adds the user-block base itself). All operations are thread-safe for
 * reads; writes come from one writer at a time (f->write_lock).
 */
#ifndef H5_SOURCE_H
#define H5_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

typedef struct h5_source h5_source;

/* A byte range of the object: [off, off + len). */
typedef struct h5_range {
	uint64_t off, len;
} h5_range;

typedef struct h5_source_ops {
	const char *name;       /* "local", "memory", "http", "s3", "record", ... */
	/* Read exactly len bytes at off. A range past the end is H5_ERR_FORMAT
	 * ("unexpected end of file"), an I/O failure H5_ERR_IO. Required. */
	int (*read)(h5_source *s, uint64_t off, void *buf, size_t len);
	/* Write exactly len bytes at off (extends the object). NULL: read-only. */
	int (*write)(h5_source *s, uint64_t off, const void *buf, size_t len);
	/* Make everything written so far durable. NULL: nothing to do. */
	int (*sync)(h5_source *s);
	/* Start writeback of a range early (a hint; errors ignored). NULL: none. */
	void (*sync_hint)(h5_source *s, uint64_t off, uint64_t len);
	/* Set the object's size (extend with zeros or cut). NULL: read-only. */
	int (*truncate)(h5_source *s, uint64_t size);
	/* Allocate [off, off+len) (extending the object with zeros): later
	 * writes there cannot run out of space. NULL: not needed (memory). */
	int (*allocate)(h5_source *s, uint64_t off, uint64_t len);
	/* [off, off+len) (inside the object) no longer needs its storage: it
	 * reads as zeros after, the size stays (fallocate PUNCH_HOLE|
	 * KEEP_SIZE). H5_ERR_UNSUPPORTED where the file system has none.
	 * NULL: not offered (write/space_punch.c then keeps the blocks). */
	int (*punch)(h5_source *s, uint64_t off, uint64_t len);
	/* The object's current size, asked again (appends, fstat). Required. */
	int (*size)(h5_source *s, uint64_t *out);
	/* A descriptor the FUSE side may splice from, or -1 (remote, memory). */
	int (*fd)(const h5_source *s);
	void (*close)(h5_source *s);
	/* The file's space is allocated in pages of page_size bytes from
	 * offset base (libhdf5's paged aggregation, from the superblock
	 * extension): a hint to fetch whole pages. NULL: ignored. */
	void (*page_hint)(h5_source *s, uint64_t base, uint64_t page_size);
	/* Zero-copy reads for sources without a descriptor (remote): the
	 * bytes [off, off+len) as iov[0..*n) (at most max pieces) pointing
	 * into the source's own cache, fetched first if missing. The memory
	 * stays valid and unchanged (never evicted or reused) until
	 * unpin(s, *hold). Fails like read, or H5_ERR_LIMIT when it would
	 * hold too much of the cache (the caller then reads with read);
	 * nothing is held after a failure. NULL: not offered. */
	int (*pin)(h5_source *s, uint64_t off, size_t len, struct iovec *iov, size_t max, size_t *n,
		   void **hold);
	void (*unpin)(h5_source *s, void *hold);
	/* Metadata at these n offsets will be read soon (the object headers
	 * of a group's children, its B-tree nodes and heap: addresses known
	 * before they are read one by one): a hint to fetch them together,
	 * in the background. NULL: ignored (local files read fast enough). */
	void (*prefetch)(h5_source *s, const uint64_t *off, size_t n);
	/* The bytes [start, end) are one object read front to back (a
	 * contiguous dataset's storage, announced before each read of it):
	 * a pass over it reads ahead no further than end. NULL: ignored. */
	void (*extent_hint)(h5_source *s, uint64_t start, uint64_t end);
	/* The ranges r[0..n) will be read next, in this order (the stored
	 * chunks ahead of a sequential stream over a chunked dataset: the
	 * index knows where they are before they are read): a hint to fetch
	 * them in the background, neighbours together, several at once.
	 * restart: a new stream, or the stream jumped; ranges hinted before
	 * and not fetched yet are forgotten. NULL: ignored. */
	void (*ranges_hint)(h5_source *s, const h5_range *r, size_t n, bool restart);
	/* Whether the object changed since it was opened (a remote object
	 * replaced: another ETag). probe: ask the server now (one request);
	 * else only what requests so far have seen. 1, 0, or 0 when the
	 * question cannot be answered now. NULL: never known (h5fs -o
	 * refresh then stamps local files itself, file.c). */
	int (*changed)(h5_source *s, int probe);
	/* Take (on) or give back (!on) the object's write lock without
	 * waiting: a local file's flock(LOCK_EX | LOCK_NB), as libhdf5's
	 * writers take it (its readers take LOCK_SH, so either keeps the
	 * other out). H5_ERR_BUSY when another open file description holds
	 * it. NULL: nothing to lock (read-only sources). */
	int (*lock)(h5_source *s, int on);
} h5_source_ops;

/* The name of the source of a remote object downloaded whole (a server
 * that ignores Range, source_http.c: h5_file_downloaded). */
#define H5_SOURCE_HTTP_COPY "http-copy"

/* Implementations embed this as their first member. */
struct h5_source {
	const h5_source_ops *ops;
	uint64_t size;          /* size when opened */
	int64_t mtime;          /* seconds; 0 when unknown */
	bool writable;
	/* A local file: its identity and times when opened (the one fstat
	 * of the open, which the file's stamp is taken from: file.c) */
	bool has_stat;
	uint64_t dev, ino;
	int64_t mtime_ns, ctime_ns;
};

/* How to open a source. */
typedef struct h5_source_opts {
	bool writable;          /* open for appends (local only; others EROFS) */
	bool lazy_lock;         /* writable: no lock at open, only between
				 * lock(s, 1) and lock(s, 0) (else held from
				 * open to close) */
	size_t cache_bytes;     /* the byte budget remote blocks may use (0: default) */
	bool data_file;         /* local: an external data file (IV.A.2.h): a regular
				 * file only, opened without blocking (a name
				 * leading to a FIFO must not hang the daemon) */
	bool meta_blocks;       /* local, read-only: small reads served from a
				 * few 8 KiB blocks read whole (source_local.c),
				 * for a one-pass scan of many files' metadata
				 * (h5fs-ls); never for a file that may change
				 * while open (the blocks are not re-read) */
	/* The classes' own options, "key=value" or "key" each (h5fs -o
	 * s3_region=R, retries=N, ...), NULL-terminated; NULL: none. Each
	 * class parses the keys it owns into an options struct of its own
	 * (source_http.h http_opts, source_s3.h s3_opts) and passes over the
	 * others; h5_source_param() says which keys some class owns. */
	const char *const *params;
} h5_source_opts;

/* A class: a name-matching rule and an opener (source.c holds the table). */
typedef struct h5_source_class {
	const char *name;
	/* True if this class opens `name` (e.g. "https://", "s3://"). The local
	 * class matches everything, so it is last in the table. */
	bool (*matches)(const char *name);
	int (*open)(h5_source **out, const char *name, const h5_source_opts *opts);
	/* Whether param ("key=value" or "key") is one of this class's
	 * options: 1, 0 (not its key), or H5_ERR_INVAL (message set) for its
	 * key with a malformed value. NULL: the class has none. */
	int (*param)(const char *param);
	/* The name to open for a file related to one this class opened (an
	 * external link's file name, a virtual dataset's source file name):
	 * name as the file gives it, base the name the class opened. *out a
	 * new string, or 1: it names no file (missing); H5_ERR_PERM for a
	 * name leaving base's directory unless any (-o ext_any). NULL: the
	 * names are local paths, which related.c looks for itself (prefixes,
	 * ${ORIGIN}, real paths inside FILE's tree). */
	int (*resolve)(char **out, const char *name, const char *base, bool any);
} h5_source_class;

/* The class that opens name (the first that matches it). */
const h5_source_class *h5_source_class_of(const char *name);
/* Whether some class owns param (h5fs and h5fs-ls pass their -o options
 * through this): 1, 0 none, or H5_ERR_INVAL for a malformed value. */
int h5_source_param(const char *param);
/* The value of param if its key is key: "key=value" gives "value" and
 * *has_value true, "key" gives "" and *has_value false; NULL: another key
 * (the classes' parsers). */
const char *h5_source_param_value(const char *param, const char *key, bool *has_value);

/* Opens name with the first class that matches it. */
int h5_source_open(h5_source **out, const char *name, const h5_source_opts *opts);
/* A read-only source over a caller-owned buffer (tests, fuzzing). */
int h5_source_open_mem(h5_source **out, const void *buf, size_t len);
void h5_source_close(h5_source *s);

/* A source that passes everything to `inner` (which it then owns) and
 * records each write and sync to log_path (source_trace.c gives the
 * format); the fail_at-th write or sync (1-based, counted together) fails
 * with fail_code (default H5_ERR_IO) instead of reaching inner. It has no
 * descriptor (h5_file_fd() is -1: nothing bypasses it). */
typedef struct h5_trace_opts {
	const char *log_path;   /* NULL: count only */
	uint64_t fail_at;       /* 0: none fails */
	int fail_code;
} h5_trace_opts;
int h5_source_trace(h5_source **out, h5_source *inner, const h5_trace_opts *o);
/* Writes and syncs a trace source has seen (0 for other sources). */
uint64_t h5_source_trace_count(const h5_source *s);

#endif
