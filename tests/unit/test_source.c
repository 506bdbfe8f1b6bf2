/* test_source.c - byte sources (source.h): local files, memory images, the
 * trace wrapper that records writes and syncs and fails the Nth, and FILE
 * opened through a wrapped source; the stamp that tells a changed FILE
 * (h5_file_changed) and generations of one path read apart. The block
 * cache of remote sources is test_blockcache.c's. */
#include <config.h>
#include "testutil.h"
#include "source.h"
#include "rd.h"
#include "checksum.h"
#include "file.h"
#include "dataset.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include "beneath.h"
#ifdef HAVE_CURL
#include "source_s3.h"  /* s3_opts, and source_http.h: http_opts */
#endif

static char dir[256];

static const char *tmp_path(const char *name)
{
	static char p[512];

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/h5fs_test_source_XXXXXX");
		ck_assert_ptr_nonnull(mkdtemp(dir));
	}
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static void put_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	fclose(f);
}

START_TEST(test_local_read_only)
{
	const char *p = tmp_path("ro.bin");
	uint8_t data[100], got[10];
	h5_source_opts o = { 0 };
	h5_source *s;
	uint64_t size;

	for (int i = 0; i < 100; i++)
		data[i] = (uint8_t)(i * 3);
	put_file(p, data, sizeof(data));
	ck_assert_int_eq(h5_source_open(&s, p, &o), 0);
	ck_assert_str_eq(s->ops->name, "local");
	ck_assert_uint_eq(s->size, 100);
	ck_assert_int_ge(s->ops->fd(s), 0);
	ck_assert_ptr_null(s->ops->write);
	ck_assert_ptr_null(s->ops->truncate);
	ck_assert_int_eq(s->ops->read(s, 90, got, 10), 0);
	ck_assert_mem_eq(got, data + 90, 10);
	ck_assert_int_eq(s->ops->read(s, 95, got, 10), H5_ERR_FORMAT);
	ck_assert_int_eq(s->ops->size(s, &size), 0);
	ck_assert_uint_eq(size, 100);
	h5_source_close(s);
	/* missing file; a directory */
	ck_assert_int_eq(h5_source_open(&s, tmp_path("nope"), &o), H5_ERR_IO);
	ck_assert_int_eq(h5_source_open(&s, dir, &o), H5_ERR_NOTHDF5);
}
END_TEST

/* meta_blocks: small reads come from 8 KiB blocks read whole (a change
 * of the file after a block was read is not seen through it: the proof
 * that the block, not the file, answered), reads across a block's end
 * are joined, large reads and reads past the end go to the file (the
 * same errors as without), and a writable source never keeps blocks. */
START_TEST(test_local_meta_blocks)
{
	const char *p = tmp_path("meta.bin");
	static uint8_t data[20000];
	uint8_t got[6000], one = 0xEE;
	h5_source_opts o = { .meta_blocks = true };
	h5_source *s;
	int fd;

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + i / 251);
	put_file(p, data, sizeof(data));
	ck_assert_int_eq(h5_source_open(&s, p, &o), 0);
	ck_assert(s->has_stat);
	ck_assert_uint_eq(s->size, sizeof(data));
	ck_assert_int_eq(s->ops->read(s, 0, got, 8), 0);         /* block 0 read whole */
	ck_assert_mem_eq(got, data, 8);
	fd = open(p, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, &one, 1, 100), 1);            /* in block 0 */
	ck_assert_int_eq(pwrite(fd, &one, 1, 9000), 1);           /* block 1: not read yet */
	close(fd);
	ck_assert_int_eq(s->ops->read(s, 96, got, 8), 0);
	ck_assert_mem_eq(got, data + 96, 8);                      /* the block's bytes */
	/* across blocks 0 and 1: block 1 read now, with the change */
	ck_assert_int_eq(s->ops->read(s, 8000, got, 1100), 0);
	ck_assert_mem_eq(got, data + 8000, 192);
	ck_assert_uint_eq(got[1000], 0xEE);
	ck_assert_mem_eq(got + 1001, data + 9001, 99);
	/* a large read: from the file */
	ck_assert_int_eq(s->ops->read(s, 0, got, sizeof(got)), 0);
	ck_assert_uint_eq(got[100], 0xEE);
	/* the last block is short: reads inside it, then past the end */
	ck_assert_int_eq(s->ops->read(s, 19990, got, 10), 0);
	ck_assert_mem_eq(got, data + 19990, 10);
	ck_assert_int_eq(s->ops->read(s, 19995, got, 10), H5_ERR_FORMAT);
	ck_assert_int_eq(s->ops->read(s, 30000, got, 10), H5_ERR_FORMAT);
	h5_source_close(s);
	/* writable: no blocks (a write would leave them stale) */
	o.writable = true;
	ck_assert_int_eq(h5_source_open(&s, p, &o), 0);
	ck_assert_int_eq(s->ops->read(s, 0, got, 8), 0);
	one = 0x11;
	ck_assert_int_eq(s->ops->write(s, 4, &one, 1), 0);
	ck_assert_int_eq(s->ops->read(s, 0, got, 8), 0);
	ck_assert_uint_eq(got[4], 0x11);
	h5_source_close(s);
}
END_TEST

