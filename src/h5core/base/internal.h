/*
 * internal.h - types and functions shared inside libh5core.
 *
 * Conventions (see doc/DESIGN.md):
 *  - functions return 0 or a negative h5_err code, set via h5_err_set();
 *  - outputs come first (`**out`), one `goto out` cleanup path;
 *  - decoders (h5_*_decode) take (buf, len) and never do I/O; loaders
 *    (h5_*_load / _open) do the I/O, verify, and go through the cache;
 *  - every size, count and address from disk is bounds/overflow checked.
 *  - a module's exported symbols carry its prefix; everything else is static.
 */
#ifndef H5CORE_INTERNAL_H
#define H5CORE_INTERNAL_H

#include "h5core.h"
#include "source.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define H5_ADDR_UNDEF UINT64_MAX
#define H5_UNLIMITED UINT64_MAX
#define H5_MAX_RANK 32
/* Limits that keep hostile files from recursing or allocating without bound. */
#define H5_MAX_DTYPE_DEPTH 16
#define H5_MAX_BTREE_DEPTH 64
#define H5_MAX_OHDR_CHUNKS 4096
#define H5_MAX_NAME 65535

static inline bool h5_addr_defined(uint64_t a) { return a != H5_ADDR_UNDEF; }

/* Overflow-checked arithmetic: return true on overflow. */
static inline bool h5_add_overflow(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_add_overflow(a, b, r); }
static inline bool h5_mul_overflow(uint64_t a, uint64_t b, uint64_t *r) { return __builtin_mul_overflow(a, b, r); }

/* ---- sizes of offsets/lengths from the superblock ---------------------- */

typedef struct h5_fmt {
	uint8_t sizeof_addr;  /* 2, 4 or 8 */
	uint8_t sizeof_size;  /* 2, 4 or 8 */
} h5_fmt;

/* ---- bounded little-endian reader (rd.c) -------------------------------
 * A cursor over (buf, len). Reading past the end sets `bad` and yields 0, so
 * a decoder reads a whole structure and checks h5_rd_ok() once before
 * trusting any of it. */

typedef struct h5_rd {
	const uint8_t *p;
	size_t len;
	size_t pos;
	bool bad;
} h5_rd;

static inline void h5_rd_init(h5_rd *r, const void *buf, size_t len)
{
	r->p = (const uint8_t *)buf;
	r->len = len;
	r->pos = 0;
	r->bad = false;
}
static inline bool h5_rd_ok(const h5_rd *r) { return !r->bad; }
static inline size_t h5_rd_left(const h5_rd *r) { return r->bad ? 0 : r->len - r->pos; }
static inline bool h5_rd_need(h5_rd *r, size_t n)
{
	if (r->bad || n > r->len - r->pos) {
		r->bad = true;
		return false;
	}
	return true;
}
/* Little-endian unsigned integer of n bytes (0..8). */
uint64_t h5_rd_uint(h5_rd *r, unsigned n);
static inline uint8_t h5_rd_u8(h5_rd *r) { return (uint8_t)h5_rd_uint(r, 1); }
static inline uint16_t h5_rd_u16(h5_rd *r) { return (uint16_t)h5_rd_uint(r, 2); }
static inline uint32_t h5_rd_u32(h5_rd *r) { return (uint32_t)h5_rd_uint(r, 4); }
static inline uint64_t h5_rd_u64(h5_rd *r) { return h5_rd_uint(r, 8); }
/* An address of fmt->sizeof_addr bytes; all-ones becomes H5_ADDR_UNDEF. */
uint64_t h5_rd_addr(h5_rd *r, const h5_fmt *fmt);
/* A length of fmt->sizeof_size bytes. */
uint64_t h5_rd_size(h5_rd *r, const h5_fmt *fmt);
/* Pointer to the next n bytes (NULL and bad if not available). */
const uint8_t *h5_rd_bytes(h5_rd *r, size_t n);
void h5_rd_skip(h5_rd *r, size_t n);
/* Little-endian decode of n bytes at p (no bounds checks: caller checked). */
uint64_t h5_le_decode(const uint8_t *p, unsigned n);
void h5_le_encode(uint8_t *p, uint64_t v, unsigned n);

/* ---- checksums (checksum.c) -------------------------------------------- */

/* Jenkins lookup3 hashlittle(), as H5_checksum_metadata (initval 0). */
uint32_t h5_checksum_lookup3(const void *buf, size_t len, uint32_t initval);
static inline uint32_t h5_checksum_metadata(const void *buf, size_t len) { return h5_checksum_lookup3(buf, len, 0); }
/* Fletcher-32 as libhdf5's H5_checksum_fletcher32. */
uint32_t h5_checksum_fletcher32(const void *buf, size_t len);
/* Verify the 4-byte little-endian checksum stored at buf[len-4..len) over buf[0..len-4). */
int h5_checksum_verify(const uint8_t *buf, size_t len, const char *what, uint64_t addr);

/* ---- reusable buffers (bufpool.c) ---------------------------------------
 * Large buffers kept mapped for reuse by the next decode or reply: plain
 * malloc() blocks, so h5_buf_free takes any malloc'd pointer and free()
 * takes a pool buffer (the reuse is then lost). */
void h5_buf_trim(void);         /* give every idle buffer back (h5_buf_alloc/free: h5core.h) */
/* Idle buffers kept: a quarter of the cache budget, within [4, 48] MiB. */
void h5_buf_budget(size_t cache_budget);
size_t h5_buf_idle(void);       /* bytes kept idle now (tests) */

