/* npy.h - the header of a NumPy .npy stream (format versions 1.0, 2.0 and
 * 3.0, numpy.lib.format): magic, version, header length, and the header
 * dict {'descr': ..., 'fortran_order': ..., 'shape': (...)}. For creating
 * a dataset from `np.save` through the mount (issue 32 item 2, issue 57
 * item 2): what h5py stores (bool, signed and unsigned integers, IEEE
 * floats of 2, 4 and 8 bytes, complex of 8 and 16, bytes S<n>, structured
 * dtypes of those: the engine's h5_numpy_descr_size says; unicode U<n>,
 * which h5py stores as variable-length strings), C or Fortran order. */
#ifndef H5FS_NPY_H
#define H5FS_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NPY_MAX_RANK 32
#define NPY_MIN_BYTES 10        /* magic, version and a v1 header length */

#define NPY_DESCR_MAX 8192      /* a structured dtype's descr taken */

typedef struct npy_header {
	unsigned major, minor;  /* format version */
	size_t data_offset;     /* bytes before the data: magic .. header's '\n' */
	char kind;              /* 'b' bool, 'i', 'u', 'f', 'c'; 'S' bytes, 'V' a
				 * structured dtype: descr says (h5_dset_new's);
				 * 'U' unicode, UCS-4 (itemsize 4 a character) */
	unsigned itemsize;      /* bytes per element */
	bool big_endian;        /* '>' (a one-byte type: false) */
	bool fortran;           /* the data in Fortran order (rank 2 or more) */
	char descr[NPY_DESCR_MAX];      /* kinds 'S' and 'V': the descr's text */
	size_t descr_len;
	unsigned rank;
	uint64_t shape[NPY_MAX_RANK];
	uint64_t nelmts, nbytes;
} npy_header;

/* Parse the header at the start of buf[0..len). Returns 0 (h filled), a
 * positive count of bytes needed in all before it can tell (the stream is
 * shorter: call again with more), or a negative errno with the reason in
 * err: -EINVAL for what is not an NPY header or a broken one,
 * -EOPNOTSUPP for a valid one h5fs does not take (an object, datetime
 * or void dtype, long double: what h5py cannot store either). */
int npy_parse(npy_header *h, const uint8_t *buf, size_t len, char *err, size_t errlen);
/* The data of h, Fortran-ordered (first axis fastest) in in, in C order
 * (last axis fastest) into out (h->nbytes each). */
void npy_to_c_order(uint8_t *out, const uint8_t *in, const npy_header *h);
/* n UCS-4 code points (in the stream's byte order, big: '>'; numpy pads
 * with NULs, those at the end no characters) as UTF-8 into out (4 bytes
 * a point at most): its length, or -1 for a point no UTF-8 holds. */
long npy_utf8_of(char *out, const uint8_t *in, size_t n, bool big);

#endif
