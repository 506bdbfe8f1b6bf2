/* test_ordered.c - the ordered copy of a write in place across a 4 KiB
 * page (io/ordered.c, issue 71 item 5) on a file built here byte by byte
 * (a v2 superblock, a root object header, zeros to 8000 bytes): a write in
 * place within a page is one write; one across it leaves its bytes in
 * place and FILE as long as before; a record left at FILE's end (a power
 * cut between the copy and the write in place) is written in place again
 * by a writable open and cut off - where FILE holds its old or new bytes
 * page by page (torn, or not begun), not where a page holds neither (a
 * later change), nor when the record is torn itself; a read-only open
 * leaves it; the daemon's open (lazy lock) gives FILE's lock back after;
 * space.c's page placement keeps a block of at most a page within one;
 * the record room every reserve counts (h5_ordered_room) is none until a
 * block across a page is seen, then a page's write's, then the largest
 * written. */
#include "testutil.h"
#include "ordered.h"
#include "space.h"
#include "base.h"
#include "rd.h"
#include "checksum.h"
#include "file.h"
#include "ohdr.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define SB_SIZE 48
#define ROOT SB_SIZE
#define NIL_BODY 100
#define LEN 8000                /* zeros after the root header, referenced by nothing */

static char tmpdir[64];
static char path[128];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/h5fs-test-ordered-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	test_tmp_remove(tmpdir);
}

static uint64_t make_file(void)
{
	tbuf b = { 0 };
	uint64_t len;

	tb_sb2_start(&b, ROOT);
	tb_str(&b, "OHDR");
	tb_u8(&b, 2);
	tb_u8(&b, 0x00);            /* chunk 0 size in 1 byte */
	tb_u8(&b, 4 + NIL_BODY);
	tb_u8(&b, H5_MSG_NIL);
	tb_u16(&b, NIL_BODY);
	tb_u8(&b, 0);
	tb_zero(&b, NIL_BODY);
	tb_checksum(&b, ROOT);
	tb_zero(&b, LEN - b.len);
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

/* Writable, FILE's lock taken only between h5_file_lock and
 * h5_file_unlock (as the daemon opens it). */
static h5_file *open_lazy(void)
{
	return test_open(path, (h5_open_opts){ .writable = 1, .lazy_lock = 1 });
}

static uint64_t file_size(void)
{
	return test_file_size(path);
}

static void pread_at(uint64_t off, void *buf, size_t n)
{
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, buf, n, (off_t)off), (ssize_t)n);
	close(fd);
}

static void pwrite_at(uint64_t off, const void *buf, size_t n)
{
	int fd = open(path, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, buf, n, (off_t)off), (ssize_t)n);
	close(fd);
}

/* A record at the page boundary past FILE's end, as the writer leaves it
 * between its copy and the write in place: n bytes of value v for target
 * (old: the bytes there before, value o). */
static uint64_t put_record(uint64_t len, uint64_t target, size_t n, uint8_t v, uint8_t o)
{
	uint64_t at = (len + 4095) / 4096 * 4096;
	uint8_t *rec = malloc(2 * n + H5_ORDERED_TRAILER);

	ck_assert_ptr_nonnull(rec);
	memset(rec, v, n);
	memset(rec + n, o, n);
	h5_ordered_encode(rec, target, n);
	pwrite_at(at, rec, 2 * n + H5_ORDERED_TRAILER);
	free(rec);
	return at;
}

START_TEST(inplace_across_page)
{
	uint64_t len = make_file();
	uint8_t b[200], got[200];
	h5_file *f = open_file(1);

	memset(b, 0x5a, sizeof(b));
	/* what every reserve counts for a record: none while no block
	 * across a page was seen (the root's header lies within one) */
	ck_assert_uint_eq(h5_ordered_room(f), 0);
	h5_ordered_note(f, 4000, 96);          /* within one */
	ck_assert_uint_eq(h5_ordered_room(f), 0);
	/* a header chunk across one: the record of a page's write (2 *
	 * 4096 + 48 bytes: three pages) */
	h5_ordered_note(f, 4000, 97);
	ck_assert_uint_eq(h5_ordered_room(f), 3 * 4096);
	pthread_mutex_lock(&f->write_lock);
	/* within a page: one write */
	ck_assert_int_eq(h5_file_write_inplace(f, 100, b, 50), 0);
	/* across one: copy, fsync, write, fsync, cut */
	ck_assert_int_eq(h5_file_write_inplace(f, 4000, b, sizeof(b)), 0);
	ck_assert_uint_eq(h5_ordered_room(f), 3 * 4096);
	pthread_mutex_unlock(&f->write_lock);
	ck_assert_uint_eq(file_size(), len);
	h5_file_close(f);
	pread_at(4000, got, sizeof(got));
	ck_assert_mem_eq(got, b, sizeof(b));
	pread_at(100, got, 50);
	ck_assert_mem_eq(got, b, 50);
}
END_TEST

/* A write in place larger than a page (a libhdf5 chunk): the reserves
 * after it count its record (2n + 48 bytes in whole pages). */
