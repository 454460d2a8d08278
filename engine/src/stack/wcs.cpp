#include "almagest/stack/wcs.hpp"

#include <wcslib/wcs.h>
#include <wcslib/wcsfix.h>
#include <wcslib/wcshdr.h>

#include <vector>

#include "almagest/core/error.hpp"

namespace almagest::stack {

struct Wcs::Impl {
  wcsprm* wcs = nullptr;
  int nwcs = 0;
  std::string source;
  ~Impl() {
    if (wcs) wcsvfree(&nwcs, &wcs);
  }
};

Wcs::Wcs(std::unique_ptr<Impl> p) : impl_(std::move(p)) {}
Wcs::Wcs(Wcs&&) noexcept = default;
Wcs& Wcs::operator=(Wcs&&) noexcept = default;
Wcs::~Wcs() = default;

Wcs Wcs::from_header(const std::string& cards, const std::string& source) {
  if (cards.empty() || cards.size() % 80 != 0)
    throw IoError(source, "WCS", "header text must be whole 80-character cards");
  auto impl = std::make_unique<Impl>();
  impl->source = source;
  int nreject = 0;
  std::string copy = cards;
  const int st = wcspih(copy.data(), int(copy.size() / 80), WCSHDR_all, 0, &nreject, &impl->nwcs, &impl->wcs);
  if (st != 0 || impl->nwcs < 1) throw IoError(source, "WCS", "wcslib could not parse the header (wcspih status " + std::to_string(st) + ")");
  int stat[NWCSFIX];
  wcsfix(7, nullptr, impl->wcs, stat);
  if (wcsset(impl->wcs) != 0 || impl->wcs->lng < 0 || impl->wcs->lat < 0)
    throw IoError(source, "WCS", "the header holds no celestial WCS (CTYPE1/CTYPE2)");
  return Wcs(std::move(impl));
}

std::pair<double, double> Wcs::pixel_to_sky(double x, double y) const {
  wcsprm* w = impl_->wcs;
  std::vector<double> pix(w->naxis, 1.0), img(w->naxis), world(w->naxis);
  pix[0] = x + 1.0;
  pix[1] = y + 1.0;
  double phi = 0, theta = 0;
  int stat = 0;
  if (wcsp2s(w, 1, w->naxis, pix.data(), img.data(), &phi, &theta, world.data(), &stat) != 0)
    throw IoError(impl_->source, "WCS", "pixel (" + std::to_string(x) + ", " + std::to_string(y) + ") has no sky position");
  return {world[w->lng], world[w->lat]};
}

}  // namespace almagest::stack
