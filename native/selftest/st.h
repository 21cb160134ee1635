/*
 * colltune-selftest: every variant against the library's own result over a matrix of cases.
 * Shared declarations of the driver's files.
 */
#ifndef ST_H
#define ST_H

#include "colltune.h"
#include "ct_catalog.h"
#include "ct_functions.h"

#include <stddef.h>
#include <stdint.h>

/* ST_MIXED: layouts that differ between ranks with one type signature (the standard allows it
 * outside reductions): the vector on even ranks, twice as many MPI_INT on odd ranks. */
/* ST_UINT8: 8-bit sums overflow with our inputs, where Open MPI 5.0's op/avx saturates instead of
 * wrapping and its algorithms disagree (a case class of its own in the proof).
 * The first ST_NUM_TYPES kinds are the matrix's; the proof's sweep adds ST_RAW (any integer
 * type, every bit pattern: sums and products overflow) and ST_FLOAT (magnitudes that make every
 * summation order round differently). */
enum st_kind { ST_BYTE, ST_INT, ST_DOUBLE, ST_CONTIG, ST_VECTOR, ST_MIXED, ST_UINT8, ST_RAW,
               ST_FLOAT, ST_NUM_KINDS };
#define ST_NUM_TYPES (ST_UINT8 + 1)
#define ST_SWEEP_TYPES 11

typedef struct st_type {
    const char *name;
    enum st_kind kind;
    MPI_Datatype type;
    int64_t size;        /* bytes of data per element */
    int64_t extent;      /* bytes per element in a buffer (gaps included) */
    int contiguous;      /* no gaps: what the rules call a contiguous datatype */
    MPI_Datatype odd_type; /* ST_MIXED on odd ranks: odd_factor elements of odd_type each */
    int odd_factor;
    int64_t odd_extent;
} st_type;

/* ST_PROD comes last: the matrix takes it with no datatype, the sweep with ST_RAW and ST_FLOAT. */
enum st_op_kind { ST_SUM, ST_MAX, ST_BOR, ST_USER_COMM, ST_USER_NONCOMM, ST_USER_COUNT, ST_PROD,
                  ST_NUM_OPS };

/* ST_USER_COUNT is written the way many application programmers write ops (MPICH's red3 and
 * red4 tests): it assumes it is called with its caller's count. The selftest sets the count
 * before each call and counts the calls that broke the assumption on this rank. */
extern int st_caller_count;
extern long st_count_misuse;

typedef struct st_op {
    const char *name;
    enum st_op_kind kind;
    MPI_Op op;
    int commutative;
} st_op;

typedef struct st_comm {
    const char *name;    /* world, split, dup, intercomm */
    int slot;            /* index among the matrix's communicators (--member) */
    MPI_Comm comm;
    int size, rank;
    int inter;
} st_comm;

typedef struct st_case {
    int coll;            /* enum ct_coll_id */
    const st_comm *comm;
    const st_type *type;
    const st_op *op;     /* NULL for collectives without an op */
    int count;           /* elements per block (Reduce_scatter: base of the irregular counts) */
    int root;            /* -1 for collectives without a root */
    int in_place;
    int sweep;           /* the proof's sweep: bit for bit, counted for the proof only */
    unsigned rep;        /* the sweep's repetition of a case: other inputs each time */
} st_case;

/* st_data.c: datatypes, ops and deterministic contents. */
void st_types_init(st_type types[ST_NUM_TYPES]);
void st_sweep_types_init(st_type types[ST_SWEEP_TYPES]);
void st_ops_init(st_op ops[ST_NUM_OPS]);
int st_op_valid(const st_op *op, const st_type *type);
int st_op_user(const st_op *op);
/* Input of comm rank `rank` for buffer slot `slot` (slot = index of the base element:
 * byte, int or double). */
int32_t st_int_value(int rank, int64_t slot);
double st_double_value(int rank, int64_t slot);
unsigned char st_byte_value(int rank, int64_t slot);
float st_float_value(int rank, int64_t slot);
/* Fill `bytes` bytes of `buf` (slot 0 at `buf`) with rank `rank`'s input of type `kind`. */
void st_fill(void *buf, int64_t bytes, enum st_kind kind, int rank, int64_t first_slot);
/* Inputs of the sweep's cases differ case by case (the matrix's: 0, the same everywhere);
 * st_prepare sets it from the case. */
extern uint64_t st_salt;
uint64_t st_case_salt(const char *type, int coll, int op, int count, int root, int in_place,
                      unsigned rep);
#define ST_SENTINEL 0x5a

/* Where MPICH's default MPI_Allgatherv runs its ring on p ranks: from this many bytes in all (the
 * rules' `size` of GL4 and GL9 on the MPICH family, st_expect.c). */
int64_t st_mpich_ring_bytes(int64_t p);

/* st_expect.c: the rules, written independently of the core, that say which reason
 * colltune_applicable must give. */
int st_rules_check_catalog(char *err, size_t errlen);
colltune_reason st_expected_reason(int variant, const st_case *c, int64_t n, const int *recvcounts);

typedef struct st_record {
    int variant;
    int reason;      /* colltune_reason */
    int wrong;       /* reason differs from the rules */
    int mismatch;    /* result differs from the library's */
    int error;       /* an MPI error (variant or library) */
    int probe;       /* applicability-only case */
    int cls;         /* case class of the proof (ct_proof.h), -1 for probes */
    int sweep;       /* counted for the proof only */
} st_record;

typedef struct st_log {
    st_record *records;
    size_t len, cap;
} st_log;

