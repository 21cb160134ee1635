/*
 * colltune-selftest under SimGrid SMPI 3.32: the cases its collectives cannot take. Each is
 * named with the SimGrid source line that makes it so (v3.32), and said once per launch as a
 * library finding: a case the library's own call cannot take is not run; a mock-up that runs
 * into such a line in some case of a class is refused in every case of the class (the class,
 * not the case, is what the interposer serves by), so that its proof never covers it. Other
 * libraries: no gaps.
 */
#include "st.h"

#include <stdio.h>
#include <string.h>

#ifdef COLLTUNE_ABI_FAMILY_SMPI

/* SMPI's MPICH-family MPI_Reduce (reduce__mpich, src/smpi/colls/smpi_mpich_selector.cpp:367-368)
 * is reduce__mvapich2_two_level for a commutative op. When one node holds the whole
 * communicator and the message is at most MV2_INTRA_SHMEM_REDUCE_MSG (2048 bytes), a rank that
 * is not its node's leader (the lowest process id of the communicator there,
 * smpi_comm.cpp:376-394) sends from its sendbuf (reduce-mvapich-two-level.cpp:149), which is
 * MPI_IN_PLACE on a root: the simulation segfaults. */
#define ST_REDUCE_IN_PLACE "SMPI 3.32's MPI_Reduce with MPI_IN_PLACE on a root that is not the " \
    "lowest rank of its node sends from MPI_IN_PLACE and crashes the simulation (one node, " \
    "commutative op, at most 2048 bytes: src/smpi/colls/reduce/reduce-mvapich-two-level.cpp:149)"

/* smpi_pmpi_coll.cpp:845-853: in-place MPI_Alltoallv copies recvbuf's
 * (recvdispls[i] + recvcounts[i]) * size bytes, not extents: a datatype with gaps sends what
 * lies past the copy. */
#define ST_ALLTOALLV_IN_PLACE "SMPI 3.32's in-place MPI_Alltoallv copies the receive buffer by " \
    "the datatype's size, not its extent (src/smpi/bindings/smpi_pmpi_coll.cpp:851): a datatype " \
    "with gaps sends bytes past the copy"

/* src/smpi/colls/smpi_coll.cpp:391 (MPI_Scan) and :453 (MPI_Exscan), the non-commutative
 * branch: `if (index < rank)` tests the index left over from posting the requests (size - 1),
 * not `other`, so nothing is combined: Scan returns the own input, Exscan leaves recvbuf. */
#define ST_SCAN_NONCOMMUTATIVE "SMPI 3.32's MPI_Scan and MPI_Exscan combine nothing for a " \
    "non-commutative op (src/smpi/colls/smpi_coll.cpp:391 and :453 test a stale index): no " \
    "reference to prove against"

/* The MPICH family's MPI_Alltoall (src/smpi/colls/smpi_mpich_selector.cpp:180-183) takes
 * alltoall__pair for blocks of at least 32 KiB on an odd number of ranks, which throws for a
 * size that is not a power of two (alltoall-pair.cpp:82) and ends the simulation. */
#define ST_ALLTOALL_ODD "SMPI 3.32's MPICH-family MPI_Alltoall picks the pair algorithm for " \
    "blocks of 32 KiB or more on an odd number of ranks, which aborts the simulation for a size " \
    "that is not a power of two (src/smpi/colls/smpi_mpich_selector.cpp:180-181, " \
    "src/smpi/colls/alltoall/alltoall-pair.cpp:82)"

static int st_leader[4] = {-1, -1, -1, -1};  /* per communicator slot, -1: spans nodes */
static int st_said_reduce, st_said_alltoallv, st_said_scan, st_said_alltoall;

/* The comm rank SMPI makes its node's leader, if the communicator lies on one node: the rank of
 * the lowest process id (world rank). */
