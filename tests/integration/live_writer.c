/* live_writer.c - a libhdf5 SWMR writer in C for test_live.py (built there
 * with pkg-config hdf5; skipped without libhdf5-dev).
 *
 *   live_writer FILE create            FILE with an empty dataset /c
 *                                      (uint8 [0,16], max [unlimited,16],
 *                                      chunks [4,16]: an extensible array)
 *   live_writer FILE append N STEP     open FILE for SWMR writing and append
 *                                      STEP rows N times, flushing each time
 *
 * Row r holds "%04d%-4s%08d" % (0, "c", r): the rows test_live.py checks. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROW 16

static int create(const char *path)
{
	hsize_t dims[2] = { 0, ROW }, maxd[2] = { H5S_UNLIMITED, ROW }, chunk[2] = { 4, ROW };
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f, sp, dcpl, d;

	H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
	f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	if (f < 0)
		return 1;
	sp = H5Screate_simple(2, dims, maxd);
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_chunk(dcpl, 2, chunk);
	d = H5Dcreate2(f, "c", H5T_NATIVE_UINT8, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	if (d < 0)
		return 1;
	H5Dclose(d);
	H5Pclose(dcpl);
	H5Sclose(sp);
	H5Pclose(fapl);
	return H5Fclose(f) < 0;
}

static int append(const char *path, int n, int step)
{
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), f, d;
	unsigned char *buf = malloc((size_t)step * ROW + 1);
	hsize_t cur = 0;

	if (!buf)
		return 1;
	H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
	f = H5Fopen(path, H5F_ACC_RDWR, fapl);
	if (f < 0 || H5Fstart_swmr_write(f) < 0)
		return 1;
	d = H5Dopen2(f, "c", H5P_DEFAULT);
	if (d < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		hsize_t dims[2] = { cur + (hsize_t)step, ROW }, start[2] = { cur, 0 }, count[2] = { (hsize_t)step, ROW };
		hid_t fs, ms;
		struct timespec ts = { 0, 50000000 };

		for (int k = 0; k < step; k++) {
			char row[ROW + 1];

			snprintf(row, sizeof(row), "%04d%-4s%08d", 0, "c", (int)(cur + (hsize_t)k));
			memcpy(buf + (size_t)k * ROW, row, ROW);
		}
		if (H5Dset_extent(d, dims) < 0)
			return 1;
		fs = H5Dget_space(d);
		ms = H5Screate_simple(2, count, NULL);
		H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
		if (H5Dwrite(d, H5T_NATIVE_UINT8, ms, fs, H5P_DEFAULT, buf) < 0 || H5Dflush(d) < 0)
			return 1;
		H5Sclose(ms);
		H5Sclose(fs);
		cur += (hsize_t)step;
		nanosleep(&ts, NULL);
	}
	free(buf);
	H5Dclose(d);
	H5Pclose(fapl);
	return H5Fclose(f) < 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[2], "create") == 0)
		return create(argv[1]);
	if (argc == 5 && strcmp(argv[2], "append") == 0)
		return append(argv[1], atoi(argv[3]), atoi(argv[4]));
	fprintf(stderr, "usage: live_writer FILE create | FILE append N STEP\n");
	return 2;
}
