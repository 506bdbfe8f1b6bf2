/*
 * overwrite_trace.c - overwrites bytes of one dataset through the engine
 * with every write, size change and sync recorded (h5core_test.h
 * io_trace, the byte source's trace wrapper), for test_overwrite_crash.py,
 * which replays the trace in part to build the files a crash could leave.
 *
 *   overwrite_trace FILE DATASET WRITES TRACE|- [FAIL_AT]
 *
 * WRITES: records of a little-endian u64 offset, u64 length and that many
 * bytes, given to h5_overwrite_put; a length of 2^64-1 is a durable commit
 * (fsync, close), 2^64-2 a periodic one (a trailing partial element waits),
 * 2^64-3 the writer closed and opened again (what it replaced freed, as
 * after a dd), 2^64-4 h5_file_compact (unmount's move of the last chunk),
 * 2^64-5 a punched hole (a u64 length follows), 2^64-6 a shrink to
 * `offset` bytes (h5_overwrite_resize: truncate(2) to fewer rows),
 * 2^64-7 `offset` bytes that follow appended as rows (h5_append_write,
 * an appender opened at the first, closed at the end, after the last
 * commit): not committed by their stream, the next overwrite commit
 * takes them (issue 81 item 3).
 * Whatever is left is committed durably at the end. FAIL_AT > 0: the
 * FAIL_AT-th write or sync fails (io_fail_at) and the writes stop there.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5core_test.h"

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

int main(int argc, char **argv)
{
	h5_open_opts oo = { 0 };
	h5_test_hooks hooks = { 0 };
	h5_file *f = NULL;
	h5_overwriter *w = NULL;
	h5_appender *a = NULL;
	uint64_t addr;
	unsigned char *buf = NULL;
	long len, p = 0;
	FILE *fp;
	int rc;

	if (argc != 5 && argc != 6) {
		fprintf(stderr, "usage: overwrite_trace FILE DATASET WRITES TRACE|- [FAIL_AT]\n");
		return 2;
	}
	fp = fopen(argv[3], "rb");
	if (!fp || fseek(fp, 0, SEEK_END) != 0 || (len = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0 ||
	    !(buf = malloc(len ? (size_t)len : 1)) || fread(buf, 1, (size_t)len, fp) != (size_t)len) {
		fprintf(stderr, "overwrite_trace: cannot read %s\n", argv[3]);
		return 2;
	}
	fclose(fp);
	oo.writable = 1;
	oo.nthreads = 2;
	if (strcmp(argv[4], "-") != 0)
		hooks.io_trace = argv[4];
	if (argc == 6)
		hooks.io_fail_at = strtoull(argv[5], NULL, 10);
	rc = h5_file_open_hooked(&f, argv[1], &oo, &hooks);
	if (rc == 0)
		rc = h5_path_lookup(&addr, f, argv[2]);
	if (rc == 0)
		rc = h5_overwrite_open(&w, f, addr);
	while (rc == 0 && p + 16 <= len) {
		uint64_t off = le64(buf + p), n = le64(buf + p + 8);

		p += 16;
		if (n == UINT64_MAX || n == UINT64_MAX - 1) {
			rc = h5_overwrite_commit(w, n == UINT64_MAX, n == UINT64_MAX);
			continue;
		}
		if (n == UINT64_MAX - 2) {
			h5_overwrite_close(w);
			w = NULL;
			rc = h5_overwrite_open(&w, f, addr);
			continue;
		}
		if (n == UINT64_MAX - 3) {
			rc = h5_file_compact(f);
			continue;
		}
		if (n == UINT64_MAX - 4 && p + 8 <= len) {
			rc = h5_overwrite_punch(w, off, le64(buf + p));
			p += 8;
			continue;
		}
		if (n == UINT64_MAX - 5) {
			rc = h5_overwrite_resize(w, off);
			continue;
		}
		if (n == UINT64_MAX - 6) {
			if (off > (uint64_t)(len - p)) {
				fprintf(stderr, "overwrite_trace: truncated record\n");
				rc = -1;
				break;
			}
			if (!a)
				rc = h5_append_open(&a, f, addr);
			if (rc == 0)
				rc = h5_append_write(a, buf + p, (size_t)off);
			p += (long)off;
			continue;
		}
		if (n > (uint64_t)(len - p)) {
			fprintf(stderr, "overwrite_trace: truncated record\n");
			rc = -1;
			break;
		}
		rc = h5_overwrite_put(w, off, buf + p, (size_t)n);
		p += (long)n;
	}
	if (rc == 0)
		rc = h5_overwrite_commit(w, 1, 1);
	if (a) {
		int rc2 = h5_append_close(a, NULL);

		if (rc == 0)
			rc = rc2;
	}
	if (rc < 0)
		fprintf(stderr, "overwrite_trace: %s\n", h5_err_msg());
	h5_overwrite_close(w);
	h5_file_close(f);
	free(buf);
	return rc < 0 ? 1 : 0;
}
