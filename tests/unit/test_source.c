/* test_source.c - byte sources (source.h): local files, memory images, the
 * trace wrapper that records writes and syncs and fails the Nth, and FILE
 * opened through a wrapped source. */
#include "testutil.h"

#include <fcntl.h>
#include <sys/stat.h>

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
	h5_open_opts oo = { 0 };
	h5_file *f;
	const char *src = getenv("H5FS_SRCDIR");

	snprintf(path, sizeof(path), "%s/examples/example.h5", src && *src ? src : ".");
	oo.io_trace = tmp_path("file.log");
	ck_assert_msg(h5_file_open(&f, path, &oo) == 0, "%s", h5_err_msg());
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

static Suite *source_suite(void)
{
	Suite *s = suite_create("source");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_local_read_only);
	tcase_add_test(tc, test_local_writable);
	tcase_add_test(tc, test_memory);
	tcase_add_test(tc, test_trace);
	tcase_add_test(tc, test_trace_sync_fails);
	tcase_add_test(tc, test_file_through_trace);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(source_suite());
	int nf;

	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (dir[0]) {
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
