/* test_space.c - file space (space.c) and the ordered commit (txn.c) on a
 * file built here byte by byte (a v2 superblock and one object header), with
 * an index writer of its own whose blocks are a byte pattern: where space
 * is handed out, what the superblock's EOF address and the file's length
 * become after a periodic commit (reserve) and a durable one (given back),
 * and a writer that fails after writing; the free list (base/freesp.c:
 * merging, best fit, the allocation end lowered) and space.c's reuse of
 * freed space only after the fsync that makes its freeing durable. */
#define _GNU_SOURCE /* SEEK_HOLE */
#include "testutil.h"
#include "space.h"
#include "txn.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "file.h"
#include "ohdr.h"
#include "freesp.h"
#include "file_ws.h"

#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

/* A durable request with nothing new (txn.h h5_txn_idle), as a commit
 * outside any loose object's makes it. */
static int txn_sync_idle(h5_file *f, bool unsynced)
{
	h5_txn t;

	h5_txn_begin(&t, f, true, NULL, NULL);
	return h5_txn_idle(&t, unsynced);
}

#define SB_SIZE 48

static char tmpdir[64];
static char path[128];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/h5fs-test-space-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	test_tmp_remove(tmpdir);
}

/* Superblock v2 (root: the object header after it), then an object header
 * v2 holding one 8-byte NIL message; the EOF address is the file's length. */
static uint64_t make_file(void)
{
	tbuf b = { 0 };
	uint64_t len;

	tb_sb2_start(&b, SB_SIZE);
	tb_str(&b, "OHDR");
	tb_u8(&b, 2);
	tb_u8(&b, 0x00);            /* chunk 0 size in 1 byte */
	tb_u8(&b, 12);
	tb_u8(&b, H5_MSG_NIL);
	tb_u16(&b, 8);
	tb_u8(&b, 0);
	tb_zero(&b, 8);
	tb_checksum(&b, SB_SIZE);
	tb_sb2_finish(&b);
	len = b.len;
	snprintf(path, sizeof(path), "%s/f.h5", tmpdir);
	test_write_file(path, &b);
	tb_free(&b);
	return len;
}

static h5_file *open_file(int writable)
{
	return test_open(path, (h5_open_opts){ .writable = writable });
}

/* Writable without holding FILE's lock from open to close (as the daemon
 * opens it): two openings at once. */
static h5_file *open_lazy(void)
{
	return test_open(path, (h5_open_opts){ .writable = 1, .lazy_lock = 1 });
}

static uint64_t file_size(void)
{
	return test_file_size(path);
}

/* The superblock's EOF address as a fresh open reads it. */
static uint64_t eoa_on_disk(void)
{
	h5_file *f = open_file(0);
	uint64_t eoa = f->eoa;

	h5_file_close(f);
	return eoa;
}

START_TEST(space_alloc_fits)
{
	uint64_t len = make_file(), a;
	h5_file *f = open_file(1);

	pthread_mutex_lock(&f->write_lock);
	ck_assert_uint_eq(f->eoa, len);
	/* the write state (write/file_ws.h): none until a writer asks, then
	 * one, the same for every caller */
	ck_assert_ptr_null(f->ws);
	ck_assert_uint_eq(h5_space_end(f), len);
	ck_assert_ptr_nonnull(f->ws);
	ck_assert_ptr_eq(h5_ws(f), f->ws);
	ck_assert_uint_eq(f->space_top, len);   /* what io/ordered.c reads */
	ck_assert_int_eq(h5_space_alloc(&a, f, 100), 0);
	ck_assert_uint_eq(a, len);
	ck_assert_uint_eq(h5_space_end(f), len + 100);
	ck_assert_uint_eq(f->space_top, len + 100);
	ck_assert_int_eq(h5_space_alloc(&a, f, 0), 0);
	ck_assert_uint_eq(a, len + 100);
	ck_assert_int_eq(h5_space_alloc(&a, f, UINT64_MAX - 10), H5_ERR_LIMIT);
	ck_assert_uint_eq(h5_space_end(f), len + 100);
	ck_assert(!h5_space_fits(f, H5_ADDR_UNDEF));
	/* 4-byte addresses: nothing at or past 4 GiB */
	f->fmt.sizeof_addr = 4;
	ck_assert(h5_space_fits(f, UINT64_C(0xffffffff)));
	ck_assert(!h5_space_fits(f, UINT64_C(0x100000000)));
	ck_assert_int_eq(h5_space_alloc(&a, f, UINT64_C(0x100000000)), H5_ERR_LIMIT);
	ck_assert_uint_eq(h5_space_end(f), len + 100);
	f->fmt.sizeof_addr = 8;
	/* nothing was written: the file and its superblock are as they were */
	pthread_mutex_unlock(&f->write_lock);
	h5_file_close(f);
	ck_assert_uint_eq(file_size(), len);
	ck_assert_uint_eq(eoa_on_disk(), len);
}
END_TEST

