/* append_int.h - what append.c (streams, the public calls) shares with
 * append_commit.c (commits) and append_stage.c (staging: building,
 * filtering and writing chunks and setting their index entries): the
 * stream of one dataset, and its failure, which all three set and read
 * (here, so that the two below append.c call nothing of it). */
#ifndef H5_APPEND_INT_H
#define H5_APPEND_INT_H

#include "base.h"
#include "file.h"
#include "dataset.h"
#include "cidx.h"
#include "cidx_write.h"
#include "freesp.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

/* Chunk images built at once (one window; for filtered datasets at least
 * two per thread); whole chunk rows of a simple unfiltered dataset go to
 * the file in pieces of this size too. */
#define WINDOW_BYTES ((uint64_t)1 << 20)

/* One dataset being appended to, shared by all its appenders. The fields
 * below `lock` are only used under it; `next`, `refs` and `unlinked`
 * under f->write_lock. Rows [committed, row0) are staged, rows
 * [row0, row0 + nbuf) are in buf (some of them may be committed already,
 * as a partly filled chunk row). */
typedef struct h5_astream {
	struct h5_astream *next;
	unsigned refs;
	bool unlinked;          /* failed and replaced in h5_ws(f)->astreams */
	pthread_mutex_t lock;
	h5_file *f;
	uint64_t addr;          /* dataset object header */
	h5_dataset *d;          /* type, fill, filters, dims[1:]: constant while appending */
	unsigned rank;
	uint64_t esize, row_bytes;
	uint64_t dims[H5_MAX_RANK];         /* dims[1:] */
	uint64_t chunk[H5_MAX_RANK];
	uint64_t nch[H5_MAX_RANK];          /* chunks per dimension (1:) */
	uint64_t down[H5_MAX_RANK];         /* EA linearisation over max dims (chunk.c set_down) */
	uint64_t ncells;                    /* chunks per chunk row */
	uint64_t crow_bytes;                /* bytes of the rows of one chunk row */
	uint64_t chunk_bytes;               /* bytes of one chunk (d's, kept: d is replaced by reloads) */
	bool filtered;
	bool simple;            /* one chunk per chunk row covering whole rows: its image is the rows */
	uint64_t stage_rows;    /* stage when this many rows are buffered (whole chunk rows) */
	uint64_t commit_bytes, commit_ns;
	uint64_t ea_addr;       /* EA header, UNDEF before the first chunk */
	uint64_t committed;     /* dims[0] on disk; read without the lock (atomic) */
	uint64_t row0;          /* first buffered row, the first of a chunk row */
	uint64_t placed;        /* row0, for h5_append_reserve without the lock
				 * (atomic; set with row0: stream_set_row0) */
	uint8_t *buf;
	uint64_t nbuf, cap;     /* rows buffered / room */
	const h5_cidx_write_ops *wops; /* the index's append operations (cidx_write.h) */
	void *ea;               /* its writer: entries set since the last commit (NULL: none) */
	/* index blocks the last commit replaced (v1 B-tree nodes copied),
	 * freed at the next commit or the close, once the daemon reopened
	 * the dataset (doc/DESIGN.md "Free space"); under f->write_lock */
	h5_freesp gone;
	uint64_t nset;
	uint64_t since;         /* when the oldest uncommitted row arrived (ns) */
	uint64_t last_end;      /* allocation end after the previous commit */
	uint64_t reserved;      /* disk space held for rows answered (h5_file_reserve; f->write_lock) */
	bool unsynced;          /* a commit since the last fsync did not fsync dims[0] */
	/* The chunks of a partly filled last chunk row, committed with fill
	 * (prow; UINT64_MAX: none): the next commit that stages that row
	 * again stops referencing them, and frees them (issue 53: every
	 * cat >> of a few KiB left a chunk behind). staged: records set
	 * since the last commit, with their chunk row. */
	uint64_t prow;
	h5_freesp partial;
	struct astage_rec { uint64_t r, cell; h5_chunk_rec rec; } *staged;
	size_t nstaged, cstaged;
	int failed;             /* sticky: set under lock, read under write_lock too (atomic) */
	char why[256];          /* the first failure's message, set with failed (issue 56: the cause logged) */
} h5_astream;

