/*
 * The variant settings of the C core: COLLTUNE_SCRATCH_BYTES and COLLTUNE_CHUNK_BYTES.
 *
 * Read with getenv once per process (pthread_once): settings are part of the decision, and a
 * value that changed between two calls could make ranks disagree.
 */
#include "ct_core.h"
#include "ct_settings.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_once_t ct_settings_once = PTHREAD_ONCE_INIT;
static size_t ct_scratch_cap_value = CT_DEFAULT_SCRATCH_BYTES;
static size_t ct_chunk_bytes_value = CT_DEFAULT_CHUNK_BYTES;

int ct_parse_bytes(const char *text, size_t *bytes)
{
    if (text == NULL || !isdigit((unsigned char)text[0])) return -1;
    errno = 0;
    char *end;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0) return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    default: break;
    }
    if (*end != '\0') return -1;
    if (value > (SIZE_MAX >> shift)) return -1;
    *bytes = (size_t)value << shift;
    return 0;
}

static int ct_is_rank_zero(void)
{
    int initialized = 0, finalized = 0, rank = 0;
    PMPI_Initialized(&initialized);
    PMPI_Finalized(&finalized);
    if (initialized && !finalized) PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank == 0;
}

static size_t ct_setting_bytes(const char *name, size_t fallback, size_t minimum)
{
    const char *text = getenv(name);
    if (text == NULL || text[0] == '\0') return fallback;
    size_t value;
    if (ct_parse_bytes(text, &value) == 0 && value >= minimum) return value;
    if (ct_is_rank_zero())
        fprintf(stderr,
                "colltune: %s='%s' is not a byte count >= %zu (digits with an optional K, M or G "
                "suffix, e.g. 256M); using %zu\n",
                name, text, minimum, fallback);
    return fallback;
}

static void ct_settings_read(void)
{
    ct_scratch_cap_value = ct_setting_bytes(CT_ENV_SCRATCH_BYTES, CT_DEFAULT_SCRATCH_BYTES, 0);
    ct_chunk_bytes_value = ct_setting_bytes(CT_ENV_CHUNK_BYTES, CT_DEFAULT_CHUNK_BYTES, 1);
}

size_t colltune_scratch_cap(void)
{
    pthread_once(&ct_settings_once, ct_settings_read);
    return ct_scratch_cap_value;
}

size_t colltune_chunk_bytes(void)
{
    pthread_once(&ct_settings_once, ct_settings_read);
    return ct_chunk_bytes_value;
}
