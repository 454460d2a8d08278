#include "almagest/stack/candidates.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/stack/wcs.hpp"
#include "core/parallel.hpp"

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
  // Every candidate inside the image with a bank index of the plan: a table read back may hold
  // anything (x near INT_MIN overflowed the track arithmetic below). Positions are then bounded
  // by the image and the shift table's |shift| <= 1e9, so 64-bit sums cannot overflow.
  for (std::size_t ci = 0; ci < r.candidates.size(); ++ci) {
    const Candidate& c = r.candidates[ci];
    const std::string row = "candidate " + std::to_string(ci + 1);
    if (c.x < 0 || c.x >= W) throw ConfigError(row + ": x", "origin x = " + std::to_string(c.x) + " is outside the image (0.." + std::to_string(W - 1) + ")");
    if (c.y < 0 || c.y >= H) throw ConfigError(row + ": y", "origin y = " + std::to_string(c.y) + " is outside the image (0.." + std::to_string(H - 1) + ")");
    if (c.v < 0 || c.v >= s.n_vel) throw ConfigError(row + ": v", "bank index " + std::to_string(c.v) + " is outside the plan's bank (0.." + std::to_string(s.n_vel - 1) + ")");
  }
  if (s.n_exp != n) throw ConfigError("plan", "the plan's shift table is for " + std::to_string(s.n_exp) + " exposures, the planes hold " + std::to_string(n));
  std::vector<CandidateDetail> out(r.candidates.size());
  // wcslib objects are not shared between threads: sky positions are filled serially below.
  parallel::parallel_for(out.size(), 0, ctx, "candidate details", [&](std::size_t ci) {
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
      const std::int64_t x = std::int64_t(d.c.x) + s.sx[std::size_t(d.c.v) * n + e],
                         y = std::int64_t(d.c.y) + s.sy[std::size_t(d.c.v) * n + e];
      d.px[e] = std::int32_t(x);  // |x| < 2^31: origin inside the image, |shift| <= 1e9
      d.py[e] = std::int32_t(y);
      if (x >= 0 && x < W && y >= 0 && y < H) {
        const std::size_t i = std::size_t(e) * np + std::size_t(y) * W + x;
        d.psi[e] = p.psi[i];
        d.phi[e] = p.phi[i];
        d.valid[e] = p.phi[i] > 0;
      }
      for (int v = -stamp_radius; v <= stamp_radius; ++v)
        for (int u = -stamp_radius; u <= stamp_radius; ++u) {
          const std::int64_t xx = x + u, yy = y + v;
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
    if (s.fractional()) {
      // The curve the fractional sums add: bilinear samples with the corrected B.
      trajectory_curve(p, s, plan.config().psf_rho, d.c.x, d.c.y, d.c.v, d.psi.data(), d.phi.data());
      for (int e = 0; e < n; ++e) d.valid[e] = d.phi[e] > 0.0f;
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
  const bool groups = r.filtered && r.groups.size() == r.candidates.size();
  if (groups)
    o << "# - {name: vx_spread, datatype: float64, unit: pix / d}\n# - {name: vy_spread, datatype: float64, unit: pix / d}\n"
         "# - {name: clipped, datatype: int32}\n# - {name: vx_fit, datatype: float64, unit: pix / d}\n"
         "# - {name: vy_fit, datatype: float64, unit: pix / d}\n";
  o << "# meta: !!omap\n";
  o << "# - {threshold_z: " << r.threshold_z << "}\n";
  o << "# - {digest_sum_a: " << r.digest.sum_a << "}\n# - {digest_sum_b: " << r.digest.sum_b << "}\n";
  o << "# - {digest_max_z: " << r.digest.max_z << "}\n# - {digest_count_above: " << r.digest.count_above << "}\n";
  o << "# - {backend: " << r.backend << "}\n# - {exact_scores: " << (r.exact ? "true" : "false") << "}\n";
  o << "# - {truncated: " << (r.truncated ? "true" : "false") << "}\n";
  if (r.filtered) {
    // What every filter removed (stack/filters.hpp), also in the provenance's log.
    const FilterReport& f = r.filters;
    o << "# - {filter_input: " << f.input << "}\n# - {filter_removed_observations: " << f.observations << "}\n";
    o << "# - {filter_removed_sigma_g: " << f.sigma_g << "}\n# - {filter_merged_duplicates: " << f.merged << "}\n";
    o << "# - {filter_removed_stationary: " << f.stationary << "}\n# - {filter_removed_stamps: " << f.stamps << "}\n";
    o << "# - {filter_output: " << f.output << "}\n";
    std::string fc;
    for (char ch : f.config_json) fc += ch == '\'' ? std::string("''") : std::string(1, ch);
    o << "# - {filter_config: '" << fc << "'}\n";
  }
  std::string prov = r.provenance.to_json();
  std::string esc;
  for (char ch : prov) {
    if (ch == '\'') esc += "''";
    else esc += ch;
  }
  o << "# - {provenance: '" << esc << "'}\n";
  o << "x,y,v,vx,vy,z,flux,a,b,obs,members" << (sky ? ",ra,dec" : "") << (groups ? ",vx_spread,vy_spread,clipped,vx_fit,vy_fit" : "") << "\n";
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
    if (groups)
      o << ',' << r.groups[i].vx_spread << ',' << r.groups[i].vy_spread << ',' << r.groups[i].epochs_clipped << ','
        << r.groups[i].vx_fit << ',' << r.groups[i].vy_fit;
    o << '\n';
  }
  write_text_atomic(path, o.str());
}

void write_result_hdf5(const std::string& path, const SearchResult& r, const std::vector<CandidateDetail>& details) {
  // Through io::Hdf5Writer (atomic, built in memory: a full disk is one IoError and no file).
  io::Hdf5Writer w(path);
  std::vector<std::int32_t> x, y, v, obs, mem;
  std::vector<double> vx, vy, z, flux;
  std::vector<float> a, b;
  for (const auto& c : r.candidates) {
    x.push_back(c.x); y.push_back(c.y); v.push_back(c.v); obs.push_back(c.obs); mem.push_back(c.members);
    vx.push_back(c.vx); vy.push_back(c.vy); z.push_back(c.z); flux.push_back(c.flux); a.push_back(c.a); b.push_back(c.b);
  }
  w.create_group("/candidates");
  w.write("/candidates/x", x); w.write("/candidates/y", y);
  w.write("/candidates/v", v); w.write("/candidates/obs", obs);
  w.write("/candidates/members", mem); w.write("/candidates/vx", vx);
  w.write("/candidates/vy", vy); w.write("/candidates/z", z);
  w.write("/candidates/flux", flux); w.write("/candidates/a", a);
  w.write("/candidates/b", b);
  w.attr("/", "threshold_z", r.threshold_z);
  w.attr("/", "digest_sum_a", r.digest.sum_a);
  w.attr("/", "digest_sum_b", r.digest.sum_b);
  w.attr("/", "digest_max_z", r.digest.max_z);
  w.attr("/", "digest_count_above", double(r.digest.count_above));
  w.attr_fixed("/", "backend", r.backend);
  w.attr_fixed("/", "provenance", r.provenance.to_json());
  if (r.filtered && r.groups.size() == r.candidates.size()) {
    // The filters' counts and, per candidate, the merged members (CSR: /members/start [n + 1]).
    const FilterReport& f = r.filters;
    w.create_group("/filters");
    w.attr("/filters", "input", double(f.input));
    w.attr("/filters", "removed_observations", double(f.observations));
    w.attr("/filters", "removed_sigma_g", double(f.sigma_g));
    w.attr("/filters", "merged_duplicates", double(f.merged));
    w.attr("/filters", "removed_stationary", double(f.stationary));
    w.attr("/filters", "removed_stamps", double(f.stamps));
    w.attr("/filters", "output", double(f.output));
    w.attr_fixed("/filters", "config", f.config_json);
    std::vector<double> sx, sy, zu, fx, fy;
    std::vector<std::int32_t> clipped, start{0}, mx, my, mv;
    std::vector<double> mz;
    for (const auto& g : r.groups) {
      sx.push_back(g.vx_spread);
      sy.push_back(g.vy_spread);
      zu.push_back(g.z_unclipped);
      fx.push_back(g.vx_fit);
      fy.push_back(g.vy_fit);
      clipped.push_back(g.epochs_clipped);
      for (const auto& m : g.members) {
        mx.push_back(m.x);
        my.push_back(m.y);
        mv.push_back(m.v);
        mz.push_back(m.z);
      }
      start.push_back(std::int32_t(mx.size()));
    }
    w.write("/candidates/vx_spread", sx);
    w.write("/candidates/vy_spread", sy);
    w.write("/candidates/z_unclipped", zu);
    w.write("/candidates/vx_fit", fx);
    w.write("/candidates/vy_fit", fy);
    w.write("/candidates/clipped", clipped);
    w.create_group("/members");
    w.write("/members/start", start);
    w.write("/members/x", mx);
    w.write("/members/y", my);
    w.write("/members/v", mv);
    w.write("/members/z", mz);
  }
  if (!details.empty()) {
    const std::uint64_t nc = details.size(), ne = details[0].t.size(), side = std::uint64_t(details[0].stamp_size);
    std::vector<float> psi, phi, ss, sm, smed, sw;
    std::vector<std::uint8_t> valid;
    std::vector<std::int32_t> tx, ty;
    std::vector<double> ra, dec;
    for (const auto& d : details) {
      if (d.t.size() != ne || std::uint64_t(d.stamp_size) != side) throw IoError(path, "details", "candidate details differ in shape");
      psi.insert(psi.end(), d.psi.begin(), d.psi.end()); phi.insert(phi.end(), d.phi.begin(), d.phi.end());
      valid.insert(valid.end(), d.valid.begin(), d.valid.end());
      tx.insert(tx.end(), d.px.begin(), d.px.end()); ty.insert(ty.end(), d.py.begin(), d.py.end());
      ra.insert(ra.end(), d.ra.begin(), d.ra.end()); dec.insert(dec.end(), d.dec.begin(), d.dec.end());
      ss.insert(ss.end(), d.stamp_sum.begin(), d.stamp_sum.end()); sm.insert(sm.end(), d.stamp_mean.begin(), d.stamp_mean.end());
      smed.insert(smed.end(), d.stamp_median.begin(), d.stamp_median.end());
      sw.insert(sw.end(), d.stamp_weighted.begin(), d.stamp_weighted.end());
    }
    w.create_group("/curves");
    w.write("/curves/psi", psi, {nc, ne}); w.write("/curves/phi", phi, {nc, ne});
    w.write("/curves/valid", valid, {nc, ne}); w.write("/curves/t", details[0].t, {ne});
    w.create_group("/tracks");
    w.write("/tracks/x", tx, {nc, ne}); w.write("/tracks/y", ty, {nc, ne});
    if (ra.size() == nc * ne) {
      w.write("/tracks/ra", ra, {nc, ne});
      w.write("/tracks/dec", dec, {nc, ne});
    }
    w.create_group("/stamps");
    w.write("/stamps/sum", ss, {nc, side, side}); w.write("/stamps/mean", sm, {nc, side, side});
    w.write("/stamps/median", smed, {nc, side, side});
    w.write("/stamps/weighted", sw, {nc, side, side});
  }
  w.commit();
}

}  // namespace almagest::stack
