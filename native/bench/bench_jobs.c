/*
 * Jobs: the job file, the buffers of a job and the ct_call that describes it.
 * Counts follow the message size definitions of native/spec/collectives.toml (`bytes`).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bench_run.h"
#include "ct_formats.h"

/* The names `colltune bench` writes (native/spec/formats.toml, [jobs]). */
#define CT_DATATYPE_ENTRY(name, handle, bytes) {name, handle, bytes},
#define CT_OP_ENTRY(name, handle) {name, handle},
static const struct { const char *name; MPI_Datatype type; int bytes; } datatypes[] = {
    CT_JOB_DATATYPES(CT_DATATYPE_ENTRY)
};

static const struct { const char *name; MPI_Op op; } ops[] = {
    CT_JOB_OPS(CT_OP_ENTRY)
};

/* The front end sizes messages by the spec's bytes: a library whose type has another size (a
 * 4-byte `long`) would measure other messages than the job names, so it is refused (-2). */
static int datatype_by_name(const char *name, MPI_Datatype *type)
{
    for (size_t i = 0; i < sizeof datatypes / sizeof datatypes[0]; i++)
        if (strcmp(name, datatypes[i].name) == 0) {
            int size = 0;
            *type = datatypes[i].type;
            return PMPI_Type_size(*type, &size) == MPI_SUCCESS && size == datatypes[i].bytes ? 0
                                                                                              : -2;
        }
    return -1;
}

static int op_by_name(const char *name, MPI_Op *op)
{
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(name, ops[i].name) == 0) {
            *op = ops[i].op;
            return 0;
        }
    return -1;
}

/* Collectives the driver can set up, and how their buffers scale with p. */
typedef enum shape {
    SH_ALLGATHER, SH_ALLREDUCE, SH_ALLTOALL, SH_BCAST, SH_GATHER, SH_REDUCE, SH_RSB, SH_RS,
    SH_SCAN, SH_SCATTER, SH_BARRIER, SH_GATHERV, SH_SCATTERV, SH_ALLGATHERV, SH_ALLTOALLV,
    SH_ALLTOALLW, SH_LOCAL, SH_NEIGHBOR
} shape;

/* The irregular forms are measured with equal counts (n bytes per block, block i at i*n): what
 * the guidelines compare with the regular form (docs/guidelines.md, "Irregular forms"). */
static const struct { const char *name; shape shape; int reduction, rooted; } collectives[] = {
    {"allgather", SH_ALLGATHER, 0, 0}, {"allreduce", SH_ALLREDUCE, 1, 0},
    {"alltoall", SH_ALLTOALL, 0, 0},   {"bcast", SH_BCAST, 0, 1},
    {"gather", SH_GATHER, 0, 1},       {"reduce", SH_REDUCE, 1, 1},
    {"reduce_scatter_block", SH_RSB, 1, 0}, {"reduce_scatter", SH_RS, 1, 0},
    {"scan", SH_SCAN, 1, 0},           {"scatter", SH_SCATTER, 0, 1},
    {"barrier", SH_BARRIER, 0, 0},     {"exscan", SH_SCAN, 1, 0},
    {"gatherv", SH_GATHERV, 0, 1},     {"scatterv", SH_SCATTERV, 0, 1},
    {"allgatherv", SH_ALLGATHERV, 0, 0}, {"alltoallv", SH_ALLTOALLV, 0, 0},
    {"alltoallw", SH_ALLTOALLW, 0, 0}, {"reduce_local", SH_LOCAL, 1, 0},
    /* on a torus of the job's processes, with their guidelines' sides (bench_neighbor.c) */
    {"neighbor_allgather", SH_NEIGHBOR, 0, 0}, {"neighbor_allgatherv", SH_NEIGHBOR, 0, 0},
    {"neighbor_alltoall", SH_NEIGHBOR, 0, 0}, {"neighbor_alltoallv", SH_NEIGHBOR, 0, 0},
    {"neighbor_alltoallw", SH_NEIGHBOR, 0, 0},
};

static int collective_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof collectives / sizeof collectives[0]; i++)
        if (strcmp(name, collectives[i].name) == 0)
            return (int)i;
    return -1;
}

