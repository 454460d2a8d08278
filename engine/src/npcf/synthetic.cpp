// Seeded synthetic catalogues (see synthetic.hpp for the reproducibility contract).
#include "almagest/npcf/synthetic.hpp"

#include <cmath>
#include <numbers>
#include <string>

#include "almagest/core/error.hpp"

namespace almagest::npcf::synthetic {

Rng::Rng(std::uint64_t seed) : engine_(seed) {}

std::uint64_t Rng::next() { return engine_(); }

double Rng::uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  const double u1 = 1.0 - uniform();  // (0, 1]: log is finite
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double a = 2.0 * std::numbers::pi * u2;
  spare_ = r * std::sin(a);
  has_spare_ = true;
  return r * std::cos(a);
}

namespace {

void check_box(double box) {
  if (!(box > 0) || !std::isfinite(box))
    throw ConfigError("box", "synthetic catalogues need a finite box side > 0");
}

double wrap(double v, double box) {
  double y = v - box * std::floor(v / box);
  if (y >= box || y < 0) y = 0;
  return y;
}

void reserve(io::Catalogue& c, std::size_t n) {
  c.x.reserve(n);
  c.y.reserve(n);
  c.z.reserve(n);
  c.w.reserve(n);
}

}  // namespace

io::Catalogue uniform(std::size_t n, double box, std::uint64_t seed) {
  check_box(box);
  Rng rng(seed);
  io::Catalogue c;
  reserve(c, n);
  for (std::size_t i = 0; i < n; ++i) {
    c.x.push_back(box * rng.uniform());
    c.y.push_back(box * rng.uniform());
    c.z.push_back(box * rng.uniform());
    c.w.push_back(1.0);
  }
  c.source = "synthetic:uniform(n=" + std::to_string(n) + ",seed=" + std::to_string(seed) + ")";
  return c;
}

io::Catalogue neyman_scott(std::size_t n_points, int children_per_parent, double sigma, double box,
                           std::uint64_t seed) {
  check_box(box);
  if (children_per_parent < 1)
    throw ConfigError("children_per_parent", "must be >= 1");
  if (!(sigma >= 0) || !std::isfinite(sigma)) throw ConfigError("sigma", "must be finite and >= 0");
  Rng rng(seed);
  io::Catalogue c;
  reserve(c, n_points);
  const std::size_t per = static_cast<std::size_t>(children_per_parent);
  while (c.x.size() < n_points) {
    const double px = box * rng.uniform(), py = box * rng.uniform(), pz = box * rng.uniform();
    for (std::size_t k = 0; k < per && c.x.size() < n_points; ++k) {
      const double dx = sigma * rng.normal();
      const double dy = sigma * rng.normal();
      const double dz = sigma * rng.normal();
      c.x.push_back(wrap(px + dx, box));
      c.y.push_back(wrap(py + dy, box));
      c.z.push_back(wrap(pz + dz, box));
      c.w.push_back(1.0);
    }
  }
  c.source = "synthetic:neyman-scott(n=" + std::to_string(n_points) +
             ",children=" + std::to_string(children_per_parent) + ",sigma=" +
             std::to_string(sigma) + ",seed=" + std::to_string(seed) + ")";
  return c;
}

CataloguePair benchmark_catalogues(std::size_t n_total, std::uint64_t seed, double box) {
  CataloguePair p;
  const std::size_t nd = n_total / 3;
  p.data = neyman_scott(nd, 10, 5.0, box, seed);
  p.randoms = uniform(n_total - nd, box, seed ^ 0x9E3779B97F4A7C15ull);
  return p;
}

}  // namespace almagest::npcf::synthetic
