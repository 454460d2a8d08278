#pragma once
// A configuration drawn to scale: vertices of the triangle (3pCF) or tetrahedron (4pCF) whose
// sides are the bin centres of a row, the signed volume, and a mirror image. Qt- and VTK-free
// so that it is tested on its own (tests/ui/test_npcf_scene.cpp).
//  - Triangle: sorted sides r1 <= r2 <= r3 (the 3pCF forgets which side is which): A at the
//    origin, B = (r1, 0, 0), C in the xy plane with |AC| = r2, |BC| = r3.
//  - Tetrahedron: edges in edge order (12, 13, 14, 23, 24, 34), vertex 1 (the hub) at the
//    origin, 2 on +x, 3 in the xy plane (y > 0), 4 above it (z > 0: right-handed, V > 0) or,
//    mirrored, below it (V < 0). V = v2 . (v3 x v4) / 6, the parity convention's handedness.
// A row whose sides cannot close (triangle inequality, Cayley-Menger determinant) is flagged
// `realisable = false`; its vertices are the closest flat placement (clamped), for display.
#include <array>
#include <vector>

namespace almagest::ui {

struct ConfigurationGeometry {
  std::vector<std::array<double, 3>> vertices;      ///< 3 or 4
  std::vector<std::array<int, 2>> edges;            ///< vertex pairs, in the row's edge order
  std::vector<double> lengths;                      ///< target length of each edge
  double signed_volume = 0;                         ///< tetrahedra; 0 for triangles
  bool realisable = true;
};

/// RGB (0..1) of radial bin b among n bins: one ramp for every view (edges, annuli, neighbours).
std::array<double, 3> bin_colour(int b, int n);

ConfigurationGeometry triangle_geometry(std::array<double, 3> sides);
ConfigurationGeometry tetrahedron_geometry(const std::array<double, 6>& edges, bool mirror = false);

}  // namespace almagest::ui
