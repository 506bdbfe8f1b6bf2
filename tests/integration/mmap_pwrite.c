/* mmap_pwrite.c - pwrite(2) beside stores through a shared mapping of the
 * same new file (the core of xfstests' src/holetest.c, generic/346), for
 * test_memmap_rw.py.
 *
 * mmap_pwrite PATH PAGES ROUNDS: each round creates PATH (a new file: a
 * dataset that can grow), sizes it with ftruncate, fills it with zeros
 * through a shared mapping, maps it again; one thread pwrite()s an 8-byte
 * marker at 0x400 of every page while another stores one at 0xC00 of
 * every page through the mapping; then every page must hold both, through
 * the mapping and through pread. The store to a page follows the start of
 * that page's pwrite, so the two meet on every page. PATH is unlinked after each round.
 * Exit 0: every marker seen; 1: a marker lost (printed); 2: a call failed.
 *
 * Why: with the descriptor around the page cache (direct_io) the kernel
 * drops a page before a direct WRITE reaches the daemon, and a store's
 * fault could read it back in between, without the pwrite's bytes; the
 * store then dirtied it and its writeback took the bytes away (issue 71). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PG 4096

static int fd;
static char *va;
static long npages;
static const uint64_t mark_w = 0x5757575757570001ull, mark_m = 0x4d4d4d4d4d4d0002ull;
static int failed;
static long go;         /* pages the writer has begun: the storer follows it */

static void *writer(void *arg)
{
	(void)arg;
	for (long i = 0; i < npages; i++) {
		__atomic_store_n(&go, i + 1, __ATOMIC_RELEASE);
		if (pwrite(fd, &mark_w, sizeof(mark_w), i * PG + 0x400) != sizeof(mark_w)) {
			perror("pwrite");
			failed = 1;
			break;
		}
	}
	__atomic_store_n(&go, npages, __ATOMIC_RELEASE);
	return NULL;
}

static void *storer(void *arg)
{
	(void)arg;
	for (long i = 0; i < npages; i++) {
		/* each store faults its page while the pwrite of that page
		 * is under way: where the two used to meet */
		while (__atomic_load_n(&go, __ATOMIC_ACQUIRE) <= i && !failed)
			sched_yield();
		memcpy(va + i * PG + 0xC00, &mark_m, sizeof(mark_m));
	}
	return NULL;
}

static int check(const char *how, long i, const char *pg)
{
	uint64_t a, b;

	memcpy(&a, pg + 0x400, 8);
	memcpy(&b, pg + 0xC00, 8);
	if (a == mark_w && b == mark_m)
		return 0;
	fprintf(stderr, "%s: page %ld: pwrite marker %016llx, mapped store %016llx\n", how, i,
		(unsigned long long)a, (unsigned long long)b);
	return 1;
}

int main(int argc, char **argv)
{
	long rounds;
	int bad = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: mmap_pwrite PATH PAGES ROUNDS\n");
		return 2;
	}
	npages = atol(argv[2]);
	rounds = atol(argv[3]);
	for (long r = 0; r < rounds && !bad; r++) {
		size_t sz = (size_t)npages * PG;
		pthread_t t1, t2;
		char *z, pg[PG];

		fd = open(argv[1], O_RDWR | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || ftruncate(fd, (off_t)sz) != 0) {
			perror(argv[1]);
			return 2;
		}
		z = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (z == MAP_FAILED) {
			perror("mmap");
			return 2;
		}
		memset(z, 0, sz);
		munmap(z, sz);
		va = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (va == MAP_FAILED) {
			perror("mmap");
			return 2;
		}
		go = 0;
		if (pthread_create(&t1, NULL, writer, NULL) || pthread_create(&t2, NULL, storer, NULL)) {
			perror("pthread_create");
			return 2;
		}
		pthread_join(t1, NULL);
		pthread_join(t2, NULL);
		if (failed)
			return 2;
		for (long i = 0; i < npages && !bad; i++)
			bad = check("mapping", i, va + i * PG);
		if (msync(va, sz, MS_SYNC) != 0) {
			perror("msync");
			return 2;
		}
		munmap(va, sz);
		for (long i = 0; i < npages && !bad; i++) {
			if (pread(fd, pg, PG, i * PG) != PG) {
				perror("pread");
				return 2;
			}
			bad = check("pread", i, pg);
		}
		if (close(fd) != 0 || unlink(argv[1]) != 0) {
			perror("close/unlink");
			return 2;
		}
	}
	return bad;
}