/* ---- an index writer of its own -------------------------------------------------- */

typedef struct pat_writer {
	h5_file *f;
	size_t n;               /* bytes of "blocks" to write */
	int fail_after;         /* fail once written */
	uint64_t at;            /* where they went */
} pat_writer;

static int pat_write(void *wp)
{
	pat_writer *w = wp;
	uint8_t *buf = malloc(w->n);
	int rc;

	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < w->n; i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	rc = h5_space_alloc(&w->at, w->f, w->n);
	if (rc == 0)
		rc = h5_file_write(w->f, w->at, buf, w->n);
	free(buf);
	if (rc < 0)
		return rc;
	return w->fail_after ? h5_err_set(H5_ERR_IO, "failing after the write, as asked") : 0;
}

static const h5_cidx_write_ops pat_ops = { .write = pat_write };

static void check_pattern(uint64_t at, size_t n)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf = malloc(n);

	ck_assert_ptr_nonnull(fp);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(fseek(fp, (long)at, SEEK_SET), 0);
	ck_assert_uint_eq(fread(buf, 1, n, fp), n);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq(buf[i], (uint8_t)(i * 7 + 1));
	free(buf);
	fclose(fp);
}

/* A periodic commit reserves room ahead (at least 1 MiB): the superblock
 * and the file's length cover it; a second commit within it, durable or
 * not, leaves the superblock alone; the sync gives the reserve back. */
START_TEST(txn_reserve_and_give_back)
{
	uint64_t len = make_file();
	h5_file *f = open_file(1);
	pat_writer w = { .f = f, .n = 1000 };
	h5_txn t;

	pthread_mutex_lock(&f->write_lock);
	h5_txn_begin(&t, f, false, &pat_ops, &w);
	ck_assert_msg(h5_txn_stage(&t, h5_space_end(f)) == 0, "%s", h5_err_msg());
	ck_assert_uint_eq(w.at, len);
	ck_assert_uint_eq(t.end, len + 1000);
	ck_assert_uint_eq(t.new_eoa, len + 1000 + (UINT64_C(1) << 20));
	ck_assert_uint_eq(f->eoa, t.new_eoa);
	pthread_mutex_unlock(&f->write_lock);
	ck_assert_uint_eq(eoa_on_disk(), len + 1000 + (UINT64_C(1) << 20));
	ck_assert_uint_ge(file_size(), len + 1000 + (UINT64_C(1) << 20));
	check_pattern(len, 1000);

	/* within the reserve: no superblock write */
	pthread_mutex_lock(&f->write_lock);
	h5_txn_begin(&t, f, false, &pat_ops, &w);
	ck_assert_int_eq(h5_txn_stage(&t, len + 1000), 0);
	ck_assert_uint_eq(w.at, len + 1000);
	ck_assert_uint_eq(t.new_eoa, 0);
	ck_assert_uint_eq(f->eoa, len + 1000 + (UINT64_C(1) << 20));

	/* a durable commit within it keeps it: no superblock write to give
	 * it back, none to take it again (issue 55) */
	h5_txn_begin(&t, f, true, &pat_ops, &w);
	ck_assert_int_eq(h5_txn_stage(&t, len + 2000), 0);
	ck_assert_uint_eq(w.at, len + 2000);
	ck_assert_uint_eq(t.new_eoa, 0);
	ck_assert_uint_eq(f->eoa, len + 1000 + (UINT64_C(1) << 20));
	ck_assert_uint_eq(eoa_on_disk(), len + 1000 + (UINT64_C(1) << 20));

	/* the sync of idle changes: the reserve goes back, the file is cut */
	ck_assert_int_eq(txn_sync_idle(f, true), 0);
	ck_assert_uint_eq(f->eoa, len + 3000);
	pthread_mutex_unlock(&f->write_lock);
	h5_file_close(f);
	ck_assert_uint_eq(eoa_on_disk(), len + 3000);
	ck_assert_uint_eq(file_size(), len + 3000);
	check_pattern(len + 1000, 1000);
	check_pattern(len + 2000, 1000);
}
END_TEST

