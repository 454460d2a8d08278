// `almagest-cli stack simulate`: a synthetic exposure stack from the reference-workload recipe of
// the stack engine (almagest/stack/synthetic.hpp) scaled by options, with injected movers, written
// as a KBMOD WorkUnit FITS file, an HDF5 cube or one FITS file per exposure, plus the truth table
// of the movers and the common curve (all outputs appear together or not at all).
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "almagest/core/error.hpp"
#include "almagest/stack/stack_io.hpp"
#include "almagest/stack/synthetic.hpp"
#include "options.hpp"
#include "stack_command.hpp"
#include "stack_files.hpp"

namespace almagest::cli {

namespace fs = std::filesystem;

namespace {

constexpr double kPi = 3.14159265358979323846;

struct SimulateSettings {
  std::string output, format = "auto", truth, curve, seeing, wcs;
  int exposures = 0, width = 0, height = 0, holes = 0, movers = 1;
  std::uint64_t seed = 0;
  double baseline = 0, noise = 0, noise_variation = 0, snr = 8.0, speed = 0;
  double direction = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::string> mover_specs;
  bool no_bad_column = false, no_common_curve = false;
  RunOptions run;
  CLI::Option* movers_opt = nullptr;
};

std::vector<double> parse_numbers(const std::string& text, const char* option) {
  std::vector<double> v;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto comma = text.find(',', pos);
    const std::string f = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    std::size_t used = 0;
    double d = std::numeric_limits<double>::quiet_NaN();
    try {
      d = std::stod(f, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != f.size() || f.empty() || !std::isfinite(d))
      throw ConfigError(option, "'" + f + "' is not a finite number (in '" + text + "')");
    v.push_back(d);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return v;
}

/// 80-character FITS header cards of a gnomonic (TAN) WCS centred on the image.
std::string tan_wcs_cards(double ra, double dec, double arcsec_per_px, int width, int height) {
  auto num = [](const char* key, double v) { return fmt::format("{:<8}= {:>20.15G}", key, v); };
  auto str = [](const char* key, const char* v) { return fmt::format("{:<8}= '{:<8}'", key, v); };
  const double s = arcsec_per_px / 3600.0;
  std::string cards;
  for (const std::string& c : {str("CTYPE1", "RA---TAN"), str("CTYPE2", "DEC--TAN"), num("CRPIX1", 0.5 * (width + 1)),
                               num("CRPIX2", 0.5 * (height + 1)), num("CRVAL1", ra), num("CRVAL2", dec), num("CD1_1", -s),
                               num("CD1_2", 0.0), num("CD2_1", 0.0), num("CD2_2", s), str("CUNIT1", "deg"), str("CUNIT2", "deg"),
                               str("RADESYS", "ICRS")})
    cards += fmt::format("{:<80}", c);
  return cards;
}

std::string with_suffix(const std::string& output, const std::string& suffix) {
  fs::path p(output);
  if (p.filename().empty()) p = p.parent_path();  // "folder/"
  return (p.parent_path() / (p.stem().string() + suffix)).string();
}

int run_simulate(const SimulateSettings& s) {
  // Options (exit code 2).
  stack::SyntheticConfig cfg = stack::reference_workload();
  // Sizes bounded before anything is allocated (the engine's documented limits).
  if (s.exposures < 1 || s.exposures > stack::kMaxSyntheticExposures)
    throw ConfigError("--exposures", fmt::format("must be in 1..{}, got {}", stack::kMaxSyntheticExposures, s.exposures));
  if (s.width < 8 || s.height < 8) throw ConfigError(s.width < 8 ? "--width" : "--height", "images must be at least 8 x 8 pixels");
  if (s.width > stack::kMaxSyntheticSide || s.height > stack::kMaxSyntheticSide)
    throw ConfigError(s.width > stack::kMaxSyntheticSide ? "--width" : "--height",
                      fmt::format("images must be at most {} pixels on a side", stack::kMaxSyntheticSide));
  if (const std::uint64_t px = std::uint64_t(s.exposures) * std::uint64_t(s.width) * std::uint64_t(s.height);
      px > stack::kMaxSyntheticSamples)
    throw ConfigError("--exposures", fmt::format("{} exposures of {} x {} is {} pixels, more than the {} a synthetic stack may hold",
                                                 s.exposures, s.width, s.height, px, stack::kMaxSyntheticSamples));
  if (!(s.baseline > 0) || !std::isfinite(s.baseline)) throw ConfigError("--baseline", fmt::format("must be > 0 days, got {}", s.baseline));
  if (!(s.noise > 0) || !std::isfinite(s.noise)) throw ConfigError("--noise", fmt::format("must be > 0, got {}", s.noise));
  if (s.holes < 0 || s.holes > 100000) throw ConfigError("--holes", fmt::format("must be in 0..100000, got {}", s.holes));
  if (!(s.snr > 0) || !std::isfinite(s.snr)) throw ConfigError("--snr", fmt::format("must be > 0, got {}", s.snr));
  if (!(s.speed >= 0) || !std::isfinite(s.speed)) throw ConfigError("--speed", fmt::format("must be >= 0 pixels/day, got {}", s.speed));
  if (s.movers < 0 || s.movers > 100000) throw ConfigError("--movers", fmt::format("must be in 0..100000, got {}", s.movers));
  if (!(s.noise_variation >= 0 && s.noise_variation < 0.9))
    throw ConfigError("--noise-variation", fmt::format("must be in [0, 0.9), got {}", s.noise_variation));
  cfg.n_exp = s.exposures;
  cfg.width = s.width;
  cfg.height = s.height;
  cfg.seed = s.seed;
  cfg.baseline_days = s.baseline;
  cfg.noise_sigma = s.noise;
  cfg.noise_variation = s.noise_variation;
  cfg.holes = s.holes;
  cfg.bad_column = !s.no_bad_column;
  cfg.common_curve = !s.no_common_curve;
  if (!s.seeing.empty()) {
    const auto v = parse_numbers(s.seeing, "--seeing");
    if (v.size() != 2 || !(v[0] > 0) || v[1] < v[0] || v[1] > stack::kMaxPsfSigma)
      throw ConfigError("--seeing", fmt::format("expected MIN,MAX Gaussian PSF sigmas [pixels] with 0 < MIN <= MAX <= {}, got '{}'",
                                                stack::kMaxPsfSigma, s.seeing));
    cfg.seeing_min = v[0];
    cfg.seeing_max = v[1];
  }
  std::string wcs_header;
  if (!s.wcs.empty()) {
    const auto v = parse_numbers(s.wcs, "--wcs");
    if (v.size() != 3 || !(v[2] > 0) || std::fabs(v[1]) >= 90)
      throw ConfigError("--wcs", "expected RA,DEC,SCALE: centre [degrees, |Dec| < 90] and pixel scale [arcsec/pixel] > 0");
    wcs_header = tan_wcs_cards(v[0], v[1], v[2], s.width, s.height);
  }
  std::string format = s.format;
  std::string ext = fs::path(s.output).extension().string();
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (format == "auto") {
    if (ext == ".h5" || ext == ".hdf5") format = "hdf5";
    else if (ext == ".fits" || ext == ".fit") format = "workunit";
    else throw ConfigError("--output", s.output + ": cannot tell the format from the extension (use .fits, .h5, or --format files|workunit|hdf5)");
  } else if (format != "workunit" && format != "hdf5" && format != "files") {
    throw ConfigError("--format", "unknown format '" + format + "' (expected auto, workunit, hdf5 or files)");
  }
  // Explicit movers.
  std::vector<stack::Mover> movers;
  for (const auto& spec : s.mover_specs) {
    const auto v = parse_numbers(spec, "--mover");
    if (v.size() != 4 && v.size() != 5) throw ConfigError("--mover", "expected X0,Y0,VX,VY[,SNR], got '" + spec + "'");
    const double snr = v.size() == 5 ? v[4] : s.snr;
    if (!(snr > 0)) throw ConfigError("--mover", "SNR must be > 0 in '" + spec + "'");
    movers.push_back(stack::Mover{v[0], v[1], v[2], v[3], snr, 0.0});
  }
  const int random_movers = (s.movers_opt && s.movers_opt->count() > 0) || movers.empty() ? s.movers : 0;

  const std::string truth = s.truth.empty() ? with_suffix(s.output, "_truth.ecsv") : s.truth;
  const std::string curve = cfg.common_curve ? (s.curve.empty() ? with_suffix(s.output, "_curve.txt") : s.curve) : std::string();
  stackio::check_output_path(s.output, {}, format == "files");
  stackio::check_output_path(truth);
  if (!curve.empty()) stackio::check_output_path(curve);
  if (truth == s.output || curve == s.output || (!curve.empty() && curve == truth))
    throw ConfigError("--truth", "the stack, truth and curve outputs must be different files");

  // Random movers: placed so that the whole track (with the common curve) stays inside the image.
  // The observation times and the curve come first in the generator's seeded sequence, so a 1 x 1
  // probe with the same seed gives them cheaply (checked against the real stack below).
  stack::SyntheticConfig probe = cfg;
  probe.width = probe.height = 1;
  probe.holes = 0;
  probe.bad_column = false;
  probe.movers.clear();
  const stack::SyntheticStack times = stack::make_synthetic(probe);
  std::mt19937_64 rng(s.seed ^ 0x9E3779B97F4A7C15ull);
  std::uniform_real_distribution<double> U(0.0, 1.0);
  const double margin = 3.0;
  for (int k = 0; k < random_movers; ++k) {
    const double dir = std::isnan(s.direction) ? 360.0 * U(rng) : s.direction;
    const double vx = s.speed * std::cos(dir * kPi / 180.0), vy = s.speed * std::sin(dir * kPi / 180.0);
    double xlo = 1e300, xhi = -1e300, ylo = 1e300, yhi = -1e300;
    for (std::size_t e = 0; e < times.stack.size(); ++e) {
      const double t = times.stack.mjd[e] - times.reference_mjd;
      xlo = std::min(xlo, vx * t + times.curve_dx[e]);
      xhi = std::max(xhi, vx * t + times.curve_dx[e]);
      ylo = std::min(ylo, vy * t + times.curve_dy[e]);
      yhi = std::max(yhi, vy * t + times.curve_dy[e]);
    }
    const double x0lo = margin - xlo, x0hi = s.width - 1 - margin - xhi, y0lo = margin - ylo, y0hi = s.height - 1 - margin - yhi;
    if (x0hi < x0lo || y0hi < y0lo)
      throw ConfigError("--speed", fmt::format("a mover at {} pixels/day (direction {:.1f} deg) leaves the {} x {} image within the {}-day "
                                               "baseline; lower --speed or --baseline, or enlarge the image",
                                               s.speed, dir, s.width, s.height, s.baseline));
    movers.push_back(stack::Mover{x0lo + U(rng) * (x0hi - x0lo), y0lo + U(rng) * (y0hi - y0lo), vx, vy, s.snr, 0.0});
  }
  cfg.movers = movers;

  const stack::SyntheticStack syn = stack::make_synthetic(cfg);
  ALMAGEST_ASSERT(syn.stack.mjd == times.stack.mjd && syn.curve_dx == times.curve_dx,
                  "synthetic probe times differ from the generated stack's");
  if (interrupt_token().cancelled()) throw Cancelled();
  stack::ExposureStack st = syn.stack;
  st.wcs_header = wcs_header;
  st.origin.clear();

  nlohmann::json meta = {{"command", "stack simulate"}, {"version", version()}, {"seed", s.seed}, {"exposures", s.exposures},
                         {"width", s.width}, {"height", s.height}, {"baseline_days", s.baseline}, {"noise_sigma", s.noise},
                         {"noise_variation", s.noise_variation}, {"holes", s.holes}, {"bad_column", cfg.bad_column},
                         {"seeing", {cfg.seeing_min, cfg.seeing_max}}, {"common_curve", cfg.common_curve},
                         {"reference_mjd", syn.reference_mjd}, {"stack", s.output}, {"format", format},
                         {"curve_file", curve}, {"wcs", s.wcs}};
  std::vector<stackio::Output> outputs;
  if (format == "hdf5") outputs.push_back({s.output, [&](const std::string& t) { stack::write_stack_hdf5(t, st); }});
  else if (format == "workunit") outputs.push_back({s.output, [&](const std::string& t) { stack::write_workunit(t, st); }});
  else outputs.push_back({s.output, [&](const std::string& t) { stack::write_exposure_files(t, st); }, true});
  outputs.push_back({truth, [&](const std::string& t) { stackio::write_truth_ecsv(t, syn.movers, meta.dump()); }});
  if (!curve.empty())
    outputs.push_back({curve, [&](const std::string& t) { stackio::write_common_curve(t, syn.stack.mjd, syn.curve_dx, syn.curve_dy); }});
  stackio::commit_outputs(outputs);

  if (!s.run.quiet) {
    std::printf("wrote %s (%s: %d exposures of %d x %d, seed %llu%s)\n", s.output.c_str(), format.c_str(), s.exposures, s.width,
                s.height, static_cast<unsigned long long>(s.seed), wcs_header.empty() ? "" : ", TAN WCS");
    std::printf("wrote %s (%zu movers)%s%s\n", truth.c_str(), syn.movers.size(), curve.empty() ? "" : ", ", curve.c_str());
    for (std::size_t i = 0; i < syn.movers.size(); ++i) {
      const auto& m = syn.movers[i];
      std::printf("mover %zu: x0 %.3f, y0 %.3f, vx %.4f, vy %.4f px/d, SNR %.2f, flux %.4g\n", i, m.x0, m.y0, m.vx, m.vy, m.snr, m.flux);
    }
    std::fflush(stdout);
  }
  return kExitOk;
}

}  // namespace

Command add_stack_simulate_command(CLI::App& stack) {
  auto* app = stack.add_subcommand(
      "simulate", wrap_text("Write a synthetic stack (the reference workload's recipe: Gaussian noise with varying variance, masked holes, "
                            "a moving bad column, variable seeing, irregular times, a common quadratic-plus-periodic track) with "
                            "injected movers, as WorkUnit FITS, HDF5 cube or per-exposure FITS files, plus the movers' truth table "
                            "(ECSV) and the common curve (text, for --common-curve).", 80));
  auto s = std::make_shared<SimulateSettings>();
  const stack::SyntheticConfig ref = stack::reference_workload();
  s->exposures = ref.n_exp;
  s->width = ref.width;
  s->height = ref.height;
  s->seed = ref.seed;
  s->baseline = ref.baseline_days;
  s->noise = ref.noise_sigma;
  s->noise_variation = ref.noise_variation;
  s->holes = ref.holes;
  s->speed = std::hypot(ref.movers.at(0).vx, ref.movers.at(0).vy);
  s->snr = ref.movers.at(0).snr;
  app->add_option("-o,--output", s->output, wrap_text("Stack: .fits (KBMOD WorkUnit), .h5 (HDF5 cube), or a new folder with --format files. Required.", 62))
      ->required()->type_name("OUT")->group("Output");
  app->add_option("--format", s->format, "auto (by extension, default), workunit, hdf5 or files.")->type_name("FMT")->group("Output");
  app->add_option("--truth", s->truth, "Truth table of the movers (default <stem>_truth.ecsv).")->type_name("FILE")->group("Output");
  app->add_option("--curve", s->curve, "Common-curve file (default <stem>_curve.txt).")->type_name("FILE")->group("Output");
  app->add_option("--exposures", s->exposures, "Number of exposures.")->type_name("N")->capture_default_str()->group("Stack");
  app->add_option("--width", s->width, "Image width [pixels].")->type_name("W")->capture_default_str()->group("Stack");
  app->add_option("--height", s->height, "Image height [pixels].")->type_name("H")->capture_default_str()->group("Stack");
  app->add_option("--seed", s->seed, "Random seed (the output is a function of the options).")->type_name("S")->capture_default_str()->group("Stack");
  app->add_option("--baseline", s->baseline, "Observation times span [0, baseline] days, irregular.")->type_name("DAYS")->capture_default_str()->group("Stack");
  app->add_option("--noise", s->noise, "Typical per-pixel noise sigma.")->type_name("SIGMA")->capture_default_str()->group("Stack");
  app->add_option("--noise-variation", s->noise_variation, "Fractional variance variation, [0, 0.9).")->type_name("F")->capture_default_str()->group("Stack");
  app->add_option("--holes", s->holes, "Masked holes per exposure.")->type_name("N")->capture_default_str()->group("Stack");
  app->add_option("--seeing", s->seeing, "Gaussian PSF sigma range [pixels] (default 1.0,1.65).")->type_name("MIN,MAX")->group("Stack");
  app->add_flag("--no-bad-column", s->no_bad_column, "No moving bad column.")->group("Stack");
  app->add_flag("--no-common-curve", s->no_common_curve, "No common track (and no curve file).")->group("Stack");
  app->add_option("--wcs", s->wcs, wrap_text("Add a TAN WCS: centre RA,DEC [degrees] and pixel scale [arcsec/pixel].", 62))->type_name("RA,DEC,SCALE")->group("Stack");
  s->movers_opt = app->add_option("--movers", s->movers, wrap_text("Randomly placed movers (default 1, or 0 when --mover is given); tracks stay inside the image.", 62))
                      ->type_name("N")->group("Movers");
  app->add_option("--snr", s->snr, "Stack SNR of the random movers (and of --mover without SNR).")->type_name("SNR")->capture_default_str()->group("Movers");
  app->add_option("--speed", s->speed, "Speed of the random movers [pixels/day].")->type_name("V")->capture_default_str()->group("Movers");
  app->add_option("--direction", s->direction, "Direction of the random movers [degrees from +x towards +y] (default random).")->type_name("DEG")->group("Movers");
  app->add_option("--mover", s->mover_specs, wrap_text("An explicit mover: position at exposure 0 [pixels], velocity [pixels/day], SNR; repeatable.", 62))
      ->type_name("X0,Y0,VX,VY[,SNR]")->group("Movers");
  app->add_flag("-q,--quiet", s->run.quiet, "No summary; errors are still printed.")->group("Run");
  app->footer(exit_code_help() + "\nExample:\n  almagest-cli stack simulate --exposures 200 --width 128 --height 128 --snr 9 -o stack.fits\n");
  return Command{app, [s] { return run_simulate(*s); }};
}

}  // namespace almagest::cli
