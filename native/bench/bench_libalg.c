/*
 * The library's control variables as environment records of a launch (the forcing of library
 * algorithms itself is native/core/libalg.c, shared with the selftest).
 */
#include <string.h>

#include "bench.h"

static int matches(const char *name, const char *const *needles, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (strstr(name, needles[i]))
            return 1;
    return 0;
}

/* One JSON line per scalar control variable: {"type":"cvar","name":...,"value":...}. */
int ct_libalg_dump_cvars(FILE *out, const char *const *needles, size_t count)
{
    int n;
    int rc = MPI_T_cvar_get_num(&n);
    if (rc != MPI_SUCCESS)
        return rc;
    for (int i = 0; i < n; i++) {
        char name[256];
        int len = sizeof name, verb, bind, scope, elements;
        MPI_Datatype dt;
        MPI_T_enum en;
        MPI_T_cvar_handle handle;
        if (MPI_T_cvar_get_info(i, name, &len, &verb, &dt, &en, NULL, NULL, &bind, &scope)
                != MPI_SUCCESS
            || bind != MPI_T_BIND_NO_OBJECT || !matches(name, needles, count))
            continue;
        if (MPI_T_cvar_handle_alloc(i, NULL, &handle, &elements) != MPI_SUCCESS)
            continue;
        char text[512] = "";
        if (dt == MPI_INT && elements == 1) {
            int v;
            if (MPI_T_cvar_read(handle, &v) == MPI_SUCCESS)
                snprintf(text, sizeof text, "%d", v);
        } else if (dt == MPI_UNSIGNED && elements == 1) {
            unsigned v;
            if (MPI_T_cvar_read(handle, &v) == MPI_SUCCESS)
                snprintf(text, sizeof text, "%u", v);
        } else if (dt == MPI_C_BOOL && elements == 1) { /* Open MPI's boolean MCA parameters */
            _Bool v;
            if (MPI_T_cvar_read(handle, &v) == MPI_SUCCESS)
                snprintf(text, sizeof text, "%d", (int)v);
        } else if (dt == MPI_DOUBLE && elements == 1) {
            double v;
            if (MPI_T_cvar_read(handle, &v) == MPI_SUCCESS)
                snprintf(text, sizeof text, "%.17g", v);
        } else if (dt == MPI_CHAR && elements > 0 && (size_t)elements < sizeof text) {
            if (MPI_T_cvar_read(handle, text) != MPI_SUCCESS)
                text[0] = '\0';
            text[sizeof text - 1] = '\0';
        }
        MPI_T_cvar_handle_free(&handle);
        fputs("{\"type\":\"cvar\",\"name\":", out);
        ct_out_json_string(out, name);
        fputs(",\"value\":", out);
        ct_out_json_string(out, text);
        fputs("}\n", out);
    }
    return MPI_SUCCESS;
}
