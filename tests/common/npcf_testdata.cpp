#include "npcf_testdata.hpp"

#include <cmath>
#include <numbers>

namespace almagest::test {

namespace {
std::uint64_t splitmix(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

double wrap(double v, double box) {
  v = std::fmod(v, box);
  if (v < 0) v += box;
  if (v >= box) v = 0;  // fmod rounding at the top edge
  return v;
}
}  // namespace

Rng::Rng(std::uint64_t seed) {
  for (auto& s : s_) s = splitmix(seed);
}

std::uint64_t Rng::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
double Rng::normal() {
  double u1 = uniform();
  while (u1 <= 0) u1 = uniform();
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

io::Catalogue uniform_catalogue(std::size_t n, double box, std::uint64_t seed, double wlo,
                                double whi) {
  Rng rng(seed);
  io::Catalogue c;
  c.source = "uniform(seed " + std::to_string(seed) + ")";
  for (std::size_t i = 0; i < n; ++i) {
    c.x.push_back(rng.uniform(0, box));
    c.y.push_back(rng.uniform(0, box));
    c.z.push_back(rng.uniform(0, box));
    c.w.push_back(wlo == whi ? wlo : rng.uniform(wlo, whi));
  }
  return c;
}

io::Catalogue clustered_catalogue(std::size_t n, double box, std::size_t per_cluster, double sigma,
                                  std::uint64_t seed, double wlo, double whi) {
  Rng rng(seed);
  io::Catalogue c;
  c.source = "clustered(seed " + std::to_string(seed) + ")";
  double px = 0, py = 0, pz = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % per_cluster == 0) {
      px = rng.uniform(0, box);
      py = rng.uniform(0, box);
      pz = rng.uniform(0, box);
    }
    c.x.push_back(wrap(px + sigma * rng.normal(), box));
    c.y.push_back(wrap(py + sigma * rng.normal(), box));
    c.z.push_back(wrap(pz + sigma * rng.normal(), box));
    c.w.push_back(wlo == whi ? wlo : rng.uniform(wlo, whi));
  }
  return c;
}

npcf::PointSet clustered_point_set(std::size_t ndata, std::size_t nrandom, double box,
                                   std::uint64_t seed, bool weighted, bool periodic,
                                   std::size_t per_cluster, double sigma) {
  const double wlo = weighted ? 0.5 : 1.0, whi = weighted ? 1.5 : 1.0;
  const io::Catalogue d = clustered_catalogue(ndata, box, per_cluster, sigma, seed, wlo, whi);
  const io::Catalogue r = uniform_catalogue(nrandom, box, seed ^ 0xA5A5A5A5ull, wlo, whi);
  npcf::PointSet p = npcf::make_point_set(d, nrandom > 0 ? &r : nullptr);
  if (periodic) npcf::wrap_periodic(p, box);
  return p;
}

void add_tetrahedron(io::Catalogue& cat, const std::array<std::array<double, 3>, 4>& v,
                     const std::array<double, 3>& origin, Rng& rng) {
  // Random proper rotation from a uniformly random unit quaternion.
  double q[4];
  double norm = 0;
  do {
    norm = 0;
    for (double& x : q) {
      x = rng.normal();
      norm += x * x;
    }
  } while (norm < 1e-12);
  norm = std::sqrt(norm);
  for (double& x : q) x /= norm;
  const double a = q[0], b = q[1], c = q[2], d = q[3];
  const double R[3][3] = {{a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)},
                          {2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b)},
                          {2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d}};
  for (const auto& p : v) {
    double out[3];
    for (int i = 0; i < 3; ++i) out[i] = origin[i] + R[i][0] * p[0] + R[i][1] * p[1] + R[i][2] * p[2];
    cat.x.push_back(out[0]);
    cat.y.push_back(out[1]);
    cat.z.push_back(out[2]);
    cat.w.push_back(1.0);
  }
}

npcf::PointSet mirrored(const npcf::PointSet& p, double box) {
  npcf::PointSet m = p;
  for (double& x : m.x) x = box - x;
  return m;
}

}  // namespace almagest::test
