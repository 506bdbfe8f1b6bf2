/* ow_int.h - what overwrite.c (the public calls) shares with the entries
 * of the overwriters' layout table: ow_contig.c, ow_compact.c and
 * chunk_rewrite.c (read-modify-write of the chunks an overwrite touches,
 * committed through the index writers) with chunk_whole.c; and what they
 * all share beneath them (ow_ext.c: the kept extents, the header edit).
 * doc/OVERWRITE.md. */
#ifndef H5_OW_INT_H
#define H5_OW_INT_H

#include "base.h"
#include "file.h"
#include "dataset.h"
#include "ohdr.h"
#include "freesp.h"
#include "keytab.h"
#include "chunk_rec.h"
#include "cidx_write.h"
#include "h5core.h"

#include <pthread.h>

/* Bytes [off, off + len) of the dataset's stream, written by the user. */
typedef struct h5_ow_ext {
	uint64_t off;
	size_t len, cap;
	uint8_t *p;
} h5_ow_ext;

/* Chunks every byte of which a put wrote (with, at most, the kept bytes
 * right before it): filtered at once from the request's bytes and written
 * to space taken for them (space.h h5_space_take), referenced by nothing
 * until the commit sets their records (chunk_rewrite.c) - no copy kept,
 * no merge. A chunk is taken whole only while no kept extent overlaps it,
 * so at the commit the whole chunks go first and kept extents after them
 * (later bytes win, as always). Used where a chunk's bytes are one run
 * of the dataset's stream: the chunks span every dimension but the first
 * whole, and those cannot change (maxdims); full chunks only (an edge
 * chunk may gain rows by appends before the commit). */
typedef struct h5_ow_whole {
	uint64_t s;             /* the chunk's index along dimension 0 */
	h5_chunk_rec rec;       /* its new copy, written */
} h5_ow_whole;

typedef struct h5_ow_chunks {
	bool ok;                /* chunks of this dataset can be taken whole */
	h5_dataset *d;          /* their pipeline, while any is taken (or NULL) */
	bool filtered;
	h5_ow_whole *v;
	size_t n, cap;
	uint64_t maxs;          /* highest s noted in v (a chunk again: s <= maxs) */
	uint64_t imax;          /* highest s handed to an encoder */
	uint64_t bytes;         /* decoded bytes taken (not committed) */
	/* a chunk filtered on a pool worker while the next request comes
	 * (chunk_whole.c): jobs in flight, the first error of one */
	bool async;
	pthread_mutex_t amu;
	pthread_cond_t acv;
	unsigned inflight, pactive;
	int aerr;
	char amsg[256];
} h5_ow_chunks;


/* The rows an append stream of the dataset had not committed, committed
 * with the overwrite in its one ordered commit (overwrite.c; append_int.h
 * h5_astream_join): the stream's index writer, their records set (NULL:
 * none), its n staged chunks (chunk(ctx, i, ...): scaled coordinates and
 * record), and dims[0] they make; out: the commit's ticket and allocation
 * end. */
typedef struct h5_ow_join {
	const h5_cidx_write_ops *wops;
	void *w;
	size_t n;
	void (*chunk)(const void *ctx, size_t i, uint64_t *scaled, h5_chunk_rec *rec);
	const void *ctx;
	uint64_t rows;
	uint64_t ticket, end;
} h5_ow_join;

