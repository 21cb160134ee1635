/*
 * Communicators of different node layouts in one job, for per-layout profile rules
 * (docs/profile.md, "Layouts"): MPI_Allreduce of `count` ints (argv[1] if given, else 1000;
 * with argv[2] "scatter", MPI_Scatter of `count` ints to each rank from rank 0 instead)
 *
 *   5 times on MPI_COMM_WORLD,
 *   4 times on each node's communicator (MPI_Comm_split_type shared: 1 node x its ranks),
 *   3 times on the communicator of the ranks with the same rank on their node (one per node),
 *   2 times on the communicator of world ranks 0, 1, 2 (on 2 nodes x 2: 2 + 1, not uniform),
 *   1 time on a dup of MPI_COMM_WORLD (made after the world's calls: it inherits its layout),
 *
 * each result checked exactly on every rank; rank 0 prints "ok 15" or "FAIL ..." (exit 1). The
 * check's own reduction calls PMPI_Allreduce, so the interposer's counting table on rank 0 shows
 * the 15 calls above and nothing else.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int count = 1000;

/* `times` allreduces on `comm`; the number of wrong elements seen. */
static int sums(MPI_Comm comm, int times)
{
    int rank, size, bad = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *in = malloc(count * sizeof *in), *out = malloc(count * sizeof *out);
    for (int t = 0; t < times; t++) {
        for (int i = 0; i < count; i++) {
            in[i] = (rank + 1) * (i + t + 1);
            out[i] = -1;
        }
        MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, comm);
        for (int i = 0; i < count; i++)   /* sum over ranks r of (r + 1) * k */
            bad += out[i] != (i + t + 1) * size * (size + 1) / 2;
    }
    free(in);
    free(out);
    return bad;
}

/* `times` scatters from rank 0 on `comm`; the number of wrong elements seen. */
static int scatters(MPI_Comm comm, int times)
{
    int rank, size, bad = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *all = rank == 0 ? malloc((size_t)count * size * sizeof *all) : NULL;
    int *mine = malloc(count * sizeof *mine);
    for (int t = 0; t < times; t++) {
        for (int i = 0; rank == 0 && i < count * size; i++)
            all[i] = (i / count + 1) * (i % count + t + 1);
        for (int i = 0; i < count; i++)
            mine[i] = -1;
        MPI_Scatter(all, count, MPI_INT, mine, count, MPI_INT, 0, comm);
        for (int i = 0; i < count; i++)
            bad += mine[i] != (rank + 1) * (i + t + 1);
    }
    free(all);
    free(mine);
    return bad;
}

int main(int argc, char **argv)
{
    int rank, local_rank, bad = 0, total;
    MPI_Comm node, cross, three, dup;
    MPI_Init(&argc, &argv);
    if (argc > 1)
        count = atoi(argv[1]);
    int (*calls)(MPI_Comm, int) = argc > 2 && strcmp(argv[2], "scatter") == 0 ? scatters : sums;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_split(MPI_COMM_WORLD, local_rank, rank, &cross);
    MPI_Comm_split(MPI_COMM_WORLD, rank < 3 ? 0 : MPI_UNDEFINED, rank, &three);
    bad += calls(MPI_COMM_WORLD, 5);
    bad += calls(node, 4);
    bad += calls(cross, 3);
    if (three != MPI_COMM_NULL)
        bad += calls(three, 2);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    bad += calls(dup, 1);
    PMPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0)
            printf("ok 15\n");
        else
            printf("FAIL %d wrong elements\n", total);
    }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&cross);
    if (three != MPI_COMM_NULL)
        MPI_Comm_free(&three);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return total != 0;
}
