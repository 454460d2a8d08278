// `almagest-cli selftest`: runs every engine's GPU self-test (jobs::engine_selftests(): the NpCF
// kernels against their CPU twins on seeded catalogues, the CUDA SHT against healpix_cxx) and
// prints one line per check. Users run it on their own GPU; exit code 0 when all checks pass, 4
// (backend unavailable) when no GPU can be used, 1 when a check fails, 2 for a bad option value.
// The options are generated from each self-test's declared options, as the engines' subcommands
// are from their job schemas; only the values a user gave are passed, so defaults are the
// declarations'.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "almagest/core/gpu.hpp"
#include "almagest/core/selftest.hpp"
#include "almagest/jobs/selftests.hpp"
#include "options.hpp"

namespace almagest::cli {

namespace {

struct SelftestCli {
  std::map<std::string, std::string> text;
  std::map<std::string, std::vector<std::string>> lists;
  std::map<std::string, bool> flags;
  std::map<std::string, CLI::Option*> opts;
  bool quiet = false;

  schema::Values values() const {
    schema::Values v;
    for (const auto& [key, opt] : opts) {
      if (opt->count() == 0) continue;
      if (auto t = text.find(key); t != text.end()) v[key] = t->second;
      else if (auto l = lists.find(key); l != lists.end()) v[key] = l->second;
      else v[key] = flags.at(key);
    }
    return v;
  }
};

std::string description(const SelftestRegistry& registry) {
  std::string d = "Check the GPU backends against the CPU backends on seeded inputs:";
  const auto& e = registry.entries();
  for (std::size_t k = 0; k < e.size(); ++k)
    d += std::string(k == 0 ? " " : "; ") + e[k].summary;
  return d + ". Prints PASS/FAIL per check.";
}

}  // namespace

Command add_selftest_command(CLI::App& parent) {
  const SelftestRegistry& registry = jobs::engine_selftests();
  auto* app = parent.add_subcommand("selftest", description(registry));
  auto s = std::make_shared<SelftestCli>();
  for (const EngineSelftest& e : registry.entries())
    for (const schema::Field& f : e.options.fields) {
      const std::string name = "--" + f.key;
      const std::string help = wrap_text(schema::full_help(f), 62);
      CLI::Option* o = nullptr;
      if (f.kind == schema::Kind::Flag) {
        o = app->add_flag(name, s->flags[f.key], help);
      } else if (f.kind == schema::Kind::TextList || f.kind == schema::Kind::ChoiceList) {
        o = app->add_option(name, s->lists[f.key], help)->delimiter(',');
      } else {
        // As text: the declaration reads and range-checks it.
        o = app->add_option(name, s->text[f.key], help);
      }
      if (!f.value_name.empty() && f.kind != schema::Kind::Flag) o->type_name(f.value_name);
      s->opts[f.key] = o;
    }
  app->add_flag("-q,--quiet", s->quiet, "Print only the summary line");
  app->footer(exit_code_help());
  return Command{app, [s, &registry] {
                   const schema::Values values = s->values();
                   registry.check(values);  // a bad value is a usage error, GPU or not
                   const GpuStatus& st = gpu_status();
                   if (!st.available)
                     throw BackendUnavailable("selftest needs a GPU: " + st.reason);
                   JobContext ctx(interrupt_token());
                   const SelftestReport report = registry.run(values, ctx);
                   std::string text = report.text();
                   if (s->quiet) {
                     auto pos = text.find_last_of('\n', text.size() >= 2 ? text.size() - 2 : 0);
                     text = pos == std::string::npos ? text : text.substr(pos + 1);
                   }
                   std::fputs(text.c_str(), stdout);
                   if (!text.empty() && text.back() != '\n') std::fputc('\n', stdout);
                   return report.passed() ? static_cast<int>(kExitOk) : static_cast<int>(kExitInternal);
                 }};
}

}  // namespace almagest::cli
