/* find_expr.c - h5fs-find's expression (find_expr.h): a recursive
 * descent parser into a tree, and its evaluation. */
#include "find_expr.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op { OP_AND, OP_OR, OP_NOT, OP_TRUE, OP_FALSE, OP_NAME, OP_PATH, OP_TYPE, OP_ATTR, OP_DTYPE, OP_NDIM,
	  OP_SHAPE };

struct fx {
	enum op op;
	struct fx *a, *b;       /* operands */
	char *s;                /* the pattern (-attr: NAME) */
	char *glob;             /* -attr NAME=GLOB: GLOB, else NULL */
	long n;                 /* -ndim */
	char type;              /* -type */
};

struct parser {
	int argc, i;
	char *const *argv;
	char *err;
	size_t errlen;
};

static const char *const TESTS[] = { "-name", "-path", "-type", "-attr", "-dtype", "-ndim", "-shape" };
#define NTESTS (sizeof(TESTS) / sizeof(TESTS[0]))

int fx_is_expr_word(const char *a)
{
	static const char *const words[] = { "!", "-not", "(", ")", "-o", "-or", "-a", "-and", "-true", "-false" };

	for (size_t i = 0; i < NTESTS; i++)
		if (!strcmp(a, TESTS[i]))
			return 1;
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strcmp(a, words[i]))
			return 1;
	return 0;
}

void fx_free(fx *e)
{
	if (!e)
		return;
	fx_free(e->a);
	fx_free(e->b);
	free(e->s);
	free(e->glob);
	free(e);
}

static fx *node(struct parser *p, enum op op, fx *a, fx *b)
{
	fx *e = calloc(1, sizeof(*e));

	if (!e) {
		snprintf(p->err, p->errlen, "out of memory");
		fx_free(a);
		fx_free(b);
		return NULL;
	}
	e->op = op;
	e->a = a;
	e->b = b;
	return e;
}

static const char *peek(const struct parser *p)
{
	return p->i < p->argc ? p->argv[p->i] : NULL;
}

static fx *parse_or(struct parser *p);

static fx *parse_test(struct parser *p)
{
	const char *w = peek(p), *arg;
	enum op op;
	fx *e;

	if (!strcmp(w, "-true") || !strcmp(w, "-false")) {
		p->i++;
		return node(p, w[1] == 't' ? OP_TRUE : OP_FALSE, NULL, NULL);
	}
	if (!strcmp(w, "-name"))
		op = OP_NAME;
	else if (!strcmp(w, "-path"))
		op = OP_PATH;
	else if (!strcmp(w, "-type"))
		op = OP_TYPE;
	else if (!strcmp(w, "-attr"))
		op = OP_ATTR;
	else if (!strcmp(w, "-dtype"))
		op = OP_DTYPE;
	else if (!strcmp(w, "-ndim"))
		op = OP_NDIM;
	else if (!strcmp(w, "-shape"))
		op = OP_SHAPE;
	else {
		snprintf(p->err, p->errlen, "unknown test or misplaced word '%s'", w);
		return NULL;
	}
	if (p->i + 1 >= p->argc) {
		snprintf(p->err, p->errlen, "%s needs an argument", w);
		return NULL;
	}
	arg = p->argv[p->i + 1];
	p->i += 2;
	if (!(e = node(p, op, NULL, NULL)))
		return NULL;
	if (op == OP_TYPE) {
		if (strlen(arg) != 1 || !strchr("dfl", arg[0])) {
			snprintf(p->err, p->errlen, "-type %s: one of d, f, l", arg);
			fx_free(e);
			return NULL;
		}
		e->type = arg[0];
		return e;
	}
	if (op == OP_NDIM) {
		char *end;

		errno = 0;
		e->n = strtol(arg, &end, 10);
		if (!*arg || *end || errno || e->n < 0 || e->n > 64) {
			snprintf(p->err, p->errlen, "-ndim %s: a number of dimensions (0-64)", arg);
			fx_free(e);
			return NULL;
		}
		return e;
	}
	if (op == OP_ATTR) {
		const char *eq = strchr(arg, '=');

		if (eq == arg) {
			snprintf(p->err, p->errlen, "-attr %s: no attribute name", arg);
			fx_free(e);
			return NULL;
		}
		e->s = eq ? strndup(arg, (size_t)(eq - arg)) : strdup(arg);
		if (eq && !(e->glob = strdup(eq + 1)))
			e->s = (free(e->s), NULL);
	} else {
		e->s = strdup(arg);
	}
	if (!e->s) {
		snprintf(p->err, p->errlen, "out of memory");
		fx_free(e);
		return NULL;
	}
	return e;
}

