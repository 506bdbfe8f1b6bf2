/* ls_space.c - h5fs-ls --space: the engine's space report
 * (h5_space_report_get) as text or JSON. The words are the tool's: the
 * engine only counts. "Unreferenced" is space below the end of allocation
 * that nothing reachable uses: what changes freed (libhdf5's and a
 * read-write mount's, neither of which reuses it), which h5repack
 * reclaims (doc/h5fs-ls.1, SPACE). */
#include "ls_space.h"
#include "json.h"
#include "tool_exit.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_text(const h5_space_report *r, const char *file)
{
	printf("%s: %" PRIu64 " bytes", file, r->file_size);
	if (r->user_block)
		printf(" (user block %" PRIu64 ")", r->user_block);
	printf("\n  allocated:     %" PRIu64 " bytes (the superblock's end of allocation)\n", r->eoa);
	printf("  metadata:      %" PRIu64 " bytes (%" PRIu64 " objects)\n", r->meta, r->objects);
	printf("  raw data:      %" PRIu64 " bytes\n", r->raw);
	printf("  unreferenced:  %" PRIu64 " bytes (space freed by changes; h5repack reclaims it)\n",
	       r->unreferenced);
	if (r->tracked_free)
		printf("  of which %" PRIu64 " bytes are listed by libhdf5's free-space managers\n", r->tracked_free);
	if (r->marked_free)
		printf("  of which %" PRIu64 " bytes are free (freed by h5fs, reused by its next mount)\n",
		       r->marked_free);
	if (r->disk)
		printf("  on disk:       %" PRIu64 " bytes (st_blocks)\n", r->disk);
	if (r->punched)
		printf("  punched:       %" PRIu64 " bytes below the end of allocation are holes (no disk blocks)\n",
		       r->punched);
	if (r->skipped)
		printf("  skipped:       %" PRIu64 " damaged attributes or free-space managers (what they\n"
		       "                 reach counts as unreferenced)\n", r->skipped);
	if (r->past_eoa)
		printf("  past the end of allocation: %" PRIu64 " bytes of structures (damaged file?)\n",
		       r->past_eoa);
	if (r->file_size > r->user_block + r->eoa)
		printf("  after the end of allocation: %" PRIu64 " bytes\n", r->file_size - r->user_block - r->eoa);
}

static int print_json(const h5_space_report *r, const char *file)
{
	struct jb s = { 0 };

	jb_printf(&s, "{\"file\": ");
	jb_str(&s, file, strlen(file));
	jb_printf(&s, ", \"size\": %" PRIu64 ", \"userblock\": %" PRIu64 ", \"allocated\": %" PRIu64
		  ", \"used\": %" PRIu64 ", \"metadata\": %" PRIu64 ", \"raw\": %" PRIu64
		  ", \"unreferenced\": %" PRIu64 ", \"tracked_free\": %" PRIu64 ", \"past_eoa\": %" PRIu64
		  ", \"skipped\": %" PRIu64 ", \"objects\": %" PRIu64 ", \"free\": %" PRIu64 ", \"disk\": %" PRIu64
		  ", \"punched\": %" PRIu64 "}",
		  r->file_size, r->user_block, r->eoa, r->used, r->meta, r->raw, r->unreferenced, r->tracked_free,
		  r->past_eoa, r->skipped, r->objects, r->marked_free, r->disk, r->punched);
	jb_done(&s);
	if (s.nomem) {
		fprintf(stderr, "h5fs-ls: out of memory\n");
		return TOOL_EXIT_PARTIAL;
	}
	printf("%s\n", s.p);
	free(s.p);
	return TOOL_EXIT_OK;
}

int ls_space_print(h5_file *f, const char *file, int json)
{
	h5_space_report r;
	int rc = h5_space_report_get(&r, f);

	if (rc < 0) {
		fprintf(stderr, "h5fs-ls: %s: space report: %s\n", file, h5_err_msg());
		return TOOL_EXIT_PARTIAL;
	}
	if (json)
		return print_json(&r, file);
	print_text(&r, file);
	return TOOL_EXIT_OK;
}
