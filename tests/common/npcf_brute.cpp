#include "npcf_brute.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <numbers>
#include <sstream>
#include <string>

#include "almagest/npcf/configurations.hpp"

namespace almagest::test {

using npcf::NpcfConfig;
using npcf::PointSet;
using npcf::Statistic;

namespace {

/// Minimum-image separation vector j - i (coordinates are assumed wrapped into [0, L)).
void separation(const PointSet& p, const NpcfConfig& c, std::size_t i, std::size_t j, double d[3]) {
  d[0] = p.x[j] - p.x[i];
  d[1] = p.y[j] - p.y[i];
  d[2] = p.z[j] - p.z[i];
  if (!c.periodic) return;
  for (int a = 0; a < 3; ++a) {
    if (d[a] > 0.5 * c.box)
      d[a] -= c.box;
    else if (d[a] < -0.5 * c.box)
      d[a] += c.box;
  }
}

/// Unit vector of the centre of the direction pixel of d (theta = acos(dz/|d|) in ntheta bins
/// of [0, pi], phi = atan2(dy, dx) in nphi bins of [-pi, pi)), written from the conventions note.
void pixel_direction(const double d[3], int ntheta, int nphi, double u[3]) {
  const double pi = std::numbers::pi;
  const double len = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
  const double theta = std::acos(std::clamp(d[2] / len, -1.0, 1.0));
  const double phi = std::atan2(d[1], d[0]);
  const int it = std::clamp(static_cast<int>(std::floor(theta / pi * ntheta)), 0, ntheta - 1);
  const int ip = std::clamp(static_cast<int>(std::floor((phi + pi) / (2 * pi) * nphi)), 0, nphi - 1);
  const double tc = (it + 0.5) * pi / ntheta;
  const double pc = -pi + (ip + 0.5) * 2 * pi / nphi;
  u[0] = std::sin(tc) * std::cos(pc);
  u[1] = std::sin(tc) * std::sin(pc);
  u[2] = std::cos(tc);
}

struct Pairs {
  std::size_t n = 0;
  std::vector<int> bin;        // n*n, -1: no edge
  std::vector<double> u;       // n*n*3: unit spoke i -> j (exact or pixel centre)
  int at(std::size_t i, std::size_t j) const { return bin[i * n + j]; }
  const double* spoke(std::size_t i, std::size_t j) const { return &u[3 * (i * n + j)]; }
};

Pairs all_pairs(const PointSet& p, const NpcfConfig& c, bool spokes) {
  Pairs P;
  P.n = p.size();
  P.bin.assign(P.n * P.n, -1);
  if (spokes) P.u.assign(3 * P.n * P.n, 0.0);
  const double r2min = c.bins.rmin * c.bins.rmin, r2max = c.bins.rmax * c.bins.rmax;
  for (std::size_t i = 0; i < P.n; ++i)
    for (std::size_t j = i + 1; j < P.n; ++j) {
      double d[3];
      separation(p, c, i, j, d);
      const double d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      if (!(r2min < d2 && d2 < r2max)) continue;
      P.bin[i * P.n + j] = P.bin[j * P.n + i] = c.bins.bin_of(std::sqrt(d2));
      if (spokes) {
        double* u = &P.u[3 * (i * P.n + j)];
        if (c.directions == npcf::DirectionMode::Exact) {
          const double len = std::sqrt(d2);
          for (int a = 0; a < 3; ++a) u[a] = d[a] / len;
        } else {
          pixel_direction(d, c.pixel_ntheta, c.pixel_nphi, u);
        }
      }
    }
  return P;
}

void init(BruteResult& b, std::size_t rows, bool odd) {
  auto& r = b.result;
  r.tuples.assign(rows, 0);
  r.random_tuples.assign(rows, 0);
  r.n.assign(rows, 0.0);
  r.r.assign(rows, 0.0);
  b.abs_n.assign(rows, 0.0);
  if (odd) {
    r.n_odd.assign(rows, 0.0);
    r.r_odd.assign(rows, 0.0);
    r.degenerate.assign(rows, 0);
    b.abs_odd.assign(rows, 0.0);
  }
}

void add(BruteResult& b, std::size_t row, double prod, bool all_random, double random_sign) {
  auto& r = b.result;
  ++r.tuples[row];
  r.n[row] += prod;
  b.abs_n[row] += std::fabs(prod);
  if (all_random) {
    ++r.random_tuples[row];
    r.r[row] += random_sign * prod;
  }
}

}  // namespace

BruteResult brute_force_npcf(const PointSet& p, const NpcfConfig& c) {
  BruteResult out;
  auto& res = out.result;
  res.config = c;
  res.statistic = c.statistic;
  res.ndata = p.ndata;
  res.nrandom = p.size() - p.ndata;
  const int nb = c.bins.nbins;
  const std::size_t N = p.size();
  const std::size_t nd = p.ndata;
  const bool parity = c.statistic == Statistic::FourPointParity;
  const Pairs P = all_pairs(p, c, parity);

  if (c.statistic == Statistic::TwoPoint) {
    res.order = 2;
    res.edges_per_row = 1;
    init(out, static_cast<std::size_t>(nb), false);
    for (int b = 0; b < nb; ++b) res.bins.push_back(static_cast<std::uint8_t>(b));
    for (std::size_t i = 0; i < N; ++i)
      for (std::size_t j = i + 1; j < N; ++j) {
        const int b = P.at(i, j);
        if (b >= 0) add(out, static_cast<std::size_t>(b), p.w[i] * p.w[j], i >= nd, +1.0);
      }
    return out;
  }

  if (c.statistic == Statistic::ThreePoint || c.statistic == Statistic::ThreePointEquilateral) {
    const bool equi = c.statistic == Statistic::ThreePointEquilateral;
    res.order = 3;
    res.edges_per_row = 3;
    std::map<std::array<int, 3>, std::size_t> row_of;
    for (int b1 = 0; b1 < nb; ++b1)
      for (int b2 = b1; b2 < nb; ++b2)
        for (int b3 = b2; b3 < nb; ++b3) {
          if (equi && !(b1 == b2 && b2 == b3)) continue;
          row_of[{b1, b2, b3}] = row_of.size();
          for (int b : {b1, b2, b3}) res.bins.push_back(static_cast<std::uint8_t>(b));
        }
    init(out, row_of.size(), false);
    for (std::size_t i = 0; i < N; ++i)
      for (std::size_t j = i + 1; j < N; ++j) {
        if (P.at(i, j) < 0) continue;
        for (std::size_t k = j + 1; k < N; ++k) {
          if (P.at(i, k) < 0 || P.at(j, k) < 0) continue;
          std::array<int, 3> t{P.at(i, j), P.at(i, k), P.at(j, k)};
          std::sort(t.begin(), t.end());
          auto it = row_of.find(t);
          if (it == row_of.end()) continue;  // equilateral mode: other shapes are not counted
          add(out, it->second, p.w[i] * p.w[j] * p.w[k], i >= nd, -1.0);  // (-1)^3
        }
      }
    return out;
  }

  // 4pCF: rows = all canonical tuples, sorted lexicographically.
  res.order = 4;
  res.edges_per_row = 6;
  std::size_t raw_total = 1;
  for (int e = 0; e < 6; ++e) raw_total *= static_cast<std::size_t>(nb);
  std::map<std::array<int, 6>, std::size_t> row_of;
  for (std::size_t code = 0; code < raw_total; ++code) {
    std::array<int, 6> t{};
    std::size_t rest = code;
    for (int e = 5; e >= 0; --e) {
      t[e] = static_cast<int>(rest % static_cast<std::size_t>(nb));
      rest /= static_cast<std::size_t>(nb);
    }
    int s;
    row_of.emplace(npcf::TetraTable::canonicalise(t, s), 0);
  }
  std::size_t rows = 0;
  for (auto& [t, r] : row_of) {
    r = rows++;
    for (int b : t) res.bins.push_back(static_cast<std::uint8_t>(b));
  }
  init(out, rows, parity);
  for (std::size_t i = 0; i < N; ++i)
    for (std::size_t j = i + 1; j < N; ++j) {
      if (P.at(i, j) < 0) continue;
      for (std::size_t k = j + 1; k < N; ++k) {
        if (P.at(i, k) < 0 || P.at(j, k) < 0) continue;
        for (std::size_t l = k + 1; l < N; ++l) {
          if (P.at(i, l) < 0 || P.at(j, l) < 0 || P.at(k, l) < 0) continue;
          const std::array<int, 6> raw{P.at(i, j), P.at(i, k), P.at(i, l),
                                       P.at(j, k), P.at(j, l), P.at(k, l)};
          int sign;
          const std::size_t row = row_of.at(npcf::TetraTable::canonicalise(raw, sign));
          const double prod = p.w[i] * p.w[j] * p.w[k] * p.w[l];
          const bool all_random = i >= nd;
          add(out, row, prod, all_random, +1.0);  // (-1)^4
          if (!parity) continue;
          const double* a = P.spoke(i, j);
          const double* b = P.spoke(i, k);
          const double* cc = P.spoke(i, l);
          const double cx = a[1] * b[2] - a[2] * b[1];
          const double cy = a[2] * b[0] - a[0] * b[2];
          const double cz = a[0] * b[1] - a[1] * b[0];
          const double v = cx * cc[0] + cy * cc[1] + cz * cc[2];
          if (std::fabs(v) < 1e-9) {
            ++res.degenerate[row];
            continue;
          }
          const double odd = sign * (v > 0 ? 1.0 : -1.0) * prod;
          res.n_odd[row] += odd;
          out.abs_odd[row] += std::fabs(odd);
          if (all_random) res.r_odd[row] += odd;
        }
      }
    }
  return out;
}

std::string compare_with_brute(const npcf::NpcfResult& e, const BruteResult& b, double rel) {
  const auto& x = b.result;
  std::ostringstream msg;
  msg.precision(17);
  if (e.bins != x.bins) return "bin rows differ";
  if (e.tuples.size() != x.tuples.size()) return "row counts differ";
  auto close = [rel](double u, double v, double scale) {
    return std::fabs(u - v) <= rel * (scale + std::fabs(v));
  };
  const bool parity = !x.n_odd.empty();
  if (parity && (e.n_odd.size() != x.n_odd.size() || e.r_odd.size() != x.r_odd.size() ||
                 e.degenerate.size() != x.degenerate.size()))
    return "engine result lacks the odd channel";
  for (std::size_t k = 0; k < x.tuples.size(); ++k) {
    if (e.tuples[k] != x.tuples[k])
      msg << "row " << k << ": tuples " << e.tuples[k] << " vs brute " << x.tuples[k];
    else if (e.random_tuples[k] != x.random_tuples[k])
      msg << "row " << k << ": random tuples " << e.random_tuples[k] << " vs " << x.random_tuples[k];
    else if (!close(e.n[k], x.n[k], b.abs_n[k]))
      msg << "row " << k << ": n " << e.n[k] << " vs " << x.n[k];
    else if (!close(e.r[k], x.r[k], b.abs_n[k]))
      msg << "row " << k << ": r " << e.r[k] << " vs " << x.r[k];
    else if (parity && e.degenerate[k] != x.degenerate[k])
      msg << "row " << k << ": degenerate " << e.degenerate[k] << " vs " << x.degenerate[k];
    else if (parity && !close(e.n_odd[k], x.n_odd[k], b.abs_odd[k]))
      msg << "row " << k << ": n_odd " << e.n_odd[k] << " vs " << x.n_odd[k];
    else if (parity && !close(e.r_odd[k], x.r_odd[k], b.abs_odd[k]))
      msg << "row " << k << ": r_odd " << e.r_odd[k] << " vs " << x.r_odd[k];
    if (!msg.str().empty()) return msg.str();
  }
  return {};
}

}  // namespace almagest::test
