#pragma once
// Data and randoms must sample the same volume: randoms over a larger (or shifted) volume than
// the data bias every estimator (xi levels off at the volume ratio instead of 0), silently.
// volumeMismatch() compares the catalogues' bounding boxes and says which axis differs.
#include <QString>

#include <array>

#include "almagest/io/catalogue.hpp"

namespace almagest::ui {

struct BoundingBox {
  std::array<double, 3> lo{0, 0, 0}, hi{0, 0, 0};
  bool empty = true;
};

/// Bounding box of the catalogue's (x, y, z) (empty for no points; non-finite values skipped).
BoundingBox boundingBox(const almagest::io::Catalogue& c);

/// Empty when every face of the data's box lies within `tolerance` (a fraction of the randoms'
/// extent on that axis) of the randoms' box; else a one-line warning naming the axis, the two
/// ranges and the volume ratio.
QString volumeMismatch(const almagest::io::Catalogue& data, const almagest::io::Catalogue& randoms,
                       double tolerance = 0.05);

}  // namespace almagest::ui
