/*
 * colltune: the C core's shared declarations.
 *
 * Visibility: `colltune_` = public API (variants, applicability, arena), `ct_` = internal to the
 * C core. Every function that can fail returns an MPI error code (MPI_SUCCESS on success).
 *
 * Generated parts (enums of collectives and variants, the variant table) come from
 * native/spec/collectives.toml through native/gen/: see ct_catalog.h.
 */
#ifndef COLLTUNE_H
#define COLLTUNE_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* MPI-4's persistent collectives (MPI_Allreduce_init, ...); Open MPI 5 declares them under
 * MPI_VERSION 3. */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define CT_HAVE_PERSISTENT 1
#else
#define CT_HAVE_PERSISTENT 0
#endif

/* The catalog, generated from native/spec/collectives.toml into ct_catalog.{h,c}:
 *   enum ct_coll_id  { CT_COLL_ALLGATHER, ..., CT_NUM_COLLECTIVES };
 *   enum ct_var_id   { CT_VAR_ALLGATHER_AS_GATHER_BCAST, ..., CT_NUM_VARIANTS };
 * Lookups by name return -1 when the name is unknown. */
int colltune_collective_index(const char *name);     /* "allgather" -> CT_COLL_ALLGATHER */
const char *colltune_collective_name(int coll);
int colltune_variant_index(const char *name);        /* "bcast_as_allgatherv" -> CT_VAR_... */
const char *colltune_variant_name(int variant);
int colltune_variant_collective(int variant);

/* One collective call, described by argument role. Filled by the generated wrappers (and by the
 * benchmark/selftest drivers) so that applicability checks and decisions are written once. */
typedef struct ct_call {
    int coll;                    /* ct_coll_id from ct_catalog.h */
    const void *sendbuf;
    void *recvbuf;               /* also the `buffer` of Bcast */
    int sendcount;
    int recvcount;               /* also `count` of Allreduce/Bcast/Reduce/Scan */
    /* Each side's counts and displacements side by side, 16-byte aligned in a wrapper's frame:
     * a call that has one side only (Allgatherv, Gatherv, Scatterv) stores the other side's two
     * NULLs as one vector store (x86-64). */
    const int *sendcounts;       /* Scatterv, Alltoallv, Alltoallw */
    /* The displacements: int (Scatterv's `displs`, Alltoallv, Alltoallw, ...) or MPI_Aint
     * (Neighbor_alltoallw, whose int binding has them in bytes); the row says which, so one
     * pointer holds either and a described call costs no more stores. */
    union {
        const int *sdispls;       /* Scatterv (`displs`), Alltoallv, Alltoallw */
        const MPI_Aint *sdispls_aint;   /* Neighbor_alltoallw */
    };
    const int *recvcounts;       /* Reduce_scatter and the v/w forms */
    union {
        const int *rdispls;       /* Gatherv and Allgatherv (`displs`), Alltoallv, Alltoallw */
        const MPI_Aint *rdispls_aint;   /* Neighbor_alltoallw */
    };
    MPI_Datatype sendtype;
    MPI_Datatype recvtype;       /* also `datatype` of reductions and Bcast */
    const MPI_Datatype *sendtypes; /* Alltoallw, Neighbor_alltoallw */
    const MPI_Datatype *recvtypes; /* Alltoallw, Neighbor_alltoallw */
    MPI_Op op;                   /* MPI_OP_NULL where the collective has none */
    int root;                    /* -1 where the collective has none */
    MPI_Comm comm;               /* MPI_COMM_SELF for Reduce_local */
} ct_call;

/* Why a variant cannot serve a call. Order matters only for printing. */
typedef enum colltune_reason {
    COLLTUNE_APPLICABLE = 0,
    COLLTUNE_NA_INTERCOMM,        /* inter-communicator */
    COLLTUNE_NA_DATATYPE,         /* datatype with gaps / unsupported */
    COLLTUNE_NA_NONCOMMUTATIVE,   /* variant reorders the reduction */
    COLLTUNE_NA_OP,               /* op unusable by the variant (e.g. needs predefined op) */
    COLLTUNE_NA_OVERFLOW,         /* an inner count would overflow int */
    COLLTUNE_NA_IN_PLACE,         /* MPI_IN_PLACE the variant cannot honour */
    COLLTUNE_NA_SCRATCH,          /* needs more scratch than COLLTUNE_SCRATCH_BYTES */
    COLLTUNE_NA_SIZE,             /* communicator size / message size not supported */
    COLLTUNE_NA_ERROR,            /* an MPI query failed: play safe */
    COLLTUNE_NA_REFUSED,          /* the library refused its own algorithm for this call */
    COLLTUNE_NA_UNAVAILABLE,      /* MPI_T or the algorithm's communicator failed */
    COLLTUNE_NA_UNPROVEN,         /* not proven exact on this library in the call's case class */
    COLLTUNE_NA_WARMUP,           /* the communicator's first calls, whose count the library acts on */
    COLLTUNE_NA_SETTING,          /* a launch setting moved the library's own choice the rule assumes
                                   * (named by colltune_reason_name: colltune_mpich_ring_setting) */
    COLLTUNE_REASON_COUNT
} colltune_reason;