/* ---- cache (cache.c) ----------------------------------------------------
 * One LRU with a byte budget, keyed by (kind, key), shared by all datasets.
 * Entries are refcounted: an entry in use is never freed; eviction picks the
 * least recently released unused entry.  h5_cache_get() runs `load` once for
 * a missing key even when several threads ask at once (others wait). */

typedef struct h5_cache h5_cache;

enum h5_cache_kind {
	H5_CK_OHDR = 1,     /* h5_ohdr */
	H5_CK_LHEAP,        /* h5_lheap */
	H5_CK_BT1,          /* h5_bt1_node */
	H5_CK_BT2_HDR,      /* v2 B-tree header */
	H5_CK_BT2_NODE,     /* v2 B-tree internal/leaf node */
	H5_CK_FHEAP_HDR,
	H5_CK_FHEAP_IBLOCK,
	H5_CK_FHEAP_DBLOCK,
	H5_CK_GHEAP,        /* global heap collection */
	H5_CK_FA_HDR, H5_CK_FA_DBLOCK, H5_CK_FA_PAGE,
	H5_CK_EA_HDR, H5_CK_EA_IBLOCK, H5_CK_EA_SBLOCK, H5_CK_EA_DBLOCK, H5_CK_EA_PAGE,
	H5_CK_CHUNK,        /* decoded (unfiltered) chunk: key = chunk file address */
	H5_CK_GROUP,        /* decoded group summary */
	H5_CK_DATASET,      /* opened dataset description */
	H5_CK_OTHER,
	H5_CK_SNOD          /* h5_snod (symbol table node) */
};

typedef struct h5_cache_ref {
	void *obj;      /* the cached object */
	void *ent;      /* opaque: the entry, for h5_cache_release */
} h5_cache_ref;

/* Build the object for a missing key: set *obj and *cost (bytes charged). */
typedef int (*h5_cache_load_fn)(void **obj, size_t *cost, void *ud);
typedef void (*h5_cache_free_fn)(void *obj);

int h5_cache_new(h5_cache **out, size_t budget);
/* A view on `shared` (or on the cache it is a view of): the same budget and
 * LRU, keys of its own (kinds must stay below 1 << 16). Related files
 * (external links, virtual dataset sources) read through views of the top
 * file's cache, so all of them share one budget. h5_cache_free() of a view
 * drops its entries; the shared cache is freed after all its views. */
int h5_cache_new_view(h5_cache **out, h5_cache *shared);
void h5_cache_free(h5_cache *c);
int h5_cache_get(h5_cache_ref *out, h5_cache *c, uint32_t kind, uint64_t key,
		 h5_cache_load_fn load, h5_cache_free_fn free_fn, void *ud);
