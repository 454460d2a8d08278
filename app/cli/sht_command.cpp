// `almagest-cli sht synth|adjoint|inverse|map2alm|cl|smooth`: a thin adapter over the sht job
// (almagest/sht/job.hpp). Every option of a subcommand is generated from sht_schema() (one per
// field of that operation, help = schema::full_help), the values the user gave are passed as
// text, and the job layer validates, reads, transforms and writes; this file keeps the progress
// bar, the summary and the exit codes (plus kExitNotConverged, 6).
#include "sht_command.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fmt/format.h>
#include <map>
#include <memory>

#include "almagest/core/error.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/sht/job.hpp"
#include "options.hpp"
#include "schema_options.hpp"
#include "progress_bar.hpp"

namespace almagest::cli {

namespace {

/// The options of one subcommand as CLI11 stores them, turned into schema values after parsing.
struct Sub : SchemaOptions {
  sht::ShtOp op = sht::ShtOp::Synth;

  /// Only the fields the user gave: the schema's defaults apply to the rest.
  schema::Values values() const { return SchemaOptions::values("op", std::string(sht::to_string(op))); }
};

std::string option_name(const schema::Field& f) {
  std::string n = f.key == "input" ? "INPUT,--input" : "--" + f.key;
  return f.short_flag.empty() ? n : f.short_flag + "," + n;
}

void add_options(Sub& s) {
  for (const schema::Field* f : sht::sht_schema().fields_for(sht::to_string(s.op))) {
    if (f->key == "op") continue;
    const std::string help = wrap_text(schema::full_help(*f), 62);
    CLI::Option* o = nullptr;
    if (f->kind == schema::Kind::Flag) {
      o = s.app->add_flag(option_name(*f), s.flags[f->key], help);
    } else if (f->kind == schema::Kind::TextList || f->kind == schema::Kind::ChoiceList) {
      o = s.app->add_option(option_name(*f), s.lists[f->key], help)->delimiter(',');
    } else {
      // As text: the schema reads and range-checks it (CLI11 2.1 saturates and wraps integers).
      o = s.app->add_option(option_name(*f), s.text[f->key], help);
    }
    if (!f->value_name.empty() && f->kind != schema::Kind::Flag) o->type_name(f->value_name);
    s.opts[f->key] = o;
  }
  s.app->add_flag("--dry-run", s.dry_run,
                  wrap_text("Report the plan (inputs and sizes, host and device memory, batching, estimated time) "
                            "and stop; nothing is transformed or written.", 62));
  s.app->add_flag("-q,--quiet", s.quiet, "No progress bar and no summary; errors are still printed.");
  s.app->add_flag("-v,--verbose", s.verbose, "Also print the engine's log messages.");
}

void print_plan(const jobs::PlanReport& p) {
  std::printf("dry run: nothing was transformed or written\n");
  for (const auto& in : p.inputs) std::printf("  input %s (%s, %llu bytes)\n", in.path.c_str(), in.what.c_str(),
                                              static_cast<unsigned long long>(in.bytes));
  for (const auto& out : p.outputs) std::printf("  output %s\n", out.c_str());
  for (const auto& n : p.notes) std::printf("  %s\n", n.c_str());
  std::printf("  batching: %s\n", p.tiling.c_str());
  std::printf("  memory: host %.1f MB, device %.1f MB\n", p.host_bytes / 1e6, p.device_bytes / 1e6);
  std::printf("  estimated time: %.3g s\n", p.estimated_seconds);
  std::fflush(stdout);
}

int do_command(const Sub& s) {
  const jobs::JobRequest req{"sht", s.values(), "", ""};
  const std::unique_ptr<jobs::Job> job = jobs::make_job(req);  // ConfigError: exit 2
  const std::vector<std::string> outputs = job->output_paths();
  auto is_output = [&](const std::string& f) { return std::find(outputs.begin(), outputs.end(), f) != outputs.end(); };
  ProgressBar bar(!s.quiet && !s.dry_run && ProgressBar::stderr_is_tty());
  JobContext ctx(interrupt_token(), bar.sink(), bar.log_sink(s.verbose, s.quiet));
  std::unique_ptr<jobs::Outcome> outcome;
  try {
    jobs::check_job_files(*job, "");
    jobs::RunOptions options;
    options.dry_run = s.dry_run;
    outcome = job->run(ctx, options);
  } catch (const IoError& e) {
    if (is_output(e.file())) throw CliFailure(kExitOutputIo, e.what());
    throw;
  } catch (const NotConverged& e) {
    throw CliFailure(kExitNotConverged, e.what());
  }
  bar.finish();
  const auto& o = dynamic_cast<const sht::ShtOutcome&>(*outcome);
  if (o.plan) {
    if (!s.quiet) print_plan(*o.plan);
    return kExitOk;
  }
  if (!s.quiet) {
    std::printf("wrote %s (%s %s)\n", outputs.front().c_str(), sht::to_string(o.format), o.what.c_str());
    for (const auto& line : o.summary) std::printf("  %s\n", line.c_str());
    std::printf("  backend %s (%s), %d thread(s); read %.3f s, transform %.3f s, write %.3f s\n", o.backend.c_str(),
                o.device.empty() ? "-" : o.device.c_str(), o.threads, o.read_s, o.transform_s, o.write_s);
    std::fflush(stdout);
  }
  return kExitOk;
}

std::string sht_exit_codes() {
  std::string t = exit_code_help();
  const std::string line = "  6    sht inverse: CGLS did not converge within --max-iter (no output)\n";
  auto p = t.find("  130");
  return p == std::string::npos ? t + line : t.insert(p, line);
}

}  // namespace

Command add_sht_command(CLI::App& parent) {
  auto* sht = parent.add_subcommand("sht", wrap_text(sht::sht_schema().help, 80));
  sht->require_subcommand(1);
  sht->footer(sht_exit_codes() + "\nRun `almagest-cli sht <operation> --help` for its options.\n");
  struct Entry {
    sht::ShtOp op;
    const char* help;
    const char* example;
  };
  const Entry entries[] = {
      {sht::ShtOp::Synth, "Synthesis: alm -> map (healpy alm2map, alm2map_spin, pol=True).",
       "almagest-cli sht synth alm.fits --nside 256 -o map.fits"},
      {sht::ShtOp::Adjoint, "Exact adjoint Y^T: map -> alm without quadrature weights (= healpy map2alm(iter=0, use_weights=False) * Npix / 4pi).",
       "almagest-cli sht adjoint map.fits --lmax 500 -o alm.fits"},
      {sht::ShtOp::Inverse, "Least-squares inverse min ||Y a - m|| by CGLS: map -> alm; exit code 6 if not converged.",
       "almagest-cli sht inverse map.fits --lmax 383 --epsilon 1e-10 -o alm.fits"},
      {sht::ShtOp::Map2alm, "healpy map2alm(iter): alm = Y^T W m, then --iter Jacobi steps (--ring-weights, --pixel-weights: healpy's weights).",
       "almagest-cli sht map2alm cmb.fits --pol --iter 3 -o alm.fits"},
      {sht::ShtOp::Cl, "Angular power spectra (healpy anafast / alm2cl): TT; EE, BB, EB (--spin 2); TT, EE, BB, TE, EB, TB (--pol).",
       "almagest-cli sht cl cmb.fits --pol -o cl.fits"},
      {sht::ShtOp::Smooth, "Gaussian-beam smoothing (healpy smoothing): map2alm(iter), times the beam, synthesis.",
       "almagest-cli sht smooth map.fits --fwhm-arcmin 30 -o smoothed.fits"},
  };
  std::vector<std::shared_ptr<Sub>> subs;
  for (const auto& e : entries) {
    auto s = std::make_shared<Sub>();
    s->op = e.op;
    s->app = sht->add_subcommand(sht::to_string(e.op), wrap_text(e.help, 80));
    add_options(*s);
    s->app->footer(sht_exit_codes() + "\nExample:\n  " + e.example + "\n");
    subs.push_back(s);
  }
  return Command{sht, [subs]() {
                   for (const auto& s : subs)
                     if (s->app->parsed()) return do_command(*s);
                   throw ConfigError("sht", "no operation given (synth, adjoint, inverse, map2alm, cl, smooth)");
                 }};
}

}  // namespace almagest::cli