/* Short stable names ("applicable", "intercomm", ...) used in counting tables and tests;
 * COLLTUNE_NA_SETTING is named by the setting itself (e.g. MPIR_CVAR_ALLGATHERV_INTRA_ALGORITHM),
 * "setting" where none was read. */
const char *colltune_reason_name(colltune_reason reason);

/* Message size in bytes used for decisions, from uniform arguments only (see collectives.toml).
 * Returns -1 if it cannot be computed (then the call goes to the library). */
int64_t colltune_call_bytes(const ct_call *call);
/* The same where the caller knows the communicator's size (`comm_size` > 0; else it is asked). */
int64_t colltune_call_bytes_in(const ct_call *call, int comm_size);
/* The bytes the counting and profiling modes record: the row's `counted` rule where it has one
 * (the regular neighborhood collectives: what this rank sends each neighbour), else the above. */
int64_t colltune_call_counted_bytes(const ct_call *call);

/* Is `variant` (index into the generated variant table) able to give the library's exact result
 * for `call`? Uses only arguments identical on all ranks, so all ranks agree. */
colltune_reason colltune_applicable(int variant, const ct_call *call);

/* Whether MPICH's default selection runs MPI_Allgatherv as its ring (whose chunks follow each
 * rank's own extent) for T = sum(recvcounts) x type size bytes on p ranks: T >= 524288 on a
 * power-of-two communicator, T >= 81920 on any other (MPICH 5.0.2, maint/tuning/coll/mpir/
 * generic.json; measured: benchmarks/proof/allgatherv_layouts.c). docs/variants.md, "MPICH's
 * Allgatherv ring". */
#define CT_MPICH_RING_POW2 524288
#define CT_MPICH_RING_OTHER 81920
int colltune_mpich_allgatherv_ring(int64_t p, int64_t total);

/* That bound is MPICH's default selection; a launch may move it (MPIR_CVAR_ALLGATHERV_INTRA_
 * ALGORITHM=ring runs the ring at every size; docs/variants.md, "MPICH's Allgatherv ring").
 * Read once at MPI_Init, after PMPI_Init (MPICH family; elsewhere a no-op): the first of MPICH's
 * Allgatherv settings the launch set away from the library's own choice, through MPI_T (the value
 * MPICH really uses) and the environment (MPICH 5.0.2 reads string variables back empty through
 * MPI_T): either one counts. Returns its name, or NULL. */
#define CT_RING_SETTING_NAME 64
#define CT_RING_SETTING_VALUE 256
const char *colltune_mpich_ring_settings(void);
/* What the last read found: the setting's name and its value as read, or NULL. */
const char *colltune_mpich_ring_setting(void);
const char *colltune_mpich_ring_setting_value(void);

/* Invoke variant `variant` for `call` (dispatches to the mock-up with the MPI signature). */
int colltune_invoke(int variant, const ct_call *call);

/* Invoke the library's own collective (PMPI_*) for `call`. */
int colltune_invoke_library(const ct_call *call);

/* The library's own collective for `call` in its other forms (collectives.toml `forms`), the
 * request left to the caller: started nonblocking (PMPI_I<coll>), or initialized persistent
 * (PMPI_<Coll>_init, inactive until MPI_Start). MPI_ERR_UNSUPPORTED_OPERATION where the row has
 * no such form, or this library does not declare MPI-4's persistent collectives. */
int colltune_start_library(const ct_call *call, MPI_Request *request);
int colltune_init_library(const ct_call *call, MPI_Info info, MPI_Request *request);

/* Chunk size C (bytes) of GL7/GL16; from COLLTUNE_CHUNK_BYTES, default 64. */
size_t colltune_chunk_bytes(void);

/* Scratch arena of a communicator (kept in an MPI keyval attribute, grown on demand up to the
 * cap COLLTUNE_SCRATCH_BYTES, reused across calls, freed when the communicator is freed).
 * Returns MPI_SUCCESS and a buffer of at least `bytes`, or MPI_ERR_NO_MEM over the cap. */
int colltune_scratch(MPI_Comm comm, size_t bytes, void **buffer);

/* The scratch cap in bytes (COLLTUNE_SCRATCH_BYTES, default 256 MiB). */
size_t colltune_scratch_cap(void);

#ifdef __cplusplus
}
#endif

#endif /* COLLTUNE_H */