/* A durable commit reserves nothing: the EOF address is the end exactly. */
START_TEST(txn_durable_exact)
{
	uint64_t len = make_file();
	h5_file *f = open_file(1);
	pat_writer w = { .f = f, .n = 4096 };
	h5_txn t;

	pthread_mutex_lock(&f->write_lock);
	h5_txn_begin(&t, f, true, &pat_ops, &w);
	ck_assert_int_eq(h5_txn_stage(&t, len), 0);
	ck_assert_uint_eq(t.new_eoa, len + 4096);
	ck_assert_uint_eq(f->eoa, len + 4096);
	pthread_mutex_unlock(&f->write_lock);
	h5_file_close(f);
	ck_assert_uint_eq(eoa_on_disk(), len + 4096);
	ck_assert_uint_eq(file_size(), len + 4096);
	check_pattern(len, 4096);
}
END_TEST

/* A writer failing after it wrote: its space stays handed out (never
 * written over by the next writer), the superblock is untouched. */
START_TEST(txn_writer_fails)
{
	uint64_t len = make_file();
	h5_file *f = open_file(1);
	pat_writer w = { .f = f, .n = 500, .fail_after = 1 };
	h5_txn t;

	pthread_mutex_lock(&f->write_lock);
	h5_txn_begin(&t, f, false, &pat_ops, &w);
	ck_assert_int_eq(h5_txn_stage(&t, len), H5_ERR_IO);
	ck_assert_uint_eq(h5_space_end(f), len + 500);
	ck_assert_uint_eq(f->eoa, len);
	w.fail_after = 0;
	h5_txn_begin(&t, f, true, &pat_ops, &w);
	ck_assert_int_eq(h5_txn_stage(&t, len), 0);
	ck_assert_uint_eq(w.at, len + 500);
	pthread_mutex_unlock(&f->write_lock);
	h5_file_close(f);
	ck_assert_uint_eq(eoa_on_disk(), len + 1000);
}
END_TEST


/* ---- the free list (base/freesp.c) ----------------------------------------------- */

/* Released neighbours merge; pending ones stay apart and are never handed
 * out; best fit takes the smallest extent that holds the request (the
 * lowest among equals), from its front. */
