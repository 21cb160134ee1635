/*
 * What every part of the runtime uses to speak and to read its settings: messages on stderr with
 * the "colltune: " prefix, the whole-number and boolean settings, the warning about unknown
 * COLLTUNE_* variables. At the bottom of the runtime: it calls nothing of it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ct_runtime.h"
#include "ct_settings.h"

void ct_message(const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /* One fprintf per message so that lines of different ranks do not interleave mid-line. */
    fprintf(stderr, "colltune: %s\n", line);
    fflush(stderr);
}

/* A whole decimal number, nothing else (no sign, no blanks, no suffix). */
int ct_parse_u64(const char *text, uint64_t *value)
{
    if (text == NULL || text[0] < '0' || text[0] > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *value = v;
    return 0;
}

int ct_env_bool(const char *name, int fallback, int *value)
{
    static const char *const yes[] = {"1", "yes", "true", "on"};
    static const char *const no[] = {"0", "no", "false", "off", ""};
    const char *text = getenv(name);
    *value = fallback;
    if (text == NULL)
        return 0;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *value = 1;
            return 0;
        }
    }
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        if (strcasecmp(text, no[i]) == 0) {
            *value = 0;
            return 0;
        }
    }
    return -1;
}

extern char **environ;

void ct_warn_unknown_settings(void)
{
#define CT_SETTING_NAME(ident, name, type, dflt, c_core) name,
    static const char *const known[] = {CT_SETTINGS(CT_SETTING_NAME)};
#undef CT_SETTING_NAME
    for (char **env = environ; env != NULL && *env != NULL; env++) {
        if (strncmp(*env, "COLLTUNE_", 9) != 0)
            continue;
        size_t len = strcspn(*env, "=");
        int found = 0;
        for (size_t i = 0; i < sizeof known / sizeof known[0] && !found; i++)
            found = strlen(known[i]) == len && strncmp(known[i], *env, len) == 0;
        if (!found)
            ct_message("warning: unknown setting %.*s ignored (the settings are listed in "
                       "README.md, 'Runtime settings')", (int)len, *env);
    }
}
