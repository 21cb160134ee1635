/*
 * Profiling mode: the node's topology as Linux exposes it in /sys, for `colltune advise`'s
 * mapping finding (NUMA spread, device locality, rank 0 placement). Read at MPI_Finalize by
 * every rank (each rank's host may differ), written as raw facts the front end parses:
 *   numa N CPULIST              one line per NUMA node (/sys/devices/system/node/nodeN/cpulist)
 *   device CLASS/NAME NODE      network and InfiniBand devices' NUMA node (-1: the kernel does
 *                               not know), from /sys/class/{net,infiniband}/NAME/device/numa_node
 *   isolated CPULIST|-          cores kept free of OS work (isolcpus; "-": none configured)
 *   nohz_full CPULIST|-         cores without the scheduler tick
 *   loadavg L                   1-minute load average (/proc/loadavg): other users' work
 *                               competing for the cores, the application's own ranks included
 * No line where the file does not exist (then the front end says "unknown"). hwloc reads the
 * same files; libcolltune depends on MPI alone, so it reads them itself.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_profrun.h"

/* The first line of a small /sys file without its newline; 0 if it cannot be read. */
static int ct_sys_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0;
    int ok = fgets(buf, (int)len, f) != NULL;
    fclose(f);
    if (!ok)
        buf[0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return 1;
}

static void ct_topo_numa(FILE *out)
{
    DIR *d = opendir("/sys/devices/system/node");
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        if (strncmp(e->d_name, "node", 4) != 0)
            continue;
        long n = strtol(e->d_name + 4, &end, 10);
        char path[512], cpus[4096];
        if (end == e->d_name + 4 || *end != '\0')
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/node/%s/cpulist", e->d_name);
        if (ct_sys_line(path, cpus, sizeof cpus))
            fprintf(out, "numa %ld %s\n", n, cpus[0] ? cpus : "-");
    }
    closedir(d);
}

static void ct_topo_devices(FILE *out, const char *cls)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/sys/class/%s", cls);
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[512], node[32];
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s/device/numa_node", dir, e->d_name);
        if (ct_sys_line(path, node, sizeof node))   /* virtual devices (lo, bridges) have none */
            fprintf(out, "device %s/%s %s\n", cls, e->d_name, node[0] ? node : "-1");
    }
    closedir(d);
}

static void ct_topo_cpus(FILE *out, const char *key, const char *path)
{
    char cpus[4096];
    if (ct_sys_line(path, cpus, sizeof cpus))
        fprintf(out, "%s %s\n", key, cpus[0] ? cpus : "-");
}

void ct_topo_write(FILE *out)
{
    ct_topo_numa(out);
    ct_topo_devices(out, "net");
    ct_topo_devices(out, "infiniband");
    ct_topo_cpus(out, "isolated", "/sys/devices/system/cpu/isolated");
    ct_topo_cpus(out, "nohz_full", "/sys/devices/system/cpu/nohz_full");
    char load[128];
    if (ct_sys_line("/proc/loadavg", load, sizeof load) && load[0] != '\0')
        fprintf(out, "loadavg %.*s\n", (int)strcspn(load, " "), load);
}
