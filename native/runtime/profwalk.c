/*
 * Profiling mode: a new call chain (profchain.c) walked with each frame's rule kept by return
 * address, instead of libgcc's _Unwind_Backtrace, which finds each frame's FDE and interprets its
 * DWARF call-frame program afresh for every frame of every unwind (~2,000 instructions a frame;
 * ~28,000 an OpenFOAM chain of ~14 frames, 5 of them libcolltune's own).
 *
 * A return address's rule (where its frame's CFA is, where that frame saved the caller's rbp) is
 * read once from the FDE libgcc finds for it (_Unwind_Find_FDE, as libgcc does: at the address
 * less 1, rows up to it) and kept in a process-wide table; a walk then costs a table probe a
 * frame. Only rules that libgcc applies the same simple way are taken: the CFA at rsp or rbp plus
 * an offset, rbp unchanged or saved at an offset from the CFA, the return address at CFA - 8 (or
 * undefined: the outermost frame). Anything else (a CFA expression, a signal frame, another rule
 * for rbp or the return address, an FDE form not read here, a slot outside this thread's stack)
 * gives up the walk, and libgcc unwinds the chain: a walk reports exactly libgcc's frames, as
 * (return address, CFA of the frame it returns from) pairs from the walker's caller up.
 * COLLTUNE_PROFILE_RUN_UNWIND_CHECK=1 unwinds every walked chain with libgcc too and counts those
 * that differ (the tests run with it). x86-64 with glibc only, and not under SMPI (a simulated
 * rank runs on a stack that is not its thread's); elsewhere libgcc unwinds every chain.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "ct_tls.h"
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "ct_profrun_impl.h"
#include "ct_runtime.h"

#if defined(__x86_64__) && defined(__GLIBC__) && !defined(COLLTUNE_ABI_FAMILY_SMPI)

/* libgcc_s's FDE search (exported since GCC 3.0; its header is not installed). */
struct ct_eh_bases {
    void *tbase, *dbase, *func;
};
extern const void *_Unwind_Find_FDE(void *pc, struct ct_eh_bases *bases);

enum { CT_REG_RBP = 6, CT_REG_RSP = 7, CT_REG_RA = 16 };

/* A rule as kept: kind in the low byte, rbp's save offset (from the CFA) in bits 16-31, the CFA's
 * offset in bits 32-63; 0 is "not known yet". */
enum {
    CT_RULE_RSP = 1,        /* CFA = the callee's CFA (this frame's rsp) + offset */
    CT_RULE_RBP = 2,        /* CFA = rbp + offset */
    CT_RULE_LAST = 3,       /* no FDE: libgcc reports this frame and stops */
    CT_RULE_OUTERMOST = 4,  /* the return address is undefined: no frame above */
    CT_RULE_OTHER = 5,      /* not one the walk takes: libgcc unwinds */
};
#define CT_RULE_RBP_SAVED 0x10   /* the caller's rbp at the CFA + its offset */
#define CT_RULE_CFA_DEREF 0x20   /* CFA = *(rbp + offset): a realigned stack's (gcc's DRAP) */
#define CT_RULE_RBP_AT_RBP 0x40  /* the caller's rbp at this frame's rbp + its offset (DRAP) */

static inline uint64_t ct_rule_make(int kind, int64_t cfa_off, int64_t rbp_off)
{
    return (uint64_t)kind | (uint64_t)(uint16_t)(int16_t)rbp_off << 16
           | (uint64_t)(uint32_t)(int32_t)cfa_off << 32;
}

/* ---- the FDE read ------------------------------------------------------------------------ */

typedef struct ct_cfi_reader {
    const unsigned char *p, *end;
    int bad;
} ct_cfi_reader;

