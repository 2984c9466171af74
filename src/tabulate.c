/* tabulate: the analysis TSV outputs as Markdown or LaTeX tables, and --check, which compares
 * every TSV of an expected directory with a results directory under per-column tolerances. */
#include "attn/analysis.h"
#include "cli/cli.h"
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *usage =
    "Usage: tabulate [--md|--latex] [--digits N] [--caption TEXT] [TABLE.tsv|-]...\n"
    "       tabulate --check EXPECTED_DIR RESULTS_DIR [--tolerances FILE]\n"
    "Tables: '# ' comment lines, one header line, tab-separated rows (every analysis program's\n"
    "stdout). --md (default) prints a Markdown table per input, --latex a tabular environment.\n"
    "--digits N rewrites numeric cells with N significant digits (default: cells as written).\n"
    "--check compares every *.tsv under EXPECTED_DIR (recursively) with the file of the same\n"
    "relative path under RESULTS_DIR: same header, same number of rows, text cells equal, numeric\n"
    "cells within tolerance (|got - expected| <= abs or <= rel * |expected|). Comment lines are\n"
    "ignored. Prints 'file:row:column expected X got Y (|D| = ...)' per mismatch (row = data row,\n"
    "1-based), missing files/rows/columns, and a summary line; exit 1 on any mismatch.\n"
    "Tolerance FILE: lines 'FILE_GLOB COLUMN_GLOB ABS REL' (whitespace-separated, '#' comments);\n"
    "the first line whose globs match the file's relative path (or its file name) and the column\n"
    "name applies; "
    "default abs 0, rel 1e-9.\n"
    "Memory: one table at a time.\n";

/* ---------------- formatting ---------------- */
static int is_number(const char *s, double *v) {
    char *end;
    if (!*s) return 0;
    *v = strtod(s, &end);
    return *end == 0;
}

static const char *fmt_cell(const char *s, int digits, char *buf, size_t n) {
    double v;
    if (digits > 0 && is_number(s, &v) && strchr(s, '.')) {
        snprintf(buf, n, "%.*g", digits, v);
        return buf;
    }
    return s;
}

static void latex_escape(const char *s) {
    for (; *s; s++) {
        if (strchr("&%$#_{}", *s)) putchar('\\');
        if (*s == '~' || *s == '^' || *s == '\\') { printf("\\text%s{}", *s == '~' ? "asciitilde" : *s == '^' ? "asciicircum" : "backslash"); continue; }
        putchar(*s);
    }
}

static void print_md(const tsv_table *t, int digits, const char *caption) {
    char buf[64];
    if (caption) printf("**%s**\n\n", caption);
    printf("|");
    for (int c = 0; c < t->ncol; c++) printf(" %s |", t->col[c]);
    printf("\n|");
    for (int c = 0; c < t->ncol; c++) {
        double v;
        int num = t->nrow > 0 && is_number(t->cell[0][c], &v);
        printf("%s|", num ? "---:" : "---");
    }
    printf("\n");
    for (int r = 0; r < t->nrow; r++) {
        printf("|");
        for (int c = 0; c < t->ncol; c++) printf(" %s |", fmt_cell(t->cell[r][c], digits, buf, sizeof buf));
        printf("\n");
    }
    printf("\n");
}

static void print_latex(const tsv_table *t, int digits, const char *caption) {
    char buf[64];
    printf("\\begin{table}[ht]\n\\centering\n");
    if (caption) { printf("\\caption{"); latex_escape(caption); printf("}\n"); }
    printf("\\begin{tabular}{");
    for (int c = 0; c < t->ncol; c++) {
        double v;
        putchar(t->nrow > 0 && is_number(t->cell[0][c], &v) ? 'r' : 'l');
    }
    printf("}\n\\hline\n");
    for (int c = 0; c < t->ncol; c++) { if (c) printf(" & "); latex_escape(t->col[c]); }
    printf(" \\\\\n\\hline\n");
    for (int r = 0; r < t->nrow; r++) {
        for (int c = 0; c < t->ncol; c++) { if (c) printf(" & "); latex_escape(fmt_cell(t->cell[r][c], digits, buf, sizeof buf)); }
        printf(" \\\\\n");
    }
    printf("\\hline\n\\end{tabular}\n\\end{table}\n\n");
}

