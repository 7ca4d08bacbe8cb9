// Where unit tests find shared data: $KILN_MODELS_DIR / $KILN_TESTDATA_DIR, else the
// directories CMake was configured with (default ../shared/...). A missing file is a test
// failure with a message saying what to set - never a silent pass.
#ifndef KILN_TESTS_UNIT_TESTPATHS_H
#define KILN_TESTS_UNIT_TESTPATHS_H

#include <cstdlib>
#include <string>
#include <sys/stat.h>

namespace kiln::test {

inline std::string envOr(const char *name, const char *fallback) {
  const char *v = std::getenv(name);
  return (v && *v) ? std::string(v) : std::string(fallback);
}

inline std::string modelsDir() { return envOr("KILN_MODELS_DIR", KILN_DEFAULT_MODELS_DIR); }
inline std::string testdataDir() {
  return envOr("KILN_TESTDATA_DIR", KILN_DEFAULT_TESTDATA_DIR);
}

inline bool fileExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

} // namespace kiln::test

// Fails the current test (fatally) when a shared data file is absent.
#define KILN_REQUIRE_FILE(path)                                                \
  ASSERT_TRUE(::kiln::test::fileExists(path))                                  \
      << "missing test data file " << (path)                                   \
      << " - set KILN_MODELS_DIR / KILN_TESTDATA_DIR (default ../shared/...)"

#endif // KILN_TESTS_UNIT_TESTPATHS_H