/* No descriptor left (EMFILE): H5_ERR_NOFD from a source's open and from
 * an open beneath a folder (h5_open_nolinks says "open it your way"), so
 * that a caller holding idle files may close some and try again (a
 * collection), never taken for a missing file. The limit is this test's
 * process's own (Check forks one per test). */
START_TEST(test_local_nofd)
{
	const char *p = tmp_path("nofd.bin");
	h5_source_opts o = { 0 };
	struct rlimit rl;
	h5_source *s = NULL;
	int dfd, fd, spare;

	put_file(p, "x", 1);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dfd, 0);
	spare = dup(0);
	ck_assert_int_ge(spare, 0);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = (rlim_t)spare + 1;        /* every descriptor up to spare in use */
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	for (int d = 0; d <= spare; d++)
		ck_assert_int_ge(fcntl(d, F_GETFD), 0);
	ck_assert_int_eq(h5_source_open(&s, p, &o), H5_ERR_NOFD);
	ck_assert_ptr_null(s);
	ck_assert_ptr_nonnull(strstr(h5_err_msg(), "Too many open files"));
	ck_assert_int_eq(h5_open_beneath(&fd, dfd, "nofd.bin", O_RDONLY), H5_ERR_NOFD);
	ck_assert_int_eq(h5_open_nolinks(&fd, dfd, "nofd.bin", O_RDONLY), H5_BENEATH_OTHER);
	/* one descriptor given back: both open */
	close(spare);
	ck_assert_int_eq(h5_open_nolinks(&fd, dfd, "nofd.bin", O_RDONLY), 0);
	close(fd);
	ck_assert_int_eq(h5_source_open(&s, p, &o), 0);
	h5_source_close(s);
	close(dfd);
}
END_TEST

START_TEST(test_local_writable)
{
	const char *p = tmp_path("rw.bin");
	h5_source_opts o = { .writable = true };
	h5_source *s, *s2;
	uint8_t got[4];
	uint64_t size;

	put_file(p, "abcd", 4);
	ck_assert_int_eq(h5_source_open(&s, p, &o), 0);
	ck_assert(s->writable);
	/* one writer: the exclusive lock */
	ck_assert_int_eq(h5_source_open(&s2, p, &o), H5_ERR_BUSY);
	ck_assert_int_eq(s->ops->write(s, 6, "xy", 2), 0);
	ck_assert_int_eq(s->ops->size(s, &size), 0);
	ck_assert_uint_eq(size, 8);
	ck_assert_int_eq(s->ops->sync(s), 0);
	ck_assert_int_eq(s->ops->read(s, 4, got, 4), 0);
	ck_assert_mem_eq(got, "\0\0xy", 4);
	ck_assert_int_eq(s->ops->truncate(s, 5), 0);
	ck_assert_int_eq(s->ops->size(s, &size), 0);
	ck_assert_uint_eq(size, 5);
	s->ops->sync_hint(s, 0, 5);
	h5_source_close(s);
	ck_assert_int_eq(h5_source_open(&s, p, &o), 0);   /* the lock went with it */
	h5_source_close(s);
}
END_TEST