static int parse_line(char *line, ct_job *job, char *why, size_t whylen)
{
    char coll[CT_NAME_LEN], bytes[32], dtype[32], op[16], root[16];
    char *variants = NULL;
    int used = 0;
    if (sscanf(line, "%95s %31s %31s %15s %15s %n", coll, bytes, dtype, op, root, &used) != 5) {
        snprintf(why, whylen, "expected `<collective> <msg_bytes> <datatype|-> <op|-> <root|-> "
                 "<variant>[,<variant>...]`");
        return -1;
    }
    variants = line + used;
    variants[strcspn(variants, " \t\r\n")] = '\0';
    if (collective_by_name(coll) < 0) {
        snprintf(why, whylen, "unknown collective '%s'", coll);
        return -1;
    }
    char *end;
    errno = 0;
    long long n = strtoll(bytes, &end, 10);
    if (errno || *end || n < 0) {
        snprintf(why, whylen, "bad message size '%s' (bytes, an integer >= 0)", bytes);
        return -1;
    }
    memset(job, 0, sizeof *job);
    snprintf(job->collective, sizeof job->collective, "%s", coll);
    job->msg_bytes = n;
    snprintf(job->datatype, sizeof job->datatype, "%s", dtype);
    snprintf(job->op, sizeof job->op, "%s", op);
    job->root = strcmp(root, "-") == 0 ? 0 : atoi(root);
    MPI_Datatype t;
    MPI_Op o;
    int known = strcmp(dtype, "-") == 0 ? 0 : datatype_by_name(dtype, &t);
    if (known != 0) {
        snprintf(why, whylen, known == -1 ? "unknown datatype '%s'"
                                          : "datatype '%s' has another size in this MPI than "
                                            "native/spec/formats.toml says",
                 dtype);
        return -1;
    }
    if (strcmp(op, "-") != 0 && op_by_name(op, &o) != 0) {
        snprintf(why, whylen, "unknown op '%s'", op);
        return -1;
    }
    for (char *tok = strtok(variants, ","); tok; tok = strtok(NULL, ",")) {
        if (job->nvariants == CT_MAX_VARIANTS) {
            snprintf(why, whylen, "more than %d variants", CT_MAX_VARIANTS);
            return -1;
        }
        snprintf(job->variant_names[job->nvariants++], CT_NAME_LEN, "%s", tok);
    }
    if (job->nvariants == 0) {
        snprintf(why, whylen, "no variants");
        return -1;
    }
    return 0;
}

int ct_jobs_read(const char *path, ct_job **jobs, int *njobs, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    ct_job *list = NULL;
    int count = 0, cap = 0, lineno = 0, rc = 0;
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (*p == '#' || *p == '\0')
            continue;
        if (count == cap) {
            cap = cap ? 2 * cap : 16;
            ct_job *grown = realloc(list, (size_t)cap * sizeof *grown);
            if (!grown) {
                snprintf(err, errlen, "%s: out of memory", path);
                rc = -1;
                break;
            }
            list = grown;
        }
        char why[256];
        if (parse_line(p, &list[count], why, sizeof why) != 0) {
            snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
            rc = -1;
            break;
        }
        list[count].id = count;
        count++;
    }
    fclose(f);
    if (rc != 0) {
        free(list);
        return rc;
    }
    *jobs = list;
    *njobs = count;
    return 0;
}

void ct_buffers_free(ct_buffers *b)
{
    ct_neighbor_free(b->nb);
    free(b->send);
    free(b->recv);
    free(b->recvcounts);
    free(b->arrays);
    free(b->types);
    memset(b, 0, sizeof *b);
}

