/*
 * Nonblocking and persistent collectives whose algorithm shows in their bits (issue 33): an
 * MPI_Iallreduce of doubles whose sum rounds differently in every combination order, one of ints
 * (exact in any order) and an MPI_Ibarrier, all pending at once and completed by one MPI_Waitall;
 * then the same two sums as persistent requests (MPI_Allreduce_init), started together twice by
 * MPI_Startall and completed by MPI_Waitall. Rank 0 prints, per form, an FNV-1a hash of the
 * double sums' bytes and the sum of the int results: a forced algorithm of that form that serves
 * the double sum changes the hash, never the int sum.
 *
 *   ct_nbmember [-n COUNT]     default 1000 elements
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define HAVE_PERSISTENT 1
#else
#define HAVE_PERSISTENT 0
#endif

static int rank, size;

static void report(const char *form, const double *out, const int *iout, int n)
{
    unsigned long long hash = 14695981039346656037ull;
    const unsigned char *bytes = (const unsigned char *)out;
    for (size_t i = 0; i < n * sizeof *out; i++)
        hash = (hash ^ bytes[i]) * 1099511628211ull;
    long long isum = 0;
    for (int i = 0; i < n; i++)
        isum += iout[i];
    if (rank == 0)
        printf("%s: double hash %016llx, int sum %lld\n", form, hash, isum);
}

int main(int argc, char **argv)
{
    int n = 1000;
    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "-n") == 0)
            n = atoi(argv[++i]);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    int *iin = malloc(n * sizeof *iin), *iout = malloc(n * sizeof *iout);
    for (int i = 0; i < n; i++) {   /* magnitudes 16 orders apart: every order rounds its own way */
        in[i] = (rank + 1) * 1e16 / (i + 1) + 1.0 / (rank + 3);
        iin[i] = rank * n + i;
    }
    MPI_Request reqs[3];
    MPI_Iallreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &reqs[0]);
    MPI_Iallreduce(iin, iout, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[1]);
    MPI_Ibarrier(MPI_COMM_WORLD, &reqs[2]);
    MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE);
    report("nbmember", out, iout, n);
#if HAVE_PERSISTENT
    memset(out, 0, n * sizeof *out);
    memset(iout, 0, n * sizeof *iout);
    MPI_Allreduce_init(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]);
    MPI_Allreduce_init(iin, iout, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]);
    for (int start = 0; start < 2; start++) {
        MPI_Startall(2, reqs);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    }
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
    report("persistent", out, iout, n);
#endif
    free(in), free(out), free(iin), free(iout);
    MPI_Finalize();
    return 0;
}