START_TEST(room_grows)
{
	uint64_t len = make_file();
	static uint8_t b[5000], got[5000];
	h5_file *f = open_file(1);

	memset(b, 0x6b, sizeof(b));
	pthread_mutex_lock(&f->write_lock);
	ck_assert_int_eq(h5_file_write_inplace(f, 2000, b, sizeof(b)), 0);
	ck_assert_uint_eq(h5_ordered_room(f), (2 * 5000 + 48 + 4095) / 4096 * 4096);
	pthread_mutex_unlock(&f->write_lock);
	ck_assert_uint_eq(file_size(), len);
	h5_file_close(f);
	pread_at(2000, got, sizeof(got));
	ck_assert_mem_eq(got, b, sizeof(b));
}
END_TEST

START_TEST(recover_torn_write)
{
	uint64_t len = make_file(), at;
	uint8_t got[120], want[120], junk[106];
	h5_file *f;

	/* the write in place torn: its first page new (3990..4096), the
	 * rest old (zeros) */
	at = put_record(len, 3990, sizeof(want), 0xa5, 0);
	memset(junk, 0xa5, sizeof(junk));
	pwrite_at(3990, junk, sizeof(junk));
	/* a read-only open leaves it */
	f = open_file(0);
	h5_file_close(f);
	ck_assert_uint_gt(file_size(), at);
	f = open_file(1);
	h5_file_close(f);
	memset(want, 0xa5, sizeof(want));
	pread_at(3990, got, sizeof(got));
	ck_assert_mem_eq(got, want, sizeof(want));
	ck_assert_uint_eq(file_size(), at);
	/* not begun at all (old bytes everywhere): written too */
	at = put_record(len, 5000, sizeof(want), 0x3c, 0);
	f = open_file(1);
	h5_file_close(f);
	memset(want, 0x3c, sizeof(want));
	pread_at(5000, got, sizeof(got));
	ck_assert_mem_eq(got, want, sizeof(want));
	ck_assert_uint_eq(file_size(), at);
}
END_TEST

/* The daemon's open (lazy lock): the record written in place under
 * FILE's lock, which is given back after (another writer takes it). */
START_TEST(recover_lazy_lock)
{
	uint64_t len = make_file(), at;
	uint8_t got[120], want[120];
	h5_file *f, *g;

	at = put_record(len, 3990, sizeof(want), 0x77, 0);
	f = open_lazy();
	memset(want, 0x77, sizeof(want));
	pread_at(3990, got, sizeof(got));
	ck_assert_mem_eq(got, want, sizeof(want));
	ck_assert_uint_eq(file_size(), at);
	ck_assert(!f->locked);
	g = open_lazy();
	ck_assert_int_eq(h5_file_lock(g), 0);
	h5_file_unlock(g);
	h5_file_close(g);
	h5_file_close(f);
}
END_TEST

START_TEST(recover_skips)
{
	uint64_t len = make_file(), at;
	uint8_t got[120], want[120], zero[120] = { 0 };
	h5_file *f;

	/* a record torn itself (its write in place never began): cut off */
	at = put_record(len, 3990, sizeof(got), 0xa5, 0);
	pwrite_at(at + 10, "x", 1);
	f = open_file(1);
	h5_file_close(f);
	pread_at(3990, got, sizeof(got));
	ck_assert_mem_eq(got, zero, sizeof(zero));
	ck_assert_uint_eq(file_size(), at);
	/* a record older than a later change of its bytes (a page holding
	 * neither its old nor its new bytes): the later change stays */
	at = put_record(len, 3990, sizeof(got), 0xa5, 0);
	memset(want, 0x11, sizeof(want));
	pwrite_at(4096, want, 14);
	f = open_file(1);
	h5_file_close(f);
	pread_at(3990, got, sizeof(got));
	ck_assert_mem_eq(got, zero, 106);
	ck_assert_mem_eq(got + 106, want, 14);
	ck_assert_uint_eq(file_size(), at);
}
END_TEST

START_TEST(take_within_page)
{
	uint64_t len = make_file(), a, b;
	h5_file *f = open_file(1);

	pthread_mutex_lock(&f->write_lock);
	/* the end at LEN: 4095 bytes from there would span 8192 */
	ck_assert_uint_eq(h5_space_end(f), len);
	ck_assert_int_eq(h5_space_alloc_page(&a, f, 4095), 0);
	ck_assert_uint_eq(a, 8192);
	/* 300 from 12287 would span 12288: within a page past it */
	ck_assert_int_eq(h5_space_take_page(&b, f, 300), 0);
	ck_assert(!h5_space_spans_page(b, 300));
	ck_assert_uint_ge(b, a + 4095);
	/* larger than a page: where it falls */
	a = h5_space_end(f);
	ck_assert_int_eq(h5_space_take_page(&b, f, 5000), 0);
	ck_assert_uint_eq(b, a);
	pthread_mutex_unlock(&f->write_lock);
	(void)len;
	h5_file_close(f);
}
END_TEST

static Suite *make_suite(void)
{
	Suite *s = suite_create("ordered");
	TCase *tc = tcase_create("ordered");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, inplace_across_page);
	tcase_add_test(tc, room_grows);
	tcase_add_test(tc, recover_torn_write);
	tcase_add_test(tc, recover_lazy_lock);
	tcase_add_test(tc, recover_skips);
	tcase_add_test(tc, take_within_page);
	suite_add_tcase(s, tc);
	return s;
}

H5_TEST_MAIN(make_suite)
