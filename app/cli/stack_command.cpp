// `almagest-cli stack simulate|psiphi|search|stamps`: a thin adapter over the stack job
// (almagest/stack/job.hpp). Every option of a subcommand is generated from stack_schema() (one
// per field of that operation, help = schema::full_help), only the values the user gave are
// passed (as text, so the schema range-checks integers as written), and the job layer
// validates, reads, searches and writes; this file keeps the progress bar, the summaries and the
// exit codes (docs/cli.md, section "stack"): options 2, inputs 3, backend 4, outputs 5.
#include "stack_command.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/stack/job.hpp"
#include "options.hpp"
#include "schema_options.hpp"
#include "progress_bar.hpp"

namespace almagest::cli {

namespace {

/// The options of one subcommand as CLI11 stores them, turned into schema values after parsing.
struct Sub : SchemaOptions {
  stack::StackOp op = stack::StackOp::Search;

  /// Only the fields the user gave: the schema's defaults apply to the rest.
  schema::Values values() const { return SchemaOptions::values("op", std::string(stack::to_string(op))); }
};

/// The positional input of a subcommand: STACK for psiphi and search, CANDIDATES for stamps.
std::string option_name(stack::StackOp op, const schema::Field& f) {
  std::string n = "--" + f.key;
  if (f.key == "stack" && (op == stack::StackOp::Psiphi || op == stack::StackOp::Search)) n = "STACK," + n;
  if (f.key == "candidates" && op == stack::StackOp::Stamps) n = "CANDIDATES," + n;
  return f.short_flag.empty() ? n : f.short_flag + "," + n;
}

void add_options(Sub& s) {
  for (const schema::Field* f : stack::stack_schema().fields_for(stack::to_string(s.op))) {
    if (f->key == "op") continue;
    const std::string help = wrap_text(schema::full_help(*f), 62);
    CLI::Option* o = nullptr;
    if (f->kind == schema::Kind::Flag) {
      o = s.app->add_flag(option_name(s.op, *f), s.flags[f->key], help);
    } else if (f->kind == schema::Kind::TextList || f->kind == schema::Kind::ChoiceList) {
      // --mover X0,Y0,VX,VY[,SNR] is repeated, its commas are its own.
      o = s.app->add_option(option_name(s.op, *f), s.lists[f->key], help);
      if (f->key != "mover") o->delimiter(',');
    } else {
      // As text: the schema reads and range-checks it (CLI11 2.1 saturates and wraps integers).
      o = s.app->add_option(option_name(s.op, *f), s.text[f->key], help);
    }
    if (!f->value_name.empty() && f->kind != schema::Kind::Flag) o->type_name(f->value_name);
    o->group(f->group);
    s.opts[f->key] = o;
  }
  s.app->add_flag("--dry-run", s.dry_run,
                  wrap_text("Report the plan (inputs and sizes, stack dimensions, bank, host and device memory, tiling, "
                            "estimated time) and stop; nothing is read beyond headers or written.", 62))
      ->group("Run");
  s.app->add_flag("-q,--quiet", s.quiet, "No progress bar and no summary; errors are still printed.")->group("Run");
  if (s.op != stack::StackOp::Simulate)
    s.app->add_flag("-v,--verbose", s.verbose, "Also print the engine's log messages.")->group("Run");
}

void print_plan(const jobs::PlanReport& p) {
  std::printf("dry run: nothing was read beyond headers or written\n");
  for (const auto& in : p.inputs)
    std::printf("  input %s (%s, %llu bytes)\n", in.path.c_str(), in.what.c_str(), static_cast<unsigned long long>(in.bytes));
  for (const auto& out : p.outputs) std::printf("  output %s\n", out.c_str());
  for (const auto& n : p.notes) std::printf("  %s\n", n.c_str());
  if (!p.tiling.empty()) std::printf("  tiling: %s\n", p.tiling.c_str());
  std::printf("  memory: host %.1f MB, device %.1f MB\n", p.host_bytes / 1e6, p.device_bytes / 1e6);
  std::printf("  estimated time: %.3g s\n", p.estimated_seconds);
  std::fflush(stdout);
}

int do_command(const Sub& s) {
  const jobs::JobRequest req{"stack", s.values(), "", ""};
  const stack::StackJob job = stack::make_stack_job(req);  // ConfigError: exit 2
  const std::vector<std::string> outputs = job.output_paths();
  // An IoError about an output (or its temporary ".NAME.tmp.*" beside it) is exit 5.
  auto is_output = [&](const std::string& f) {
    for (const auto& out : outputs) {
      if (f == out) return true;
      const std::filesystem::path o(out), p(f);
      if (p.parent_path() == o.parent_path() && p.filename().string().rfind("." + o.filename().string() + ".tmp", 0) == 0) return true;
    }
    return false;
  };
  ProgressBar bar(!s.quiet && !s.dry_run && ProgressBar::stderr_is_tty());
  JobContext ctx(interrupt_token(), bar.sink(), bar.log_sink(s.verbose, s.quiet));
  stack::StackOutcome o;
  try {
    // Outputs first (exit 5 before any work); the readers name a missing input themselves.
    if (!s.dry_run) {
      const bool folder = job.op == stack::StackOp::Simulate && job.simulate.format == "files";
      for (std::size_t i = 0; i < outputs.size(); ++i) check_output_target(outputs[i], job.input_paths(), folder && i == 0);
    }
    jobs::RunOptions options;
    options.dry_run = s.dry_run;
    o = stack::run_stack_job(job, ctx, options);
  } catch (const IoError& e) {
    if (is_output(e.file())) throw CliFailure(kExitOutputIo, e.what());
    throw;
  }
  bar.finish();
  if (o.plan) {
    if (!s.quiet) print_plan(*o.plan);
    return kExitOk;
  }
  if (!s.quiet) {
    for (const auto& line : o.summary) std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  return kExitOk;
}

}  // namespace

Command add_stack_command(CLI::App& parent) {
  auto* stack = parent.add_subcommand("stack", wrap_text(stack::stack_schema().help, 80));
  stack->require_subcommand(1);
  stack->footer(exit_code_help() + "\nRun `almagest-cli stack <command> --help` for its options.\n");
  struct Entry {
    stack::StackOp op;
    const char* help;
    const char* example;
  };
  const Entry entries[] = {
      {stack::StackOp::Simulate,
       "Write a synthetic stack (the reference workload's recipe: Gaussian noise with varying variance, masked holes, a moving "
       "bad column, variable seeing, irregular times, a common quadratic-plus-periodic track) with injected movers, as WorkUnit "
       "FITS, HDF5 cube or per-exposure FITS files, plus the movers' truth table (ECSV) and the common curve (text, for "
       "--common-curve).",
       "almagest-cli stack simulate --exposures 200 --width 128 --height 128 --snr 9 -o stack.fits"},
      {stack::StackOp::Psiphi,
       "Compute the psi/phi planes of a stack (psi = correlate(sci/var, PSF), phi = correlate(1/var, PSF^2)) in the chosen "
       "storage and write them to HDF5.",
       "almagest-cli stack psiphi stack.h5 --storage int8 -o psiphi.h5"},
      {stack::StackOp::Search,
       "Search a stack for moving sources: score Z = A/sqrt(B) of every origin pixel x trial velocity, threshold (Bonferroni "
       "or a fixed Z) or top-k, clustering; writes the candidate table (ECSV or HDF5 by extension) with digest and provenance.",
       "almagest-cli stack search stack.fits --vx-range -8,8 --vy-range -8,8 --grid 33 --common-curve curve.txt -o "
       "candidates.ecsv"},
      {stack::StackOp::Stamps,
       "For a candidate table (the output of `stack search`, or any ECSV/HDF5 table with x, y, vx, vy), write per-candidate "
       "psi/phi curves, coadded stamps (sum, mean, median, weighted) and predicted tracks (with RA/Dec when the stack has a "
       "WCS) to HDF5.",
       "almagest-cli stack stamps candidates.ecsv --stamp-radius 8 -o stamps.h5"},
  };
  std::vector<std::shared_ptr<Sub>> subs;
  for (const auto& e : entries) {
    auto s = std::make_shared<Sub>();
    s->op = e.op;
    s->app = stack->add_subcommand(stack::to_string(e.op), wrap_text(e.help, 80));
    add_options(*s);
    s->app->footer(exit_code_help() + "\nExample:\n  " + e.example + "\n");
    subs.push_back(s);
  }
  return Command{stack, [subs]() {
                   for (const auto& s : subs)
                     if (s->app->parsed()) return do_command(*s);
                   throw ConfigError("stack", "no command given (simulate, psiphi, search, stamps)");
                 }};
}

}  // namespace almagest::cli