START_TEST(test_memory)
{
	static const uint8_t img[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	h5_source *s;
	uint8_t got[3];

	ck_assert_int_eq(h5_source_open_mem(&s, img, sizeof(img)), 0);
	ck_assert_int_eq(s->ops->fd(s), -1);
	ck_assert_ptr_null(s->ops->write);
	ck_assert_int_eq(s->ops->read(s, 5, got, 3), 0);
	ck_assert_mem_eq(got, img + 5, 3);
	ck_assert_int_eq(s->ops->read(s, 6, got, 3), H5_ERR_FORMAT);
	ck_assert_int_eq(s->ops->read(s, UINT64_MAX - 1, got, 3), H5_ERR_FORMAT);
	h5_source_close(s);
}
END_TEST

START_TEST(test_trace)
{
	char p[512], logp[512];
	h5_source_opts o = { .writable = true };
	h5_trace_opts to = { 0 };
	h5_source *s;
	uint8_t got[16], log[128];
	FILE *lf;
	size_t n;

	snprintf(p, sizeof(p), "%s", tmp_path("tr.bin"));
	snprintf(logp, sizeof(logp), "%s", tmp_path("tr.log"));
	put_file(p, "0123456789", 10);
	ck_assert_int_eq(h5_source_open(&s, p, &o), 0);
	to.log_path = logp;
	to.fail_at = 3;   /* the third write or sync */
	ck_assert_int_eq(h5_source_trace(&s, s, &to), 0);
	ck_assert_int_eq(s->ops->fd(s), -1);
	ck_assert_uint_eq(s->size, 10);
	ck_assert_int_eq(s->ops->write(s, 2, "AB", 2), 0);
	ck_assert_int_eq(s->ops->sync(s), 0);
	ck_assert_int_eq(s->ops->write(s, 4, "CD", 2), H5_ERR_IO);   /* fails, not written */
	ck_assert_int_eq(s->ops->write(s, 8, "E", 1), 0);
	ck_assert_uint_eq(h5_source_trace_count(s), 4);
	ck_assert_int_eq(s->ops->read(s, 0, got, 10), 0);
	ck_assert_mem_eq(got, "01AB4567E9", 10);
	h5_source_close(s);
	/* the log: W(2,2,"AB") S W(8,1,"E") */
	lf = fopen(logp, "rb");
	ck_assert_ptr_nonnull(lf);
	n = fread(log, 1, sizeof(log), lf);
	fclose(lf);
	ck_assert_uint_eq(n, 17 + 2 + 1 + 17 + 1);
	ck_assert_int_eq(log[0], 'W');
	ck_assert_uint_eq(h5_le_decode(log + 1, 8), 2);
	ck_assert_uint_eq(h5_le_decode(log + 9, 8), 2);
	ck_assert_mem_eq(log + 17, "AB", 2);
	ck_assert_int_eq(log[19], 'S');
	ck_assert_int_eq(log[20], 'W');
	ck_assert_uint_eq(h5_le_decode(log + 21, 8), 8);
	ck_assert_mem_eq(log + 37, "E", 1);
}
END_TEST

/* A failing sync gives the chosen error and is not logged; a trace over a
 * read-only source stays read-only. */
START_TEST(test_trace_sync_fails)
{
	char p[512], logp[512];
	h5_source_opts o = { .writable = true };
	h5_trace_opts to = { 0 };
	h5_source *s;
	uint8_t log[64];
	FILE *lf;
	size_t n;

	snprintf(p, sizeof(p), "%s", tmp_path("ts.bin"));
	snprintf(logp, sizeof(logp), "%s", tmp_path("ts.log"));
	put_file(p, "0123", 4);
	ck_assert_int_eq(h5_source_open(&s, p, &o), 0);
	to.log_path = logp;
	to.fail_at = 2;
	to.fail_code = H5_ERR_NOSPC;
	ck_assert_int_eq(h5_source_trace(&s, s, &to), 0);
	ck_assert_int_eq(s->ops->write(s, 4, "x", 1), 0);
	ck_assert_int_eq(s->ops->sync(s), H5_ERR_NOSPC);
	ck_assert_int_eq(s->ops->sync(s), 0);
	ck_assert_uint_eq(h5_source_trace_count(s), 3);
	h5_source_close(s);
	lf = fopen(logp, "rb");
	ck_assert_ptr_nonnull(lf);
	n = fread(log, 1, sizeof(log), lf);
	fclose(lf);
	ck_assert_uint_eq(n, 17 + 1 + 1);   /* W(4,1,"x") S: the failed sync is not there */
	ck_assert_int_eq(log[0], 'W');
	ck_assert_int_eq(log[18], 'S');

	o.writable = false;
	ck_assert_int_eq(h5_source_open(&s, p, &o), 0);
	ck_assert_int_eq(h5_source_trace(&s, s, NULL), 0);
	ck_assert(!s->writable);
	ck_assert_ptr_null(s->ops->write);
	ck_assert_ptr_null(s->ops->truncate);
	ck_assert_uint_eq(h5_source_trace_count(s), 0);
	h5_source_close(s);
}
END_TEST

/* FILE through a trace source: reads work, nothing is spliced. */
START_TEST(test_file_through_trace)
{
	char path[600];
	h5_test_hooks hooks = { 0 };
	h5_file *f;
	const char *src = getenv("H5FS_SRCDIR");

	snprintf(path, sizeof(path), "%s/examples/example.h5", src && *src ? src : ".");
	hooks.io_trace = tmp_path("file.log");
	ck_assert_msg(h5_file_open_hooked(&f, path, NULL, &hooks) == 0, "%s", h5_err_msg());
	ck_assert_int_eq(h5_file_fd(f), -1);
	ck_assert_uint_gt(h5_file_root(f), 0);
	/* still a local FILE: related files are found from its directory */
	ck_assert_ptr_nonnull(f->real_path);
	ck_assert_ptr_nonnull(strstr(f->real_path, "/examples/example.h5"));
	h5_file_close(f);
	ck_assert_msg(h5_file_open(&f, path, NULL) == 0, "%s", h5_err_msg());
	ck_assert_int_ge(h5_file_fd(f), 0);
	ck_assert_ptr_nonnull(f->real_path);
	h5_file_close(f);
}
END_TEST

/* ---- change detection and generations (h5fs -o refresh, live/live.c) ------- */

static const char gen_script[] =
	"import sys, h5py, numpy as np\n"
	"d = sys.argv[1]\n"
	"for v in (1, 2):\n"
	"    with h5py.File(d + '/v%d.h5' % v, 'w', libver='latest') as f:\n"
	"        for k in range(v):\n"
	"            f.create_dataset('pad%d' % k, data=np.zeros(16 * (k + 1), 'u1'))\n"
	"        f.create_dataset('a', data=np.full(4096, v, 'u1'))\n"
	"        f.create_dataset('b', data=np.full(4096, 10 + v, 'u1'))\n";

static void copy_file(const char *to, const char *from)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);
	ck_assert_int_eq(system(cmd), 0);
}

