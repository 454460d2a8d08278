// `almagest-cli sht synth|adjoint|inverse|map2alm|cl|smooth`: HEALPix spherical harmonic
// transforms in healpy's conventions (alm in healpy's triangular layout, RING maps, lmax default
// 3 NSIDE - 1; spin 0, spin 2 with --spin 2, (T, Q, U) with --pol). Files are read and written
// through the engine's HEALPix I/O (sht_files.hpp); every output is written atomically and
// carries provenance. Errors follow the CLI's exit-code table plus kExitNotConverged (6).
#include "sht_command.hpp"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <numbers>
#include <optional>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/core/provenance.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/config.hpp"
#include "almagest/sht/healpix_io.hpp"
#include "almagest/sht/plan.hpp"
#include "almagest/sht/spectra.hpp"
#include "options.hpp"
#include "progress_bar.hpp"
#include "sht_files.hpp"

namespace almagest::cli {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using sht::Complex;

namespace {

enum class Op { Synth, Adjoint, Inverse, Map2alm, Cl, Smooth };
const char* op_name(Op op) {
  switch (op) {
    case Op::Synth: return "synth";
    case Op::Adjoint: return "adjoint";
    case Op::Inverse: return "inverse";
    case Op::Map2alm: return "map2alm";
    case Op::Cl: return "cl";
    default: return "smooth";
  }
}

/// Components: T (spin 0), (Q, U) <-> (E, B) (spin 2) or T, Q, U <-> T, E, B (both plans).
enum class Layout { Scalar, Spin2, Pol };
int ncomp(Layout l) { return l == Layout::Pol ? 3 : l == Layout::Spin2 ? 2 : 1; }
const char* spin_text(Layout l) { return l == Layout::Pol ? "0,2" : l == Layout::Spin2 ? "2" : "0"; }

struct Settings {
  Op op = Op::Synth;
  std::string input, output, mask, cross, ring_weights, pixel_weights, format = "auto", backend = "cpu";
  int nside = 0, lmax = -1, spin = 0, threads = 0, iter = 3, max_iter = 1000;
  bool pol = false, nest_out = false, partial_out = false;
  double epsilon = 1e-10, fwhm_arcmin = -1.0;
  std::vector<int> field;
  RunOptions run;
  CLI::Option *nside_opt = nullptr, *lmax_opt = nullptr, *field_opt = nullptr, *iter_opt = nullptr;

