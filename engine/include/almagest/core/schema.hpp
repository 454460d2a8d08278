#pragma once
// Job schemas: every field of an engine's job declared once -- key, kind, default, range or
// choices, unit, help -- and read through one Reader that applies those declarations. The CLI's
// options, the job-file keys, the GUI's forms and Python's keyword arguments are generated from
// (or checked against) a Schema, so a rule and its message live in one place (docs/design.md,
// "Jobs").
//
//   const Schema& s = npcf::npcf_schema();
//   Reader r(s, values, "jobs.toml: job 2: ");     // values from CLI11, TOML/JSON, Qt or Python
//   auto nbins = r.integer("nbins");               // range checked against the declaration
//   r.throw_if_problems();                         // ConfigError listing every problem
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace almagest::schema {

/// How a field's value is written.
enum class Kind {
  Text,        ///< one string
  TextList,    ///< strings; comma-separated on the command line, an array in files and Python
  Number,      ///< real number
  Integer,     ///< integer (64-bit; the declared range is checked on the value as written)
  Flag,        ///< boolean; a bare flag on the command line
  Choice,      ///< one of `choices`
  ChoiceList,  ///< one or more of `choices`
};
const char* to_string(Kind k);

/// What a text field names, for the checks every front end shares: inputs must exist and be
/// readable regular files before a job runs; outputs must differ from each other and from the
/// inputs; relative paths in a job file are resolved against the job file's folder.
enum class Role { Plain, InputFile, InputFiles, OutputFile };

/// A value from the command line (text, text lists, flags), a job file (TOML/JSON scalars and
/// arrays), a GUI form or Python keyword arguments.
using Value = std::variant<bool, std::int64_t, double, std::string, std::vector<std::string>>;
using Values = std::map<std::string, Value>;

struct Field {
  std::string key;                       ///< job-file key, Python keyword (with '_'), "--" + key
  std::string short_flag;                ///< e.g. "-o"; empty if none
  Kind kind = Kind::Text;
  std::string value_name;                ///< placeholder in help ("FILE", "R")
  std::string group;                     ///< help section / GUI form group
  std::string help;                      ///< what it does (default, range and unit are added)
  std::string unit;                      ///< "Mpc/h", "arcmin", "px/day", "" for none
  std::vector<std::string> choices;      ///< Choice / ChoiceList
  std::optional<Value> default_value;    ///< applied when the field is absent
  std::optional<double> min, max;        ///< inclusive bounds (Number / Integer)
  bool min_exclusive = false, max_exclusive = false;
  bool required = false;
  Role role = Role::Plain;
  std::vector<std::string> operations;   ///< engine operations the field applies to (empty: all)
};

struct Schema {
  std::string engine;                    ///< "npcf", "sht", "stack"
  std::string help;                      ///< one paragraph
  std::vector<Field> fields;             ///< in help order
  std::string operation_key;             ///< key choosing the operation ("op"), empty if none

  const Field* find(std::string_view key) const noexcept;
  /// Fields that apply to `operation` (all when the schema has no operations).
  std::vector<const Field*> fields_for(std::string_view operation) const;
};

/// The value as the user wrote it: strings unquoted, numbers in shortest round-trip form.
std::string describe(const Value& v);
/// The help text of a field with its default, range and unit appended, as every front end shows it.
std::string full_help(const Field& f);
/// "key" with '_' for '-': the Python keyword of a field.
std::string python_name(std::string_view key);
/// Canonical key of a spelling ('_' and '-' are the same); empty if the schema has no such key.
std::string canonical_key(const Schema& s, std::string_view spelling);

/// Typed access to job values with every problem collected and prefixed ("--", "jobs.toml: job 2: ").
/// Range, choices and kind come from the schema; messages echo the value as written.
class Reader {
public:
  Reader(const Schema& schema, const Values& values, std::string prefix);

  bool has(const std::string& key) const;
  void problem(const std::string& key, const std::string& what);
  /// Unknown keys, keys not applying to `operation`, missing required fields.
  void check_keys(std::string_view operation = {});

  std::optional<std::string> text(const std::string& key);
  std::optional<std::vector<std::string>> list(const std::string& key);
  std::optional<double> number(const std::string& key);
  std::optional<std::int64_t> integer(const std::string& key);
  bool flag(const std::string& key);
  std::optional<std::string> choice(const std::string& key);
  std::optional<std::vector<std::string>> choices(const std::string& key);
  /// The value as written (for messages of cross-field rules).
  std::string original(const std::string& key) const;

  /// Field values with the schema's default applied when absent (and the default's type).
  double number_or_default(const std::string& key);
  std::int64_t integer_or_default(const std::string& key);
  std::string text_or_default(const std::string& key);

  const std::vector<std::string>& problems() const noexcept { return problems_; }
  /// Throws ConfigError listing every problem (joined with "; ").
  void throw_if_problems() const;

private:
  const Field& field(const std::string& key) const;
  void check_range(const Field& f, double v, const std::string& written);
  const Schema& schema_;
  const Values& values_;
  std::string prefix_;
  std::vector<std::string> problems_;
};

/// Resolves a relative path against `base_dir` (empty: unchanged).
std::string resolve_path(const std::string& path, const std::string& base_dir);

}  // namespace almagest::schema
