/*
 * Selection tables of the learning mode (docs/select.md): parser, content hash, the draw.
 * Pure C, no MPI calls: the unit test links it with the names-only catalog. Lookup and pick are
 * allocation-free; the draw is bit-exact with colltune.learn.draw (same vectors in both tests).
 */
#ifndef CT_SELECT_H
#define CT_SELECT_H

#include <stddef.h>
#include <stdint.h>

typedef struct ct_select ct_select;

#define CT_SELECT_MAX_MEMBERS 64
#define CT_SELECT_MAX_LIB 16      /* library algorithms per collective */
#define CT_SELECT_LIB_NAME 96     /* "lib:<collective>:<algorithm>" and its NUL */

/* Outcome codes of a pick, as written in trace records. */
enum { CT_PICK_FIXED = 0, CT_PICK_NOT_APPLICABLE = 1, CT_PICK_EXPLOIT = 2, CT_PICK_EXPLORE = 3 };

/* Parse a table. Returns 0 and a table, or -1 with "name:line: what is wrong; how to fix". */
int ct_select_parse(const char *text, size_t len, const char *name, ct_select **out, char *err,
                    size_t errlen);
int ct_select_load(const char *path, ct_select **out, char *err, size_t errlen);
/* The table of `COLLTUNE_SELECT=-`: no cells, unlisted explore, default bins, caps and budget,
 * hash 0. NULL when out of memory. */
ct_select *ct_select_uniform_table(void);
void ct_select_free(ct_select *t);

uint64_t ct_select_hash(const ct_select *t);       /* FNV-1a 64 of the file's bytes */
uint64_t ct_select_budget(const ct_select *t);     /* the table's `budget` (default 1000) */
/* the table's `cellbudget` (default 100): explored calls per communicator, collective and size bin */
uint64_t ct_select_cell_budget(const ct_select *t);
void ct_select_nbins(const ct_select *t, int nbins[3]);
size_t ct_select_bytes(const ct_select *t);         /* heap bytes the table occupies */

/* Portfolios: one per collective for its blocking calls (index `coll`), one for its nonblocking
 * calls (CT_SELECT_NONBLOCKING(coll): MPI_I<coll>, `collective <coll>#nonblocking` in a table)
 * and one for its persistent requests (CT_SELECT_PERSISTENT(coll): MPI_<Coll>_init, `collective
 * <coll>#persistent`), whose members are `default`, the library's own call of that form, and the
 * library's algorithms of that form. Portfolio p is of form p / CT_NUM_COLLECTIVES (enum ct_form's
 * order). The macros need ct_catalog.h's CT_NUM_COLLECTIVES where they are used. Every function
 * below that takes a `coll` takes a portfolio. */
#define CT_SELECT_FORMS 3
#define CT_SELECT_PORTFOLIOS (CT_SELECT_FORMS * CT_NUM_COLLECTIVES)
#define CT_SELECT_NONBLOCKING(coll) (CT_NUM_COLLECTIVES + (coll))
#define CT_SELECT_PERSISTENT(coll) (2 * CT_NUM_COLLECTIVES + (coll))
/* The suffix a portfolio's name has in tables and traces ("" for blocking calls). */
#define CT_SELECT_FORM_SUFFIX(port) \
    ((const char *const[]){"", "#nonblocking", "#persistent"}[(port) / CT_NUM_COLLECTIVES])

/* The runtime portfolio of a collective: index 0 = default (the library), then its mock-ups in
 * catalog order, then the library's own algorithms registered with ct_select_add_library. Member
 * i>0 is ct_select_member_variant(coll, i): a ct_var_id, or the id given at registration. */
int ct_select_portfolio_size(int coll);
int ct_select_member_variant(int coll, int index);
const char *ct_select_member_name(int coll, int index);

/* Library members (`lib:<collective>:<algorithm>`) the running library offers online, registered
 * before tables are parsed (a table naming any other `lib:` member is refused, the message ending
 * with `note`: why the library offers none or which it offers). Not thread-safe: MPI_Init only.
 * add returns -1 when the portfolio is full or the name too long. */
