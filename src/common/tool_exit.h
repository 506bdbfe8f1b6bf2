/*
 * tool_exit.h - exit statuses of h5fs and h5fs-ls (doc/h5fs.1,
 * doc/h5fs-ls.1). The programs' vocabulary, not the engine's: the engine
 * only reports h5_err codes, and this says what each means to a caller of
 * the programs.
 */
#ifndef TOOL_EXIT_H
#define TOOL_EXIT_H

typedef enum tool_exit {
	TOOL_EXIT_OK = 0,
	TOOL_EXIT_RUNTIME = 1,    /* h5fs: out of memory, or the session failed */
	TOOL_EXIT_PARTIAL = 1,    /* h5fs-ls: listed, but some objects could not be read */
	TOOL_EXIT_USAGE = 2,      /* bad arguments or options */
	TOOL_EXIT_OPEN = 3,       /* FILE cannot be opened or read */
	TOOL_EXIT_NOTHDF5 = 4,    /* not HDF5, or HDF5 using features h5fs cannot read */
	TOOL_EXIT_CORRUPT = 5,    /* HDF5, but its superblock or root group is corrupt */
	TOOL_EXIT_MOUNT = 6,      /* h5fs: the mount itself failed */
	TOOL_EXIT_NOPATH = 6      /* h5fs-ls: PATH does not exist */
} tool_exit;

/* The exit status for an error (h5_err) opening FILE; out of memory is
 * `nomem` (each program's status 1). */
tool_exit tool_exit_for_open_error(int rc, tool_exit nomem);
/* The engine's last message about FILE, without FILE's name where it
 * starts with it ("FILE: No such file"): the programs print the name
 * once, before it. */
const char *tool_err_cause(const char *file);

#endif
