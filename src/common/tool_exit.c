/*
 * tool_exit.c - h5_err codes of opening FILE as the programs' exit
 * statuses (tool_exit.h).
 */
#include <config.h>

#include "tool_exit.h"
#include "h5core.h"

#include <string.h>

tool_exit tool_exit_for_open_error(int rc, tool_exit nomem)
{
	switch (rc) {
	case H5_ERR_IO:
	case H5_ERR_NOTFOUND:   /* a remote FILE the server does not have */
		return TOOL_EXIT_OPEN;
	case H5_ERR_NOTHDF5:
	case H5_ERR_UNSUPPORTED:
		return TOOL_EXIT_NOTHDF5;
	case H5_ERR_NOMEM:
		return nomem;
	default:        /* FORMAT, CHECKSUM, LOOP, LIMIT: corrupt */
		return TOOL_EXIT_CORRUPT;
	}
}

const char *tool_err_cause(const char *file)
{
	const char *msg = h5_err_msg();
	size_t n = strlen(file);

	if (strncmp(msg, file, n) == 0 && msg[n] == ':' && msg[n + 1] == ' ')
		return msg + n + 2;
	return msg;
}
