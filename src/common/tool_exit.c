/*
 * tool_exit.c - h5_err codes of opening FILE as the programs' exit
 * statuses (tool_exit.h).
 */
#include <config.h>

#include "tool_exit.h"
#include "h5core.h"

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
