#pragma once
// Expecting an IoError with given words in its message, for the Qt tests of the file readers and
// writers (tests/unit/test_io_hdf5.cpp, test_io_hdf5_hostile.cpp). Header-only (qWarning: Qt
// tests only).
#include <QtGlobal>
#include <exception>
#include <string>
#include <vector>

#include "almagest/core/error.hpp"

namespace almagest::test {

/// Runs f; true when it throws IoError whose message holds every needle. Otherwise false, with a
/// warning saying why (a needle missing, another exception, or nothing thrown). `message`, when
/// given, receives the IoError's text.
template <class F>
bool throws_io_error(F&& f, const std::vector<std::string>& needles, std::string* message = nullptr) {
  try {
    f();
  } catch (const IoError& e) {
    const std::string what = e.what();
    if (message) *message = what;
    for (const auto& n : needles)
      if (what.find(n) == std::string::npos) {
        qWarning("message '%s' lacks '%s'", what.c_str(), n.c_str());
        return false;
      }
    return true;
  } catch (const std::exception& e) {
    qWarning("threw a non-IoError: %s", e.what());
    return false;
  }
  qWarning("did not throw");
  return false;
}

}  // namespace almagest::test