void ct_select_clear_library(const char *note);
int ct_select_add_library(int coll, const char *name, int id);

/* Bins of docs/select.md, capped at nbins-1 (the size bin is on every call's path: inline). */
static inline int ct_select_size_bin(uint64_t bytes, int nbins)
{
    int b = bytes == 0 ? 0 : 64 - __builtin_clzll(bytes);
    return b < nbins - 1 ? b : nbins - 1;
}
int ct_select_count_bin(uint64_t value, int nbins);

/* The draw: splitmix64 and the call's uniform number in [0, 1) (inline: on the call path). */
static inline uint64_t ct_splitmix64(uint64_t x)
{
    uint64_t z = x + UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static inline double ct_select_uniform(uint64_t seed, uint64_t comm_id, uint64_t call_index)
{
    uint64_t bits = ct_splitmix64(seed ^ (comm_id * UINT64_C(0x9E3779B97F4A7C15)) ^ call_index);
    return (double)(bits >> 11) * 0x1.0p-53;
}

/* The cube index of bins (each within the table's nbins): (s * nbins[1] + n) * nbins[2] + p. */
uint32_t ct_select_cell(const ct_select *t, const int bins[3]);

/* Pick a portfolio index for a call of `coll` in cell `bins`, or -1 for "the library"
 * (`unlisted library`). `may_explore` 0 (budget spent) makes explore cells exploit. `*outcome`
 * is CT_PICK_EXPLORE, CT_PICK_EXPLOIT or CT_PICK_FIXED (unlisted library). */
int ct_select_pick(const ct_select *t, int coll, const int bins[3], uint64_t seed,
                   uint64_t comm_id, uint64_t call_index, int may_explore, int *outcome);
/* The cube of a listed collective, one code per cell (NULL if the table does not list it): 0 not
 * listed, CT_SELECT_CODE_EXPLORE an explore cell, else an exploit cell whose pick is portfolio
 * index code - 1. The runtime reads exploit cells from it directly and asks ct_select_pick_cell
 * for the rest. */
#define CT_SELECT_CODE_EXPLORE 255u
const uint8_t *ct_select_codes(const ct_select *t, int coll);

/* The same for a cube index of ct_select_cell (the runtime keeps the nodes and ppn part of it
 * per communicator). */
int ct_select_pick_cell(const ct_select *t, int coll, uint32_t cell, uint64_t seed,
                        uint64_t comm_id, uint64_t call_index, int may_explore, int *outcome);

/* What ct_select_pick_cell picks in `cell` once exploring is no longer allowed (a spent budget),
 * as a cell code: 1 + the portfolio index; 1 (the default, the library) for an unlisted cell,
 * whatever the table's `unlisted`. The runtime's short path serves such calls as exploit cells. */
unsigned ct_select_settled_code(const ct_select *t, int coll, uint32_t cell);

/* Whether the table's unlisted cells never explore (`unlisted library` or `exploit`): their pick
 * is ct_select_settled_code's whatever the budget. */
int ct_select_unlisted_fixed(const ct_select *t);

/* An explored call's draw again, from the cell's explore distribution restricted to the
 * portfolio indices set in `usable` (the draw hit a member that may not serve the call): with a
 * uniform `u` independent of the first draw's, the result is distributed as a draw from the
 * restricted distribution would be. -1 if no usable member has weight. */
int ct_select_redraw(const ct_select *t, int coll, uint32_t cell, uint64_t usable, double u);

/* The arithmetic of docs/select.md on plain arrays (for the test vectors). */
int ct_select_probabilities(const double *w, int m, double lo, double hi, double *p);
int ct_select_pick_explore(const double *w, int m, double lo, double hi, double u);
int ct_select_pick_exploit(const double *w, int m);

#endif /* CT_SELECT_H */
