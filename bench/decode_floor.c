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
 * Built by bench/run.sh: cc -O2 decode_floor.c -ldeflate -lpthread
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
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

struct chunk {
	uint64_t off, size;
	uint8_t *z;
};

static struct chunk *chunks;
static size_t nchunks, elsize, chunk_bytes;
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

/* Byte i of element j: src[i * n + j] -> dst[j * es + i]. Sixteen elements
 * a step with SSE2 unpacks for 4- and 8-byte elements (the benchmark's
 * int32 and the float64 case), a plain loop for the rest. */
static void unshuffle(uint8_t *dst, const uint8_t *src, size_t len, size_t es)
{
	size_t n = len / es, j = 0;

#if defined(__SSE2__)
	if (es == 4) {
		for (; j + 16 <= n; j += 16) {
			__m128i a = _mm_loadu_si128((const __m128i *)(src + j));
			__m128i b = _mm_loadu_si128((const __m128i *)(src + n + j));
			__m128i c = _mm_loadu_si128((const __m128i *)(src + 2 * n + j));
			__m128i d = _mm_loadu_si128((const __m128i *)(src + 3 * n + j));
			__m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
			__m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);
			uint8_t *o = dst + 4 * j;

			_mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi16(ab0, cd0));
			_mm_storeu_si128((__m128i *)(o + 16), _mm_unpackhi_epi16(ab0, cd0));
			_mm_storeu_si128((__m128i *)(o + 32), _mm_unpacklo_epi16(ab1, cd1));
			_mm_storeu_si128((__m128i *)(o + 48), _mm_unpackhi_epi16(ab1, cd1));
		}
	} else if (es == 8) {
		for (; j + 16 <= n; j += 16) {
			__m128i p[8], q[8], lo[4], hi[4];

			for (unsigned k = 0; k < 8; k++)
				p[k] = _mm_loadu_si128((const __m128i *)(src + k * n + j));
			for (unsigned k = 0; k < 4; k++) {
				q[2 * k] = _mm_unpacklo_epi8(p[2 * k], p[2 * k + 1]);
				q[2 * k + 1] = _mm_unpackhi_epi8(p[2 * k], p[2 * k + 1]);
			}
			/* lo[m]: bytes 0-3 of elements 4m..4m+3; hi[m]: bytes 4-7 */
			for (unsigned h = 0; h < 2; h++) {
				lo[2 * h] = _mm_unpacklo_epi16(q[h], q[2 + h]);
				lo[2 * h + 1] = _mm_unpackhi_epi16(q[h], q[2 + h]);
				hi[2 * h] = _mm_unpacklo_epi16(q[4 + h], q[6 + h]);
				hi[2 * h + 1] = _mm_unpackhi_epi16(q[4 + h], q[6 + h]);
			}
			for (unsigned m = 0; m < 4; m++) {
				uint8_t *o = dst + 8 * (j + 4 * m);

				_mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi32(lo[m], hi[m]));
				_mm_storeu_si128((__m128i *)(o + 16), _mm_unpackhi_epi32(lo[m], hi[m]));
			}
		}
	}
#endif
	for (; j < n; j++)
		for (size_t i = 0; i < es; i++)
			dst[j * es + i] = src[i * n + j];
	memcpy(dst + n * es, src + n * es, len - n * es);
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

static int load(const char *path)
{
	int fd = open(path, O_RDONLY);
	size_t cap = 0;
	unsigned long long off, size;

	if (fd < 0) {
		perror(path);
		return -1;
	}
	while (scanf("%llu %llu", &off, &size) == 2) {
		if (nchunks == cap) {
			cap = cap ? 2 * cap : 1024;
			chunks = realloc(chunks, cap * sizeof(*chunks));
			if (!chunks)
				return -1;
		}
		chunks[nchunks].off = off;
		chunks[nchunks].size = size;
		chunks[nchunks].z = malloc(size ? size : 1);
		if (!chunks[nchunks].z || pread(fd, chunks[nchunks].z, size, off) != (ssize_t)size) {
			fprintf(stderr, "decode_floor: %s: cannot read chunk %zu (%llu bytes at %llu)\n",
				path, nchunks, size, off);
			close(fd);
			return -1;
		}
		nchunks++;
	}
	close(fd);
	return nchunks ? 0 : -1;
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
	if (elsize < 1 || chunk_bytes < elsize || load(argv[optind]) < 0)
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