static inline uint64_t ct_uleb(ct_cfi_reader *r)
{
    if (CT_LIKELY(r->p < r->end && !(*r->p & 0x80)))
        return *r->p++;   /* (most operands: one byte) */
    uint64_t v = 0;
    for (int shift = 0; r->p < r->end && shift < 64; shift += 7) {
        unsigned char b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    r->bad = 1;
    return 0;
}

static int64_t ct_sleb(ct_cfi_reader *r)
{
    int64_t v = 0;
    int shift = 0;
    while (r->p < r->end && shift < 64) {
        unsigned char b = *r->p++;
        v |= (int64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            if (shift < 64 && (b & 0x40))
                v |= -((int64_t)1 << shift);
            return v;
        }
    }
    r->bad = 1;
    return 0;
}

static uint64_t ct_fixed(ct_cfi_reader *r, int bytes)
{
    uint64_t v = 0;
    if (r->end - r->p < bytes) {
        r->bad = 1;
        return 0;
    }
    memcpy(&v, r->p, (size_t)bytes);   /* little-endian */
    r->p += bytes;
    return v;
}

/* Skips a pointer of DW_EH_PE encoding `enc` (its size is all a skip needs); 0: not readable. */
static int ct_skip_encoded(ct_cfi_reader *r, unsigned enc)
{
    if (enc == 0xff)   /* DW_EH_PE_omit */
        return 1;
    if ((enc & 0x70) == 0x50)   /* DW_EH_PE_aligned */
        return 0;
    switch (enc & 0x0f) {
    case 0x00: ct_fixed(r, 8); break;                 /* absptr */
    case 0x01: case 0x09: ct_uleb(r); break;          /* uleb128, sleb128 */
    case 0x02: case 0x0a: ct_fixed(r, 2); break;
    case 0x03: case 0x0b: ct_fixed(r, 4); break;
    case 0x04: case 0x0c: ct_fixed(r, 8); break;
    default: return 0;
    }
    return !r->bad;
}

/* The rules the walk needs, as the call-frame program leaves them (libgcc keeps the CFA with the
 * register rules, so remember/restore_state save and restore it too). */
enum { CT_HOW_SAME, CT_HOW_OFFSET, CT_HOW_UNDEFINED, CT_HOW_OTHER, CT_HOW_AT_RBP };
/* cfa_expr: 0 the CFA is a register plus an offset; CT_CFA_DEREF the one expression taken, a
 * realigned stack's `DW_OP_breg6 N; DW_OP_deref` (CFA = *(rbp + N), N in cfa_deref_off: libgcc
 * ignores def_cfa_offset under an expression); 1 any other expression. */
#define CT_CFA_DEREF 2
typedef struct ct_cfi_row {
    int cfa_reg, cfa_expr, cfa_set;
    int64_t cfa_deref_off;
    int64_t cfa_off;
    int rbp_how, ra_how, rsp_how;
    int64_t rbp_off, ra_off;
} ct_cfi_row;

typedef struct ct_cfi_state {
    ct_cfi_row row, initial;      /* initial: after the CIE's program (DW_CFA_restore) */
    ct_cfi_row saved[8];
    int depth;
    uint64_t code_align;
    int64_t data_align;
} ct_cfi_state;

static void ct_cfi_set(ct_cfi_row *row, uint64_t reg, int how, int64_t off)
{
    if (reg == CT_REG_RBP) {
        row->rbp_how = how;
        row->rbp_off = off;
    } else if (reg == CT_REG_RA) {
        row->ra_how = how;
        row->ra_off = off;
    } else if (reg == CT_REG_RSP) {
        row->rsp_how = how;   /* the caller's rsp is this frame's CFA unless a rule says else */
    }
}

static void ct_cfi_restore(ct_cfi_state *s, uint64_t reg)
{
    if (reg == CT_REG_RBP) {
        s->row.rbp_how = s->initial.rbp_how;
        s->row.rbp_off = s->initial.rbp_off;
    } else if (reg == CT_REG_RA) {
        s->row.ra_how = s->initial.ra_how;
        s->row.ra_off = s->initial.ra_off;
    } else if (reg == CT_REG_RSP) {
        s->row.rsp_how = s->initial.rsp_how;
    }
}

/* A DW_OP_breg6 N expression block of `len` bytes, alone or followed by DW_OP_deref (`deref`):
 * 1 and *off = N if the block is exactly that (the two forms gcc emits where it realigns the
 * stack through a DRAP register: the CFA read from rbp - 8, rbp saved at rbp + 0). */
static int ct_breg6_block(ct_cfi_reader *r, uint64_t len, int deref, int64_t *off)
{
    const unsigned char *end = r->p + len;
    if (len < 2 || len > (uint64_t)(r->end - r->p) || *r->p != 0x76) {   /* DW_OP_breg6 */
        r->p = end;
        return 0;
    }
    ct_cfi_reader b = {r->p + 1, end, 0};
    *off = ct_sleb(&b);
    int ok = !b.bad && (deref ? b.p + 1 == end && *b.p == 0x06 : b.p == end);   /* DW_OP_deref */
    r->p = end;
    return ok;
}

/* Runs the call-frame program r while its location (from `loc`) is <= target; 0: an instruction
 * this reader does not know. */
static int ct_cfi_run(ct_cfi_state *s, ct_cfi_reader *r, uintptr_t loc, uintptr_t target)
{
    while (r->p < r->end) {   /* (a read past the end sets r->bad: checked once, at the end) */
        unsigned op = *r->p++, low = op & 0x3f;
        uint64_t reg, step = 0;   /* an advance: the next row's location, checked below */
        switch (op & 0xc0) {
        case 0x40: step = low; goto advance;                                          /* advance_loc */
        case 0x80: ct_cfi_set(&s->row, low, CT_HOW_OFFSET, (int64_t)ct_uleb(r) * s->data_align); continue;
        case 0xc0: ct_cfi_restore(s, low); continue;
        }
        switch (op) {
        case 0x00: break;                                                            /* nop */
        case 0x02: step = ct_fixed(r, 1); goto advance;                              /* advance_loc1 */
        case 0x03: step = ct_fixed(r, 2); goto advance;
        case 0x04: step = ct_fixed(r, 4); goto advance;
        case 0x05: reg = ct_uleb(r); ct_cfi_set(&s->row, reg, CT_HOW_OFFSET, (int64_t)ct_uleb(r) * s->data_align); break;
        case 0x06: ct_cfi_restore(s, ct_uleb(r)); break;                             /* restore_extended */
        case 0x07: ct_cfi_set(&s->row, ct_uleb(r), CT_HOW_UNDEFINED, 0); break;
        case 0x08: ct_cfi_set(&s->row, ct_uleb(r), CT_HOW_SAME, 0); break;
        case 0x09: reg = ct_uleb(r); ct_uleb(r); ct_cfi_set(&s->row, reg, CT_HOW_OTHER, 0); break;
        case 0x0a:                                                                   /* remember_state */
            if (s->depth == 8)
                return 0;
            s->saved[s->depth++] = s->row;
            break;
        case 0x0b:                                                                   /* restore_state */
            if (s->depth == 0)
                return 0;
            s->row = s->saved[--s->depth];
            break;
        case 0x0c: s->row.cfa_reg = (int)ct_uleb(r); s->row.cfa_off = (int64_t)ct_uleb(r);
                   s->row.cfa_expr = 0; s->row.cfa_set = 1; break;                   /* def_cfa */
        case 0x0d: s->row.cfa_reg = (int)ct_uleb(r); s->row.cfa_expr = 0; s->row.cfa_set = 1; break;
        case 0x0e: s->row.cfa_off = (int64_t)ct_uleb(r); break;                      /* def_cfa_offset */
        case 0x0f: {                                                                 /* def_cfa_expression */
            int64_t off = 0;
            s->row.cfa_expr = ct_breg6_block(r, ct_uleb(r), 1, &off) ? CT_CFA_DEREF : 1;
            s->row.cfa_deref_off = off;
            s->row.cfa_set = 1;
            break;
        }
        case 0x10: {                                                                 /* expression */
            int64_t off = 0;
            reg = ct_uleb(r);
            int at_rbp = ct_breg6_block(r, ct_uleb(r), 0, &off);
            ct_cfi_set(&s->row, reg, at_rbp && reg == CT_REG_RBP ? CT_HOW_AT_RBP : CT_HOW_OTHER, off);
            break;
        }
        case 0x11: reg = ct_uleb(r); ct_cfi_set(&s->row, reg, CT_HOW_OFFSET, ct_sleb(r) * s->data_align); break;
        case 0x12: s->row.cfa_reg = (int)ct_uleb(r); s->row.cfa_off = ct_sleb(r) * s->data_align;
                   s->row.cfa_expr = 0; s->row.cfa_set = 1; break;                   /* def_cfa_sf */
        case 0x13: s->row.cfa_off = ct_sleb(r) * s->data_align; break;               /* def_cfa_offset_sf */
        case 0x14: reg = ct_uleb(r); ct_uleb(r); ct_cfi_set(&s->row, reg, CT_HOW_OTHER, 0); break;
        case 0x15: reg = ct_uleb(r); ct_sleb(r); ct_cfi_set(&s->row, reg, CT_HOW_OTHER, 0); break;
        case 0x16: reg = ct_uleb(r); r->p += ct_uleb(r); ct_cfi_set(&s->row, reg, CT_HOW_OTHER, 0); break;
        case 0x2e: ct_uleb(r); break;                                                /* GNU_args_size */
        case 0x2f: reg = ct_uleb(r); ct_cfi_set(&s->row, reg, CT_HOW_OFFSET, -(int64_t)ct_uleb(r) * s->data_align); break;
        default: return 0;   /* set_loc, GNU_window_save, vendor extensions */
        }
        continue;
    advance:
        loc += step * s->code_align;
        if (loc > target)
            break;   /* the rows from here are past the address */
    }
    return !r->bad && r->p <= r->end;
}

static inline uint32_t ct_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The rule of return address `pc` (see CT_RULE_*). */
static uint64_t ct_rule_read(uintptr_t pc)
{
    struct ct_eh_bases bases;
    const unsigned char *fde = _Unwind_Find_FDE((void *)(pc - 1), &bases);
    if (fde == NULL)
        return ct_rule_make(CT_RULE_LAST, 0, 0);
    uint32_t fde_len = ct_u32(fde), cie_len;
    if (fde_len == 0 || fde_len == 0xffffffffu)
        return ct_rule_make(CT_RULE_OTHER, 0, 0);
    const unsigned char *cie = fde + 4 - ct_u32(fde + 4);
    cie_len = ct_u32(cie);
    if (cie_len == 0 || cie_len == 0xffffffffu)
        return ct_rule_make(CT_RULE_OTHER, 0, 0);
    ct_cfi_reader r = {cie + 8, cie + 4 + cie_len, 0};   /* past the length and the CIE id */
    unsigned version = (unsigned)ct_fixed(&r, 1);
    const char *aug = (const char *)r.p;
    size_t aug_len = strnlen(aug, (size_t)(r.end - r.p));
    r.p += aug_len + 1;
    if ((version != 1 && version != 3) || (aug[0] != '\0' && aug[0] != 'z'))
        return ct_rule_make(CT_RULE_OTHER, 0, 0);
    ct_cfi_state s;
    memset(&s.row, 0, sizeof s.row);   /* (the saved rows are written before they are read) */
    s.depth = 0;
    s.code_align = ct_uleb(&r);
    s.data_align = ct_sleb(&r);
    uint64_t ra_column = version == 1 ? ct_fixed(&r, 1) : ct_uleb(&r);
    unsigned fde_enc = 0;   /* DW_EH_PE_absptr */
    if (aug[0] == 'z') {
        uint64_t n = ct_uleb(&r);
        const unsigned char *data_end = r.p + n;
        for (size_t i = 1; i < aug_len; i++) {
            if (aug[i] == 'R')
                fde_enc = (unsigned)ct_fixed(&r, 1);
            else if (aug[i] == 'L')
                ct_fixed(&r, 1);
            else if (aug[i] != 'P' || !ct_skip_encoded(&r, (unsigned)ct_fixed(&r, 1)))
                return ct_rule_make(CT_RULE_OTHER, 0, 0);   /* 'S': a signal frame; others */
        }
        r.p = data_end;
    }
    if (r.bad || ra_column != CT_REG_RA || !ct_cfi_run(&s, &r, 0, UINTPTR_MAX))
        return ct_rule_make(CT_RULE_OTHER, 0, 0);
    s.initial = s.row;
    ct_cfi_reader f = {fde + 8, fde + 4 + fde_len, 0};   /* past the length and the CIE pointer */
    if (!ct_skip_encoded(&f, fde_enc) || !ct_skip_encoded(&f, fde_enc & 0x0f))
        return ct_rule_make(CT_RULE_OTHER, 0, 0);
    if (aug[0] == 'z')
        f.p += ct_uleb(&f);
    if (f.bad || !ct_cfi_run(&s, &f, (uintptr_t)bases.func, pc - 1))
        return ct_rule_make(CT_RULE_OTHER, 0, 0);
    const ct_cfi_row *row = &s.row;
    if (row->ra_how == CT_HOW_UNDEFINED)
        return ct_rule_make(CT_RULE_OUTERMOST, 0, 0);
    int deref = row->cfa_expr == CT_CFA_DEREF;
    int64_t cfa_off = deref ? row->cfa_deref_off : row->cfa_off;
    if (!row->cfa_set || (row->cfa_expr && !deref)
        || (!deref && row->cfa_reg != CT_REG_RSP && row->cfa_reg != CT_REG_RBP)
        || row->ra_how != CT_HOW_OFFSET || row->ra_off != -8 || row->rsp_how != CT_HOW_SAME
        || (row->rbp_how != CT_HOW_SAME && row->rbp_how != CT_HOW_OFFSET
            && row->rbp_how != CT_HOW_AT_RBP)
        || cfa_off != (int32_t)cfa_off || row->rbp_off != (int16_t)row->rbp_off)
        return ct_rule_make(CT_RULE_OTHER, 0, 0);
    int kind = (deref || row->cfa_reg == CT_REG_RBP ? CT_RULE_RBP : CT_RULE_RSP)
               | (deref ? CT_RULE_CFA_DEREF : 0)
               | (row->rbp_how == CT_HOW_OFFSET ? CT_RULE_RBP_SAVED : 0)
               | (row->rbp_how == CT_HOW_AT_RBP ? CT_RULE_RBP_AT_RBP : 0);
    return ct_rule_make(kind, cfa_off, row->rbp_off);
}

/* ---- the rules kept ---------------------------------------------------------------------- */

#define CT_RULES 4096   /* return addresses: OpenFOAM's 133 chains have a few hundred */
_Static_assert((CT_RULES & (CT_RULES - 1)) == 0, "a power of two (ct_table_probe)");
typedef struct ct_rule_slot {
    atomic_int state;         /* 0 empty, 2 ready (ct_table_probe) */
    int zero;                 /* (ct_table_probe compares the key as bytes: no padding) */
    uintptr_t pc;             /* the key */
    atomic_ullong rule;       /* 0: being read by the thread that claimed the entry */
} ct_rule_slot;
_Static_assert(offsetof(ct_rule_slot, pc) == 2 * sizeof(int), "no padding before the key");
static ct_rule_slot ct_rules[CT_RULES];
static atomic_uint ct_rule_cells[CT_RULES];
static ct_table ct_rule_table = {0, ct_rule_cells};

static uint64_t ct_rule_of(uintptr_t pc)
{
    uint64_t h = ((uint64_t)pc * 0x9E3779B97F4A7C15ull) >> 52;
    ct_rule_slot *slot = ct_table_probe(ct_rules, &ct_rule_table, CT_RULES, sizeof *ct_rules, h,
                                        offsetof(ct_rule_slot, pc), &pc, sizeof pc);
    if (slot == NULL)
        return ct_rule_read(pc);   /* the table is full: read every time */
    uint64_t rule = atomic_load_explicit(&slot->rule, memory_order_acquire);
    if (rule != 0)
        return rule;
    /* new here, or another thread's still being read: a pc's rule is always the same one, so
     * whichever thread stores it stores the same value */
    rule = ct_rule_read(pc);
    atomic_store_explicit(&slot->rule, rule, memory_order_release);
    return rule;
}

/* ---- the walk ---------------------------------------------------------------------------- */

/* This thread's stack, [lo, hi): every slot the walk reads is inside it (0, 0: not known). */
static _Thread_local uintptr_t ct_stack_lo CT_TLS_MODEL, ct_stack_hi CT_TLS_MODEL;
static _Thread_local unsigned char ct_stack_known CT_TLS_MODEL;

/* glibc's: the main thread's stack pointer at the program's entry, above every frame. */
extern void *__libc_stack_end;

static void ct_stack_learn(void)
{
    ct_stack_known = 1;
    struct rlimit lim;
    /* The main thread: its stack reaches at most the limit below its entry, a range no mapping
     * is placed in (pthread_getattr_np would read /proc/self/maps: ~800,000 instructions). */
    if (gettid() == getpid() && getrlimit(RLIMIT_STACK, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY
        && lim.rlim_cur < ((rlim_t)1 << 32)) {
        ct_stack_hi = (uintptr_t)__libc_stack_end;
        ct_stack_lo = ct_stack_hi - (uintptr_t)lim.rlim_cur;
        return;
    }
    pthread_attr_t attr;
    void *addr;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
        ct_stack_lo = (uintptr_t)addr;
        ct_stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&attr);
}

static inline int ct_on_stack(uintptr_t lo, uintptr_t at)
{
    return at >= lo && at <= ct_stack_hi - sizeof(void *) && at % sizeof(void *) == 0;
}

__attribute__((noinline)) int ct_profwalk(ct_frame_fn take, void *arg)
{
    if (CT_UNLIKELY(!ct_stack_known))
        ct_stack_learn();
    /* this function keeps a frame pointer (it asks for its frame's address): its caller's rbp
     * at [fp], the return address at [fp + 8], its CFA at fp + 16 */
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    if (fp < ct_stack_lo || fp >= ct_stack_hi)
        return 0;   /* not on this thread's known stack (or no bounds) */
    uintptr_t cfa = fp + 16, rbp = *(const uintptr_t *)fp;
    uintptr_t pc = *(const uintptr_t *)(fp + 8);
    for (;;) {
        if (take(arg, (const void *)pc, cfa))
            return 1;
        uint64_t rule = ct_rule_of(pc);
        int kind = (int)(rule & 0xff);
        if (kind == CT_RULE_LAST)
            return 1;
        if (kind == CT_RULE_OUTERMOST) {
            take(arg, NULL, cfa);   /* libgcc reports a null return address and stops */
            return 1;
        }
        if (kind == CT_RULE_OTHER)
            return 0;
        int64_t cfa_off = (int32_t)(rule >> 32), rbp_off = (int16_t)(rule >> 16);
        uintptr_t next = ((kind & 0x0f) == CT_RULE_RSP ? cfa : rbp) + (uintptr_t)cfa_off;
        if (kind & CT_RULE_CFA_DEREF) {   /* the CFA kept in the frame (a realigned stack) */
            if (!ct_on_stack(cfa, next))
                return 0;
            next = *(const uintptr_t *)next;
        }
        if (!ct_on_stack(cfa, next - sizeof(void *)))
            return 0;
        if (kind & (CT_RULE_RBP_SAVED | CT_RULE_RBP_AT_RBP)) {
            uintptr_t at = (kind & CT_RULE_RBP_SAVED ? next : rbp) + (uintptr_t)rbp_off;
            if (!ct_on_stack(cfa, at))
                return 0;
            rbp = *(const uintptr_t *)at;
        }
        pc = *(const uintptr_t *)(next - sizeof(void *));
        cfa = next;
    }
}

#else

int ct_profwalk(ct_frame_fn take, void *arg)
{
    (void)take;
    (void)arg;
    return 0;
}

#endif
