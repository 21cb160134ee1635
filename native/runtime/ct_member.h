/*
 * Whether a member (mock-up or library algorithm) may serve a call, and running it: the decision
 * paths' view of the members (modes.c, learn.c, trace.c, check.c), over the library members
 * (libalg_online.c) and the proof (proof.c). Inline: these run on every decided call.
 */
#ifndef CT_MEMBER_H
#define CT_MEMBER_H

#include "ct_runtime.h"

/* Whether a variant or library member can serve the call, the proof aside. */
static inline colltune_reason ct_member_fits(int id, const ct_call *call)
{
    return CT_UNLIKELY(id >= CT_LIB_BASE) ? ct_libalg_applicable(id, call)
                                          : colltune_applicable(id, call);
}

/* Whether a variant or library member can serve the call (uniform arguments only): applicable
 * and proven on this library in the call's case class. */
static inline colltune_reason ct_member_applicable(int id, const ct_call *call)
{
    colltune_reason reason = ct_member_fits(id, call);
    if (reason != COLLTUNE_APPLICABLE || CT_LIKELY(ct_proof_full[id]))
        return reason;
    return ct_proof_check(id, call);
}

/* ct_member_applicable without the proof's warning, the call classified once for all the
 * members asked (`need`, see ct_proof_need). */
static inline int ct_member_usable(int id, const ct_call *call, ct_proof_need *need)
{
    return ct_member_fits(id, call) == COLLTUNE_APPLICABLE && ct_proof_meets_need(id, call, need);
}

/* Run the decided variant or library member. */
static inline int ct_run_member(const ct_call *call, ct_decision *d)
{
    return d->variant >= CT_LIB_BASE ? ct_libalg_run(call, d) : colltune_invoke(d->variant, call);
}

#endif /* CT_MEMBER_H */
