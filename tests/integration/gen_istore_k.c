/*
 * gen_istore_k.c - writes FILE with a superblock whose "Indexed Storage
 * Internal Node K" is 2 (H5Pset_istore_k; h5py cannot set it): one int64
 * dataset /x of one row, dimension 0 unlimited, 1-row chunks, indexed by a
 * v1 B-tree of 4 entries per node. Built by test_append_btree1.py against
 * libhdf5-dev (test-only: h5fs never links libhdf5).
 */
#include <hdf5.h>
#include <stdint.h>

int main(int argc, char **argv)
{
	hsize_t dims[1] = { 1 }, maxd[1] = { H5S_UNLIMITED }, chunk[1] = { 1 };
	int64_t v = 0;
	hid_t fcpl, fid, sp, dcpl, ds;

	if (argc != 2)
		return 2;
	fcpl = H5Pcreate(H5P_FILE_CREATE);
	if (fcpl < 0 || H5Pset_istore_k(fcpl, 2) < 0)
		return 1;
	fid = H5Fcreate(argv[1], H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
	sp = H5Screate_simple(1, dims, maxd);
	dcpl = H5Pcreate(H5P_DATASET_CREATE);
	if (fid < 0 || sp < 0 || dcpl < 0 || H5Pset_chunk(dcpl, 1, chunk) < 0)
		return 1;
	ds = H5Dcreate2(fid, "x", H5T_STD_I64LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	if (ds < 0 || H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) < 0)
		return 1;
	H5Dclose(ds);
	H5Pclose(dcpl);
	H5Sclose(sp);
	H5Pclose(fcpl);
	return H5Fclose(fid) < 0;
}
