/*
 * replay.c - run the fuzz walk (fuzz_walk.c) over files, without libFuzzer.
 *
 *   replay [-v] [-m MAX_READ_MIB] [-t THREADS] [FILE|DIR]...
 *
 * Every FILE, and every regular file under each DIR (recursively, in name
 * order), is read into memory and walked exactly as the fuzzer does, then
 * (without -t) walked again opened from disk, as the daemon opens it, so
 * the extents of plain bytes in FILE are checked too. With no
 * arguments it replays $H5FS_SRCDIR/tests/fuzz/regress and the corpus
 * ($H5FS_CORPUS, else $H5FS_SRCDIR/../shared/corpus/hdf5-testfiles), skipping
 * either when absent: that is what `make check` runs, under the normal and
 * the sanitizer build. A crash, a sanitizer report or a violated invariant
 * ends the process; an input the engine rejects with an error passes.
 *
 * -t N opens each file once (with N decompression threads) and runs N walks
 * of it at the same time, as concurrent FUSE requests do: build with
 * -fsanitize=thread to check the engine's locking.
 */
#include "fuzz_walk.h"
#include "file.h"

#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define REPLAY_MAX_FILE ((size_t)1 << 30)

struct replay {
	h5fuzz_opts opts;
	unsigned nwalkers;      /* -t: concurrent walks of one open file */
	unsigned long nfiles, nopened, nfailed;
	double longest;
	char longest_name[4096];
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int read_whole(uint8_t **out, size_t *len, const char *path)
{
	FILE *fp = fopen(path, "rb");
	struct stat st;
	uint8_t *buf;

	*out = NULL;
	if (!fp)
		return -1;
	if (fstat(fileno(fp), &st) < 0 || (uint64_t)st.st_size > REPLAY_MAX_FILE) {
		fclose(fp);
		return -1;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf || fread(buf, 1, (size_t)st.st_size, fp) != (size_t)st.st_size) {
		free(buf);
		fclose(fp);
		return -1;
	}
	fclose(fp);
	*out = buf;
	*len = (size_t)st.st_size;
	return 0;
}

struct walker {
	pthread_t tid;
	int started;
	h5_file *f;
	uint64_t seed;
	const h5fuzz_opts *opts;
	h5fuzz_stats st;
};

static void *walker_main(void *arg)
{
	struct walker *wk = arg;

	h5fuzz_walk_file(&wk->st, wk->f, wk->seed, wk->opts);
	return NULL;
}

/* -t: one open file, nwalkers walks at once; stats are summed. */
static void walk_concurrent(h5fuzz_stats *st, const uint8_t *buf, size_t len, const struct replay *r)
{
	struct walker wk[64];
	h5_open_opts oo;
	h5_file *f = NULL;
	unsigned i, n = r->nwalkers > 64 ? 64 : r->nwalkers;

	memset(st, 0, sizeof(*st));
	memset(&oo, 0, sizeof(oo));
	oo.cache_bytes = r->opts.cache_bytes;
	oo.nthreads = n;
	st->open_rc = h5_file_open_mem(&f, buf, len, &oo);
	if (st->open_rc < 0)
		return;
	for (i = 0; i < n; i++) {
		memset(&wk[i], 0, sizeof(wk[i]));
		wk[i].f = f;
		wk[i].seed = h5fuzz_seed(buf, len) + i;
		wk[i].opts = &r->opts;
		wk[i].started = pthread_create(&wk[i].tid, NULL, walker_main, &wk[i]) == 0;
		if (!wk[i].started)
			walker_main(&wk[i]);
	}
	for (i = 0; i < n; i++) {
		if (wk[i].started)
			pthread_join(wk[i].tid, NULL);
		st->objects += wk[i].st.objects;
		st->groups += wk[i].st.groups;
		st->datasets += wk[i].st.datasets;
		st->links += wk[i].st.links;
		st->attrs += wk[i].st.attrs;
		st->bytes_read += wk[i].st.bytes_read;
		st->extents += wk[i].st.extents;
		st->pinned += wk[i].st.pinned;
		st->planned += wk[i].st.planned;
		st->errors += wk[i].st.errors;
		st->lookup_mismatch += wk[i].st.lookup_mismatch;
		st->lookup_notfound += wk[i].st.lookup_notfound;
	}
	h5_file_close(f);
}

/* The walk again over FILE opened from disk, as the daemon opens it: only
 * then has the engine a descriptor, so h5_dataset_extents can answer and
 * its extents are checked against the bytes read. */
static void walk_disk(h5fuzz_stats *st, const char *path, const uint8_t *buf, size_t len, const struct replay *r)
{
	h5_open_opts oo;
	h5_file *f = NULL;

	memset(st, 0, sizeof(*st));
	memset(&oo, 0, sizeof(oo));
	oo.cache_bytes = r->opts.cache_bytes;
	oo.nthreads = r->opts.nthreads ? r->opts.nthreads : 1;
	st->open_rc = h5_file_open(&f, path, &oo);
	if (st->open_rc < 0)
		return;
	h5fuzz_walk_file(st, f, h5fuzz_seed(buf, len), &r->opts);
	h5_file_close(f);
}

static void replay_file(struct replay *r, const char *path)
{
	h5fuzz_stats st, disk;
	uint8_t *buf;
	size_t len;
	double t;

	if (read_whole(&buf, &len, path) < 0) {
		fprintf(stderr, "replay: %s: cannot read: %s\n", path, strerror(errno));
		r->nfailed++;
		return;
	}
	r->nfiles++;
	if (r->opts.verbose)
		fprintf(stderr, "%s\n", path);
	t = now();
	if (r->nwalkers > 1)
		walk_concurrent(&st, buf, len, r);
	else
		h5fuzz_walk(&st, buf, len, &r->opts);
	memset(&disk, 0, sizeof(disk));
	if (st.open_rc == 0 && r->nwalkers <= 1)
		walk_disk(&disk, path, buf, len, r);
	t = now() - t;
	free(buf);
	if (st.open_rc == 0)
		r->nopened++;
	if (t > r->longest) {
		r->longest = t;
		snprintf(r->longest_name, sizeof(r->longest_name), "%s", path);
	}
	printf("%-60s %s objs=%llu grp=%llu ds=%llu links=%llu xattrs=%llu read=%llu ext=%llu pin=%llu plan=%llu err=%llu%s%s "
	       "disk: ext=%llu pin=%llu %.3fs\n", path,
	       st.open_rc ? h5_err_name(st.open_rc) : "opened", (unsigned long long)st.objects,
	       (unsigned long long)st.groups, (unsigned long long)st.datasets, (unsigned long long)st.links,
	       (unsigned long long)st.attrs, (unsigned long long)st.bytes_read, (unsigned long long)st.extents,
	       (unsigned long long)st.pinned, (unsigned long long)st.planned, (unsigned long long)st.errors,
	       st.lookup_mismatch ? " LOOKUP-MISMATCH" : "", st.lookup_notfound ? " LOOKUP-NOTFOUND" : "",
	       (unsigned long long)disk.extents, (unsigned long long)disk.pinned, t);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_path(struct replay *r, const char *path, unsigned depth)
{
	struct stat st;
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0, i;
	DIR *dir;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		r->nfailed++;
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		replay_file(r, path);
		return;
	}
	if (depth > 32 || !(dir = opendir(path)))
		return;
	while ((de = readdir(dir))) {
		char *full;

		if (de->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*names));

			if (!nn)
				break;
			names = nn;
		}
		full = malloc(strlen(path) + strlen(de->d_name) + 2);
		if (!full)
			break;
		sprintf(full, "%s/%s", path, de->d_name);
		names[n++] = full;
	}
	closedir(dir);
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	for (i = 0; i < n; i++) {
		replay_path(r, names[i], depth + 1);
		free(names[i]);
	}
	free(names);
}

