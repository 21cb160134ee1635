/*
 * Profiling mode: the run's environment in dir/rank-N (see ct_profrun.h), written at MPI_Finalize
 * from facts gathered then, except the executable mappings, listed at MPI_Init (a library the
 * application dlopens later is then missing, one unloaded at exit is not): the library, host,
 * binding, OpenMP threads, the MPI_T control variables that matter to advice, and the node's
 * topology (topo.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <link.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct_formats.h"
#include "ct_profrun.h"

#define CT_MAPS_BYTES 65536
static char ct_maps[CT_MAPS_BYTES];               /* executable mappings at MPI_Init */
static size_t ct_maps_used;

/* One `map` line, in /proc/self/maps' layout (what the front end parses): the segment's pages,
 * their file offset, the file. */
static void ct_maps_add(uintptr_t start, uintptr_t end, uintptr_t offset, const char *path)
{
    int n = snprintf(ct_maps + ct_maps_used, sizeof ct_maps - ct_maps_used,
                     "map %lx-%lx r-xp %08lx 00:00 0 %s\n", (unsigned long)start,
                     (unsigned long)end, (unsigned long)offset, path);
    if (n > 0 && (size_t)n < sizeof ct_maps - ct_maps_used)
        ct_maps_used += (size_t)n;
    else
        ct_maps[ct_maps_used] = '\0';   /* full: the objects that fitted */
}

static int ct_maps_object(struct dl_phdr_info *info, size_t size, void *self_exe)
{
    (void)size;
    /* the program itself has no name here; the vDSO's has no '/' (no file to resolve in) */
    const char *path = info->dlpi_name[0] != '\0' ? info->dlpi_name : (const char *)self_exe;
    if (path[0] == '\0' || strchr(path, '/') == NULL)
        return 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t start = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
        ct_maps_add(start & ~(page - 1), (start + ph->p_memsz + page - 1) & ~(page - 1),
                    (uintptr_t)ph->p_offset & ~(page - 1), path);
    }
    return 0;
}

/* The executable segments of the loaded objects, for the front end to resolve call sites
 * (addr2line). Read at every profiled MPI_Init, so from the loader's own list: reading
 * /proc/self/maps had the kernel print every mapping of the process (OpenFOAM's ~500 lines) at
 * ~0.5 ms a rank, 0.1% of a short OpenFOAM run; this walks the loaded objects' program headers
 * in memory. Only the program's path costs a system call. */
void ct_profenv_read_maps(void)
{
    char self_exe[4096];
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    self_exe[n > 0 ? n : 0] = '\0';
    ct_maps_used = 0;
    ct_maps[0] = '\0';
    dl_iterate_phdr(ct_maps_object, self_exe);
}

/* MPI_T control variables that matter to advice: eager/rendezvous limits of the transports and
 * collective algorithm selection (Open MPI coll_tuned_*, MPICH MPIR_CVAR_*_ALGORITHM). */
static int ct_cvar_wanted(const char *name)
{
    static const char *const keys[] = {"eager", "rndv", "rendezvous", "algorithm", "coll_tuned",
                                       "max_send_size", "ASYNC_PROGRESS"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcasestr(name, keys[i]) != NULL)
            return 1;
    /* Open MPI's component selections: which transport's thresholds apply. */
    return strcmp(name, "pml") == 0 || strcmp(name, "btl") == 0;
}

static void ct_cvar_print(FILE *out, int index, const char *name, MPI_Datatype type)
{
    MPI_T_cvar_handle handle;
    int count;
    if (MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) != MPI_SUCCESS)
        return;
    union { int i; unsigned u; long l; unsigned long ul; long long ll; unsigned long long ull;
            double d; char s[512]; } v;
    memset(&v, 0, sizeof v);
    if (count == 1 || type == MPI_CHAR) {
        if ((type != MPI_CHAR || count < (int)sizeof v.s)
            && MPI_T_cvar_read(handle, &v) == MPI_SUCCESS) {
            if (type == MPI_INT) fprintf(out, "cvar %s %d\n", name, v.i);
            else if (type == MPI_UNSIGNED) fprintf(out, "cvar %s %u\n", name, v.u);
            else if (type == MPI_LONG) fprintf(out, "cvar %s %ld\n", name, v.l);
            else if (type == MPI_UNSIGNED_LONG) fprintf(out, "cvar %s %lu\n", name, v.ul);
            else if (type == MPI_LONG_LONG) fprintf(out, "cvar %s %lld\n", name, v.ll);
            else if (type == MPI_UNSIGNED_LONG_LONG) fprintf(out, "cvar %s %llu\n", name, v.ull);
            else if (type == MPI_DOUBLE) fprintf(out, "cvar %s %.17g\n", name, v.d);
            else if (type == MPI_CHAR) fprintf(out, "cvar %s %s\n", name, v.s[0] ? v.s : "-");
        }
    }
    MPI_T_cvar_handle_free(&handle);
}

/* Open MPI before 5 loads every component's parameters at the first MPI_T_init_thread: 0.21 s
 * here, 3% of an ExaML run, on the critical path of MPI_Finalize. There the front end reads the
 * same variables with the library's ompi_info (advise/ompi_cvars.py) instead. */
static int ct_mpit_costly(const char *library)
{
    return strncmp(library, "Open MPI v", 10) == 0 && library[10] >= '1' && library[10] <= '4'
           && library[11] == '.';
}

static void ct_write_cvars(FILE *out, const char *library)
{
    int provided, num;
    if (ct_mpit_costly(library)) {
        fprintf(out, "cvars_skipped ompi_info\n");
        return;
    }
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return;
    if (MPI_T_cvar_get_num(&num) == MPI_SUCCESS) {
        for (int i = 0; i < num; i++) {
            char name[256], desc[8];
            int nlen = sizeof name, dlen = sizeof desc, verb, bind, scope;
            MPI_Datatype type;
            MPI_T_enum etype;
            if (MPI_T_cvar_get_info(i, name, &nlen, &verb, &type, &etype, desc, &dlen, &bind,
                                    &scope) != MPI_SUCCESS)
                continue;
            if (bind == MPI_T_BIND_NO_OBJECT && ct_cvar_wanted(name))
                ct_cvar_print(out, i, name, type);
        }
    }
    MPI_T_finalize();
}

void ct_profenv_write(FILE *out, int rank, int nprocs, uint64_t wall, unsigned long every,
                      uint64_t budget_ppm)
{
    char host[MPI_MAX_PROCESSOR_NAME + 1] = "", lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
    int len = 0;
    PMPI_Get_processor_name(host, &len);
    PMPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl != NULL)
        *nl = '\0';
    const char *omp = getenv("OMP_NUM_THREADS");
    fprintf(out, CT_PROFRUN_MAGIC " %d\nrank %d\nnprocs %d\nwall_ns %llu\nhost %s\n"
                 "library %s\ncores_online %ld\nomp_num_threads %s\nsample_every %lu\n",
            CT_PROFRUN_VERSION, rank, nprocs, (unsigned long long)wall, host, lib,
            sysconf(_SC_NPROCESSORS_ONLN), omp != NULL && omp[0] ? omp : "-", every);
    fprintf(out, "sample_budget_ppm %llu\n", (unsigned long long)budget_ppm);
    cpu_set_t set;
    CPU_ZERO(&set);
    fprintf(out, "affinity");
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &set))
                fprintf(out, " %d", c);
    fprintf(out, "\n");
    fputs(ct_maps, out);
    ct_topo_write(out);
    ct_write_cvars(out, lib);
}
