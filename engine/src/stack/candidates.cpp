#include "almagest/stack/candidates.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/stack/wcs.hpp"
#include "parallel.hpp"

namespace almagest::stack {

std::vector<CandidateDetail> describe_candidates(const SearchResult& r, const SearchPlan& plan,
                                                 const ExposureStack& stack, const PsiPhi& p,
                                                 int stamp_radius, const JobContext& ctx) {
  if (stamp_radius < 0) throw ConfigError("stamp_radius", "must be >= 0");
  if (p.width != stack.width || p.height != stack.height || std::size_t(p.n) != stack.size())
    throw IoError(stack.source, "psi/phi", "planes do not match the stack");
  const ShiftTable& s = plan.shifts();
  std::unique_ptr<Wcs> wcs;
  if (!stack.wcs_header.empty()) wcs = std::make_unique<Wcs>(Wcs::from_header(stack.wcs_header, stack.source));
  const int n = p.n, W = p.width, H = p.height, side = 2 * stamp_radius + 1;
  const std::size_t np = p.pixels();
  std::vector<CandidateDetail> out(r.candidates.size());
  // wcslib objects are not shared between threads: sky positions are filled serially below.
  detail::parallel_for(out.size(), 0, ctx, "candidate details", [&](std::size_t ci) {
    CandidateDetail& d = out[ci];
    d.c = r.candidates[ci];
    d.stamp_size = side;
    d.t.resize(n);
    d.px.resize(n);
    d.py.resize(n);
    d.psi.assign(n, 0.0f);
    d.phi.assign(n, 0.0f);
    d.valid.assign(n, 0);
    std::vector<std::vector<float>> pix(std::size_t(side) * side);
    std::vector<double> wsum(std::size_t(side) * side, 0.0), wval(std::size_t(side) * side, 0.0), sum(std::size_t(side) * side, 0.0);
    for (int e = 0; e < n; ++e) {
      d.t[e] = p.mjd[e] - plan.reference_mjd();
      const int x = d.c.x + s.sx[std::size_t(d.c.v) * n + e], y = d.c.y + s.sy[std::size_t(d.c.v) * n + e];
      d.px[e] = x;
      d.py[e] = y;
      if (x >= 0 && x < W && y >= 0 && y < H) {
        const std::size_t i = std::size_t(e) * np + std::size_t(y) * W + x;
        d.psi[e] = p.psi[i];
        d.phi[e] = p.phi[i];
        d.valid[e] = p.phi[i] > 0;
      }
      for (int v = -stamp_radius; v <= stamp_radius; ++v)
        for (int u = -stamp_radius; u <= stamp_radius; ++u) {
          const int xx = x + u, yy = y + v;
          if (xx < 0 || xx >= W || yy < 0 || yy >= H) continue;
          const std::size_t i = std::size_t(e) * np + std::size_t(yy) * W + xx;
          const float sv = stack.sci[i], vv = stack.var[i];
          if (stack.mask[i] || !std::isfinite(sv) || !(vv > 0)) continue;
          const std::size_t k = std::size_t(v + stamp_radius) * side + (u + stamp_radius);
          pix[k].push_back(sv);
          sum[k] += sv;
          wsum[k] += 1.0 / vv;
          wval[k] += sv / vv;
        }
    }
    d.stamp_sum.assign(std::size_t(side) * side, 0.0f);
    d.stamp_mean.assign(std::size_t(side) * side, 0.0f);
    d.stamp_median.assign(std::size_t(side) * side, 0.0f);
    d.stamp_weighted.assign(std::size_t(side) * side, 0.0f);
    for (std::size_t k = 0; k < pix.size(); ++k) {
      auto& v = pix[k];
      if (v.empty()) continue;
      d.stamp_sum[k] = float(sum[k]);
      d.stamp_mean[k] = float(sum[k] / v.size());
      const std::size_t m = v.size() / 2;
      std::nth_element(v.begin(), v.begin() + m, v.end());
      double med = v[m];
      if (v.size() % 2 == 0) med = 0.5 * (med + *std::max_element(v.begin(), v.begin() + m));
      d.stamp_median[k] = float(med);
      d.stamp_weighted[k] = float(wval[k] / wsum[k]);
    }
  });
  if (wcs)
    for (auto& d : out) {
      d.ra.resize(n);
      d.dec.resize(n);
      for (int e = 0; e < n; ++e) {
        // Continuous predicted position (before nearest-pixel rounding) gives the sky track.
        const double x = d.c.x + d.c.vx * d.t[e] + (plan.config().curve_dx.empty() ? 0.0 : plan.config().curve_dx[e]);
        const double y = d.c.y + d.c.vy * d.t[e] + (plan.config().curve_dy.empty() ? 0.0 : plan.config().curve_dy[e]);
        std::tie(d.ra[e], d.dec[e]) = wcs->pixel_to_sky(x, y);
      }
    }
  return out;
}

void write_candidates_ecsv(const std::string& path, const SearchResult& r, const std::vector<CandidateDetail>& details) {
  const bool sky = !details.empty() && details.size() == r.candidates.size() && !details[0].ra.empty();
  std::ostringstream o;
  o.precision(10);
  o << "# %ECSV 1.0\n# ---\n# delimiter: ','\n# datatype:\n";
  const char* cols[][3] = {{"x", "int32", "pix"}, {"y", "int32", "pix"}, {"v", "int32", ""}, {"vx", "float64", "pix / d"},
                           {"vy", "float64", "pix / d"}, {"z", "float64", ""}, {"flux", "float64", ""}, {"a", "float32", ""},
                           {"b", "float32", ""}, {"obs", "int32", ""}, {"members", "int32", ""}};
  for (auto& c : cols) {
    o << "# - {name: " << c[0] << ", datatype: " << c[1];
    if (c[2][0]) o << ", unit: " << c[2];
    o << "}\n";
  }
  if (sky) o << "# - {name: ra, datatype: float64, unit: deg}\n# - {name: dec, datatype: float64, unit: deg}\n";
  o << "# meta: !!omap\n";
  o << "# - {threshold_z: " << r.threshold_z << "}\n";
  o << "# - {digest_sum_a: " << r.digest.sum_a << "}\n# - {digest_sum_b: " << r.digest.sum_b << "}\n";
  o << "# - {digest_max_z: " << r.digest.max_z << "}\n# - {digest_count_above: " << r.digest.count_above << "}\n";
  o << "# - {backend: " << r.backend << "}\n# - {exact_scores: " << (r.exact ? "true" : "false") << "}\n";
  o << "# - {truncated: " << (r.truncated ? "true" : "false") << "}\n";
  std::string prov = r.provenance.to_json();
  std::string esc;
  for (char ch : prov) {
    if (ch == '\'') esc += "''";
    else esc += ch;
  }
  o << "# - {provenance: '" << esc << "'}\n";
  o << "x,y,v,vx,vy,z,flux,a,b,obs,members" << (sky ? ",ra,dec" : "") << "\n";
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    const Candidate& c = r.candidates[i];
    o << c.x << ',' << c.y << ',' << c.v << ',' << c.vx << ',' << c.vy << ',' << c.z << ',' << c.flux << ',' << c.a << ',' << c.b
      << ',' << c.obs << ',' << c.members;
    if (sky) {
      // reference time: the exposure closest to t = 0
      const auto& d = details[i];
      std::size_t best = 0;
      for (std::size_t e = 1; e < d.t.size(); ++e)
        if (std::fabs(d.t[e]) < std::fabs(d.t[best])) best = e;
      o << ',' << d.ra[best] << ',' << d.dec[best];
    }
    o << '\n';
  }
  write_text_atomic(path, o.str());
}

