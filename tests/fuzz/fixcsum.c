/*
 * fixcsum.c - turn an input found by fuzz_walk_nocsum into a real one:
 * walk it repeatedly, rewriting every metadata checksum that does not match
 * (nocsum.c), until none is left; then write the result.
 *
 *   fixcsum IN OUT
 *
 * The output is then checked with the normal build: `replay OUT`.
 */
#include "fuzz_walk.h"
#include "nocsum.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	h5fuzz_opts o;
	h5fuzz_stats st;
	FILE *fp;
	long n;
	unsigned round;

	if (argc != 3) {
		fprintf(stderr, "usage: %s IN OUT\n", argv[0]);
		return 2;
	}
	fp = fopen(argv[1], "rb");
	if (!fp || fseek(fp, 0, SEEK_END) < 0 || (n = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) < 0) {
		perror(argv[1]);
		return 1;
	}
	h5fuzz_fix_len = (size_t)n;
	h5fuzz_fix_image = malloc(h5fuzz_fix_len ? h5fuzz_fix_len : 1);
	if (!h5fuzz_fix_image || fread(h5fuzz_fix_image, 1, h5fuzz_fix_len, fp) != h5fuzz_fix_len) {
		perror(argv[1]);
		return 1;
	}
	fclose(fp);
	h5fuzz_default_opts(&o);
	/* a fixed checksum can reveal further blocks: repeat until stable */
	for (round = 0; round < 16; round++) {
		h5fuzz_fixed = 0;
		h5fuzz_walk(&st, h5fuzz_fix_image, h5fuzz_fix_len, &o);
		fprintf(stderr, "round %u: %u checksums rewritten\n", round, h5fuzz_fixed);
		if (!h5fuzz_fixed)
			break;
	}
	fp = fopen(argv[2], "wb");
	if (!fp || fwrite(h5fuzz_fix_image, 1, h5fuzz_fix_len, fp) != h5fuzz_fix_len || fclose(fp) != 0) {
		perror(argv[2]);
		return 1;
	}
	free(h5fuzz_fix_image);
	return 0;
}
