/*
 * make_tagged.c - fixture writer for the scale benchmark (issue 82 item
 * 3): make_many's tree shape (N objects in groups of 1,000: g000000/d000
 * ...) added to an existing HDF5 file by h5fs's own engine, the calls
 * and bytes a mount's `mkdir` and `touch` make (h5_group_create, then
 * h5_dataset_create_loose of member_create's empty growable dataset and
 * one h5_link_insert_batch per group, as behind/lbatch.c links a batch),
 * so every object carries a birth tag (format/birthtag.c) as one made
 * through the mount does, without 10 M FUSE round trips (~0.25 ms each).
 * A benchmark helper, never part of h5fs.
 *
 *   make libh5core.a && cc -O2 -Isrc/h5core -o /tmp/make_tagged \
 *       bench/make_tagged.c libh5core.a -lz -ldeflate -lm -lpthread
 *   python3 -c 'import h5py; h5py.File("OUT.h5", "w").close()'
 *   ./make_tagged OUT.h5 N
 */
#include "h5core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PER 1000

int main(int argc, char **argv)
{
	h5_open_opts o = { .writable = 1 };
	h5_file *f = NULL;
	h5_dset_new d = { .rank = 1, .kind = 'u', .size = 1, .chunked = 1, .growable = 1, .chunk = { 65536 } };
	char *names[PER];
	uint64_t addrs[PER], g;
	unsigned long long n, i;
	size_t done;
	char name[32];
	int rc = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: make_tagged FILE.h5 N\n");
		return 2;
	}
	n = strtoull(argv[2], NULL, 10);
	for (i = 0; i < PER; i++) {
		names[i] = malloc(8);
		if (!names[i])
			return 1;
		snprintf(names[i], 8, "d%03llu", i);
	}
	if (h5_file_open(&f, argv[1], &o) < 0)
		goto out;
	for (i = 0; i < n; i += PER) {
		size_t k = n - i < PER ? (size_t)(n - i) : PER;

		snprintf(name, sizeof(name), "g%06llu", i / PER);
		if (h5_group_create(&g, f, h5_file_root(f), name, strlen(name)) < 0)
			goto out;
		for (size_t j = 0; j < k; j++)
			if (h5_dataset_create_loose(&addrs[j], f, &d) < 0)
				goto out;
		if (h5_link_insert_batch(&done, f, g, names, addrs, k) < 0)
			goto out;
		if ((i / PER) % 500 == 0)
			fprintf(stderr, "%llu\n", i);
	}
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "make_tagged: %s\n", h5_err_msg());
	if (f)
		h5_file_close(f);
	for (i = 0; i < PER; i++)
		free(names[i]);
	return rc;
}
