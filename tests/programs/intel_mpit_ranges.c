/* Every MPI_T control variable whose name starts with MPIR_CVAR_USE_ (Intel MPI's algorithm
 * settings, e.g. MPIR_CVAR_USE_IALLREDUCE, alias I_MPI_ADJUST_IALLREDUCE) with its description,
 * one per line: name, a tab, the description with its newlines as spaces. Only MPI_T, no
 * MPI_Init: the library lists what it knows, whatever the launch. tests/test_intel_mpit.py */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static void print_cvar(int index)
{
    char name[256], desc[4096];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope;
    MPI_Datatype datatype;
    MPI_T_enum enumtype;
    if (MPI_T_cvar_get_info(index, name, &name_len, &verbosity, &datatype, &enumtype, desc,
                            &desc_len, &bind, &scope) != MPI_SUCCESS
        || strncmp(name, "MPIR_CVAR_USE_", 14) != 0)
        return;
    for (char *p = desc; *p != '\0'; p++)
        if (*p == '\n' || *p == '\t') *p = ' ';
    printf("%s\t%s\n", name, desc);
}

int main(void)
{
    int provided, count;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS
        || MPI_T_cvar_get_num(&count) != MPI_SUCCESS) {
        fprintf(stderr, "intel_mpit_ranges: MPI_T is not available\n");
        return 1;
    }
    for (int i = 0; i < count; i++) print_cvar(i);
    MPI_T_finalize();
    return 0;
}