static int alloc_buffers(ct_buffers *b, size_t send, size_t recv)
{
    /* Never zero-sized, so that a 0-byte job still has valid pointers. */
    b->send = calloc(send ? send : 1, 1);
    b->recv = calloc(recv ? recv : 1, 1);
    b->send_bytes = send;
    b->recv_bytes = recv;
    return b->send && b->recv ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* Equal counts and displacements of the v/w forms: block i of `count` elements at i*count
 * (in bytes for Alltoallw, whose datatypes are all `type`). Fills the ct_call's arrays. */
static int irregular_arrays(shape sh, ct_call *call, ct_buffers *b, int p, int count, int tsize,
                            MPI_Datatype type)
{
    b->arrays = malloc(4 * (size_t)p * sizeof *b->arrays);
    if (!b->arrays)
        return MPI_ERR_NO_MEM;
    int *counts = b->arrays, *displs = b->arrays + p, *bytes_displs = b->arrays + 2 * p;
    for (int i = 0; i < p; i++) {
        counts[i] = count;
        displs[i] = i * count;
        bytes_displs[i] = i * count * tsize;
    }
    if (sh == SH_ALLTOALLW) {
        b->types = malloc((size_t)p * sizeof *b->types);
        if (!b->types)
            return MPI_ERR_NO_MEM;
        for (int i = 0; i < p; i++)
            b->types[i] = type;
        call->sendtypes = call->recvtypes = b->types;
        displs = bytes_displs;
    }
    if (sh != SH_GATHERV && sh != SH_ALLGATHERV) {
        call->sendcounts = counts;
        call->sdispls = displs;
    }
    if (sh != SH_SCATTERV) {
        call->recvcounts = counts;
        call->rdispls = displs;
    }
    return MPI_SUCCESS;
}

int ct_job_setup(const ct_job *job, MPI_Comm comm, ct_call *call, ct_buffers *b, char *err,
                 size_t errlen)
{
    int p, rank, rc, ci = collective_by_name(job->collective), tsize = 1;
    MPI_Datatype type = MPI_BYTE;
    MPI_Op op = MPI_OP_NULL;
    memset(b, 0, sizeof *b);
    memset(call, 0, sizeof *call);
    if ((rc = PMPI_Comm_size(comm, &p)) != MPI_SUCCESS || (rc = PMPI_Comm_rank(comm, &rank)))
        return rc;
    if (ci < 0) {
        snprintf(err, errlen, "unknown collective '%s'", job->collective);
        return MPI_ERR_ARG;
    }
    shape sh = collectives[ci].shape;
    if (strcmp(job->datatype, "-") != 0)
        datatype_by_name(job->datatype, &type);
    if (collectives[ci].reduction) {
        if (strcmp(job->op, "-") == 0) {
            snprintf(err, errlen, "%s needs an op", job->collective);
            return MPI_ERR_ARG;
        }
        op_by_name(job->op, &op);
    }
    if ((rc = PMPI_Type_size(type, &tsize)) != MPI_SUCCESS)
        return rc;
    if (collectives[ci].rooted && (job->root < 0 || job->root >= p)) {
        snprintf(err, errlen, "root %d outside 0..%d", job->root, p - 1);
        return MPI_ERR_ROOT;
    }
    int64_t unit = sh == SH_RSB ? (int64_t)tsize * p : tsize;
    if (sh != SH_BARRIER && job->msg_bytes % unit != 0) {
        snprintf(err, errlen, "%lld bytes is not a multiple of %lld (%s%s)",
                 (long long)job->msg_bytes, (long long)unit, job->datatype,
                 sh == SH_RSB ? " times p" : "");
        return MPI_ERR_COUNT;
    }
    int64_t count = sh == SH_BARRIER ? 0 : job->msg_bytes / unit;
    int64_t whole = count * tsize * (int64_t)p;
    if (count > INT32_MAX || (sh != SH_ALLREDUCE && sh != SH_BCAST && sh != SH_REDUCE
                              && sh != SH_SCAN && sh != SH_LOCAL && whole / tsize > INT32_MAX)) {
        snprintf(err, errlen, "%lld bytes overflow an int count", (long long)job->msg_bytes);
        return MPI_ERR_COUNT;
    }
    if (sh == SH_NEIGHBOR)
        return ct_neighbor_setup(ct_neighbor_row(job->collective), comm, count, type, b, call, err,
                                 errlen);
    size_t n = (size_t)count * (size_t)tsize, all = n * (size_t)p;
    call->coll = colltune_collective_index(job->collective);
    call->sendtype = call->recvtype = type;
    call->sendcount = call->recvcount = (int)count;
    call->op = op;
    call->root = collectives[ci].rooted ? job->root : -1;
    call->comm = sh == SH_LOCAL ? MPI_COMM_SELF : comm;   /* as the wrapper describes it */
    if (sh >= SH_GATHERV && sh <= SH_ALLTOALLW
        && (rc = irregular_arrays(sh, call, b, p, (int)count, tsize, type)) != MPI_SUCCESS) {
        snprintf(err, errlen, "cannot allocate the counts of %d processes", p);
        return rc;
    }
    switch (sh) {
    case SH_ALLGATHER: case SH_GATHER: case SH_ALLGATHERV: case SH_GATHERV:
        rc = alloc_buffers(b, n, all);
        break;
    case SH_SCATTER: case SH_SCATTERV: rc = alloc_buffers(b, all, n); break;
    case SH_ALLTOALL: case SH_ALLTOALLV: case SH_ALLTOALLW: rc = alloc_buffers(b, all, all); break;
    case SH_ALLREDUCE: case SH_REDUCE: case SH_SCAN: case SH_LOCAL: rc = alloc_buffers(b, n, n); break;
    case SH_BCAST: rc = alloc_buffers(b, 0, n); break;
    case SH_RSB: rc = alloc_buffers(b, all, n); break;
    case SH_RS: {
        int64_t total = job->msg_bytes / tsize;
        b->recvcounts = malloc((size_t)p * sizeof *b->recvcounts);
        if (!b->recvcounts)
            return MPI_ERR_NO_MEM;
        for (int i = 0; i < p; i++)
            b->recvcounts[i] = (int)(total / p + (i < total % p));
        rc = alloc_buffers(b, (size_t)total * (size_t)tsize,
                           (size_t)b->recvcounts[rank] * (size_t)tsize);
        call->recvcounts = b->recvcounts;
        call->recvcount = call->sendcount = 0;
        break;
    }
    case SH_BARRIER: rc = alloc_buffers(b, 0, 0); break;
    case SH_NEIGHBOR: break;   /* set up above */
    }
    if (rc != MPI_SUCCESS) {
        snprintf(err, errlen, "cannot allocate buffers for %lld bytes", (long long)job->msg_bytes);
        return rc;
    }
    call->sendbuf = sh == SH_BCAST ? NULL : b->send;
    call->recvbuf = b->recv;
    return MPI_SUCCESS;
}

/* Values of wildly different magnitudes and signs: a floating-point sum of them rounds
 * differently for different summation orders, so result bits tell algorithms apart. */
static double probe_double(uint64_t h)
{
    double v = 1.0 + (double)((h >> 12) & 0xFFFFF) / 1048576.0;
    int e = (int)((h >> 1) % 48) - 24;
    for (; e > 0; e--)
        v *= 2.0;
    for (; e < 0; e++)
        v *= 0.5;
    return (h & 1) ? -v : v;
}

static void fill(void *buf, size_t bytes, MPI_Datatype type, int rank, uint64_t salt)
{
    uint64_t state = salt * UINT64_C(1000003) + (uint64_t)rank * UINT64_C(0x1234567);
    if (type == MPI_DOUBLE) {
        double *d = buf;
        for (size_t i = 0; i < bytes / sizeof *d; i++)
            d[i] = probe_double(ct_rand_next(&state));
    } else if (type == MPI_FLOAT) {
        float *f = buf;
        for (size_t i = 0; i < bytes / sizeof *f; i++)
            f[i] = (float)probe_double(ct_rand_next(&state));
    } else if (type == MPI_INT || type == MPI_UNSIGNED) {
        /* Small values: integer sums stay far from overflow at any p we run. */
        int *v = buf;
        for (size_t i = 0; i < bytes / sizeof *v; i++)
            v[i] = (int)(ct_rand_next(&state) % 3);
    } else if (type == MPI_LONG || type == MPI_INT64_T) {
        int64_t *v = buf; /* MPI_LONG is 8 bytes on every LP64 system we build for */
        for (size_t i = 0; i < bytes / sizeof *v; i++)
            v[i] = (int64_t)(ct_rand_next(&state) % 3);
    } else {
        unsigned char *c = buf;
        for (size_t i = 0; i < bytes; i++)
            c[i] = (unsigned char)(ct_rand_next(&state) % 3);
    }
}

void ct_buffers_fill(const ct_call *call, ct_buffers *b, int rank)
{
    MPI_Datatype type = call->recvtype;
    if (call->sendbuf)
        fill(b->send, b->send_bytes, type, rank, 1);
    /* The bcast buffer is the root's data; elsewhere the receive buffer is output only. */
    if (call->sendbuf == NULL)
        fill(b->recv, b->recv_bytes, type, rank, 2);
    else
        memset(b->recv, 0, b->recv_bytes ? b->recv_bytes : 1);
}

uint64_t ct_buffers_hash(const ct_buffers *b)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    const unsigned char *c = b->recv;
    for (size_t i = 0; i < b->recv_bytes; i++) {
        h ^= c[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}
