// The sht job's schema and validation (sht/job.hpp): every option of `almagest-cli sht <op>`
// declared once, and the cross-field rules the CLI used to check itself. The run is in
// job_run.cpp, the files in job_files.cpp.
#include "almagest/sht/job.hpp"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "almagest/core/error.hpp"
#include "job_files.hpp"

namespace almagest::sht {

namespace fs = std::filesystem;

const char* to_string(ShtOp op) {
  switch (op) {
    case ShtOp::Synth: return "synth";
    case ShtOp::Adjoint: return "adjoint";
    case ShtOp::Inverse: return "inverse";
    case ShtOp::Map2alm: return "map2alm";
    case ShtOp::Cl: return "cl";
    case ShtOp::Smooth: return "smooth";
  }
  return "synth";
}

int ncomp(ShtLayout l) noexcept { return l == ShtLayout::Pol ? 3 : l == ShtLayout::Spin2 ? 2 : 1; }
const char* spin_text(ShtLayout l) noexcept {
  return l == ShtLayout::Pol ? "0,2" : l == ShtLayout::Spin2 ? "2" : "0";
}

namespace {

using schema::Field;
using schema::Kind;
using schema::Role;

const std::vector<std::string> kOps = {"synth", "adjoint", "inverse", "map2alm", "cl", "smooth"};

schema::Schema build_schema() {
  schema::Schema s;
  s.engine = "sht";
  s.operation_key = "op";
  s.help = "Spherical harmonic transforms of HEALPix maps in healpy's conventions: synth (alm -> "
           "map), adjoint (map -> Y^T map), inverse (least-squares map -> alm), map2alm (healpy "
           "iterative), cl (power spectra), smooth (Gaussian beam).";
  auto add = [&](Field f) { s.fields.push_back(std::move(f)); };
  const std::vector<std::string> map_ops = {"adjoint", "inverse", "map2alm", "cl", "smooth"};
  const std::vector<std::string> weighted = {"map2alm", "cl", "smooth"};

  Field f;
  f = {};
  f.key = "op"; f.kind = Kind::Choice; f.group = "Operation"; f.value_name = "OP";
  f.help = "The transform: synth, adjoint, inverse, map2alm, cl or smooth (the subcommand of `almagest-cli sht`).";
  f.choices = kOps; f.required = true;
  add(f);

  f = {};
  f.key = "input"; f.kind = Kind::Text; f.group = "Files"; f.value_name = "FILE"; f.role = Role::InputFile;
  f.required = true;
  f.help = "Input file. synth: alm (FITS as healpy write_alm: INDEX, REAL, IMAG, one HDU per set; or HDF5 /alm). "
           "Other operations: a HEALPix map (FITS as healpy write_map, RING or NESTED, full or partial sky; or "
           "HDF5 /map); cl also takes an alm file (spectra of the alm).";
  add(f);

  f = {};
  f.key = "output"; f.short_flag = "-o"; f.kind = Kind::Text; f.group = "Files"; f.value_name = "FILE";
  f.role = Role::OutputFile; f.required = true;
  f.help = "Output file, written atomically; format by extension (.h5/.hdf5: HDF5, .txt/.dat/.csv: text for "
           "cl, else FITS) unless --format.";
  add(f);

  f = {};
  f.key = "format"; f.kind = Kind::Choice; f.group = "Files"; f.value_name = "FMT";
  f.help = "Output format: auto (by extension), fits, hdf5 or text (cl only).";
  f.choices = {"auto", "fits", "hdf5", "text"}; f.default_value = std::string("auto");
  add(f);

  f = {};
  f.key = "nside"; f.kind = Kind::Integer; f.group = "Transform"; f.value_name = "N";
  f.min = 1; f.max = 8192;
  f.help = "synth: NSIDE of the output map (required). Other operations: the expected NSIDE of the input map "
           "(checked; default: the file's).";
  add(f);

  f = {};
  f.key = "lmax"; f.kind = Kind::Integer; f.group = "Transform"; f.value_name = "L";
  f.min = 0; f.max = 4 * 8192;
  f.help = "Band limit, at most 4 NSIDE; mmax = lmax (healpy layout). Default: 3 NSIDE - 1 for maps, the alm "
           "file's for synth (larger l are dropped, missing ones are zero).";
  add(f);

  f = {};
  f.key = "spin"; f.kind = Kind::Integer; f.group = "Transform"; f.value_name = "0|2";
  f.default_value = std::int64_t{0};
  f.help = "0 (T) or 2 ((Q, U) maps <-> (E, B) alm).";
  add(f);

  f = {};
  f.key = "pol"; f.kind = Kind::Flag; f.group = "Transform"; f.default_value = false;
  f.help = "(T, Q, U) maps <-> (T, E, B) alm: T with spin 0, (Q, U) with spin 2 (healpy pol=True).";
  add(f);

  f = {};
  f.key = "field"; f.kind = Kind::TextList; f.group = "Transform"; f.value_name = "I[,J,K]";
  f.help = "0-based map columns (synth: alm sets, HDUs) to use, one per component; default: 0 (spin 0), "
           "0,1,2 (--pol), 1,2 of three or 0,1 of two (--spin 2).";
  add(f);

  f = {};
  f.key = "mask"; f.kind = Kind::Text; f.group = "Cut sky and weights"; f.value_name = "FILE"; f.role = Role::InputFile;
  f.help = "Cut sky: only these pixels are used (synth: only these are synthesised, the rest are UNSEEN). A "
           "HEALPix map (observed where the first column is non-zero and not UNSEEN) or a text file of RING "
           "pixel indices. UNSEEN input pixels are always excluded.";
  add(f);

  f = {};
  f.key = "iter"; f.kind = Kind::Integer; f.group = "Cut sky and weights"; f.value_name = "N";
  f.min = 0; f.max = 1000; f.default_value = std::int64_t{3}; f.operations = weighted;
  f.help = "healpy map2alm iterations (Jacobi steps); 0 with --pixel-weights.";
  add(f);

  f = {};
  f.key = "ring-weights"; f.kind = Kind::Text; f.group = "Cut sky and weights"; f.value_name = "FILE";
  f.role = Role::InputFile; f.operations = weighted;
  f.help = "HEALPix ring weight file (weight_ring_nNNNNN.fits of the HEALPix / healpy data) for map inputs: "
           "map2alm weighs each ring by it (healpy use_weights=True). Default: none.";
  add(f);

  f = {};
  f.key = "pixel-weights"; f.kind = Kind::Text; f.group = "Cut sky and weights"; f.value_name = "FILE";
  f.role = Role::InputFile; f.operations = weighted;
  f.help = "HEALPix full pixel weight file (full_weights/healpix_full_weights_nside_NNNN.fits of the healpy "
           "data) for map inputs: map2alm weighs each pixel by it, without iterations (healpy "
           "use_pixel_weights=True). Default: none.";
  add(f);

  f = {};
  f.key = "epsilon"; f.kind = Kind::Number; f.group = "Inverse"; f.value_name = "EPS";
  f.min = 0; f.min_exclusive = true; f.default_value = 1e-10; f.operations = {"inverse"};
  f.help = "CGLS tolerance: stop when ||Y^T (Y a - m)|| / ||Y^T m|| < epsilon.";
  add(f);

  f = {};
  f.key = "max-iter"; f.kind = Kind::Integer; f.group = "Inverse"; f.value_name = "N";
  f.min = 1; f.max = 2147483647; f.default_value = std::int64_t{1000}; f.operations = {"inverse"};
  f.help = "CGLS iterations before giving up (exit code 6 on the command line; no output).";
  add(f);

  f = {};
  f.key = "fwhm-arcmin"; f.kind = Kind::Number; f.group = "Smoothing"; f.value_name = "ARCMIN";
  f.unit = "arcmin"; f.min = 0; f.required = true; f.operations = {"smooth"};
  f.help = "Gaussian beam FWHM (healpy smoothing).";
  add(f);

  f = {};
  f.key = "cross"; f.kind = Kind::Text; f.group = "Spectra"; f.value_name = "FILE"; f.role = Role::InputFile;
  f.operations = {"cl"};
  f.help = "Second map or alm file: cross spectra (TE = T of INPUT x E of this file, as healpy anafast(map1, map2)).";
  add(f);

  f = {};
  f.key = "nest-out"; f.kind = Kind::Flag; f.group = "Output map"; f.default_value = false;
  f.operations = {"synth", "smooth"};
  f.help = "Write the map in NESTED order (power-of-two NSIDE).";
  add(f);

  f = {};
  f.key = "partial-out"; f.kind = Kind::Flag; f.group = "Output map"; f.default_value = false;
  f.operations = {"synth", "smooth"};
  f.help = "With a cut sky, write only the observed pixels (explicit-index file) instead of a full-sky map with UNSEEN.";
  add(f);

  f = {};
  f.key = "backend"; f.kind = Kind::Text; f.group = "Execution"; f.value_name = "cpu|cuda|cuda:N|auto";
  f.default_value = std::string("cpu");
  f.help = "cpu (healpix_cxx), cuda or cuda:N (exit code 4 without a usable GPU) or auto (the GPU when one "
           "is usable, else the CPU; docs/design.md, Backends).";
  add(f);

  f = {};
  f.key = "threads"; f.kind = Kind::Integer; f.group = "Execution"; f.value_name = "N";
  f.min = 0; f.max = 4096; f.default_value = std::int64_t{0};
  f.help = "CPU worker threads, 0 = all.";
  add(f);
  return s;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string absolute(const std::string& p) {
  if (p.empty()) return p;
  std::error_code ec;
  auto a = fs::absolute(p, ec);
  return ec ? p : a.lexically_normal().string();
}

/// The jobs::Job face of an ShtJob.
class ShtJobImpl final : public jobs::Job {
public:
  explicit ShtJobImpl(ShtJob job) : job_(std::move(job)) {}
  const std::string& engine() const noexcept override {
    static const std::string name = "sht";
    return name;
  }
  std::string operation() const override { return to_string(job_.op); }
  std::vector<std::string> input_paths() const override { return job_.input_paths(); }
  std::vector<std::string> output_paths() const override { return {job_.output}; }
  std::string config_json() const override { return job_.config_json(); }
  schema::Values values() const override { return job_.given; }
  std::unique_ptr<jobs::Outcome> run(const JobContext& ctx, const jobs::RunOptions& options) const override {
    return std::make_unique<ShtOutcome>(run_sht_job(job_, ctx, options));
  }

private:
  ShtJob job_;
};

}  // namespace

const schema::Schema& sht_schema() {
  static const schema::Schema s = build_schema();
  return s;
}

std::vector<std::string> ShtJob::input_paths() const {
  std::vector<std::string> v{input};
  for (const auto* p : {&mask, &ring_weights, &pixel_weights, &cross})
    if (!p->empty()) v.push_back(*p);
  return v;
}

std::string ShtJob::config_json() const {
  nlohmann::json j;  // nlohmann::json objects keep their keys sorted
  j["engine"] = "sht";
  j["command"] = std::string("sht ") + to_string(op);
  j["op"] = to_string(op);
  j["input"] = absolute(input);
  j["output"] = absolute(output);
  if (!mask.empty()) j["mask"] = absolute(mask);
  if (!cross.empty()) j["cross"] = absolute(cross);
  if (!ring_weights.empty()) j["ring-weights"] = absolute(ring_weights);
  if (!pixel_weights.empty()) j["pixel-weights"] = absolute(pixel_weights);
  if (nside > 0) j["nside"] = nside;
  if (lmax >= 0) j["lmax"] = lmax;
  j["spin"] = spin;
  j["pol"] = pol;
  if (!field.empty()) j["field"] = field;
  if (op == ShtOp::Map2alm || op == ShtOp::Cl || op == ShtOp::Smooth) j["iter"] = iter;
  if (op == ShtOp::Inverse) {
    j["epsilon"] = epsilon;
    j["max-iter"] = max_iter;
  }
  if (op == ShtOp::Smooth) j["fwhm-arcmin"] = fwhm_arcmin;
  if (op == ShtOp::Synth || op == ShtOp::Smooth) {
    j["nest-out"] = nest_out;
    j["partial-out"] = partial_out;
  }
  j["format"] = format;
  j["backend"] = almagest::to_string(backend);
  j["threads"] = threads;
  return j.dump();
}

ShtJob parse_sht_job(const jobs::JobRequest& request) {
  const schema::Schema& s = sht_schema();
  ShtJob job;
  job.label = request.label.empty() ? "--" : request.label;
  // Canonical keys ('_' and '-' alike), so that job files and Python keywords read as options.
  for (const auto& [k, v] : request.values) {
    const std::string c = schema::canonical_key(s, k);
    job.given[c.empty() ? k : c] = v;
  }
  schema::Reader r(s, job.given, job.label);
  const auto op = r.choice("op");
  if (!op) {
    if (!r.has("op")) r.problem("op", "is required (" + joined(kOps) + ")");
    r.throw_if_problems();  // the other fields depend on the operation
  }
  r.check_keys(*op);
  job.op = static_cast<ShtOp>(std::find(kOps.begin(), kOps.end(), *op) - kOps.begin());

  auto path = [&](const char* key) {
    auto t = r.text(key);
    return t ? schema::resolve_path(*t, request.base_dir) : std::string();
  };
  job.input = path("input");
  job.output = path("output");
  job.mask = path("mask");
  job.cross = path("cross");
  job.ring_weights = path("ring-weights");
  job.pixel_weights = path("pixel-weights");
  if (auto n = r.integer("nside")) job.nside = static_cast<int>(*n);
  if (auto l = r.integer("lmax")) job.lmax = static_cast<int>(*l);
  // Read as a 64-bit value, so that a huge spin is reported as written (not truncated).
  if (auto sp = r.integer("spin")) {
    if (*sp != 0 && *sp != 2) r.problem("spin", "must be 0 or 2, got " + r.original("spin"));
    else job.spin = static_cast<int>(*sp);
  }
  job.pol = r.flag("pol");
  job.iter = static_cast<int>(r.integer_or_default("iter"));
  job.epsilon = r.number_or_default("epsilon");
  job.max_iter = static_cast<int>(r.integer_or_default("max-iter"));
  if (auto fw = r.number("fwhm-arcmin")) job.fwhm_arcmin = *fw;
  job.nest_out = r.flag("nest-out");
  job.partial_out = r.flag("partial-out");
  job.threads = static_cast<int>(r.integer_or_default("threads"));
  job.format = r.has("format") ? r.choice("format").value_or("auto") : std::string("auto");
  const std::string backend = r.text_or_default("backend");
  try {
    job.backend = parse_backend(backend, "backend");
  } catch (const ConfigError& e) {
    r.problem("backend", std::string(e.what()).substr(std::string("backend: ").size()));
  }

  // Cross-field rules (the same message in every front end).
  if (job.pol && job.spin == 2)
    r.problem("pol", "cannot be combined with " + job.name("spin") +
                         " 2 (--pol transforms T with spin 0 and (Q, U) with spin 2)");
  if (auto fl = r.list("field")) {
    const ShtLayout l = job.layout();
    bool ok = true;
    for (const auto& t : *fl) {
      int v = -1;
      std::size_t used = 0;
      try {
        v = std::stoi(t, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != t.size() || v < 0 || v > 1 << 20) {
        r.problem("field", "indices are 0-based integers >= 0, got '" + t + "'");
        ok = false;
        break;
      }
      job.field.push_back(v);
    }
    if (ok && static_cast<int>(job.field.size()) != ncomp(l))
      r.problem("field", "needs " + std::to_string(ncomp(l)) + " index(es) for spin " + spin_text(l) + ", got " +
                             std::to_string(job.field.size()));
  }
  if (!job.pixel_weights.empty()) {
    if (!job.ring_weights.empty())
      r.problem("pixel-weights", "cannot be combined with " + job.name("ring-weights"));
    if (r.has("iter") && job.iter != 0)
      r.problem("iter", "must be 0 with " + job.name("pixel-weights") +
                            " (healpy ignores iter with use_pixel_weights; HEALPix refuses the combination)");
    job.iter = 0;
  }
  if (job.nest_out && job.nside > 0 && (job.nside & (job.nside - 1)) != 0)
    r.problem("nest-out", "NESTED ordering needs a power-of-two NSIDE, got " + std::to_string(job.nside));
  if (job.op == ShtOp::Synth && !r.has("nside")) r.problem("nside", "is required for sht synth");
  if (job.lmax >= 0 && job.layout() != ShtLayout::Scalar && job.lmax < 2)
    r.problem("lmax", "spin 2 needs lmax >= 2, got " + std::to_string(job.lmax));
  if (job.lmax > 4 * job.nside && job.nside > 0)
    r.problem("lmax", "must be in 0..4 NSIDE = " + std::to_string(4 * job.nside) + " for NSIDE " +
                          std::to_string(job.nside) + ", got " + std::to_string(job.lmax));
  if (!job.output.empty()) {
    try {
      job.out_format = files::output_format(job.output, job.format, job.op == ShtOp::Cl, job.name("format"));
    } catch (const ConfigError& e) {
      r.problem("format", std::string(e.what()).substr(job.name("format").size() + 2));
    }
  }
  r.throw_if_problems();
  return job;
}

std::unique_ptr<jobs::Job> make_sht_job(const jobs::JobRequest& request) {
  return std::make_unique<ShtJobImpl>(parse_sht_job(request));
}

jobs::EngineEntry sht_job_entry() { return {"sht", &sht_schema, &make_sht_job}; }

}  // namespace almagest::sht
