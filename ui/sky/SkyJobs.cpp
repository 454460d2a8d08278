#include "sky/SkyJobs.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <sstream>

#include <fitsio.h>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/core/backend.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/npcf/synthetic.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/healpix_io.hpp"
#include "almagest/sht/plan.hpp"
#include "almagest/sht/spectra.hpp"
#include "jobs/JobRunner.hpp"

namespace almagest::ui::sky {

namespace {

/// Upper nside of the window (the SHT engine's limit).
constexpr int kMaxNside = 8192;

/// Column value ranges (one pass over each column, off the GUI thread) and the image lookup.
void buildLookup(SkyMapData& m, int w, int h, const JobContext& ctx) {
  m.ranges.clear();
  for (const auto& col : m.columns) {
    ctx.check_cancel();
    m.ranges.push_back(valueRange(col));
  }
  m.imageWidth = w;
  m.imageHeight = h;
  m.lookup = mollweideLookup(m.nside, w, h, ctx);
}

}  // namespace

SkyMapData loadSkyMap(const std::string& path, int column, int imageWidth, int imageHeight,
                      const JobContext& ctx) {
  if (path.empty()) throw IoError(path, "", "no file name given");
  ctx.progress(0, 1, "reading " + path);
  // Read in the file's ordering so the window can say whether it was NESTED.
  sht::HealpixMap hm = sht::read_healpix_map(path, /*to_ring=*/false);
  ctx.check_cancel();
  if (hm.nside < 1 || hm.nside > kMaxNside)
    throw IoError(path, "NSIDE",
                  "nside " + std::to_string(hm.nside) + " is outside 1.." + std::to_string(kMaxNside));
  if (hm.columns.empty()) throw IoError(path, "", "the table has no map column");
  if (column < 0 || column >= static_cast<int>(hm.columns.size()))
    throw ConfigError("column", path + " has " + std::to_string(hm.columns.size()) +
                                    " column(s); column " + std::to_string(column) +
                                    " does not exist");
  SkyMapData m;
  m.source = path;
  m.nside = hm.nside;
  m.coordsys = hm.coordsys;
  m.wasPartial = hm.partial();
  m.wasNested = hm.ordering == sht::Ordering::Nested;
  if (m.wasPartial) hm = sht::to_full_sky(hm);
  ctx.progress(0.3, 1, "converting to RING");
  if (m.wasNested)
    for (auto& col : hm.columns) {
      ctx.check_cancel();
      col = sht::nest_to_ring(col, hm.nside);
    }
  for (std::size_t c = 0; c < hm.columns.size(); ++c)
    if (static_cast<std::int64_t>(hm.columns[c].size()) != m.npix())
      throw IoError(path, c < hm.names.size() ? hm.names[c] : "column " + std::to_string(c + 1),
                    "has " + std::to_string(hm.columns[c].size()) + " values, expected " +
                        std::to_string(m.npix()));
  m.names = hm.names;
  m.units = hm.units;
  m.names.resize(hm.columns.size());
  m.units.resize(hm.columns.size());
  for (std::size_t c = 0; c < m.names.size(); ++c)
    if (m.names[c].empty()) m.names[c] = "column " + std::to_string(c + 1);
  m.columns = std::move(hm.columns);
  const JobContext sub = JobRunner::stageContext(ctx, 0.4, 1.0);
  buildLookup(m, imageWidth, imageHeight, sub);
  return m;
}

std::vector<double> demoCl(int lmax) {
  std::vector<double> cl(static_cast<std::size_t>(std::max(lmax, 0) + 1), 0.0);
  for (int l = 2; l <= lmax; ++l) cl[static_cast<std::size_t>(l)] = 2.0 * std::numbers::pi / (l * (l + 1.0));
  return cl;
}

SkyMapData synthesiseSkyMap(int nside, const std::vector<double>& cl, std::uint64_t seed,
                            int imageWidth, int imageHeight, const JobContext& ctx) {
  if (nside < 1 || nside > kMaxNside)
    throw ConfigError("nside", "must be in 1.." + std::to_string(kMaxNside) + ", got " +
                                   std::to_string(nside));
  if (cl.empty()) throw ConfigError("cl", "needs at least one multipole");
  const int lmax = static_cast<int>(cl.size()) - 1;
  if (lmax > 4 * nside)
    throw ConfigError("lmax", "must be <= 4 nside = " + std::to_string(4 * nside) + ", got " +
                                  std::to_string(lmax));
  for (double c : cl)
    if (!(c >= 0.0) || !std::isfinite(c)) throw ConfigError("cl", "C_l must be finite and >= 0");

  ctx.progress(0, 1, "drawing Gaussian alm");
  std::vector<sht::Complex> alm(sht::alm_size(lmax));
  npcf::synthetic::Rng rng(seed);
  for (int m = 0; m <= lmax; ++m) {
    for (int l = m; l <= lmax; ++l) {
      const double c = cl[static_cast<std::size_t>(l)];
      sht::Complex a;
      if (m == 0) {
        a = sht::Complex(std::sqrt(c) * rng.normal(), 0.0);
      } else {
        const double s = std::sqrt(c / 2.0);
        const double re = rng.normal();
        const double im = rng.normal();
        a = sht::Complex(s * re, s * im);
      }
      alm[sht::alm_index(lmax, l, m)] = a;
    }
    if (m % 64 == 0) ctx.check_cancel();
  }

  sht::ShtConfig cfg;
  cfg.nside = nside;
  cfg.lmax = lmax;
  cfg.backend = sht::Backend::Cpu;
  const sht::ShtPlan plan = sht::make_plan(cfg);
  SkyMapData m;
  m.nside = nside;
  m.columns.assign(1, std::vector<double>(static_cast<std::size_t>(m.npix())));
  ctx.progress(0.1, 1, "alm synthesis");
  const JobContext synth = JobRunner::stageContext(ctx, 0.1, 0.6);
  plan.synthesis(alm, m.columns[0], synth);
  ctx.check_cancel();
  m.names = {"TEMPERATURE"};
  m.units = {""};
  m.inputCl = cl;
  m.seed = seed;
  std::ostringstream src;
  src << "Gaussian random map (nside " << nside << ", lmax " << lmax << ", seed " << seed << ")";
  m.source = src.str();
  const JobContext sub = JobRunner::stageContext(ctx, 0.6, 1.0);
  buildLookup(m, imageWidth, imageHeight, sub);
  return m;
}

std::vector<double> readClFile(const std::string& path) {
  if (path.empty()) throw IoError(path, "", "no file name given");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw IoError(path, "", "is not a readable file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "", "cannot be opened");
  char head[9] = {};
  in.read(head, 9);
  std::vector<double> cl;
  if (in.gcount() == 9 && std::string(head, 9) == "SIMPLE  =") {
    // A FITS spectra table: the first BINTABLE's first column, row i = multipole i.
    fitsfile* f = nullptr;
    int status = 0;
    auto fail = [&](const std::string& field, const std::string& what) {
      int ignore = 0;
      if (f) fits_close_file(f, &ignore);
      char msg[FLEN_STATUS] = {};
      if (status) fits_get_errstatus(status, msg);
      throw IoError(path, field, what + (status ? std::string(" (") + msg + ")" : std::string()));
    };
    if (fits_open_diskfile(&f, path.c_str(), READONLY, &status)) fail("", "is not a FITS file cfitsio can read");
    int type = 0;
    if (fits_movabs_hdu(f, 2, &type, &status) || type != BINARY_TBL) fail("HDU 2", "is not a binary table of spectra");
    long rows = 0;
    int cols = 0;
    if (fits_get_num_rows(f, &rows, &status) || fits_get_num_cols(f, &cols, &status)) fail("NAXIS2", "unreadable");
    if (rows < 1 || cols < 1) fail("NAXIS2", "the table has no rows");
    if (rows > 4L * kMaxNside + 1) fail("NAXIS2", std::to_string(rows) + " multipoles, more than 4 x 8192 + 1");
    cl.assign(std::size_t(rows), 0.0);
    int anynul = 0;
    if (fits_read_col(f, TDOUBLE, 1, 1, 1, rows, nullptr, cl.data(), &anynul, &status)) fail("column 1", "unreadable");
    fits_close_file(f, &status);
    for (std::size_t l = 0; l < cl.size(); ++l)
      if (!std::isfinite(cl[l]) || cl[l] < 0)
        throw IoError(path, "column 1", "C_l of l = " + std::to_string(l) + " is negative or not finite");
    return cl;
  }
  in.clear();
  in.seekg(0);
  std::string line;
  std::size_t lineno = 0;
  std::vector<char> given;
  while (std::getline(in, line)) {
    ++lineno;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    std::istringstream ls(line);
    std::string tl, tc;
    if (!(ls >> tl)) continue;  // blank or comment
    const std::string where = "line " + std::to_string(lineno);
    if (!(ls >> tc)) throw IoError(path, where, "needs two columns, l and C_l");
    std::size_t used = 0;
    long long l = -1;
    double c = 0;
    try {
      l = std::stoll(tl, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != tl.size() || l < 0) throw IoError(path, where, "'" + tl + "' is not a multipole l >= 0");
    if (l > 4LL * kMaxNside) throw IoError(path, where, "l = " + tl + " is above 4 x 8192");
    try {
      c = std::stod(tc, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != tc.size()) throw IoError(path, where, "'" + tc + "' is not a number");
    if (!std::isfinite(c) || c < 0) throw IoError(path, where, "C_l = " + tc + " is negative or not finite");
    if (std::size_t(l) >= cl.size()) {
      cl.resize(std::size_t(l) + 1, 0.0);
      given.resize(std::size_t(l) + 1, 0);
    }
    if (given[std::size_t(l)]) throw IoError(path, where, "l = " + tl + " is given twice");
    given[std::size_t(l)] = 1;
    cl[std::size_t(l)] = c;
  }
  if (cl.empty()) throw IoError(path, "", "holds no rows \"l C_l\"");
  return cl;
}

void writeSkyMap(const std::string& path, const SkyMapData& map, const JobContext& ctx) {
  sht::HealpixMap hm;
  hm.nside = map.nside;
  hm.ordering = sht::Ordering::Ring;
  hm.names = map.names;
  hm.units = map.units;
  hm.columns = map.columns;
  hm.coordsys = map.coordsys;
  std::vector<std::string> inputs;
  if (!map.source.empty() && std::filesystem::exists(map.source)) inputs.push_back(map.source);
  OutputSet set(inputs, ctx.token());
  {
    OutputSet::Scope scope(set);
    sht::write_healpix_map(path, hm);
  }
  set.commit();
}

double SkySpectrum::dl(int l) const noexcept {
  if (l < 0 || l >= static_cast<int>(cl.size())) return 0.0;
  return l * (l + 1.0) * cl[static_cast<std::size_t>(l)] / (2.0 * std::numbers::pi);
}

sht::Backend resolveBackend(BackendChoice choice) {
  switch (choice) {
    case BackendChoice::Cpu: return sht::Backend::Cpu;
    case BackendChoice::Cuda: return sht::Backend::Cuda;
    case BackendChoice::Auto: return resolve_backend({BackendKind::Auto, 0}).kind;
  }
  return sht::Backend::Cpu;
}

std::string backendText(BackendChoice choice) {
  return choice == BackendChoice::Cuda ? "cuda" : choice == BackendChoice::Auto ? "auto" : "cpu";
}

std::shared_ptr<const sht::ShtOutcome> runShtJob(const schema::Values& values, const JobContext& ctx) {
  const std::unique_ptr<jobs::Job> job = jobs::make_job({"sht", values, "", ""});
  jobs::check_job_files(*job, "");
  std::unique_ptr<jobs::Outcome> outcome = job->run(ctx, {});
  return std::shared_ptr<const sht::ShtOutcome>(static_cast<sht::ShtOutcome*>(outcome.release()));
}

std::string SkyWeights::describe() const {
  const std::string name = std::filesystem::path(path).filename().string();
  switch (kind) {
    case Kind::Uniform: return "uniform";
    case Kind::Ring: return "ring weights " + name;
    case Kind::Pixel: return "pixel weights " + name;
  }
  return "uniform";
}

SkySpectrum computeSkySpectrum(const SkyMapData& map, int column, int lmax, sht::Backend backend,
                               const std::string& savePath, const JobContext& ctx,
                               const SkyWeights& weights) {
  if (column < 0 || column >= static_cast<int>(map.columns.size()))
    throw ConfigError("column", "the map has no column " + std::to_string(column));
  if (lmax < 0 || lmax > 4 * map.nside)
    throw ConfigError("lmax", "must be in 0..4 nside = " + std::to_string(4 * map.nside) +
                                  ", got " + std::to_string(lmax));
  // healpy: 3 iterations by default, none with pixel weights (it ignores iter with them).
  const int kIterations = weights.kind == SkyWeights::Kind::Pixel ? 0 : 3;
  const auto t0 = std::chrono::steady_clock::now();
  SkySpectrum s;
  s.source = map.source;
  s.column = static_cast<std::size_t>(column) < map.names.size() ? map.names[static_cast<std::size_t>(column)] : "";
  s.nside = map.nside;
  s.lmax = lmax;
  s.iterations = kIterations;
  s.weights = weights.describe();
  s.backend = sht::to_string(backend);

  // Blind pixels enter the transform as zeros (healpy anafast does the same).
  ctx.progress(0, 1, "preparing the map");
  std::vector<double> values = map.columns[static_cast<std::size_t>(column)];
  for (double& v : values)
    if (isUnseen(v)) {
      v = 0.0;
      ++s.unseen;
    }
  if (s.unseen > 0) {
    std::ostringstream msg;
    msg << s.unseen << " blind pixels (" << 100.0 * static_cast<double>(s.unseen) / static_cast<double>(map.npix())
        << " % of the sky) set to 0 before the transform; C_l is not corrected for the mask.";
    ctx.warn(msg.str());
  }
  ctx.check_cancel();

  std::vector<double> ring_weights, pixel_weights;
  if (weights.kind == SkyWeights::Kind::Ring) {
    ctx.progress(0.01, 1, "reading " + weights.path);
    ring_weights = sht::read_ring_weights(weights.path, map.nside);
  } else if (weights.kind == SkyWeights::Kind::Pixel) {
    ctx.progress(0.01, 1, "reading " + weights.path);
    pixel_weights = sht::read_pixel_weights(weights.path, map.nside);
  }
  ctx.progress(0.02, 1, "building the SHT plan");
  sht::ShtConfig cfg;
  cfg.nside = map.nside;
  cfg.lmax = lmax;
  cfg.backend = backend;
  cfg.threads = ctx.threads;
  const sht::ShtPlan plan = sht::make_plan(cfg);
  s.device = plan.device();
  ctx.check_cancel();

  // map2alm does 1 + 2 * iterations transforms, each reporting done == total once at its end:
  // count them to give the job a progress bar over the whole solve.
  const int transforms = 1 + 2 * kIterations;
  auto count = std::make_shared<int>(0);
  ProgressFn progress = [&ctx, count, transforms](double done, double total, std::string_view) {
    if (total > 0 && done >= total) {
      *count = std::min(*count + 1, transforms);  // serialised by JobContext's mutex
      ctx.progress(0.05 + 0.9 * *count / transforms, 1,
                   "map2alm: transform " + std::to_string(std::min(*count + 1, transforms)) +
                       " of " + std::to_string(transforms));
    }
  };
  LogFn log = [&ctx](LogLevel level, std::string_view message) { ctx.log(level, message); };
  JobContext sub(ctx.token(), std::move(progress), std::move(log));
  sub.threads = ctx.threads;
  ctx.progress(0.05, 1, "map2alm: transform 1 of " + std::to_string(transforms));
  std::vector<sht::Complex> alm(plan.nalm());
  sht::map2alm_weighted(plan, values, alm, kIterations, ring_weights, pixel_weights, sub);
  ctx.check_cancel();
  ctx.progress(0.96, 1, "alm2cl");
  s.cl = sht::alm2cl(alm, alm, lmax);
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ctx.check_cancel();
  if (!savePath.empty()) {
    ctx.progress(0.98, 1, "writing " + savePath);
    writeSpectrum(savePath, s, ctx);
  }
  return s;
}

std::string spectrumText(const SkySpectrum& s) {
  std::string out;
  out.reserve(64 * (s.cl.size() + 8));
  out += "# Almagest sky map: angular power spectrum (healpy anafast conventions)\n";
  out += "# source: " + s.source + "\n";
  out += "# column: " + s.column + "\n";
  char buf[160];
  std::snprintf(buf, sizeof buf, "# nside %d, lmax %d, map2alm iterations %d, backend %s\n",
                s.nside, s.lmax, s.iterations, s.backend.c_str());
  out += buf;
  out += "# quadrature weights: " + s.weights + "\n";
  if (!s.device.empty()) out += "# device: " + s.device + "\n";
  if (s.unseen > 0) {
    std::snprintf(buf, sizeof buf, "# %lld blind pixels set to 0 (no mask correction)\n",
                  static_cast<long long>(s.unseen));
    out += buf;
  }
  out += "# l  C_l  D_l = l(l+1) C_l / (2 pi)\n";
  for (std::size_t l = 0; l < s.cl.size(); ++l) {
    std::snprintf(buf, sizeof buf, "%zu %.17g %.17g\n", l, s.cl[l], s.dl(static_cast<int>(l)));
    out += buf;
  }
  return out;
}

void writeSpectrum(const std::string& path, const SkySpectrum& s, const JobContext& ctx) {
  const std::string text = spectrumText(s);
  // One output set, as every job output: the rename waits for its commit, which honours a cancel.
  std::vector<std::string> inputs;
  if (!s.source.empty() && std::filesystem::exists(s.source)) inputs.push_back(s.source);
  OutputSet set(inputs, ctx.token());
  {
    OutputSet::Scope scope(set);
    AtomicFile file(path);
    {
      std::ofstream out(file.temp_path(), std::ios::binary | std::ios::trunc);
      if (!out) throw IoError(path, "", "cannot open the temporary file " + file.temp_path());
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      out.flush();
      if (!out) throw IoError(path, "", "write failed (disk full?)");
    }
    ctx.check_cancel();  // the set's destructor removes the temporary file
    file.commit();
  }
  set.commit();
}

}  // namespace almagest::ui::sky
