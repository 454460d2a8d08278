// almagest shift-and-stack bindings: exposure stacks from files (stack::read_stack) or NumPy
// cubes, psi/phi planes, the search with candidates as a dict of NumPy arrays.
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <limits>
#include <optional>

#include "almagest/core/error.hpp"
#include "almagest/core/gpu.hpp"
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

std::pair<double, double> pair_of(nb::handle h, const char* key) {
  auto v = nb::cast<std::vector<double>>(h);
  if (v.size() != 2) throw ConfigError(key, "expected (min, max)");
  return {v[0], v[1]};
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

  // Keywords are the CLI's `stack search` options (docs/cli.md) with '_' for '-'.
  m.def("_stack_search", [](nb::handle st, nb::dict o, nb::handle progress) {
    auto get = [&](const char* k) { return nb::borrow(o.attr("get")(k)); };
    auto num = [&](const char* k, double def) { auto v = get(k); return v.is_none() ? def : nb::cast<double>(v); };
    auto integer = [&](const char* k, long long def) { auto v = get(k); return v.is_none() ? def : nb::cast<long long>(v); };
    auto text = [&](const char* k, const char* def) { auto v = get(k); return v.is_none() ? std::string(def) : nb::cast<std::string>(v); };

    stack::SearchConfig cfg;
    const bool cart = !get("vx_range").is_none() || !get("vy_range").is_none();
    const bool polar = !get("speed_range").is_none() || !get("angle_range").is_none();
    const bool expl = !get("velocities").is_none();
    if (int(cart) + int(polar) + int(expl) != 1)
      throw ConfigError("bank", "give exactly one of vx_range/vy_range, speed_range/angle_range and velocities");
    std::vector<long long> grid{21, 21};
    if (!get("grid").is_none()) {
      if (expl) throw ConfigError("grid", "does not apply to an explicit velocities list");
      nb::object g = get("grid");
      if (nb::isinstance<nb::int_>(g)) grid = {nb::cast<long long>(g), nb::cast<long long>(g)};
      else grid = nb::cast<std::vector<long long>>(g);
      if (grid.size() != 2 || grid[0] < 1 || grid[1] < 1 || grid[0] > 100000 || grid[1] > 100000)
        throw ConfigError("grid", "expected N or (NX, NY) with every N in 1..100000");
    }
    if (cart) {
      if (get("vx_range").is_none() || get("vy_range").is_none())
        throw ConfigError(get("vx_range").is_none() ? "vx_range" : "vy_range", "a Cartesian bank needs both vx_range and vy_range");
      auto [x0, x1] = pair_of(get("vx_range"), "vx_range");
      auto [y0, y1] = pair_of(get("vy_range"), "vy_range");
      cfg.bank = stack::TrajectoryBank::cartesian(x0, x1, int(grid[0]), y0, y1, int(grid[1]));
    } else if (polar) {
      if (get("speed_range").is_none() || get("angle_range").is_none())
        throw ConfigError(get("speed_range").is_none() ? "speed_range" : "angle_range", "a speed x angle bank needs both speed_range and angle_range");
      auto [s0, s1] = pair_of(get("speed_range"), "speed_range");
      auto [a0, a1] = pair_of(get("angle_range"), "angle_range");
      const double d2r = M_PI / 180.0;
      cfg.bank = stack::TrajectoryBank::speed_angle(s0, s1, int(grid[0]), 0.5 * (a0 + a1) * d2r, 0.5 * (a1 - a0) * d2r, int(grid[1]));
    } else {
      nb::tuple v = nb::cast<nb::tuple>(get("velocities"));
      if (v.size() != 2) throw ConfigError("velocities", "expected (vx, vy) arrays");
      cfg.bank = stack::TrajectoryBank::list(nb::cast<std::vector<double>>(v[0]), nb::cast<std::vector<double>>(v[1]));
    }
    if (!get("reference_mjd").is_none()) cfg.reference_mjd = num("reference_mjd", 0);
    if (!get("common_curve").is_none()) {
      nb::tuple c = nb::cast<nb::tuple>(get("common_curve"));
      if (c.size() != 2) throw ConfigError("common_curve", "expected (dx, dy) arrays [pixels]");
      cfg.curve_dx = nb::cast<std::vector<double>>(c[0]);
      cfg.curve_dy = nb::cast<std::vector<double>>(c[1]);
    }
    cfg.encoding = stack::parse_encoding(text("storage", "fp32"), "storage");
    const std::string method = text("method", "tiled");
    if (method != "gather" && method != "tiled" && method != "fourier")
      throw ConfigError("method", "unknown method '" + method + "' (expected gather, tiled or fourier)");
    const std::string backend = text("backend", "cpu");
    const bool gpu = resolve_gpu(backend);
    if (!gpu && method == "fourier" && backend == "cpu")
      throw ConfigError("method", "fourier runs on the GPU only (backend cuda or auto)");
    cfg.backend = !gpu ? stack::Backend::Cpu
                  : method == "gather" ? stack::Backend::GpuGather
                  : method == "fourier" ? stack::Backend::GpuFourier : stack::Backend::GpuTiled;
    if (!get("threshold_sigma").is_none()) {
      cfg.threshold_z = num("threshold_sigma", 0);
      if (!(cfg.threshold_z > 0) || !std::isfinite(cfg.threshold_z))
        throw ConfigError("threshold_sigma", "must be > 0");
    }
    cfg.false_alarms = num("false_alarms", 1.0);
    const long long top_k = integer("top_k", 0);
    if (top_k != 0) {
      if (top_k < 1 || top_k > 16) throw ConfigError("top_k", "must be in 1..16, got " + std::to_string(top_k));
      cfg.mode = stack::ResultMode::TopK;
      cfg.top_k = int(top_k);
    }
    const long long min_obs = integer("min_obs", 1), max_c = integer("max_candidates", 1000000);
    if (min_obs < 0 || min_obs > 1000000) throw ConfigError("min_obs", "must be in 0..1000000");
    if (max_c < 1 || max_c > 100000000) throw ConfigError("max_candidates", "must be in 1..100000000");
    cfg.min_obs = int(min_obs);
    cfg.max_candidates = std::size_t(max_c);
    cfg.cluster.enabled = !nb::cast<bool>(o.attr("get")("no_cluster", false));
    cfg.cluster.radius_px = num("cluster_radius", 2.0);
    if (!(cfg.cluster.radius_px >= 0) || !std::isfinite(cfg.cluster.radius_px))
      throw ConfigError("cluster_radius", "must be >= 0 pixels");
    cfg.threads = int(integer("threads", 0));
    cfg.device = int(integer("device", 0));
    const double mib = num("device_memory", 0);
    if (!(mib >= 0) || !std::isfinite(mib)) throw ConfigError("device_memory", "must be >= 0 MiB");
    cfg.device_memory_limit = static_cast<std::uint64_t>(mib * 1048576.0);
    cfg.check();

    stack::ExposureStack s = load(st, num("psf_sigma", 0), num("fallback_psf_sigma", 0));
    stack::SearchResult r;
    run_engine([&](const JobContext& ctx) {
      const stack::PsiPhi p = gpu ? stack::compute_psiphi_gpu(s, cfg.device, ctx) : stack::compute_psiphi(s, ctx);
      const stack::EncodedPsiPhi enc = stack::encode(p, cfg.encoding);
      const stack::SearchPlan plan = stack::make_plan(cfg, p.mjd, p.width, p.height, ctx);
      r = plan.execute(enc, ctx);
      ctx.check_cancel();
    }, cfg.threads, progress);
    r.provenance.inputs = {s.source};

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
    return nb::make_tuple(d, meta);
  }, nb::arg("stack"), nb::arg("options"), nb::arg("progress").none());
}

}  // namespace almagest::py
