/*
 * What an MPI library believes the node layout is, and proof that data crosses between nodes.
 *
 *   cluster_nodes        rank 0 prints:  "world W nodes N ppn P,Q,... hosts H1,H2,..."
 *                                        "sum ok COUNT" (or FAIL and exit 1)
 *
 * Nodes are the groups of MPI_Comm_split_type(MPI_COMM_TYPE_SHARED): the library's own idea of
 * "same node" (hostname and the process manager's node list), not ours. ppn lists each node's
 * size in the order of its lowest world rank; hosts are MPI_Get_processor_name of each node's
 * first rank. The sum is an allreduce of 256 Ki ints (1 MiB) whose every element has a value
 * only exact arithmetic gives, so a message truncated or misrouted on the wire between nodes
 * shows up.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT (256 * 1024)

static int check_sum(int rank, int size)
{
    int *in = malloc(COUNT * sizeof *in), *out = malloc(COUNT * sizeof *out);
    int bad = 0, i;
    for (i = 0; i < COUNT; i++)
        in[i] = (rank + 1) * (i % 1000 + 1);
    MPI_Allreduce(in, out, COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (i = 0; i < COUNT; i++)  /* sum over ranks r of (r + 1) * k = k * size * (size + 1) / 2 */
        bad += out[i] != (i % 1000 + 1) * size * (size + 1) / 2;
    free(in);
    free(out);
    return bad;
}

int main(int argc, char **argv)
{
    int rank, size, local_rank, local_size, is_leader, nodes, bad, total_bad, len, i;
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    MPI_Comm local;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_size(local, &local_size);
    MPI_Get_processor_name(name, &len);

    is_leader = local_rank == 0;
    MPI_Allreduce(&is_leader, &nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    /* each rank contributes its node's size and host if it leads the node, else -1 */
    int mine = is_leader ? local_size : -1;
    int *sizes = malloc(size * sizeof *sizes);
    char *names = malloc((size_t)size * MPI_MAX_PROCESSOR_NAME);
    MPI_Gather(&mine, 1, MPI_INT, sizes, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               MPI_COMM_WORLD);

    bad = check_sum(rank, size);
    MPI_Reduce(&bad, &total_bad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("world %d nodes %d ppn", size, nodes);
        for (i = 0, len = 0; i < size; i++)
            if (sizes[i] > 0) printf("%s%d", len++ ? "," : " ", sizes[i]);
        printf(" hosts");
        for (i = 0, len = 0; i < size; i++)
            if (sizes[i] > 0) printf("%s%s", len++ ? "," : " ", names + (size_t)i * MPI_MAX_PROCESSOR_NAME);
        printf("\n");
        if (total_bad)
            printf("sum FAIL %d wrong elements\n", total_bad);
        else
            printf("sum ok %d\n", COUNT);
    }
    free(sizes);
    free(names);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return rank == 0 && total_bad ? 1 : 0;
}
