// almagest SHT bindings: Plan over sht::ShtPlan with NumPy / DLPack host arrays in and out
// (out= writes into the caller's buffer without a copy), spectra, beams, HEALPix file I/O.
#include <nanobind/ndarray.h>
#include <nanobind/stl/complex.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <mutex>
#include <type_traits>

#include "almagest/core/error.hpp"
#include "almagest/sht/healpix_io.hpp"
#include "almagest/sht/plan.hpp"
#include "almagest/sht/spectra.hpp"
#include "engine_call.hpp"

namespace almagest::py {

namespace {

using sht::Complex;
template <class T>
using HostIn = nb::ndarray<const T, nb::c_contig, nb::device::cpu>;
template <class T>
using HostOut = nb::ndarray<T, nb::c_contig, nb::device::cpu>;

const char* dtype_name(const Complex*) { return "complex128"; }
const char* dtype_name(const double*) { return "float64"; }
const char* dtype_name(const std::int64_t*) { return "int64"; }

std::string py_type_name(nb::handle h) { return nb::cast<std::string>(nb::str(h.type().attr("__name__"))); }

bool is_device_array(nb::handle obj) {
  nb::ndarray<> any;
  return nb::try_cast(obj, any, false) && any.device_type() != nb::device::cpu::value;
}

/// Host-only paths (map2alm, inverse, smooth, ...) take device arrays through an explicit copy.
void refuse_device(nb::handle obj, const std::string& name) {
  if (is_device_array(obj))
    throw ConfigError(name, "a device array was given to a host-only operation; synthesis and adjoint take "
                            "device arrays (DLPack), the others need host arrays (x.get() / x.cpu().numpy())");
}

template <class T>
using DeviceArray = nb::ndarray<T, nb::c_contig>;

/// A C-contiguous device array of T (no conversion: device data are never copied implicitly).
template <class T>
DeviceArray<T> device_array(nb::handle obj, const std::string& name) {
  DeviceArray<T> a;
  if (!nb::try_cast(obj, a, false) || a.device_type() == nb::device::cpu::value)
    throw ConfigError(name, std::string("expected a C-contiguous ") + dtype_name((const T*)nullptr) +
                                " device array (like the input), got " + py_type_name(obj));
  return a;
}

/// A new device array shaped `shape` of `dtype`, from the library of `like` (CuPy or PyTorch).
nb::object device_empty_like(nb::handle like, const std::vector<std::size_t>& shape, const char* dtype) {
  const std::string mod = nb::cast<std::string>(nb::str(like.type().attr("__module__")));
  nb::list dims;
  for (auto d : shape) dims.append(d);
  if (mod.rfind("cupy", 0) == 0) {
    nb::object cp = nb::module_::import_("cupy");
    return cp.attr("empty")(nb::tuple(dims), nb::arg("dtype") = dtype);
  }
  if (mod.rfind("torch", 0) == 0) {
    nb::object torch = nb::module_::import_("torch");
    return torch.attr("empty")(nb::tuple(dims), nb::arg("dtype") = torch.attr(dtype),
                               nb::arg("device") = like.attr("device"));
  }
  throw ConfigError("out", "give out= (a device array of the result's shape) for device arrays of " + mod);
}

/// An input array: any DLPack / buffer-protocol host array of the right dtype and C order is
/// used in place; anything else (other dtype or order, lists) is converted by NumPy once.
template <class T>
HostIn<T> host_in(nb::handle obj, const std::string& name) {
  refuse_device(obj, name);
  HostIn<T> a;
  if (nb::try_cast(obj, a, true)) return a;
  try {
    nb::object np = nb::module_::import_("numpy");
    nb::object conv = np.attr("ascontiguousarray")(obj, nb::arg("dtype") = dtype_name((const T*)nullptr));
    if (nb::try_cast(conv, a, false)) return a;
  } catch (nb::python_error&) {
  }
  throw ConfigError(name, std::string("expected a ") + dtype_name((const T*)nullptr) +
                              " array, got " + py_type_name(obj));
}

/// Checks that `a` is [..., (ncomp,) len] and returns the number of columns.
template <class A>
std::size_t columns_of(const A& a, int ncomp, std::size_t len, const std::string& name,
                       const char* what) {
  const std::size_t nd = a.ndim();
  if (nd == 0 || a.shape(nd - 1) != len)
    throw ConfigError(name, "last axis must hold the " + std::string(what) + " (" +
                                std::to_string(len) + " entries), got shape of " +
                                std::to_string(nd) + " dims ending in " +
                                (nd ? std::to_string(a.shape(nd - 1)) : std::string("nothing")));
  if (ncomp == 2 && (nd < 2 || a.shape(nd - 2) != 2))
    throw ConfigError(name, "a spin-2 plan takes [..., 2, " + std::to_string(len) +
                                "] arrays (E, B or Q, U)");
  return a.size() / (len * static_cast<std::size_t>(ncomp));
}

struct Plan {
  sht::ShtPlan plan;
  mutable std::mutex mu;  // the device plan is not thread-safe; Python threads may share a Plan

