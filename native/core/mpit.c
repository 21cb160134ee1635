/*
 * MPI_T helpers for choosing the library's own collective algorithms (ct_mpit.h).
 *
 * MPICH declares its algorithm variables as plain integers and documents the enumeration in the
 * description, one "name - text" line per value in value order (other lines are prose); Open MPI
 * declares a real MPI_T enumeration.
 */
#include "ct_mpit.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#if MPI_VERSION < 4
/* The name of control variable i into buf (before MPI 4 there is no lookup by name: callers
 * walk the variables); 0, or -1 if the library does not describe it. */
static int ct_cvar_name(int i, char buf[256])
{
    int len = 256, verb, bind, scope;
    MPI_Datatype dt;
    MPI_T_enum en;
    int err = MPI_T_cvar_get_info(i, buf, &len, &verb, &dt, &en, NULL, NULL, &bind, &scope);
    return err == MPI_SUCCESS ? 0 : -1;
}
#endif

int ct_mpit_find(const char *name, int *index)
{
#if MPI_VERSION >= 4
    return MPI_T_cvar_get_index(name, index) == MPI_SUCCESS ? 0 : -1;
#else
    int n;
    if (MPI_T_cvar_get_num(&n) != MPI_SUCCESS)
        return -1;
    for (int i = 0; i < n; i++) {
        char buf[256];
        if (ct_cvar_name(i, buf) == 0 && strcmp(buf, name) == 0) {
            *index = i;
            return 0;
        }
    }
    return -1;
#endif
}

void ct_mpit_find_all(const char *const *names, int n, int *indices)
{
#if MPI_VERSION >= 4
    for (int k = 0; k < n; k++)
        if (ct_mpit_find(names[k], &indices[k]) != 0)
            indices[k] = -1;
#else
    int count;
    size_t common = n > 0 ? strlen(names[0]) : 0;   /* the names' common prefix: most variables
                                                      * are told apart by their first bytes */
    for (int k = 0; k < n; k++) {
        indices[k] = -1;
        size_t j = 0;
        while (j < common && names[k][j] == names[0][j])
            j++;
        common = j;
    }
    if (MPI_T_cvar_get_num(&count) != MPI_SUCCESS)
        return;
    for (int i = 0; i < count; i++) {
        char buf[256];
        if (ct_cvar_name(i, buf) != 0 || strncmp(buf, names[0], common) != 0)
            continue;
        for (int k = 0; k < n; k++)
            if (indices[k] < 0 && strcmp(buf, names[k]) == 0)
                indices[k] = i;
    }
#endif
}

/* Calls `each(name, len, position, ctx)` for the "name - text" lines of `desc` until it returns
 * nonzero; returns the number of such lines seen. */
static int ct_description_items(const char *desc, int (*each)(const char *, size_t, int, void *),
                                void *ctx)
{
    int position = 0;
    for (const char *line = desc; line && *line; line = strchr(line, '\n')) {
        if (*line == '\n')
            line++;
        while (*line == ' ' || *line == '\t')
            line++;
        size_t len = 0;
        while (line[len] && !isspace((unsigned char)line[len]))
            len++;
        size_t gap = len;
        while (line[gap] == ' ' || line[gap] == '\t')
            gap++;
        if (len == 0 || gap == len || line[gap] != '-')
            continue;
        if (each(line, len, position, ctx))
            return position + 1;
        position++;
    }
    return position;
}

typedef struct ct_items {
    const char *wanted;   /* ct_mpit_value: stop at this name */
    int found;
    char (*names)[CT_MPIT_NAME];
    int *values, max, n;
} ct_items;

static int ct_item(const char *name, size_t len, int position, void *ctx)
{
    ct_items *it = ctx;
    if (it->wanted != NULL) {
        if (strlen(it->wanted) == len && strncmp(name, it->wanted, len) == 0) {
            it->found = position;
            return 1;
        }
        return 0;
    }
    if (it->n < it->max && len < CT_MPIT_NAME) {
        memcpy(it->names[it->n], name, len);
        it->names[it->n][len] = '\0';
        it->values[it->n++] = position;
    }
    return 0;
}

/* Walk the variable's enumeration (Open MPI) or description (MPICH) with `it`. */
static int ct_items_of(int cvar, ct_items *it)
{
    char name[256];
    int name_len = sizeof name, desc_len = 8192, verb, bind, scope;
    MPI_Datatype dt;
    MPI_T_enum en;
    char *desc = malloc((size_t)desc_len);
    if (desc == NULL)
        return -1;
    int rc = MPI_T_cvar_get_info(cvar, name, &name_len, &verb, &dt, &en, desc, &desc_len, &bind,
                                 &scope);
    if (rc == MPI_SUCCESS && en != MPI_T_ENUM_NULL) {
        int items;
        char enum_name[256];
        int enum_len = sizeof enum_name;
        if (MPI_T_enum_get_info(en, &items, enum_name, &enum_len) == MPI_SUCCESS) {
            for (int i = 0; i < items; i++) {
                char item[256];
                int item_len = sizeof item, v;
                if (MPI_T_enum_get_item(en, i, &v, item, &item_len) != MPI_SUCCESS)
                    continue;
                if (it->wanted != NULL && strcmp(item, it->wanted) == 0) {
                    it->found = v;
                    break;
                }
                if (it->wanted == NULL && it->n < it->max && strlen(item) < CT_MPIT_NAME) {
                    strcpy(it->names[it->n], item);
                    it->values[it->n++] = v;
                }
            }
        }
    } else if (rc == MPI_SUCCESS && dt == MPI_INT) {
        ct_description_items(desc, ct_item, it);
    }
    free(desc);
    return rc == MPI_SUCCESS ? 0 : -1;
}