struct h5_overwriter {
	h5_file *f;
	uint64_t addr;          /* object header */
	uint64_t nbytes;        /* the dataset's bytes at the last commit */
	uint64_t relayouts;     /* h5_ws(f)->relayouts its chunk geometry was taken at */
	uint64_t esize;
	uint64_t row_bytes;     /* one row of dimension 0 (dims[1:] never change) */
	uint8_t cls;            /* H5_LAYOUT_* */
	const struct h5_ow_layout_ops *lops;    /* its entry of the table below */
	h5_ow_ext *ext;
	size_t n, cap;
	uint64_t buffered;
	uint64_t direct;        /* bytes written in place since the last commit */
	uint64_t reserved;      /* disk space held for the next commit (h5_file_reserve) */
	size_t spans;           /* n, for a reserve before its turn (atomic) */
	uint64_t caddr;         /* allocated contiguous storage, else undefined */
	uint64_t chunk_bytes;   /* chunked: one chunk's bytes */
	bool unsynced;          /* a commit since the last durable one was not fsync'd */
	uint64_t last_end;      /* allocation end after this writer's last commit */
	/* what its last commit replaced (chunk_rewrite.c): freed at the next
	 * commit or at close, once the caller reopened the dataset its readers
	 * use (the daemon's ow_refresh), so no reader follows an old address
	 * into reused space */
	h5_freesp gone;
	h5_ow_chunks wc;        /* chunks taken whole (chunk_whole.c) */
	/* h5_overwrite_resize: the dataset's bytes after the next commit,
	 * which sets dims[0] (UINT64_MAX: the size stays), and whether that
	 * is a growth */
	uint64_t resize;
	bool grow;
	/* The chunks the kept extents touch (a chunked dataset whose chunks
	 * are runs of the byte stream: dset_key), each rewritten once by the
	 * next commit however many writes it took: what that commit needs
	 * and when it is due (issue 71: 4 KiB random writes reserved two
	 * chunks each, until the disk was full). dirty: keyed by the
	 * chunk's index + 1; ndirty, its count, atomic (a reserve reads it
	 * before its turn). */
	bool dset_key;
	h5_keytab dirty;
	size_t ndirty;
	/* the append stream's rows its commit takes (NULL: none; set by
	 * h5_overwrite_commit for its layout's commit) */
	h5_ow_join *join;
};

/* ow_ext.c: the touched chunks forgotten (after a commit); the chunks of
 * [off, off + len) noted as touched */
void h5_ow_dirty_clear(h5_overwriter *w);
int h5_ow_dirty_note(h5_overwriter *w, uint64_t off, uint64_t len);

/* The overwriters' layout table: one entry per layout that can be
 * written, beside its writer (ow_compact.c, ow_contig.c, chunk_rewrite.c),
 * as the read side's (dataset/layout_ops.h). check: why d's bytes
 * cannot be written, or 0; need: the disk space a commit of what is
 * kept plus len more bytes may take (NULL: none), reserved before the
 * answer; put: len bytes at off, inside the dataset, taken (kept, or
 * written at once); commit: the n kept extents (and what put wrote)
 * made the dataset's, in one ordered commit, under f->write_lock with
 * the dataset's append streams held (durable: fsync'd; in-place layouts
 * always are). */
typedef struct h5_ow_layout_ops {
	const char *name;
	int (*check)(const h5_dataset *d);
	int (*need)(uint64_t *need, const h5_overwriter *w, uint64_t len);
	int (*put)(h5_overwriter *w, uint64_t off, const uint8_t *p, size_t len);
	int (*commit)(h5_overwriter *w, h5_dataset *d, size_t n, bool durable);
	/* [off, off + len), inside the dataset, made to read zeros (NULL:
	 * zeros written, h5_ow_put_zeros) */
	int (*punch)(h5_overwriter *w, uint64_t off, uint64_t len);
} h5_ow_layout_ops;
extern const h5_ow_layout_ops h5_ow_compact, h5_ow_contig, h5_ow_chunked;
/* the entry of a layout class (H5_LAYOUT_*), or NULL (overwrite.c) */
const h5_ow_layout_ops *h5_ow_layout_of(uint8_t cls);
/* ow_ext.c, for the entries: the object header's edit begun (its own
 * layout message found), ended; its modification time set and every
 * chunk but keep written */
int h5_ow_edit_begin(h5_ohdr_edit *e, const h5_msg **lay, h5_file *f, uint64_t addr);
void h5_ow_edit_end(h5_ohdr_edit *e, h5_file *f, uint64_t addr);
int h5_ow_touch_header(h5_ohdr_edit *e, h5_file *f, size_t keep);
/* ow_ext.c: [off, off + len), inside the dataset, given zeros through
 * put (a layout's put, h5_ow_keep, h5_ow_put_chunked); whether d's fill
 * value reads as zeros */
int h5_ow_put_zeros(h5_overwriter *w, uint64_t off, uint64_t len,
		    int (*put)(h5_overwriter *w, uint64_t off, const uint8_t *p, size_t len));
