/* decode_floor: the fastest this machine can decode the chunks of the
 * deflate benchmark, for bench/README.md ("The decode floor"). All the
 * compressed chunks are read into memory first (not timed); then every core
 * inflates them (libdeflate) and unshuffles them into a reused per-thread
 * buffer: no FUSE, no file system, no cache, no copy to a reader. h5fs's
 * `cat` of the dataset does all of this and more, so its time divided by
 * this one says how much of the machine's decoding speed it delivers.
 *
 *   decode_floor [-t THREADS] [-r RUNS] [-o OUT] FILE ELSIZE CHUNKBYTES < CHUNKS
 *
 * CHUNKS is one "OFFSET SIZE" line per chunk, in dataset order (what
 * h5py's get_chunk_info gives; bench/h5fs_bench.py writes it). Each chunk
 * is a zlib stream of CHUNKBYTES shuffled bytes of ELSIZE-byte elements.
 * THREADS defaults to the online CPUs. Prints one line per run,
 * "decode_floor: run N SECONDS s cpu CPU s" (wall time, then the user +
 * system time of all threads: on a busy machine the steadier figure), then
 * the best. -o OUT writes the decoded
 * dataset once (after the timed runs) so the caller can check the bytes.
 *
 * Built by bench/run.sh: cc -O2 decode_floor.c decode_common.c -ldeflate -lpthread
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "decode_common.h"

static size_t elsize, chunk_bytes;
static atomic_size_t next_chunk;
static int fail;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_now(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

struct worker {
	pthread_t tid;
	uint8_t *raw, *out;
	int keep;       /* -o: out is the whole dataset, chunk k at k * chunk_bytes */
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	size_t k, got;

	if (!d) {
		fail = 1;
		return NULL;
	}
	while ((k = atomic_fetch_add(&next_chunk, 1)) < nchunks) {
		uint8_t *dst = w->keep ? w->out + k * chunk_bytes : w->out;

		if (libdeflate_zlib_decompress(d, chunks[k].z, chunks[k].size, w->raw, chunk_bytes, &got)
		    != LIBDEFLATE_SUCCESS || got != chunk_bytes) {
			fprintf(stderr, "decode_floor: chunk %zu at %llu does not inflate to %zu bytes\n",
				k, (unsigned long long)chunks[k].off, chunk_bytes);
			fail = 1;
			break;
		}
		unshuffle(dst, w->raw, chunk_bytes, elsize);
	}
	libdeflate_free_decompressor(d);
	return NULL;
}

/* One pass over all chunks on nthreads threads; seconds, or -1. */
static double run(struct worker *ws, int nthreads)
{
	double t0 = now();

	atomic_store(&next_chunk, 0);
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&ws[i].tid, NULL, work, &ws[i]) != 0) {
			fprintf(stderr, "decode_floor: pthread_create failed\n");
			exit(1);
		}
	for (int i = 0; i < nthreads; i++)
		pthread_join(ws[i].tid, NULL);
	return fail ? -1 : now() - t0;
}

int main(int argc, char **argv)
{
	int nthreads = (int)sysconf(_SC_NPROCESSORS_ONLN), runs = 5, opt;
	const char *out = NULL;
	double best = 1e30;
	struct worker *ws;

	while ((opt = getopt(argc, argv, "t:r:o:")) != -1) {
		if (opt == 't')
			nthreads = atoi(optarg);
		else if (opt == 'r')
			runs = atoi(optarg);
		else if (opt == 'o')
			out = optarg;
		else
			goto usage;
	}
	if (argc - optind != 3 || nthreads < 1 || runs < 1)
		goto usage;
	elsize = strtoul(argv[optind + 1], NULL, 10);
	chunk_bytes = strtoul(argv[optind + 2], NULL, 10);
	if (elsize < 1 || chunk_bytes < elsize || load_chunks(argv[optind], stdin) < 0)
		goto usage;
	ws = calloc(nthreads, sizeof(*ws));
	for (int i = 0; i < nthreads; i++) {
		ws[i].raw = malloc(chunk_bytes);
		ws[i].out = malloc(chunk_bytes);
		if (!ws[i].raw || !ws[i].out)
			return 1;
		/* touch both, so page faults are not in the first run */
		memset(ws[i].raw, 0, chunk_bytes);
		memset(ws[i].out, 0, chunk_bytes);
	}
	printf("decode_floor: %zu chunks of %zu bytes (element %zu), %d threads\n",
	       nchunks, chunk_bytes, elsize, nthreads);
	for (int r = 0; r < runs; r++) {
		double c0 = cpu_now(), s = run(ws, nthreads);

		if (s < 0)
			return 1;
		printf("decode_floor: run %d %.6f s cpu %.6f s\n", r + 1, s, cpu_now() - c0);
		if (s < best)
			best = s;
	}
	printf("decode_floor: best %.6f s, %.1f MiB/s decoded\n", best,
	       (double)nchunks * chunk_bytes / (1 << 20) / best);
	if (out) {
		uint8_t *all = malloc(nchunks * chunk_bytes);
		FILE *f = fopen(out, "wb");

		for (int i = 0; i < nthreads; i++) {
			ws[i].out = all;
			ws[i].keep = 1;
		}
		if (!all || !f || run(ws, nthreads) < 0 ||
		    fwrite(all, chunk_bytes, nchunks, f) != nchunks || fclose(f) != 0) {
			fprintf(stderr, "decode_floor: cannot write %s\n", out);
			return 1;
		}
	}
	return 0;
usage:
	fprintf(stderr, "usage: decode_floor [-t THREADS] [-r RUNS] [-o OUT] FILE ELSIZE CHUNKBYTES < CHUNKS\n");
	return 2;
}