  Layout layout() const { return pol ? Layout::Pol : spin == 2 ? Layout::Spin2 : Layout::Scalar; }
  bool nside_given() const { return nside_opt && nside_opt->count() > 0; }
  bool lmax_given() const { return lmax_opt && lmax_opt->count() > 0; }
  bool field_given() const { return field_opt && field_opt->count() > 0; }
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// Every file the command reads (none may be its output).
std::vector<std::string> input_paths(const Settings& s) {
  return {s.input, s.mask, s.cross, s.ring_weights, s.pixel_weights};
}

void check_output_path(const Settings& s) {
  try {
    check_output_target(s.output, input_paths(s));
  } catch (const IoError& e) {
    throw CliFailure(kExitOutputIo, e.what());
  }
}

/// Option values that do not depend on the input files (exit code 2 when wrong).
void validate_settings(const Settings& s) {
  if (s.spin != 0 && s.spin != 2)
    throw ConfigError("--spin", "must be 0 or 2, got " + std::to_string(s.spin));
  if (s.pol && s.spin == 2)
    throw ConfigError("--pol", "cannot be combined with --spin 2 (--pol transforms T with spin 0 "
                               "and (Q, U) with spin 2)");
  if (s.nside_given() && (s.nside < 1 || s.nside > 8192))
    throw ConfigError("--nside", "must be in 1..8192, got " + std::to_string(s.nside));
  if (s.lmax_given() && s.lmax < 0)
    throw ConfigError("--lmax", "must be >= 0, got " + std::to_string(s.lmax));
  if (s.threads < 0) throw ConfigError("--threads", "must be >= 0 (0 = all), got " + std::to_string(s.threads));
  if (s.iter < 0) throw ConfigError("--iter", "must be >= 0, got " + std::to_string(s.iter));
  if (!s.pixel_weights.empty()) {
    if (!s.ring_weights.empty())
      throw ConfigError("--pixel-weights", "cannot be combined with --ring-weights");
    if (s.iter_opt && s.iter_opt->count() > 0 && s.iter != 0)
      throw ConfigError("--iter", "must be 0 with --pixel-weights (healpy ignores iter with "
                                  "use_pixel_weights; HEALPix refuses the combination)");
  }
  if (!(s.epsilon > 0.0) || !std::isfinite(s.epsilon))
    throw ConfigError("--epsilon", fmt::format("must be > 0, got {}", s.epsilon));
  if (s.max_iter < 1) throw ConfigError("--max-iter", "must be >= 1, got " + std::to_string(s.max_iter));
  if (s.op == Op::Smooth && (!(s.fwhm_arcmin >= 0.0) || !std::isfinite(s.fwhm_arcmin)))
    throw ConfigError("--fwhm-arcmin", fmt::format("must be >= 0 arcmin, got {}", s.fwhm_arcmin));
  if (s.backend != "cpu" && s.backend != "cuda" && s.backend != "auto")
    throw ConfigError("--backend", "unknown backend '" + s.backend + "' (expected cpu, cuda or auto)");
  if (s.field_given()) {
    if (static_cast<int>(s.field.size()) != ncomp(s.layout()))
      throw ConfigError("--field", fmt::format("needs {} index(es) for spin {}, got {}",
                                               ncomp(s.layout()), spin_text(s.layout()), s.field.size()));
    for (int f : s.field)
      if (f < 0) throw ConfigError("--field", "indices are 0-based and must be >= 0");
  }
  shtio::output_format(s.output, s.format, s.op == Op::Cl);
}

sht::Backend resolve_backend(const std::string& b) {
  if (b == "auto") return gpu_status().available ? sht::Backend::Cuda : sht::Backend::Cpu;
  return sht::backend_from_string(b);
}

/// Which stored columns (maps) or sets (alm) hold the components.
std::vector<int> pick(const Settings& s, int available, const std::string& path, const std::string& key,
                      const char* what) {
  const Layout l = s.layout();
  std::vector<int> idx;
  if (s.field_given()) {
    idx = s.field;
  } else if (l == Layout::Scalar) {
    idx = {0};
  } else if (l == Layout::Spin2) {
    idx = available >= 3 ? std::vector<int>{1, 2} : std::vector<int>{0, 1};
  } else {
    idx = {0, 1, 2};
  }
  const int need = *std::max_element(idx.begin(), idx.end()) + 1;
  if (available < need) {
    const char* wants = l == Layout::Pol ? " (--pol needs T, Q, U / T, E, B)"
                        : l == Layout::Spin2 ? " (--spin 2 needs Q, U / E, B)" : "";
    throw IoError(path, key, fmt::format("holds {} {}{}; {} {} needed{}", available, what,
                                         available == 1 ? "" : "s", s.field_given() ? "index" : "at least",
                                         s.field_given() ? need - 1 : need, wants));
  }
  return idx;
}

/// The plans of a layout: t (spin 0) for Scalar and Pol, p (spin 2) for Spin2 and Pol.
struct Plans {
  std::optional<sht::ShtPlan> t, p;
  const sht::ShtPlan& any() const { return t ? *t : *p; }
};

Plans make_plans(Layout layout, int nside, int lmax, sht::Backend backend, int threads,
                 const std::vector<std::int64_t>& observed) {
  sht::ShtConfig c;
  c.nside = nside;
  c.lmax = lmax;
  c.backend = backend;
  c.threads = threads;
  c.observed_pixels = observed;
  Plans p;
  if (layout != Layout::Spin2) p.t.emplace(sht::make_plan(c));
  if (layout != Layout::Scalar) {
    c.spin = 2;
    p.p.emplace(sht::make_plan(c));
  }
  return p;
}

/// lmax checks against NSIDE: --lmax is a usage error, an alm file's band limit an input error.
void check_lmax(const Settings& s, int lmax, int nside, const std::string& lmax_source_file,
                const std::string& lmax_key) {
  const bool from_option = s.lmax_given() || lmax_source_file.empty();
  if (lmax > 4 * nside) {
    if (from_option)
      throw ConfigError("--lmax", fmt::format("must be in 0..4 NSIDE = {} for NSIDE {}, got {}",
                                              4 * nside, nside, lmax));
    throw IoError(lmax_source_file, lmax_key,
                  fmt::format("the alm reach l = {}, above 4 NSIDE = {} for NSIDE {} (use --lmax "
                              "to truncate)", lmax, 4 * nside, nside));
  }
  if (s.layout() != Layout::Scalar && lmax < 2)
    throw ConfigError("--lmax", fmt::format("spin 2 needs lmax >= 2, got {}", lmax));
}

/// A map input reduced to the chosen components and the pixels the transform sees.
struct MapData {
  sht::HealpixMap file;                 ///< as read (RING)
  std::vector<int> columns;             ///< chosen columns of `file`
  std::vector<std::int64_t> observed;   ///< observed RING pixels; empty = full sky
  std::vector<std::vector<double>> values;  ///< per component, at `observed` (or all pixels)
  std::string observed_from;            ///< summary text
};

std::string nside_key(const std::string& path) {
  return shtio::input_format(path) == shtio::Format::Hdf5 ? "/map nside" : "NSIDE";
}

/// `file` is the map read from `path`; its NSIDE must be `want_nside` (`want_from` says whose).
MapData load_map(const Settings& s, const std::string& path, sht::HealpixMap file, int want_nside,
                 const std::string& want_from, const std::vector<std::int64_t>* mask) {
  MapData d;
  d.file = std::move(file);
  const sht::HealpixMap& m = d.file;
  if (m.nside != want_nside)
    throw IoError(path, nside_key(path), fmt::format("is {}, but {}", m.nside, want_from));
  const bool hdf5 = shtio::input_format(path) == shtio::Format::Hdf5;
  d.columns = pick(s, static_cast<int>(m.columns.size()), path, hdf5 ? "/map" : "TFIELDS", "map column");
  const std::int64_t npix = sht::npix_of(m.nside);
  // Candidate pixels: those stored, minus UNSEEN in any chosen column, within the mask.
  std::vector<std::int64_t> keep;
  std::vector<std::size_t> rows;
  std::size_t mi = 0;
  const std::size_t n = m.columns[0].size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t pix = m.partial() ? m.pixels[i] : static_cast<std::int64_t>(i);
    bool ok = true;
    for (int c : d.columns) ok = ok && m.columns[c][i] != sht::kUnseen;
    if (ok && mask) {
      while (mi < mask->size() && (*mask)[mi] < pix) ++mi;
      ok = mi < mask->size() && (*mask)[mi] == pix;
    }
    if (ok) {
      keep.push_back(pix);
      rows.push_back(i);
    }
  }
  if (keep.empty())
    throw IoError(path, m.names.empty() ? "" : m.names[d.columns[0]],
                  mask ? "no pixel is both observed (not UNSEEN) and inside --mask"
                       : "no observed pixel (every value is UNSEEN)");
  const bool full = static_cast<std::int64_t>(keep.size()) == npix;
  if (!full) {
    d.observed = keep;
    d.observed_from = fmt::format("cut sky: {} of {} pixels observed ({}{}{})", keep.size(), npix,
                                  m.partial() ? "partial-sky file" : "UNSEEN pixels excluded",
                                  mask ? ", " : "", mask ? "--mask" : "");
  }
  for (int c : d.columns) {
    std::vector<double> v(keep.size());
    for (std::size_t k = 0; k < rows.size(); ++k) v[k] = m.columns[c][rows[k]];
    d.values.push_back(std::move(v));
  }
  return d;
}

std::vector<double> concat(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> out(a);
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

/// Splits [2][n] data into two vectors.
template <class T>
std::pair<std::vector<T>, std::vector<T>> split2(const std::vector<T>& v) {
  const auto h = v.size() / 2;
  return {std::vector<T>(v.begin(), v.begin() + h), std::vector<T>(v.begin() + h, v.end())};
}

/// healpy's standard column names of the components.
std::vector<std::string> map_names(Layout l) {
  if (l == Layout::Scalar) return {"TEMPERATURE"};
  if (l == Layout::Spin2) return {"Q_POLARISATION", "U_POLARISATION"};
  return {"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
}

/// A map for output: `values` at `observed` (all pixels when empty); written full-sky with
/// UNSEEN blind pixels, or explicit-index with --partial-out; NESTED with --nest-out.
sht::HealpixMap output_map(const Settings& s, int nside, const std::vector<std::int64_t>& observed,
                           std::vector<std::vector<double>> values, std::vector<std::string> names,
                           std::vector<std::string> units, const std::string& coordsys) {
  sht::HealpixMap m;
  m.nside = nside;
  m.names = std::move(names);
  m.units = std::move(units);
  m.coordsys = coordsys;
  const auto npix = static_cast<std::size_t>(sht::npix_of(nside));
  if (observed.empty() || !s.partial_out) {
    for (auto& v : values) {
      if (!observed.empty()) {
        std::vector<double> full(npix, sht::kUnseen);
        for (std::size_t i = 0; i < observed.size(); ++i) full[observed[i]] = v[i];
        v = std::move(full);
      }
      m.columns.push_back(s.nest_out ? sht::ring_to_nest(v, nside) : std::move(v));
    }
  } else {
    std::vector<std::int64_t> pix = observed;
    if (s.nest_out) {
      std::vector<std::size_t> order(pix.size());
      for (std::size_t i = 0; i < pix.size(); ++i) {
        pix[i] = sht::ring2nest(nside, observed[i]);
        order[i] = i;
      }
      std::sort(order.begin(), order.end(), [&](auto a, auto b) { return pix[a] < pix[b]; });
      std::vector<std::int64_t> sorted(pix.size());
      for (std::size_t i = 0; i < pix.size(); ++i) sorted[i] = pix[order[i]];
      for (auto& v : values) {
        std::vector<double> nv(v.size());
        for (std::size_t i = 0; i < v.size(); ++i) nv[i] = v[order[i]];
        v = std::move(nv);
      }
      pix = std::move(sorted);
    }
    m.pixels = std::move(pix);
    m.columns = std::move(values);
  }
  m.ordering = s.nest_out ? sht::Ordering::Nested : sht::Ordering::Ring;
  return m;
}

/// Result of one command, for the provenance and the summary.
struct Outcome {
  std::string what;                        ///< "map", "alm", "spectra"
  std::vector<std::string> summary;        ///< extra summary lines
  std::vector<shtio::Key> keys;            ///< command-specific keywords
  nlohmann::json config;                   ///< command-specific settings
  std::string backend = "-", device = "-";
  double read_s = 0, transform_s = 0, write_s = 0;
};

int do_command(const Settings& s) {
  validate_settings(s);
  check_output_path(s);
  const Layout layout = s.layout();
  if (s.nest_out && s.nside_given() && (s.nside & (s.nside - 1)) != 0)
    throw ConfigError("--nest-out", "NESTED ordering needs a power-of-two NSIDE, got " + std::to_string(s.nside));

  ProgressBar bar(!s.run.quiet && ProgressBar::stderr_is_tty());
  JobContext ctx(interrupt_token(), bar.sink(), bar.log_sink(s.run.verbose, s.run.quiet));
  ctx.threads = s.threads;
  const shtio::Format out_format = shtio::output_format(s.output, s.format, s.op == Op::Cl);
  Outcome o;
  o.config = {{"command", std::string("sht ") + op_name(s.op)}, {"input", s.input}, {"spin", spin_text(layout)},
              {"pol", s.pol}, {"backend_requested", s.backend}, {"threads", s.threads}};
  if (!s.mask.empty()) o.config["mask"] = s.mask;
  if (!s.ring_weights.empty()) o.config["ring_weights"] = s.ring_weights;
  if (!s.pixel_weights.empty()) o.config["pixel_weights"] = s.pixel_weights;

  // Writers shared by every command, with the provenance record.
  auto meta_of = [&](const Plans* plans) {
    Provenance p = Provenance::current(o.backend);
    if (plans) {
      p.device = plans->any().device();
      o.device = p.device;
    }
    p.threads = o.backend == "cpu" ? resolve_threads(s.threads) : 0;
    p.config_json = o.config.dump();
    p.inputs = {s.input};
    if (!s.mask.empty()) p.inputs.push_back(s.mask);
    if (!s.ring_weights.empty()) p.inputs.push_back(s.ring_weights);
    if (!s.pixel_weights.empty()) p.inputs.push_back(s.pixel_weights);
    if (!s.cross.empty()) p.inputs.push_back(s.cross);
    p.timings_s = {{"read", o.read_s}, {"transform", o.transform_s}};
    shtio::OutputMeta meta;
    meta.provenance = p.to_json();
    std::string date = p.created_utc;
    if (!date.empty() && date.back() == 'Z') date.pop_back();
    meta.keys = {{"ORIGIN", std::string("Almagest"), "software that wrote this file"},
                 {"CREATOR", "almagest-cli " + version(), "program and version"},
                 {"DATE", date, "UTC time the file was written"},
                 {"ALMCMD", std::string("sht ") + op_name(s.op), "almagest-cli command"},
                 {"ALMINPUT", s.input, "input file"},
                 {"ALMBACK", o.backend, "SHT backend"},
                 {"ALMDEV", p.device.empty() ? std::string("-") : p.device, "device"},
                 {"ALMTHR", static_cast<long long>(p.threads), "CPU threads (0 on the GPU)"},
                 {"ALMSPIN", std::string(spin_text(layout)), "spins of the transforms"}};
    if (!s.mask.empty()) meta.keys.push_back({"ALMMASK", s.mask, "mask (observed pixels)"});
    if (!s.ring_weights.empty())
      meta.keys.push_back({"ALMRINGW", fs::path(s.ring_weights).filename().string(),
                           "ring weight file of map2alm (healpy use_weights)"});
    if (!s.pixel_weights.empty())
      meta.keys.push_back({"ALMPIXW", fs::path(s.pixel_weights).filename().string(),
                           "pixel weight file of map2alm (healpy use_pixel_weights)"});
    if (!s.cross.empty()) meta.keys.push_back({"ALMCROSS", s.cross, "second input (cross spectra)"});
    meta.keys.insert(meta.keys.end(), o.keys.begin(), o.keys.end());
    return meta;
  };
  auto write_guarded = [&](auto&& write) {
    ctx.check_cancel();
    ctx.progress(0, 1, "writing " + o.what);
    auto t0 = Clock::now();
    try {
      // One output set: the write joins it, and the commit honours a cancel until the rename.
      OutputSet outputs(input_paths(s), ctx.token());
      {
        OutputSet::Scope scope(outputs);
        write();
      }
      outputs.commit();
    } catch (const IoError& e) {
      throw CliFailure(kExitOutputIo, e.what());
    }
    o.write_s = seconds_since(t0);
    bar.finish();
  };

  auto t_read = Clock::now();
  ctx.progress(0, 1, "reading input");
  const sht::Backend backend = resolve_backend(s.backend);
  o.backend = sht::to_string(backend);

  if (s.op == Op::Synth || (s.op == Op::Cl && shtio::holds_alm(s.input))) {
    // ---- alm input ----------------------------------------------------------------------------
    const int nsets = shtio::count_alm_sets(s.input);
    const bool hdf5 = shtio::input_format(s.input) == shtio::Format::Hdf5;
    const auto which = pick(s, nsets, s.input, hdf5 ? "/alm" : "HDU", "alm set");
    int lmax = -1;
    auto sets = shtio::read_alm_sets(s.input, which, s.lmax_given() ? s.lmax : -1, lmax);
    o.read_s = seconds_since(t_read);
    o.config["lmax"] = lmax;
    o.keys.push_back({"LMAX", static_cast<long long>(lmax), "band limit of the transforms"});
    if (s.op == Op::Cl) {
      if (!s.mask.empty()) throw ConfigError("--mask", "applies to map inputs; " + s.input + " holds alm");
      if (!s.ring_weights.empty())
        throw ConfigError("--ring-weights", "applies to map inputs; " + s.input + " holds alm");
      if (!s.pixel_weights.empty())
        throw ConfigError("--pixel-weights", "applies to map inputs; " + s.input + " holds alm");
      std::vector<std::vector<Complex>> sets2 = sets;
      if (!s.cross.empty()) {
        const int n2 = shtio::count_alm_sets(s.cross);
        const bool h2 = shtio::input_format(s.cross) == shtio::Format::Hdf5;
        int l2 = -1;
        sets2 = shtio::read_alm_sets(s.cross, pick(s, n2, s.cross, h2 ? "/alm" : "HDU", "alm set"), lmax, l2);
      }
      o.backend = "none";
      o.what = "spectra";
      auto t0 = Clock::now();
      std::vector<std::string> labels;
      std::vector<std::vector<double>> cl;
      auto add = [&](const char* name, std::size_t i, std::size_t j) {
        labels.emplace_back(name);
        cl.push_back(sht::alm2cl(sets[i], sets2[j], lmax));
      };
      if (layout == Layout::Scalar) add("TT", 0, 0);
      else if (layout == Layout::Spin2) { add("EE", 0, 0); add("BB", 1, 1); add("EB", 0, 1); }
      else { add("TT", 0, 0); add("EE", 1, 1); add("BB", 2, 2); add("TE", 0, 1); add("EB", 1, 2); add("TB", 0, 2); }
      o.transform_s = seconds_since(t0);
      const auto meta = meta_of(nullptr);
      write_guarded([&] { shtio::write_cl(s.output, out_format, labels, cl, meta); });
      o.summary.push_back(fmt::format("spectra {} of alm, lmax {}", fmt::join(labels, ","), lmax));
    } else {
      if (!s.nside_given()) throw ConfigError("--nside", "is required for sht synth");
      std::vector<std::int64_t> observed;
      if (!s.mask.empty()) {
        observed = shtio::read_mask(s.mask, s.nside);
        if (static_cast<std::int64_t>(observed.size()) == sht::npix_of(s.nside)) observed.clear();
      }
      check_lmax(s, lmax, s.nside, s.input, hdf5 ? "/alm lmax" : "INDEX");
      Plans plans = make_plans(layout, s.nside, lmax, backend, s.threads, observed);
      const std::size_t msize = plans.any().map_size();
      std::vector<std::vector<double>> maps;
      auto t0 = Clock::now();
      if (plans.t) {
        std::vector<double> m(msize);
        plans.t->synthesis(sets[0], m, ctx);
        maps.push_back(std::move(m));
      }
      if (plans.p) {
        const std::size_t e = layout == Layout::Pol ? 1 : 0;
        std::vector<Complex> eb(sets[e]);
        eb.insert(eb.end(), sets[e + 1].begin(), sets[e + 1].end());
        std::vector<double> qu(2 * msize);
        plans.p->synthesis(eb, qu, ctx);
        auto [q, u] = split2(qu);
        maps.push_back(std::move(q));
        maps.push_back(std::move(u));
      }
      o.transform_s = seconds_since(t0);
      o.what = "map";
      o.config["nside"] = s.nside;
      if (!observed.empty()) o.keys.push_back({"NOBS", static_cast<long long>(observed.size()), "observed pixels"});
      if (layout != Layout::Scalar) o.keys.push_back({"POLCCONV", std::string("COSMO"), "polarisation convention (healpy)"});
      auto map = output_map(s, s.nside, observed, std::move(maps), map_names(layout), {}, "");
      const auto meta = meta_of(&plans);
      write_guarded([&] { shtio::write_map(s.output, out_format, map, meta); });
      o.summary.push_back(fmt::format("map NSIDE {}, {}, {} column(s), lmax {}{}", s.nside,
                                      s.nest_out ? "NESTED" : "RING", map.columns.size(), lmax,
                                      observed.empty() ? "" : fmt::format(", {} observed pixels", observed.size())));
    }
  } else {
    // ---- map input ----------------------------------------------------------------------------
    sht::HealpixMap input = shtio::read_map(s.input);
    const int nside = input.nside;
    if (s.nside_given() && s.nside != nside)
      throw IoError(s.input, nside_key(s.input),
                    fmt::format("is {}, but --nside {} was given", nside, s.nside));
    if (s.nest_out && (nside & (nside - 1)) != 0)
      throw ConfigError("--nest-out", "NESTED ordering needs a power-of-two NSIDE, got " + std::to_string(nside));
    std::optional<std::vector<std::int64_t>> mask;
    if (!s.mask.empty()) mask = shtio::read_mask(s.mask, nside);
    MapData d = load_map(s, s.input, std::move(input), nside, "", mask ? &*mask : nullptr);
    std::vector<double> ring_weights;  // empty: healpy use_weights=False
    if (!s.ring_weights.empty()) ring_weights = sht::read_ring_weights(s.ring_weights, nside);
    std::vector<double> pixel_weights;  // non-empty: healpy use_pixel_weights=True, no iterations
    if (!s.pixel_weights.empty()) pixel_weights = sht::read_pixel_weights(s.pixel_weights, nside);
    const int iter = pixel_weights.empty() ? s.iter : 0;
    const sht::HealpixMap& probe = d.file;
    std::optional<MapData> d2;
    if (!s.cross.empty())
      d2 = load_map(s, s.cross, shtio::read_map(s.cross), nside,
                    fmt::format("{} has NSIDE {}", s.input, nside), mask ? &*mask : nullptr);
    const int lmax = s.lmax_given() ? s.lmax : 3 * nside - 1;
    check_lmax(s, lmax, nside, "", "");
    o.read_s = seconds_since(t_read);
    o.config["nside"] = nside;
    o.config["lmax"] = lmax;
    o.keys.push_back({"LMAX", static_cast<long long>(lmax), "band limit of the transforms"});
    if (!d.observed.empty()) o.keys.push_back({"NOBS", static_cast<long long>(d.observed.size()), "observed pixels"});
    if (!d.observed_from.empty()) o.summary.push_back(d.observed_from);
    if (d2 && d2->observed != d.observed)
      throw IoError(s.cross, d2->file.names.empty() ? "" : d2->file.names[d2->columns[0]],
                    "observes other pixels than " + s.input + " (UNSEEN pixels differ); cross spectra need one pixel set");
    Plans plans = make_plans(layout, nside, lmax, backend, s.threads, d.observed);
    const std::size_t nalm = plans.any().nalm();

    // map -> alm through one of the three analyses, component by component.
    auto analyse = [&](const MapData& md, Op how, std::vector<sht::InverseReport>* reports) {
      std::vector<std::vector<Complex>> alm;
      auto run = [&](const sht::ShtPlan& plan, const std::vector<double>& m, int nc) {
        std::vector<Complex> a(nc * nalm);
        if (how == Op::Adjoint) {
          plan.adjoint(m, a, ctx);
        } else if (how == Op::Inverse) {
          try {
            reports->push_back(plan.inverse(m, a, {s.epsilon, s.max_iter}, ctx));
          } catch (const NotConverged& e) {
            throw CliFailure(kExitNotConverged,
                             fmt::format("sht inverse: CGLS did not reach --epsilon {:g} in {} "
                                         "iterations (normal-equation residual {:.3e}); no output "
                                         "was written (raise --max-iter, loosen --epsilon or "
                                         "lower --lmax)",
                                         s.epsilon, e.iterations(), e.residual()));
          }
        } else {
          sht::map2alm_weighted(plan, m, a, iter, ring_weights, pixel_weights, ctx);
        }
        return a;
      };
      if (plans.t) alm.push_back(run(*plans.t, md.values[0], 1));
      if (plans.p) {
        const std::size_t q = layout == Layout::Pol ? 1 : 0;
        auto [e, b] = split2(run(*plans.p, concat(md.values[q], md.values[q + 1]), 2));
        alm.push_back(std::move(e));
        alm.push_back(std::move(b));
      }
      return alm;
    };

    auto t0 = Clock::now();
    if (s.op == Op::Adjoint || s.op == Op::Inverse || s.op == Op::Map2alm) {
      std::vector<sht::InverseReport> reports;
      auto alm = analyse(d, s.op, &reports);
      o.transform_s = seconds_since(t0);
      o.what = "alm";
      if (s.op == Op::Map2alm) {
        o.config["iter"] = iter;
        o.keys.push_back({"ITER", static_cast<long long>(iter), "map2alm iterations (healpy iter)"});
      }
      if (s.op == Op::Inverse) {
        int its = 0;
        double res = 0, nres = 0;
        for (const auto& r : reports) {
          its = std::max(its, r.iterations);
          res = std::max(res, r.residual);
          nres = std::max(nres, r.normal_residual);
        }
        o.config["epsilon"] = s.epsilon;
        o.config["max_iter"] = s.max_iter;
        o.config["iterations"] = its;
        o.config["residual"] = res;
        o.config["normal_residual"] = nres;
        o.keys.push_back({"CGEPS", s.epsilon, "CGLS tolerance (normal equations)"});
        o.keys.push_back({"CGITER", static_cast<long long>(its), "CGLS iterations done"});
        o.keys.push_back({"CGRESID", res, "||Y a - m|| / ||m||"});
        o.keys.push_back({"CGNRESID", nres, "||Y^T (Y a - m)|| / ||Y^T m||"});
        o.summary.push_back(fmt::format("CGLS: {} iterations, map residual {:.3e}, normal-equation residual {:.3e}",
                                        its, res, nres));
      }
      if (!probe.coordsys.empty()) o.keys.push_back({"COORDSYS", probe.coordsys, "coordinates of the input map"});
      const auto meta = meta_of(&plans);
      write_guarded([&] {
        std::vector<std::vector<Complex>> sets(alm.begin(), alm.end());
        shtio::write_alm(s.output, out_format, sets, lmax, meta);
      });
      o.summary.push_back(fmt::format("alm lmax {} (mmax {}), {} set(s) from NSIDE {}", lmax, lmax, alm.size(), nside));
    } else if (s.op == Op::Cl) {
      auto a = analyse(d, Op::Map2alm, nullptr);
      auto b = d2 ? analyse(*d2, Op::Map2alm, nullptr) : a;
      std::vector<std::string> labels;
      std::vector<std::vector<double>> cl;
      auto add = [&](const char* name, std::size_t i, std::size_t j) {
        labels.emplace_back(name);
        cl.push_back(sht::alm2cl(a[i], b[j], lmax));
      };
      if (layout == Layout::Scalar) add("TT", 0, 0);
      else if (layout == Layout::Spin2) { add("EE", 0, 0); add("BB", 1, 1); add("EB", 0, 1); }
      else { add("TT", 0, 0); add("EE", 1, 1); add("BB", 2, 2); add("TE", 0, 1); add("EB", 1, 2); add("TB", 0, 2); }
      o.transform_s = seconds_since(t0);
      o.what = "spectra";
      o.config["iter"] = iter;
      o.keys.push_back({"ITER", static_cast<long long>(iter), "map2alm iterations (healpy iter)"});
      const auto meta = meta_of(&plans);
      write_guarded([&] { shtio::write_cl(s.output, out_format, labels, cl, meta); });
      o.summary.push_back(fmt::format("spectra {} (l = 0..{}) from NSIDE {}{}", fmt::join(labels, ","), lmax, nside,
                                      d2 ? ", cross with " + s.cross : ""));
    } else {  // smooth
      const double fwhm_rad = s.fwhm_arcmin * std::numbers::pi / (180.0 * 60.0);
      std::vector<std::vector<double>> out;
      if (plans.t) {
        std::vector<double> m(d.values[0].size());
        sht::smooth_map(*plans.t, d.values[0], m, fwhm_rad, iter, ctx, ring_weights, pixel_weights);
        out.push_back(std::move(m));
      }
      if (plans.p) {
        const std::size_t q = layout == Layout::Pol ? 1 : 0;
        const auto in = concat(d.values[q], d.values[q + 1]);
        std::vector<double> qu(in.size());
        sht::smooth_map(*plans.p, in, qu, fwhm_rad, iter, ctx, ring_weights, pixel_weights);
        auto [qq, uu] = split2(qu);
        out.push_back(std::move(qq));
        out.push_back(std::move(uu));
      }
      o.transform_s = seconds_since(t0);
      o.what = "map";
      o.config["iter"] = iter;
      o.config["fwhm_arcmin"] = s.fwhm_arcmin;
      o.keys.push_back({"ITER", static_cast<long long>(iter), "map2alm iterations (healpy iter)"});
      o.keys.push_back({"FWHM", s.fwhm_arcmin / 60.0, "[deg] Gaussian beam FWHM"});
      if (layout != Layout::Scalar) o.keys.push_back({"POLCCONV", std::string("COSMO"), "polarisation convention (healpy)"});
      std::vector<std::string> names, units;
      for (std::size_t k = 0; k < d.columns.size(); ++k) {
        const auto c = static_cast<std::size_t>(d.columns[k]);
        names.push_back(c < probe.names.size() ? probe.names[c] : map_names(layout)[k]);
        units.push_back(c < probe.units.size() ? probe.units[c] : "");
      }
      auto map = output_map(s, nside, d.observed, std::move(out), names, units, probe.coordsys);
      const auto meta = meta_of(&plans);
      write_guarded([&] { shtio::write_map(s.output, out_format, map, meta); });
      o.summary.push_back(fmt::format("map NSIDE {}, {}, {} column(s), smoothed with FWHM {} arcmin at lmax {}",
                                      nside, s.nest_out ? "NESTED" : "RING", map.columns.size(),
                                      s.fwhm_arcmin, lmax));
    }
  }

  if (!s.run.quiet) {
    std::printf("wrote %s (%s %s)\n", s.output.c_str(), shtio::to_string(out_format), o.what.c_str());
    for (const auto& line : o.summary) std::printf("  %s\n", line.c_str());
    std::printf("  backend %s (%s), %d thread(s); read %.3f s, transform %.3f s, write %.3f s\n",
                o.backend.c_str(), o.device.c_str(), o.backend == "cpu" ? resolve_threads(s.threads) : 0,
                o.read_s, o.transform_s, o.write_s);
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

void add_options(CLI::App& app, Settings& s) {
  const Op op = s.op;
  const bool map_in = op != Op::Synth;
  const bool map_out = op == Op::Synth || op == Op::Smooth;
  app.add_option("INPUT", s.input,
                 wrap_text(op == Op::Synth ? "alm file: FITS (healpy write_alm: INDEX, REAL, IMAG; one HDU per set) or HDF5 (/alm)."
                           : op == Op::Cl  ? "HEALPix map (FITS or HDF5), or an alm file (spectra of the alm)."
                                           : "HEALPix map: FITS (healpy write_map; RING or NESTED, full or partial sky) or HDF5 (/map).",
                           62))
      ->required();
  app.add_option("-o,--output", s.output,
                 wrap_text(std::string("Output file, written atomically; format by extension (.h5/.hdf5: HDF5") +
                               (op == Op::Cl ? ", .txt/.dat/.csv: text" : "") + ", else FITS) unless --format.", 62))
      ->required();
  s.nside_opt = app.add_option("--nside", s.nside,
                               map_in ? "Expected NSIDE of the input map (checked; default: the file's)."
                                      : "NSIDE of the output map, 1..8192. Required.");
  s.nside_opt->type_name("N");
  if (op == Op::Synth) s.nside_opt->required();
  s.lmax_opt = app.add_option("--lmax", s.lmax,
                              wrap_text(map_in ? "Band limit, 0..4 NSIDE; default 3 NSIDE - 1. mmax = lmax (healpy layout)."
                                               : "Band limit; default the alm file's. Larger l are dropped, missing ones are zero. 0..4 NSIDE; mmax = lmax.", 62));
  s.lmax_opt->type_name("L");
  app.add_option("--spin", s.spin, "0 (T) or 2 ((Q, U) maps <-> (E, B) alm). Default 0.")->type_name("0|2");
  app.add_flag("--pol", s.pol,
               wrap_text("(T, Q, U) maps <-> (T, E, B) alm: T with spin 0, (Q, U) with spin 2 (healpy pol=True).", 62));
  s.field_opt = app.add_option("--field", s.field,
                               wrap_text(std::string("0-based ") + (op == Op::Synth ? "alm sets (HDUs)" : "map columns") +
                                             " to use, one per component; default: 0 (spin 0), 0,1,2 (--pol), "
                                             "1,2 of three or 0,1 of two (--spin 2).", 62))
                    ->delimiter(',');
  s.field_opt->type_name("I[,J,K]");
  app.add_option("--mask", s.mask,
                 wrap_text(map_in ? "Cut sky: only these pixels are used. A HEALPix map (observed where the first column is non-zero and not UNSEEN) or a text file of RING pixel indices. UNSEEN input pixels are always excluded."
                                  : "Synthesise only these pixels (a HEALPix map, observed where non-zero and not UNSEEN, or a text file of RING pixel indices); the rest are UNSEEN.", 62))
      ->type_name("FILE");
  if (op == Op::Map2alm || op == Op::Cl || op == Op::Smooth) {
    s.iter_opt = app.add_option("--iter", s.iter,
                                wrap_text("healpy map2alm iterations (Jacobi steps), >= 0; default 3 (0 with --pixel-weights).", 62));
    s.iter_opt->type_name("N");
    app.add_option("--ring-weights", s.ring_weights,
                   wrap_text("HEALPix ring weight file (weight_ring_nNNNNN.fits of the HEALPix / healpy data) for map inputs: map2alm weighs each ring by it (healpy use_weights=True). Default: none.", 62))
        ->type_name("FILE");
    app.add_option("--pixel-weights", s.pixel_weights,
                   wrap_text("HEALPix full pixel weight file (full_weights/healpix_full_weights_nside_NNNN.fits of the healpy data) for map inputs: map2alm weighs each pixel by it, without iterations (healpy use_pixel_weights=True). Default: none.", 62))
        ->type_name("FILE");
  }
  if (op == Op::Inverse) {
    app.add_option("--epsilon", s.epsilon,
                   wrap_text("CGLS tolerance: stop when ||Y^T (Y a - m)|| / ||Y^T m|| < epsilon; default 1e-10.", 62))
        ->type_name("EPS");
    app.add_option("--max-iter", s.max_iter,
                   wrap_text("CGLS iterations before giving up with exit code 6 (no output); default 1000.", 62))
        ->type_name("N");
  }
  if (op == Op::Smooth)
    app.add_option("--fwhm-arcmin", s.fwhm_arcmin, "Gaussian beam FWHM in arcmin, >= 0 (healpy smoothing). Required.")
        ->type_name("ARCMIN")
        ->required();
  if (op == Op::Cl)
    app.add_option("--cross", s.cross,
                   wrap_text("Second map or alm file: cross spectra (TE = T of INPUT x E of this file, as healpy anafast(map1, map2)).", 62))
        ->type_name("FILE");
  if (map_out) {
    app.add_flag("--nest-out", s.nest_out, "Write the map in NESTED order (power-of-two NSIDE).");
    app.add_flag("--partial-out", s.partial_out,
                 wrap_text("With a cut sky, write only the observed pixels (explicit-index file) instead of a full-sky map with UNSEEN.", 62));
  }
  app.add_option("--format", s.format,
                 op == Op::Cl ? "auto|fits|hdf5|text; default auto (by extension)." : "auto|fits|hdf5; default auto (by extension).")
      ->type_name("FMT");
  app.add_option("--backend", s.backend,
                 wrap_text("cpu (healpix_cxx; default), cuda (exit code 4 without a usable GPU) or auto (the GPU when available).", 62))
      ->type_name("cpu|cuda|auto");
  app.add_option("--threads", s.threads, "CPU worker threads, 0 = all (default).")->type_name("N");
  app.add_flag("-q,--quiet", s.run.quiet, "No progress bar and no summary; errors are still printed.");
  app.add_flag("-v,--verbose", s.run.verbose, "Also print the engine's log messages.");
}

}  // namespace

Command add_sht_command(CLI::App& parent) {
  auto* sht = parent.add_subcommand(
      "sht", wrap_text("Spherical harmonic transforms of HEALPix maps in healpy's conventions: synth "
                       "(alm -> map), adjoint (map -> Y^T map), inverse (least-squares map -> alm), "
                       "map2alm (healpy iterative), cl (power spectra), smooth (Gaussian beam).", 80));
  sht->require_subcommand(1);
  sht->footer(sht_exit_codes() + "\nRun `almagest-cli sht <operation> --help` for its options.\n");
  struct Entry {
    Op op;
    const char* help;
    const char* example;
  };
  const Entry entries[] = {
      {Op::Synth, "Synthesis: alm -> map (healpy alm2map, alm2map_spin, pol=True).",
       "almagest-cli sht synth alm.fits --nside 256 -o map.fits"},
      {Op::Adjoint, "Exact adjoint Y^T: map -> alm without quadrature weights (= healpy map2alm(iter=0, use_weights=False) * Npix / 4pi).",
       "almagest-cli sht adjoint map.fits --lmax 500 -o alm.fits"},
      {Op::Inverse, "Least-squares inverse min ||Y a - m|| by CGLS: map -> alm; exit code 6 if not converged.",
       "almagest-cli sht inverse map.fits --lmax 383 --epsilon 1e-10 -o alm.fits"},
      {Op::Map2alm, "healpy map2alm(iter): alm = Y^T W m, then --iter Jacobi steps (--ring-weights, --pixel-weights: healpy's weights).",
       "almagest-cli sht map2alm cmb.fits --pol --iter 3 -o alm.fits"},
      {Op::Cl, "Angular power spectra (healpy anafast / alm2cl): TT; EE, BB, EB (--spin 2); TT, EE, BB, TE, EB, TB (--pol).",
       "almagest-cli sht cl cmb.fits --pol -o cl.fits"},
      {Op::Smooth, "Gaussian-beam smoothing (healpy smoothing): map2alm(iter), times the beam, synthesis.",
       "almagest-cli sht smooth map.fits --fwhm-arcmin 30 -o smoothed.fits"},
  };
  std::vector<std::pair<CLI::App*, std::shared_ptr<Settings>>> subs;
  for (const auto& e : entries) {
    auto* app = sht->add_subcommand(op_name(e.op), wrap_text(e.help, 80));
    auto s = std::make_shared<Settings>();
    s->op = e.op;
    add_options(*app, *s);
    app->footer(sht_exit_codes() + "\nExample:\n  " + e.example + "\n");
    subs.emplace_back(app, s);
  }
  return Command{sht, [subs]() {
                   for (const auto& [app, s] : subs)
                     if (app->parsed()) return do_command(*s);
                   throw ConfigError("sht", "no operation given (synth, adjoint, inverse, map2alm, cl, smooth)");
                 }};
}

}  // namespace almagest::cli