bool h5_ow_fill_is_zero(const h5_dataset *d);

/* Keep [off, off + len) in memory until the commit (ow_ext.c). */
int h5_ow_keep(h5_overwriter *w, uint64_t off, const uint8_t *buf, size_t len);

/* chunk_whole.c: set up w->wc for w's dataset d (or leave it unused);
 * the dataset a put opened for the pipeline closed (the commit, once
 * nothing is taken); a put of a chunked dataset (whole chunks taken, the
 * rest kept); the taken chunks' bytes over [off, off + len) into buf
 * (h5_overwrite_peek); the taken chunks dropped, their space given back
 * (never referenced: a handle closed without its commit). */
void h5_ow_whole_init(h5_overwriter *w, const h5_dataset *d);
void h5_ow_whole_release(h5_overwriter *w);
int h5_ow_put_chunked(h5_overwriter *w, uint64_t off, const uint8_t *p, size_t len);
int h5_ow_whole_peek(const h5_overwriter *w, uint64_t off, uint8_t *buf, size_t len);
void h5_ow_whole_drop(h5_overwriter *w);
/* [off, off + len) of a chunked dataset (inside it) reads zeros after the
 * commit: whole chunks dropped where the index can drop them and the fill
 * value is zero (their space freed by the commit), chunks
 * not stored left alone when the fill is zero, the rest written zeros.
 * H5_ERR_UNSUPPORTED when a chunk is not one run of the stream. */
int h5_ow_punch_chunked(h5_overwriter *w, uint64_t off, uint64_t len);
/* The chunks past `size` bytes (whole rows, below the dataset's size)
 * made to read the fill value, w->resize set: chunks wholly past it
 * dropped where the index can drop them (their space freed by the
 * commit), else given the fill value where stored; the part of the
 * boundary chunk past it given the fill value. H5_ERR_UNSUPPORTED when a
 * chunk is not one run of the stream. */
int h5_ow_shrink_chunked(h5_overwriter *w, uint64_t size);
/* Wait for the chunks being filtered on the pool: 0, or the first error
 * one had (then cleared). Before a commit, a peek, a close. */
int h5_ow_whole_wait(h5_overwriter *w);

/* The extents ext[0..n) (in the order written) as m disjoint ranges in
 * offset order, each byte holding its last value; free with h5_ow_free.
 * Written in place, every byte is then written once, with its new value
 * (an extent written over by a later one would otherwise show its bytes
 * to a crash in between); and the bytes a chunk gets can be counted. */
int h5_ow_merge(h5_ow_ext **out, size_t *m, const h5_ow_ext *ext, size_t n);
void h5_ow_free(h5_ow_ext *r, size_t m);

/* Chunked: an append stream's rows first (join, NULL: none; its staged
 * chunks read through their records, dims[0] its rows), then set the
 * records of the chunks taken whole, whole[0..nwhole),
 * then apply the extents ext[0..n) in order (a later one over an
 * earlier one wins) to the chunks they touch and commit them in one
 * ordered commit (txn.c); called under f->write_lock. *last_end: the
 * allocation end after the previous commit of this writer (reserve
 * sizing), updated. What the commit replaced (chunks, index blocks) is
 * added to gone with the commit's ticket (space.h h5_space_free_all).
 * rows (UINT64_MAX: unchanged): dims[0] after the commit (fewer, or
 * more up to maxdims[0]: extents may then reach past the old end),
 * patched after the switch to the new index (a crash between: the old
 * row count, the rows past a smaller one reading the fill value, as
 * emptying's first step leaves them: dset_empty.c).
 * Returns 0 or a negative h5_err; on an error FILE holds the old state or
 * the complete new one (and nothing is added to gone). */
int h5_ow_chunked_commit(h5_dataset *d, h5_ow_join *join, const h5_ow_whole *whole, size_t nwhole,
			 const h5_ow_ext *ext, size_t n, bool durable, uint64_t rows, uint64_t *last_end,
			 h5_freesp *gone);

/* Whether chunked d can be rewritten (its index has writers, its filters
 * encoders): 0 or H5_ERR_UNSUPPORTED with the reason. */
int h5_ow_chunked_check(const h5_dataset *d);

#endif
