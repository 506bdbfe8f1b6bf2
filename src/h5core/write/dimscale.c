/*
 * dimscale.c - a new dataset attached to dimension scales as libhdf5's
 * H5DSattach_scale does (HDF5 Dimension Scale Specification 1.0; what
 * netCDF-4 and h5py's dims write; h5core.h h5_ds_attach_new):
 *
 *   the scale's REFERENCE_LIST: a 1-D compound {dataset: object
 *   reference at 0, dimension: int32 at 8}, 16 bytes an entry (H5DS's
 *   ds_list_t), one more entry per dataset dimension attached to it;
 *   the dataset's DIMENSION_LIST: a 1-D variable-length sequence of
 *   object references, one element per dimension, each sequence the
 *   scales of that dimension (one here) in the global heap.
 *
 * And (h5_ds_detach) a removed dataset taken off the scales' lists.
 *
 * Each attribute is one commit (attr_write.c); the scales' lists first,
 * the dataset's list last: a crash between leaves scales naming a
 * dataset that names none of them, which readers (netCDF-C, h5netcdf,
 * H5DS) take as not attached, never a dataset naming a scale that does
 * not name it back.
 */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "attr.h"
#include "dtype.h"
#include "attr_write_int.h"
#include "gheap.h"

#define RL_ENTRY 16             /* sizeof(ds_list_t): hobj_ref_t, int, padding */

/* class and version 1 in the first byte, the class bits, the size */
static void head(uint8_t *p, unsigned cls, uint32_t bits, uint32_t size)
{
	p[0] = (uint8_t)(0x10 | cls);
	h5_le_encode(p + 1, bits, 3);
	h5_le_encode(p + 4, size, 4);
}

/* An object reference (class 7, type 0): 8 bytes. */
static size_t ref_type(uint8_t *p)
{
	head(p, H5T_REFERENCE, 0, 8);
	return 8;
}

/* REFERENCE_LIST's compound, version 1 members (name padded to 8,
 * offset, dimensionality 0 and its reserved and size fields, type). */
static size_t reflist_type(uint8_t *p)
{
	size_t n = 8;

	head(p, H5T_COMPOUND, 2, RL_ENTRY);
	memset(p + n, 0, 40);
	memcpy(p + n, "dataset", 7);
	n += 8 + 4 + 28;
	n += ref_type(p + n);
	memset(p + n, 0, 48);
	memcpy(p + n, "dimension", 9);
	h5_le_encode(p + n + 16, 8, 4);
	n += 16 + 4 + 28;
	/* int32, little-endian, signed: offset 0, precision 32 */
	head(p + n, H5T_INTEGER, 8, 4);
	h5_le_encode(p + n + 8, 0, 2);
	h5_le_encode(p + n + 10, 32, 2);
	return n + 12;
}

/* DIMENSION_LIST's type: a sequence (class 9, type 0) of references. */
static size_t dimlist_type(uint8_t *p, const h5_fmt *fmt)
{
	head(p, H5T_VLEN, 0, (uint32_t)(8 + fmt->sizeof_addr));
	return 8 + ref_type(p + 8);
}

/* The scale's REFERENCE_LIST with (var, axis) appended: its entries as
 * they are (an existing list of another layout is refused). */
static int reflist_add(h5_file *f, uint64_t scale, uint64_t var, unsigned axis)
{
	h5_attr_msg a = { 0 };
	uint8_t t[160], *v = NULL;
	size_t tl = reflist_type(t), n = 0;
	int rc = h5_attr_find(&a, f, scale, "REFERENCE_LIST", 14);

	if (rc == H5_ERR_NOTFOUND) {
		h5_err_clear();
		rc = 0;
	} else if (rc == 0) {
		const h5_dtype *d = a.dtype;

		if (d->cls != H5T_COMPOUND || d->size != RL_ENTRY || d->nmembers != 2 ||
		    d->members[0].type->cls != H5T_REFERENCE || d->members[0].offset != 0 ||
		    d->members[1].type->cls != H5T_INTEGER || d->members[1].offset != 8 ||
		    a.data_size % RL_ENTRY)
			rc = h5_err_set(H5_ERR_UNSUPPORTED, "scale 0x%llx: a REFERENCE_LIST of another layout",
					(unsigned long long)scale);
		n = a.data_size / RL_ENTRY;
	}
	if (rc == 0 && !(v = calloc(n + 1, RL_ENTRY)))
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	if (rc == 0) {
		if (n)
			memcpy(v, a.data, n * RL_ENTRY);
		h5_le_encode(v + n * RL_ENTRY, var, 8);
		h5_le_encode(v + n * RL_ENTRY + 8, axis, 4);
		rc = h5_attr_create_raw_locked(f, scale, "REFERENCE_LIST", 14, t, tl, n + 1, v, (n + 1) * RL_ENTRY);
	}
	free(v);
	h5_attr_msg_clear(&a);
	return rc;
}

