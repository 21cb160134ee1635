/*
 * Collective requests followed to their completion (ct_watch.h): the requests the watched
 * nonblocking and persistent functions make, MPI_Start/MPI_Startall, MPI_Request_free and the
 * Wait/Test family. The time a Wait/Test call spends is shared among the active requests it was
 * given; a collective request's share is its waiting, and at its completion the point of the
 * call that made it gets (completed, waiting, start-to-completion span): the overlap the
 * application got is the span less the waiting. Point-to-point requests are untouched: a call
 * given none of the followed requests takes the point-to-point path (the profiling mode's p2p
 * record of Wait/Waitall/Waitany, as before).
 *
 * The map: request handle -> (function, point, persistent, operation's start, waiting so far),
 * open addressing with tombstones in a fixed table, under a spin lock (only while counting or
 * profiling, and only when the call was given a followed request: ct_req_live). A request that
 * finds the table full is not followed (counted as lost in nothing: its completions are then
 * missing from the counts, which the test program's exact counts would show).
 */
#include <stdatomic.h>
#include <string.h>

#include "ct_profrun_impl.h"
#include "ct_watch.h"

#define CT_REQ_SLOTS 4096
_Static_assert((CT_REQ_SLOTS & (CT_REQ_SLOTS - 1)) == 0, "a power of two (a mask)");

enum { CT_SLOT_EMPTY, CT_SLOT_USED, CT_SLOT_GONE };

typedef struct ct_req {
    uint64_t key;            /* the request handle's bits */
    int state;               /* CT_SLOT_* */
    int fn;                  /* ct_fn_id of the function that made it */
    int persistent, active;  /* a persistent request is inactive between its operations */
    ct_point *point;         /* the profiling mode's point of that call, or NULL */
    uint64_t start;          /* ticks at the start of the current operation */
    uint64_t waited;         /* ticks of Wait/Test shared to it in the current operation */
} ct_req;

static ct_req ct_reqs[CT_REQ_SLOTS];
static atomic_int ct_req_live;           /* followed requests: 0 lets Wait/Test skip the map */
static int ct_req_gone;                  /* tombstones */
static atomic_flag ct_req_lock = ATOMIC_FLAG_INIT;

static void ct_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&ct_req_lock, memory_order_acquire)) {
    }
}

static void ct_unlock(void)
{
    atomic_flag_clear_explicit(&ct_req_lock, memory_order_release);
}

static uint64_t ct_key(MPI_Request request)
{
    uint64_t key = 0;
    memcpy(&key, &request, sizeof request < sizeof key ? sizeof request : sizeof key);
    return key;
}

static size_t ct_hash(uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ (h >> 29)) & (CT_REQ_SLOTS - 1);
}

/* The used slot of `key`, or NULL (under the lock). */
static ct_req *ct_find(uint64_t key)
{
    for (size_t i = ct_hash(key), probe = 0; probe < CT_REQ_SLOTS; probe++, i = (i + 1) & (CT_REQ_SLOTS - 1)) {
        ct_req *r = &ct_reqs[i];
        if (r->state == CT_SLOT_EMPTY)
            return NULL;
        if (r->state == CT_SLOT_USED && r->key == key)
            return r;
    }
    return NULL;
}

static void ct_drop(ct_req *r)
{
    r->state = CT_SLOT_GONE;
    ct_req_gone++;
    atomic_fetch_sub_explicit(&ct_req_live, 1, memory_order_relaxed);
    if (atomic_load_explicit(&ct_req_live, memory_order_relaxed) == 0) {   /* all gone: reset */
        memset(ct_reqs, 0, sizeof ct_reqs);
        ct_req_gone = 0;
    }
}

void ct_req_add(MPI_Request request, int fn, ct_point *point, int persistent, uint64_t start)
{
    uint64_t key = ct_key(request);
    ct_lock();
    ct_req *old = ct_find(key);   /* a handle the library reused after a request we missed */
    if (old != NULL)
        ct_drop(old);
    if (atomic_load_explicit(&ct_req_live, memory_order_relaxed) + ct_req_gone < CT_REQ_SLOTS - 1) {
        for (size_t i = ct_hash(key);; i = (i + 1) & (CT_REQ_SLOTS - 1)) {
            ct_req *r = &ct_reqs[i];
            if (r->state == CT_SLOT_USED)
                continue;
            if (r->state == CT_SLOT_GONE)
                ct_req_gone--;
            *r = (ct_req){key, CT_SLOT_USED, fn, persistent, !persistent, point, start, 0};
            atomic_fetch_add_explicit(&ct_req_live, 1, memory_order_relaxed);
            break;
        }
    }
    ct_unlock();
}

void ct_req_clear(void)
{
    ct_lock();
    memset(ct_reqs, 0, sizeof ct_reqs);
    ct_req_gone = 0;
    atomic_store(&ct_req_live, 0);
    ct_unlock();
}

