/* Gradient check of train_model's backward pass: the training math compiled in double precision
 * (TRAIN_DOUBLE), the parameters of a tiny GPT-2-style and Llama-style model (with grouped KV
 * heads), each with every position encoding (learned, sinusoidal, rope, rope-ntk, alibi, none),
 * and a BERT-style masked-LM encoder whose loss counts only some positions (target -1 elsewhere),
 * compared against a central finite difference of the loss (up to 40 elements of every tensor).
 * Causal attention runs in blocks of 2 query rows, so T = 5 crosses block edges and ends on a
 * partial block. One TAP line per tensor. */
#define TRAIN_DOUBLE 1
#define TM_ATTN_ROWS 2
#include "train/train_model.c"
#include <stdio.h>

static int check_family(int family, int pos) {
    tm_config c = {.family = family, .n_layer = 2, .d_model = 8, .n_head = 2, .n_kv_head = family == TM_LLAMA ? 1 : 2,
                   .head_dim = 4, .d_ff = 12, .vocab = 11, .ctx = 6, .norm_eps = 1e-5, .rope_theta = 10000,
                   .pos = pos};
    /* a large NTK factor, so that the rotation differs clearly from plain RoPE's */
    if (pos == POS_ROPE_NTK) c.rope_theta = posenc_ntk_theta(10000, 8, c.head_dim);
    char fam[48];
    snprintf(fam, sizeof fam, "%s pos=%s", family == TM_GPT2 ? "gpt2" : family == TM_LLAMA ? "llama" : "bert",
             posenc_name(pos));
    if (tm_config_problem_f64(&c)) {
        printf("not ok - %s: config refused: %s\n", fam, tm_config_problem_f64(&c));
        return 1;
    }
    tm_model m;
    tm_model_init_f64(&m, &c);
    tm_model_randomize_f64(&m, 7);
    /* Larger, uneven weights than the training init so every nonlinearity is exercised. */
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, 11);
    for (size_t i = 0; i < m.n_params; i++) m.w[i] += 0.6 * (gsl_rng_uniform(r) - 0.5);
    int B = 2, T = 5;
    int32_t ids[10], tg[10];
    for (int i = 0; i < B * T; i++) {
        ids[i] = (int32_t)gsl_rng_uniform_int(r, (unsigned long)c.vocab);
        tg[i] = (int32_t)gsl_rng_uniform_int(r, (unsigned long)c.vocab);
        if (family == TM_BERT && i % 3) tg[i] = -1;   /* only a third of the positions count */
    }
    gsl_rng_free(r);
    tm_acts *a = tm_acts_new_f64(&c, B, T);
    tm_forward_f64(&m, a, ids, tg);
    memset(m.g, 0, m.n_params * sizeof *m.g);
    tm_backward_f64(&m, a, ids, tg);
    int bad = 0;
    const double h = 1e-5;
    for (int ti = 0; ti < m.nt; ti++) {
        tm_tensor *t = &m.t[ti];
        double worst = 0, gmax = 0;
        /* Up to 40 elements spread over the tensor (all of the small ones). */
        size_t stride = t->n > 40 ? t->n / 40 : 1;
        for (size_t j = (ti * 7) % stride; j < t->n; j += stride) {
            double *p = m.w + t->off + j, keep = *p;
            *p = keep + h;
            double lp = tm_forward_f64(&m, a, ids, tg);
            *p = keep - h;
            double lm = tm_forward_f64(&m, a, ids, tg);
            *p = keep;
            double num = (lp - lm) / (2 * h), ana = m.g[t->off + j];
            /* The quotient's rounding error is about 1e-16·|loss|/h ≈ 3e-11 absolute, so gradients
             * below 1e-5 (e.g. GPT-2's key bias, exactly 0) are held to 1e-10 absolute instead. */
            double err = fabs(num - ana) / fmax(1e-5, fabs(num) + fabs(ana));
            if (err > worst) worst = err;
            if (fabs(ana) > gmax) gmax = fabs(ana);
        }
        /* Central differences in double: truncation ~h² and rounding ~1e-16/h, so 1e-5 relative
         * is a comfortable but still tight bound; a zero gradient everywhere would be a bug. */
        int ok = worst < 1e-5 && gmax > 0;
        if (!ok) bad++;
        printf("%s - %s %s: max relative error %.2e (max |grad| %.2e)\n", ok ? "ok" : "not ok", fam, t->name,
               worst, gmax);
    }
    tm_acts_free_f64(a);
    tm_model_free_f64(&m);
    return bad;
}

int main(void) {
    omp_set_num_threads(1);   /* tiny matrices: threads would only add barrier waits */
    int bad = 0;
    for (int pos = 0; pos < POS_COUNT; pos++) bad += check_family(TM_GPT2, pos) + check_family(TM_LLAMA, pos);
    bad += check_family(TM_BERT, POS_LEARNED) + check_family(TM_BERT, POS_SINUSOIDAL);
    return bad ? 1 : 0;
}
