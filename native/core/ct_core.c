/*
 * Small MPI queries and the arithmetic shared by the applicability checks and the mock-ups.
 */
#include "ct_tls.h"
#include "ct_core.h"

#include <stdlib.h>

__attribute__((visibility("hidden"))) _Thread_local ct_tsize ct_tsizes[4]
    CT_TLS_MODEL;

int ct_type_size_slow(MPI_Datatype type, int64_t *bytes)
{
    ct_tsize *e = &ct_tsizes[ct_tslot(type)];
    int size = 0;
    int err = PMPI_Type_size(type, &size);
    *bytes = size;
    if (err == MPI_SUCCESS && !(e->type == type && e->tag == 1)) {
        int ni, na, nd, combiner;
        if (PMPI_Type_get_envelope(type, &ni, &na, &nd, &combiner) == MPI_SUCCESS)
            *e = (ct_tsize){type, combiner == MPI_COMBINER_NAMED ? (int64_t)size + 2 : 1};
    }
    return err;
}

int ct_type_contiguous(MPI_Datatype type, int *contiguous)
{
    int size;
    MPI_Aint lb, extent, true_lb, true_extent;
    int err = PMPI_Type_size(type, &size);
    if (err == MPI_SUCCESS) err = PMPI_Type_get_extent(type, &lb, &extent);
    if (err == MPI_SUCCESS) err = PMPI_Type_get_true_extent(type, &true_lb, &true_extent);
    if (err != MPI_SUCCESS) return err;
    *contiguous = lb == 0 && true_lb == 0 && extent == size && true_extent == size;
    return MPI_SUCCESS;
}

#include <string.h>

/* What ct_pack and ct_unpack decide alike: a contiguous `type` is copied with memcpy; another
 * goes through PMPI_Pack/PMPI_Unpack, which take the bytes as an int and whose format must be
 * the data bytes alone (a pack size other than `bytes` is MPI_ERR_TYPE, raised). */
static int ct_pack_plan(int count, MPI_Datatype type, int64_t bytes, MPI_Comm comm,
                        int *contiguous)
{
    int size;
    int err = ct_type_contiguous(type, contiguous);
    if (err != MPI_SUCCESS || *contiguous) return err;
    if (bytes > INT_MAX) return ct_raise(comm, MPI_ERR_COUNT);
    if ((err = PMPI_Pack_size(count, type, comm, &size)) != MPI_SUCCESS) return err;
#ifdef COLLTUNE_ABI_FAMILY_SMPI
    /* SMPI answers count x max(size, extent), an upper bound as the standard allows
     * (src/smpi/bindings/smpi_pmpi_type.cpp:359 at v3.32), while its MPI_Pack writes the data
     * bytes alone (Datatype::pack: count x size) */
    size = size >= bytes ? (int)bytes : size;
#endif
    return size == bytes ? MPI_SUCCESS : ct_raise(comm, MPI_ERR_TYPE);
}

int ct_pack(const void *buf, int count, MPI_Datatype type, void *raw, int64_t bytes,
            MPI_Comm comm)
{
    int contiguous, position = 0;
    int err = ct_pack_plan(count, type, bytes, comm, &contiguous);
    if (err != MPI_SUCCESS) return err;
    if (!contiguous) return PMPI_Pack(buf, count, type, raw, (int)bytes, &position, comm);
    memcpy(raw, buf, (size_t)bytes);
    return MPI_SUCCESS;
}

int ct_unpack(const void *raw, int64_t bytes, void *buf, int count, MPI_Datatype type,
              MPI_Comm comm)
{
    int contiguous, position = 0;
    int err = ct_pack_plan(count, type, bytes, comm, &contiguous);
    if (err != MPI_SUCCESS) return err;
    if (!contiguous) return PMPI_Unpack(raw, (int)bytes, &position, buf, count, type, comm);
    memcpy(buf, raw, (size_t)bytes);
    return MPI_SUCCESS;
}

int ct_byte_blocks(MPI_Comm comm, int p, int holds, int count, MPI_Datatype type, ct_blocks *b)
{
    int64_t elem = 0;
    *b = (ct_blocks){0, 0, 0};
    int err = ct_type_size(type, &elem);
    b->block = elem * count;
    if (err != MPI_SUCCESS || !holds) return err;
    err = ct_type_contiguous(type, &b->contiguous);
    return err == MPI_SUCCESS ? ct_to_int(comm, (int64_t)p * count, &b->count) : err;
}