typedef struct st_layout {
    int64_t send_bytes, recv_bytes;   /* buffer sizes on this rank (0: pass NULL) */
    int64_t out_begin, out_bytes;     /* region of recv compared with the library's */
    int64_t tail_bytes;               /* after it: must keep its input (in-place Reduce_scatter) */
    int64_t first_slot;               /* input slot of out_begin (tolerance of MPI_DOUBLE sums) */
} st_layout;

typedef struct st_buffers {
    unsigned char *send, *recv, *lib_recv, *pristine, *recv_input;
    size_t send_cap, recv_cap;
} st_buffers;

#define ST_MAX_FAILURE_LINES 20

/* st_case.c: case geometry, comparison, reporting. */
extern int st_world_rank;
extern int st_recvcounts_buf[4096];
void st_log_add(st_log *log, st_record rec);
void st_reserve(st_buffers *b, const st_layout *L);
int st_geometry_known(int coll);
/* Gatherv, Scatterv, Allgatherv, Alltoallv, Alltoallw: counts and displacements per rank. */
int st_is_irregular(int coll);
/* Neighbor_allgather(v), Neighbor_alltoall(v,w): run on the matrix's topology communicators. */
int st_is_neighbor(int coll);
int st_equal_blocks(const st_case *c);   /* the irregular forms' blocks are all one size */
int st_has_in_place(int coll);
const int *st_recvcounts(const st_case *c);
int64_t st_case_bytes(const st_case *c, const int *recvcounts);
st_layout st_layout_of(const st_case *c, const int *rc);
void st_prepare(const st_case *c, const st_layout *L, const int *rc, unsigned char *send,
                unsigned char *recv, ct_call *call);
void st_report(const st_case *c, int variant, const char *what, const char *detail);
void st_error_text(int err, char *out, size_t len);
int st_same(const st_case *c, const st_layout *L, const unsigned char *lib,
            const unsigned char *var, const unsigned char *input, char *detail, size_t len);
/* st_run.c: one case, by the library and every variant (or the --member algorithm). */
void st_run_case(const st_case *c, st_buffers *b, st_log *log);

/* st_proof.c: the proof of every member per case class (docs/select.md, "The proof"). Member
 * ST_LIB_MEMBER is the library algorithm forced with --member; the others are the mock-ups. */
#define ST_LIB_MEMBER CT_NUM_VARIANTS
int st_case_class(const st_case *c, const ct_call *call);
void st_proof_failure(int member, const st_case *c, int cls, const char *what, const char *detail);
void st_proof_account(int member, int cls, int applicable, int nonuniform, int failed);
/* A sized class (ct_proof.h) was swept on a communicator of `size` ranks. */
void st_proof_swept_size(int size);
int st_proof_finish(MPI_Comm world, int rank, const char *lib_member);
/* --member lib:<coll>:<alg>[#nonblocking|#persistent]: force it on each communicator of the
 * matrix (slot = comm index). */
int st_member_open(const char *spec, int slot, MPI_Comm comm, int *coll, char *err, size_t len);
int st_member_active(void);
/* The --member's form (enum ct_form): of the nonblocking form (`#nonblocking`) it and the
 * library's default are run as MPI_I<coll> + MPI_Wait, of the persistent form (`#persistent`)
 * as MPI_<Coll>_init, MPI_Start + MPI_Wait twice, MPI_Request_free (st_run.c). */
int st_member_form(void);
MPI_Comm st_member_comm(int slot, MPI_Comm comm);
int st_member_select(void);
int st_member_restore(void);
void st_member_close(void);
/* --reference-out FILE / --reference-in FILE (a member its library fixes per launch, Intel
 * MPI's I_MPI_ADJUST_*: in its launch the library's own call runs the member, so the result it
 * is judged against comes from a launch without the setting). Out: the member is not opened,
 * each case's library result and error code go to FILE.<world rank>; in: they are read from
 * there instead of calling the library, and the launch's own call is the member's. */
enum { ST_REFERENCE_NONE, ST_REFERENCE_WRITE, ST_REFERENCE_READ };
int st_reference_open(const char *path, int mode, int rank);
int st_reference_mode(void);
void st_reference_close(void);
/* --classes A,B: run the member only in these classes (a rerun after a crash). */
int st_class_selected(int cls);
/* Whether some size band of the case's class is selected: asked before its buffers are filled,
 * so that a launch for a few classes walks the rest of the matrix at little cost. */
int st_class_maybe(const st_case *c);
void st_parse_classes(const char *names);
void st_print_member_classes(int coll);
/* --by-class FIRST: the member's classes one at a time from FIRST on (a launch that crashed or
 * hung, resumed after its last finished class): `st_class_first` the class FIRST names (-1 if
 * none), `st_class_focus` runs only `cls` from now on, `st_class_print` says a class started
 * ("class") or ended ("class_done", after its verdict). */
int st_class_first(const char *name);
void st_class_focus(int cls);
void st_class_print(const char *what, int cls);
/* Rank 0 of a member launch: a "tick" line at most every ST_TICK_S seconds while cases end, so
 * that the proof tells a slow launch (a loaded machine) from a hung one by its silence. */
#define ST_TICK_S 0.5
void st_tick(void);

/* st_smpi.c: the cases SimGrid SMPI 3.32 cannot take, with the SimGrid line that says why
 * (NULL: none; other libraries: always NULL). st_smpi_init: once per communicator of the
 * matrix, collectively. */
void st_smpi_init(const st_comm *comm);
const char *st_smpi_library_gap(const st_case *c);
const char *st_smpi_member_gap(int variant, const st_case *c);

#endif /* ST_H */