static void replay_default(struct replay *r)
{
	const char *src = getenv("H5FS_SRCDIR");
	const char *corpus = getenv("H5FS_CORPUS");
	char path[4096];
	struct stat st;

	if (!src || !*src)
		src = ".";
	snprintf(path, sizeof(path), "%s/tests/fuzz/regress", src);
	if (stat(path, &st) == 0)
		replay_path(r, path, 0);
	if (corpus && *corpus)
		snprintf(path, sizeof(path), "%s", corpus);
	else
		snprintf(path, sizeof(path), "%s/../shared/corpus/hdf5-testfiles", src);
	if (stat(path, &st) == 0)
		replay_path(r, path, 0);
	else
		printf("replay: no corpus at %s (skipped)\n", path);
}

int main(int argc, char **argv)
{
	struct replay r;
	int i = 1;

	memset(&r, 0, sizeof(r));
	h5fuzz_default_opts(&r.opts);
	/* outside the fuzzer time matters less: read more of each dataset */
	r.opts.max_read = (uint64_t)64 << 20;
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v")) {
			r.opts.verbose = 1;
		} else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
			r.nwalkers = (unsigned)strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "-m") && i + 1 < argc) {
			r.opts.max_read = strtoull(argv[++i], NULL, 10) << 20;
		} else {
			fprintf(stderr, "usage: %s [-v] [-m MAX_READ_MIB] [-t THREADS] [FILE|DIR]...\n", argv[0]);
			return 2;
		}
	}
	if (i == argc)
		replay_default(&r);
	for (; i < argc; i++)
		replay_path(&r, argv[i], 0);
	printf("replay: %lu files walked (%lu opened as HDF5), longest %.3fs (%s)\n", r.nfiles, r.nopened,
	       r.longest, r.longest_name[0] ? r.longest_name : "-");
	/* the closing line test harnesses read */
	printf("%lu passed, %lu failed\n", r.nfiles, r.nfailed);
	return r.nfailed ? 1 : 0;
}
