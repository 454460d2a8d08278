// ADES 2022 PSV rows and MPC 80-column lines of candidate tracks (stack/observations.hpp).
#include "almagest/stack/observations.hpp"

#include <cmath>
#include <cstdint>
#include <fmt/format.h>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"

namespace almagest::stack {

namespace {

void check_sky(const std::string& path, const std::vector<CandidateDetail>& details) {
  for (const auto& d : details)
    if (d.ra.size() != d.t.size() || d.dec.size() != d.t.size())
      throw IoError(path, "WCS", "candidate tracks carry no RA/Dec (the stack has no WCS)");
}

/// Pixel scale [arcsec] from consecutive track points of the details (their RA/Dec per pixel of
/// predicted motion), or 1 when no candidate moves.
double scale_of(const std::vector<CandidateDetail>& details, const ObservationOptions& opt) {
  if (opt.pixel_scale_arcsec > 0) return opt.pixel_scale_arcsec;
  constexpr double d2r = 3.14159265358979323846 / 180.0;
  for (const auto& d : details) {
    const double px = std::hypot(d.c.vx, d.c.vy) * (d.t.empty() ? 0.0 : d.t.back() - d.t.front());
    if (d.ra.size() < 2 || !(px > 0.5)) continue;
    const double dra = (d.ra.back() - d.ra.front()) * std::cos(d.dec.front() * d2r), ddec = d.dec.back() - d.dec.front();
    return std::hypot(dra, ddec) * 3600.0 / px;
  }
  return 1.0;
}

}  // namespace

std::string track_id(std::size_t index, const ObservationOptions& opt) {
  std::string prefix = opt.trk_prefix.substr(0, 2);
  std::string digits = std::to_string(index + 1);
  const std::size_t width = 7 - prefix.size();
  if (digits.size() < width) digits = std::string(width - digits.size(), '0') + digits;
  return (prefix + digits).substr(0, 8);
}

void mjd_to_calendar(double mjd, int& year, int& month, double& day) {
  const double fl = std::floor(mjd);
  std::int64_t l = std::int64_t(fl) + 2400001 + 68569;  // Julian day number of the MJD's date
  const std::int64_t n = 4 * l / 146097;
  l = l - (146097 * n + 3) / 4;
  const std::int64_t i = 4000 * (l + 1) / 1461001;
  l = l - 1461 * i / 4 + 31;
  const std::int64_t j = 80 * l / 2447;
  const std::int64_t dd = l - 2447 * j / 80;
  l = j / 11;
  month = int(j + 2 - 12 * l);
  year = int(100 * (n - 49) + i + l);
  day = double(dd) + (mjd - fl);
}

std::string iso_time(double mjd) {
  const std::int64_t ms = std::llround(mjd * 86400000.0);
  const std::int64_t days = ms >= 0 ? ms / 86400000 : -((-ms + 86399999) / 86400000);
  std::int64_t rest = ms - days * 86400000;
  int y = 0, m = 0;
  double d = 0;
  mjd_to_calendar(double(days), y, m, d);
  const int hh = int(rest / 3600000);
  rest -= std::int64_t(hh) * 3600000;
  const int mm = int(rest / 60000);
  rest -= std::int64_t(mm) * 60000;
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z", y, m, int(d), hh, mm, int(rest / 1000), int(rest % 1000));
}

void write_ades_psv(const std::string& path, const std::vector<CandidateDetail>& details, const ObservationOptions& opt) {
  check_sky(path, details);
  const double scale = scale_of(details, opt);
  std::string o = "# version=2022\n# observatory\n! mpcCode " + opt.station + "\n";
  o += "# software\n! objectDetection Almagest shift-and-stack (KBMOD statistic)\n";
  o += "permID|provID|trkSub|mode|stn|obsTime|ra|dec|rmsRA|rmsDec|astCat|remarks\n";
  for (std::size_t i = 0; i < details.size(); ++i) {
    const CandidateDetail& d = details[i];
    const double rms = scale * opt.psf_sigma_px / std::max(1.0, d.c.z);
    const std::string id = track_id(i, opt);
    for (std::size_t e = 0; e < d.t.size(); ++e) {
      if (!d.valid[e]) continue;
      const double ra = std::fmod(std::fmod(d.ra[e], 360.0) + 360.0, 360.0);
      o += fmt::format("||{}|CCD|{}|{}|{:.9f}|{:+.9f}|{:.4f}|{:.4f}|{}|Z={:.2f}\n", id, opt.station, iso_time(opt.reference_mjd + d.t[e]),
                       ra, d.dec[e], rms, rms, opt.ast_cat, d.c.z);
    }
  }
  write_text_atomic(path, o);
}

void write_mpc80(const std::string& path, const std::vector<CandidateDetail>& details, const ObservationOptions& opt) {
  check_sky(path, details);
  std::string o;
  for (std::size_t i = 0; i < details.size(); ++i) {
    const CandidateDetail& d = details[i];
    const std::string id = track_id(i, opt).substr(0, 7);
    for (std::size_t e = 0; e < d.t.size(); ++e) {
      if (!d.valid[e]) continue;
      // Date to 1e-6 day, RA to 1 ms of time, Dec to 0.01 arcsec, each rounded once (with carries).
      const std::int64_t ud = std::llround((opt.reference_mjd + d.t[e]) * 1e6);
      int y = 0, m = 0;
      double day = 0;
      mjd_to_calendar(double(ud / 1000000), y, m, day);
      const std::string date = fmt::format("{:04d} {:02d} {:02d}.{:06d}", y, m, int(day), int(ud % 1000000));
      const double ra = std::fmod(std::fmod(d.ra[e], 360.0) + 360.0, 360.0);
      std::int64_t rms = std::llround(ra / 15.0 * 3600.0 * 1000.0) % (24LL * 3600 * 1000);
      const int rh = int(rms / 3600000);
      rms -= std::int64_t(rh) * 3600000;
      const int rm = int(rms / 60000);
      rms -= std::int64_t(rm) * 60000;
      const std::string ras = fmt::format("{:02d} {:02d} {:02d}.{:03d}", rh, rm, int(rms / 1000), int(rms % 1000));
      std::int64_t cas = std::llround(std::fabs(d.dec[e]) * 3600.0 * 100.0);
      const int dd = int(cas / 360000);
      cas -= std::int64_t(dd) * 360000;
      const int dm = int(cas / 6000);
      cas -= std::int64_t(dm) * 6000;
      const std::string decs = fmt::format("{}{:02d} {:02d} {:02d}.{:02d}", d.dec[e] < 0 ? '-' : '+', dd, dm, int(cas / 100), int(cas % 100));
      std::string line(80, ' ');
      line.replace(5, id.size(), id);
      line[14] = 'C';
      line.replace(15, 17, date);
      line.replace(32, 12, ras);
      line.replace(44, 12, decs);
      line.replace(77, std::min<std::size_t>(3, opt.station.size()), opt.station.substr(0, 3));
      o += line + "\n";
    }
  }
  write_text_atomic(path, o);
}

}  // namespace almagest::stack
