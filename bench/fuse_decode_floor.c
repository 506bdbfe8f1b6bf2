/* fuse_decode_floor: the fastest a FUSE file system can serve a `cat` of
 * the deflate benchmark's dataset here, for the decode benchmark
 * (bench/README.md, "The decode floor"). bench/decode_floor.c measures
 * decoding alone, with no reader; a FUSE file system must also hand every
 * decoded byte to the kernel, on the same two cores. This one serves one
 * file, `data`, the dataset's decoded bytes, set up as fuse_read_floor (and
 * h5fs) is: keep_cache, max_read 1000 KiB, the mount's read_ahead_kb raised
 * to four such requests, the same multithreaded libfuse loop. All the
 * compressed chunks are read into memory before mounting. Each chunk is
 * inflated (libdeflate) and unshuffled once, into memory set aside and
 * faulted in before mounting: by the READ that first touches it, or ahead
 * of the reader by one decoding thread per CPU (the READ of chunk k asks
 * for chunks up to k + AHEAD, as h5fs's decode pool does). A READ answers
 * with fuse_reply_buf from there: no file, no cache to manage, no eviction,
 * one copy (the kernel's). h5fs's `cat` does all of this and more.
 *
 *   fuse_decode_floor -c CHUNKS -e ELSIZE -b CHUNKBYTES -f FILE MNT
 *
 * CHUNKS, ELSIZE and CHUNKBYTES are decode_floor's (one "OFFSET SIZE" line
 * per chunk of FILE, in dataset order; each chunk a zlib stream of
 * CHUNKBYTES shuffled bytes of ELSIZE-byte elements).
 *
 * Built by bench/run.sh: cc -O2 fuse_decode_floor.c decode_common.c
 *   floor_common.c $(pkg-config --cflags --libs fuse3) -ldeflate -lpthread
 */
#define _GNU_SOURCE
#include "decode_common.h"
#include "floor_common.h"

#include <errno.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DATA_INO 2
#define MAX_READ FLOOR_MAX_READ
#define AHEAD 4

static size_t elsize, chunk_bytes;
static uint8_t *decoded;        /* nchunks * chunk_bytes, faulted in */
static uint64_t data_size;
/* per chunk: 0 not decoded, 1 being decoded, 2 decoded, 3 bad */
static unsigned char *state;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
/* decode-ahead: chunks [ahead_next, ahead_want) are for the pool */
static size_t ahead_next, ahead_want;
static pthread_cond_t ahead_cv = PTHREAD_COND_INITIALIZER;

struct tls {
	struct libdeflate_decompressor *d;
	uint8_t *raw;
};
static pthread_key_t tls_key;

static void tls_free(void *p)
{
	struct tls *t = p;

	libdeflate_free_decompressor(t->d);
	free(t->raw);
	free(t);
}

static struct tls *tls_get(void)
{
	struct tls *t = pthread_getspecific(tls_key);

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->d = libdeflate_alloc_decompressor();
	t->raw = malloc(chunk_bytes);
	if (!t->d || !t->raw) {
		tls_free(t);
		return NULL;
	}
	pthread_setspecific(tls_key, t);
	return t;
}

/* Chunk k decoded into its place, by this thread or another; 0 or -1. */
static int chunk_ready(size_t k)
{
	struct tls *t;
	size_t got;
	int ok;

	pthread_mutex_lock(&mu);
	while (state[k] == 1)
		pthread_cond_wait(&cv, &mu);
	if (state[k] != 0) {
		ok = state[k] == 2;
		pthread_mutex_unlock(&mu);
		return ok ? 0 : -1;
	}
	state[k] = 1;
	pthread_mutex_unlock(&mu);
	t = tls_get();
	ok = t && libdeflate_zlib_decompress(t->d, chunks[k].z, chunks[k].size, t->raw, chunk_bytes, &got)
		== LIBDEFLATE_SUCCESS && got == chunk_bytes;
	if (ok)
		unshuffle(decoded + k * chunk_bytes, t->raw, chunk_bytes, elsize);
	else
		fprintf(stderr, "fuse_decode_floor: chunk %zu does not inflate to %zu bytes\n", k, chunk_bytes);
	pthread_mutex_lock(&mu);
	state[k] = ok ? 2 : 3;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	return ok ? 0 : -1;
}