int h5_ds_attach_new(h5_file *f, uint64_t var, const uint64_t *scales, unsigned rank)
{
	const h5_fmt *fmt = &f->fmt;
	size_t esz = 8 + fmt->sizeof_addr, tl;
	const char *objs[H5_MAX_RANK];
	size_t lens[H5_MAX_RANK];
	uint8_t refs[H5_MAX_RANK][8], t[64], *el = NULL;
	h5_attr_msg a = { 0 };
	int rc;

	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	if (rank == 0 || rank > H5_MAX_RANK || fmt->sizeof_addr != 8)
		return h5_err_set(H5_ERR_UNSUPPORTED, "dimension scales of a dataset of rank %u (addresses of %u bytes)",
				  rank, fmt->sizeof_addr);
	pthread_mutex_lock(&f->write_lock);
	rc = h5_attr_find(&a, f, var, "DIMENSION_LIST", 14);
	h5_attr_msg_clear(&a);
	if (rc == 0)
		rc = h5_err_set(H5_ERR_INVAL, "dataset 0x%llx has dimension scales already", (unsigned long long)var);
	else if (rc == H5_ERR_NOTFOUND)
		rc = 0;
	h5_err_clear();
	for (unsigned i = 0; rc == 0 && i < rank; i++)
		rc = reflist_add(f, scales[i], var, i);
	/* the sequences: one reference each, in one new heap collection
	 * (attr_build.c's strings' writer: a sequence's length is its
	 * count of references, 1, not its bytes) */
	for (unsigned i = 0; rc == 0 && i < rank; i++) {
		h5_le_encode(refs[i], scales[i], 8);
		objs[i] = (const char *)refs[i];
		lens[i] = 8;
	}
	if (rc == 0)
		rc = h5_attr_vstr_data(&el, &tl, f, objs, lens, rank, true);
	for (unsigned i = 0; rc == 0 && i < rank; i++)
		h5_le_encode(el + i * esz, 1, 4);
	if (rc == 0) {
		tl = dimlist_type(t, fmt);
		rc = h5_attr_create_raw_locked(f, var, "DIMENSION_LIST", 14, t, tl, rank, el, rank * esz);
	}
	pthread_mutex_unlock(&f->write_lock);
	free(el);
	return rc;
}

/* The scale's REFERENCE_LIST without its entries naming var (none left:
 * the attribute goes, as H5DSdetach_scale leaves it). */
static int reflist_drop(h5_file *f, uint64_t scale, uint64_t var, bool *emptied)
{
	h5_attr_msg a = { 0 };
	uint8_t t[160], *v = NULL;
	size_t tl = reflist_type(t), n = 0, k = 0;
	int rc = h5_attr_find(&a, f, scale, "REFERENCE_LIST", 14);

	if (rc == 0 && (a.dtype->cls != H5T_COMPOUND || a.dtype->size != RL_ENTRY || a.data_size % RL_ENTRY))
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "scale 0x%llx: a REFERENCE_LIST of another layout",
				(unsigned long long)scale);
	if (rc == 0) {
		n = a.data_size / RL_ENTRY;
		if (!(v = malloc(a.data_size + 1)))
			rc = h5_err_set(H5_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (h5_le_decode(a.data + i * RL_ENTRY, 8) != var)
			memcpy(v + RL_ENTRY * k++, a.data + i * RL_ENTRY, RL_ENTRY);
	*emptied = rc == 0 && k == 0;
	if (rc == 0 && k == 0)
		rc = h5_attr_delete_locked(f, scale, "REFERENCE_LIST", 14);
	else if (rc == 0 && k < n)
		rc = h5_attr_create_raw_locked(f, scale, "REFERENCE_LIST", 14, t, tl, k, v, k * RL_ENTRY);
	free(v);
	h5_attr_msg_clear(&a);
	return rc;
}

int h5_ds_detach(h5_file *f, uint64_t var, uint64_t *emptied, unsigned *nemptied)
{
	size_t esz = 8 + f->fmt.sizeof_addr;
	h5_attr_msg a = { 0 };
	int rc;

	if (nemptied)
		*nemptied = 0;
	if (!h5_file_writable(f))
		return h5_err_set(H5_ERR_ROFS, "the file is open read-only");
	pthread_mutex_lock(&f->write_lock);
	rc = h5_attr_find(&a, f, var, "DIMENSION_LIST", 14);
	if (rc == 0 && (a.dtype->cls != H5T_VLEN || a.data_size % esz))
		rc = h5_err_set(H5_ERR_UNSUPPORTED, "dataset 0x%llx: a DIMENSION_LIST of another layout",
				(unsigned long long)var);
	/* every scale each dimension names (a sequence of references) */
	for (size_t off = 0; rc == 0 && off < a.data_size; off += esz) {
		uint64_t cnt = h5_le_decode(a.data + off, 4), coll = h5_le_decode(a.data + off + 4, f->fmt.sizeof_addr);
		uint32_t idx = (uint32_t)h5_le_decode(a.data + off + 4 + f->fmt.sizeof_addr, 4);
		uint8_t *refs = NULL;
		size_t rl = 0;

		if (!cnt)
			continue;
		rc = h5_gheap_read(&refs, &rl, f, coll, idx);
		for (size_t r = 0; rc == 0 && r + 8 <= rl && r < 8 * cnt; r += 8) {
			uint64_t sc = h5_le_decode(refs + r, 8);
			bool gone = false;

			rc = reflist_drop(f, sc, var, &gone);
			if (rc == 0 && gone && emptied && *nemptied < H5_MAX_RANK)
				emptied[(*nemptied)++] = sc;
		}
		free(refs);
	}
	pthread_mutex_unlock(&f->write_lock);
	h5_attr_msg_clear(&a);
	return rc;
}
