/* detmath: elementary functions whose results are the same on every x86-64 CPU.
 *
 * glibc chooses between code paths by CPU feature at run time (an FMA path and an SSE2 path,
 * and libmvec's vector variants), and for expf, sinf and cosf those paths round some inputs
 * differently (measured here by emulating a CPU without FMA/AVX2 through GLIBC_TUNABLES). The
 * element-wise functions below therefore evaluate glibc's double-precision function at the float
 * argument and round to float: for exp, log and tanh that gives the same float on both code paths for
 * every one of the 2^32 float inputs (`make check-libm` re-runs that exhaustive comparison;
 * tests/t-determinism.sh a sample of it). The same trick fails for sine (some float inputs
 * differ), so sine and cosine, and every scalar that sets up a computation once (a RoPE table,
 * a learning-rate schedule), come from MPFR, correctly rounded and so exact by definition. */
#ifndef ATTNCODA_DETMATH_H
#define ATTNCODA_DETMATH_H
#include <math.h>

static inline float det_expf(float x) { return (float)exp((double)x); }
static inline float det_logf(float x) { return (float)log((double)x); }
static inline float det_tanhf(float x) { return (float)tanh((double)x); }
static inline float det_erff(float x) { return erff(x); }   /* glibc has one erff for all CPUs */

float det_sinf(float x);              /* correctly rounded (MPFR): RoPE tables only, ~1 µs a call */
float det_cosf(float x);
double det_pow(double x, double y);   /* x^y, correctly rounded (MPFR) */
double det_cos(double x);             /* cos x, correctly rounded (MPFR) */
double det_sin(double x);             /* sin x, correctly rounded (MPFR): sinusoidal tables */

#endif
