/*
 * The lexical rules both text formats of the C core share (tuning profiles, docs/profile.md;
 * selection tables, docs/select.md): lines of blank-separated words, '#' comments, the limits of
 * native/spec/formats.toml. Each format's grammar stays with its parser (profile.c, select.c);
 * colltune/textformat.py is the Python side of this file.
 *
 * Pure C11, no MPI: the fuzz harnesses and unit tests link it with the parsers alone.
 */
#ifndef CT_TEXT_H
#define CT_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "ct_formats.h"

/* A word of a line: not NUL-terminated, the line lives in the caller's buffer. */
typedef struct ct_text_word {
    const char *s;
    size_t n;
} ct_text_word;

/* Room for a word as ct_text_quote writes it. */
#define CT_TEXT_QUOTE_BYTES (CT_TEXT_SHOW * 4 + 1)

/* "name:line: " then the message into err (if any); returns -1 for `return ct_text_fail(...)`. */
int ct_text_fail(char *err, size_t errlen, const char *name, long line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The checks both parsers open with, after clearing err: an output pointer (`has_out`), text
 * unless `len` is 0, at most CT_TEXT_MAX_FILE_BYTES ("larger than N bytes; `big`", at line
 * `big_line`). 0, or -1 and the message as ct_text_fail writes it. */
int ct_text_input(const char *text, size_t len, int has_out, const char *name, long big_line,
                  const char *big, char *err, size_t errlen);
int ct_text_is(ct_text_word w, const char *s);
/* A word as messages quote it: its first CT_TEXT_SHOW bytes, printable ASCII as is, any other
 * byte as \xNN (messages go to terminals and logs). Returns `out`. */
const char *ct_text_quote(char out[CT_TEXT_QUOTE_BYTES], ct_text_word w);
/* 1 if s[0..n) is 1 to 19 decimal digits (fits a uint64_t without overflow checks). */
int ct_text_digits(const char *s, size_t n);
/* The value of 1 to 19 decimal digits; -1 for anything else. */
int ct_text_u64(ct_text_word w, uint64_t *value);
/* Split at blanks (space, tab): the number of words, or max + 1 if there are more. */
int ct_text_split(const char *s, size_t n, ct_text_word *words, int max);
/* The offset of the first control character (other than tab) in s[0..n), or -1. */
long ct_text_control(const char *s, size_t n);
/* The next line of text[0..len) from *pos: its start and length without '\n' (and without a
 * '\r' before it; also at the end of an unterminated last line if `cr_at_eof`). 0 at the end. */
int ct_text_next_line(const char *text, size_t len, size_t *pos, int cr_at_eof, const char **line,
                      size_t *n);
/* Up to CT_TEXT_MAX_FILE_BYTES + 1 bytes of `path` (one more than allowed, so that an oversized
 * file is seen without stat()), in a malloc'd buffer. 0, or -1 with errno set (open, read,
 * memory). */
int ct_text_read(const char *path, char **text, size_t *len);
/* The message of a failed ct_text_read, as "path:0: what; hint" (hint: how to point the
 * setting at a readable file). */
void ct_text_read_error(char *err, size_t errlen, const char *path, int error, const char *hint);
/* FNV-1a 64 of s[0..n) continued from h (start: CT_TEXT_FNV_BASIS). */
#define CT_TEXT_FNV_BASIS UINT64_C(14695981039346656037)
uint64_t ct_text_fnv1a(uint64_t h, const char *s, size_t n);

#endif /* CT_TEXT_H */