START_TEST(freesp_merge_best_fit)
{
	h5_freesp s = { 0 };
	uint64_t a = 0, end = 10000, len = 0;

	ck_assert_int_eq(h5_freesp_add(&s, 1000, 100, 0), 0);
	ck_assert_int_eq(h5_freesp_add(&s, 1100, 50, 0), 0);       /* merges: [1000, 1150) */
	ck_assert_uint_eq(s.n, 1);
	ck_assert_uint_eq(s.released, 150);
	ck_assert_int_eq(h5_freesp_add(&s, 900, 100, 0), 0);       /* and below: [900, 1150) */
	ck_assert_uint_eq(s.n, 1);
	ck_assert_uint_eq(s.v[0].addr, 900);
	ck_assert_uint_eq(s.v[0].len, 250);
	/* overlapping: refused, nothing changed */
	ck_assert_int_eq(h5_freesp_add(&s, 1100, 100, 0), H5_ERR_INVAL);
	ck_assert_int_eq(h5_freesp_add(&s, 850, 60, 0), H5_ERR_INVAL);
	ck_assert_uint_eq(s.released, 250);
	ck_assert_int_eq(h5_freesp_add(&s, 5000, 60, 0), 0);
	ck_assert_int_eq(h5_freesp_add(&s, 6000, 60, 0), 0);
	ck_assert_int_eq(h5_freesp_add(&s, 7000, 40, 7), 0);       /* pending until ticket 7 */
	ck_assert_uint_eq(s.pending, 40);
	ck_assert_uint_eq(h5_freesp_largest(&s), 250);
	/* 40 bytes: 5000's 60 is the smallest that holds them (not the
	 * pending 40, not the 250) */
	ck_assert_int_eq(h5_freesp_take(&s, 40, &a), 1);
	ck_assert_uint_eq(a, 5000);
	ck_assert_uint_eq(s.v[1].addr, 5040);
	ck_assert_uint_eq(s.v[1].len, 20);
	/* 60: 6000's exactly, taken off the list */
	ck_assert_int_eq(h5_freesp_take(&s, 60, &a), 1);
	ck_assert_uint_eq(a, 6000);
	ck_assert_int_eq(h5_freesp_take(&s, 251, &a), 0);
	/* ticket 6 done: 7000 still pending; 7 done: released */
	h5_freesp_release(&s, 6, &end);
	ck_assert_uint_eq(s.pending, 40);
	ck_assert_int_eq(h5_freesp_take(&s, 30, &a), 1);
	ck_assert_uint_eq(a, 900);                                  /* 5040's 20 left cannot: 900's */
	ck_assert_uint_eq(s.v[0].addr, 930);
	h5_freesp_release(&s, 7, &end);
	ck_assert_uint_eq(s.pending, 0);
	ck_assert_int_eq(h5_freesp_take(&s, 40, &a), 1);
	ck_assert_uint_eq(a, 7000);
	/* pop: a map of owned blocks */
	ck_assert_int_eq(h5_freesp_add(&s, 8000, 16, UINT64_MAX), 0);
	ck_assert_int_eq(h5_freesp_pop(&s, 8001, &len), 0);
	ck_assert_int_eq(h5_freesp_pop(&s, 8000, &len), 1);
	ck_assert_uint_eq(len, 16);
	h5_freesp_clear(&s);
	ck_assert_uint_eq(s.n, 0);
}
END_TEST

/* Issue 81: a truncate dropping 200,000 scattered chunks frees as many
 * pending extents before its sync: every one kept (65,536 were, the rest
 * leaked), released neighbours merged as they are added (the list holds
 * no two adjacent released extents), a released extent between two merged
 * into one. */
START_TEST(freesp_many_pending)
{
	h5_freesp s = { 0 };
	uint64_t end = UINT64_MAX / 2;
	const size_t n = 200000;

	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(h5_freesp_add(&s, 4096 + i * 32, 8, 5), 0);
	ck_assert_uint_eq(s.n, n);
	ck_assert_uint_eq(s.pending, n * 8);
	h5_freesp_release(&s, 5, &end);
	ck_assert_uint_eq(s.n, n);
	ck_assert_uint_eq(s.released, n * 8);
	/* the gap between the first two: all three one extent */
	ck_assert_int_eq(h5_freesp_add(&s, 4096 + 8, 24, 0), 0);
	ck_assert_uint_eq(s.n, n - 1);
	ck_assert_uint_eq(s.v[0].addr, 4096);
	ck_assert_uint_eq(s.v[0].len, 40);
	h5_freesp_clear(&s);
}
END_TEST

/* A released extent that ends at the allocation end lowers it, and so do
 * the extents it then reaches; a pending one does not until released. */
START_TEST(freesp_end_shrinks)
{
	h5_freesp s = { 0 };
	uint64_t end = 3000, a;

	ck_assert_int_eq(h5_freesp_add(&s, 2000, 500, 0), 0);
	ck_assert_int_eq(h5_freesp_add(&s, 2500, 500, 3), 0);      /* at the end, pending */
	h5_freesp_release(&s, 2, &end);
	ck_assert_uint_eq(end, 3000);
	ck_assert_uint_eq(s.n, 2);
	h5_freesp_release(&s, 3, &end);                             /* both merge and go */
	ck_assert_uint_eq(end, 2000);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_uint_eq(s.released, 0);
	ck_assert_int_eq(h5_freesp_take(&s, 1, &a), 0);
	h5_freesp_clear(&s);
}
END_TEST

