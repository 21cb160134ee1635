/*
 * The TLS model of colltune's thread-local caches. Initial-exec (a fixed offset from the thread
 * pointer, no call) where the library is loaded once per process. SimGrid SMPI loads one copy of
 * the program and of libcolltune per simulated rank (dlopen privatization, see
 * docs/smpi.md), and initial-exec variables of dlopened objects come out of glibc's static TLS
 * surplus: about 1.6 KB, gone after ~26 ranks ("cannot allocate memory in static TLS block").
 * There the default model (a __tls_get_addr call per access) gives every copy its own block.
 */
#ifndef CT_TLS_H
#define CT_TLS_H

#ifdef COLLTUNE_ABI_FAMILY_SMPI
#define CT_TLS_MODEL
#else
#define CT_TLS_MODEL __attribute__((tls_model("initial-exec")))
#endif

#endif /* CT_TLS_H */
