/* coll_detect.c - what a file of a collection is (coll_backend.h): HDF5
 * when the format signature is at 0, 512, 1024, 2048, ... (the superblock
 * search of the spec, II.A "Format Signature": user blocks included),
 * whatever its name. The daemon's folder root and the tools' walk ask
 * this one rule. */
#include "coll_backend.h"

#include <string.h>

static const uint8_t HDF5_SIG[8] = { 0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n' };

bool coll_sig_hdf5(h5_source *src, uint64_t size)
{
	uint8_t buf[8];
	uint64_t off;

	for (off = 0; off + sizeof(buf) <= size; off = off ? off * 2 : 512) {
		if (src->ops->read(src, off, buf, sizeof(buf)) < 0) {
			h5_err_clear();
			return false;   /* shrank meanwhile: what was read decides */
		}
		if (memcmp(buf, HDF5_SIG, sizeof(buf)) == 0)
			return true;
	}
	return false;
}

int coll_detect(bool *hdf5, const struct coll_backend *be, void *b, const char *path, uint64_t size)
{
	h5_source *src = NULL;
	int e;

	*hdf5 = false;
	e = be->open_source(b, &src, path);
	if (e)
		return e;
	*hdf5 = coll_sig_hdf5(src, size);
	h5_source_close(src);
	return 0;
}