void h5_cache_release(h5_cache *c, h5_cache_ref *ref);
/* Drop an entry (e.g. after an append rewrote the block); freed once unused. */
void h5_cache_invalidate(h5_cache *c, uint32_t kind, uint64_t key);
size_t h5_cache_used(const h5_cache *c);
size_t h5_cache_budget(const h5_cache *c);

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
	h5_file_stamp stamp;
	bool has_stamp;
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
	/* shared object header message table (from the superblock extension) */
	uint64_t sohm_addr;     /* SMTB address or UNDEF */
	unsigned sohm_nindexes;
	h5_sohm_index sohm_index[H5_SOHM_MAX_INDEXES];
	h5_cache *meta;         /* decoded metadata blocks */
	h5_cache *chunks;       /* decoded chunks: the same cache as meta (file.c) */
	unsigned nthreads;
	bool efl_any;           /* h5_open_opts.efl_any */
	pthread_mutex_t write_lock; /* one writer at a time */
	/* under write_lock: the datasets being appended to (append.c), and
	 * where the next new space starts (space.c; 0: at eoa; may lie below
	 * eoa when a commit reserved space ahead, doc/APPEND.md) */
	struct h5_astream *astreams;
	uint64_t alloc_end;
	struct h5_prefetch *prefetch; /* background chunk decoding (chunk.c) */
	/* other files (related.c): the table of files reached from this one
	 * (top file only), the top file of a related file, the options */
	struct h5_related *related;
	char *real_path;        /* absolute path of FILE when opened (realpath),
				 * or NULL: the base for names of related files */
	struct h5_file *top;
	uint32_t file_id;
	bool ext_any;
	char *ext_prefix;
	/* a remote FILE (its URL is path): how to open the related files that
	 * lie beside it on the same server (related.c) */
	struct h5_remote_opts {
		bool on;
		char *s3_endpoint, *s3_region;
		bool s3_path_style;
		unsigned retries, timeout_s;
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
int h5_file_sync(h5_file *f);
/* Start writing back [addr, addr+len) early (a hint). */
void h5_file_sync_hint(h5_file *f, uint64_t addr, uint64_t len);
/* The size of the underlying object now (absolute, user block included),
 * and setting it (appends). */
int h5_file_size(h5_file *f, uint64_t *out);
int h5_file_truncate(h5_file *f, uint64_t size);

/* related.c: kind of name being resolved (which prefix variable applies) */
enum { H5_RELATED_EXT = 0, H5_RELATED_VDS = 1 };
int h5_related_open(h5_file **out, h5_file *from, const char *name, int kind);
void h5_related_release(h5_file *f);
void h5_related_free(h5_file *top);
/* h5_file_changed() bits of every related file open (under its table's lock). */
int h5_related_changed(h5_file *top);

/* superblock.c: find the signature (0, 512, 1024, ...), decode and verify. */
int h5_superblock_read(h5_file *f);
/* Rewrite the superblock's end-of-file address (superblock.c). */
int h5_superblock_write_eoa(h5_file *f, uint64_t eoa);
/* Pure decoder of a superblock image starting at the signature. */
int h5_superblock_decode(h5_file *f, const uint8_t *buf, size_t len);

/* ---- object headers (ohdr.c) --------------------------------------------- */

enum h5_msg_type {
	H5_MSG_NIL = 0x0000,
	H5_MSG_DSPACE = 0x0001,
	H5_MSG_LINFO = 0x0002,
	H5_MSG_DTYPE = 0x0003,
	H5_MSG_FILL_OLD = 0x0004,
	H5_MSG_FILL = 0x0005,
	H5_MSG_LINK = 0x0006,
	H5_MSG_EFL = 0x0007,
	H5_MSG_LAYOUT = 0x0008,
	H5_MSG_BOGUS = 0x0009,
	H5_MSG_GINFO = 0x000A,
	H5_MSG_PLINE = 0x000B,
	H5_MSG_ATTR = 0x000C,
	H5_MSG_COMMENT = 0x000D,
	H5_MSG_MTIME_OLD = 0x000E,
	H5_MSG_SHMESG = 0x000F,
	H5_MSG_CONT = 0x0010,
	H5_MSG_STAB = 0x0011,
	H5_MSG_MTIME = 0x0012,
	H5_MSG_BTREEK = 0x0013,
	H5_MSG_DRVINFO = 0x0014,
	H5_MSG_AINFO = 0x0015,
	H5_MSG_REFCOUNT = 0x0016
};

#define H5_MSG_FLAG_CONSTANT 0x01
#define H5_MSG_FLAG_SHARED 0x02

typedef struct h5_msg {
	uint16_t type;
	uint8_t flags;
	uint16_t crt_order;   /* v2 headers that track it */
	uint32_t size;
	const uint8_t *data;  /* points into h5_ohdr.chunks[chunk] */
	uint32_t chunk;       /* index into h5_ohdr.chunks */
	uint64_t addr;        /* relative file address of the message data (for in-place updates) */
} h5_msg;

typedef struct h5_ohdr_chunk {
	uint64_t addr;        /* relative address of the chunk's first byte (v2: of "OCHK"/"OHDR";
			       * v1 chunk 0: of the 16-byte prefix, which buf includes) */
	uint8_t *buf;         /* the whole chunk as read (v2: including signature and checksum) */
	size_t len;
} h5_ohdr_chunk;

typedef struct h5_ohdr {
	uint64_t addr;
	uint8_t version;      /* 1 or 2 */
	uint8_t flags;        /* v2 header flags */
	uint32_t refcount;    /* v1: from prefix; v2: refcount message or 1 */
	bool has_times;       /* v2 with times stored */
	uint32_t atime, mtime, ctime, btime;
	size_t nmsgs;
	h5_msg *msgs;         /* in header order, continuation and NIL messages included */
	size_t nchunks;
	h5_ohdr_chunk *chunks;
} h5_ohdr;

/* Load an object header with all continuation chunks (cycle-checked,
 * checksums verified). Goes through f->meta; release with h5_ohdr_release. */
int h5_ohdr_get(h5_ohdr **out, h5_file *f, uint64_t addr);
void h5_ohdr_release(h5_file *f, h5_ohdr *oh);
/* Uncached load / free (used by the cache loader and by tests). */
int h5_ohdr_load(h5_ohdr **out, h5_file *f, uint64_t addr);
void h5_ohdr_free(h5_ohdr *oh);

/* Editing a private copy of a header (h5_ohdr_load) in place (ohdr.c):
 * h5_ohdr_patch changes bytes at a file address inside one of its chunks;
 * h5_ohdr_write_chunk writes a changed chunk back in one write of [first
 * changed byte, end of chunk), v2 checksum included; the caller allocates
 * lo (set to SIZE_MAX) and hi (zeros), one entry per chunk. */
typedef struct h5_ohdr_edit {
	h5_ohdr *oh;
	size_t *lo;             /* per chunk: first changed byte, or SIZE_MAX */
	size_t *hi;
} h5_ohdr_edit;
int h5_ohdr_patch(h5_ohdr_edit *e, uint64_t addr, const void *bytes, size_t n);
int h5_ohdr_write_chunk(h5_file *f, h5_ohdr_edit *e, size_t c);
/* Index of the chunk holding addr, SIZE_MAX when none does. */
size_t h5_ohdr_chunk_of(const h5_ohdr *oh, uint64_t addr);
/* Set every modification time the header records to now (not written). */
int h5_ohdr_touch(h5_ohdr_edit *e, uint32_t now);
/* First message of a type, or NULL. */
const h5_msg *h5_ohdr_find(const h5_ohdr *oh, uint16_t type);
/* Count of messages of a type. */
size_t h5_ohdr_count(const h5_ohdr *oh, uint16_t type);
/* The message body, following a shared-message reference if the message is
 * shared (committed datatype in another header, or SOHM heap). *owned is a
 * buffer the caller frees (NULL when *data points into oh). */
int h5_msg_read(const uint8_t **data, size_t *len, void **owned,
		h5_file *f, const h5_msg *m);
/* Modification time (MTIME or MTIME_OLD message, else v2 header times). */
int h5_ohdr_mtime(const h5_ohdr *oh, int64_t *mtime);

/* ---- messages (dspace.c dtype.c fillval.c layout.c pline.c efl.c) ------- */

enum { H5_SPACE_SCALAR = 0, H5_SPACE_SIMPLE = 1, H5_SPACE_NULL = 2 };

typedef struct h5_dspace {
	int type;                       /* H5_SPACE_* */
	unsigned rank;
	uint64_t dims[H5_MAX_RANK];
	uint64_t maxdims[H5_MAX_RANK];  /* H5_UNLIMITED for unlimited; = dims if absent */
	bool has_max;
	uint8_t version;
} h5_dspace;

int h5_dspace_decode(h5_dspace *out, const h5_fmt *fmt, const uint8_t *buf, size_t len);
/* Number of elements (scalar 1, null 0); H5_ERR_LIMIT on overflow. */
int h5_dspace_nelmts(const h5_dspace *s, uint64_t *out);
/* Patch the size of dimension 0 in the dataspace message ds of a header
 * being edited (appends; dspace.c). */
int h5_dspace_patch_dim0(h5_ohdr_edit *e, const h5_msg *ds, const h5_fmt *fmt, uint64_t n);

typedef enum h5_tclass {
	H5T_INTEGER = 0, H5T_FLOAT = 1, H5T_TIME = 2, H5T_STRING = 3,
	H5T_BITFIELD = 4, H5T_OPAQUE = 5, H5T_COMPOUND = 6, H5T_REFERENCE = 7,
	H5T_ENUM = 8, H5T_VLEN = 9, H5T_ARRAY = 10
} h5_tclass;

typedef struct h5_dtype h5_dtype;

typedef struct h5_dtype_member {
	char *name;
	uint32_t offset;      /* byte offset inside the compound */
	h5_dtype *type;
} h5_dtype_member;

struct h5_dtype {
	h5_tclass cls;
	uint8_t version;
	uint32_t size;          /* element size in bytes */
	uint32_t bits;          /* the 24 class bit-field bits as stored */
	/* integer, float, bitfield, time */
	bool big_endian;
	bool is_signed;
	uint16_t bit_offset, precision;
	/* float */
	uint8_t sign_loc, exp_loc, exp_size, mant_loc, mant_size, norm;
	uint32_t exp_bias;
	/* string and vlen string */
	uint8_t str_pad;        /* 0 null-terminated, 1 null-padded, 2 space-padded */
	uint8_t cset;           /* 0 ASCII, 1 UTF-8 */
	/* opaque */
	char *tag;
	/* compound / enum */
	size_t nmembers;
	h5_dtype_member *members;  /* compound */
	char **enum_names;         /* enum: nmembers names */
	uint8_t *enum_values;      /* enum: nmembers * base->size bytes */
	/* enum, vlen, array */
	h5_dtype *base;
	/* vlen */
	uint8_t vlen_type;      /* 0 sequence, 1 string */
	/* array */
	unsigned arank;
	uint32_t adims[H5_MAX_RANK];
	/* reference */
	uint8_t ref_type;       /* 0 object, 1 region */
};

/* Whether t holds variable-length data anywhere (nested up to H5_MAX_DTYPE_DEPTH). */
bool h5_dtype_has_vlen(const h5_dtype *t);
/* Decode a datatype message (all versions, nested up to H5_MAX_DTYPE_DEPTH).
 * *used (optional) receives the bytes consumed. */
int h5_dtype_decode(h5_dtype **out, const uint8_t *buf, size_t len, size_t *used);
void h5_dtype_free(h5_dtype *t);
/* What a float type's fields describe: IEEE 754 binary16/32/64/128 of the
 * type's size, the x87 extended format (80 bits, the leading one stored),
 * or another layout. */
typedef enum h5_float_kind { H5_FLOAT_IEEE, H5_FLOAT_X87, H5_FLOAT_OTHER } h5_float_kind;
h5_float_kind h5_dtype_float_kind(const h5_dtype *t);

typedef struct h5_fill {
	uint8_t version;
	uint8_t alloc_time, fill_time;
	bool defined;           /* a value is stored */
	size_t size;
	uint8_t *value;         /* size bytes, or NULL */
} h5_fill;

/* type is H5_MSG_FILL or H5_MSG_FILL_OLD. */
int h5_fill_decode(h5_fill *out, uint16_t type, const uint8_t *buf, size_t len);
void h5_fill_clear(h5_fill *fv);
/* One element (esize bytes, malloc'd) of the fill fv stores, or *out NULL
 * meaning zeros; H5_ERR_FORMAT when the stored size is not esize. */
int h5_fill_elem(uint8_t **out, const h5_fill *fv, uint32_t esize);

enum { H5_LAYOUT_COMPACT = 0, H5_LAYOUT_CONTIGUOUS = 1, H5_LAYOUT_CHUNKED = 2, H5_LAYOUT_VIRTUAL = 3 };
enum {
	H5_CIDX_BTREE1 = 0,     /* layout v1-v3 (v4 never stores 0) */
	H5_CIDX_SINGLE = 1,
	H5_CIDX_IMPLICIT = 2,
	H5_CIDX_FARRAY = 3,
	H5_CIDX_EARRAY = 4,
	H5_CIDX_BTREE2 = 5
};
#define H5_LAYOUT_FLAG_NO_FILTER_EDGE 0x01   /* v4 "don't filter partial edge chunks" */
#define H5_LAYOUT_FLAG_SINGLE_FILTERED 0x02

typedef struct h5_layout {
	uint8_t version;
	uint8_t cls;            /* H5_LAYOUT_* */
	/* compact */
	uint8_t *compact;       /* copy of the raw data */
	size_t compact_size;
	/* contiguous */
	uint64_t addr;          /* UNDEF when never allocated */
	uint64_t size;
	/* chunked */
	unsigned ndims;                 /* dataset rank (the element-size dim of v1-v3 removed) */
	uint64_t chunk[H5_MAX_RANK];    /* chunk dims in elements */
	uint32_t chunk_elem_size;       /* v1-v3: trailing dimension (element size) */
	uint8_t flags;                  /* v4 flags */
	uint8_t idx_type;               /* H5_CIDX_* */
	uint64_t idx_addr;              /* index address (single: the chunk) */
	uint64_t single_size;           /* single, filtered: chunk size on disk */
	uint32_t single_mask;           /* single, filtered: filter mask */
	uint8_t fa_page_bits;
	uint8_t ea_max_bits, ea_idx_elmts, ea_min_ptrs, ea_min_elmts, ea_page_bits;
	uint32_t bt2_node_size;
	uint8_t bt2_split, bt2_merge;
	uint8_t dim_enc_size;           /* v4: bytes per chunk dimension */
	/* virtual (v4+): global heap object holding the VDS mapping */
	uint64_t vds_heap_addr;
	uint32_t vds_heap_index;
} h5_layout;

int h5_layout_decode(h5_layout *out, const h5_fmt *fmt, const uint8_t *buf, size_t len);
void h5_layout_clear(h5_layout *l);
/* The one vocabulary of layout and chunk index names (user.h5.layout,
 * user.h5.index, h5fs-ls): "compact", ...; "btree1", "single", "implicit",
 * "farray", "earray", "btree2"; "unknown" for other values. */
const char *h5_layout_class_name(unsigned cls);
const char *h5_layout_index_name(unsigned idx_type);
/* File address of the extensible array index address inside the stored
 * layout message lay (v4, chunked, earray), for appends. */
int h5_layout_bt1_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt);
int h5_layout_ea_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt);
int h5_layout_bt2_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt);
int h5_layout_fa_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt);
int h5_layout_single_addr_field(uint64_t *addr, const h5_msg *lay, const h5_fmt *fmt);