/* ---------------- check ---------------- */
typedef struct { char *fglob, *cglob; double abs, rel; } tol;
typedef struct { tol *t; int n; } tols;
typedef struct { long files, values, bad; } tally;

static tols read_tols(const char *path) {
    tols ts = {0};
    if (!path) return ts;
    size_t len;
    char *buf = cli_slurp_text(path, &len), *save = NULL;
    int lineno = 0;
    for (char *ln = strtok_r(buf, "\n", &save); ln; ln = strtok_r(NULL, "\n", &save)) {
        lineno++;
        char f[1024], c[256], a[64], r[64], extra[8];
        if (ln[strspn(ln, " \t\r")] == '#' || ln[strspn(ln, " \t\r")] == 0) continue;
        if (sscanf(ln, "%1023s %255s %63s %63s %7s", f, c, a, r, extra) != 4)
            die_data(path, "line %d: want 'FILE_GLOB COLUMN_GLOB ABS REL'", lineno);
        char *e1, *e2;
        double av = strtod(a, &e1), rv = strtod(r, &e2);
        if (*e1 || *e2 || !(av >= 0) || !(rv >= 0)) die_data(path, "line %d: ABS and REL must be numbers >= 0", lineno);
        ts.t = xrealloc(ts.t, (ts.n + 1) * sizeof *ts.t);
        ts.t[ts.n++] = (tol){xstrdup(f), xstrdup(c), av, rv};
    }
    free(buf);
    return ts;
}

/* A file glob matches the relative path or its last component ("reversal-*.tsv" also covers
 * "tables/reversal-gpt2.tsv"). */
static tol find_tol(const tols *ts, const char *rel, const char *col) {
    const char *base = strrchr(rel, '/');
    base = base ? base + 1 : rel;
    for (int i = 0; i < ts->n; i++)
        if ((fnmatch(ts->t[i].fglob, rel, 0) == 0 || fnmatch(ts->t[i].fglob, base, 0) == 0) &&
            fnmatch(ts->t[i].cglob, col, 0) == 0)
            return ts->t[i];
    return (tol){NULL, NULL, 0, 1e-9};
}

static void compare_cell(const char *rel, int row, const char *col, const char *e, const char *g, const tols *ts, tally *ty) {
    double ev, gv;
    ty->values++;
    if (strcmp(e, g) == 0) return;
    if (is_number(e, &ev) && is_number(g, &gv)) {
        tol t = find_tol(ts, rel, col);
        double d = fabs(gv - ev);
        if (isnan(ev) && isnan(gv)) return;
        if (d <= t.abs || d <= t.rel * fabs(ev)) return;
        printf("%s:%d:%s expected %s got %s (|Δ| = %.3g, rel %.3g)\n", rel, row, col, e, g, d, ev != 0 ? d / fabs(ev) : INFINITY);
    } else {
        printf("%s:%d:%s expected '%s' got '%s'\n", rel, row, col, e, g);
    }
    ty->bad++;
}

