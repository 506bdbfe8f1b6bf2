/*
 * append_trace.c - appends rows to one dataset through the engine with
 * every write, size change and sync recorded (h5core_test.h io_trace, the
 * byte source's trace wrapper), for test_append_crash.py, which replays
 * the trace in part to build the files a crash could leave.
 *
 *   append_trace FILE DATASET ROWS TRACE PIECE FLUSH_EVERY
 *
 * ROWS holds whole rows; they go to h5_append_write in pieces of PIECE
 * bytes, with h5_append_flush (a durable commit) after every FLUSH_EVERY
 * pieces (0: only at close). H5FS_APPEND_COMMIT_BYTES set low makes
 * periodic (non-durable) commits happen in between. H5FS_TRACE_EMPTY set:
 * the dataset is emptied first (h5_dataset_empty: O_TRUNC through the
 * mount), for test_truncate_crash.py. H5FS_TRACE_GROW=BYTES: the dataset
 * grown by that many bytes of the fill value first (h5_overwrite_resize:
 * truncate(2) up through the mount), and committed durably.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5core_test.h"

int main(int argc, char **argv)
{
	h5_open_opts oo = { 0 };
	h5_test_hooks hooks = { 0 };
	h5_file *f = NULL;
	h5_appender *a = NULL;
	uint64_t addr;
	unsigned char *rows = NULL;
	long len, piece, every, n = 0;
	size_t partial = 0;
	FILE *fp;
	int rc;

	if (argc != 7) {
		fprintf(stderr, "usage: append_trace FILE DATASET ROWS TRACE PIECE FLUSH_EVERY\n");
		return 2;
	}
	piece = atol(argv[5]);
	every = atol(argv[6]);
	fp = fopen(argv[3], "rb");
	if (!fp || fseek(fp, 0, SEEK_END) != 0 || (len = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0 ||
	    !(rows = malloc(len ? (size_t)len : 1)) || fread(rows, 1, (size_t)len, fp) != (size_t)len || piece <= 0) {
		fprintf(stderr, "append_trace: cannot read %s\n", argv[3]);
		return 2;
	}
	fclose(fp);
	oo.writable = 1;
	oo.nthreads = 1;
	hooks.io_trace = argv[4];
	rc = h5_file_open_hooked(&f, argv[1], &oo, &hooks);
	if (rc == 0)
		rc = h5_path_lookup(&addr, f, argv[2]);
	if (rc == 0 && getenv("H5FS_TRACE_EMPTY"))
		rc = h5_dataset_empty(f, addr);
	if (rc == 0 && getenv("H5FS_TRACE_GROW")) {
		h5_overwriter *w = NULL;
		h5_dataset *d = NULL;

		rc = h5_dataset_open(&d, f, addr);
		if (rc == 0)
			rc = h5_overwrite_open(&w, f, addr);
		if (rc == 0)
			rc = h5_overwrite_resize(w, h5_dataset_size(d) + strtoull(getenv("H5FS_TRACE_GROW"), NULL, 10));
		if (rc == 0)
			rc = h5_overwrite_commit(w, 1, 1);
		h5_overwrite_close(w);
		h5_dataset_close(d);
	}
	if (rc == 0)
		rc = h5_append_open(&a, f, addr);
	for (long off = 0; rc == 0 && off < len; off += piece) {
		rc = h5_append_write(a, rows + off, (size_t)(len - off < piece ? len - off : piece));
		if (rc == 0 && every && ++n % every == 0)
			rc = h5_append_flush(a);
	}
	if (a) {
		int rc2 = h5_append_close(a, &partial);

		if (rc == 0)
			rc = rc2;
	}
	if (rc < 0)
		fprintf(stderr, "append_trace: %s\n", h5_err_msg());
	h5_file_close(f);
	free(rows);
	return rc < 0 ? 1 : 0;
}