static void *ahead_thread(void *arg)
{
	size_t k;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&mu);
		while (ahead_next >= ahead_want)
			pthread_cond_wait(&ahead_cv, &mu);
		k = ahead_next++;
		pthread_mutex_unlock(&mu);
		chunk_ready(k);
	}
	return NULL;
}

/* A READ reached chunk k: the pool decodes up to k + AHEAD. */
static void ahead_ask(size_t k)
{
	size_t want = k + 1 + AHEAD < nchunks ? k + 1 + AHEAD : nchunks;

	pthread_mutex_lock(&mu);
	if (ahead_next < k + 1)
		ahead_next = k + 1;
	if (want > ahead_want) {
		ahead_want = want;
		pthread_cond_broadcast(&ahead_cv);
	}
	pthread_mutex_unlock(&mu);
}

static void fill_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)data_size;
		st->st_blksize = 131072;
	}
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->max_read = MAX_READ;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	if (parent != FUSE_ROOT_ID || strcmp(name, "data") != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = DATA_INO;
	fill_stat(DATA_INO, &e.attr);
	e.attr_timeout = e.entry_timeout = 3600.0;
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	fill_stat(ino, &st);
	fuse_reply_attr(req, &st, 3600.0);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	if (ino != DATA_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	(void)fi;
	if ((uint64_t)off >= data_size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if ((uint64_t)size > data_size - (uint64_t)off)
		size = (size_t)(data_size - (uint64_t)off);
	ahead_ask(((size_t)off + size - 1) / chunk_bytes);
	for (size_t k = (size_t)off / chunk_bytes; k <= ((size_t)off + size - 1) / chunk_bytes; k++)
		if (chunk_ready(k) != 0) {
			fuse_reply_err(req, EIO);
			return;
		}
	fuse_reply_buf(req, (const char *)decoded + off, size);
}

static const struct fuse_lowlevel_ops ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.open = op_open,
	.read = op_read,
};

int main(int argc, char **argv)
{
	const char *list = NULL, *file = NULL;
	FILE *lf;
	int opt;

	while ((opt = getopt(argc, argv, "c:e:b:f")) != -1) {
		if (opt == 'c')
			list = optarg;
		else if (opt == 'e')
			elsize = strtoul(optarg, NULL, 10);
		else if (opt == 'b')
			chunk_bytes = strtoul(optarg, NULL, 10);
		else if (opt != 'f')
			goto usage;
	}
	if (argc - optind != 2 || !list || elsize < 1 || chunk_bytes < elsize)
		goto usage;
	file = argv[optind];
	lf = fopen(list, "r");
	if (!lf || load_chunks(file, lf) < 0) {
		fprintf(stderr, "fuse_decode_floor: cannot load the chunks of %s listed in %s\n", file, list);
		return 1;
	}
	fclose(lf);
	data_size = (uint64_t)nchunks * chunk_bytes;
	decoded = malloc(data_size);
	state = calloc(nchunks, 1);
	if (!decoded || !state || pthread_key_create(&tls_key, tls_free) != 0)
		return 1;
	memset(decoded, 0, data_size);  /* faulted in before any read */
	for (long i = sysconf(_SC_NPROCESSORS_ONLN); i > 0; i--) {
		pthread_t t;

		if (pthread_create(&t, NULL, ahead_thread, NULL) != 0)
			return 1;
		pthread_detach(t);
	}
	return floor_run(argv[0], &ops, "ro,default_permissions,max_read=1024000", argv[optind + 1], floor_raise_readahead);
usage:
	fprintf(stderr, "usage: fuse_decode_floor -c CHUNKS -e ELSIZE -b CHUNKBYTES -f FILE MNT\n");
	return 2;
}
