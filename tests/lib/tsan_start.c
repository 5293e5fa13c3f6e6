/*
 * tsan_start.c - `make tsan` only: starts ThreadSanitizer's runtime from a
 * constructor, preloaded right after libtsan (SYNCSHIM_PRELOAD_PREFIX).
 *
 * Under `make tsan` every process a suite starts gets libtsan preloaded,
 * also those that run without the shim (a crashtest check, a tool's own
 * children). Preloaded into a program that is not instrumented, gcc's
 * libtsan starts only when one of its interceptors is first called, and
 * its setjmp interceptors, written in assembly, jump through the real
 * function's pointer without starting it: dash and bash call _setjmp
 * first thing in main and jump to address 0 (SIGSEGV before any output).
 * The shim's own module constructor starts the runtime in the processes
 * it is loaded in; this does it for the others. Not part of any shipped
 * build.
 */
void __tsan_init(void);

__attribute__((constructor)) static void tsan_start(void)
{
	__tsan_init();
}
