/* dset_enc.h - the messages of a new dataset's object header as h5py
 * writes them (dset_enc.c). Each encodes into out (cap bytes) and sets
 * *len; H5_ERR_RANGE when cap is too small, H5_ERR_INVAL for what h5py
 * would not write. */
#ifndef H5_DSET_ENC_H
#define H5_DSET_ENC_H

#include "base.h"

/* Dataspace version 1, rank dims, maximum dimensions maxdims (NULL: the
 * dims; H5_UNLIMITED for unlimited). */
int h5_enc_dspace(uint8_t *out, size_t *len, size_t cap, const h5_fmt *fmt, unsigned rank, const uint64_t *dims,
		  const uint64_t *maxdims);
/* Datatype version 1 of a NumPy numeric kind: 'b' (bool: h5py's enum),
 * 'i', 'u' (1, 2, 4, 8 bytes), 'f' (IEEE 2, 4, 8), 'c' (complex 8, 16:
 * h5py's compound {r, i}). */
int h5_enc_dtype(uint8_t *out, size_t *len, size_t cap, char kind, unsigned size, bool big_endian);
/* (dtype_descr.c) The datatype h5py writes for the NumPy dtype descr (as
 * np.save's header gives it: a typestr, or a structured dtype's list):
 * *itemsize its element's bytes; H5_ERR_UNSUPPORTED for a dtype h5py
 * cannot store, H5_ERR_LIMIT for a message over cap. */
int h5_enc_dtype_descr(uint8_t *out, size_t *len, size_t cap, size_t *itemsize, const char *descr, size_t dlen);
/* Fill value version 2: the library default (no value set), allocation
 * late (contiguous) or incremental (chunked), as h5py leaves it. */
int h5_enc_fill_default(uint8_t *out, size_t *len, size_t cap, bool chunked);

typedef struct h5_enc_filters {
	bool shuffle;           /* with elem_size */
	int deflate;            /* level 0-9, or -1: none */
	bool fletcher32;
	uint32_t elem_size;
	/* one more filter after deflate's place (0: none), with its name and
	 * client values as its HDF5 plugin's set_local leaves them */
	uint16_t codec;
	const char *codec_name;
	const uint32_t *codec_cd;
	unsigned codec_ncd;
} h5_enc_filters;
/* Filter pipeline version 1 in h5py's order: shuffle, deflate (or codec),
 * fletcher32. */
int h5_enc_pline(uint8_t *out, size_t *len, size_t cap, const h5_enc_filters *fl);
/* Layout version 3: contiguous (chunk NULL: addr, size) or chunked with a
 * version 1 B-tree at addr (H5_ADDR_UNDEF: none yet). */
int h5_enc_layout(uint8_t *out, size_t *len, size_t cap, const h5_fmt *fmt, unsigned rank, const uint64_t *chunk,
		  uint32_t elem_size, uint64_t addr, uint64_t size);
/* The chunk shape h5py guesses for dims (chunks=True, or maxshape set). */
void h5_enc_guess_chunk(uint64_t *chunk, unsigned rank, const uint64_t *dims, size_t elem_size);

#endif
