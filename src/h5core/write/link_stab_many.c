/*
 * link_stab_many.c - many names of a symbol-table group changed in one
 * commit (link_store.h's insert_many, room_many, remove_many and
 * change_many of the "stab" entry): the daemon's batches of new files,
 * of rmdirs and of renames, hard links and unlinks. The edit in memory
 * and its one commit are link_stab.c's (link_stab_int.h); here, what a
 * batch does with them. Spec III.A.1, III.B, III.C, III.D.
 */
#include "base.h"
#include "file.h"
#include "linkmsg.h"
#include "snod.h"
#include "btree1.h"
#include "space.h"
#include "link_store.h"
#include "link_stab_int.h"

/* The group's edit for a change of many names: its data segment let go
 * and written anew (s.moved), whatever the names, so that none is written
 * into the old segment in place and the heap header's one write follows
 * the stage */
static int open_many(stab_edit *s, h5_file *f, uint64_t group)
{
	int rc = h5_stab_open(s, f, group);

	if (rc == 0)
		rc = h5_stab_heap_release(s);
	s->moved = true;
	return rc;
}

/* Many new hard links in one change (the daemon's write-behind of new
 * files, h5_link_insert_batch): every name checked first; the data
 * segment is written anew (s.moved: however many names, none is written
 * into the old segment in place, and the heap header's one write follows
 * the stage), the nodes they fall in anew, then one commit: one stage, one
 * write of the root. */
int h5_stab_insert_many(h5_file *f, uint64_t group, const h5_link *l, size_t n, uint64_t start)
{
	stab_edit s;
	int rc = open_many(&s, f, group);

	for (size_t i = 0; rc == 0 && i < n; i++) {
		h5_snod_entry e;
		size_t li, ei;
		bool found;
		char *name = strndup(l[i].name, l[i].name_len);

		rc = name ? h5_stab_locate(&li, &ei, &found, &s, name) : h5_err_set(H5_ERR_NOMEM, "out of memory");
		if (rc == 0 && found)
			rc = h5_err_set(H5_ERR_INVAL, "group 0x%llx has a link \"%s\" already",
					(unsigned long long)group, name);
		if (rc == 0 && l[i].type != H5_LINK_HARD)
			rc = h5_err_set(H5_ERR_INVAL, "a batch of links holds hard links only");
		if (rc == 0)
			rc = h5_stab_entry_of(&e, f, &l[i]);
		if (rc == 0)
			rc = h5_stab_put(&s, &e, name, NULL);
		free(name);
	}
	if (rc == 0)
		rc = h5_stab_commit(&s, start == UINT64_MAX ? h5_space_end(f) : start, false);
	h5_stab_close(&s);
	return rc;
}

/* What stab_insert_many of n names of name_bytes may take: the data
 * segment anew (doubled when the names do not fit: twice the old one and
 * the names), every node rewritten and each name a node more at most, the
 * B-tree below the root anew over them. */
int h5_stab_room_many(uint64_t *need, h5_file *f, uint64_t group, size_t n, uint64_t name_bytes)
{
	stab_edit s;
	int rc = h5_stab_open(&s, f, group);

	if (rc == 0) {
		uint64_t leaves = s.nl + 2 * (uint64_t)n + 1;
		uint64_t twok = 2 * (uint64_t)s.k_int, inner = 0;

		for (uint64_t m = leaves; m > twok; m = (m + twok - 1) / twok)
			inner += (m + twok - 1) / twok;
		*need = 2 * (s.hsize + name_bytes + 24 * (uint64_t)n) + leaves * h5_snod_size(&f->fmt, f->sym_leaf_k) +
			inner * h5_bt1_group_size(&f->fmt, s.k_int);
	}
	h5_stab_close(&s);
	return rc;
}

/* Many links removed in one change (the daemon's rmdir batch,
 * h5_link_remove_batch): the nodes they leave anew, then one commit: one
 * stage, one write of the root; their names back to the heap later, as
 * one removal's. */
int h5_stab_remove_many(h5_file *f, uint64_t group, char *const *names, size_t n)
{
	stab_edit s;
	int rc = h5_stab_open(&s, f, group);

	if (rc == 0)
		rc = h5_stab_heap_release(&s);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		size_t li, ei;
		bool found;

		rc = h5_stab_locate(&li, &ei, &found, &s, names[i]);
		if (rc == 0 && !found)
			rc = h5_err_set(H5_ERR_NOTFOUND, "no link \"%s\"", names[i]);
		if (rc == 0)
			rc = h5_stab_take(&s, li, ei, NULL, true);
	}
	if (rc == 0)
		rc = h5_stab_commit(&s, h5_space_end(f), false);
	h5_stab_close(&s);
	return rc;
}

/* rename, link and unlink's batch (h5_link_change_batch, link_batch.c):
 * names[i] afterwards a hard link to the existing object addrs[i], or
 * gone (H5_ADDR_UNDEF), the entry there before taken out; every change in
 * memory first (a name to remove missing: H5_ERR_NOTFOUND, nothing
 * written), then one commit: the nodes changed and the data segment anew
 * (s.moved, as insert_many), one stage, one write of the root. A name
 * already naming its object is left alone; *changed: whether anything
 * was written. */
int h5_stab_change_many(bool *changed, h5_file *f, uint64_t group, char *const *names, const uint64_t *addrs,
			    size_t n)
{
	stab_edit s;
	int rc = open_many(&s, f, group);

	*changed = false;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		h5_snod_entry e;
		size_t li, ei;
		bool found;

		rc = h5_stab_locate(&li, &ei, &found, &s, names[i]);
		if (rc == 0 && found) {
			e = s.lv[li].e[ei];
			if (h5_addr_defined(addrs[i]) && e.cache_type != 2 && e.obj_addr == addrs[i])
				continue;
			rc = h5_stab_take(&s, li, ei, NULL, true);
			*changed = true;
		} else if (rc == 0 && !h5_addr_defined(addrs[i])) {
			rc = h5_err_set(H5_ERR_NOTFOUND, "no link \"%s\"", names[i]);
		}
		if (rc == 0 && h5_addr_defined(addrs[i])) {
			h5_link l = { .type = H5_LINK_HARD, .addr = addrs[i] };

			rc = h5_stab_entry_of(&e, f, &l);
			if (rc == 0)
				rc = h5_stab_put(&s, &e, names[i], NULL);
			*changed = true;
		}
	}
	if (rc == 0 && *changed)
		rc = h5_stab_commit(&s, h5_space_end(f), false);
	if (rc < 0)
		*changed = false;
	h5_stab_close(&s);
	return rc;
}