  /// Output of `len` entries per component for an input of shape `in`: out= (checked, written in
  /// place) or a new NumPy array. Calls fn(out_span) with the GIL released.
  template <class T, class In, class F>
  nb::object with_output(const In& in, std::size_t len, nb::handle out, const char* what, F&& fn,
                         int threads) const {
    std::vector<std::size_t> shape(in.ndim());
    for (std::size_t i = 0; i < in.ndim(); ++i) shape[i] = in.shape(i);
    shape.back() = len;
    std::size_t total = 1;
    for (auto s : shape) total *= s;
    if (!out.is_none()) {
      refuse_device(out, "out");
      HostOut<T> o;
      if (!nb::try_cast(out, o, false))
        throw ConfigError("out", std::string("must be a writable C-contiguous ") +
                                     dtype_name((const T*)nullptr) + " host array, got " +
                                     py_type_name(out));
      bool same = o.ndim() == shape.size();
      for (std::size_t i = 0; same && i < shape.size(); ++i) same = o.shape(i) == shape[i];
      if (!same) throw ConfigError("out", std::string("has the wrong shape for the ") + what);
      T* p = o.data();
      run_engine([&](const JobContext& ctx) { fn(std::span<T>(p, total), ctx); }, threads);
      return nb::borrow(out);
    }
    T* p = new T[total]();
    nb::capsule owner(p, [](void* q) noexcept { delete[] static_cast<T*>(q); });
    run_engine([&](const JobContext& ctx) { fn(std::span<T>(p, total), ctx); }, threads);
    return nb::cast(nb::ndarray<nb::numpy, T>(p, shape.size(), shape.data(), owner));
  }

  int threads() const { return plan.config().threads; }

  /// Device arrays in and out (DLPack, CUDA): the result goes into `out` (or a new array of the
  /// input's library) with no host copy; the returned object is `out` itself.
  template <class TI, class TO>
  nb::object on_device(nb::handle in, nb::handle out, std::size_t in_len, std::size_t out_len, const char* in_name,
                       const char* out_dtype, bool synth) const {
    auto a = device_array<const TI>(in, in_name);
    const std::size_t ncols = columns_of(a, plan.ncomp(), in_len, in_name, synth ? "alm" : "map pixels");
    std::vector<std::size_t> shape(a.ndim());
    for (std::size_t i = 0; i < a.ndim(); ++i) shape[i] = a.shape(i);
    shape.back() = out_len;
    nb::object result = out.is_none() ? device_empty_like(in, shape, out_dtype) : nb::borrow(out);
    auto o = device_array<TO>(result, "out");
    bool same = o.ndim() == shape.size();
    for (std::size_t i = 0; same && i < shape.size(); ++i) same = o.shape(i) == shape[i];
    if (!same) throw ConfigError("out", std::string("has the wrong shape for the ") + (synth ? "map" : "alm"));
    const TI* pin = a.data();
    TO* pout = o.data();
    run_engine([&](const JobContext& ctx) {
      std::lock_guard<std::mutex> lk(mu);
      if constexpr (std::is_same_v<TI, Complex>) plan.synthesis_device(pin, pout, int(ncols), ctx);
      else plan.adjoint_device(pin, pout, int(ncols), ctx);
    }, threads());
    return result;
  }