int ct_mpit_value(int cvar, const char *wanted, int *value)
{
    char *end;
    long number = strtol(wanted, &end, 10);
    if (*wanted && *end == '\0') {
        *value = (int)number;
        return 0;
    }
    ct_items it = {.wanted = wanted, .found = -1};
    if (ct_items_of(cvar, &it) != 0 || it.found < 0)
        return -1;
    *value = it.found;
    return 0;
}

int ct_mpit_list(int cvar, char names[][CT_MPIT_NAME], int *values, int max)
{
    ct_items it = {.names = names, .values = values, .max = max};
    return ct_items_of(cvar, &it) == 0 ? it.n : 0;
}

int ct_mpit_handle(int cvar, MPI_T_cvar_handle *handle)
{
    int count;
    return MPI_T_cvar_handle_alloc(cvar, NULL, handle, &count);
}

void ct_mpit_upper(char *dst, const char *src, size_t len)
{
    size_t i = 0;
    for (; src[i] && i + 1 < len; i++)
        dst[i] = (char)toupper((unsigned char)src[i]);
    dst[i] = '\0';
}

int ct_mpit_intel(void)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    return PMPI_Get_library_version(version, &len) == MPI_SUCCESS
           && strstr(version, "Intel(R) MPI") != NULL;
}

/* ---- forcing an algorithm ------------------------------------------------------------------ */

int ct_mpit_var_open(ct_mpit_var *v, int index, const char *forced_name)
{
    v->present = 0;
    v->handle = MPI_T_CVAR_HANDLE_NULL;
    if (index < 0)
        return MPI_SUCCESS;
    if (forced_name != NULL && ct_mpit_value(index, forced_name, &v->forced) != 0)
        return MPI_SUCCESS;
    int rc = ct_mpit_handle(index, &v->handle);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = MPI_T_cvar_read(v->handle, &v->original);
    if (rc == MPI_SUCCESS)
        rc = MPI_T_cvar_write(v->handle, &v->original);
    if (rc != MPI_SUCCESS) {
        MPI_T_cvar_handle_free(&v->handle);
        return rc;
    }
    v->present = 1;
    return MPI_SUCCESS;
}

int ct_mpit_var_set(const ct_mpit_var *v, int value)
{
    return v->present ? MPI_T_cvar_write(v->handle, &value) : MPI_SUCCESS;
}

int ct_mpit_var_force(const ct_mpit_var *v)
{
    return ct_mpit_var_set(v, v->forced);
}

int ct_mpit_var_restore(const ct_mpit_var *v)
{
    return ct_mpit_var_set(v, v->original);
}

void ct_mpit_var_close(ct_mpit_var *v)
{
    if (v->present)
        MPI_T_cvar_handle_free(&v->handle);
    v->present = 0;
}

int ct_mpit_dynamic_rules(ct_mpit_var *v)
{
    int index, on = 0;
    MPI_T_cvar_handle h;
    v->present = 0;
    if (ct_mpit_find("coll_tuned_use_dynamic_rules", &index) != 0)
        return 1;
    if (ct_mpit_handle(index, &h) != MPI_SUCCESS)
        return 0;
    int known = MPI_T_cvar_read(h, &on) == MPI_SUCCESS;
    MPI_T_cvar_handle_free(&h);
    if (!known)
        return 0;
    if (on == 1)
        return 1;   /* set at launch: Open MPI 4.1 refuses writes of it, so leave it alone */
    v->forced = 1;
    return ct_mpit_var_open(v, index, NULL) == MPI_SUCCESS && v->present;
}

int ct_mpit_han(ct_mpit_var *v)
{
    int index;
    v->present = 0;
    v->forced = 0;
    if (ct_mpit_find("coll_han_priority", &index) != 0)
        return MPI_SUCCESS;
    return ct_mpit_var_open(v, index, NULL);
}

int ct_mpit_tuned_comm(MPI_Comm parent, const ct_mpit_var *alg, int value,
                       const ct_mpit_var *dynamic, const ct_mpit_var *han, MPI_Comm *out)
{
    MPI_Group group;
    int rc = ct_mpit_var_force(dynamic);
    if (rc == MPI_SUCCESS)
        rc = ct_mpit_var_set(alg, value);
    if (rc == MPI_SUCCESS)
        rc = ct_mpit_var_force(han);
    if (rc == MPI_SUCCESS && (rc = PMPI_Comm_group(parent, &group)) == MPI_SUCCESS) {
        rc = PMPI_Comm_create(parent, group, out);
        PMPI_Group_free(&group);
    }
    /* the library's values back before anything else can make a communicator */
    int back = ct_mpit_var_restore(alg);
    int dyn = ct_mpit_var_restore(dynamic), h = ct_mpit_var_restore(han);
    back = back != MPI_SUCCESS ? back : dyn != MPI_SUCCESS ? dyn : h;
    return rc != MPI_SUCCESS ? rc : back;
}
