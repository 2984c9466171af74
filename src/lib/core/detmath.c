/* detmath: the correctly rounded scalars of detmath.h. */
#include "detmath.h"

#include <mpfr.h>

double det_pow(double x, double y) {
    mpfr_t a, b;
    mpfr_inits2(53, a, b, (mpfr_ptr)0);
    mpfr_set_d(a, x, MPFR_RNDN);
    mpfr_set_d(b, y, MPFR_RNDN);
    mpfr_pow(a, a, b, MPFR_RNDN);
    double r = mpfr_get_d(a, MPFR_RNDN);
    mpfr_clears(a, b, (mpfr_ptr)0);
    return r;
}

/* f(x) correctly rounded to prec bits: 24 gives the float result in one rounding (the double
 * holding it converts to float exactly), 53 the double one. */
static double rounded(int prec, int (*f)(mpfr_ptr, mpfr_srcptr, mpfr_rnd_t), double x) {
    mpfr_t a;
    mpfr_init2(a, prec);
    mpfr_set_d(a, x, MPFR_RNDN);
    f(a, a, MPFR_RNDN);
    double r = mpfr_get_d(a, MPFR_RNDN);
    mpfr_clear(a);
    return r;
}

double det_cos(double x) { return rounded(53, mpfr_cos, x); }
double det_sin(double x) { return rounded(53, mpfr_sin, x); }
float det_sinf(float x) { return (float)rounded(24, mpfr_sin, x); }
float det_cosf(float x) { return (float)rounded(24, mpfr_cos, x); }