typedef struct h5_filter {
	uint16_t id;
	uint16_t flags;         /* bit 0: optional */
	char *name;             /* may be NULL */
	size_t ncd;
	uint32_t *cd;
} h5_filter;

typedef struct h5_pline {
	uint8_t version;
	size_t n;
	h5_filter *filters;     /* in application (write) order */
} h5_pline;

int h5_pline_decode(h5_pline *out, const uint8_t *buf, size_t len);
void h5_pline_clear(h5_pline *p);

typedef struct h5_efl_entry {
	uint64_t name_off;      /* offset in the local heap */
	uint64_t offset;        /* byte offset inside the external file */
	uint64_t size;          /* bytes reserved (H5_UNLIMITED = rest of file) */
} h5_efl_entry;

typedef struct h5_efl {
	uint64_t heap_addr;
	size_t n;
	h5_efl_entry *e;
} h5_efl;

int h5_efl_decode(h5_efl *out, const h5_fmt *fmt, const uint8_t *buf, size_t len);
void h5_efl_clear(h5_efl *e);

/* ---- links & group messages (link.c) ------------------------------------ */

int h5_link_decode(h5_link *out, const uint8_t *buf, size_t len, const h5_fmt *fmt);

typedef struct h5_linfo {
	bool track_corder, index_corder;
	int64_t max_corder;
	uint64_t fheap_addr;
	uint64_t name_bt2_addr;
	uint64_t corder_bt2_addr;   /* UNDEF if not indexed */
} h5_linfo;

