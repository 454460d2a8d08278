#pragma once
// Where a Qt test makes its temporary directories: $ALMAGEST_TEST_TMP (ctest sets it to
// <build>/tests/tmp, tests/CMakeLists.txt), else Qt's temporary path. Header-only, for the Qt Test
// executables only (the bench programs that also use tests/common do not link Qt).
#include <QDir>
#include <cstdlib>
#include <string>

namespace almagest::test {

inline std::string tmp_root() {
  const char* env = std::getenv("ALMAGEST_TEST_TMP");
  return env ? env : QDir::tempPath().toStdString();
}

}  // namespace almagest::test