void ct_req_started(MPI_Request request, uint64_t t0)
{
    if (atomic_load_explicit(&ct_req_live, memory_order_relaxed) == 0)
        return;
    ct_lock();
    ct_req *r = ct_find(ct_key(request));
    if (r != NULL && r->persistent) {
        r->active = 1;
        r->start = t0;
        r->waited = 0;
        ct_req_count_start(r->fn);
        if (r->point != NULL)
            atomic_fetch_add_explicit(&r->point->req_starts, 1, memory_order_relaxed);
    }
    ct_unlock();
}

void ct_req_freed(MPI_Request request)
{
    if (atomic_load_explicit(&ct_req_live, memory_order_relaxed) == 0)
        return;
    ct_lock();
    ct_req *r = ct_find(ct_key(request));
    if (r != NULL)
        ct_drop(r);
    ct_unlock();
}

int ct_req_begin(ct_reqwatch *w, int count, const MPI_Request *requests)
{
    w->n = 0;
    w->total = 0;
    w->t0 = ct_watch_clock();
    if (atomic_load_explicit(&ct_req_live, memory_order_relaxed) == 0 || requests == NULL)
        return 0;
    ct_lock();
    for (int i = 0; i < count; i++) {
        if (requests[i] == MPI_REQUEST_NULL)
            continue;
        w->total++;
        ct_req *r = ct_find(ct_key(requests[i]));
        if (r != NULL && r->active && w->n < CT_REQ_BATCH) {
            w->at[w->n] = i;
            w->key[w->n] = r->key;
            w->n++;
        }
    }
    ct_unlock();
    return w->n;
}

static int ct_listed(int i, const int *list, int n)
{
    for (int k = 0; k < n; k++)
        if (list[k] == i)
            return 1;
    return 0;
}

uint64_t ct_req_end(ct_reqwatch *w, int all, int index, const int *list, int n_list)
{
    uint64_t t1 = ct_watch_clock(), dt = t1 > w->t0 ? t1 - w->t0 : 0;
    if (w->n == 0)
        return dt;
    uint64_t share = w->total > 0 ? dt / (uint64_t)w->total : 0;
    ct_lock();
    for (int k = 0; k < w->n; k++) {
        ct_req *r = ct_find(w->key[k]);
        if (r == NULL || !r->active)
            continue;
        r->waited += share;
        int i = w->at[k];
        if (!(all || i == index || (list != NULL && ct_listed(i, list, n_list))))
            continue;
        ct_req_count_completion(r->fn);
        if (r->point != NULL) {
            atomic_fetch_add_explicit(&r->point->req_done, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&r->point->req_wait_ns, r->waited, memory_order_relaxed);
            atomic_fetch_add_explicit(&r->point->req_span_ns, t1 > r->start ? t1 - r->start : 0,
                                      memory_order_relaxed);
        }
        if (r->persistent)
            r->active = 0;
        else
            ct_drop(r);
    }
    ct_unlock();
    return share * (uint64_t)(w->total - w->n);
}

/* ---- the wrappers --------------------------------------------------------------------------- */

/* A completion call's point-to-point part into the profiling mode's p2p table (p2p.toml's Wait/Test
 * family; only where it was given other requests than followed collective ones). */
static void ct_p2p_part(ct_p2p_call call, const void *site, const ct_reqwatch *w, uint64_t ticks)
{
    if (ct_p2p_on && !ct_profrun_inside && (w->n == 0 || w->total > w->n))
        ct_profrun_p2p(call, site, 0, ticks);
}

static __attribute__((noinline)) int ct_watched_wait(const void *site, MPI_Request *request,
                                                     MPI_Status *status)
{
    ct_reqwatch w;
    ct_req_begin(&w, 1, request);
    int rc = PMPI_Wait(request, status);
    ct_p2p_part(CT_P2P_WAIT, site, &w, ct_req_end(&w, rc == MPI_SUCCESS, -1, NULL, 0));
    return rc;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Wait(request, status);
    return ct_watched_wait(ct_watch_site(__builtin_return_address(0)), request, status);
}

static __attribute__((noinline)) int ct_watched_waitall(const void *site, int count,
                                                        MPI_Request requests[],
                                                        MPI_Status statuses[])
{
    ct_reqwatch w;
    ct_req_begin(&w, count, requests);
    int rc = PMPI_Waitall(count, requests, statuses);
    /* MPI_ERR_IN_STATUS: some completed; the followed ones are then not counted (rare) */
    ct_p2p_part(CT_P2P_WAITALL, site, &w, ct_req_end(&w, rc == MPI_SUCCESS, -1, NULL, 0));
    return rc;
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Waitall(count, requests, statuses);
    return ct_watched_waitall(ct_watch_site(__builtin_return_address(0)), count, requests, statuses);
}

static __attribute__((noinline)) int ct_watched_waitany(const void *site, int count,
                                                        MPI_Request requests[], int *index,
                                                        MPI_Status *status)
{
    ct_reqwatch w;
    ct_req_begin(&w, count, requests);
    int rc = PMPI_Waitany(count, requests, index, status);
    int done = rc == MPI_SUCCESS && *index != MPI_UNDEFINED ? *index : -1;
    ct_p2p_part(CT_P2P_WAITANY, site, &w, ct_req_end(&w, 0, done, NULL, 0));
    return rc;
}

