/* analysis: code shared by the analysis programs (distance, reversal, cluster, prune-rank,
 * collapse, regime, tabulate): the distance file (docs/ANALYSIS.md), exact fixed-point sums that
 * make sharded runs merge bit-identically, the per-row preparation of the distance hot loop,
 * clustering (average linkage, ARI), classical MDS, Wilson intervals and TSV tables.
 * Errors follow io/h5io.h: nothing here exits; readers return NULL or -1 with err filled
 * ("FILE: what is wrong"), and the program dies with it. */
#ifndef ATTNCODA_ANALYSIS_H
#define ATTNCODA_ANALYSIS_H
#include "io/h5io.h"

#include <stddef.h>
#include <stdio.h>

/* ---- metrics of a distance file (dataset names under distance/, sum/, exact/) ---- */
enum {
    M_COS_KEEP, M_COS_DROP, M_JS_KEEP, M_JS_DROP, M_EUC_KEEP, M_EUC_DROP,
    M_AITCHISON, M_CONTENT_FULL, M_CONTENT_DROP, M_SINK_BALANCE, DIST_NMETRIC
};
extern const char *const dist_metric_names[DIST_NMETRIC];
int dist_metric_index(const char *name);      /* -1 if unknown */

/* ---- exact sums: signed fixed point with 64 fraction bits in a 128-bit integer ----
 * Every per-sequence sum is rounded once to 2^-64 (exact for |x| ≥ 2^-12) and then added in
 * integers, so the total does not depend on the order in which sequences or shards are added. */
typedef __int128 an_fix;
an_fix an_fix_from(double x);
double an_fix_to(an_fix v);
/* Stored as 4 little-endian int32 limbs (limb 0 = least significant 32 bits). */
void an_fix_pack(an_fix v, int limbs[4]);
an_fix an_fix_unpack(const int limbs[4]);

/* ---- per-row preparation for the pairwise kernel (METHODS §2–§3) ----
 * A row's log-probabilities are given sink first (l[0] = ℓ_k) then the D−1 content parts. */
typedef struct {
    double s;          /* sink mass */
    double n2, n2pi;   /* ‖p‖², ‖π‖² */
    double Hp, Hpi;    /* entropy of p and of π (nats) */
    double clrk;       /* clr(p)_k */
    double vk;         /* sink component of the projected clr (≈ 0) */
    double b;          /* sink balance */
} an_rowinfo;
/* Fills the five content vectors (n = D−1 doubles each): P = content p, PI = π, C = clr(p) on
 * content parts, V = clr(p) projected onto the content subspace, W = clr of the dropped,
 * renormalised row. Returns 0, or -1 when a log-probability is not finite. */
int an_row_prep(const double *l, int D, double *P, double *PI, double *C, double *V, double *W,
                an_rowinfo *ri);
/* All DIST_NMETRIC distances between two prepared rows with n content parts. */
void an_pair_kernel(int n, const double *const a[5], const an_rowinfo *ra,
                    const double *const b[5], const an_rowinfo *rb, double out[DIST_NMETRIC]);

/* ---- reading a distance file ---- */
typedef struct {
    char *path;
    char sha[65];
    h5io_id f;
    int N, L, H;
    long long rows;
    int *head_layer, *head_index;   /* original (layer, head) of head a = l·H + h (extract may
                                     * have written a subset: attention datasets layer_index,
                                     * head_index); position a / H is the layer's slot */
    double *head_sink;     /* mean sink mass per head */
    char *model;           /* model identity recorded by distance */
    char *provenance;
} dist_file;
dist_file *dist_open(const char *path, char *err, size_t errlen);
/* distance/<metric> as N×N doubles, checked finite, symmetric and with zero diagonal; NULL with
 * err when it is not. */
double *dist_matrix(dist_file *d, const char *metric, char *err, size_t errlen);
void dist_close(dist_file *d);

/* ---- clustering ---- */
/* Average-linkage (UPGMA) agglomeration of n items into k clusters. Ties between equal
 * distances go to the pair with the smallest (lower, higher) cluster ids, cluster ids being the
 * smallest member index, so the result is deterministic. labels: 0..k−1 numbered by smallest
 * member. */
void an_average_linkage(const double *D, int n, int k, int *labels);
/* The same in two steps: the n−1 merges (cluster ids mi[s] < mj[s]; mj is absorbed), computed
 * once, then labels for any k by replaying the first n−k merges. */
void an_linkage_merges(const double *D, int n, int *mi, int *mj);
void an_linkage_cut(const int *mi, const int *mj, int n, int k, int *labels);
/* Adjusted Rand Index (Hubert & Arabie 1985) of two labelings of n items. 1 when both
 * partitions are trivial and equal. */
double an_ari(const int *x, const int *y, int n);
/* Classical (Torgerson) MDS to `dim` dimensions: coordinates n×dim (row-major). Each axis's
 * sign is fixed so that its largest-magnitude coordinate is positive. Returns eigenvalues in ev. */
void an_mds(const double *D, int n, int dim, double *coords, double *ev);

/* Wilson score interval for k successes in n trials at normal quantile z. */
void an_wilson(long k, long n, double z, double *lo, double *hi);

/* ---- TSV tables ---- */
/* "# provenance: <json>" then the header line. */
void tsv_begin(FILE *out, const char *prov_json, const char *header);
typedef struct {
    char *path;
    int ncol, nrow;
    char **col;        /* ncol names */
    char ***cell;      /* nrow × ncol strings */
    int *line;         /* source line of each row (1-based) */
} tsv_table;
/* Reads "# " comment lines, one header line, then rows with exactly ncol tab-separated fields.
 * NULL with err on a NUL byte, a missing header or a ragged row. */
tsv_table *tsv_read(const char *path, char *err, size_t errlen);
int tsv_col(const tsv_table *t, const char *name);   /* -1 if absent */
void tsv_free(tsv_table *t);

/* Parses a comma list of doubles ("0.1,0.2") given to option opt; returns the count, or -1 with
 * err holding the usage error (without the program name: die_usage("%s", err)). */
int an_parse_list(const char *opt, const char *s, double *out, int max, char *err, size_t errlen);
/* True when the file starts with the HDF5 signature. */
int an_is_hdf5(const char *path);
#endif