/* The byte at offset 0 of the dataset at path in f. */
static int first_byte(h5_file *f, const char *path)
{
	uint64_t addr;
	h5_dataset *d;
	uint8_t b = 0;

	ck_assert_msg(h5_path_lookup(&addr, f, path) == 0, "%s", h5_err_msg());
	ck_assert_msg(h5_dataset_open(&d, f, addr) == 0, "%s", h5_err_msg());
	ck_assert_msg(h5_dataset_read(d, &b, 0, 1) == 0, "%s", h5_err_msg());
	h5_dataset_close(d);
	return b;
}

START_TEST(test_changed_and_generations)
{
	char gdir[] = "/tmp/h5fs_test_live_XXXXXX", v1[300], v2[300], cur[300], tmp[300];
	h5_file *g1, *g2;
	int rc = test_py_run(gdir, gen_script, NULL);
	FILE *fp;

	if (rc == 77 || rc == TEST_PY_NO_PYTHON) {
		test_py_rmdir(gdir);
		return;     /* no h5py: nothing to compare with */
	}
	ck_assert_int_eq(rc, 0);
	snprintf(v1, sizeof(v1), "%s/v1.h5", gdir);
	snprintf(v2, sizeof(v2), "%s/v2.h5", gdir);
	snprintf(cur, sizeof(cur), "%s/cur.h5", gdir);
	snprintf(tmp, sizeof(tmp), "%s/cur.tmp", gdir);
	copy_file(cur, v1);
	ck_assert_msg(h5_file_open(&g1, cur, NULL) == 0, "%s", h5_err_msg());
	ck_assert_int_eq(h5_file_changed(g1, cur), 0);
	ck_assert_int_eq(first_byte(g1, "/a"), 1);     /* gen 1's cache holds v1's metadata */
	/* rewritten in place with the same names at other addresses */
	copy_file(cur, v2);
	ck_assert_int_eq(h5_file_changed(g1, cur) & H5_CHANGED_BYTES, H5_CHANGED_BYTES);
	ck_assert_int_eq(h5_file_changed(g1, cur) & (H5_CHANGED_PATH | H5_CHANGED_GONE), 0);
	/* the next generation reads v2 through caches of its own: nothing
	 * gen 1 decoded (still in its cache) is used for it */
	ck_assert_msg(h5_file_open(&g2, cur, NULL) == 0, "%s", h5_err_msg());
	ck_assert_int_eq(first_byte(g2, "/a"), 2);
	ck_assert_int_eq(first_byte(g2, "/b"), 12);
	ck_assert_int_eq(h5_file_changed(g2, cur), 0);
	h5_file_close(g1);
	/* replaced by rename: the descriptor keeps its bytes, the path moved */
	copy_file(tmp, v1);
	ck_assert_int_eq(rename(tmp, cur), 0);
	ck_assert_int_eq(h5_file_changed(g2, cur), H5_CHANGED_PATH);
	ck_assert_int_eq(first_byte(g2, "/a"), 2);
	/* deleted: the unlink moves ctime, but the bytes are intact */
	ck_assert_int_eq(unlink(cur), 0);
	ck_assert_int_eq(h5_file_changed(g2, cur), H5_CHANGED_GONE);
	ck_assert_int_eq(h5_file_changed(g2, NULL), 0);
	h5_file_close(g2);
	/* grown: size */
	copy_file(cur, v1);
	ck_assert_msg(h5_file_open(&g1, cur, NULL) == 0, "%s", h5_err_msg());
	fp = fopen(cur, "ab");
	ck_assert_ptr_nonnull(fp);
	fputc(0, fp);
	fclose(fp);
	ck_assert_int_eq(h5_file_changed(g1, cur), H5_CHANGED_BYTES);
	h5_file_close(g1);
	ck_assert_int_eq(test_py_rmdir(gdir), 0);
}
END_TEST

