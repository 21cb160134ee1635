/*
 * The hand-fused confirmation of advise's reduce_bcast pattern (issue 23): preloaded into an
 * application (alone, without libcolltune), this shim serves each MPI_Reduce that an MPI_Bcast of
 * its result from the same root directly follows as one MPI_Allreduce, and that MPI_Bcast from the
 * Allreduce's result. The question it answers: what does the application gain when its source
 * makes that change? Built by benchmarks/advise/fuse.py with mpicc.openmpi:
 *
 *   mpicc -shared -fPIC -O2 fuse_shim.c -o libfuse.so
 *
 * Every MPI_Reduce on a predefined datatype becomes an MPI_Allreduce (all ranks decide alike: the
 * datatype is uniform and predefined-ness is a property of the handle's signature here), the
 * non-roots keeping the result in the shim's buffer. The next MPI_Bcast is served from it if it
 * has the reduce's communicator, root, count and datatype; at the root its buffer must hold the
 * reduce's result unchanged, which the root checks (address and bytes) and, if not, aborts the run
 * with a message: the non-roots have already taken the result without communication, so no
 * correct continuation exists. Any other MPI_Bcast disarms the shim and goes to the library.
 * Calls between the two that the shim does not see (it wraps only these two) cannot break this:
 * the root's check catches any change to the broadcast data.
 *
 * COLLTUNE_FUSE_REPORT=1 prints per rank how many pairs were fused at MPI_Finalize.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fuse_state {
    int armed;
    MPI_Comm comm;
    int root, count;
    MPI_Datatype type;
    const void *result;     /* the root's result buffer */
    size_t bytes;
};
static struct fuse_state fuse;
static char *stash;         /* the Allreduce's result (non-roots) or a copy of it (root) */
static size_t stash_size;
static char *staging;       /* the root's input when it reduced in place */
static size_t staging_size;
static unsigned long long fused, reduces;

static int grow(char **buf, size_t *size, size_t want)
{
    if (want <= *size)
        return 1;
    char *b = realloc(*buf, want);
    if (b == NULL)
        return 0;
    *buf = b;
    *size = want;
    return 1;
}

/* Contiguous predefined datatypes only: their bytes are count * size, copied with memcpy. The
 * last type's answer is kept (a predefined type is never freed, so its handle keeps its
 * meaning; a derived one is asked again): the shim's own cost is on the fused run's critical
 * path, and the measurement is of what fusing saves, not of the shim. */
static int fusable_type(MPI_Datatype type, size_t *elem)
{
    static MPI_Datatype last = MPI_DATATYPE_NULL;
    static size_t last_elem;
    if (type == last && type != MPI_DATATYPE_NULL) {
        *elem = last_elem;
        return 1;
    }
    int ni, na, nd, combiner, size;
    MPI_Aint lb, extent;
    if (type == MPI_DATATYPE_NULL || PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) != MPI_SUCCESS
        || combiner != MPI_COMBINER_NAMED || PMPI_Type_size(type, &size) != MPI_SUCCESS
        || PMPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS || lb != 0 || extent != size)
        return 0;
    last = type;
    last_elem = *elem = (size_t)size;
    return 1;
}

/* This rank in `comm`, the last communicator's kept (a communicator freed and its handle reused
 * by a new one would be mistaken: the shim is for applications that reduce on one communicator
 * throughout, as ExaML does on MPI_COMM_WORLD). */
static int rank_in(MPI_Comm comm, int *rank)
{
    static MPI_Comm last = MPI_COMM_NULL;
    static int last_rank;
    if (comm != last) {
        if (PMPI_Comm_rank(comm, &last_rank) != MPI_SUCCESS)
            return 0;
        last = comm;
    }
    *rank = last_rank;
    return 1;
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
               int root, MPI_Comm comm)
{
    size_t elem;
    int rank;
    fuse.armed = 0;
    if (count <= 0 || !fusable_type(type, &elem) || !rank_in(comm, &rank))
        return PMPI_Reduce(sendbuf, recvbuf, count, type, op, root, comm);
    size_t bytes = (size_t)count * elem;
    if (!grow(&stash, &stash_size, bytes) || !grow(&staging, &staging_size, bytes)) {
        fprintf(stderr, "fuse_shim: out of memory for %zu bytes\n", bytes);
        PMPI_Abort(comm, 1);
    }
    reduces++;
    const void *in = sendbuf;
    if (rank == root && sendbuf == MPI_IN_PLACE) {   /* the others pass a send buffer */
        memcpy(staging, recvbuf, bytes);
        in = staging;
    }
    int rc = PMPI_Allreduce(in, rank == root ? recvbuf : stash, count, type, op, comm);
    if (rc != MPI_SUCCESS)
        return rc;
    if (rank == root)
        memcpy(stash, recvbuf, bytes);
    fuse = (struct fuse_state){1, comm, root, count, type, rank == root ? recvbuf : NULL, bytes};
    return MPI_SUCCESS;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    int armed = fuse.armed;
    fuse.armed = 0;
    if (!armed || comm != fuse.comm || root != fuse.root || count != fuse.count || type != fuse.type)
        return PMPI_Bcast(buf, count, type, root, comm);
    int rank = -1;
    rank_in(comm, &rank);   /* known: the armed MPI_Reduce asked it on this communicator */
    if (rank == root) {
        if (buf != fuse.result || memcmp(buf, stash, fuse.bytes) != 0) {
            fprintf(stderr, "fuse_shim: rank %d broadcasts other data than its MPI_Reduce's result; "
                            "this application's pairs cannot be fused by a shim\n", rank);
            PMPI_Abort(comm, 1);
        }
    } else {
        memcpy(buf, stash, fuse.bytes);
    }
    fused++;
    return MPI_SUCCESS;
}

int MPI_Finalize(void)
{
    const char *report = getenv("COLLTUNE_FUSE_REPORT");
    if (report != NULL && report[0] == '1') {
        int rank;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        fprintf(stderr, "fuse_shim: rank %d fused %llu of %llu MPI_Reduce\n", rank, fused, reduces);
    }
    free(stash);
    free(staging);
    return PMPI_Finalize();
}
