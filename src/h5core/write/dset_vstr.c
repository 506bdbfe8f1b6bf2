/*
 * dset_vstr.c - the elements of a new dataset of variable-length UTF-8
 * strings (h5py's string_dtype, what anndata stores string arrays as;
 * h5core.h h5_dset_vstr_elements): the strings go into new global heap
 * collections (IV.B: at most 65535 objects each; about 1 MiB each, so
 * that a reader's collection cache holds a few), written at the
 * allocation end before the dataset that points at them (invisible until
 * its commit, which makes them durable first: h5_dset_writer_commit's
 * start); each element is the string's length, its collection's address
 * and its index there (IV.A.2.d class 9), an empty string pointing
 * nowhere as libhdf5 writes it.
 */
#include "base.h"
#include "rd.h"
#include "file.h"
#include "gheap.h"
#include "space.h"

#define COLL_BYTES ((size_t)1 << 20)
#define COLL_OBJS 65535

unsigned h5_file_vlen_size(const h5_file *f)
{
	return 8 + f->fmt.sizeof_addr;
}

/* objects [from, to) of the non-empty strings into one collection */
static int one_coll(uint64_t *addr, h5_file *f, const uint8_t *const *objs, const size_t *lens, size_t n)
{
	uint8_t *coll = NULL;
	size_t clen = 0;
	int rc = h5_gheap_encode(&coll, &clen, &f->fmt, objs, lens, n);

	if (rc == 0)
		rc = h5_space_take(addr, f, clen);
	if (rc == 0)
		rc = h5_file_write(f, *addr, coll, clen);
	free(coll);
	return rc;
}

int h5_dset_vstr_elements(uint8_t **out, h5_file *f, const char *const *s, const size_t *l, size_t n)
{
	size_t esz = h5_file_vlen_size(f), first = 0, nobj = 0, bytes = 0;
	const uint8_t **objs = calloc(n ? n : 1, sizeof(*objs));
	size_t *olen = calloc(n ? n : 1, sizeof(*olen));
	uint8_t *d = calloc(n ? n : 1, esz);
	uint64_t caddr = 0;
	int rc = 0;

	*out = NULL;
	if (!objs || !olen || !d) {
		rc = h5_err_set(H5_ERR_NOMEM, "out of memory for strings");
		goto out;
	}
	pthread_mutex_lock(&f->write_lock);
	for (size_t i = 0; rc == 0 && i <= n; i++) {
		/* the collection so far is written when it is full, or at the end */
		if (nobj && (i == n || nobj == COLL_OBJS || bytes + l[i] > COLL_BYTES)) {
			rc = one_coll(&caddr, f, objs, olen, nobj);
			for (size_t k = first, idx = 0; rc == 0 && k < i; k++) {
				uint8_t *e = d + k * esz;

				if (!l[k])
					continue;
				h5_le_encode(e + 4, caddr, f->fmt.sizeof_addr);
				h5_le_encode(e + 4 + f->fmt.sizeof_addr, ++idx, 4);
			}
			nobj = 0;
			bytes = 0;
			first = i;
		}
		if (i == n || rc < 0)
			break;
		if (l[i] > UINT32_MAX) {
			rc = h5_err_set(H5_ERR_LIMIT, "a string of %zu bytes", l[i]);
			break;
		}
		h5_le_encode(d + i * esz, l[i], 4);
		if (l[i]) {
			if (!nobj)
				first = i;
			objs[nobj] = (const uint8_t *)s[i];
			olen[nobj++] = l[i];
			bytes += l[i] + 16;
		}
	}
	pthread_mutex_unlock(&f->write_lock);
	if (rc == 0) {
		*out = d;
		d = NULL;
	}
out:
	free(objs);
	free(olen);
	free(d);
	return rc;
}