int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Waitany(count, requests, index, status);
    return ct_watched_waitany(ct_watch_site(__builtin_return_address(0)), count, requests, index,
                              status);
}

static __attribute__((noinline)) int ct_watched_waitsome(const void *site, int incount, MPI_Request requests[],
                                                         int *outcount, int indices[],
                                                         MPI_Status statuses[])
{
    ct_reqwatch w;
    ct_req_begin(&w, incount, requests);
    int rc = PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    int n = rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED ? *outcount : 0;
    ct_p2p_part(CT_P2P_WAITSOME, site, &w, ct_req_end(&w, 0, -1, indices, n));
    return rc;
}

int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    return ct_watched_waitsome(ct_watch_site(__builtin_return_address(0)), incount, requests,
                               outcount, indices, statuses);
}

static __attribute__((noinline)) int ct_watched_test(const void *site, MPI_Request *request, int *flag,
                                                     MPI_Status *status)
{
    ct_reqwatch w;
    ct_req_begin(&w, 1, request);
    int rc = PMPI_Test(request, flag, status);
    ct_p2p_part(CT_P2P_TEST, site, &w, ct_req_end(&w, rc == MPI_SUCCESS && *flag, -1, NULL, 0));
    return rc;
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Test(request, flag, status);
    return ct_watched_test(ct_watch_site(__builtin_return_address(0)), request, flag, status);
}

static __attribute__((noinline)) int ct_watched_testall(const void *site, int count, MPI_Request requests[],
                                                        int *flag, MPI_Status statuses[])
{
    ct_reqwatch w;
    ct_req_begin(&w, count, requests);
    int rc = PMPI_Testall(count, requests, flag, statuses);
    ct_p2p_part(CT_P2P_TESTALL, site, &w, ct_req_end(&w, rc == MPI_SUCCESS && *flag, -1, NULL, 0));
    return rc;
}

int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Testall(count, requests, flag, statuses);
    return ct_watched_testall(ct_watch_site(__builtin_return_address(0)), count, requests, flag,
                              statuses);
}

static __attribute__((noinline)) int ct_watched_testany(const void *site, int count, MPI_Request requests[],
                                                        int *index, int *flag, MPI_Status *status)
{
    ct_reqwatch w;
    ct_req_begin(&w, count, requests);
    int rc = PMPI_Testany(count, requests, index, flag, status);
    int done = rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED ? *index : -1;
    ct_p2p_part(CT_P2P_TESTANY, site, &w, ct_req_end(&w, 0, done, NULL, 0));
    return rc;
}

int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Testany(count, requests, index, flag, status);
    return ct_watched_testany(ct_watch_site(__builtin_return_address(0)), count, requests, index,
                              flag, status);
}

static __attribute__((noinline)) int ct_watched_testsome(const void *site, int incount, MPI_Request requests[],
                                                         int *outcount, int indices[],
                                                         MPI_Status statuses[])
{
    ct_reqwatch w;
    ct_req_begin(&w, incount, requests);
    int rc = PMPI_Testsome(incount, requests, outcount, indices, statuses);
    int n = rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED ? *outcount : 0;
    ct_p2p_part(CT_P2P_TESTSOME, site, &w, ct_req_end(&w, 0, -1, indices, n));
    return rc;
}

int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Testsome(incount, requests, outcount, indices, statuses);
    return ct_watched_testsome(ct_watch_site(__builtin_return_address(0)), incount, requests,
                               outcount, indices, statuses);
}

static __attribute__((noinline)) int ct_watched_start(MPI_Request *request)
{
    uint64_t t0 = ct_watch_clock();
    int rc = PMPI_Start(request);
    if (rc == MPI_SUCCESS)
        ct_req_started(*request, t0);
    return rc;
}

int MPI_Start(MPI_Request *request)
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Start(request);
    return ct_watched_start(request);
}

static __attribute__((noinline)) int ct_watched_startall(int count, MPI_Request requests[])
{
    uint64_t t0 = ct_watch_clock();
    int rc = PMPI_Startall(count, requests);
    if (rc == MPI_SUCCESS)
        for (int i = 0; i < count; i++)
            ct_req_started(requests[i], t0);
    return rc;
}

int MPI_Startall(int count, MPI_Request requests[])
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Startall(count, requests);
    return ct_watched_startall(count, requests);
}

static __attribute__((noinline)) int ct_watched_request_free(MPI_Request *request)
{
    MPI_Request before = *request;
    int rc = PMPI_Request_free(request);
    if (rc == MPI_SUCCESS)
        ct_req_freed(before);
    return rc;
}

int MPI_Request_free(MPI_Request *request)
{
    if (CT_LIKELY(!ct_watch))
        return PMPI_Request_free(request);
    return ct_watched_request_free(request);
}
