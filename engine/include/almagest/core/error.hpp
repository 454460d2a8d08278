#pragma once
// Error hierarchy of the engine. Every exception the engine throws derives from almagest::Error,
// except Cancelled, which is an outcome (the user asked to stop), not a failure.
//
// Messages are complete sentences a user can act on: they name the file and the field (column,
// key, dataset, option) involved. The two catch boundaries are the GUI job runner and the CLI.
#include <stdexcept>
#include <string>

namespace almagest {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// A configuration value is out of range or inconsistent. `field` names the option.
class ConfigError : public Error {
public:
  ConfigError(std::string field, const std::string& what)
      : Error(field.empty() ? what : field + ": " + what), field_(std::move(field)) {}
  const std::string& field() const noexcept { return field_; }

private:
  std::string field_;
};

/// Reading or writing a file failed, or its content is invalid. Names the file and the field
/// (column, HDU, key, dataset, line) where known.
class IoError : public Error {
public:
  IoError(std::string file, std::string field, const std::string& what)
      : Error(compose(file, field, what)), file_(std::move(file)), field_(std::move(field)) {}
  const std::string& file() const noexcept { return file_; }
  const std::string& field() const noexcept { return field_; }

private:
  static std::string compose(const std::string& file, const std::string& field,
                             const std::string& what) {
    std::string s = file;
    if (!field.empty()) s += (s.empty() ? "" : ": ") + field;
    return s.empty() ? what : s + ": " + what;
  }
  std::string file_, field_;
};

/// The requested backend cannot run here; the message says why (no module, no device, ...).
class BackendUnavailable : public Error {
public:
  using Error::Error;
};

/// A CUDA call failed inside the CUDA module (message carries file, line and CUDA's text).
class CudaError : public Error {
public:
  using Error::Error;
};

/// An iterative solver stopped before reaching its tolerance.
class NotConverged : public Error {
public:
  NotConverged(const std::string& what, int iterations, double residual)
      : Error(what), iterations_(iterations), residual_(residual) {}
  int iterations() const noexcept { return iterations_; }
  double residual() const noexcept { return residual_; }

private:
  int iterations_;
  double residual_;
};

/// Thrown by JobContext::check_cancel() when the job was cancelled. Not an Error.
class Cancelled : public std::exception {
public:
  const char* what() const noexcept override { return "job cancelled"; }
};

}  // namespace almagest

/// Throws almagest::Error with file/line when `cond` is false: for internal invariants only.
/// User-facing validation throws ConfigError/IoError with a message naming the field.
#define ALMAGEST_ASSERT(cond, msg)                                                              \
  do {                                                                                          \
    if (!(cond))                                                                                \
      throw ::almagest::Error(std::string("internal error at ") + __FILE__ + ":" +             \
                              std::to_string(__LINE__) + ": " + (msg));                         \
  } while (0)

#include <utility>
#include <vector>

namespace almagest {

/// Problems found by a configuration's validation: (field, message) pairs.
using FieldProblems = std::vector<std::pair<std::string, std::string>>;

/// "field: message" per problem (what XxxConfig::validate() returns).
inline std::vector<std::string> format_problems(const FieldProblems& problems) {
  std::vector<std::string> out;
  out.reserve(problems.size());
  for (const auto& [field, message] : problems) out.push_back(field + ": " + message);
  return out;
}

/// Throws one ConfigError listing every problem (none: returns). A single problem keeps its field.
inline void throw_if_problems(const FieldProblems& problems) {
  if (problems.empty()) return;
  if (problems.size() == 1) throw ConfigError(problems[0].first, problems[0].second);
  std::string all;
  for (const auto& line : format_problems(problems)) all += (all.empty() ? "" : "; ") + line;
  throw ConfigError("", all);
}

}  // namespace almagest
