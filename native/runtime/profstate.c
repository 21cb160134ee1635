/*
 * Profiling mode: its switches (ct_profrun.h), the bottom of the mode. profrun.c sets them at
 * MPI_Init and clears them at MPI_Finalize; the generated wrappers, the call path (profcall.c)
 * and modes.c's route names read them. Kept apart so that what reads them needs nothing of the
 * files that time and record calls.
 */
#include "ct_profrun.h"
#include "ct_runtime.h"

CT_HIDDEN CT_HOT_DATA unsigned char ct_profrun_on;
/* (ct_hot.h: ct_active and ct_p2p_on are their first bytes) */
CT_HIDDEN CT_HOT_DATA ct_hot_coll_line ct_coll_line = {
    .left = {[0 ... CT_LIGHT_COLLS - 1] = CT_POLL_SHUT},
    .comm = MPI_COMM_NULL,
};
CT_HIDDEN CT_HOT_DATA ct_hot_p2p_line ct_p2p_line = {
    .left = {[0 ... CT_P2P_LIGHT_SLOTS - 1] = CT_POLL_SHUT},
};
CT_HIDDEN CT_HOT_DATA int ct_profrun_mt;
CT_HIDDEN CT_HOT_DATA uint64_t ct_coll_light_calls;
CT_HIDDEN CT_HOT_DATA unsigned char ct_profrun_by_modes[CT_NUM_COLLECTIVES];
CT_HIDDEN _Thread_local ct_profrun_thread ct_profrun_me;

int ct_profrun_served(int coll)
{
    return coll >= 0 && coll < CT_NUM_COLLECTIVES && ct_profrun_by_modes[coll];
}
