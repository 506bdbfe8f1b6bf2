/*
 * attr_trace.c - attribute changes through the engine with every write,
 * size change and sync recorded (h5core_test.h io_trace), for
 * test_attr_crash.py, which replays the trace in part to build the files a
 * crash could leave. Also: with FAIL_AT > 0 instead of a trace, the
 * FAIL_AT-th write or sync fails (io_fail_at) and the changes stop there.
 *
 *   attr_trace FILE TRACE|- FAIL_AT OP...
 *
 * OP is one argument each: "set\tPATH\tNAME\tVALUE",
 * "typed\tPATH\tNAME\tTYPE\tVALUE", "del\tPATH\tNAME", "mkdir\tPATH\tNAME",
 * "symlink\tPATH\tNAME\tTARGET", "unlink\tPATH\tNAME" (anything),
 * "mv\tPATH\tNAME\tNEWPATH\tNEWNAME", "ln\tPATH\tNAME\tTARGETPATH", or "sync".
 * Prints one line per change: "ok" or the engine's error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h5core_test.h"

#define MAXF 5

static int fields(char *s, char **f)
{
	int n = 0;

	f[n++] = s;
	while (n < MAXF && (s = strchr(s, '\t')) != NULL) {
		*s++ = '\0';
		f[n++] = s;
	}
	return n;
}

int main(int argc, char **argv)
{
	h5_open_opts oo = { 0 };
	h5_test_hooks hooks = { 0 };
	h5_file *f = NULL;
	int rc;

	if (argc < 4) {
		fprintf(stderr, "usage: attr_trace FILE TRACE|- FAIL_AT OP...\n");
		return 2;
	}
	oo.writable = 1;
	oo.nthreads = 1;
	if (strcmp(argv[2], "-") != 0)
		hooks.io_trace = argv[2];
	hooks.io_fail_at = strtoull(argv[3], NULL, 10);
	rc = h5_file_open_hooked(&f, argv[1], &oo, &hooks);
	if (rc < 0) {
		fprintf(stderr, "attr_trace: %s\n", h5_err_msg());
		return 1;
	}
	for (int i = 4; i < argc; i++) {
		char *op = strdup(argv[i]), *fl[MAXF];
		int n = fields(op, fl);
		uint64_t addr = 0, to = 0;

		if (strcmp(fl[0], "sync") == 0)
			rc = h5_file_write_sync(f);
		else if (n < 3 || (rc = h5_path_lookup(&addr, f, fl[1])) < 0)
			rc = n < 3 ? -8 : rc;
		else if (strcmp(fl[0], "set") == 0 && n == 4)
			rc = h5_attr_write(f, addr, fl[2], strlen(fl[2]), fl[3], strlen(fl[3]), 0);
		else if (strcmp(fl[0], "typed") == 0 && n == 5)
			rc = h5_attr_create_typed(f, addr, fl[2], strlen(fl[2]), fl[3], fl[4], strlen(fl[4]));
		else if (strcmp(fl[0], "del") == 0 && n == 3)
			rc = h5_attr_delete(f, addr, fl[2], strlen(fl[2]));
		else if (strcmp(fl[0], "mkdir") == 0 && n == 3)
			rc = h5_group_create(&addr, f, addr, fl[2], strlen(fl[2]));
		else if (strcmp(fl[0], "symlink") == 0 && n == 4)
			rc = h5_link_insert(f, addr, fl[2], strlen(fl[2]), H5_LINK_SOFT, 0, fl[3], 0);
		else if (strcmp(fl[0], "unlink") == 0 && n == 3)
			rc = h5_link_delete(f, addr, fl[2], strlen(fl[2]), 0);
		else if (strcmp(fl[0], "mv") == 0 && n == 5 && (rc = h5_path_lookup(&to, f, fl[3])) == 0)
			rc = h5_link_move(f, addr, fl[2], strlen(fl[2]), to, fl[4], strlen(fl[4]));
		else if (strcmp(fl[0], "ln") == 0 && n == 4 && (rc = h5_path_lookup(&to, f, fl[3])) == 0)
			rc = h5_link_hard(f, addr, fl[2], strlen(fl[2]), to);
		else if (rc < 0)
			;       /* a path of mv or ln not found */
		else
			rc = -8;
		printf("%s\n", rc < 0 ? h5_err_msg() : "ok");
		free(op);
		h5_err_clear();
	}
	h5_file_close(f);
	return 0;
}