/* A SWMR writer leaves the stored end of file behind as it allocates: a
 * superblock v3 whose status flags say "SWMR write access" is read up to
 * the file's size (as libhdf5's SWMR reader does), any other up to its
 * stored end of file. */
START_TEST(test_swmr_eof)
{
	char gdir[] = "/tmp/h5fs_test_live_XXXXXX", v1[300];
	uint8_t sb[48], pad[4096];
	uint64_t size_plain = 0, size_swmr = 0;
	h5_file *f;
	uint32_t ck;
	FILE *fp;
	int rc = test_py_run(gdir, gen_script, NULL);

	if (rc == 77 || rc == TEST_PY_NO_PYTHON) {
		test_py_rmdir(gdir);
		return;
	}
	ck_assert_int_eq(rc, 0);
	snprintf(v1, sizeof(v1), "%s/v1.h5", gdir);
	memset(pad, 0xee, sizeof(pad));
	fp = fopen(v1, "r+b");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fread(sb, 1, sizeof(sb), fp), sizeof(sb));
	ck_assert_int_eq(sb[8], 3);             /* libver latest: superblock v3 */
	ck_assert_int_eq(fseek(fp, 0, SEEK_END), 0);
	ck_assert_uint_eq(fwrite(pad, 1, sizeof(pad), fp), sizeof(pad));   /* past the stored EOF */
	fclose(fp);
	ck_assert_msg(h5_file_open(&f, v1, NULL) == 0, "%s", h5_err_msg());
	ck_assert(!h5_file_swmr(f));
	size_plain = f->eof;
	h5_file_close(f);
	sb[11] = 0x05;                          /* write access | SWMR write access */
	ck = h5_checksum_metadata(sb, 44);
	memcpy(sb + 44, &ck, 4);                /* little-endian hosts (as every test here) */
	fp = fopen(v1, "r+b");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(sb, 1, sizeof(sb), fp), sizeof(sb));
	fclose(fp);
	ck_assert_msg(h5_file_open(&f, v1, NULL) == 0, "%s", h5_err_msg());
	ck_assert(h5_file_swmr(f));
	size_swmr = f->eof;
	ck_assert_int_eq(first_byte(f, "/a"), 1);
	h5_file_close(f);
	ck_assert_uint_eq(size_swmr, size_plain + sizeof(pad));
	ck_assert_int_eq(test_py_rmdir(gdir), 0);
}
END_TEST

#ifdef HAVE_CURL
/* Each remote class owns its options: h5_source_param says whose a key
 * is and refuses malformed values; the class parsers take their keys and
 * pass over the others; the last of a key wins. */
