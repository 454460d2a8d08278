// run_sht_job (sht/job.hpp): what `almagest-cli sht <op>` did, now the engine's: read the inputs
// (job_files.cpp), plan (ShtPlan: plan and execute paths unchanged), execute, write through one
// OutputSet with provenance; the dry-run report (plan_sht_job).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <numbers>
#include <optional>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/core/provenance.hpp"
#include "almagest/io/text_file.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/job.hpp"
#include "almagest/sht/spectra.hpp"
#include "job_files.hpp"

namespace almagest::sht {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Which stored columns (maps) or sets (alm) hold the components.
std::vector<int> pick(const ShtJob& s, int available, const std::string& path, const std::string& key,
                      const char* what) {
  const ShtLayout l = s.layout();
  std::vector<int> idx;
  if (!s.field.empty()) idx = s.field;
  else if (l == ShtLayout::Scalar) idx = {0};
  else if (l == ShtLayout::Spin2) idx = available >= 3 ? std::vector<int>{1, 2} : std::vector<int>{0, 1};
  else idx = {0, 1, 2};
  const int need = *std::max_element(idx.begin(), idx.end()) + 1;
  if (available < need) {
    const char* wants = l == ShtLayout::Pol     ? " (--pol needs T, Q, U / T, E, B)"
                        : l == ShtLayout::Spin2 ? " (--spin 2 needs Q, U / E, B)" : "";
    throw IoError(path, key, fmt::format("holds {} {}{}; {} {} needed{}", available, what, available == 1 ? "" : "s",
                                         s.field.empty() ? "at least" : "index", s.field.empty() ? need : need - 1,
                                         wants));
  }
  return idx;
}

/// The plans of a layout: t (spin 0) for Scalar and Pol, p (spin 2) for Spin2 and Pol.
struct Plans {
  std::optional<ShtPlan> t, p;
  const ShtPlan& any() const { return t ? *t : *p; }
};

Plans make_plans(ShtLayout layout, int nside, int lmax, const ResolvedBackend& backend, int threads,
                 const std::vector<std::int64_t>& observed) {
  ShtConfig c;
  c.nside = nside;
  c.lmax = lmax;
  c.use(backend);
  c.threads = threads;
  c.observed_pixels = observed;
  Plans p;
  if (layout != ShtLayout::Spin2) p.t.emplace(make_plan(c));
  if (layout != ShtLayout::Scalar) {
    c.spin = 2;
    p.p.emplace(make_plan(c));
  }
  return p;
}

/// lmax against NSIDE: a given lmax is a usage error, an alm file's band limit an input error.
void check_lmax(const ShtJob& s, int lmax, int nside, const std::string& lmax_source_file, const std::string& lmax_key) {
  const bool from_option = s.lmax >= 0 || lmax_source_file.empty();
  if (lmax > 4 * nside) {
    if (from_option)
      throw ConfigError(s.name("lmax"), fmt::format("must be in 0..4 NSIDE = {} for NSIDE {}, got {}", 4 * nside, nside, lmax));
    throw IoError(lmax_source_file, lmax_key,
                  fmt::format("the alm reach l = {}, above 4 NSIDE = {} for NSIDE {} (use --lmax to truncate)", lmax,
                              4 * nside, nside));
  }
  if (s.layout() != ShtLayout::Scalar && lmax < 2)
    throw ConfigError(s.name("lmax"), fmt::format("spin 2 needs lmax >= 2, got {}", lmax));
}

/// A map input reduced to the chosen components and the pixels the transform sees.
struct MapData {
  HealpixMap file;                          ///< as read (RING)
  std::vector<int> columns;                 ///< chosen columns of `file`
  std::vector<std::int64_t> observed;       ///< observed RING pixels; empty = full sky
  std::vector<std::vector<double>> values;  ///< per component, at `observed` (or all pixels)
  std::string observed_from;                ///< summary text
};

std::string nside_key(const std::string& path) {
  return files::input_format(path) == FileFormat::Hdf5 ? "/map nside" : "NSIDE";
}

MapData load_map(const ShtJob& s, const std::string& path, HealpixMap file, int want_nside,
                 const std::string& want_from, const std::vector<std::int64_t>* mask) {
  MapData d;
  d.file = std::move(file);
  const HealpixMap& m = d.file;
  if (m.nside != want_nside) throw IoError(path, nside_key(path), fmt::format("is {}, but {}", m.nside, want_from));
  const bool hdf5 = files::input_format(path) == FileFormat::Hdf5;
  d.columns = pick(s, static_cast<int>(m.columns.size()), path, hdf5 ? "/map" : "TFIELDS", "map column");
  const std::int64_t npix = npix_of(m.nside);
  // Candidate pixels: those stored, minus UNSEEN in any chosen column, within the mask.
  std::vector<std::int64_t> keep;
  std::vector<std::size_t> rows;
  std::size_t mi = 0;
  const std::size_t n = m.columns[0].size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t pix = m.partial() ? m.pixels[i] : static_cast<std::int64_t>(i);
    bool ok = true;
    for (int c : d.columns) ok = ok && m.columns[c][i] != kUnseen;
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
                  mask ? "no pixel is both observed (not UNSEEN) and inside --mask" : "no observed pixel (every value is UNSEEN)");
  if (static_cast<std::int64_t>(keep.size()) != npix) {
    d.observed = keep;
    d.observed_from = fmt::format("cut sky: {} of {} pixels observed ({}{}{})", keep.size(), npix,
                                  m.partial() ? "partial-sky file" : "UNSEEN pixels excluded", mask ? ", " : "",
                                  mask ? "--mask" : "");
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

template <class T>
std::pair<std::vector<T>, std::vector<T>> split2(const std::vector<T>& v) {
  const auto h = v.size() / 2;
  return {std::vector<T>(v.begin(), v.begin() + h), std::vector<T>(v.begin() + h, v.end())};
}

std::vector<std::string> map_names(ShtLayout l) {
  if (l == ShtLayout::Scalar) return {"TEMPERATURE"};
  if (l == ShtLayout::Spin2) return {"Q_POLARISATION", "U_POLARISATION"};
  return {"TEMPERATURE", "Q_POLARISATION", "U_POLARISATION"};
}

/// A map for output: `values` at `observed` (all pixels when empty); written full-sky with
/// UNSEEN blind pixels, or explicit-index with partial-out; NESTED with nest-out.
HealpixMap output_map(const ShtJob& s, int nside, const std::vector<std::int64_t>& observed,
                      std::vector<std::vector<double>> values, std::vector<std::string> names,
                      std::vector<std::string> units, const std::string& coordsys) {
  HealpixMap m;
  m.nside = nside;
  m.names = std::move(names);
  m.units = std::move(units);
  m.coordsys = coordsys;
  const auto npix = static_cast<std::size_t>(npix_of(nside));
  if (observed.empty() || !s.partial_out) {
    for (auto& v : values) {
      if (!observed.empty()) {
        std::vector<double> full(npix, kUnseen);
        for (std::size_t i = 0; i < observed.size(); ++i) full[observed[i]] = v[i];
        v = std::move(full);
      }
      m.columns.push_back(s.nest_out ? ring_to_nest(v, nside) : std::move(v));
    }
  } else {
    std::vector<std::int64_t> pix = observed;
    if (s.nest_out) {
      std::vector<std::size_t> order(pix.size());
      for (std::size_t i = 0; i < pix.size(); ++i) {
        pix[i] = ring2nest(nside, observed[i]);
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
  m.ordering = s.nest_out ? Ordering::Nested : Ordering::Ring;
  return m;
}

/// The spectra of a layout: labels and (i, j) component pairs in healpy's order.
void spectra_of(ShtLayout layout, const std::vector<std::vector<Complex>>& a, const std::vector<std::vector<Complex>>& b,
                int lmax, ShtOutcome& o) {
  auto add = [&](const char* name, std::size_t i, std::size_t j) {
    o.spectra.emplace_back(name);
    o.cl.push_back(alm2cl(a[i], b[j], lmax));
  };
  if (layout == ShtLayout::Scalar) {
    add("TT", 0, 0);
  } else if (layout == ShtLayout::Spin2) {
    add("EE", 0, 0); add("BB", 1, 1); add("EB", 0, 1);
  } else {
    add("TT", 0, 0); add("EE", 1, 1); add("BB", 2, 2); add("TE", 0, 1); add("EB", 1, 2); add("TB", 0, 2);
  }
}

/// Provenance keywords and the record shared by every output.
files::OutputMeta meta_of(const ShtJob& s, const ShtOutcome& o) {
  Provenance p = Provenance::current(o.backend);
  if (!o.device.empty() && o.device != "-") p.device = o.device;
  p.threads = o.threads;
  p.config_json = s.config_json();
  p.inputs = o.inputs;
  // Content hashes of the inputs (core/provenance.hpp's input_hashes where it exists).
  [&](auto& prov) {
    if constexpr (requires { prov.input_hashes; })
      for (std::size_t i = 0; i < o.inputs.size() && i < o.input_hashes.size(); ++i)
        prov.input_hashes[o.inputs[i]] = o.input_hashes[i];
  }(p);
  p.timings_s = {{"read", o.read_s}, {"transform", o.transform_s}};
  files::OutputMeta meta;
  meta.provenance = p.to_json();
  std::string date = p.created_utc;
  if (!date.empty() && date.back() == 'Z') date.pop_back();
  meta.keys = {{"ORIGIN", std::string("Almagest"), "software that wrote this file"},
               {"CREATOR", "almagest " + version(), "program and version"},
               {"DATE", date, "UTC time the file was written"},
               {"ALMCMD", std::string("sht ") + to_string(s.op), "almagest-cli command"},
               {"ALMINPUT", s.input, "input file"},
               {"ALMBACK", o.backend, "SHT backend"},
               {"ALMDEV", p.device.empty() ? std::string("-") : p.device, "device"},
               {"ALMTHR", static_cast<long long>(p.threads), "CPU threads (0 on the GPU)"},
               {"ALMSPIN", o.spins, "spins of the transforms"}};
  if (!s.mask.empty()) meta.keys.push_back({"ALMMASK", s.mask, "mask (observed pixels)"});
  if (!s.ring_weights.empty())
    meta.keys.push_back({"ALMRINGW", fs::path(s.ring_weights).filename().string(), "ring weight file of map2alm (healpy use_weights)"});
  if (!s.pixel_weights.empty())
    meta.keys.push_back({"ALMPIXW", fs::path(s.pixel_weights).filename().string(), "pixel weight file of map2alm (healpy use_pixel_weights)"});
  if (!s.cross.empty()) meta.keys.push_back({"ALMCROSS", s.cross, "second input (cross spectra)"});
  meta.keys.insert(meta.keys.end(), o.keys.begin(), o.keys.end());
  return meta;
}

}  // namespace

void write_sht_outcome(const ShtJob& job, ShtOutcome& o, const JobContext& ctx, const std::string& path) {
  const std::string out = path.empty() ? job.output : path;
  const FileFormat format =
      path.empty() ? job.out_format : files::output_format(out, job.format, job.op == ShtOp::Cl, job.name("format"));
  ctx.check_cancel();
  ctx.progress(0, 1, "writing " + o.what);
  const auto t0 = Clock::now();
  const files::OutputMeta meta = meta_of(job, o);
  // One output set: the writer joins it, and the commit honours a cancel until the rename.
  try {
    OutputSet outputs(job.input_paths(), ctx.token());
    {
      OutputSet::Scope scope(outputs);
      if (o.what == "map") files::write_map(out, format, *o.map, meta);
      else if (o.what == "alm") files::write_alm(out, format, o.alm, o.lmax, meta);
      else files::write_cl(out, format, o.spectra, o.cl, meta);
    }
    outputs.commit();
  } catch (const IoError& e) {
    // An error of a temporary (disk full, ...) is about the output: name it, so that every
    // front end sees file() == the output (the CLI's exit code 5).
    if (e.file() == out) throw;
    throw IoError(out, "", e.what());
  }
  o.write_s = seconds_since(t0);
  o.format = format;
  o.outputs = {out};
  o.timings_s["write"] = o.write_s;
}

ShtOutcome run_sht_job(const ShtJob& s, const JobContext& job_ctx, const jobs::RunOptions& options) {
  ShtOutcome o;
  o.engine = "sht";
  o.operation = to_string(s.op);
  o.inputs = s.input_paths();
  o.spins = spin_text(s.layout());
  o.format = s.out_format;
  if (options.dry_run) {
    o.plan = plan_sht_job(s);
    o.summary.push_back("dry run: nothing was transformed or written");
    return o;
  }
  JobContext ctx(job_ctx.token(), [&](double d, double t, std::string_view st) { job_ctx.progress(d, t, st); },
                 [&](LogLevel l, std::string_view m) { job_ctx.log(l, m); });
  ctx.threads = s.threads;
  const ShtLayout layout = s.layout();

  const auto t_read = Clock::now();
  ctx.progress(0, 1, "reading input");
  for (const auto& in : o.inputs) o.input_hashes.push_back(io::content_hash(in));
  const ResolvedBackend backend = resolve_backend(s.backend);
  if (!backend.note.empty()) ctx.info(backend.note);
  o.backend = to_string(backend.kind);
  o.threads = backend.cuda() ? 0 : resolve_threads(s.threads);
  auto plan_device = [&](const Plans& p) { o.device = p.any().device(); };

  if (s.op == ShtOp::Synth || (s.op == ShtOp::Cl && files::holds_alm(s.input))) {
    // ---- alm input ------------------------------------------------------------------------
    const int nsets = files::count_alm_sets(s.input);
    const bool hdf5 = files::input_format(s.input) == FileFormat::Hdf5;
    const auto which = pick(s, nsets, s.input, hdf5 ? "/alm" : "HDU", "alm set");
    int lmax = -1;
    auto sets = files::read_alm_sets(s.input, which, s.lmax, lmax);
    o.read_s = seconds_since(t_read);
    o.lmax = lmax;
    o.keys.push_back({"LMAX", static_cast<long long>(lmax), "band limit of the transforms"});
    if (s.op == ShtOp::Cl) {
      for (const auto& [key, file] : {std::pair{"mask", &s.mask}, {"ring-weights", &s.ring_weights},
                                      {"pixel-weights", &s.pixel_weights}})
        if (!file->empty()) throw ConfigError(s.name(key), "applies to map inputs; " + s.input + " holds alm");
      std::vector<std::vector<Complex>> sets2 = sets;
      if (!s.cross.empty()) {
        const int n2 = files::count_alm_sets(s.cross);
        const bool h2 = files::input_format(s.cross) == FileFormat::Hdf5;
        int l2 = -1;
        sets2 = files::read_alm_sets(s.cross, pick(s, n2, s.cross, h2 ? "/alm" : "HDU", "alm set"), lmax, l2);
      }
      o.backend = "none";
      o.device = "-";
      o.threads = 0;
      o.what = "spectra";
      const auto t0 = Clock::now();
      spectra_of(layout, sets, sets2, lmax, o);
      o.transform_s = seconds_since(t0);
      o.summary.push_back(fmt::format("spectra {} of alm, lmax {}", fmt::join(o.spectra, ","), lmax));
    } else {
      std::vector<std::int64_t> observed;
      if (!s.mask.empty()) {
        observed = files::read_mask(s.mask, s.nside);
        if (static_cast<std::int64_t>(observed.size()) == npix_of(s.nside)) observed.clear();
      }
      check_lmax(s, lmax, s.nside, s.input, hdf5 ? "/alm lmax" : "INDEX");
      Plans plans = make_plans(layout, s.nside, lmax, backend, s.threads, observed);
      plan_device(plans);
      const std::size_t msize = plans.any().map_size();
      std::vector<std::vector<double>> maps;
      const auto t0 = Clock::now();
      if (plans.t) {
        std::vector<double> m(msize);
        plans.t->synthesis(sets[0], m, ctx);
        maps.push_back(std::move(m));
      }
      if (plans.p) {
        const std::size_t e = layout == ShtLayout::Pol ? 1 : 0;
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
      o.nside = s.nside;
      if (!observed.empty()) o.keys.push_back({"NOBS", static_cast<long long>(observed.size()), "observed pixels"});
      if (layout != ShtLayout::Scalar) o.keys.push_back({"POLCCONV", std::string("COSMO"), "polarisation convention (healpy)"});
      o.map = output_map(s, s.nside, observed, std::move(maps), map_names(layout), {}, "");
      o.summary.push_back(fmt::format("map NSIDE {}, {}, {} column(s), lmax {}{}", s.nside, s.nest_out ? "NESTED" : "RING",
                                      o.map->columns.size(), lmax,
                                      observed.empty() ? "" : fmt::format(", {} observed pixels", observed.size())));
    }
  } else {
    // ---- map input --------------------------------------------------------------------------
    HealpixMap input = files::read_map(s.input);
    const int nside = input.nside;
    if (s.nside > 0 && s.nside != nside)
      throw IoError(s.input, nside_key(s.input), fmt::format("is {}, but --nside {} was given", nside, s.nside));
    if (s.nest_out && (nside & (nside - 1)) != 0)
      throw ConfigError(s.name("nest-out"), "NESTED ordering needs a power-of-two NSIDE, got " + std::to_string(nside));
    std::optional<std::vector<std::int64_t>> mask;
    if (!s.mask.empty()) mask = files::read_mask(s.mask, nside);
    MapData d = load_map(s, s.input, std::move(input), nside, "", mask ? &*mask : nullptr);
    std::vector<double> ring_weights;  // empty: healpy use_weights=False
    if (!s.ring_weights.empty()) ring_weights = read_ring_weights(s.ring_weights, nside);
    std::vector<double> pixel_weights;  // non-empty: healpy use_pixel_weights=True, no iterations
    if (!s.pixel_weights.empty()) pixel_weights = read_pixel_weights(s.pixel_weights, nside);
    const int iter = pixel_weights.empty() ? s.iter : 0;
    const HealpixMap& probe = d.file;
    std::optional<MapData> d2;
    if (!s.cross.empty())
      d2 = load_map(s, s.cross, files::read_map(s.cross), nside, fmt::format("{} has NSIDE {}", s.input, nside),
                    mask ? &*mask : nullptr);
    const int lmax = s.lmax >= 0 ? s.lmax : 3 * nside - 1;
    check_lmax(s, lmax, nside, "", "");
    o.read_s = seconds_since(t_read);
    o.nside = nside;
    o.lmax = lmax;
    o.keys.push_back({"LMAX", static_cast<long long>(lmax), "band limit of the transforms"});
    if (!d.observed.empty()) o.keys.push_back({"NOBS", static_cast<long long>(d.observed.size()), "observed pixels"});
    if (!d.observed_from.empty()) o.summary.push_back(d.observed_from);
    if (d2 && d2->observed != d.observed)
      throw IoError(s.cross, d2->file.names.empty() ? "" : d2->file.names[d2->columns[0]],
                    "observes other pixels than " + s.input + " (UNSEEN pixels differ); cross spectra need one pixel set");
    Plans plans = make_plans(layout, nside, lmax, backend, s.threads, d.observed);
    plan_device(plans);
    const std::size_t nalm = plans.any().nalm();

    // map -> alm through one of the three analyses, component by component.
    std::vector<InverseReport> reports;
    auto analyse = [&](const MapData& md, ShtOp how) {
      std::vector<std::vector<Complex>> alm;
      auto run = [&](const ShtPlan& plan, const std::vector<double>& m, int nc) {
        std::vector<Complex> a(nc * nalm);
        if (how == ShtOp::Adjoint) {
          plan.adjoint(m, a, ctx);
        } else if (how == ShtOp::Inverse) {
          try {
            reports.push_back(plan.inverse(m, a, {s.epsilon, s.max_iter}, ctx));
          } catch (const NotConverged& e) {
            throw NotConverged(fmt::format("sht inverse: CGLS did not reach {} {:g} in {} iterations (normal-equation "
                                           "residual {:.3e}); no output was written (raise {}, loosen {} or lower {})",
                                           s.name("epsilon"), s.epsilon, e.iterations(), e.residual(),
                                           s.name("max-iter"), s.name("epsilon"), s.name("lmax")),
                               e.iterations(), e.residual());
          }
        } else {
          map2alm_weighted(plan, m, a, iter, ring_weights, pixel_weights, ctx);
        }
        return a;
      };
      if (plans.t) alm.push_back(run(*plans.t, md.values[0], 1));
      if (plans.p) {
        const std::size_t q = layout == ShtLayout::Pol ? 1 : 0;
        auto [e, b] = split2(run(*plans.p, concat(md.values[q], md.values[q + 1]), 2));
        alm.push_back(std::move(e));
        alm.push_back(std::move(b));
      }
      return alm;
    };

    const auto t0 = Clock::now();
    if (s.op == ShtOp::Adjoint || s.op == ShtOp::Inverse || s.op == ShtOp::Map2alm) {
      o.alm = analyse(d, s.op);
      o.transform_s = seconds_since(t0);
      o.what = "alm";
      if (s.op == ShtOp::Map2alm) o.keys.push_back({"ITER", static_cast<long long>(iter), "map2alm iterations (healpy iter)"});
      if (s.op == ShtOp::Inverse) {
        InverseReport w;
        for (const auto& r : reports) {
          w.iterations = std::max(w.iterations, r.iterations);
          w.residual = std::max(w.residual, r.residual);
          w.normal_residual = std::max(w.normal_residual, r.normal_residual);
        }
        o.inverse = w;
        o.keys.push_back({"CGEPS", s.epsilon, "CGLS tolerance (normal equations)"});
        o.keys.push_back({"CGITER", static_cast<long long>(w.iterations), "CGLS iterations done"});
        o.keys.push_back({"CGRESID", w.residual, "||Y a - m|| / ||m||"});
        o.keys.push_back({"CGNRESID", w.normal_residual, "||Y^T (Y a - m)|| / ||Y^T m||"});
        o.summary.push_back(fmt::format("CGLS: {} iterations, map residual {:.3e}, normal-equation residual {:.3e}",
                                        w.iterations, w.residual, w.normal_residual));
      }
      if (!probe.coordsys.empty()) o.keys.push_back({"COORDSYS", probe.coordsys, "coordinates of the input map"});
      o.summary.push_back(fmt::format("alm lmax {} (mmax {}), {} set(s) from NSIDE {}", lmax, lmax, o.alm.size(), nside));
    } else if (s.op == ShtOp::Cl) {
      auto a = analyse(d, ShtOp::Map2alm);
      auto b = d2 ? analyse(*d2, ShtOp::Map2alm) : a;
      spectra_of(layout, a, b, lmax, o);
      o.transform_s = seconds_since(t0);
      o.what = "spectra";
      o.keys.push_back({"ITER", static_cast<long long>(iter), "map2alm iterations (healpy iter)"});
      o.summary.push_back(fmt::format("spectra {} (l = 0..{}) from NSIDE {}{}", fmt::join(o.spectra, ","), lmax, nside,
                                      d2 ? ", cross with " + s.cross : ""));
    } else {  // smooth
      const double fwhm_rad = s.fwhm_arcmin * std::numbers::pi / (180.0 * 60.0);
      std::vector<std::vector<double>> out;
      if (plans.t) {
        std::vector<double> m(d.values[0].size());
        smooth_map(*plans.t, d.values[0], m, fwhm_rad, iter, ctx, ring_weights, pixel_weights);
        out.push_back(std::move(m));
      }
      if (plans.p) {
        const std::size_t q = layout == ShtLayout::Pol ? 1 : 0;
        const auto in = concat(d.values[q], d.values[q + 1]);
        std::vector<double> qu(in.size());
        smooth_map(*plans.p, in, qu, fwhm_rad, iter, ctx, ring_weights, pixel_weights);
        auto [qq, uu] = split2(qu);
        out.push_back(std::move(qq));
        out.push_back(std::move(uu));
      }
      o.transform_s = seconds_since(t0);
      o.what = "map";
      o.keys.push_back({"ITER", static_cast<long long>(iter), "map2alm iterations (healpy iter)"});
      o.keys.push_back({"FWHM", s.fwhm_arcmin / 60.0, "[deg] Gaussian beam FWHM"});
      if (layout != ShtLayout::Scalar) o.keys.push_back({"POLCCONV", std::string("COSMO"), "polarisation convention (healpy)"});
      std::vector<std::string> names, units;
      for (std::size_t k = 0; k < d.columns.size(); ++k) {
        const auto c = static_cast<std::size_t>(d.columns[k]);
        names.push_back(c < probe.names.size() ? probe.names[c] : map_names(layout)[k]);
        units.push_back(c < probe.units.size() ? probe.units[c] : "");
      }
      o.map = output_map(s, nside, d.observed, std::move(out), names, units, probe.coordsys);
      o.summary.push_back(fmt::format("map NSIDE {}, {}, {} column(s), smoothed with FWHM {} arcmin at lmax {}", nside,
                                      s.nest_out ? "NESTED" : "RING", o.map->columns.size(), s.fwhm_arcmin, lmax));
    }
  }
  o.timings_s = {{"read", o.read_s}, {"transform", o.transform_s}};
  if (options.write) write_sht_outcome(s, o, ctx);
  return o;
}

}  // namespace almagest::sht
