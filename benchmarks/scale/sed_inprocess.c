/*
 * SimGrid 3.32's per-rank `sed`, done in the simulator's own process (percall.py --in-process-sed,
 * startup.py; README "4096 ranks under callgrind").
 *
 * With smpi/privatize-libs, SMPI copies the program and the library for every rank and renames
 * the library in the program's copy with system("sed -i -e 's/OLD/NEW/g' COPY"), OLD and NEW of
 * equal length (src/smpi/internals/smpi_global.cpp:452-460). Natively system() starts the shell
 * with a vfork-like clone, which copies nothing. Under valgrind, which runs no guest clone that
 * shares the address space, it is a full fork of valgrind's process: the kernel copies its page
 * tables (the translations of every rank's copies so far) and the child's exec tears them down,
 * once per rank, so the start-up grows as P^2. Preloaded (LD_PRELOAD) into smpimain, this
 * system() applies exactly that command to the file itself, and hands
 * every other command to the C library's system(). It touches neither the program nor
 * libcolltune: the code callgrind measures is the same.
 *
 * sed's semantics kept: OLD is a basic regular expression in which only '.' (any byte but a
 * newline) is special here; a command whose OLD holds another special character, whose NEW holds
 * '\' or '&', or whose lengths differ goes to the real system(). Matches are taken left to right
 * without overlap, as `s///g` does on each line (a match never spans a newline, as '.' and the
 * literal bytes of OLD cannot match one).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char PREFIX[] = "sed -i -e 's/";

static int matches_at(const unsigned char *p, const char *old, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        if (old[k] == '.' ? p[k] == '\n' : p[k] != (unsigned char)old[k])
            return 0;
    }
    return 1;
}

/* Every match of old (n bytes) in path replaced by new; 0 on success, -1 if the file could not
 * be read or written (the caller then runs the real sed). Plain reads and writes, no mapping:
 * valgrind takes a writable mapping of an ELF file for an object's data segment, and the
 * dlopen of the same file afterwards then fails its debug-information reader's assertion
 * (m_debuginfo/readelf.c:1952, 'has_nonempty_rw'). */
static int edit_file(const char *path, const char *old, const char *new, size_t n)
{
    int fd = open(path, O_RDWR);
    if (fd < 0)
        return -1;
    struct stat st;
    unsigned char *p = NULL;
    size_t size = 0;
    int rc = -1;
    if (fstat(fd, &st) == 0 && (p = malloc((size_t)st.st_size + 1)) != NULL) {
        size = (size_t)st.st_size;
        size_t got = 0;
        while (got < size) {
            ssize_t r = pread(fd, p + got, size - got, (off_t)got);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        rc = got == size ? 0 : -1;
    }
    for (size_t i = 0; rc == 0 && i + n <= size;) {
        if (matches_at(p + i, old, n)) {
            memcpy(p + i, new, n);
            if (pwrite(fd, new, n, (off_t)i) != (ssize_t)n)
                rc = -1;
            i += n;
        } else {
            i++;
        }
    }
    free(p);
    close(fd);
    return rc;
}

/* 1 if command is SMPI's `sed -i -e 's/OLD/NEW/g' FILE` and was applied here. */
static int sed_in_process(const char *command)
{
    if (command == NULL || strncmp(command, PREFIX, sizeof PREFIX - 1) != 0)
        return 0;
    const char *old = command + sizeof PREFIX - 1;
    const char *slash = strchr(old, '/');
    const char *end = slash ? strchr(slash + 1, '/') : NULL;
    if (end == NULL || strncmp(end, "/g' ", 4) != 0)
        return 0;
    size_t n = (size_t)(slash - old);
    const char *new = slash + 1, *file = end + 4;
    if (n == 0 || (size_t)(end - new) != n || strpbrk(file, " '\"\\$`") != NULL)
        return 0;
    for (size_t k = 0; k < n; k++) {
        if (strchr("*[]^$\\", old[k]) || strchr("\\&", new[k]))
            return 0;
    }
    char old_s[256], new_s[256];
    if (n >= sizeof old_s)
        return 0;
    memcpy(old_s, old, n);
    memcpy(new_s, new, n);
    old_s[n] = new_s[n] = '\0';
    return edit_file(file, old_s, new_s, n) == 0;
}

int system(const char *command)
{
    if (sed_in_process(command))
        return 0;
    int (*real)(const char *) = (int (*)(const char *))dlsym(RTLD_NEXT, "system");
    return real ? real(command) : -1;
}
