/*
 * ohdr.h - object headers and their messages (ohdr.c; IV.A).
 */
#ifndef H5_FORMAT_OHDR_H
#define H5_FORMAT_OHDR_H

#include "base.h"
#include "file.h"

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
	/* bit t (t < 64): a message of type t is among msgs, so that a type
	 * absent is known without a pass over them (h5_ohdr_find: a group of
	 * 2,000 attributes was scanned whole for its Link Info and
	 * Attribute Info messages by every lookup of a name in it, issue 82) */
	uint64_t types;
	/* atomic: h5_attr_which's answer for the header's compact
	 * attributes (attr.c), one malloc'd block made at its first use and
	 * freed with the header, which is never changed once loaded (an edit
	 * changes a private copy, then the cache drops this one) */
	void *which;
	size_t nchunks;
	h5_ohdr_chunk *chunks;
} h5_ohdr;

/* Load an object header with all continuation chunks (cycle-checked,
 * checksums verified). Goes through f->meta; release with h5_ohdr_release. */
int h5_ohdr_get(h5_ohdr **out, h5_file *f, uint64_t addr);
void h5_ohdr_release(h5_file *f, h5_ohdr *oh);
/* The header its writer just wrote at addr (img: all its len bytes, as
 * FILE now holds them) decoded into the cache as h5_ohdr_get would read
 * it, so that the first look at it reads nothing (create(2)'s entry read
 * back the new dataset's header: a pread and a decode, 10% of the call's
 * daemon time, issue 82 item 2). Nothing when the cache holds one or the
 * decode fails (a later h5_ohdr_get reads FILE and says why). */
void h5_ohdr_prime(h5_file *f, uint64_t addr, const uint8_t *img, size_t len);
/* h5_ohdr_get, but the header is read from FILE for the caller alone and
 * not kept (freed by h5_ohdr_release), whether or not the cache holds it:
 * for headers read once (a listing's children, h5_obj_open_once); its
 * first bytes through window w (NULL: none) */
int h5_ohdr_get_once(h5_ohdr **out, h5_file *f, uint64_t addr, h5_window *w);
/* The stat-like facts of object addr from its header oh (object.c; the
 * header already loaded: h5_obj_info_get loads it itself) */
int h5_obj_info_of(h5_obj_info *out, h5_file *f, const h5_ohdr *oh, uint64_t addr);
/* A hint: the header at addr is asked for soon (h5_cache_prefetch) */
void h5_ohdr_prefetch(h5_file *f, uint64_t addr);
/* Uncached load / free (used by the cache loader and by tests). */
int h5_ohdr_load(h5_ohdr **out, h5_file *f, uint64_t addr);
void h5_ohdr_free(h5_ohdr *oh);

/* Editing a private copy of a header (h5_ohdr_load) in place (ohdr.c):
 * h5_ohdr_patch changes bytes at a file address inside one of its chunks;
 * h5_ohdr_write_chunk writes a changed chunk back in one write of [first
 * changed byte, end of chunk), v2 checksum included. h5_ohdr_edit_ranges
 * allocates lo (SIZE_MAX: unchanged) and hi, one entry per chunk of oh
 * (set first); the caller frees both. */
typedef struct h5_ohdr_edit {
	h5_ohdr *oh;
	size_t *lo;             /* per chunk: first changed byte, or SIZE_MAX */
	size_t *hi;
} h5_ohdr_edit;
int h5_ohdr_edit_ranges(h5_ohdr_edit *e);
int h5_ohdr_patch(h5_ohdr_edit *e, uint64_t addr, const void *bytes, size_t n);
int h5_ohdr_write_chunk(h5_file *f, h5_ohdr_edit *e, size_t c);
/* Index of the chunk holding addr, SIZE_MAX when none does. */
size_t h5_ohdr_chunk_of(const h5_ohdr *oh, uint64_t addr);
/* Every place the header records its modification time, given sec:
 * the Modification Time messages (IV.A.2.r, and the old one, IV.A.2.o)
 * and a v2 header's times (the two 4-byte times at prefix_off of its
 * prefix: 6, access and modification; 10, modification and change), each
 * handed to put (its file address, bytes, the chunk holding them);
 * *places: how many; *narrow: how many 32-bit places (the new message, a
 * v2 prefix) could not hold sec (before 1970 or after 2106: not written).
 * H5_ERR_RANGE: an old message's place and sec has no 4-digit UTC year. */
typedef int (*h5_ohdr_time_put)(void *ud, uint64_t addr, const void *bytes, size_t n, size_t chunk);
int h5_ohdr_time_places(unsigned *places, unsigned *narrow, const h5_ohdr *oh, int64_t sec, size_t prefix_off,
			h5_ohdr_time_put put, void *ud);
/* The old Modification Time message's body (IV.A.2.o: "YYYYMMDDhhmmss"
 * UTC, 2 reserved bytes) of sec; false: no 4-digit year. */
bool h5_ohdr_old_time(uint8_t body[16], int64_t sec);
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
/* Whether oh has one (h5_ohdr_mtime would not answer H5_ERR_NOTFOUND):
 * most datasets have none, and formatting that error's message for each
 * was 3% of a cold walk's daemon CPU (issue 70) */
bool h5_ohdr_has_mtime(const h5_ohdr *oh);

#endif
