/*
 * Stopping rules for the number of repetitions (the NREP problem, PGMPI section 4.2):
 * RSE of the mean, COV of the last w running means, COV of the last w running medians (all
 * selected rules must hold), and PGMPITuneLib's rule (measure for at least the 1-byte reference time).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

const char *ct_stop_state_name(ct_stop_state state)
{
    switch (state) {
    case CT_STOP_RUNNING: return "running";
    case CT_STOP_CONVERGED: return "converged";
    case CT_STOP_MAX_REPS: return "max_reps";
    case CT_STOP_TIME_BUDGET: return "time_budget";
    }
    return "unknown";
}

int ct_stop_parse_methods(const char *text, unsigned *methods)
{
    static const struct { const char *name; unsigned bit; } names[] = {
        {"rse", CT_STOP_RSE}, {"cov_mean", CT_STOP_COV_MEAN},
        {"cov_median", CT_STOP_COV_MEDIAN}, {"nrep1", CT_STOP_NREP1}, {"fixed", 0u},
    };
    unsigned bits = 0;
    const char *p = text;
    while (*p) {
        size_t len = strcspn(p, ",");
        int found = 0;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            if (strlen(names[i].name) == len && strncmp(p, names[i].name, len) == 0) {
                bits |= names[i].bit;
                found = 1;
            }
        }
        if (!found)
            return -1;
        p += len;
        if (*p == ',')
            p++;
    }
    *methods = bits;
    return 0;
}

void ct_series_init(ct_series *s)
{
    memset(s, 0, sizeof *s);
    s->min = INFINITY;
}

void ct_series_free(ct_series *s)
{
    free(s->sorted);
    free(s->running_mean);
    free(s->running_median);
    ct_series_init(s);
}

static int grow(ct_series *s)
{
    size_t cap = s->cap ? 2 * s->cap : 64;
    double *a = realloc(s->sorted, cap * sizeof *a);
    if (!a)
        return MPI_ERR_NO_MEM;
    s->sorted = a;
    a = realloc(s->running_mean, cap * sizeof *a);
    if (!a)
        return MPI_ERR_NO_MEM;
    s->running_mean = a;
    a = realloc(s->running_median, cap * sizeof *a);
    if (!a)
        return MPI_ERR_NO_MEM;
    s->running_median = a;
    s->cap = cap;
    return MPI_SUCCESS;
}

static double sorted_median(const double *x, size_t n)
{
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

int ct_series_push(ct_series *s, double value)
{
    if (s->n == s->cap) {
        int rc = grow(s);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    /* Insertion keeps the median O(n) per sample instead of a sort per check. */
    size_t pos = s->n;
    while (pos > 0 && s->sorted[pos - 1] > value) {
        s->sorted[pos] = s->sorted[pos - 1];
        pos--;
    }
    s->sorted[pos] = value;
    s->n++;
    double delta = value - s->mean;
    s->mean += delta / (double)s->n;
    s->m2 += delta * (value - s->mean);
    if (value < s->min)
        s->min = value;
    s->running_mean[s->n - 1] = s->mean;
    s->running_median[s->n - 1] = sorted_median(s->sorted, s->n);
    return MPI_SUCCESS;
}

static double series_rse(const ct_series *s)
{
    if (s->n < 2 || s->mean <= 0.0)
        return NAN;
    double sd = sqrt(s->m2 / (double)(s->n - 1));
    return sd / sqrt((double)s->n) / s->mean;
}

/* Coefficient of variation (sample standard deviation / mean) of the last w values. */
static double window_cov(const double *x, size_t n, int w)
{
    if (w < 2 || n < (size_t)w)
        return NAN;
    const double *v = x + n - (size_t)w;
    double mean = 0.0;
    for (int i = 0; i < w; i++)
        mean += v[i];
    mean /= w;
    if (mean <= 0.0)
        return NAN;
    double ss = 0.0;
    for (int i = 0; i < w; i++)
        ss += (v[i] - mean) * (v[i] - mean);
    return sqrt(ss / (w - 1)) / mean;
}

/* Seed 000: after the pilot (b1 samples, b2 more if their RSE is above nrep1_rse), the
 * repetitions are max(ceil(t1 / min latency), k). */
static void nrep1_decide(const ct_stop_settings *st, ct_series *s)
{
    if (s->nrep_target > 0 || s->n < (size_t)st->b1)
        return;
    double rse = series_rse(s);
    int pilot_done = s->n >= (size_t)(st->b1 + st->b2) || (!isnan(rse) && rse <= st->nrep1_rse)
                     || st->b2 <= 0;
    if (!pilot_done)
        return;
    double need = s->min > 0.0 ? ceil(st->ref_time_s / s->min) : (double)st->k;
    long target = need > (double)st->max_reps ? st->max_reps : (long)need;
    s->nrep_target = target < st->k ? st->k : target;
}

static int below(double value, double threshold)
{
    return !isnan(value) && value <= threshold;
}

int ct_stop_satisfied(const ct_stop_settings *st, ct_series *s, ct_stop_stats *stats)
{
    stats->rse = series_rse(s);
    stats->cov_mean = window_cov(s->running_mean, s->n, st->cov_mean_window);
    stats->cov_median = window_cov(s->running_median, s->n, st->cov_median_window);
    if (st->methods & CT_STOP_NREP1)
        nrep1_decide(st, s);
    stats->nrep_target = s->nrep_target;
    if (st->methods == 0)
        return 0; /* fixed: only max_reps or the time budget end the job */
    if (s->n < (size_t)st->min_reps && !(st->methods & CT_STOP_NREP1))
        return 0;
    int ok = 1;
    if (st->methods & CT_STOP_RSE)
        ok &= below(stats->rse, st->rse_threshold);
    if (st->methods & CT_STOP_COV_MEAN)
        ok &= below(stats->cov_mean, st->cov_mean_threshold);
    if (st->methods & CT_STOP_COV_MEDIAN)
        ok &= below(stats->cov_median, st->cov_median_threshold);
    if (st->methods & CT_STOP_NREP1)
        ok &= s->nrep_target > 0 && s->n >= (size_t)s->nrep_target;
    return ok;
}