int h5_linfo_decode(h5_linfo *out, const h5_fmt *fmt, const uint8_t *buf, size_t len);

typedef struct h5_stab {
	uint64_t btree_addr;
	uint64_t heap_addr;
} h5_stab;

int h5_stab_decode(h5_stab *out, const h5_fmt *fmt, const uint8_t *buf, size_t len);

/* ---- local heap (lheap.c) -------------------------------------------------- */

typedef struct h5_lheap {
	uint64_t addr;
	uint64_t data_addr;
	size_t size;
	uint8_t *data;
	uint64_t free_off;
} h5_lheap;

/* Decode the fixed-size header (HEAP signature...data segment address);
 * sets data_addr, size, free_off (UNDEF when none); data stays NULL. */
int h5_lheap_decode(h5_lheap *out, const h5_fmt *fmt, const uint8_t *buf, size_t len);
int h5_lheap_get(h5_lheap **out, h5_file *f, uint64_t addr);   /* cached */
void h5_lheap_release(h5_file *f, h5_lheap *h);
/* NUL-terminated string at off, or NULL if off is outside the heap or the
 * string is unterminated. */
const char *h5_lheap_string(const h5_lheap *h, uint64_t off);

/* ---- symbol table nodes (snod.c) ------------------------------------------ */

typedef struct h5_snod_entry {
	uint64_t name_off;
	uint64_t obj_addr;
	uint32_t cache_type;
	uint64_t btree_addr, heap_addr; /* cache_type 1 */
	uint32_t link_off;              /* cache_type 2: soft link value offset */
} h5_snod_entry;

typedef struct h5_snod {
	size_t n;
	h5_snod_entry *e;
} h5_snod;

int h5_snod_decode(h5_snod *out, const h5_fmt *fmt, unsigned leaf_k, const uint8_t *buf, size_t len);
void h5_snod_clear(h5_snod *s);
/* Load the SNOD at addr (2 * f->sym_leaf_k entries), cached (H5_CK_SNOD). */
int h5_snod_get(h5_snod **out, h5_file *f, uint64_t addr);
void h5_snod_release(h5_file *f, h5_snod *s);
/* Decode a symbol table entry (also used by the v0/v1 superblock). */
int h5_symentry_decode(h5_snod_entry *out, h5_rd *r, const h5_fmt *fmt);

