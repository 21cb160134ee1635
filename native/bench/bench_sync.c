/*
 * Synchronization before each repetition: MPI_Barrier, a dissemination barrier on PMPI
 * point-to-point, a start window on clocks synchronized against rank 0, or none (back to back).
 */
#define _POSIX_C_SOURCE 200809L /* sched_yield */

#include <math.h>
#include <sched.h>
#include <string.h>

#include "bench.h"

#define CT_TAG_BARRIER 7301
#define CT_TAG_CLOCK 7302
#define CT_SPIN_S 20e-6

const char *ct_sync_name(ct_sync_method method)
{
    switch (method) {
    case CT_SYNC_BARRIER: return "barrier";
    case CT_SYNC_DISSEMINATION: return "dissemination";
    case CT_SYNC_WINDOW: return "window";
    case CT_SYNC_NONE: return "none";
    }
    return "unknown";
}

int ct_sync_parse(const char *text, ct_sync_method *method)
{
    for (int m = CT_SYNC_BARRIER; m <= CT_SYNC_NONE; m++) {
        if (strcmp(text, ct_sync_name((ct_sync_method)m)) == 0) {
            *method = (ct_sync_method)m;
            return 0;
        }
    }
    return -1;
}

int ct_dissemination_barrier(MPI_Comm comm)
{
    int rank, size, rc;
    if ((rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return rc;
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS)
        return rc;
    for (int dist = 1; dist < size; dist *= 2) {
        int to = (rank + dist) % size;
        int from = (rank - dist + size) % size;
        rc = PMPI_Sendrecv(NULL, 0, MPI_BYTE, to, CT_TAG_BARRIER, NULL, 0, MPI_BYTE, from,
                           CT_TAG_BARRIER, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

int ct_wait_until(const ct_clock *clock, double target)
{
    double now = ct_global_time(clock);
    if (now > target)
        return 1;
    /* Far from the start, give the core away: with more ranks than cores a spinning rank
     * would keep the late ones from running at all. The last stretch is a pure spin. */
    while (target - now > CT_SPIN_S) {
        sched_yield();
        now = ct_global_time(clock);
    }
    while (now < target)
        now = ct_global_time(clock);
    return 0;
}

/* Rank 0 answers `pingpongs` pings of rank `peer` with its own clock reading. */
static int serve_peer(MPI_Comm comm, int peer, int pingpongs)
{
    for (int i = 0; i < pingpongs; i++) {
        double ignored, now;
        int rc = PMPI_Recv(&ignored, 1, MPI_DOUBLE, peer, CT_TAG_CLOCK, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
        now = MPI_Wtime();
        rc = PMPI_Send(&now, 1, MPI_DOUBLE, peer, CT_TAG_CLOCK, comm);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    return MPI_SUCCESS;
}

/* The root's reading lies between our send and receive times, so the midpoint estimate of the
 * sample with the smallest round trip is off by at most rtt / 2. */
static int ping_root(MPI_Comm comm, int pingpongs, ct_clock *clock)
{
    clock->rtt = INFINITY;
    clock->offset = 0.0;
    for (int i = 0; i < pingpongs; i++) {
        double t0 = MPI_Wtime(), root_time;
        int rc = PMPI_Send(&t0, 1, MPI_DOUBLE, 0, CT_TAG_CLOCK, comm);
        if (rc != MPI_SUCCESS)
            return rc;
        rc = PMPI_Recv(&root_time, 1, MPI_DOUBLE, 0, CT_TAG_CLOCK, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rc;
        double t1 = MPI_Wtime();
        if (t1 - t0 < clock->rtt) {
            clock->rtt = t1 - t0;
            clock->offset = root_time - 0.5 * (t0 + t1);
        }
    }
    return MPI_SUCCESS;
}

int ct_clock_sync(MPI_Comm comm, int pingpongs, ct_clock *clock)
{
    int rank, size, rc;
    if ((rc = PMPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return rc;
    if ((rc = PMPI_Comm_size(comm, &size)) != MPI_SUCCESS)
        return rc;
    if (pingpongs < 1)
        pingpongs = 1;
    clock->offset = 0.0;
    clock->rtt = 0.0;
    /* One peer at a time: rank 0 must not be busy with another peer while a ping is in flight,
     * or the round trip includes queueing and the bound loosens. */
    if (rank == 0) {
        for (int peer = 1; peer < size; peer++)
            if ((rc = serve_peer(comm, peer, pingpongs)) != MPI_SUCCESS)
                return rc;
    } else if ((rc = ping_root(comm, pingpongs, clock)) != MPI_SUCCESS) {
        return rc;
    }
    return PMPI_Barrier(comm);
}
