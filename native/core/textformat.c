/*
 * The lexical rules of the two text formats (include/ct_text.h). Every function bounds what it
 * reads by the length it is given: the parsers run inside every rank on files users write.
 */
#include "ct_text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ct_text_fail(char *err, size_t errlen, const char *name, long line, const char *fmt, ...)
{
    if (err != NULL && errlen > 0) {
        int used = snprintf(err, errlen, "%s:%ld: ", name, line);
        if (used >= 0 && (size_t)used < errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + used, errlen - (size_t)used, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

int ct_text_input(const char *text, size_t len, int has_out, const char *name, long big_line,
                  const char *big, char *err, size_t errlen)
{
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    if (!has_out)
        return ct_text_fail(err, errlen, name, 0, "no output pointer");
    if (text == NULL && len > 0)
        return ct_text_fail(err, errlen, name, 0, "no text");
    if (len > CT_TEXT_MAX_FILE_BYTES)
        return ct_text_fail(err, errlen, name, big_line, "larger than %u bytes; %s",
                            CT_TEXT_MAX_FILE_BYTES, big);
    return 0;
}

int ct_text_is(ct_text_word w, const char *s)
{
    size_t n = strlen(s);
    return w.n == n && memcmp(w.s, s, n) == 0;
}

const char *ct_text_quote(char out[CT_TEXT_QUOTE_BYTES], ct_text_word w)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = w.n < CT_TEXT_SHOW ? w.n : CT_TEXT_SHOW, k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)w.s[i];
        if (c >= 0x20 && c < 0x7f) {
            out[k++] = (char)c;
        } else {
            out[k++] = '\\';
            out[k++] = 'x';
            out[k++] = hex[c >> 4];
            out[k++] = hex[c & 15];
        }
    }
    out[k] = '\0';
    return out;
}

int ct_text_digits(const char *s, size_t n)
{
    if (n < 1 || n > 19)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return 1;
}

int ct_text_u64(ct_text_word w, uint64_t *value)
{
    if (!ct_text_digits(w.s, w.n))
        return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < w.n; i++)
        v = v * 10u + (uint64_t)(w.s[i] - '0');
    *value = v;
    return 0;
}

static int ct_blank(char c)
{
    return c == ' ' || c == '\t';
}

int ct_text_split(const char *s, size_t n, ct_text_word *words, int max)
{
    int count = 0;
    size_t i = 0;
    while (i < n) {
        while (i < n && ct_blank(s[i]))
            i++;
        if (i == n)
            break;
        size_t start = i;
        while (i < n && !ct_blank(s[i]))
            i++;
        if (count == max)
            return max + 1;
        words[count].s = s + start;
        words[count].n = i - start;
        count++;
    }
    return count;
}

long ct_text_control(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return (long)i;
    }
    return -1;
}

int ct_text_next_line(const char *text, size_t len, size_t *pos, int cr_at_eof, const char **line,
                      size_t *n)
{
    if (*pos >= len)
        return 0;
    const char *nl = memchr(text + *pos, '\n', len - *pos);
    size_t end = nl != NULL ? (size_t)(nl - text) : len;
    *line = text + *pos;
    *n = end - *pos;
    if ((nl != NULL || cr_at_eof) && *n > 0 && text[end - 1] == '\r')
        (*n)--;
    *pos = end + 1;
    return 1;
}

int ct_text_read(const char *path, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    if (path == NULL) {
        errno = EINVAL; /* ct_text_read_error says "no path given", not a stale strerror */
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    size_t cap = CT_TEXT_MAX_FILE_BYTES + 1u, got;
    char *buf = malloc(cap);
    if (buf == NULL) {
        fclose(f);
        errno = ENOMEM;
        return -1;
    }
    while (*len < cap && (got = fread(buf + *len, 1, cap - *len, f)) > 0)
        *len += got;
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        errno = EIO;
        return -1;
    }
    *text = buf;
    return 0;
}

void ct_text_read_error(char *err, size_t errlen, const char *path, int error, const char *hint)
{
    if (err == NULL || errlen == 0)
        return;
    if (path == NULL)
        snprintf(err, errlen, "(null): no path given; %s", hint);
    else if (error == ENOMEM)
        snprintf(err, errlen, "%s:0: out of memory", path);
    else if (error == EIO)
        snprintf(err, errlen, "%s:0: read error; check the file", path);
    else
        snprintf(err, errlen, "%s:0: cannot open: %s; %s", path, strerror(error),
                 hint);
}

uint64_t ct_text_fnv1a(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * UINT64_C(1099511628211);
    return h;
}
