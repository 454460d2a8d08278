// `almagest-cli schema [ENGINE] [--markdown|--json]`: the job schema of each engine (and of the
// [[aggregate]] tables) as every front end sees it -- keys, kinds, defaults, ranges, units,
// operations and help. docs/jobs.md's key tables are this command's --markdown output.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "almagest/core/error.hpp"
#include "almagest/core/schema.hpp"
#include "almagest/jobs/aggregate.hpp"
#include "almagest/jobs/job.hpp"
#include "run_command.hpp"

namespace almagest::cli {

namespace {

std::vector<const schema::Schema*> schemas(const std::string& engine) {
  std::vector<const schema::Schema*> all;
  for (const auto& e : jobs::engines()) all.push_back(&e.schema());
  all.push_back(&jobs::aggregate_schema());
  if (engine.empty()) return all;
  for (const auto* s : all)
    if (s->engine == engine) return {s};
  std::string names;
  for (const auto* s : all) names += (names.empty() ? "" : ", ") + s->engine;
  throw ConfigError("ENGINE", "unknown engine '" + engine + "' (allowed: " + names + ")");
}

std::string range_text(const schema::Field& f) {
  std::string s;
  if (!f.choices.empty()) {
    for (std::size_t i = 0; i < f.choices.size(); ++i) s += (i ? ", " : "") + f.choices[i];
    return s;
  }
  auto num = [](double v) { return schema::describe(schema::Value{v}); };
  if (f.min && f.max) return std::string(f.min_exclusive ? "(" : "[") + num(*f.min) + ", " + num(*f.max) + (f.max_exclusive ? ")" : "]");
  if (f.min) return std::string(f.min_exclusive ? "> " : ">= ") + num(*f.min);
  if (f.max) return std::string(f.max_exclusive ? "< " : "<= ") + num(*f.max);
  return {};
}

std::string role_text(schema::Role r) {
  switch (r) {
    case schema::Role::InputFile: return "input file";
    case schema::Role::InputFiles: return "input files";
    case schema::Role::OutputFile: return "output file";
    default: return "";
  }
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

std::string cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

void print_markdown(const schema::Schema& s) {
  std::printf("### %s\n\n%s\n\n", s.engine == "aggregate" ? "[[aggregate]] tables" : (s.engine + " jobs").c_str(), s.help.c_str());
  if (!s.operation_key.empty()) std::printf("The operation is chosen by `%s`.\n\n", s.operation_key.c_str());
  std::printf("| Key | Kind | Default | Range / choices | Unit | Operations | Description |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const auto& f : s.fields) {
    std::string kind = schema::to_string(f.kind);
    if (const auto r = role_text(f.role); !r.empty()) kind += " (" + r + ")";
    std::string def = f.default_value ? "`" + schema::describe(*f.default_value) + "`" : (f.required ? "required" : "");
    std::printf("| `%s` | %s | %s | %s | %s | %s | %s |\n", f.key.c_str(), cell(kind).c_str(), cell(def).c_str(),
                cell(range_text(f)).c_str(), cell(f.unit).c_str(), cell(f.operations.empty() ? "all" : join(f.operations)).c_str(),
                cell(f.help).c_str());
  }
  std::printf("\n");
}

void print_text(const schema::Schema& s) {
  std::printf("%s: %s\n", s.engine.c_str(), s.help.c_str());
  for (const auto& f : s.fields) {
    std::string line = "  " + f.key + " (" + schema::to_string(f.kind);
    if (const auto r = role_text(f.role); !r.empty()) line += ", " + r;
    if (f.required) line += ", required";
    if (!f.operations.empty()) line += "; " + join(f.operations);
    line += ")";
    std::string help = "      ";
    for (char c : wrap_text(schema::full_help(f), 72)) help += c == '\n' ? std::string("\n      ") : std::string(1, c);
    std::printf("%s\n%s\n", line.c_str(), help.c_str());
  }
  std::printf("\n");
}

nlohmann::json to_json(const schema::Schema& s) {
  nlohmann::json fields = nlohmann::json::array();
  for (const auto& f : s.fields) {
    nlohmann::json j{{"key", f.key}, {"python_name", schema::python_name(f.key)}, {"kind", schema::to_string(f.kind)},
                     {"help", f.help}, {"full_help", schema::full_help(f)}, {"required", f.required}};
    if (!f.short_flag.empty()) j["short_flag"] = f.short_flag;
    if (!f.group.empty()) j["group"] = f.group;
    if (!f.unit.empty()) j["unit"] = f.unit;
    if (!f.choices.empty()) j["choices"] = f.choices;
    if (f.default_value)
      std::visit([&](const auto& v) { j["default"] = v; }, *f.default_value);
    if (f.min) j["min"] = *f.min, j["min_exclusive"] = f.min_exclusive;
    if (f.max) j["max"] = *f.max, j["max_exclusive"] = f.max_exclusive;
    if (const auto r = role_text(f.role); !r.empty()) j["role"] = r;
    if (!f.operations.empty()) j["operations"] = f.operations;
    fields.push_back(j);
  }
  return {{"engine", s.engine}, {"help", s.help}, {"operation_key", s.operation_key}, {"fields", fields}};
}

}  // namespace

Command add_schema_command(CLI::App& parent) {
  auto* app = parent.add_subcommand(
      "schema", wrap_text("Print the job schema of each engine (npcf, sht, stack) and of the [[aggregate]] tables: every "
                          "key with its kind, default, range or choices, unit, operations and help. These are the "
                          "job-file keys, the command-line options (\"--\" + key), the GUI form fields and the Python "
                          "keyword arguments.", 80));
  auto engine = std::make_shared<std::string>();
  auto markdown = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  app->add_option("ENGINE", *engine, "npcf, sht, stack or aggregate (default: all).");
  auto* md = app->add_flag("--markdown", *markdown, "Markdown tables (docs/jobs.md).");
  app->add_flag("--json", *json, "One JSON document.")->excludes(md);
  return Command{app, [engine, markdown, json]() {
                   const auto list = schemas(*engine);
                   if (*json) {
                     nlohmann::json all = nlohmann::json::array();
                     for (const auto* s : list) all.push_back(to_json(*s));
                     std::printf("%s\n", all.dump(2).c_str());
                   } else {
                     for (const auto* s : list) *markdown ? print_markdown(*s) : print_text(*s);
                   }
                   std::fflush(stdout);
                   return static_cast<int>(kExitOk);
                 }};
}

}  // namespace almagest::cli
