/* CPU feature checks for the artifact's Target.features. Names are LLVM's subtarget
 * feature spellings (what the compiler requires the code to run on). x86 reads CPUID
 * directly and also checks, with XGETBV, that the OS saves the registers a feature needs
 * (AVX, AVX-512, AMX) - and, on Linux, asks for AMX's tile data state, which a process must
 * request before its first tile instruction; aarch64 reads the kernel's HWCAP bits; Hexagon
 * knows its HVX length at compile time. An unknown name is an error, so a new feature never
 * runs as an illegal instruction. */
#include "platform.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

typedef struct feature_s {
  const char *name;
  unsigned char word; /* which register word below */
  unsigned char bit;
} feature_t;

#if defined(__x86_64__) || defined(__i386__)

enum { L1C, L1D, L7B, L7C, L7D, L71A, LX1C, LDA, OS_AVX, OS_AVX512, OS_AMX, ALWAYS, N_WORDS };

static const feature_t kFeatures[] = {
    {"64bit", ALWAYS, 0},     {"x87", L1D, 0},          {"cx8", L1D, 8},
    {"cmov", L1D, 15},        {"mmx", L1D, 23},         {"fxsr", L1D, 24},
    {"sse", L1D, 25},         {"sse2", L1D, 26},        {"sse3", L1C, 0},
    {"pclmul", L1C, 1},       {"ssse3", L1C, 9},        {"fma", L1C, 12},
    {"cx16", L1C, 13},        {"sse4.1", L1C, 19},      {"sse4.2", L1C, 20},
    {"crc32", L1C, 20},       {"movbe", L1C, 22},       {"popcnt", L1C, 23},
    {"aes", L1C, 25},         {"xsave", L1C, 26},       {"avx", L1C, 28},
    {"f16c", L1C, 29},        {"rdrnd", L1C, 30},       {"fsgsbase", L7B, 0},
    {"bmi", L7B, 3},          {"avx2", L7B, 5},         {"bmi2", L7B, 8},
    {"invpcid", L7B, 10},     {"avx512f", L7B, 16},     {"avx512dq", L7B, 17},
    {"rdseed", L7B, 18},      {"adx", L7B, 19},         {"avx512ifma", L7B, 21},
    {"clflushopt", L7B, 23},  {"clwb", L7B, 24},        {"avx512cd", L7B, 28},
    {"sha", L7B, 29},         {"avx512bw", L7B, 30},    {"avx512vl", L7B, 31},
    {"avx512vbmi", L7C, 1},   {"pku", L7C, 3},          {"avx512vbmi2", L7C, 6},
    {"gfni", L7C, 8},         {"vaes", L7C, 9},         {"vpclmulqdq", L7C, 10},
    {"avx512vnni", L7C, 11},  {"avx512bitalg", L7C, 12}, {"avx512vpopcntdq", L7C, 14},
    {"rdpid", L7C, 22},       {"amx-bf16", L7D, 22},    {"avx512fp16", L7D, 23},
    {"amx-tile", L7D, 24},    {"amx-int8", L7D, 25},    {"avxvnni", L71A, 4},
    {"avx512bf16", L71A, 5},  {"sahf", LX1C, 0},        {"lzcnt", LX1C, 5},
    {"sse4a", LX1C, 6},       {"prfchw", LX1C, 8},      {"xsaveopt", LDA, 0},
    {"xsavec", LDA, 1},       {"xsaves", LDA, 3},
};

static uint64_t xgetbv0(void) {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

static void read_words(uint32_t w[N_WORDS]) {
  unsigned a, b, c, d;
  memset(w, 0, N_WORDS * sizeof w[0]);
  w[ALWAYS] = ~0u;
  unsigned max = (unsigned)__get_cpuid_max(0, NULL);
  if (max >= 1 && __get_cpuid(1, &a, &b, &c, &d)) {
    w[L1C] = c;
    w[L1D] = d;
  }
  if (max >= 7 && __get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    w[L7B] = b;
    w[L7C] = c;
    w[L7D] = d;
    if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d))
      w[L71A] = a;
  }
  if (max >= 0xD && __get_cpuid_count(0xD, 1, &a, &b, &c, &d))
    w[LDA] = a;
  if ((unsigned)__get_cpuid_max(0x80000000u, NULL) >= 0x80000001u &&
      __get_cpuid(0x80000001u, &a, &b, &c, &d))
    w[LX1C] = c;
  /* Register state the OS saves on a context switch (needs OSXSAVE, CPUID.1:ECX[27]). */
  uint64_t xcr0 = (w[L1C] >> 27) & 1 ? xgetbv0() : 0;
  w[OS_AVX] = (xcr0 & 0x6) == 0x6;
  w[OS_AVX512] = w[OS_AVX] && (xcr0 & 0xE0) == 0xE0;
  w[OS_AMX] = (xcr0 & 0x60000) == 0x60000;
}

