/*
 * find_expr.h - h5fs-find's tests (find_expr.c): parsed from the command
 * line as find(1) parses its expression, evaluated per entry of a
 * collection as a mount of it shows the entry.
 *
 *   expr  := or
 *   or    := and { -o and }
 *   and   := unary { [-a] unary }
 *   unary := ! unary | ( or ) | test
 *   test  := -name GLOB | -path GLOB | -type d|f|l | -attr NAME[=GLOB]
 *          | -dtype GLOB | -ndim N | -shape GLOB | -true | -false
 *
 * GLOBs are fnmatch(3) patterns without FNM_PATHNAME (in -path, '*'
 * crosses '/'). No test at all matches everything.
 */
#ifndef H5FS_FIND_EXPR_H
#define H5FS_FIND_EXPR_H

#include <stddef.h>
#include <stdint.h>

/* One entry as a mount of the collection shows it. */
typedef struct fx_entry {
	const char *path;       /* relative to the collection's top */
	const char *name;       /* its last component */
	char type;              /* 'd' folder, HDF5 file, group; 'f' dataset, datatype,
				 * other file; 'l' soft or external link */
	const char *dtype;      /* datasets: user.h5.dtype, else NULL */
	const char *shape;      /* datasets: user.h5.shape, else NULL */
	int ndim;               /* datasets: the rank (-1 null dataspace), else -1 */
	/* HDF5 attributes: names[i] and its text values[i] */
	size_t nattrs;
	const char *const *attr_names;
	const char *const *attr_values;
	/* ... or by accessor (NULL: use the arrays) */
	const void *attrs_arg;
	const char *(*attr_name)(const void *arg, size_t i);
	const char *(*attr_value)(const void *arg, size_t i);
} fx_entry;

typedef struct fx fx;

/* Parse argv[0..argc) as an expression. 0 and *out (NULL: no test, all
 * match), or -1 with the reason in err. */
int fx_parse(fx **out, int argc, char *const *argv, char *err, size_t errlen);
/* 1 when x passes. */
int fx_eval(const fx *e, const fx_entry *x);
void fx_free(fx *e);
/* 1 if a is a word of an expression (a test, an operator, a
 * parenthesis): the command line's other words are options and DIR. */
int fx_is_expr_word(const char *a);

#endif