static fx *parse_unary(struct parser *p)
{
	const char *w = peek(p);
	fx *e;

	if (!w) {
		snprintf(p->err, p->errlen, "expression ends where a test was expected");
		return NULL;
	}
	if (!strcmp(w, "!") || !strcmp(w, "-not")) {
		p->i++;
		e = parse_unary(p);
		return e ? node(p, OP_NOT, e, NULL) : NULL;
	}
	if (!strcmp(w, "(")) {
		p->i++;
		e = parse_or(p);
		if (!e)
			return NULL;
		if (!peek(p) || strcmp(peek(p), ")")) {
			snprintf(p->err, p->errlen, "'(' without its ')'");
			fx_free(e);
			return NULL;
		}
		p->i++;
		return e;
	}
	return parse_test(p);
}

static int ends_and(const char *w)
{
	return !w || !strcmp(w, ")") || !strcmp(w, "-o") || !strcmp(w, "-or");
}

static fx *parse_and(struct parser *p)
{
	fx *e = parse_unary(p);

	while (e && !ends_and(peek(p))) {
		fx *r;

		if (!strcmp(peek(p), "-a") || !strcmp(peek(p), "-and"))
			p->i++;
		r = parse_unary(p);
		if (!r) {
			fx_free(e);
			return NULL;
		}
		e = node(p, OP_AND, e, r);
	}
	return e;
}

static fx *parse_or(struct parser *p)
{
	fx *e = parse_and(p);

	while (e && peek(p) && (!strcmp(peek(p), "-o") || !strcmp(peek(p), "-or"))) {
		fx *r;

		p->i++;
		r = parse_and(p);
		if (!r) {
			fx_free(e);
			return NULL;
		}
		e = node(p, OP_OR, e, r);
	}
	return e;
}

int fx_parse(fx **out, int argc, char *const *argv, char *err, size_t errlen)
{
	struct parser p = { .argc = argc, .argv = argv, .err = err, .errlen = errlen };
	fx *e;

	*out = NULL;
	if (errlen)
		err[0] = 0;
	if (argc == 0)
		return 0;
	e = parse_or(&p);
	if (!e)
		return -1;
	if (p.i < argc) {
		snprintf(err, errlen, "unexpected '%s'", argv[p.i]);
		fx_free(e);
		return -1;
	}
	*out = e;
	return 0;
}

static const char *attr_name(const fx_entry *x, size_t i)
{
	return x->attr_name ? x->attr_name(x->attrs_arg, i) : x->attr_names[i];
}

static const char *attr_value(const fx_entry *x, size_t i)
{
	return x->attr_value ? x->attr_value(x->attrs_arg, i) : x->attr_values[i];
}

int fx_eval(const fx *e, const fx_entry *x)
{
	if (!e)
		return 1;
	switch (e->op) {
	case OP_AND:
		return fx_eval(e->a, x) && fx_eval(e->b, x);
	case OP_OR:
		return fx_eval(e->a, x) || fx_eval(e->b, x);
	case OP_NOT:
		return !fx_eval(e->a, x);
	case OP_TRUE:
		return 1;
	case OP_FALSE:
		return 0;
	case OP_NAME:
		return fnmatch(e->s, x->name, 0) == 0;
	case OP_PATH:
		return fnmatch(e->s, x->path, 0) == 0;
	case OP_TYPE:
		return x->type == e->type;
	case OP_ATTR:
		for (size_t i = 0; i < x->nattrs; i++)
			if (!strcmp(attr_name(x, i), e->s) && (!e->glob || fnmatch(e->glob, attr_value(x, i), 0) == 0))
				return 1;
		return 0;
	case OP_DTYPE:
		return x->dtype && fnmatch(e->s, x->dtype, 0) == 0;
	case OP_NDIM:
		return x->dtype && x->ndim == e->n;
	case OP_SHAPE:
		return x->shape && fnmatch(e->s, x->shape, 0) == 0;
	}
	return 0;
}
