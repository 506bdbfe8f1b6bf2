/* err.c - per-thread error messages (libgit2-style: code + kept message). */
#include "base.h"

#include <stdarg.h>
#include <stdio.h>

#define H5_ERR_MSG_MAX 512

static _Thread_local char err_msg[H5_ERR_MSG_MAX];
/* the code the message is about: a caller that got only an errno back
 * (a FUSE root op) can still tell a file's bytes from a failed read */
static _Thread_local int err_code;

int h5_err_set(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
	va_end(ap);
	err_code = code;
	return code;
}

int h5_err_wrap(int code, const char *fmt, ...)
{
	char prefix[H5_ERR_MSG_MAX];
	char old[H5_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err_msg, sizeof(old));
	snprintf(err_msg, sizeof(err_msg), "%s%s", prefix, old[0] ? old : h5_err_name(code));
	err_code = code;
	return code;
}

const char *h5_err_msg(void)
{
	return err_msg[0] ? err_msg : "no error";
}

int h5_err_code(void)
{
	return err_msg[0] ? err_code : 0;
}

void h5_err_clear(void)
{
	err_msg[0] = '\0';
	err_code = 0;
}

const char *h5_err_name(int code)
{
	switch (code) {
	case H5_OK: return "success";
	case H5_ERR_NOMEM: return "out of memory";
	case H5_ERR_IO: return "I/O error";
	case H5_ERR_FORMAT: return "corrupt or malformed structure";
	case H5_ERR_CHECKSUM: return "checksum mismatch";
	case H5_ERR_UNSUPPORTED: return "unsupported feature";
	case H5_ERR_NOTFOUND: return "not found";
	case H5_ERR_RANGE: return "buffer too small";
	case H5_ERR_INVAL: return "invalid argument";
	case H5_ERR_NOTHDF5: return "not an HDF5 file";
	case H5_ERR_PERM: return "operation not permitted";
	case H5_ERR_ROFS: return "read-only file";
	case H5_ERR_LOOP: return "cycle in file structure";
	case H5_ERR_LIMIT: return "limit exceeded";
	case H5_ERR_BUSY: return "file is locked";
	case H5_ERR_NOSPC: return "no space left on device";
	case H5_ERR_NOFD: return "too many open files";
	default: return "unknown error";
	}
}