/* ---- version 1 B-trees (btree1.c) ----------------------------------------- */

typedef struct h5_bt1_node {
	uint64_t addr;
	uint8_t type;           /* 0 group, 1 raw data chunks */
	uint8_t level;
	uint16_t n;             /* entries used */
	uint64_t left, right;
	uint64_t *child;        /* n */
	/* type 0: n+1 keys, heap offsets of names */
	uint64_t *name_off;
	/* type 1: n+1 keys */
	uint32_t *chunk_size;
	uint32_t *filter_mask;
	uint64_t *offsets;      /* (n+1) * ndims offsets: key i at offsets[i * ndims] */
	unsigned ndims;         /* offsets per key = dataset rank + 1 (as stored; last is 0) */
} h5_bt1_node;

/* chunk_ndims_plus1 == 0: the caller expects a group node (type 0); else a
 * chunk node (type 1) with that many 64-bit offsets per key. A node of the
 * other type is H5_ERR_FORMAT. h5_bt1_get also checks entries used <= 2K. */
int h5_bt1_decode(h5_bt1_node **out, const h5_fmt *fmt, unsigned chunk_ndims_plus1,
		  const uint8_t *buf, size_t len);
int h5_bt1_get(h5_bt1_node **out, h5_file *f, uint64_t addr, unsigned chunk_ndims_plus1);
void h5_bt1_release(h5_file *f, h5_bt1_node *n);
void h5_bt1_free(h5_bt1_node *n);

/* ---- fractal heap (fheap.c) ------------------------------------------------ */

typedef struct h5_fheap h5_fheap;
int h5_fheap_open(h5_fheap **out, h5_file *f, uint64_t addr);
void h5_fheap_close(h5_fheap *h);
/* Object bytes for a heap ID (tiny, managed or huge). *out is malloc'd. */
int h5_fheap_read(uint8_t **out, size_t *out_len, h5_fheap *h, const uint8_t *id, size_t id_len);
size_t h5_fheap_id_len(const h5_fheap *h);

/* ---- version 2 B-trees (btree2.c) ----------------------------------------- */

typedef struct h5_bt2 h5_bt2;
int h5_bt2_open(h5_bt2 **out, h5_file *f, uint64_t addr);
void h5_bt2_close(h5_bt2 *bt);
uint8_t h5_bt2_type(const h5_bt2 *bt);
uint32_t h5_bt2_record_size(const h5_bt2 *bt);
uint64_t h5_bt2_nrecords(const h5_bt2 *bt);
/* Visit every record in key order; cb returns non-zero to stop. */
typedef int (*h5_bt2_rec_cb)(const uint8_t *rec, size_t len, void *ud);
int h5_bt2_iterate(h5_bt2 *bt, h5_bt2_rec_cb cb, void *ud);
/* Search with cmp(key, rec) < 0 / 0 / > 0 as libhdf5's compare callback
 * (key less than / equal to / greater than the record). On a match, found()
 * is called and its result returned; H5_ERR_NOTFOUND if nothing matched.
 * For hash-keyed records cmp may return 0 on a hash match and found() may
 * return H5_ERR_NOTFOUND to reject a collision; the search then continues
 * over the neighbouring records with the same hash. */
typedef int (*h5_bt2_cmp_fn)(const void *key, const uint8_t *rec, size_t len, void *ud);
int h5_bt2_find(h5_bt2 *bt, h5_bt2_cmp_fn cmp, const void *key, h5_bt2_rec_cb found, void *ud);

/* ---- global heap (gheap.c) ------------------------------------------------- */

int h5_gheap_read(uint8_t **out, size_t *out_len, h5_file *f, uint64_t coll_addr, uint32_t index);

/* ---- groups (group.c) ------------------------------------------------------ */
/* public: h5_group_iterate, h5_group_lookup (h5core.h) */
/* Whether the object header describes a group (stab, linfo or link messages). */
bool h5_ohdr_is_group(const h5_ohdr *oh);

/* ---- attributes (attr.c) --------------------------------------------------- */

typedef struct h5_attr_msg {
	char *name;
	size_t name_len;
	uint8_t cset;
	h5_dtype *dtype;
	h5_dspace space;
	uint8_t *data;          /* raw value bytes */
	size_t data_size;
} h5_attr_msg;

int h5_attr_decode(h5_attr_msg *out, h5_file *f, const h5_fmt *fmt, const uint8_t *buf, size_t len);
void h5_attr_msg_clear(h5_attr_msg *a);
/* Find one attribute of the object at addr by name: compact messages are
 * scanned, dense storage is searched by name hash (no full scan).
 * H5_ERR_NOTFOUND when the object has no such attribute. */
int h5_attr_find(h5_attr_msg *out, h5_file *f, uint64_t addr, const char *name, size_t name_len);

/* ---- values as text, reserved metadata (value.c) ----------------------- */

/* Text encodings are refused beyond this size (H5_ERR_LIMIT). */
#define H5_VALUE_MAX_TEXT ((size_t)16 << 20)

/* The engine's string builder (strbuf.c): grows up to H5_VALUE_MAX_TEXT;
 * each call returns 0 or an h5_err. h5_sb_printf is for short pieces
 * (numbers); strings of any length go through h5_sb_puts. */
