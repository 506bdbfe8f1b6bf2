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
 * "mv\tPATH\tNAME\tNEWPATH\tNEWNAME", "ln\tPATH\tNAME\tTARGETPATH",
 * "dset\tPATH\tNAME\tN" (a new int32 dataset of N elements 0..N-1),
 * "bytes\tPATH\tNAME" (a new empty growable uint8 dataset),
 * "strs\tPATH\tN\tPREFIX" (N new string attributes PREFIX000.. valued
 * "PREFIX value K", one batch: h5_attr_write_batch),
 * "batch\tPATH\tITEMS" (one batch of ';'-separated items, "+NAME=VALUE" a
 * new string attribute, "=NAME=VALUE" a new value of an existing one),
 * "reserve\tN" (N bytes of disk space allocated ahead, h5_file_reserve),
 * "stop\tN" and "gzstop\tN" (an np.save stream of N int32 stopping
 * halfway: nothing made, its space given back), "rm\tPATH\tNAME" (a
 * dataset's last link removed and its storage freed, as rm through the
 * mount does when no descriptor has it open), "compact" (what the
 * unmount does last: h5_file_compact moves a chunk, continuation chunks
 * and groups' link storage down into freed space and cuts FILE), or
 * "sync".
 * Prints one line per change: "ok" or the engine's error.
 */
#include <stdbool.h>
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

/* "dset": a contiguous 1-D little-endian int32 dataset of n elements
 * 0..n-1, its data written first in pieces (np.save through the mount,
 * write/dset_create.c h5_dset_writer), then made and linked; "gzdset":
 * the same chunked as h5py guesses and deflated (-o compress=gzip). */
/* "stop": an np.save stream of n int32 (contiguous, or chunked and
 * deflated) that stops halfway: nothing made, its space given back
 * (h5_dset_writer_abandon) */
static int stopped(h5_file *f, uint64_t n, bool gz)
{
	h5_dset_new d = { .rank = 1, .dims = { n }, .kind = 'i', .size = 4, .chunked = gz, .deflate = gz ? 5 : 0 };
	h5_dset_writer *w = NULL;
	int rc = h5_dset_writer_open(&w, f, &d);

	for (uint64_t i = 0; rc == 0 && i < n / 2; i += 1000) {
		int32_t v[1000] = { 0 };

		rc = h5_dset_writer_put(w, i * 4, v, sizeof(v));
	}
	h5_dset_writer_abandon(w);
	h5_dset_writer_free(w);
	return rc;
}

static int dset(h5_file *f, uint64_t group, const char *name, uint64_t n, bool gz)
{
	h5_dset_new d = { .rank = 1, .dims = { n }, .kind = 'i', .size = 4, .chunked = gz, .deflate = gz ? 5 : 0 };
	h5_dset_writer *w = NULL;
	uint64_t addr;
	int rc = h5_dset_writer_open(&w, f, &d);

	for (uint64_t i = 0; rc == 0 && i < n; i += 1000) {
		int32_t v[1000];
		uint64_t k = n - i < 1000 ? n - i : 1000;

		for (uint64_t j = 0; j < k; j++)
			v[j] = (int32_t)(i + j);
		rc = h5_dset_writer_put(w, i * 4, v, k * 4);
	}
	if (rc == 0)
		rc = h5_dset_writer_commit(&addr, w, group, name, strlen(name));
	h5_dset_writer_free(w);
	return rc;
}

/* "bytes": an empty growable uint8 dataset (create(2) through the mount) */
static int bytes_dset(h5_file *f, uint64_t group, const char *name)
{
	h5_dset_new d = { .rank = 1, .kind = 'u', .size = 1, .chunked = 1, .growable = 1, .chunk = { 65536 } };
	uint64_t addr;

	return h5_dataset_create(&addr, f, group, name, strlen(name), &d, UINT64_MAX);
}

/* "newfiles": n new files of size bytes each (byte k of file i: i*7+k),
 * as the daemon's write-behind of new files makes them (behind/lbatch.c):
 * each dataset made loose, its bytes appended and committed (close), then
 * all linked in one batch (h5_link_insert_batch) */
static int newfiles(h5_file *f, uint64_t group, const char *prefix, unsigned n, size_t size)
{
	h5_dset_new d = { .rank = 1, .kind = 'u', .size = 1, .chunked = 1, .growable = 1, .chunk = { 65536 } };
	char **names = calloc(n ? n : 1, sizeof(*names));
	uint64_t *addrs = calloc(n ? n : 1, sizeof(*addrs));
	uint8_t *buf = malloc(size ? size : 1);
	size_t done = 0;
	int rc = names && addrs && buf ? 0 : -1;

	for (unsigned i = 0; rc == 0 && i < n; i++) {
		h5_appender *a = NULL;

		names[i] = malloc(64);
		if (!names[i]) {
			rc = -1;
			break;
		}
		snprintf(names[i], 64, "%s%03u", prefix, i);
		for (size_t k = 0; k < size; k++)
			buf[k] = (uint8_t)(i * 7 + k);
		rc = h5_dataset_create_loose(&addrs[i], f, &d);
		if (rc == 0 && size)
			rc = h5_append_open(&a, f, addrs[i]);
		if (rc == 0 && size)
			rc = h5_append_write(a, buf, size);
		if (a) {
			int rc2 = h5_append_close(a, NULL);

			rc = rc ? rc : rc2;
		}
	}
	if (rc == 0)
		rc = h5_link_insert_batch(&done, f, group, names, addrs, n);
	for (unsigned i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	free(addrs);
	free(buf);
	return rc;
}

/* "rmdirs": empty groups (names split at commas) removed in one batch,
 * as the daemon's rmdir batch does (member/lbatch.c, h5_link_remove_batch) */
static int rmdirs(h5_file *f, uint64_t group, char *list)
{
	char *names[64], *save = NULL;
	size_t n = 0, done = 0;

	for (char *t = strtok_r(list, ",", &save); t && n < 64; t = strtok_r(NULL, ",", &save))
		names[n++] = t;
	return h5_link_remove_batch(&done, f, group, names, n);
}

/* "lchange": renames, hard links and unlinks of one group in one batch,
 * as the daemon's (behind/mbatch.c, h5_link_change_batch): items split
 * at commas, NAME=PATH (NAME afterwards a hard link to the object at
 * PATH, looked up first) or NAME=- (removed; a dataset's last name
 * too, its storage freed after) */
static int lchange(h5_file *f, uint64_t group, char *list)
{
	char *names[64], *save = NULL;
	uint64_t addrs[64];
	size_t n = 0;
	int rc = 0;

	for (char *t = strtok_r(list, ",", &save); t && n < 64 && rc == 0; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');

		if (!eq)
			return -8;
		*eq = 0;
		names[n] = t;
		addrs[n] = UINT64_MAX;
		if (strcmp(eq + 1, "-") != 0)
			rc = h5_path_lookup(&addrs[n], f, eq + 1);
		n++;
	}
	if (rc == 0) {
		h5_link_gone gone[64];
		size_t ng = 0;

		/* (a dataset's last name taken: its storage freed at once, as
		 * the daemon does when no descriptor reads it) */
		rc = h5_link_change_batch(f, group, names, addrs, n, gone, &ng);
		for (size_t i = 0; i < ng; i++)
			h5_gone_release(gone[i].gone);
	}
	return rc;
}

/* "rm": a dataset's last link removed, what it stored freed at once (no
 * descriptor reads it: member/link.c gone_keep) */
static int rm_dataset(h5_file *f, uint64_t group, const char *name)
{
	h5_gone *gone = NULL;
	int rc = h5_link_delete_gone(f, group, name, strlen(name), &gone);

	if (gone)
		h5_gone_release(gone);
	return rc;
}

/* "strs": one batch of n new string attributes (the daemon's write-behind
 * of setfattr, behind/xbatch.c) */
static int strs(h5_file *f, uint64_t addr, unsigned n, const char *prefix)
{
	h5_attr_str *it = calloc(n ? n : 1, sizeof(*it));
	char (*names)[64] = calloc(n ? n : 1, 64), (*vals)[80] = calloc(n ? n : 1, 80);
	size_t done = 0;
	int rc = it && names && vals ? 0 : -1;

	for (unsigned i = 0; rc == 0 && i < n; i++) {
		snprintf(names[i], 64, "%s%03u", prefix, i);
		snprintf(vals[i], 80, "%s value %u", prefix, i);
		it[i] = (h5_attr_str){ names[i], strlen(names[i]), vals[i], strlen(vals[i]), 0, 0, H5_FSTR_NONE };
	}
	if (rc == 0)
		rc = h5_attr_write_batch(&done, f, addr, it, n);
	free(it);
	free(names);
	free(vals);
	return rc;
}

/* "batch": the items of spec (modified in place) as one batch */
static int batch(h5_file *f, uint64_t addr, char *spec)
{
	h5_attr_str it[64];
	size_t n = 0, done = 0;

	for (char *p = strtok(spec, ";"); p && n < 64; p = strtok(NULL, ";")) {
		char *eq = strchr(p + 1, '=');

		if ((p[0] != '+' && p[0] != '=') || !eq)
			return -8;
		*eq = 0;
		it[n++] = (h5_attr_str){ p + 1, strlen(p + 1), eq + 1, strlen(eq + 1), p[0] == '=', 0, H5_FSTR_NONE };
	}
	return h5_attr_write_batch(&done, f, addr, it, n);
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
		else if (strcmp(fl[0], "compact") == 0)
			rc = h5_file_compact(f);
		else if (strcmp(fl[0], "reserve") == 0 && n == 2)
			rc = h5_file_reserve(f, NULL, strtoull(fl[1], NULL, 10));
		else if ((strcmp(fl[0], "stop") == 0 || strcmp(fl[0], "gzstop") == 0) && n == 2)
			rc = stopped(f, strtoull(fl[1], NULL, 10), fl[0][0] == 'g');
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
		else if (strcmp(fl[0], "rm") == 0 && n == 3)
			rc = rm_dataset(f, addr, fl[2]);
		else if (strcmp(fl[0], "rmdir") == 0 && n == 3)
			rc = h5_link_delete(f, addr, fl[2], strlen(fl[2]), 1);
		else if (strcmp(fl[0], "mv") == 0 && n == 5 && (rc = h5_path_lookup(&to, f, fl[3])) == 0)
			rc = h5_link_move(f, addr, fl[2], strlen(fl[2]), to, fl[4], strlen(fl[4]));
		else if (strcmp(fl[0], "ln") == 0 && n == 4 && (rc = h5_path_lookup(&to, f, fl[3])) == 0)
			rc = h5_link_hard(f, addr, fl[2], strlen(fl[2]), to);
		else if ((strcmp(fl[0], "dset") == 0 || strcmp(fl[0], "gzdset") == 0) && n == 4)
			rc = dset(f, addr, fl[2], strtoull(fl[3], NULL, 10), fl[0][0] == 'g');
		else if (strcmp(fl[0], "mtime") == 0 && n == 3)
			rc = h5_obj_mtime_set(f, addr, strtoll(fl[2], NULL, 10));
		else if (strcmp(fl[0], "bytes") == 0 && n == 3)
			rc = bytes_dset(f, addr, fl[2]);
		else if (strcmp(fl[0], "lchange") == 0 && n == 3)
			rc = lchange(f, addr, fl[2]);
		else if (strcmp(fl[0], "rmdirs") == 0 && n == 3)
			rc = rmdirs(f, addr, fl[2]);
		else if (strcmp(fl[0], "newfiles") == 0 && n == 5)
			rc = newfiles(f, addr, fl[2], (unsigned)strtoul(fl[3], NULL, 10), strtoull(fl[4], NULL, 10));
		else if (strcmp(fl[0], "strs") == 0 && n == 4)
			rc = strs(f, addr, (unsigned)strtoul(fl[2], NULL, 10), fl[3]);
		else if (strcmp(fl[0], "batch") == 0 && n == 3)
			rc = batch(f, addr, fl[2]);
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
