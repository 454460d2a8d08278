// HEALPix maps and alm in HDF5 (through io::Hdf5Writer / io::Hdf5Reader, atomic writes).
#include "almagest/core/error.hpp"
#include "almagest/io/hdf5_file.hpp"
#include "almagest/sht/alm.hpp"
#include "almagest/sht/healpix_io.hpp"

namespace almagest::sht {

void write_map_hdf5(const std::string& path, const HealpixMap& map) {
  if (map.columns.empty()) throw ConfigError("columns", "map has no columns");
  const std::size_t n = map.columns[0].size();
  std::vector<double> flat;
  flat.reserve(n * map.columns.size());
  for (const auto& c : map.columns) {
    if (c.size() != n) throw ConfigError("columns", "columns differ in length");
    flat.insert(flat.end(), c.begin(), c.end());
  }
  io::Hdf5Writer w(path);
  w.write("/map", flat, {map.columns.size(), n});
  w.attr("/map", "nside", static_cast<std::int64_t>(map.nside));
  w.attr("/map", "ordering", std::string(map.ordering == Ordering::Ring ? "RING" : "NESTED"));
  std::string names;
  for (std::size_t i = 0; i < map.names.size(); ++i) names += (i ? "," : "") + map.names[i];
  w.attr("/map", "names", names);
  w.attr("/map", "coordsys", map.coordsys);
  if (map.partial()) w.write("/pixels", map.pixels);
  w.commit();
}

HealpixMap read_map_hdf5(const std::string& path) {
  io::Hdf5Reader r(path);
  if (!r.exists("/map")) throw IoError(path, "/map", "dataset missing");
  HealpixMap m;
  const auto shape = r.shape("/map");
  if (shape.size() != 2) throw IoError(path, "/map", "expected a 2-D dataset [ncomp][npix]");
  const double ns = r.read_attr_double("/map", "nside");
  m.nside = static_cast<int>(ns);
  const std::string ord = r.read_attr_string("/map", "ordering");
  if (ord == "RING")
    m.ordering = Ordering::Ring;
  else if (ord == "NESTED")
    m.ordering = Ordering::Nested;
  else
    throw IoError(path, "/map/ordering", "unknown ordering '" + ord + "'");
  const std::string names = r.read_attr_string("/map", "names");
  std::size_t p = 0;
  while (p <= names.size() && !names.empty()) {
    const auto q = names.find(',', p);
    m.names.push_back(names.substr(p, q == std::string::npos ? std::string::npos : q - p));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  m.coordsys = r.read_attr_string("/map", "coordsys");
  const auto flat = r.read_double("/map");
  for (std::uint64_t c = 0; c < shape[0]; ++c)
    m.columns.emplace_back(flat.begin() + c * shape[1], flat.begin() + (c + 1) * shape[1]);
  if (r.exists("/pixels")) m.pixels = r.read_int64("/pixels");
  const std::size_t want = m.partial() ? m.pixels.size() : static_cast<std::size_t>(npix_of(m.nside));
  if (shape[1] != want)
    throw IoError(path, "/map", "holds " + std::to_string(shape[1]) + " pixels per column, expected " +
                                    std::to_string(want));
  return m;
}

void write_alm_hdf5(const std::string& path,
                    const std::vector<std::vector<std::complex<double>>>& sets, int lmax) {
  const std::size_t n = alm_size(lmax);
  std::vector<double> flat;
  flat.reserve(2 * n * sets.size());
  for (const auto& s : sets) {
    if (s.size() != n) throw ConfigError("alm", "each alm set needs alm_size(lmax) entries");
    for (const auto& a : s) {
      flat.push_back(a.real());
      flat.push_back(a.imag());
    }
  }
  io::Hdf5Writer w(path);
  w.write("/alm", flat, {sets.size(), n, 2});
  w.attr("/alm", "lmax", static_cast<std::int64_t>(lmax));
  w.attr("/alm", "mmax", static_cast<std::int64_t>(lmax));
  w.attr("/alm", "layout", std::string("healpy triangular: index(l,m) = m(2lmax+1-m)/2 + l; last axis (re, im)"));
  w.commit();
}

std::vector<std::vector<std::complex<double>>> read_alm_hdf5(const std::string& path, int* lmax_out) {
  io::Hdf5Reader r(path);
  if (!r.exists("/alm")) throw IoError(path, "/alm", "dataset missing");
  const auto shape = r.shape("/alm");
  if (shape.size() != 3 || shape[2] != 2) throw IoError(path, "/alm", "expected shape [nsets][nalm][2]");
  const int lmax = static_cast<int>(r.read_attr_double("/alm", "lmax"));
  if (lmax < 0 || alm_size(lmax) != shape[1])
    throw IoError(path, "/alm/lmax", "does not match the dataset length");
  const auto flat = r.read_double("/alm");
  std::vector<std::vector<std::complex<double>>> out(shape[0]);
  for (std::uint64_t s = 0; s < shape[0]; ++s) {
    out[s].resize(shape[1]);
    for (std::uint64_t i = 0; i < shape[1]; ++i)
      out[s][i] = {flat[2 * (s * shape[1] + i)], flat[2 * (s * shape[1] + i) + 1]};
  }
  if (lmax_out) *lmax_out = lmax;
  return out;
}

}  // namespace almagest::sht
