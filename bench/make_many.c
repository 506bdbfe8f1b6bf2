/*
 * make_many.c - fixture writer for the scale benchmark (issue 64): an
 * HDF5 file of N one-element datasets in groups of 1,000 (g000000/d000 ...),
 * written with libhdf5. It is a fixture writer and test oracle's helper,
 * never linked into h5fs (which reads HDF5 with its own engine).
 *
 *   cc -O2 -o make_many bench/make_many.c $(pkg-config --cflags --libs hdf5)
 *   ./make_many [-l] [-f] [-g PER] OUT.h5 N
 *
 *   -l      libver latest (compact/dense link storage, v2 object headers),
 *           as h5py.File(libver="latest"); default: h5py's default format
 *           (symbol-table groups, v1 object headers)
 *   -g PER  objects per group (default 1,000)
 *   -f      flat: every dataset in the root group (one big group of N links)
 *
 * Dataset i holds the int32 value i (contiguous layout, allocated at
 * creation as h5py does), so a reader can check any object's bytes.
 * The output is deterministic for given arguments (no time stamps).
 */
#include <hdf5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(void)
{
	fprintf(stderr, "usage: make_many [-l] [-f] [-g PER] OUT.h5 N\n");
	exit(2);
}

int main(int argc, char **argv)
{
	hid_t fapl, fcpl, gcpl, dcpl, space, file, grp = -1;
	unsigned long long n, per = 1000, i;
	int latest = 0, flat = 0, opt, rc = 1;
	int32_t v;
	char name[64];

	while ((opt = getopt(argc, argv, "lfg:")) != -1) {
		switch (opt) {
		case 'l': latest = 1; break;
		case 'f': flat = 1; break;
		case 'g': per = strtoull(optarg, NULL, 10); break;
		default: usage();
		}
	}
	if (argc - optind != 2 || per == 0)
		usage();
	n = strtoull(argv[optind + 1], NULL, 10);

	fapl = H5Pcreate(H5P_FILE_ACCESS);
	if (latest)
		H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST);
	fcpl = H5Pcreate(H5P_FILE_CREATE);
	file = H5Fcreate(argv[optind], H5F_ACC_TRUNC, fcpl, fapl);
	if (file < 0)
		return 1;
	gcpl = H5Pcreate(H5P_GROUP_CREATE);
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	/* no creation/modification times: deterministic bytes */
	H5Pset_obj_track_times(gcpl, 0);
	H5Pset_obj_track_times(dcpl, 0);
	H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
	{
		hsize_t one = 1;

		space = H5Screate_simple(1, &one, NULL);
	}
	for (i = 0; i < n; i++) {
		hid_t d, where;

		if (flat) {
			where = file;
			snprintf(name, sizeof(name), "d%07llu", i);
		} else {
			if (i % per == 0) {
				if (grp >= 0)
					H5Gclose(grp);
				snprintf(name, sizeof(name), "g%06llu", i / per);
				grp = H5Gcreate2(file, name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
				if (grp < 0)
					goto out;
			}
			where = grp;
			snprintf(name, sizeof(name), "d%03llu", i % per);
		}
		d = H5Dcreate2(where, name, H5T_STD_I32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
		if (d < 0)
			goto out;
		v = (int32_t)i;
		if (H5Dwrite(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0)
			goto out;
		H5Dclose(d);
	}
	rc = 0;
out:
	if (grp >= 0)
		H5Gclose(grp);
	H5Sclose(space);
	H5Pclose(dcpl);
	H5Pclose(gcpl);
	H5Pclose(fcpl);
	H5Pclose(fapl);
	if (H5Fclose(file) < 0)
		rc = 1;
	return rc;
}