/* Issue 82: a release that has nothing to release skips its pass (tlow,
 * the lowest ticket waited for); an extent added later with a lower
 * ticket, or tickets set anew (tlow zeroed, as space.c's handover does),
 * are released all the same, and merged with their released neighbours. */
START_TEST(freesp_release_skips)
{
	h5_freesp s = { 0 };
	uint64_t end = 100000;

	ck_assert_int_eq(h5_freesp_add(&s, 1000, 100, 0), 0);
	ck_assert_int_eq(h5_freesp_add(&s, 1100, 100, 9), 0);
	h5_freesp_release(&s, 3, &end);                             /* a pass: 9 waits */
	ck_assert_uint_eq(s.tlow, 9);
	ck_assert_uint_eq(s.n, 2);
	h5_freesp_release(&s, 8, &end);                             /* skipped */
	ck_assert_uint_eq(s.pending, 100);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_int_eq(h5_freesp_add(&s, 1300, 100, 4), 0);      /* a lower ticket */
	ck_assert_uint_eq(s.tlow, 4);
	h5_freesp_release(&s, 4, &end);
	ck_assert_uint_eq(s.pending, 100);
	ck_assert_uint_eq(s.released, 200);
	ck_assert_uint_eq(s.tlow, 9);
	/* tickets set anew, below tlow */
	for (size_t i = 0; i < s.n; i++)
		if (s.v[i].ticket)
			s.v[i].ticket = 2;
	s.tlow = 0;
	h5_freesp_release(&s, 2, &end);
	ck_assert_uint_eq(s.pending, 0);
	ck_assert_uint_eq(s.released, 300);
	ck_assert_uint_eq(s.n, 2);                                  /* 1000+200, 1300 */
	ck_assert_uint_eq(s.v[0].len, 200);
	ck_assert_uint_eq(s.tlow, UINT64_MAX);
	h5_freesp_release(&s, 2, &end);                             /* skipped: the same */
	ck_assert_uint_eq(s.n, 2);
	h5_freesp_clear(&s);
}
END_TEST

/* space.c: space a commit frees is handed out again only after an fsync
 * that began after the commit's last write (its ticket), never before;
 * once released it is taken before new space at the end, cached blocks
 * of it dropped; a freed extent at the allocation end lowers it, and a
 * durable sync then lowers the superblock's EOF address and cuts FILE. */
START_TEST(space_reuse_after_sync)
{
	uint64_t len = make_file(), a, b, c, t;
	h5_file *f = open_file(1);
	uint8_t blk[256];

	memset(blk, 0x5a, sizeof(blk));
	pthread_mutex_lock(&f->write_lock);
	ck_assert_int_eq(h5_space_take(&a, f, 256), 0);            /* nothing free: at the end */
	ck_assert_uint_eq(a, len);
	ck_assert_int_eq(h5_space_take(&b, f, 256), 0);
	ck_assert_uint_eq(b, len + 256);
	ck_assert_int_eq(h5_file_write(f, a, blk, sizeof(blk)), 0);
	ck_assert_int_eq(h5_file_write(f, b, blk, sizeof(blk)), 0);
	/* a commit's last write, then its ticket; a freed */
	t = h5_space_ticket(f);
	h5_space_free(f, a, 256, t);
	/* the same commit, or any before the fsync: not reused */
	ck_assert_int_eq(h5_space_take(&c, f, 100), 0);
	ck_assert_uint_eq(c, len + 512);
	ck_assert_uint_eq(h5_ws(f)->reused, 0);
	/* double free refused: never handed out twice */
	h5_space_free(f, a, 256, t);
	ck_assert_uint_eq(h5_ws(f)->freesp.n, 1);
	ck_assert_int_eq(h5_file_sync(f), 0);
	ck_assert_uint_eq(f->sync_done, t);
	ck_assert_int_eq(h5_space_take(&c, f, 100), 0);
	ck_assert_uint_eq(c, a);                                     /* reused, best fit */
	ck_assert_uint_eq(h5_ws(f)->reused, 1);
	ck_assert_int_eq(h5_space_take(&c, f, 156), 0);
	ck_assert_uint_eq(c, a + 100);                               /* the rest of it */
	ck_assert_uint_eq(h5_ws(f)->freesp.n, 0);
	/* freed again: pending until the next fsync completes */
	t = h5_space_ticket(f);
	h5_space_free(f, a, 256, t);
	h5_space_settle(f);
	ck_assert_uint_eq(h5_ws(f)->freesp.pending, 256);
	/* b and what follows it at the end: the allocation end drops over them
	 * (and over a, released with them) */
	h5_space_free(f, b, 256 + 100, 0);
	ck_assert_int_eq(h5_file_sync(f), 0);
	h5_space_settle(f);
	ck_assert_uint_eq(h5_space_end(f), len);
	ck_assert_uint_eq(h5_ws(f)->freesp.n, 0);
	/* a durable sync lowers the EOF address and cuts the file */
	ck_assert_int_eq(txn_sync_idle(f, true), 0);
	pthread_mutex_unlock(&f->write_lock);
	h5_file_close(f);
	ck_assert_uint_eq(file_size(), len);
	ck_assert_uint_eq(eoa_on_disk(), len);
}
END_TEST