int ct_own_block(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int rank, void *raw, int64_t n,
                 MPI_Comm comm)
{
    if (sendbuf != MPI_IN_PLACE) return ct_pack(sendbuf, sendcount, sendtype, raw, n, comm);
    MPI_Aint lb, extent;
    int err = PMPI_Type_get_extent(recvtype, &lb, &extent);
    if (err != MPI_SUCCESS) return err;
    return ct_pack(ct_offset(recvbuf, (int64_t)rank * recvcount * extent), recvcount, recvtype,
                   raw, n, comm);
}

int ct_comm_size_rank(MPI_Comm comm, int *size, int *rank)
{
    int err = PMPI_Comm_size(comm, size);
    return err == MPI_SUCCESS ? PMPI_Comm_rank(comm, rank) : err;
}

int ct_comm_attr(MPI_Comm comm, int keyval, size_t size, void **attribute)
{
    int found = 0;
    int err = PMPI_Comm_get_attr(comm, keyval, attribute, &found);
    if (err != MPI_SUCCESS || found) return err;
    *attribute = calloc(1, size);
    if (*attribute == NULL) return MPI_ERR_NO_MEM;
    err = PMPI_Comm_set_attr(comm, keyval, *attribute);
    if (err != MPI_SUCCESS) {
        free(*attribute);
        *attribute = NULL;
    }
    return err;
}

int ct_comm_shape(MPI_Comm comm, MPI_Datatype type, int *size, int *rank, int64_t *elem)
{
    int err = ct_comm_size_rank(comm, size, rank);
    return err == MPI_SUCCESS ? ct_type_size(type, elem) : err;
}

static int64_t ct_chunk_elems(int64_t elem)
{
    int64_t chunk = (int64_t)colltune_chunk_bytes();
    if (elem <= 0) return chunk > 0 ? chunk : 1;
    return chunk / elem > 0 ? chunk / elem : 1;
}

int ct_chunk_split(int count, int64_t elem, int p, int *counts, int *displs)
{
    int64_t per = ct_chunk_elems(elem);
    int64_t chunks = (count + per - 1) / per;
    int64_t q = chunks / p, rem = chunks % p;
    int largest = 0;
    for (int i = 0; i < p; i++) {
        int64_t first = i * q + (i < rem ? i : rem);
        int64_t last = first + q + (i < rem ? 1 : 0);
        int64_t begin = first * per < count ? first * per : count;
        int64_t end = last * per < count ? last * per : count;
        displs[i] = (int)begin;
        counts[i] = (int)(end - begin);
        if (counts[i] > largest) largest = counts[i];
    }
    return largest;
}

int ct_scratch_args_of(const ct_call *call, ct_scratch_args *args)
{
    int p;
    int err = PMPI_Comm_size(call->comm, &p);
    if (err != MPI_SUCCESS) return err;
    int64_t n = colltune_call_bytes(call);
    if (n < 0) return MPI_ERR_TYPE;
    int64_t e = 1;
    if (ct_collectives[call->coll].elem == CT_ELEM_UNIFORM_TYPE) {
        err = ct_type_size(call->recvtype, &e);
        if (err != MPI_SUCCESS) return err;
    }
    args->n = n;
    args->p = p;
    args->e = e;
    args->C = e > 0 ? ct_chunk_elems(e) * e : ct_chunk_elems(1);
    int64_t unit = (int64_t)p * e;
    args->c = unit > 0 ? (unit - n % unit) % unit : 0;
    return MPI_SUCCESS;
}

int ct_op_predefined(MPI_Op op)
{
    static const MPI_Op predefined[] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND, MPI_BAND,
                                        MPI_LOR, MPI_BOR, MPI_LXOR, MPI_BXOR, MPI_MAXLOC,
                                        MPI_MINLOC, MPI_REPLACE, MPI_NO_OP};
    for (size_t i = 0; i < sizeof predefined / sizeof predefined[0]; i++)
        if (op == predefined[i]) return 1;
    return 0;
}

int ct_op_invertible(MPI_Op op, MPI_Datatype type)
{
    static const MPI_Datatype integers[] = {
        MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT,
        MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG,
        MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T,
        MPI_UINT32_T, MPI_UINT64_T};
    if (op != MPI_SUM && op != MPI_BXOR) return 0;
    if (op == MPI_BXOR && type == MPI_BYTE) return 1;
    for (size_t i = 0; i < sizeof integers / sizeof integers[0]; i++)
        if (type == integers[i]) return 1;
    return 0;
}
