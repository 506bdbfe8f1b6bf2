/*
 * h5errno.c - the one place an engine error (h5_err) becomes an errno,
 * for the daemon's replies and the collection backends alike (h5errno.h).
 */
#include "h5errno.h"
#include "h5core.h"

#include <errno.h>

int h5fs_errno(int h5err)
{
	switch (h5err) {
	case H5_OK: return 0;
	case H5_ERR_NOMEM: return ENOMEM;
	case H5_ERR_NOTFOUND: return ENOENT;
	case H5_ERR_RANGE: return ERANGE;
	case H5_ERR_INVAL: return EINVAL;
	/* an operation refused (an append that cannot grow, a file outside
	 * the tree): "Operation not permitted", as the engine words it */
	case H5_ERR_PERM: return EPERM;
	case H5_ERR_ROFS: return EROFS;
	case H5_ERR_BUSY: return EBUSY;
	case H5_ERR_NOSPC: return ENOSPC;
	case H5_ERR_NOFD: return EMFILE;
	/* Corruption, checksum failures, cycles, limits and features the engine
	 * cannot decode (e.g. a filter not compiled in) all mean "these bytes
	 * cannot be produced": EIO, with the reason in the log. */
	case H5_ERR_IO:
	case H5_ERR_FORMAT:
	case H5_ERR_CHECKSUM:
	case H5_ERR_UNSUPPORTED:
	case H5_ERR_NOTHDF5:
	case H5_ERR_LOOP:
	case H5_ERR_LIMIT:
	default:
		return EIO;
	}
}
