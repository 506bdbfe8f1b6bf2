/* ls_list.h - h5fs-ls's listing of one HDF5 file (ls_list.c), shared by
 * h5fs-ls.c's FILE and collection modes. */
#ifndef H5FS_LS_LIST_H
#define H5FS_LS_LIST_H

#include "h5core.h"
#include "json.h"

#include <stddef.h>
#include <stdint.h>

struct lister {
	h5_file *f;
	int recursive;
	int json;
	int nerr;
	int first_json;
	uint64_t *seen;         /* group addresses already listed (-R) */
	size_t nseen, capseen;
	struct jb *cap;         /* a member's entries kept for the index (each
				 * one as printed, then a newline), or NULL */
	int transient;          /* an entry's error may pass (I/O, memory):
				 * such a listing is not kept */
};

/* One entry printed (and kept in L->cap while a member is captured for
 * the index: one line per entry); s is finished here. */
void ls_emit(struct lister *L, struct jb *s);
void ls_entry_begin(struct lister *L, struct jb *s, const char *path, const char *kind);
/* An entry saying the object could not be read (h5_err_msg()); counted. */
void ls_entry_error(struct lister *L, const char *path, const char *kind, int rc);
/* The object at addr of L->f, listed at path; top: the start of the
 * listing (a group's own line not printed; listed even without -R). */
void ls_list_object(struct lister *L, const char *path, uint64_t addr, int top);
/* PATH (absolute in the file; soft links followed) to an address. */
int ls_resolve(uint64_t *out, h5_file *f, const char *path, int hops);

#endif
