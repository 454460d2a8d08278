#include "fits_tables.hpp"

#include <fitsio.h>
#include <unistd.h>

namespace almagest::testing {

int write_fits_table(const std::string& path, const std::vector<std::string>& columns,
                     const std::vector<double>& values, char type, int per_row,
                     long long nside_key) {
  // Literal file names, as every FITS file of the project (io::FitsFile).
  fitsfile* f = nullptr;
  int st = 0;
  ::unlink(path.c_str());
  fits_create_diskfile(&f, path.c_str(), &st);
  if (st) return st;
  fits_create_img(f, 8, 0, nullptr, &st);
  std::vector<std::string> names = columns;
  std::string form = std::to_string(per_row) + type;
  std::string empty;
  std::vector<char*> tt, tf, tu;
  for (auto& n : names) {
    tt.push_back(n.data());
    tf.push_back(form.data());
    tu.push_back(empty.data());
  }
  const auto nrows = static_cast<LONGLONG>(values.size() / static_cast<std::size_t>(per_row));
  fits_create_tbl(f, BINARY_TBL, nrows, static_cast<int>(names.size()), tt.data(), tf.data(),
                  tu.data(), nullptr, &st);
  if (nside_key > 0) fits_update_key(f, TLONGLONG, "NSIDE", &nside_key, nullptr, &st);
  for (int c = 1; c <= static_cast<int>(names.size()); ++c)
    fits_write_col(f, TDOUBLE, c, 1, 1, static_cast<LONGLONG>(values.size()),
                   const_cast<double*>(values.data()), &st);
  int st2 = 0;
  fits_close_file(f, &st2);
  return st ? st : st2;
}

}  // namespace almagest::testing
