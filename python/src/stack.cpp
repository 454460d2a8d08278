// almagest shift-and-stack bindings: exposure stacks from files (stack::read_stack) or NumPy
// cubes, psi/phi planes, and the search through the job layer (stack/job.hpp: make_stack_job,
// run_stack_job, the schema's every option) with candidates as a dict of NumPy arrays.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <tuple>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
#include "almagest/jobs/job.hpp"
#include "almagest/stack/job.hpp"
#include "almagest/stack/psiphi.hpp"
#include "almagest/stack/search.hpp"
#include "almagest/stack/stack_io.hpp"
#include "almagest/stack/synthetic.hpp"
#include "engine_call.hpp"

namespace almagest::py {

namespace {

template <class T>
using In = nb::ndarray<const T, nb::c_contig, nb::device::cpu>;

/// A new NumPy array owning a copy of `v` with `shape`.
template <class T>
nb::object numpy_of(const std::vector<T>& v, std::vector<std::size_t> shape) {
  T* p = new T[v.size() ? v.size() : 1];
  std::copy(v.begin(), v.end(), p);
  nb::capsule owner(p, [](void* q) noexcept { delete[] static_cast<T*>(q); });
  return nb::cast(nb::ndarray<nb::numpy, T>(p, shape.size(), shape.data(), owner));
}

template <class T>
In<T> array(nb::handle d, const char* key, const char* dtype) {
  In<T> a;
  nb::object obj = nb::borrow(d[key]);
  if (nb::try_cast(obj, a, true)) return a;
  nb::object conv = nb::module_::import_("numpy").attr("ascontiguousarray")(obj, nb::arg("dtype") = dtype);
  if (!nb::try_cast(conv, a, false)) throw ConfigError(key, std::string("expected a ") + dtype + " array");
  return a;
}

nb::dict dict_of(const stack::ExposureStack& s) {
  nb::dict d;
  const std::size_t n = s.size(), h = std::size_t(s.height), w = std::size_t(s.width);
  d["sci"] = numpy_of(s.sci, {n, h, w});
  d["var"] = numpy_of(s.var, {n, h, w});
  d["mask"] = numpy_of(s.mask, {n, h, w});
  d["mjd"] = numpy_of(s.mjd, {n});
  nb::list psf;
  for (const auto& p : s.psf) psf.append(numpy_of(p.kernel, {std::size_t(p.size), std::size_t(p.size)}));
  d["psf"] = psf;
  if (!s.weight.empty()) d["weight"] = numpy_of(s.weight, {n});
  d["wcs_header"] = s.wcs_header;
  d["origin"] = s.origin;
  d["source"] = s.source;
  return d;
}

/// An ExposureStack from a dict with sci, var, mask [n][H][W], mjd [n], psf (a sigma in pixels,
/// an [n][K][K] cube or a list of n square kernels) and optional weight, wcs_header. Validated.
stack::ExposureStack stack_of(nb::handle d) {
  if (!nb::isinstance<nb::dict>(d)) throw ConfigError("stack", "expected a file path or a dict of arrays");
  stack::ExposureStack s;
  s.source = nb::cast<std::string>(nb::str(d.attr("get")("source", "<arrays>")));
  auto sci = array<float>(d, "sci", "float32");
  if (sci.ndim() != 3) throw ConfigError("sci", "expected an [n, height, width] cube");
  const std::size_t n = sci.shape(0), total = sci.size();
  s.height = static_cast<int>(sci.shape(1));
  s.width = static_cast<int>(sci.shape(2));
  s.sci.assign(sci.data(), sci.data() + total);
  auto var = array<float>(d, "var", "float32");
  if (var.size() != total) throw ConfigError("var", "must have the shape of sci");
  s.var.assign(var.data(), var.data() + total);
  if (d.attr("get")("mask").is_none()) {
    s.mask.assign(total, 0);
  } else {
    auto mask = array<std::uint8_t>(d, "mask", "uint8");
    if (mask.size() != total) throw ConfigError("mask", "must have the shape of sci");
    s.mask.assign(mask.data(), mask.data() + total);
  }
  auto mjd = array<double>(d, "mjd", "float64");
  if (mjd.size() != n) throw ConfigError("mjd", "must hold one time per exposure");
  s.mjd.assign(mjd.data(), mjd.data() + n);
  nb::object psf = nb::borrow(d.attr("get")("psf"));
  if (psf.is_none()) throw ConfigError("psf", "is required (a Gaussian sigma in pixels or kernels)");
  if (nb::isinstance<nb::float_>(psf) || nb::isinstance<nb::int_>(psf)) {
    s.psf.assign(n, stack::Psf::gaussian(nb::cast<double>(psf)));
  } else if (nb::isinstance<nb::list>(psf) || nb::isinstance<nb::tuple>(psf)) {
    for (nb::handle k : psf) {
      nb::dict one;
      one["k"] = k;
      auto a = array<float>(one, "k", "float32");
      if (a.ndim() != 2 || a.shape(0) != a.shape(1)) throw ConfigError("psf", "kernels must be square");
      s.psf.push_back(stack::Psf{int(a.shape(0)), std::vector<float>(a.data(), a.data() + a.size())});
    }
  } else {
    auto a = array<float>(d, "psf", "float32");
    if (a.ndim() != 3 || a.shape(0) != n || a.shape(1) != a.shape(2))
      throw ConfigError("psf", "expected an [n, K, K] cube of square kernels");
    const std::size_t kk = a.shape(1) * a.shape(2);
    for (std::size_t e = 0; e < n; ++e)
      s.psf.push_back(stack::Psf{int(a.shape(1)), std::vector<float>(a.data() + e * kk, a.data() + (e + 1) * kk)});
  }
  if (!d.attr("get")("weight").is_none()) {
    auto w = array<double>(d, "weight", "float64");
    s.weight.assign(w.data(), w.data() + w.size());
  }
  if (!d.attr("get")("wcs_header").is_none()) s.wcs_header = nb::cast<std::string>(d["wcs_header"]);
  s.validate();
  return s;
}

stack::ExposureStack load(nb::handle st, double psf_sigma, double fallback) {
  if (nb::isinstance<nb::str>(st)) {
    stack::StackReadOptions o;
    o.psf_sigma = psf_sigma;
    o.fallback_psf_sigma = fallback;
    std::string path = nb::cast<std::string>(st);
    nb::gil_scoped_release g;
    return stack::read_stack(path, o);
  }
  return stack_of(st);
}

/// CLI --backend (cpu | cuda | auto) with --method: the GPU when asked or, for auto, available.
bool resolve_gpu(const std::string& backend) {
  if (backend == "cpu") return false;
  if (backend == "cuda") return true;
  if (backend == "auto") return gpu_status().available;
  throw ConfigError("backend", "unknown backend '" + backend + "' (expected cpu, cuda or auto)");
}

/// Two equal-length float64 sequences (vx, vy) / (dx, dy).
std::pair<std::vector<double>, std::vector<double>> two_arrays(nb::handle h, const char* key, const char* what) {
  if (!nb::isinstance<nb::tuple>(h) && !nb::isinstance<nb::list>(h)) throw ConfigError(key, std::string("expected ") + what);
  nb::tuple t = nb::tuple(h);
  if (t.size() != 2) throw ConfigError(key, std::string("expected ") + what);
  nb::dict one;
  one["a"] = t[0];
  one["b"] = t[1];
  auto a = array<double>(one, "a", "float64");
  auto b = array<double>(one, "b", "float64");
  if (a.ndim() != 1 || b.ndim() != 1 || a.size() != b.size())
    throw ConfigError(key, std::string("expected ") + what + " of one length, got " + std::to_string(a.size()) + " and " +
                               std::to_string(b.size()) + " values");
  return {std::vector<double>(a.data(), a.data() + a.size()), std::vector<double>(b.data(), b.data() + b.size())};
}

/// make_stack_job's ConfigError lists every problem prefixed "--" (the command line's spelling of
/// a request without a label); Python writes keywords without dashes, and a single problem
/// "key: message" gets its key as the field, so that almagest.ConfigError.field names it.
stack::StackJob make_search_job(const jobs::JobRequest& req, const stack::MakeStackOptions& mo) {
  try {
    return stack::make_stack_job(req, mo);
  } catch (const ConfigError& e) {
    if (!e.field().empty()) throw;
    std::string msg = e.what();
    if (msg.rfind("--", 0) == 0) msg.erase(0, 2);
    for (std::size_t p; (p = msg.find("; --")) != std::string::npos;) msg.erase(p + 2, 2);
    const auto colon = msg.find(": ");
    if (colon != std::string::npos && msg.find("; ") == std::string::npos && msg.find(' ') > colon)
      throw ConfigError(msg.substr(0, colon), msg.substr(colon + 2));
    throw ConfigError("", msg);
  }
}

/// Candidates as a dict of NumPy arrays; with the filters' groups also their spreads and fits
/// (the ECSV's columns).
nb::dict candidates_of(const stack::SearchResult& r) {
  const std::size_t nc = r.candidates.size();
  std::vector<std::int32_t> x(nc), y(nc), v(nc), obs(nc), members(nc);
  std::vector<double> vx(nc), vy(nc), z(nc), flux(nc);
  std::vector<float> a(nc), b(nc);
  for (std::size_t i = 0; i < nc; ++i) {
    const auto& c = r.candidates[i];
    x[i] = c.x; y[i] = c.y; v[i] = c.v; obs[i] = c.obs; members[i] = c.members;
    vx[i] = c.vx; vy[i] = c.vy; z[i] = c.z; flux[i] = c.flux; a[i] = c.a; b[i] = c.b;
  }
  nb::dict d;
  d["x"] = numpy_of(x, {nc}); d["y"] = numpy_of(y, {nc}); d["v"] = numpy_of(v, {nc});
  d["vx"] = numpy_of(vx, {nc}); d["vy"] = numpy_of(vy, {nc});
  d["a"] = numpy_of(a, {nc}); d["b"] = numpy_of(b, {nc}); d["obs"] = numpy_of(obs, {nc});
  d["z"] = numpy_of(z, {nc}); d["flux"] = numpy_of(flux, {nc}); d["members"] = numpy_of(members, {nc});
  if (r.filtered && r.groups.size() == nc) {
    std::vector<double> sx(nc), sy(nc), fx(nc), fy(nc);
    std::vector<std::int32_t> clipped(nc);
    for (std::size_t i = 0; i < nc; ++i) {
      const auto& g = r.groups[i];
      sx[i] = g.vx_spread; sy[i] = g.vy_spread; fx[i] = g.vx_fit; fy[i] = g.vy_fit; clipped[i] = g.epochs_clipped;
    }
    d["vx_spread"] = numpy_of(sx, {nc}); d["vy_spread"] = numpy_of(sy, {nc});
    d["clipped"] = numpy_of(clipped, {nc}); d["vx_fit"] = numpy_of(fx, {nc}); d["vy_fit"] = numpy_of(fy, {nc});
  }
  return d;
}

nb::dict meta_of(const stack::SearchResult& r) {
  nb::dict meta;
  meta["threshold_z"] = r.threshold_z;
  meta["raw_hits"] = r.raw_hits;
  meta["truncated"] = r.truncated;
  meta["exact"] = r.exact;
  meta["n_vel"] = r.n_vel;
  meta["backend"] = r.backend;
  meta["device"] = r.device;
  meta["scan_seconds"] = r.scan_seconds;
  meta["max_z"] = r.digest.max_z;
  meta["count_above"] = r.digest.count_above;
  meta["provenance_json"] = r.provenance.to_json();
  if (r.filtered) {
    // What every filter removed (the ECSV's filter_* metadata).
    const stack::FilterReport& f = r.filters;
    nb::dict fd;
    fd["input"] = f.input;
    fd["removed_observations"] = f.observations;
    fd["removed_sigma_g"] = f.sigma_g;
    fd["merged_duplicates"] = f.merged;
    fd["removed_stationary"] = f.stationary;
    fd["removed_stamps"] = f.stamps;
    fd["output"] = f.output;
    fd["config_json"] = f.config_json;
    meta["filters"] = fd;
  }
  return meta;
}

}  // namespace

void bind_stack(nb::module_& m) {
  m.def("read_stack", [](const std::string& path, double psf_sigma, double fallback_psf_sigma) {
    return dict_of(load(nb::str(path.c_str()), psf_sigma, fallback_psf_sigma));
  }, nb::arg("path"), nb::kw_only(), nb::arg("psf_sigma") = 0.0, nb::arg("fallback_psf_sigma") = 0.0,
     "An exposure stack (WorkUnit FITS, per-exposure folder or HDF5 cube) as a dict of arrays.");

  m.def("synthetic_stack", [](int n_exp, int width, int height, std::uint64_t seed,
                              std::vector<std::vector<double>> movers, bool common_curve) {
    stack::SyntheticConfig c;
    c.n_exp = n_exp;
    c.width = width;
    c.height = height;
    c.seed = seed;
    c.common_curve = common_curve;
    for (const auto& mv : movers) {
      if (mv.size() != 5) throw ConfigError("movers", "each mover is (x0, y0, vx, vy, snr)");
      c.movers.push_back(stack::Mover{mv[0], mv[1], mv[2], mv[3], mv[4], 0});
    }
    stack::SyntheticStack s = stack::make_synthetic(c);
    nb::dict d = dict_of(s.stack);
    d["curve_dx"] = numpy_of(s.curve_dx, {s.curve_dx.size()});
    d["curve_dy"] = numpy_of(s.curve_dy, {s.curve_dy.size()});
    d["reference_mjd"] = s.reference_mjd;
    return d;
  }, nb::kw_only(), nb::arg("n_exp") = 16, nb::arg("width") = 32, nb::arg("height") = 32,
     nb::arg("seed") = 1, nb::arg("movers") = std::vector<std::vector<double>>{},
     nb::arg("common_curve") = false, "A seeded synthetic stack (stack/synthetic.hpp) as a dict.");

  m.def("write_stack_hdf5", [](const std::string& path, nb::handle st) {
    stack::ExposureStack s = stack_of(st);
    nb::gil_scoped_release g;
    stack::write_stack_hdf5(path, s);
  }, nb::arg("path"), nb::arg("stack"));

  m.def("psiphi", [](nb::handle st, const std::string& backend, int device, int threads,
                     double psf_sigma, double fallback_psf_sigma, nb::handle progress) {
    stack::ExposureStack s = load(st, psf_sigma, fallback_psf_sigma);
    const bool gpu = resolve_gpu(backend);
    stack::PsiPhi p;
    run_engine([&](const JobContext& ctx) {
      p = gpu ? stack::compute_psiphi_gpu(s, device, ctx) : stack::compute_psiphi(s, ctx);
    }, threads, progress);
    const std::vector<std::size_t> shape{std::size_t(p.n), std::size_t(p.height), std::size_t(p.width)};
    return nb::make_tuple(numpy_of(p.psi, shape), numpy_of(p.phi, shape));
  }, nb::arg("stack"), nb::kw_only(), nb::arg("backend") = "cpu", nb::arg("device") = 0,
     nb::arg("threads") = 0, nb::arg("psf_sigma") = 0.0, nb::arg("fallback_psf_sigma") = 0.0,
     nb::arg("progress").none() = nb::none(),
     "(psi, phi) float32 [n, height, width] planes (stack/psiphi.hpp).");

  m.def("stack_options", [] { return schema_fields(stack::stack_schema()); },
        "The stack job schema (stack/job.hpp): one dict per option, in help order, with the "
        "operations it applies to (the keywords of stack_search() are generated from it).");

  // The search is the job layer's (stack/job.hpp), as the CLI's `stack search` and the GUI run it:
  // every option, rule and filter of the schema applies; arrays in memory are StackInputs.
  m.def("_stack_search", [](nb::handle st, nb::dict values, nb::handle velocities, nb::handle curve,
                            nb::handle progress) {
    jobs::JobRequest req;
    req.engine = "stack";
    for (auto [k, v] : values) {
      const std::string key = nb::cast<std::string>(k);
      req.values[key] = schema_value(key, v);
    }
    req.values["op"] = std::string("search");
    stack::MakeStackOptions mo;
    mo.output_optional = true;  // without output, ades or mpc nothing is written
    stack::StackInputs in;
    if (nb::isinstance<nb::str>(st)) {
      req.values["stack"] = nb::cast<std::string>(st);
    } else {
      in.stack = std::make_shared<const stack::ExposureStack>(stack_of(st));
      mo.stack_in_memory = true;
    }
    if (!velocities.is_none()) {
      auto [vx, vy] = two_arrays(velocities, "velocities", "(vx, vy) arrays [pixels/day]");
      in.bank = std::make_shared<const stack::TrajectoryBank>(stack::TrajectoryBank::list(std::move(vx), std::move(vy)));
      mo.velocities_in_memory = true;
    }
    if (!curve.is_none()) {
      std::tie(in.curve_dx, in.curve_dy) = two_arrays(curve, "common-curve", "(dx, dy) arrays [pixels]");
      if (in.stack && in.curve_dx.size() != in.stack->size())
        throw ConfigError("common-curve", "holds " + std::to_string(in.curve_dx.size()) + " offsets for " +
                                               std::to_string(in.stack->size()) + " exposures");
    }
    const stack::StackJob job = make_search_job(req, mo);
    jobs::RunOptions opt;
    opt.write = !job.output.empty() || !job.ades.empty() || !job.mpc.empty();
    stack::StackOutcome o;
    run_engine([&](const JobContext& ctx) { o = stack::run_stack_job(job, ctx, opt, in); }, job.threads, progress);
    nb::dict meta = meta_of(o.result);
    meta["outputs"] = o.outputs;
    meta["summary"] = o.summary;
    return nb::make_tuple(candidates_of(o.result), meta);
  }, nb::arg("stack"), nb::arg("values"), nb::arg("velocities").none(), nb::arg("curve").none(),
     nb::arg("progress").none());

  m.def("read_stack_candidates", [](const std::string& path) {
    stack::files::CandidateTable t;
    {
      nb::gil_scoped_release g;
      t = stack::files::read_candidates(path);
    }
    stack::SearchResult r;
    r.candidates = std::move(t.candidates);
    r.threshold_z = t.threshold_z;
    r.digest = t.digest;
    r.backend = t.backend;
    nb::dict meta;
    meta["threshold_z"] = t.threshold_z;
    meta["max_z"] = t.digest.max_z;
    meta["count_above"] = t.digest.count_above;
    meta["backend"] = t.backend;
    meta["provenance_json"] = t.provenance_json;
    meta["config_json"] = t.config_json;
    return nb::make_tuple(candidates_of(r), meta);
  }, nb::arg("path"),
     "A candidate table written by stack search (ECSV or HDF5) as (candidates, meta), the columns "
     "x, y, v, vx, vy, a, b, obs, z, flux, members of stack_search().");
}

}  // namespace almagest::py
