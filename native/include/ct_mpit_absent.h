/*
 * MPI_T for a library that has none: SimGrid SMPI. Its smpi.h (3.32) defines MPI_T's error codes
 * (the FOREACH_ERROR list) but declares none of MPI_T's types or functions, and libsimgrid exports
 * none. colltune's code asks MPI_T which algorithm variables exist; here the answer is "the tools
 * interface cannot start" (MPI_T_ERR_CANNOT_INIT), which every caller already treats as a library
 * without run-time algorithm choice. SMPI's algorithms are chosen per launch instead
 * (`--cfg=smpi/<collective>:<algorithm>`, core/libalg.c).
 */
#ifndef CT_MPIT_ABSENT_H
#define CT_MPIT_ABSENT_H

#include <mpi.h>

typedef int MPI_T_cvar_handle;
typedef int MPI_T_enum;
#define MPI_T_ENUM_NULL 0
#define MPI_T_CVAR_HANDLE_NULL 0
#define MPI_T_BIND_NO_OBJECT 0

static inline int ct_mpit_absent(void) { return MPI_T_ERR_CANNOT_INIT; }

static inline int MPI_T_init_thread(int required, int *provided)
{
    (void)required;
    *provided = MPI_THREAD_SINGLE;
    return ct_mpit_absent();
}
static inline int MPI_T_finalize(void) { return ct_mpit_absent(); }
static inline int MPI_T_cvar_get_num(int *num)
{
    *num = 0;
    return ct_mpit_absent();
}
static inline int MPI_T_cvar_get_index(const char *name, int *index)
{
    (void)name, (void)index;
    return ct_mpit_absent();
}
static inline int MPI_T_cvar_get_info(int index, char *name, int *name_len, int *verbosity,
                                      MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc,
                                      int *desc_len, int *bind, int *scope)
{
    (void)index, (void)name, (void)name_len, (void)verbosity, (void)datatype, (void)enumtype;
    (void)desc, (void)desc_len, (void)bind, (void)scope;
    return ct_mpit_absent();
}
static inline int MPI_T_cvar_handle_alloc(int index, void *obj, MPI_T_cvar_handle *handle, int *count)
{
    (void)index, (void)obj, (void)handle, (void)count;
    return ct_mpit_absent();
}
static inline int MPI_T_cvar_handle_free(MPI_T_cvar_handle *handle)
{
    (void)handle;
    return ct_mpit_absent();
}
static inline int MPI_T_cvar_read(MPI_T_cvar_handle handle, void *buf)
{
    (void)handle, (void)buf;
    return ct_mpit_absent();
}
static inline int MPI_T_cvar_write(MPI_T_cvar_handle handle, const void *buf)
{
    (void)handle, (void)buf;
    return ct_mpit_absent();
}
static inline int MPI_T_enum_get_info(MPI_T_enum enumtype, int *num, char *name, int *name_len)
{
    (void)enumtype, (void)name, (void)name_len;
    *num = 0;
    return ct_mpit_absent();
}
static inline int MPI_T_enum_get_item(MPI_T_enum enumtype, int index, int *value, char *name,
                                      int *name_len)
{
    (void)enumtype, (void)index, (void)value, (void)name, (void)name_len;
    return ct_mpit_absent();
}

#endif /* CT_MPIT_ABSENT_H */
