/* gen_sohm.c - fixtures with shared object header messages (SOHM), which
 * h5py cannot write: built at test time against libhdf5-dev by
 * test_sohm.py (test-only; h5fs never links libhdf5). Deterministic.
 *
 *   gen_sohm OUT.h5 MODE
 *
 * MODE "list":  one index for every message type, kept as a list
 *               (few messages: the list form, "SMLI")
 * MODE "btree": the same, pushed past the list threshold (v2 B-tree form)
 * MODE "multi": several indexes with different type masks and thresholds
 *               (dataspace+datatype; fill+pipeline; attributes), as
 *               libhdf5's own test/tsohm.c sets them
 * Each file holds 24 chunked, deflated datasets sharing datatypes,
 * dataspaces, fill values and filter pipelines, with shared attributes,
 * and a compound datatype committed and used by some. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x)                                                                   \
	do {                                                                           \
		if ((x) < 0) {                                                             \
			fprintf(stderr, "gen_sohm: %s failed at line %d\n", #x, __LINE__);     \
			exit(1);                                                               \
		}                                                                          \
	} while (0)

int main(int argc, char **argv)
{
	hid_t fcpl, fid, space[3], dcpl[3], type[3], aspace;
	const char *mode;
	hsize_t dims[3][2] = { { 40, 6 }, { 17 }, { 9, 9 } };
	hsize_t chunk[3][2] = { { 8, 6 }, { 5 }, { 4, 4 } };
	int rank[3] = { 2, 1, 2 };

	if (argc != 3)
		return 2;
	mode = argv[2];
	CHECK(fcpl = H5Pcreate(H5P_FILE_CREATE));
	if (strcmp(mode, "multi") == 0) {
		CHECK(H5Pset_shared_mesg_nindexes(fcpl, 3));
		CHECK(H5Pset_shared_mesg_index(fcpl, 0, H5O_SHMESG_SDSPACE_FLAG | H5O_SHMESG_DTYPE_FLAG, 16));
		CHECK(H5Pset_shared_mesg_index(fcpl, 1, H5O_SHMESG_FILL_FLAG | H5O_SHMESG_PLINE_FLAG, 8));
		CHECK(H5Pset_shared_mesg_index(fcpl, 2, H5O_SHMESG_ATTR_FLAG, 20));
		CHECK(H5Pset_shared_mesg_phase_change(fcpl, 4, 2));
	} else {
		CHECK(H5Pset_shared_mesg_nindexes(fcpl, 1));
		CHECK(H5Pset_shared_mesg_index(fcpl, 0, H5O_SHMESG_ALL_FLAG, 2));
		if (strcmp(mode, "btree") == 0)
			CHECK(H5Pset_shared_mesg_phase_change(fcpl, 3, 2));
		else
			CHECK(H5Pset_shared_mesg_phase_change(fcpl, 50, 40));
	}
	CHECK(fid = H5Fcreate(argv[1], H5F_ACC_TRUNC, fcpl, H5P_DEFAULT));

	/* a committed compound and two atomic types */
	CHECK(type[0] = H5Tcreate(H5T_COMPOUND, 12));
	CHECK(H5Tinsert(type[0], "a", 0, H5T_STD_I32LE));
	CHECK(H5Tinsert(type[0], "b", 4, H5T_IEEE_F64LE));
	CHECK(H5Tcommit2(fid, "pair", type[0], H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
	CHECK(type[1] = H5Tcopy(H5T_STD_I16BE));
	CHECK(type[2] = H5Tcopy(H5T_IEEE_F32LE));

	for (int k = 0; k < 3; k++) {
		CHECK(space[k] = H5Screate_simple(rank[k], dims[k], NULL));
		CHECK(dcpl[k] = H5Pcreate(H5P_DATASET_CREATE));
		CHECK(H5Pset_chunk(dcpl[k], rank[k], chunk[k]));
		if (k != 1)
			CHECK(H5Pset_shuffle(dcpl[k]));
		CHECK(H5Pset_deflate(dcpl[k], 1 + k));
	}
	{
		int fill = -5;

		CHECK(H5Pset_fill_value(dcpl[1], H5T_NATIVE_INT, &fill));
	}
	CHECK(aspace = H5Screate_simple(1, (hsize_t[]){ 3 }, NULL));

	for (int i = 0; i < 24; i++) {
		int k = i % 3;
		char name[32];
		hid_t ds, attr;
		size_t n = 1, esize = H5Tget_size(type[k]);
		unsigned char *buf;

		for (int d = 0; d < rank[k]; d++)
			n *= dims[k][d];
		buf = malloc(n * esize);
		for (size_t b = 0; b < n * esize; b++)
			buf[b] = (unsigned char)(b * 7 + i * 13 + (b / esize) % 5);
		if (k == 0)        /* keep the doubles finite: zero their high bytes */
			for (size_t e = 0; e < n; e++)
				buf[e * esize + 11] = 0x3f;
		snprintf(name, sizeof(name), "d%02d", i);
		CHECK(ds = H5Dcreate2(fid, name, type[k], space[k], H5P_DEFAULT, dcpl[k], H5P_DEFAULT));
		/* one dataset of each kind stays unwritten: fill values */
		if (i >= 3)
			CHECK(H5Dwrite(ds, type[k], H5S_ALL, H5S_ALL, H5P_DEFAULT, buf));
		/* the same attribute on every dataset (shared), and one of its own */
		{
			int v[3] = { 1, 2, 3 };
			int own = i;

			CHECK(attr = H5Acreate2(ds, "units", H5T_STD_I32LE, aspace, H5P_DEFAULT, H5P_DEFAULT));
			CHECK(H5Awrite(attr, H5T_NATIVE_INT, v));
			CHECK(H5Aclose(attr));
			CHECK(attr = H5Acreate2(ds, "index", H5T_STD_I32LE, H5S_ALL == 0 ? aspace : aspace,
						H5P_DEFAULT, H5P_DEFAULT));
			v[0] = own;
			v[1] = own * 2;
			v[2] = own * 3;
			CHECK(H5Awrite(attr, H5T_NATIVE_INT, v));
			CHECK(H5Aclose(attr));
		}
		CHECK(H5Dclose(ds));
		free(buf);
	}
	for (int k = 0; k < 3; k++) {
		CHECK(H5Sclose(space[k]));
		CHECK(H5Pclose(dcpl[k]));
		CHECK(H5Tclose(type[k]));
	}
	CHECK(H5Sclose(aspace));
	CHECK(H5Pclose(fcpl));
	CHECK(H5Fclose(fid));
	return 0;
}