/* Linux (5.16 and later) enables AMX's tile data, the 8 KiB of tile registers, only for a
 * process that asks (ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); without it the first tile
 * instruction is SIGILL. Asking again is harmless. 1 when the process may use the tiles. */
static int os_grants_amx(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
  return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
#else
  return 1;
#endif
}

/* The register state a feature needs the OS to save, or -1. */
static int os_word(const feature_t *f) {
  if (f->word == L7D && f->bit >= 22 && f->bit != 23)
    return OS_AMX;
  if (!strncmp(f->name, "avx512", 6))
    return OS_AVX512;
  if (!strncmp(f->name, "avx", 3) || !strcmp(f->name, "fma") || !strcmp(f->name, "f16c") ||
      !strcmp(f->name, "vaes") || !strcmp(f->name, "vpclmulqdq"))
    return OS_AVX;
  return -1;
}

#elif defined(__aarch64__) && defined(__linux__)

enum { HW1, HW2, ALWAYS, N_WORDS };

static const feature_t kFeatures[] = {
    {"fp-armv8", HW1, 0}, {"neon", HW1, 1},      {"aes", HW1, 3},      {"sha2", HW1, 6},
    {"crc", HW1, 7},      {"lse", HW1, 8},       {"fullfp16", HW1, 10}, {"rdm", HW1, 12},
    {"rcpc", HW1, 15},    {"dotprod", HW1, 20},  {"sve", HW1, 22},     {"sve2", HW2, 1},
    {"i8mm", HW2, 13},    {"bf16", HW2, 14},     {"v8a", ALWAYS, 0},
};

static void read_words(uint32_t w[N_WORDS]) {
  w[HW1] = (uint32_t)getauxval(AT_HWCAP);
  w[HW2] = (uint32_t)getauxval(AT_HWCAP2);
  w[ALWAYS] = ~0u;
}

static int os_word(const feature_t *f) {
  (void)f;
  return -1;
}

#elif defined(__hexagon__)

/* A statically linked Hexagon program runs on the HVX it was compiled for: what the
 * compiler targeted is what there is (a mismatch would not have got this far). */
enum { ALWAYS, N_WORDS };
static const feature_t kFeatures[] = {
#if defined(__HVX__) && __HVX_LENGTH__ == 128
    {"hvx-length128b", ALWAYS, 0},
#endif
    {"", 0, 0}};
static void read_words(uint32_t w[N_WORDS]) { w[ALWAYS] = ~0u; }
static int os_word(const feature_t *f) {
  (void)f;
  return -1;
}

#else /* no feature detection: only the empty list is accepted */

enum { N_WORDS = 1 };
static const feature_t kFeatures[] = {{"", 0, 0}};
static void read_words(uint32_t w[N_WORDS]) { w[0] = 0; }
static int os_word(const feature_t *f) {
  (void)f;
  return -1;
}

#endif

kiln_status_t kiln_platform_cpu_has(const char *feature, int *out_has) {
  *out_has = 0;
  if (feature[0] == '+')
    ++feature;
  for (size_t i = 0; i < sizeof kFeatures / sizeof kFeatures[0]; ++i) {
    const feature_t *f = &kFeatures[i];
    if (!f->name[0] || strcmp(f->name, feature) != 0)
      continue;
    uint32_t w[N_WORDS];
    read_words(w);
    int os = os_word(f);
    *out_has = ((w[f->word] >> f->bit) & 1u) && (os < 0 || w[os]);
#if defined(__x86_64__) || defined(__i386__)
    if (*out_has && os == OS_AMX)
      *out_has = os_grants_amx();
#endif
    return KILN_STATUS_OK;
  }
  return KILN_STATUS_UNSUPPORTED;
}