void st_smpi_init(const st_comm *comm)
{
    MPI_Comm node;
    int node_size = 0;
    if (PMPI_Comm_split_type(comm->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node)
        != MPI_SUCCESS)
        return;
    PMPI_Comm_size(node, &node_size);
    PMPI_Comm_free(&node);
    int one_node = node_size == comm->size, world_rank, lowest = 0;
    PMPI_Allreduce(MPI_IN_PLACE, &one_node, 1, MPI_INT, MPI_MIN, comm->comm);
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    int me[2] = {world_rank, comm->rank}, min[2];
    PMPI_Allreduce(me, min, 1, MPI_2INT, MPI_MINLOC, comm->comm);
    lowest = min[1];
    if (comm->slot >= 0 && comm->slot < 4) st_leader[comm->slot] = one_node ? lowest : -1;
}

static void st_say(int *said, const char *reason)
{
    if (*said || st_world_rank != 0) return;
    *said = 1;
    printf("{\"type\":\"library_finding\",\"what\":\"a case SMPI cannot take\",\"detail\":\"%s\"}\n",
           reason);
    fflush(stdout);
}

static int st_reduce_crashes(const st_case *c)
{
    int leader = c->comm->slot >= 0 && c->comm->slot < 4 ? st_leader[c->comm->slot] : -1;
    return c->coll == CT_COLL_REDUCE && c->in_place && leader >= 0 && c->root != leader
           && c->op != NULL && c->op->commutative
           && (int64_t)c->count * c->type->extent <= 2048;
}

const char *st_smpi_library_gap(const st_case *c)
{
    if (st_reduce_crashes(c)) {
        st_say(&st_said_reduce, ST_REDUCE_IN_PLACE);
        return ST_REDUCE_IN_PLACE;
    }
    if ((c->coll == CT_COLL_SCAN || c->coll == CT_COLL_EXSCAN) && c->op != NULL
        && !c->op->commutative && c->comm->size > 1) {
        st_say(&st_said_scan, ST_SCAN_NONCOMMUTATIVE);
        return ST_SCAN_NONCOMMUTATIVE;
    }
    if (c->coll == CT_COLL_ALLTOALL && c->comm->size % 2 == 1
        && (int64_t)c->count * c->type->size >= 32768) {
        st_say(&st_said_alltoall, ST_ALLTOALL_ODD);
        return ST_ALLTOALL_ODD;
    }
    return NULL;
}

const char *st_smpi_member_gap(int variant, const st_case *c)
{
    const char *name = colltune_variant_name(variant);
    const char *reason = NULL;
    int *said = NULL;
    int64_t bytes = (int64_t)c->count * c->type->size;
    /* In-place MPI_Reduce (MPI_BOR) of p blocks on the gather's root, any root: up to 2048
     * bytes in all wherever the blocks are below 2 KiB. */
    if (strcmp(name, "gather_as_reduce") == 0 && bytes < 2048)
        reason = ST_REDUCE_IN_PLACE, said = &st_said_reduce;
    /* In-place MPI_Reduce on rank 0, which is not its node's leader where a communicator
     * orders its ranks otherwise than the world (the matrix's split): commutative ops, the
     * bands that reach down to 2048 bytes. */
    else if (strcmp(name, "allreduce_as_reduce_bcast") == 0 && c->in_place && c->op != NULL
             && c->op->commutative && bytes < 65536)
        reason = ST_REDUCE_IN_PLACE, said = &st_said_reduce;
    else if (strcmp(name, "alltoall_as_alltoallv") == 0 && c->in_place)
        reason = ST_ALLTOALLV_IN_PLACE, said = &st_said_alltoallv;
    /* MPI_Alltoall of the whole message per block: the classes from 2 KiB on hold 32 KiB. */
    else if (strcmp(name, "allgather_as_alltoall") == 0 && (int64_t)c->count * c->type->size >= 2048)
        reason = ST_ALLTOALL_ODD, said = &st_said_alltoall;
    if (reason != NULL) st_say(said, reason);
    return reason;
}

#else

void st_smpi_init(const st_comm *comm)
{
    (void)comm;
}

const char *st_smpi_library_gap(const st_case *c)
{
    (void)c;
    return NULL;
}

const char *st_smpi_member_gap(int variant, const st_case *c)
{
    (void)variant, (void)c;
    return NULL;
}

#endif
