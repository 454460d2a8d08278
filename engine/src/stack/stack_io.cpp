// Exposure-stack readers and writers: KBMOD WorkUnit FITS, one MEF file per exposure, and the
// Almagest HDF5 cube (layout in stack_io.hpp / docs/stack.md).
#include "almagest/stack/stack_io.hpp"

#include <fitsio.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <limits>

#include "almagest/core/atomic_file.hpp"
#include "almagest/core/error.hpp"
#include "almagest/io/fits_file.hpp"
#include "almagest/io/hdf5_file.hpp"

namespace almagest::stack {
namespace fs = std::filesystem;

namespace {

std::string fits_msg(int status) { return io::fits_status_text(status); }

/// The stack's view of io::FitsFile (literal names, checksums verified on every HDU visited,
/// image sizes checked against the file before they are allocated).
struct Fits {
  io::FitsFile file;
  fitsfile* f = nullptr;
  std::string path;  ///< the name in messages (a writer's destination, not its temporary)
  /// READONLY opens `p`; otherwise creates it (replacing the writer's empty temporary).
  Fits(const std::string& p, int mode, const std::string& shown = {})
      : file(mode == READONLY ? io::FitsFile::open(p, false, shown) : io::FitsFile::create(p, shown)),
        f(file.get()),
        path(file.name()) {}
  void close() {
    f = nullptr;
    file.close();
  }
  bool move_to(const std::string& extname) { return file.try_move_named(extname, extname); }
  /// Reads the current image HDU as float (null pixels NaN); returns (width, height).
  std::pair<int, int> read_image(std::vector<float>& out, const std::string& field) {
    const io::FitsImageShape shape = file.image_shape(field);  // NAXISn x BITPIX fit in the file
    if (shape.dims.size() != 2)
      throw IoError(path, field, "expected a 2-D image, found " + std::to_string(shape.dims.size()) + " axes");
    if (shape.dims[0] > std::numeric_limits<int>::max() || shape.dims[1] > std::numeric_limits<int>::max())
      throw IoError(path, field, "image of " + std::to_string(shape.dims[0]) + " x " +
                                     std::to_string(shape.dims[1]) + " pixels is too large");
    out = file.read_image_float(shape, std::nanf(""), field);
    return {int(shape.dims[0]), int(shape.dims[1])};
  }
  /// False when the keyword is absent; an unreadable value is an IoError naming it.
  bool read_double_key(const char* key, double& v) { return file.read_key(key, v); }
  std::string header_cards() {
    int st = 0, n = 0;
    char* h = nullptr;
    fits_hdr2str(f, 1, nullptr, 0, &h, &n, &st);
    std::string s = (st == 0 && h) ? std::string(h) : std::string();
    if (h) fits_free_memory(h, &st);
    return s;
  }
  void write_image(const float* data, int w, int h, const std::string& extname, int bitpix = FLOAT_IMG, int type = TFLOAT) {
    int st = 0;
    long naxes[2] = {w, h};
    fits_create_img(f, bitpix, 2, naxes, &st);
    if (!extname.empty()) fits_write_key(f, TSTRING, "EXTNAME", const_cast<char*>(extname.c_str()), nullptr, &st);
    fits_write_img(f, type, 1, LONGLONG(w) * h, const_cast<float*>(data), &st);
    if (st) throw IoError(path, extname, "cannot write image: " + fits_msg(st));
  }
};

Psf psf_from(const std::vector<float>& k, int w, int h, const std::string& file, const std::string& field) {
  if (w != h || w % 2 == 0)
    throw IoError(file, field, "PSF must be an odd square kernel, got " + std::to_string(w) + " x " + std::to_string(h));
  Psf p;
  p.size = w;
  p.kernel = k;
  return p;
}

void append_exposure(ExposureStack& s, const std::vector<float>& sci, int w, int h, const std::vector<float>& var,
                     int vw, int vh, const std::vector<float>& msk, int mw, int mh, const std::string& file,
                     const std::string& tag) {
  if (s.size() == 0) {
    s.width = w;
    s.height = h;
  }
  if (w != s.width || h != s.height)
    throw IoError(file, "SCI" + tag, "image is " + std::to_string(w) + " x " + std::to_string(h) + ", earlier exposures are " +
                                         std::to_string(s.width) + " x " + std::to_string(s.height));
  if (vw != w || vh != h) throw IoError(file, "VAR" + tag, "variance plane shape differs from the science plane");
  if (!msk.empty() && (mw != w || mh != h)) throw IoError(file, "MSK" + tag, "mask plane shape differs from the science plane");
  s.sci.insert(s.sci.end(), sci.begin(), sci.end());
  s.var.insert(s.var.end(), var.begin(), var.end());
  if (msk.empty()) s.mask.insert(s.mask.end(), sci.size(), 0);
  else for (float m : msk) s.mask.push_back(m > 0 ? 1 : 0);
}

/// Why a FITS file is not a WorkUnit: what a stack must be, then what this file holds (its HDUs
/// and the primary HDU's image shape), so that a plain image opened as a stack says so.
std::string not_a_workunit(Fits& f, double numimg) {
  std::string found;
  long long naxis = 0;
  if (f.file.read_key("NAXIS", naxis) && naxis > 0) {
    found = "a " + std::to_string(naxis) + "-D image";
    for (long long k = 1; k <= naxis && k <= 9; ++k) {
      long long len = 0;
      if (!f.file.read_key("NAXIS" + std::to_string(k), len)) break;
      found += (k == 1 ? " of " : " x ") + std::to_string(len);
    }
  } else {
    found = "no image";
  }
  const int hdus = f.file.hdu_count();
  const std::string key = numimg != 0 ? "NUMIMG = " + fmt::format("{}", numimg) : std::string("no NUMIMG key");
  return "not an exposure stack: expected a KBMOD WorkUnit (primary NUMIMG >= 1 with SCI_e / VAR_e / MSK_e "
         "HDUs), a folder of per-exposure FITS files or an HDF5 cube (.h5); found a FITS file of " +
         std::to_string(hdus) + (hdus == 1 ? " HDU" : " HDUs") + " whose primary HDU holds " + found + " and " + key;
}

}  // namespace

ExposureStack read_workunit(const std::string& path, const StackReadOptions& opt) {
  Fits f(path, READONLY);
  ExposureStack s;
  s.source = path;
  double numimg = 0;
  if (!f.read_double_key("NUMIMG", numimg) || !(numimg >= 1)) throw IoError(path, "NUMIMG", not_a_workunit(f, numimg));
  // Each exposure needs at least its SCI and VAR HDUs of one 2880-byte block or more each:
  // NUMIMG is bounded by the file's size.
  const long long most = f.file.file_size() / (2 * 2880);
  if (numimg != std::floor(numimg) || numimg > static_cast<double>(most))
    throw IoError(path, "NUMIMG",
                  fmt::format("is {}, but a file of {} bytes holds at most {} exposures (each needs "
                              "SCI and VAR HDUs)", numimg, f.file.file_size(), most));
  const int n = int(numimg);
  const std::string primary = f.header_cards();
  if (primary.find("CTYPE1") != std::string::npos) s.wcs_header = primary;
  const int base = f.move_to("SCI_0") ? 0 : 1;
  for (int k = 0; k < n; ++k) {
    const int e = k + base;
    const std::string tag = std::string(1, '_').append(std::to_string(e));
    if (!f.move_to("SCI" + tag)) throw IoError(path, "SCI" + tag, "HDU missing (NUMIMG = " + std::to_string(n) + ")");
    std::vector<float> sci, var, msk, psf;
    auto [w, h] = f.read_image(sci, "SCI" + tag);
    double mjd = NAN;
    if (!f.read_double_key("MJD", mjd) && !f.read_double_key("MJD-OBS", mjd)) throw IoError(path, "SCI" + tag + ": MJD", "observation time key missing");
    if (s.wcs_header.empty() && k == 0) {
      const std::string hdr = f.header_cards();
      if (hdr.find("CTYPE1") != std::string::npos) s.wcs_header = hdr;
    }
    if (!f.move_to("VAR" + tag)) throw IoError(path, "VAR" + tag, "HDU missing");
    auto [vw, vh] = f.read_image(var, "VAR" + tag);
    int mw = 0, mh = 0;
    if (f.move_to("MSK" + tag)) std::tie(mw, mh) = f.read_image(msk, "MSK" + tag);
    append_exposure(s, sci, w, h, var, vw, vh, msk, mw, mh, path, tag);
    s.mjd.push_back(mjd);
    s.origin.push_back(path + "[SCI" + tag + "]");
    if (opt.psf_sigma > 0) s.psf.push_back(Psf::gaussian(opt.psf_sigma));
    else if (f.move_to("PSF" + tag)) {
      auto [pw, ph] = f.read_image(psf, "PSF" + tag);
      s.psf.push_back(psf_from(psf, pw, ph, path, "PSF" + tag));
    } else if (opt.fallback_psf_sigma > 0) s.psf.push_back(Psf::gaussian(opt.fallback_psf_sigma));
    else throw IoError(path, "PSF" + tag, "HDU missing and no PSF sigma given");
  }
  s.validate();
  return s;
}

ExposureStack read_exposure_files(const std::vector<std::string>& paths, const StackReadOptions& opt) {
  if (paths.empty()) throw IoError("", "files", "no exposure files given");
  ExposureStack s;
  s.source = paths.size() == 1 ? paths[0] : fs::path(paths[0]).parent_path().string();
  for (std::size_t k = 0; k < paths.size(); ++k) {
    const std::string& p = paths[k];
    Fits f(p, READONLY);
    double mjd = NAN;
    f.read_double_key("MJD", mjd) || f.read_double_key("MJD-OBS", mjd);
    std::vector<float> sci, var, msk, psf;
    int w = 0, h = 0;
    if (f.move_to("SCI") || f.move_to("IMAGE")) {
      std::tie(w, h) = f.read_image(sci, "SCI");
    } else {
      const int nhdu = f.file.hdu_count();
      for (int i = 1; i <= nhdu && sci.empty(); ++i) {
        int type = 0, naxis = 0, st = 0;
        if (!f.file.try_move(i, &type, "HDU " + std::to_string(i))) break;
        fits_get_img_dim(f.f, &naxis, &st);
        if (st == 0 && type == IMAGE_HDU && naxis == 2) std::tie(w, h) = f.read_image(sci, "HDU " + std::to_string(i));
      }
      if (sci.empty()) throw IoError(p, "SCI", "no science image HDU");
    }
    if (std::isnan(mjd) && !f.read_double_key("MJD", mjd) && !f.read_double_key("MJD-OBS", mjd)) throw IoError(p, "MJD", "observation time key missing");
    if (k == 0) {
      const std::string hdr = f.header_cards();
      if (hdr.find("CTYPE1") != std::string::npos) s.wcs_header = hdr;
    }
    if (!f.move_to("VAR") && !f.move_to("VARIANCE")) throw IoError(p, "VAR", "variance HDU missing");
    auto [vw, vh] = f.read_image(var, "VAR");
    int mw = 0, mh = 0;
    if (f.move_to("MSK") || f.move_to("MASK")) std::tie(mw, mh) = f.read_image(msk, "MSK");
    append_exposure(s, sci, w, h, var, vw, vh, msk, mw, mh, p, "");
    s.mjd.push_back(mjd);
    s.origin.push_back(p);
    if (opt.psf_sigma > 0) s.psf.push_back(Psf::gaussian(opt.psf_sigma));
    else if (f.move_to("PSF")) {
      auto [pw, ph] = f.read_image(psf, "PSF");
      s.psf.push_back(psf_from(psf, pw, ph, p, "PSF"));
    } else if (opt.fallback_psf_sigma > 0) s.psf.push_back(Psf::gaussian(opt.fallback_psf_sigma));
    else throw IoError(p, "PSF", "HDU missing and no PSF sigma given");
  }
  s.validate();
  return s;
}

ExposureStack read_exposure_folder(const std::string& folder, const StackReadOptions& opt) {
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw IoError(folder, "", "not a folder");
  std::vector<std::string> files;
  for (const auto& ent : fs::directory_iterator(folder)) {
    const std::string n = ent.path().filename().string();
    auto ends = [&](const char* suf) { return n.size() >= std::strlen(suf) && n.compare(n.size() - std::strlen(suf), std::string::npos, suf) == 0; };
    if (ent.is_regular_file() && (ends(".fits") || ends(".fit") || ends(".fits.fz"))) files.push_back(ent.path().string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw IoError(folder, "", "no FITS files in the folder");
  ExposureStack s = read_exposure_files(files, opt);
  s.source = folder;
  return s;
}

// ---------------------------------------------------------------------------------------------
// HDF5 cube: through io::Hdf5Writer / io::Hdf5Reader, which own every libhdf5 rule (no stderr
// dumps, one IoError per failure, sizes bounded by the file, clean close on a full disk).
namespace {
/// Largest image or PSF side read from a cube (keeps width and height far inside int).
constexpr int kMaxStackSide = 1 << 20;
}  // namespace

void write_stack_hdf5(const std::string& path, const ExposureStack& s) {
  s.validate();
  io::Hdf5Writer w(path);
  const std::uint64_t n = s.size(), H = std::uint64_t(s.height), W = std::uint64_t(s.width);
  w.write("/sci", s.sci, {n, H, W});
  w.write("/var", s.var, {n, H, W});
  w.write("/mask", s.mask, {n, H, W});
  w.write("/mjd", s.mjd, {n});
  int K = 1;
  for (const auto& p : s.psf) K = std::max(K, p.size);
  std::vector<float> psf(std::size_t(n) * K * K, 0.0f);
  for (std::size_t e = 0; e < n; ++e) {
    const int o = (K - s.psf[e].size) / 2;
    for (int v = 0; v < s.psf[e].size; ++v)
      for (int u = 0; u < s.psf[e].size; ++u)
        psf[(e * K + v + o) * K + u + o] = s.psf[e].kernel[std::size_t(v) * s.psf[e].size + u];
  }
  w.write("/psf", psf, {n, std::uint64_t(K), std::uint64_t(K)});
  if (!s.weight.empty()) w.write("/weight", s.weight, {n});
  w.attr_fixed("/", "format", "almagest-stack-cube-1");
  if (!s.wcs_header.empty()) w.attr_fixed("/", "wcs_header", s.wcs_header);
  w.commit();
}

ExposureStack read_stack_hdf5(const std::string& path, const StackReadOptions& opt) {
  io::Hdf5Reader r(path);
  ExposureStack s;
  s.source = path;
  for (const char* name : {"/sci", "/var", "/mask", "/mjd"})
    if (!r.exists(name)) throw IoError(path, name + 1, "dataset missing");
  // Every shape is checked before any plane is read (and each read is bounded by the file size).
  const io::Shape d = r.shape("/sci", 3);
  if (d[0] < 1) throw IoError(path, "sci", "holds no exposure");
  if (d[1] < 1 || d[2] < 1 || d[1] > std::uint64_t(kMaxStackSide) || d[2] > std::uint64_t(kMaxStackSide))
    throw IoError(path, "sci", "image of " + std::to_string(d[2]) + " x " + std::to_string(d[1]) +
                                    " pixels is outside 1.." + std::to_string(kMaxStackSide) + " per side");
  if (r.shape("/var") != d) throw IoError(path, "var", "shape differs from /sci");
  if (r.shape("/mask") != d) throw IoError(path, "mask", "shape differs from /sci");
  if (r.shape("/mjd") != io::Shape{d[0]}) throw IoError(path, "mjd", "expected one MJD per exposure");
  const bool has_psf = opt.psf_sigma <= 0 && r.exists("/psf");
  io::Shape dp;
  if (has_psf) {
    dp = r.shape("/psf");
    if (dp.size() != 3 || dp[0] != d[0] || dp[1] != dp[2] || dp[1] % 2 == 0 || dp[1] > std::uint64_t(kMaxStackSide))
      throw IoError(path, "psf", "expected [n][K][K] with odd K");
  }
  if (r.exists("/weight") && r.shape("/weight") != io::Shape{d[0]})
    throw IoError(path, "weight", "expected one weight per exposure");
  s.sci = r.read_float("/sci");
  s.var = r.read_float("/var");
  s.mask = r.read_uint8("/mask");
  s.mjd = r.read_double("/mjd");
  s.width = int(d[2]);
  s.height = int(d[1]);
  if (opt.psf_sigma > 0) {
    s.psf.assign(d[0], Psf::gaussian(opt.psf_sigma));
  } else if (has_psf) {
    const auto k = r.read_float("/psf");
    for (std::uint64_t e = 0; e < d[0]; ++e) {
      Psf p;
      p.size = int(dp[1]);
      p.kernel.assign(k.begin() + e * dp[1] * dp[1], k.begin() + (e + 1) * dp[1] * dp[1]);
      s.psf.push_back(std::move(p));
    }
  } else if (opt.fallback_psf_sigma > 0) {
    s.psf.assign(d[0], Psf::gaussian(opt.fallback_psf_sigma));
  } else {
    throw IoError(path, "psf", "dataset missing and no PSF sigma given");
  }
  if (r.exists("/weight")) s.weight = r.read_double("/weight");
  if (r.has_attr("/", "wcs_header")) s.wcs_header = r.read_attr_string("/", "wcs_header");
  s.validate();
  return s;
}

ExposureStack read_stack(const std::string& path, const StackReadOptions& opt) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return read_exposure_folder(path, opt);
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".h5" || ext == ".hdf5") return read_stack_hdf5(path, opt);
  return read_workunit(path, opt);
}

void write_workunit(const std::string& path, const ExposureStack& s) {
  s.validate();
  AtomicFile af(path);
  {
    Fits f(af.temp_path(), READWRITE, path);
    int st = 0;
    fits_create_img(f.f, BYTE_IMG, 0, nullptr, &st);
    int n = int(s.size());
    fits_write_key(f.f, TINT, "NUMIMG", &n, "number of exposures", &st);
    if (!s.wcs_header.empty())
      for (std::size_t i = 0; i + 80 <= s.wcs_header.size(); i += 80) {
        const std::string card = s.wcs_header.substr(i, 80);
        const std::string key = card.substr(0, 8);
        if (key.rfind("CTYPE", 0) == 0 || key.rfind("CRPIX", 0) == 0 || key.rfind("CRVAL", 0) == 0 || key.rfind("CD", 0) == 0 ||
            key.rfind("CDELT", 0) == 0 || key.rfind("CUNIT", 0) == 0 || key.rfind("PC", 0) == 0 || key.rfind("RADESYS", 0) == 0 ||
            key.rfind("EQUINOX", 0) == 0 || key.rfind("LONPOLE", 0) == 0 || key.rfind("LATPOLE", 0) == 0)
          fits_write_record(f.f, card.c_str(), &st);
      }
    if (st) throw IoError(path, "primary", "cannot write header: " + fits_msg(st));
    const std::size_t np = s.pixels();
    std::vector<float> m(np);
    for (int e = 0; e < n; ++e) {
      const std::string tag = std::string(1, '_').append(std::to_string(e));
      f.write_image(s.sci.data() + e * np, s.width, s.height, "SCI" + tag);
      double mjd = s.mjd[e];
      fits_write_key_dbl(f.f, "MJD", mjd, -17, "observation time", &st);
      f.write_image(s.var.data() + e * np, s.width, s.height, "VAR" + tag);
      for (std::size_t i = 0; i < np; ++i) m[i] = s.mask[e * np + i];
      f.write_image(m.data(), s.width, s.height, "MSK" + tag, BYTE_IMG, TFLOAT);
      f.write_image(s.psf[e].kernel.data(), s.psf[e].size, s.psf[e].size, "PSF" + tag);
      if (st) throw IoError(path, "SCI" + tag, "cannot write: " + fits_msg(st));
    }
    f.close();
  }
  af.commit();
}

void write_exposure_files(const std::string& folder, const ExposureStack& s) {
  s.validate();
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) throw IoError(folder, "", "output folder does not exist");
  const std::size_t np = s.pixels();
  std::vector<float> m(np);
  for (std::size_t e = 0; e < s.size(); ++e) {
    char name[64];
    std::snprintf(name, sizeof name, "exposure_%04zu.fits", e);
    const std::string path = (fs::path(folder) / name).string();
    AtomicFile af(path);
    {
      Fits f(af.temp_path(), READWRITE, path);
      int st = 0;
      fits_create_img(f.f, BYTE_IMG, 0, nullptr, &st);
      double mjd = s.mjd[e];
      fits_write_key_dbl(f.f, "MJD", mjd, -17, "observation time", &st);
      f.write_image(s.sci.data() + e * np, s.width, s.height, "SCI");
      f.write_image(s.var.data() + e * np, s.width, s.height, "VAR");
      for (std::size_t i = 0; i < np; ++i) m[i] = s.mask[e * np + i];
      f.write_image(m.data(), s.width, s.height, "MSK", BYTE_IMG, TFLOAT);
      f.write_image(s.psf[e].kernel.data(), s.psf[e].size, s.psf[e].size, "PSF");
      f.close();
    }
    af.commit();
  }
}

}  // namespace almagest::stack