static void compare_file(const char *edir, const char *rdir, const char *rel, const tols *ts, tally *ty) {
    char err[2048];
    char ep[4096], rp[4096];
    snprintf(ep, sizeof ep, "%s/%s", edir, rel);
    snprintf(rp, sizeof rp, "%s/%s", rdir, rel);
    ty->files++;
    struct stat st;
    if (stat(rp, &st) != 0) { printf("%s: missing in %s\n", rel, rdir); ty->bad++; return; }
    tsv_table *e = tsv_read(ep, err, sizeof err), *g = e ? tsv_read(rp, err, sizeof err) : NULL;
    if (!g) die_data(NULL, "%s", err);
    int *map = xmalloc((e->ncol + 1) * sizeof *map);
    for (int c = 0; c < e->ncol; c++) {
        map[c] = tsv_col(g, e->col[c]);
        if (map[c] < 0) { printf("%s: column '%s' missing\n", rel, e->col[c]); ty->bad++; }
    }
    for (int r = 0; r < e->nrow; r++) {
        if (r >= g->nrow) { printf("%s:%d: row missing (expected %d rows, got %d)\n", rel, r + 1, e->nrow, g->nrow); ty->bad++; break; }
        for (int c = 0; c < e->ncol; c++)
            if (map[c] >= 0) compare_cell(rel, r + 1, e->col[c], e->cell[r][c], g->cell[r][map[c]], ts, ty);
    }
    if (g->nrow > e->nrow) { printf("%s:%d: extra rows (expected %d rows, got %d)\n", rel, e->nrow + 1, e->nrow, g->nrow); ty->bad++; }
    free(map);
    tsv_free(e);
    tsv_free(g);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Relative paths of every *.tsv under dir/sub, sorted, appended to *list. */
static void walk(const char *dir, const char *sub, char ***list, int *n) {
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", dir, *sub ? "/" : "", sub);
    DIR *d = opendir(path);
    if (!d) die_data(path, "cannot open directory: %s", strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char rel[4096], full[8192];
        snprintf(rel, sizeof rel, "%s%s%s", sub, *sub ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", dir, rel);
        struct stat st;
        if (stat(full, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) walk(dir, rel, list, n);
        else if (strlen(rel) > 4 && strcmp(rel + strlen(rel) - 4, ".tsv") == 0) {
            *list = xrealloc(*list, (*n + 1) * sizeof **list);
            (*list)[(*n)++] = xstrdup(rel);
        }
    }
    closedir(d);
}

static int run_check(const char *edir, const char *rdir, const char *tolfile) {
    struct stat st;
    if (stat(rdir, &st) != 0 || !S_ISDIR(st.st_mode)) die_data(rdir, "not a directory");
    tols ts = read_tols(tolfile);
    char **list = NULL;
    int n = 0;
    walk(edir, "", &list, &n);
    if (n == 0) die_data(edir, "no *.tsv files to compare");
    qsort(list, n, sizeof *list, cmp_str);
    tally ty = {0, 0, 0};
    for (int i = 0; i < n; i++) compare_file(edir, rdir, list[i], &ts, &ty), free(list[i]);
    free(list);
    printf("# %ld files, %ld values compared, %ld mismatches\n", ty.files, ty.values, ty.bad);
    for (int i = 0; i < ts.n; i++) free(ts.t[i].fglob), free(ts.t[i].cglob);
    free(ts.t);
    return ty.bad ? 1 : 0;
}

int main(int argc, char **argv) {
    char err[2048];
    cli_init("tabulate");
    int latex = 0, digits = 0, check = 0;
    const char *tolfile = NULL, *caption = NULL;
    static struct option lo[] = {{"md", no_argument, 0, 'm'}, {"latex", no_argument, 0, 'l'},
                                 {"digits", required_argument, 0, 'd'}, {"caption", required_argument, 0, 'c'},
                                 {"check", no_argument, 0, 'C'}, {"tolerances", required_argument, 0, 't'},
                                 {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'}, {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (c) {
        case 'm': latex = 0; break;
        case 'l': latex = 1; break;
        case 'd': digits = (int)cli_parse_long("digits", optarg, 1, 17); break;
        case 'c': caption = optarg; break;
        case 'C': check = 1; break;
        case 't': tolfile = optarg; break;
        case 'h': fputs(usage, stdout); return 0;
        case 'V': cli_print_version(); return 0;
        default: cli_bad_option(argv, lo, "h");
        }
    }
    if (check) {
        cli_operands(argc, argv, 2, 2, "EXPECTED_DIR and RESULTS_DIR after --check");
        return run_check(argv[optind], argv[optind + 1], tolfile);
    }
    if (tolfile) die_usage("--tolerances only goes with --check");
    int nin = argc - optind;
    for (int i = 0; i < (nin ? nin : 1); i++) {
        tsv_table *t = tsv_read(nin ? argv[optind + i] : "-", err, sizeof err);
        if (!t) die_data(NULL, "%s", err);
        if (latex) print_latex(t, digits, caption);
        else print_md(t, digits, caption);
        tsv_free(t);
    }
    return 0;
}
