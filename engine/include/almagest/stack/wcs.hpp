#pragma once
// World coordinates for stack pixels through wcslib. Pixels are 0-based with centres at integers
// (FITS pixel = ours + 1). Move-only; not thread-safe for concurrent calls on one object.
#include <memory>
#include <string>
#include <utility>

namespace almagest::stack {

class Wcs {
public:
  /// Parses FITS header cards (80-character records). Throws IoError(source, "WCS") when the
  /// header holds no usable celestial WCS.
  static Wcs from_header(const std::string& cards, const std::string& source);
  Wcs(Wcs&&) noexcept;
  Wcs& operator=(Wcs&&) noexcept;
  ~Wcs();
  /// (RA, Dec) in degrees of 0-based pixel (x, y). Throws IoError when wcslib cannot convert.
  std::pair<double, double> pixel_to_sky(double x, double y) const;

private:
  struct Impl;
  explicit Wcs(std::unique_ptr<Impl>);
  std::unique_ptr<Impl> impl_;
};

}  // namespace almagest::stack