START_TEST(test_source_params)
{
	const char *p[] = { "s3_region=eu-west-1", "retries=7", "s3_path_style", "timeout=12",
			    "s3_endpoint=http://127.0.0.1:9000", "retries=2", NULL };
	http_opts ho;
	s3_opts so;

	ck_assert_int_eq(h5_source_param("retries=3"), 1);
	ck_assert_int_eq(h5_source_param("timeout=0"), 1);
	ck_assert_int_eq(h5_source_param("s3_endpoint=http://x"), 1);
	ck_assert_int_eq(h5_source_param("s3_path_style"), 1);
	ck_assert_int_eq(h5_source_param("allow_other"), 0);
	ck_assert_int_eq(h5_source_param("retriesx=3"), 0);
	ck_assert_int_eq(h5_source_param("retries=3x"), H5_ERR_INVAL);
	ck_assert_int_eq(h5_source_param("retries=-1"), H5_ERR_INVAL);
	ck_assert_int_eq(h5_source_param("retries"), H5_ERR_INVAL);
	ck_assert_int_eq(h5_source_param("timeout=99999999999"), H5_ERR_INVAL);
	ck_assert_int_eq(h5_source_param("s3_region"), H5_ERR_INVAL);
	ck_assert_int_eq(h5_source_param("s3_path_style=1"), H5_ERR_INVAL);
	h5_err_clear();
	ck_assert_int_eq(http_opts_parse(&ho, p), 0);
	ck_assert_uint_eq(ho.retries, 2);
	ck_assert_uint_eq(ho.timeout_s, 12);
	ck_assert_int_eq(s3_opts_parse(&so, p), 0);
	ck_assert_str_eq(so.region, "eu-west-1");
	ck_assert_str_eq(so.endpoint, "http://127.0.0.1:9000");
	ck_assert(so.path_style);
	ck_assert_int_eq(http_opts_parse(&ho, NULL), 0);
	ck_assert_uint_eq(ho.retries, 0);
}
END_TEST

/* The remote classes resolve a related file's name beside the file that
 * names it, percent-encoded; "." and empty parts dropped, ".." refused
 * unless any, an absolute name by its last part. */
START_TEST(test_source_resolve)
{
	const h5_source_class *h = h5_source_class_of("https://h/d/f.h5");
	const h5_source_class *s3 = h5_source_class_of("s3://b/d/f.h5");
	const h5_source_class *loc = h5_source_class_of("/tmp/f.h5");
	char *u;

	ck_assert_str_eq(h->name, "http");
	ck_assert_str_eq(s3->name, "s3");
	ck_assert_str_eq(loc->name, "local");
	ck_assert_ptr_null(loc->resolve);       /* related.c looks for local files */
	ck_assert_int_eq(h->resolve(&u, "sub/./a b.h5", "https://h/d/f.h5", false), 0);
	ck_assert_str_eq(u, "https://h/d/sub/a%20b.h5");
	free(u);
	ck_assert_int_eq(s3->resolve(&u, "/abs/dir/x.h5", "s3://b/d/f.h5", false), 0);
	ck_assert_str_eq(u, "s3://b/d/x.h5");
	free(u);
	ck_assert_int_eq(h->resolve(&u, "../up.h5", "https://h/d/f.h5", false), H5_ERR_PERM);
	h5_err_clear();
	ck_assert_ptr_null(u);
	ck_assert_int_eq(h->resolve(&u, "../up.h5", "https://h/d/f.h5", true), 0);
	ck_assert_str_eq(u, "https://h/d/../up.h5");
	free(u);
	ck_assert_int_eq(h->resolve(&u, "/", "https://h/d/f.h5", false), 1);
	ck_assert_int_eq(h->resolve(&u, "./", "https://h/d/f.h5", false), 1);
	ck_assert_ptr_null(u);
}
END_TEST
#endif

static Suite *source_suite(void)
{
	Suite *s = suite_create("source");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_local_read_only);
	tcase_add_test(tc, test_local_meta_blocks);
	tcase_add_test(tc, test_local_nofd);
	tcase_add_test(tc, test_local_writable);
	tcase_add_test(tc, test_memory);
	tcase_add_test(tc, test_trace);
	tcase_add_test(tc, test_trace_sync_fails);
	tcase_add_test(tc, test_file_through_trace);
	tcase_add_test(tc, test_changed_and_generations);
	tcase_add_test(tc, test_swmr_eof);
#ifdef HAVE_CURL
	tcase_add_test(tc, test_source_params);
	tcase_add_test(tc, test_source_resolve);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return test_run(srunner_create(source_suite()), CK_NOFORK, dir);
}
