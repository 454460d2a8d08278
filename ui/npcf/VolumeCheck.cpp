#include "npcf/VolumeCheck.hpp"

#include <QObject>

#include <algorithm>
#include <cmath>

namespace almagest::ui {

BoundingBox boundingBox(const almagest::io::Catalogue& c) {
  BoundingBox b;
  const std::vector<double>* axes[3] = {&c.x, &c.y, &c.z};
  for (int a = 0; a < 3; ++a) {
    b.lo[a] = HUGE_VAL;
    b.hi[a] = -HUGE_VAL;
  }
  for (std::size_t i = 0; i < c.size(); ++i) {
    bool finite = true;
    for (int a = 0; a < 3; ++a) finite = finite && i < axes[a]->size() && std::isfinite((*axes[a])[i]);
    if (!finite) continue;
    for (int a = 0; a < 3; ++a) {
      b.lo[a] = std::min(b.lo[a], (*axes[a])[i]);
      b.hi[a] = std::max(b.hi[a], (*axes[a])[i]);
    }
    b.empty = false;
  }
  return b;
}

QString volumeMismatch(const almagest::io::Catalogue& data, const almagest::io::Catalogue& randoms, double tolerance) {
  const BoundingBox d = boundingBox(data), r = boundingBox(randoms);
  if (d.empty || r.empty) return {};
  static const char* names[3] = {"x", "y", "z"};
  double vd = 1, vr = 1;
  QString worst;
  double worstOff = 0;
  for (int a = 0; a < 3; ++a) {
    const double er = r.hi[a] - r.lo[a], ed = d.hi[a] - d.lo[a];
    vd *= std::max(ed, 0.0);
    vr *= std::max(er, 0.0);
    const double scale = std::max({er, ed, 1e-12});
    const double off = std::max(std::abs(d.lo[a] - r.lo[a]), std::abs(d.hi[a] - r.hi[a])) / scale;
    if (off > tolerance && off > worstOff) {
      worstOff = off;
      worst = QObject::tr("%1: data %2..%3, randoms %4..%5")
                  .arg(QLatin1String(names[a]))
                  .arg(d.lo[a], 0, 'g', 4).arg(d.hi[a], 0, 'g', 4)
                  .arg(r.lo[a], 0, 'g', 4).arg(r.hi[a], 0, 'g', 4);
    }
  }
  if (worst.isEmpty()) return {};
  QString ratio = vd > 0 ? QObject::tr("; randoms/data box volume %1").arg(vr / vd, 0, 'g', 3) : QString();
  return QObject::tr("Warning: data and randoms cover different volumes (%1%2, beyond %3%): the estimators will be biased.")
      .arg(worst, ratio)
      .arg(tolerance * 100, 0, 'g', 3);
}

}  // namespace almagest::ui