/* Rows below r staged (or skipped): row0 and its atomic mirror. */
static inline void stream_set_row0(h5_astream *s, uint64_t r)
{
	s->row0 = r;
	__atomic_store_n(&s->placed, r, __ATOMIC_RELEASE);
}

/* The stream's first failure kept with its message: every later refusal
 * names it (issue 56: "an earlier append failed" alone hid the cause). */
static inline int h5_astream_fail(h5_astream *s, int rc)
{
	if (!__atomic_load_n(&s->failed, __ATOMIC_ACQUIRE)) {
		snprintf(s->why, sizeof(s->why), "%s", h5_err_msg());
		__atomic_store_n(&s->failed, rc, __ATOMIC_RELEASE);
	}
	return rc;
}

/* The refusal of a failed stream, and whether it failed. */
static inline int h5_astream_refuse(const h5_astream *s)
{
	return h5_err_set(__atomic_load_n(&s->failed, __ATOMIC_ACQUIRE),
			  "an earlier append to this dataset failed: %s", s->why);
}

static inline int h5_astream_failed(const h5_astream *s)
{
	return __atomic_load_n(&s->failed, __ATOMIC_ACQUIRE);
}

/* The streams' clock (ns, monotonic). */
static inline uint64_t h5_astream_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* append_stage.c: s->stage_rows from its chunk rows' size (the stream's
 * setup, and a new file's chunks made smaller: append_commit.c
 * rechunk_small). */
void h5_astream_stage_rows(h5_astream *s);
/* append_commit.c, a commit another writer of the dataset makes
 * (overwrite.c, under s->lock, write_lock not held): every whole row
 * received staged, the incomplete chunk row with fill (*rows: dims[0]
 * once they are committed), their records on the stream's index writer
 * (s->ea, s->wops: NULL when nothing was staged), each staged chunk's
 * scaled coordinates and record (h5_astream_staged, i < s->nstaged; an
 * index that places chunks itself keeps none: they are where it says).
 * Then, after that commit, under write_lock too: h5_astream_joined (rc:
 * its result; what it made stops being the stream's to commit; the
 * caller reloads the stream's view of the dataset); and with write_lock
 * given back, h5_astream_joined_end. */
int h5_astream_join(h5_astream *s, uint64_t *rows);
void h5_astream_staged(const h5_astream *s, size_t i, uint64_t *scaled, h5_chunk_rec *rec);
void h5_astream_joined(h5_astream *s, int rc, uint64_t rows, uint64_t ticket, uint64_t end, bool durable);
void h5_astream_joined_end(h5_astream *s);
/* append_commit.c: staged rows made visible (partial: the
 * incomplete chunk row staged with fill first; durable: fsync'd); a
 * commit when enough rows wait or the oldest waited long enough */
int h5_astream_commit(h5_astream *s, bool partial, bool durable);
int h5_astream_maybe_commit(h5_astream *s);

/* The open stream of the dataset at addr, held (NULL: none), and let go
 * (the last holder frees it): what another writer of the dataset asks of
 * its appenders (dset_empty.c) */
h5_astream *h5_astream_hold(h5_file *f, uint64_t addr);
void h5_astream_release(h5_file *f, h5_astream *s);

/* An idle stream (nothing staged) after its dataset shrank or grew to
 * rows (overwrite.c h5_overwrite_resize): it goes on from there, its partly
 * filled chunk row read again by the caller (s->buf's room made for it;
 * out of memory fails the stream). Under s->lock and f->write_lock. */
int h5_astream_cut(h5_astream *s, uint64_t rows);

/* The chunks of the partly filled chunk row the stream begins with
 * (s->partial, s->prow). */
void h5_astage_partial_find(h5_astream *s);
/* Stage every complete chunk row in the buffer and keep the rest. */
int h5_astage_complete(h5_astream *s);
/* Stage chunk rows [r0, r1) from the buffer, rows below hi being data
 * (the last chunk row may be partial: filled). */
int h5_astage_chunks(h5_astream *s, uint64_t r0, uint64_t r1, uint64_t hi);
/* Whole chunk rows r.. of a simple unfiltered dataset straight from src:
 * n chunk images of len bytes each. */
int h5_astage_contiguous(h5_astream *s, const uint8_t *src, uint64_t r, uint64_t n, uint64_t len);

#endif
