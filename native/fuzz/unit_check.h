/*
 * The checks of the C unit tests (profile_unit.c, select_unit.c): a failed CHECK prints its file,
 * line and condition and the run goes on, so that one run lists every failure; unit_check_done
 * prints the last line the Python tests compare ("NAME: N checks, M failed") and gives the exit
 * status. Header-only: each test is one translation unit built with plain gcc.
 */
#ifndef UNIT_CHECK_H
#define UNIT_CHECK_H

#include <stdio.h>

static int checks, failures;

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        checks++;                                                                            \
        if (!(cond)) {                                                                       \
            failures++;                                                                      \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                           \
        }                                                                                    \
    } while (0)

static int unit_check_done(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, checks, failures);
    return failures != 0;
}

#endif /* UNIT_CHECK_H */
