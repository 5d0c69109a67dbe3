/* Compiled into tokconf's coverage-instrumented tokenizer-only libllama (tokconf.strength.coverage) only.
 * llama.cpp aborts on some inputs (b11192: a code point above U+10FFFF); gcov writes its counters at a
 * normal exit, so on SIGABRT they are written first, then the abort goes on as it would have. */
#include <signal.h>

extern void __gcov_dump(void);

static void tokconf_dump_on_abort(int sig) {
    __gcov_dump();
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void tokconf_coverage_hook(void) {
    signal(SIGABRT, tokconf_dump_on_abort);
}