/* h5_file_reserve allocates no disk space when one released extent holds
 * what the commit may take, else all of it (past the end). */
START_TEST(punch_and_recover)
{
	uint64_t len = make_file(), a, top, x, blocks;
	static uint8_t blk[6 * 4096];
	uint8_t mk[8], zero[8] = { 0 };
	h5_file *f = open_file(1);
	struct stat st;
	h5_txn t;
	int fd;

	memset(blk, 0xab, sizeof(blk));
	pthread_mutex_lock(&f->write_lock);
	ck_assert_int_eq(h5_space_alloc(&a, f, sizeof(blk)), 0);
	ck_assert_int_eq(h5_space_alloc(&top, f, 100), 0);     /* live above it */
	ck_assert_int_eq(h5_file_write(f, a, blk, sizeof(blk)), 0);
	ck_assert_int_eq(h5_file_write(f, top, blk, 100), 0);
	h5_txn_begin(&t, f, true, NULL, NULL);
	ck_assert_int_eq(h5_txn_stage(&t, len), 0);             /* the EOF address covers both */
	ck_assert_int_eq(stat(path, &st), 0);
	blocks = (uint64_t)st.st_blocks;
	/* freed, and not given back before the fsync after its commit */
	h5_space_free(f, a, sizeof(blk), 0);
	h5_space_settle(f);
	ck_assert_uint_eq(h5_ws(f)->marks.n, 0);
	ck_assert_int_eq(h5_file_sync(f), 0);
	h5_space_settle(f);
	if (h5_ws(f)->punch_off) {     /* (a file system without hole punching) */
		pthread_mutex_unlock(&f->write_lock);
		h5_file_close(f);
		return;
	}
	/* its whole blocks [4096, 24576): a marker in the first, the rest a hole */
	ck_assert_uint_eq(h5_ws(f)->marks.n, 1);
	ck_assert_uint_eq(h5_ws(f)->marks.v[0].addr, 4096);
	ck_assert_uint_eq(h5_ws(f)->marks.v[0].len, 5 * 4096);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_le((uint64_t)st.st_blocks, blocks - 4 * 4096 / 512);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(lseek(fd, 4096, SEEK_HOLE), 8192);
	close(fd);
	pthread_mutex_unlock(&f->write_lock);
	h5_file_close(f);
	/* the next opening finds the extent, not the bytes around it */
	f = open_file(1);
	pthread_mutex_lock(&f->write_lock);
	ck_assert_uint_eq(h5_space_end(f), top + 100);
	ck_assert_uint_eq(h5_ws(f)->freesp.n, 1);
	ck_assert_uint_eq(h5_ws(f)->freesp.v[0].addr, 4096);
	ck_assert_uint_eq(h5_ws(f)->freesp.v[0].len, 5 * 4096);
	/* taken: its marker zeroed before the block is written */
	ck_assert_int_eq(h5_space_take(&x, f, 2 * 4096), 0);
	ck_assert_uint_eq(x, 4096);
	ck_assert_uint_eq(h5_ws(f)->marks.n, 0);
	ck_assert_int_eq(h5_file_read(f, 4096, mk, sizeof(mk)), 0);
	ck_assert_mem_eq(mk, zero, sizeof(mk));
	pthread_mutex_unlock(&f->write_lock);
	h5_file_close(f);
	/* no marker named the rest (no sweep came): not found, never
	 * taken for free space by a hole alone */
	f = open_file(1);
	pthread_mutex_lock(&f->write_lock);
	(void)h5_space_end(f);
	ck_assert_uint_eq(h5_ws(f)->freesp.n, 0);
	pthread_mutex_unlock(&f->write_lock);
	h5_file_close(f);
}
END_TEST

