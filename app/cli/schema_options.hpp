#pragma once
// CLI11 storage of the options generated from a job schema (almagest/core/schema.hpp), shared by
// the subcommands of the engines with operations (sht, stack): parsed text, lists and flags by
// key, turned into schema values after parsing with only the fields the user gave, so the
// schema's defaults apply to the rest exactly as in job files, the GUI and Python.
#include <CLI/CLI.hpp>
#include <map>
#include <string>
#include <vector>

#include "almagest/core/schema.hpp"

namespace almagest::cli {

struct SchemaOptions {
  CLI::App* app = nullptr;
  std::map<std::string, std::string> text;                ///< Text, Number, Integer, Choice
  std::map<std::string, std::vector<std::string>> lists;  ///< TextList
  std::map<std::string, bool> flags;                      ///< Flag
  std::map<std::string, CLI::Option*> opts;
  bool quiet = false, verbose = false, dry_run = false;

  /// The given fields, plus the operation key set to `operation`.
  schema::Values values(const std::string& operation_key, const std::string& operation) const {
    schema::Values v;
    v[operation_key] = operation;
    for (const auto& [key, opt] : opts) {
      if (opt->count() == 0) continue;
      if (auto t = text.find(key); t != text.end()) v[key] = t->second;
      else if (auto l = lists.find(key); l != lists.end()) v[key] = l->second;
      else v[key] = flags.at(key);
    }
    return v;
  }
};

}  // namespace almagest::cli
