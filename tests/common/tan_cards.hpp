#pragma once
// FITS header cards of a TAN (gnomonic) WCS, written independently of the engine: reference
// pixel at the image centre, north up, east left, `arcsec` per pixel. Shared by the stack tests
// that need exposures with a WCS (injection candidates, the GUI candidate panel).
#include <cstdio>
#include <string>

namespace almagest::test {

inline std::string tan_cards(double ra, double dec, double arcsec, int w, int h) {
  auto card = [](const std::string& k, const std::string& v) {
    std::string c = k + std::string(8 - k.size(), ' ') + "= " + v;
    return c + std::string(80 - c.size(), ' ');
  };
  char b[64];
  auto num = [&](double v) {
    std::snprintf(b, sizeof b, "%20.12E", v);
    return std::string(b);
  };
  return card("CTYPE1", "'RA---TAN'") + card("CTYPE2", "'DEC--TAN'") + card("CRPIX1", num(0.5 * (w + 1))) +
         card("CRPIX2", num(0.5 * (h + 1))) + card("CRVAL1", num(ra)) + card("CRVAL2", num(dec)) +
         card("CD1_1", num(-arcsec / 3600)) + card("CD1_2", num(0)) + card("CD2_1", num(0)) +
         card("CD2_2", num(arcsec / 3600));
}

}  // namespace almagest::test