namespace {
template <class T>
void h5w(hid_t loc, const std::string& file, const std::string& name, hid_t type, const std::vector<T>& v,
         std::vector<hsize_t> dims) {
  if (dims.empty()) dims = {v.size()};
  const hid_t sp = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
  const hid_t ds = H5Dcreate2(loc, name.c_str(), type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const herr_t st = ds < 0 ? -1 : H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.empty() ? nullptr : v.data());
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(sp);
  if (st < 0) throw IoError(file, name, "cannot write dataset");
}
void h5a(hid_t loc, const char* name, double v) {
  const hid_t sp = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(loc, name, H5T_NATIVE_DOUBLE, sp, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_DOUBLE, &v);
  H5Aclose(a);
  H5Sclose(sp);
}
void h5s(hid_t loc, const char* name, const std::string& v) {
  const hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, std::max<std::size_t>(1, v.size()));
  const hid_t sp = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(loc, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, t, v.c_str());
  H5Aclose(a);
  H5Sclose(sp);
  H5Tclose(t);
}
}  // namespace

void write_result_hdf5(const std::string& path, const SearchResult& r, const std::vector<CandidateDetail>& details) {
  AtomicFile af(path);
  {
    const hid_t f = H5Fcreate(af.temp_path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) throw IoError(path, "", "cannot create HDF5 file");
    try {
      const hid_t g = H5Gcreate2(f, "candidates", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      std::vector<std::int32_t> x, y, v, obs, mem;
      std::vector<double> vx, vy, z, flux;
      std::vector<float> a, b;
      for (const auto& c : r.candidates) {
        x.push_back(c.x); y.push_back(c.y); v.push_back(c.v); obs.push_back(c.obs); mem.push_back(c.members);
        vx.push_back(c.vx); vy.push_back(c.vy); z.push_back(c.z); flux.push_back(c.flux); a.push_back(c.a); b.push_back(c.b);
      }
      h5w(g, path, "x", H5T_NATIVE_INT32, x, {}); h5w(g, path, "y", H5T_NATIVE_INT32, y, {});
      h5w(g, path, "v", H5T_NATIVE_INT32, v, {}); h5w(g, path, "obs", H5T_NATIVE_INT32, obs, {});
      h5w(g, path, "members", H5T_NATIVE_INT32, mem, {}); h5w(g, path, "vx", H5T_NATIVE_DOUBLE, vx, {});
      h5w(g, path, "vy", H5T_NATIVE_DOUBLE, vy, {}); h5w(g, path, "z", H5T_NATIVE_DOUBLE, z, {});
      h5w(g, path, "flux", H5T_NATIVE_DOUBLE, flux, {}); h5w(g, path, "a", H5T_NATIVE_FLOAT, a, {});
      h5w(g, path, "b", H5T_NATIVE_FLOAT, b, {});
      H5Gclose(g);
      h5a(f, "threshold_z", r.threshold_z);
      h5a(f, "digest_sum_a", r.digest.sum_a);
      h5a(f, "digest_sum_b", r.digest.sum_b);
      h5a(f, "digest_max_z", r.digest.max_z);
      h5a(f, "digest_count_above", double(r.digest.count_above));
      h5s(f, "backend", r.backend);
      h5s(f, "provenance", r.provenance.to_json());
      if (!details.empty()) {
        const hsize_t nc = details.size(), ne = details[0].t.size(), side = details[0].stamp_size;
        std::vector<float> psi, phi, ss, sm, smed, sw;
        std::vector<std::uint8_t> valid;
        std::vector<std::int32_t> tx, ty;
        std::vector<double> ra, dec;
        for (const auto& d : details) {
          if (d.t.size() != ne || hsize_t(d.stamp_size) != side) throw IoError(path, "details", "candidate details differ in shape");
          psi.insert(psi.end(), d.psi.begin(), d.psi.end()); phi.insert(phi.end(), d.phi.begin(), d.phi.end());
          valid.insert(valid.end(), d.valid.begin(), d.valid.end());
          tx.insert(tx.end(), d.px.begin(), d.px.end()); ty.insert(ty.end(), d.py.begin(), d.py.end());
          ra.insert(ra.end(), d.ra.begin(), d.ra.end()); dec.insert(dec.end(), d.dec.begin(), d.dec.end());
          ss.insert(ss.end(), d.stamp_sum.begin(), d.stamp_sum.end()); sm.insert(sm.end(), d.stamp_mean.begin(), d.stamp_mean.end());
          smed.insert(smed.end(), d.stamp_median.begin(), d.stamp_median.end());
          sw.insert(sw.end(), d.stamp_weighted.begin(), d.stamp_weighted.end());
        }
        const hid_t gc = H5Gcreate2(f, "curves", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        h5w(gc, path, "psi", H5T_NATIVE_FLOAT, psi, {nc, ne}); h5w(gc, path, "phi", H5T_NATIVE_FLOAT, phi, {nc, ne});
        h5w(gc, path, "valid", H5T_NATIVE_UINT8, valid, {nc, ne}); h5w(gc, path, "t", H5T_NATIVE_DOUBLE, details[0].t, {ne});
        H5Gclose(gc);
        const hid_t gt = H5Gcreate2(f, "tracks", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        h5w(gt, path, "x", H5T_NATIVE_INT32, tx, {nc, ne}); h5w(gt, path, "y", H5T_NATIVE_INT32, ty, {nc, ne});
        if (ra.size() == nc * ne) {
          h5w(gt, path, "ra", H5T_NATIVE_DOUBLE, ra, {nc, ne});
          h5w(gt, path, "dec", H5T_NATIVE_DOUBLE, dec, {nc, ne});
        }
        H5Gclose(gt);
        const hid_t gs = H5Gcreate2(f, "stamps", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        h5w(gs, path, "sum", H5T_NATIVE_FLOAT, ss, {nc, side, side}); h5w(gs, path, "mean", H5T_NATIVE_FLOAT, sm, {nc, side, side});
        h5w(gs, path, "median", H5T_NATIVE_FLOAT, smed, {nc, side, side});
        h5w(gs, path, "weighted", H5T_NATIVE_FLOAT, sw, {nc, side, side});
        H5Gclose(gs);
      }
    } catch (...) {
      H5Fclose(f);
      throw;
    }
    if (H5Fclose(f) < 0) throw IoError(path, "", "cannot close HDF5 file");
  }
  af.commit();
}

}  // namespace almagest::stack