/* h5_file_solid remembers the data SEEK_HOLE found (file_space.c
 * hole_at: a reserve's probe walked FILE's pages again each time); a
 * punch inside it, and a truncate's growth, are holes it must see again. */
START_TEST(solid_sees_new_holes)
{
	uint64_t len = make_file(), a, p;
	static uint8_t blk[8 * 4096];
	h5_file *f = open_file(1);

	memset(blk, 0x5a, sizeof(blk));
	pthread_mutex_lock(&f->write_lock);
	ck_assert_int_eq(h5_space_alloc(&a, f, sizeof(blk)), 0);
	ck_assert_int_eq(h5_file_write(f, a, blk, sizeof(blk)), 0);
	len = a + sizeof(blk);
	ck_assert(h5_file_solid(f, a, sizeof(blk)));
	ck_assert(h5_file_solid(f, a + 4096, 4096));            /* (from what it knows) */
	p = (a + 4095) / 4096 * 4096 + 2 * 4096;
	if (h5_file_punch(f, p, 4096) < 0) {    /* (a file system without hole punching) */
		h5_err_clear();
		pthread_mutex_unlock(&f->write_lock);
		h5_file_close(f);
		return;
	}
	ck_assert(!h5_file_solid(f, a, sizeof(blk)));
	ck_assert(!h5_file_solid(f, p, 4096));
	ck_assert(h5_file_solid(f, p + 4096, 4096));
	ck_assert(h5_file_solid(f, a, p - a));
	/* grown by truncate: a hole past the old end */
	ck_assert_int_eq(h5_file_truncate(f, len + 4 * 4096), 0);
	ck_assert(!h5_file_solid(f, len - 4096, 3 * 4096));
	pthread_mutex_unlock(&f->write_lock);
	h5_file_close(f);
}
END_TEST

START_TEST(reserve_counts_free)
{
	uint64_t len = make_file(), a;
	h5_file *f = open_file(1);

	uint8_t blk[3 * 4096] = { 0 };

	pthread_mutex_lock(&f->write_lock);
	ck_assert_int_eq(h5_space_alloc(&a, f, 3 * 4096), 0);
	/* written: space freed held a structure (an extent never written is
	 * a hole, which a reserve cannot count) */
	ck_assert_int_eq(h5_file_write(f, a, blk, sizeof(blk)), 0);
	len += sizeof(blk);
	h5_space_free(f, a, 4096, 0);           /* released below */
	h5_space_free(f, a + 8192, 100, 0);     /* too small to count */
	ck_assert_int_eq(h5_file_sync(f), 0);
	pthread_mutex_unlock(&f->write_lock);
	ck_assert_int_eq(h5_file_reserve(f, NULL, 4096), 0);
	ck_assert_uint_eq(file_size(), len);                         /* nothing allocated ahead */
	ck_assert_int_eq(h5_file_reserve(f, NULL, 4096 + 1000), 0);
	/* no extent holds it: all past the end, and as much again ahead (the
	 * next reserves need no call: h5_file_allocate) */
	ck_assert_uint_eq(file_size(), len + 2 * (4096 + 1000));
	ck_assert_int_eq(h5_file_reserve(f, NULL, 4096 + 1000), 0);
	ck_assert_uint_eq(file_size(), len + 2 * (4096 + 1000));
	h5_file_close(f);
}
END_TEST

/* FILE opened anew by its writer (a live mount's next generation) while
 * a commit's room is reserved past the allocation end: the new opening
 * goes on where the first left off (not at the EOF address, past the
 * room), takes its free list (released and pending extents, the pending
 * ones waiting for its own next fsync) and the chunk it rewrote last, and
 * its sync gives the room back.
 * Another writer's change (a different EOF address): nothing taken. */