typedef struct h5_sb {
	char *p;
	size_t len, cap;
} h5_sb;
int h5_sb_put(h5_sb *s, const void *d, size_t n);
int h5_sb_puts(h5_sb *s, const char *str);
int h5_sb_printf(h5_sb *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int h5_sb_finish(char **out, size_t *len, h5_sb *s);

/* Text of nelmts elements of type t stored at data (data_len bytes, file
 * layout; variable-length data is read from the global heap of f). The
 * rules are in doc/h5fs.1, ATTRIBUTES. *out is malloc'd and NUL-terminated
 * (the NUL is not counted in *out_len). */
int h5_value_text(char **out, size_t *out_len, h5_file *f, const h5_dtype *t,
		  const uint8_t *data, size_t data_len, uint64_t nelmts);
/* "Raw" bytes of the same value: data as stored, except that a
 * variable-length string type yields its strings' bytes (NUL-separated). */
int h5_value_raw(uint8_t **out, size_t *out_len, h5_file *f, const h5_dtype *t,
		 const uint8_t *data, size_t data_len, uint64_t nelmts);
/* NumPy typestr ("<f8", "|S10", "|b1", "|V12", "|O") of t. */
int h5_value_typestr(char **out, const h5_dtype *t);

/* Reserved metadata of a dataset: user.h5.<key>. */
#define H5_META_MAX 9
typedef struct h5_meta {
	size_t n;
	const char *key[H5_META_MAX];   /* "dtype", "shape", ... (static strings) */
	char *val[H5_META_MAX];         /* malloc'd text, NUL-terminated */
	size_t len[H5_META_MAX];
} h5_meta;

/* All reserved keys that apply to the object of oh, in a fixed order (none
 * for groups and named datatypes). only != NULL: just that key, and
 * H5_ERR_NOTFOUND when it does not apply. */
int h5_meta_get(h5_meta *out, h5_file *f, const h5_ohdr *oh, const char *only);
void h5_meta_clear(h5_meta *m);

/* ---- filters (filter.c) ---------------------------------------------------- */

enum {
	H5_FILTER_DEFLATE = 1, H5_FILTER_SHUFFLE = 2, H5_FILTER_FLETCHER32 = 3,
	H5_FILTER_SZIP = 4, H5_FILTER_NBIT = 5, H5_FILTER_SCALEOFFSET = 6,
	H5_FILTER_LZO = 305, H5_FILTER_BZIP2 = 307, H5_FILTER_LZF = 32000, H5_FILTER_BLOSC = 32001,
	H5_FILTER_LZ4 = 32004, H5_FILTER_BITSHUFFLE = 32008, H5_FILTER_ZFP = 32013, H5_FILTER_ZSTD = 32015
};

/* Undo the pipeline on one chunk. *buf (malloc'd, *len bytes) is replaced
 * by the decoded bytes; filters whose bit is set in mask are skipped.
 * expect is the decoded chunk size: output larger than that is cut off and
 * reported (decompression bombs); smaller is an error.  On failure *buf is
 * still a malloc'd buffer the caller frees (contents unspecified); the same
 * holds for h5_filter_encode. dtype may be NULL (the cd values suffice). */
int h5_filter_decode(uint8_t **buf, size_t *len, const h5_pline *pl, uint32_t mask,
		     const h5_dtype *dtype, size_t expect);
/* Apply the pipeline for writing. An optional filter that cannot be applied
 * is skipped and its bit set in *mask_out (as libhdf5); a required one fails. */
int h5_filter_encode(uint8_t **buf, size_t *len, uint32_t *mask_out, const h5_pline *pl,
		     const h5_dtype *dtype);
/* Whether this build can decode / encode the filter. */
bool h5_filter_available(uint16_t id);
bool h5_filter_can_encode(uint16_t id);
const char *h5_filter_name(uint16_t id);

/* ---- datasets and chunk indexes (dataset.c chunk.c earray.c farray.c) ------ */

typedef struct h5_chunk_rec {
	uint64_t addr;          /* UNDEF: not allocated (reads as fill) */
	uint64_t size;          /* bytes on disk */
	uint32_t filter_mask;
} h5_chunk_rec;

/* The appending writer of v1 B-tree chunk indexes (btree1_write.c):
 * records set in memory (scaled chunk offsets, rank entries), changed nodes
 * written as new nodes by h5_bt1w_write (new root: h5_bt1w_root), then
 * after the layout switch h5_bt1w_patch fixes unchanged siblings' pointers. */
typedef struct h5_bt1w h5_bt1w;
int h5_bt1w_open(h5_bt1w **out, h5_file *f, uint64_t root, unsigned rank, const uint64_t *chunk,
		 uint32_t esize);
int h5_bt1w_set(h5_bt1w *w, const uint64_t *scaled, const h5_chunk_rec *rec);
int h5_bt1w_write(h5_bt1w *w, uint64_t *alloc_end);
uint64_t h5_bt1w_root(const h5_bt1w *w);
int h5_bt1w_patch(h5_bt1w *w);
void h5_bt1w_invalidate(h5_bt1w *w);
void h5_bt1w_free(h5_bt1w *w);
/* The appending writer of v2 B-tree chunk indexes (btree2_write.c): records
 * set by scaled coordinates, changed nodes written new by h5_bt2w_write,
 * the header rewritten in place by h5_bt2w_commit (or new: the layout
 * message must then point at h5_bt2w_addr). */
typedef struct h5_bt2w h5_bt2w;
int h5_bt2w_open(h5_bt2w **out, h5_file *f, const h5_dataset *d, uint64_t idx_addr);
int h5_bt2w_set(h5_bt2w *w, const uint64_t *scaled, const h5_chunk_rec *rec);
int h5_bt2w_write(h5_bt2w *w, uint64_t *alloc_end);
uint64_t h5_bt2w_addr(const h5_bt2w *w);
bool h5_bt2w_addr_is_new(const h5_bt2w *w);
int h5_bt2w_commit(h5_bt2w *w);
void h5_bt2w_invalidate(h5_bt2w *w);
void h5_bt2w_free(h5_bt2w *w);

typedef struct h5_chunk_index h5_chunk_index;

struct h5_dataset {
	h5_file *f;
	uint64_t addr;
	h5_dtype *dtype;
	h5_dspace space;
	h5_layout layout;
	h5_fill fill;
	h5_pline pline;
	h5_efl efl;
	uint64_t nelmts;
	uint64_t nbytes;        /* logical size in bytes */
	bool has_mtime;
	int64_t mtime;
	uint8_t *fill_elem;     /* one element of fill (dtype->size bytes) */
	h5_chunk_index *cidx;   /* chunked only */
	uint64_t chunk_bytes;   /* bytes of one full chunk */
	char **efl_paths;       /* EFL: efl.n resolved external file names */
	bool has_vlen;          /* dtype contains variable-length data */
	struct h5_vtext *vtext; /* has_vlen: the text the dataset reads as (vlen.c) */
	struct h5_vds *vds;     /* virtual: the mappings, and them resolved against */
	struct h5_vds_view *vview; /* the sources (dataset_vds.c) */
};

/* dataset_vds.c: virtual datasets (layout class 3) */
int h5_dataset_vds_open(h5_dataset *d);
int h5_dataset_vds_read(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len);
void h5_dataset_vds_close(h5_dataset *d);
size_t h5_dataset_vds_count(const h5_dataset *d);
/* h5_dataset_extents of a virtual dataset: the pieces its sources store as
 * plain bytes, when they tile the window exactly. */
int h5_dataset_vds_extents(h5_extent *out, size_t max, size_t *n, h5_dataset *d, uint64_t off, size_t len);

/* Fill buf with the bytes [off, off+len) of a stream of fill elements
 * (d->fill_elem repeated; the phase is off modulo the element size). fillval.c */
void h5_dataset_fill(const h5_dataset *d, uint8_t *buf, uint64_t off, size_t len);
/* Decode the messages describing a dataset into d->space, dtype, layout,
 * fill, pline (and efl when efl is set); d->f must be set. dataset.c */
int h5_dataset_msgs_decode(h5_dataset *d, const h5_ohdr *oh, bool efl);
void h5_dataset_msgs_clear(h5_dataset *d);
/* Read [off, off+len) of the stored bytes (what the layout holds, before
 * any text rendering); the caller checked the bounds. */
int h5_dataset_read_raw(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len);

/* A dataset of a type holding variable-length data reads as text (vlen.c):
 * the text is measured once, on first use (h5_vtext_ensure), and read by
 * window; h5_vtext_read's caller checked off+len <= h5_vtext_size(). */
typedef struct h5_vtext h5_vtext;
int h5_vtext_new(h5_vtext **out);
void h5_vtext_free(h5_vtext *vt);
int h5_vtext_ensure(h5_vtext **out, h5_dataset *d);
uint64_t h5_vtext_size(const h5_vtext *vt);
int h5_vtext_read(h5_dataset *d, const h5_vtext *vt, uint8_t *out, uint64_t off, size_t len);

/* Look up chunk `scaled` (chunk coordinates, dataset rank entries). */
int h5_chunk_index_open(h5_chunk_index **out, h5_dataset *d);
void h5_chunk_index_close(h5_chunk_index *ci);
int h5_chunk_lookup(h5_chunk_rec *out, h5_chunk_index *ci, const uint64_t *scaled);
/* Total bytes of allocated chunks (st_blocks). */
int h5_chunk_allocated(uint64_t *out, h5_chunk_index *ci);
/* Read [off, off+len) of a chunked dataset. */
int h5_chunk_read(h5_dataset *d, uint8_t *buf, uint64_t off, size_t len);
/* h5_dataset_extents for a chunked dataset: every part must lie in
 * allocated, unfiltered chunks. */
int h5_chunk_extents(h5_extent *out, size_t max, size_t *n, h5_dataset *d, uint64_t off, size_t len);
int h5_chunk_pin(h5_pin *out, h5_dataset *d, uint64_t off, size_t len);
/* Decode chunk `scaled` into f->chunks unless it is there (no-op for
 * unallocated or unfiltered chunks): what a prefetch worker does. */
int h5_chunk_decode(h5_chunk_index *ci, const uint64_t *scaled);
/* Sequential streams (chunk_stream.c). note: whether a read of [off,
 * off+len) continues a stream of a filtered dataset, scheduling the chunks
 * ahead if so; drop: chunks such a read has passed (drop-behind); forget:
 * the index is being closed (queued jobs dropped, running ones waited for). */
bool h5_chunk_stream_note(h5_dataset *d, uint64_t off, size_t len);
void h5_chunk_stream_drop(h5_chunk_index *ci, const uint64_t *passed, unsigned n);
/* keep: how many passed chunks drop-behind keeps (ci's geometry set). */
unsigned h5_chunk_stream_keep(const h5_chunk_index *ci);
void h5_chunk_stream_forget(h5_chunk_index *ci);
/* Workers that decode, into f->chunks, the chunks a sequential reader of a
 * filtered dataset will want next (h5_chunk_read schedules them). nworkers
 * 0: no prefetching. Free stops the workers; datasets are closed first
 * (h5_chunk_index_close waits for its dataset's jobs). */
typedef struct h5_prefetch h5_prefetch;
int h5_prefetch_new(h5_prefetch **out, unsigned nworkers);
void h5_prefetch_free(h5_prefetch *p);

#endif
