/*
 * fltdig.h - the shortest decimal digits of an IEEE double or single that
 * read back as it (fltdig.c); value.c lays them out as Python's repr().
 */
#ifndef H5_FORMAT_FLTDIG_H
#define H5_FORMAT_FLTDIG_H

#include <stdbool.h>

/* Longest digit string (17 digits and the NUL). */
#define H5_FLTDIG_MAX 18

/* The digits of a finite, normal, nonzero v (a single's value when single)
 * without sign, point or trailing zeros, in digits[H5_FLTDIG_MAX], and the
 * decimal exponent of the first one: v ~ d.ddd * 10^*exp10. Returns the
 * digit count. Exact integer arithmetic where the value fits 128 bits,
 * h5_fltdig_slow otherwise: the text is the same either way. */
int h5_fltdig(char *digits, int *exp10, double v, bool single);
/* The same by printf and strtod: the shortest count of digits d such that
 * v rounded to d significant digits ("%.*e") reads back, probed from 16 (8
 * for a single) down to 15 (6) or up to 17 (9). The reference the tests
 * hold h5_fltdig to, and its fallback. */
int h5_fltdig_slow(char *digits, int *exp10, double v, bool single);

#endif