  nb::object synthesis(nb::handle alm, nb::handle out) const {
    if (is_device_array(alm)) return on_device<Complex, double>(alm, out, plan.nalm(), plan.map_size(), "alm", "float64", true);
    auto a = host_in<Complex>(alm, "alm");
    columns_of(a, plan.ncomp(), plan.nalm(), "alm", "alm (alm_size(lmax))");
    std::span<const Complex> in(a.data(), a.size());
    return with_output<double>(a, plan.map_size(), out, "map", [&](std::span<double> m, const JobContext& ctx) {
      std::lock_guard<std::mutex> lk(mu);
      plan.synthesis(in, m, ctx);
    }, threads());
  }
  nb::object adjoint(nb::handle map, nb::handle out) const {
    if (is_device_array(map)) return on_device<double, Complex>(map, out, plan.map_size(), plan.nalm(), "map", "complex128", false);
    auto a = host_in<double>(map, "map");
    columns_of(a, plan.ncomp(), plan.map_size(), "map", "map pixels");
    std::span<const double> in(a.data(), a.size());
    return with_output<Complex>(a, plan.nalm(), out, "alm", [&](std::span<Complex> s, const JobContext& ctx) {
      std::lock_guard<std::mutex> lk(mu);
      plan.adjoint(in, s, ctx);
    }, threads());
  }
};

std::vector<double> optional_weights(nb::handle h, const char* name) {
  if (h.is_none()) return {};
  auto a = host_in<double>(h, name);
  return std::vector<double>(a.data(), a.data() + a.size());
}

int lmax_of_size(std::size_t n, const std::string& name) {
  int l = static_cast<int>(std::floor((std::sqrt(8.0 * double(n) + 1.0) - 3.0) / 2.0 + 0.5));
  if (l < 0 || sht::alm_size(l) != n)
    throw ConfigError(name, std::to_string(n) + " entries is not alm_size(lmax) for any lmax");
  return l;
}

}  // namespace

void bind_sht(nb::module_& m) {
  m.attr("SHT_DEVICE_ARRAYS") = true;  // synthesis and adjoint take DLPack device arrays

  nb::class_<Plan>(m, "ShtPlan",
                   "HEALPix RING spherical harmonic transform plan (sht::ShtPlan). alm: complex128 "
                   "[..., (2,) alm_size(lmax)] in healpy layout; maps: float64 [..., (2,) npix]; "
                   "leading axes are columns.")
      .def("__init__", [](Plan* self, int nside, int lmax, int spin, int batch,
                          const std::string& backend, int threads, int device,
                          nb::handle observed_pixels) {
        sht::ShtConfig c;
        c.nside = nside;
        c.lmax = lmax;
        c.spin = spin;
        c.batch = batch;
        c.backend = sht::backend_from_string(backend);
        c.threads = threads;
        c.device = device;
        if (!observed_pixels.is_none()) {
          auto p = host_in<std::int64_t>(observed_pixels, "observed_pixels");
          c.observed_pixels.assign(p.data(), p.data() + p.size());
        }
        std::optional<sht::ShtPlan> plan;
        run_engine([&](const JobContext&) { plan.emplace(sht::make_plan(c)); }, threads);
        new (self) Plan{std::move(*plan), {}};
      }, nb::arg("nside"), nb::kw_only(), nb::arg("lmax") = -1, nb::arg("spin") = 0,
         nb::arg("batch") = 1, nb::arg("backend") = "cpu", nb::arg("threads") = 0,
         nb::arg("device") = 0, nb::arg("observed_pixels").none() = nb::none())
      .def_prop_ro("nside", [](const Plan& p) { return p.plan.nside(); })
      .def_prop_ro("lmax", [](const Plan& p) { return p.plan.lmax(); })
      .def_prop_ro("spin", [](const Plan& p) { return p.plan.spin(); })
      .def_prop_ro("ncomp", [](const Plan& p) { return p.plan.ncomp(); })
      .def_prop_ro("nalm", [](const Plan& p) { return p.plan.nalm(); })
      .def_prop_ro("map_size", [](const Plan& p) { return p.plan.map_size(); })
      .def_prop_ro("backend", [](const Plan& p) { return sht::to_string(p.plan.backend()); })
      .def_prop_ro("device", [](const Plan& p) { return p.plan.device(); })
      .def_prop_ro("config_json", [](const Plan& p) { return p.plan.config().to_json(); })
      .def("synthesis", &Plan::synthesis, nb::arg("alm"), nb::kw_only(), nb::arg("out").none() = nb::none(),
           "map = Y alm (healpy alm2map).")
      .def("adjoint", &Plan::adjoint, nb::arg("map"), nb::kw_only(), nb::arg("out").none() = nb::none(),
           "alm = Y^T map, the exact transpose (no quadrature weights).")
      .def("inverse", [](const Plan& p, nb::handle map, double epsilon, int max_iterations,
                         nb::handle out, bool return_report) {
        auto a = host_in<double>(map, "map");
        columns_of(a, p.plan.ncomp(), p.plan.map_size(), "map", "map pixels");
        std::span<const double> in(a.data(), a.size());
        sht::InverseReport rep;
        nb::object alm = p.with_output<Complex>(a, p.plan.nalm(), out, "alm",
            [&](std::span<Complex> s, const JobContext& ctx) {
              std::lock_guard<std::mutex> lk(p.mu);
              rep = p.plan.inverse(in, s, sht::InverseOptions{epsilon, max_iterations}, ctx);
            }, p.threads());
        if (!return_report) return alm;
        nb::dict d;
        d["iterations"] = rep.iterations;
        d["residual"] = rep.residual;
        d["normal_residual"] = rep.normal_residual;
        return nb::object(nb::make_tuple(alm, d));
      }, nb::arg("map"), nb::kw_only(), nb::arg("epsilon") = 1e-10, nb::arg("max_iterations") = 1000,
         nb::arg("out").none() = nb::none(), nb::arg("return_report") = false,
         "Least-squares inverse by CGLS; raises NotConverged rather than return an unconverged answer.")
      .def("map2alm", [](const Plan& p, nb::handle map, std::optional<int> iterations,
                         nb::handle ring_weights, nb::handle pixel_weights, nb::handle out) {
        auto a = host_in<double>(map, "map");
        columns_of(a, p.plan.ncomp(), p.plan.map_size(), "map", "map pixels");
        std::span<const double> in(a.data(), a.size());
        auto rw = optional_weights(ring_weights, "ring_weights");
        auto pw = optional_weights(pixel_weights, "pixel_weights");
        const int it = iterations ? *iterations : (pw.empty() ? 3 : 0);
        return p.with_output<Complex>(a, p.plan.nalm(), out, "alm",
            [&](std::span<Complex> s, const JobContext& ctx) {
              std::lock_guard<std::mutex> lk(p.mu);
              sht::map2alm_weighted(p.plan, in, s, it, rw, pw, ctx);
            }, p.threads());
      }, nb::arg("map"), nb::kw_only(), nb::arg("iterations").none() = nb::none(),
         nb::arg("ring_weights").none() = nb::none(), nb::arg("pixel_weights").none() = nb::none(),
         nb::arg("out").none() = nb::none(),
         "healpy map2alm: iterations default 3 (0 with pixel_weights, which take none).")
      .def("smooth", [](const Plan& p, nb::handle map, double fwhm, std::optional<int> iterations,
                        nb::handle ring_weights, nb::handle pixel_weights, nb::handle out) {
        auto a = host_in<double>(map, "map");
        columns_of(a, p.plan.ncomp(), p.plan.map_size(), "map", "map pixels");
        std::span<const double> in(a.data(), a.size());
        auto rw = optional_weights(ring_weights, "ring_weights");
        auto pw = optional_weights(pixel_weights, "pixel_weights");
        const int it = iterations ? *iterations : (pw.empty() ? 3 : 0);
        return p.with_output<double>(a, p.plan.map_size(), out, "map",
            [&](std::span<double> s, const JobContext& ctx) {
              std::lock_guard<std::mutex> lk(p.mu);
              sht::smooth_map(p.plan, in, s, fwhm, it, ctx, rw, pw);
            }, p.threads());
      }, nb::arg("map"), nb::arg("fwhm"), nb::kw_only(), nb::arg("iterations").none() = nb::none(),
         nb::arg("ring_weights").none() = nb::none(), nb::arg("pixel_weights").none() = nb::none(),
         nb::arg("out").none() = nb::none(),
         "healpy smoothing with a Gaussian beam of FWHM `fwhm` radians.");

  m.def("alm2cl", [](nb::handle alm, nb::handle alm2) -> nb::object {
    auto a = host_in<Complex>(alm, "alm");
    if (a.ndim() == 2 && a.shape(0) == 3 && alm2.is_none()) {  // (T, E, B): healpy's six spectra
      const std::size_t n = a.shape(1);
      const int lmax = lmax_of_size(n, "alm");
      sht::PolSpectra s = sht::alm2cl_pol({a.data(), n}, {a.data() + n, n}, {a.data() + 2 * n, n}, lmax);
      return nb::cast(std::vector<std::vector<double>>{s.tt, s.ee, s.bb, s.te, s.eb, s.tb});
    }
    if (a.ndim() != 1) throw ConfigError("alm", "expected one alm vector or a (3, nalm) T, E, B array");
    const int lmax = lmax_of_size(a.size(), "alm");
    if (alm2.is_none()) return nb::cast(sht::alm2cl({a.data(), a.size()}, {a.data(), a.size()}, lmax));
    auto b = host_in<Complex>(alm2, "alm2");
    if (b.size() != a.size()) throw ConfigError("alm2", "must have the size of alm");
    return nb::cast(sht::alm2cl({a.data(), a.size()}, {b.data(), b.size()}, lmax));
  }, nb::arg("alm"), nb::arg("alm2").none() = nb::none(),
     "C_l (a list per spectrum; numpy.asarray it). (3, nalm) input: TT, EE, BB, TE, EB, TB.");
  m.def("gauss_beam", &sht::gauss_beam, nb::arg("fwhm"), nb::arg("lmax"), nb::arg("pol") = false);
  m.def("almxfl", [](nb::handle alm, nb::handle fl) {
    auto a = host_in<Complex>(alm, "alm");
    const int lmax = lmax_of_size(a.size(), "alm");
    auto f = host_in<double>(fl, "fl");
    if (f.size() != static_cast<std::size_t>(lmax) + 1) throw ConfigError("fl", "must hold lmax + 1 values");
    std::vector<Complex> out(a.data(), a.data() + a.size());
    sht::almxfl(out, lmax, {f.data(), f.size()});
    return out;
  }, nb::arg("alm"), nb::arg("fl"), "alm_lm * fl[l] (a new list of complex; numpy.asarray it).");

  m.def("read_healpix_map", [](const std::string& path, int hdu) {
    sht::HealpixMap h;
    {
      nb::gil_scoped_release g;
      h = sht::read_healpix_map(path, true, hdu);
    }
    nb::dict d;
    d["nside"] = h.nside;
    d["names"] = h.names;
    d["columns"] = h.columns;
    d["pixels"] = h.pixels;
    return d;
  }, nb::arg("path"), nb::arg("hdu") = 1, "A HEALPix FITS map in RING order (dict of lists).");
  m.def("read_alm", [](const std::string& path, int hdu) {
    nb::gil_scoped_release g;
    return sht::read_alm(path, hdu);
  }, nb::arg("path"), nb::arg("hdu") = 1);
  m.def("write_alm", [](const std::string& path, nb::handle alm) {
    auto a = host_in<Complex>(alm, "alm");
    const std::size_t n = a.shape(a.ndim() - 1);
    const int lmax = lmax_of_size(n, "alm");
    std::vector<std::vector<Complex>> sets;
    for (std::size_t i = 0; i < a.size() / n; ++i) sets.emplace_back(a.data() + i * n, a.data() + (i + 1) * n);
    nb::gil_scoped_release g;
    sht::write_alm(path, sets, lmax);
  }, nb::arg("path"), nb::arg("alm"), "Writes alm sets (rows of the last axis) as healpy FITS.");
}

}  // namespace almagest::py
