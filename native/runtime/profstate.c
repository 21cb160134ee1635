/*
 * Profiling mode: its switches (ct_profrun.h), the bottom of the mode. profrun.c sets them at
 * MPI_Init and clears them at MPI_Finalize; the generated wrappers, the call path (profcall.c)
 * and modes.c's route names read them. Kept apart so that what reads them needs nothing of the
 * files that time and record calls.
 */
#include "ct_profrun.h"
#include "ct_runtime.h"

CT_HIDDEN CT_HOT_DATA unsigned char ct_profrun_on;
CT_HIDDEN CT_HOT_DATA unsigned char ct_p2p_on;
CT_HIDDEN CT_HOT_DATA int ct_profrun_mt;
CT_HIDDEN CT_HOT_DATA unsigned char ct_profrun_by_modes[CT_NUM_COLLECTIVES];
CT_HIDDEN _Thread_local ct_profrun_thread ct_profrun_me;

int ct_profrun_served(int coll)
{
    return coll >= 0 && coll < CT_NUM_COLLECTIVES && ct_profrun_by_modes[coll];
}