START_TEST(space_handover)
{
	uint64_t len = make_file(), a, c;
	h5_file *f = open_lazy(), *g, *h;
	pat_writer w = { .f = f, .n = 1000 };
	h5_txn t;

	ck_assert_int_eq(h5_file_lock(f), 0);
	pthread_mutex_lock(&f->write_lock);
	h5_txn_begin(&t, f, false, &pat_ops, &w);
	ck_assert_msg(h5_txn_stage(&t, h5_space_end(f)) == 0, "%s", h5_err_msg());
	ck_assert_int_eq(h5_space_alloc(&a, f, 512), 0);       /* 512 freed below, 100 pending */
	h5_space_free(f, a, 256, 0);
	ck_assert_int_eq(h5_file_sync(f), 0);
	h5_space_settle(f);
	h5_space_free(f, a + 256, 100, 0);
	pthread_mutex_unlock(&f->write_lock);
	h5_file_unlock(f);
	ck_assert_uint_eq(eoa_on_disk(), len + 1000 + (UINT64_C(1) << 20));

	h5_ws(f)->last_chunk.dset = 4242;                              /* h5_file_compact's */
	g = open_lazy();
	ck_assert_uint_eq(g->eoa, f->eoa);
	h5_file_space_handover(g, f);
	ck_assert_uint_eq(h5_ws(f)->freesp.n, 0);
	ck_assert_uint_eq(h5_ws(g)->last_chunk.dset, 4242);
	ck_assert_uint_eq(h5_ws(f)->last_chunk.dset, 0);
	ck_assert_uint_eq(g->space_top, h5_ws(g)->alloc_high);        /* handed over: published */
	ck_assert_uint_eq(g->space_top, len + 1512);
	ck_assert_int_eq(h5_file_lock(g), 0);
	pthread_mutex_lock(&g->write_lock);
	ck_assert_uint_eq(h5_space_end(g), len + 1512);
	ck_assert_uint_eq(h5_ws(g)->freesp.released, 256);
	ck_assert_uint_eq(h5_ws(g)->freesp.pending, 100);
	ck_assert_int_eq(h5_space_take(&c, g, 200), 0);
	ck_assert_uint_eq(c, a);
	ck_assert_int_eq(h5_space_take(&c, g, 100), 0);         /* pending: new space */
	ck_assert_uint_eq(c, len + 1512);
	ck_assert_int_eq(txn_sync_idle(g, true), 0);              /* the room given back */
	h5_space_settle(g);                                     /* g's fsync released the 100 */
	ck_assert_uint_eq(h5_ws(g)->freesp.pending, 0);
	ck_assert_uint_eq(h5_ws(g)->freesp.released, 156);
	pthread_mutex_unlock(&g->write_lock);
	h5_file_unlock(g);
	ck_assert_uint_eq(eoa_on_disk(), len + 1612);
	ck_assert_uint_eq(file_size(), len + 1612);

	/* g's EOF address is not f's any more: another writer for f */
	h = open_lazy();
	h5_file_space_handover(h, f);
	pthread_mutex_lock(&h->write_lock);
	ck_assert_uint_eq(h5_space_end(h), len + 1612);
	pthread_mutex_unlock(&h->write_lock);
	h5_file_close(h);
	h5_file_close(g);
	h5_file_close(f);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("space");
	TCase *tc = tcase_create("space");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, space_alloc_fits);
	tcase_add_test(tc, txn_reserve_and_give_back);
	tcase_add_test(tc, txn_durable_exact);
	tcase_add_test(tc, txn_writer_fails);
	tcase_add_test(tc, freesp_merge_best_fit);
	tcase_add_test(tc, freesp_end_shrinks);
	tcase_add_test(tc, freesp_many_pending);
	tcase_add_test(tc, freesp_release_skips);
	tcase_add_test(tc, space_reuse_after_sync);
	tcase_add_test(tc, reserve_counts_free);
	tcase_add_test(tc, punch_and_recover);
	tcase_add_test(tc, solid_sees_new_holes);
	tcase_add_test(tc, space_handover);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
