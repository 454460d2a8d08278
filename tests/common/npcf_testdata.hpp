#pragma once
// Seeded synthetic catalogues for the N-point tests: clustered data (Neyman-Scott: Gaussian
// clusters around uniform parents), uniform randoms, and planted tetrahedra. Deterministic for a
// given seed on every platform (own generator arithmetic, no std distributions).
#include <array>
#include <cstdint>
#include <vector>

#include "almagest/io/catalogue.hpp"
#include "almagest/npcf/points.hpp"

namespace almagest::test {

/// splitmix64-seeded xoshiro256** generator with portable uniform and normal draws.
class Rng {
public:
  explicit Rng(std::uint64_t seed);
  std::uint64_t next();
  double uniform();                      ///< [0, 1)
  double uniform(double lo, double hi);  ///< [lo, hi)
  double normal();                       ///< standard normal (Box-Muller)

private:
  std::array<std::uint64_t, 4> s_{};
};

/// Uniform points in [0, box)^3 with weights uniform in [wlo, whi] (1 when wlo == whi == 1).
io::Catalogue uniform_catalogue(std::size_t n, double box, std::uint64_t seed, double wlo = 1.0,
                                double whi = 1.0);

/// Neyman-Scott clustered points in [0, box)^3: n/per_cluster parents uniform, children Gaussian
/// (sigma per axis) around them, wrapped periodically into the box; weights uniform in [wlo, whi].
io::Catalogue clustered_catalogue(std::size_t n, double box, std::size_t per_cluster, double sigma,
                                  std::uint64_t seed, double wlo = 1.0, double whi = 1.0);

/// Data (clustered) plus randoms (uniform) as a point set; wrapped when periodic.
npcf::PointSet clustered_point_set(std::size_t ndata, std::size_t nrandom, double box,
                                   std::uint64_t seed, bool weighted = true, bool periodic = false,
                                   std::size_t per_cluster = 8, double sigma = 3.0);

/// Appends a tetrahedron with vertices v[0..3] (offsets) placed at `origin`, rotated by a random
/// rotation (proper, det +1, so handedness is preserved) drawn from rng.
void add_tetrahedron(io::Catalogue& cat, const std::array<std::array<double, 3>, 4>& v,
                     const std::array<double, 3>& origin, Rng& rng);

/// Mirror image of a point set: x -> box - x (handedness reversed).
npcf::PointSet mirrored(const npcf::PointSet& p, double box);

}  // namespace almagest::test
