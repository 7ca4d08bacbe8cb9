/* Process entry for a static Hexagon Linux executable without libc.
 *
 * The kernel starts _start with r29 (sp) pointing at argc, followed by argv[] and envp[].
 * _start passes that pointer to kiln_fs_start in r0 with sp aligned to 8 (the ABI's
 * requirement) and a zero frame pointer/link so backtraces end here. Objects are built with
 * -G0 (no small-data section), so GP needs no setup. */
#include "fs.h"

__asm__(".text\n"
        ".globl _start\n"
        ".type _start,@function\n"
        "_start:\n"
        "  r0 = r29\n"
        "  r29 = and(r29, #-8)\n"
        "  r30 = #0\n"
        "  r31 = #0\n"
        "  call kiln_fs_start\n"
        ".size _start, .-_start\n");

char **kiln_fs_envp;

/* libc/stdlib.c's atexit handlers and stdio flush; weak, so programs without the C
 * library link as before (the address is then null). */
extern void kiln_libc_at_exit(void) __attribute__((weak));

__attribute__((noreturn, used)) void kiln_fs_start(long *sp) {
  const int argc = (int)sp[0];
  char **argv = (char **)(sp + 1);
  kiln_fs_envp = argv + argc + 1; /* envp follows argv's terminating NULL */
  const int code = kiln_fs_main(argc, argv);
  if (kiln_libc_at_exit)
    kiln_libc_at_exit();
  kiln_fs_exit(code);
}
