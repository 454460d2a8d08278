#include "AppIcon.hpp"

#include <QLinearGradient>
#include <QPainter>
#include <QPainterPath>
#include <QPixmap>
#include <QRadialGradient>

#include <cmath>

namespace almagest::ui {

namespace {

QPixmap paintIcon(int size) {
  QPixmap pm(size, size);
  pm.fill(Qt::transparent);
  QPainter p(&pm);
  p.setRenderHint(QPainter::Antialiasing);
  const double s = size;

  // Tile: rounded square, deep blue gradient.
  QLinearGradient bg(0, 0, 0, s);
  bg.setColorAt(0, QColor(0x1b, 0x26, 0x4a));
  bg.setColorAt(1, QColor(0x05, 0x08, 0x14));
  QPainterPath tile;
  tile.addRoundedRect(QRectF(0.04 * s, 0.04 * s, 0.92 * s, 0.92 * s), 0.2 * s, 0.2 * s);
  p.fillPath(tile, bg);

  // An orbit (tilted ellipse) and a ring of points on it, then a glowing centre.
  const QPointF c(0.5 * s, 0.5 * s);
  p.save();
  p.translate(c);
  p.rotate(-25);
  QPen orbit(QColor(0x5c, 0x8f, 0xeb, 170));
  orbit.setWidthF(std::max(1.0, 0.025 * s));
  p.setPen(orbit);
  p.setBrush(Qt::NoBrush);
  p.drawEllipse(QPointF(0, 0), 0.36 * s, 0.17 * s);
  p.setPen(Qt::NoPen);
  for (int k = 0; k < 7; ++k) {
    const double a = 2 * M_PI * k / 7.0 + 0.4;
    const QPointF q(0.36 * s * std::cos(a), 0.17 * s * std::sin(a));
    const double r = (k % 2 ? 0.032 : 0.045) * s;
    p.setBrush(k % 3 == 0 ? QColor(0x9e, 0xc1, 0xff) : QColor(0xff, 0xc2, 0x4d));
    p.drawEllipse(q, r, r);
  }
  p.restore();

  QRadialGradient glow(c, 0.2 * s);
  glow.setColorAt(0, QColor(0xff, 0xf1, 0xc9));
  glow.setColorAt(0.35, QColor(0xff, 0xc2, 0x4d, 220));
  glow.setColorAt(1, QColor(0xff, 0xc2, 0x4d, 0));
  p.setBrush(glow);
  p.drawEllipse(c, 0.2 * s, 0.2 * s);
  return pm;
}

}  // namespace

QIcon appIcon() {
  QIcon icon;
  for (int size : {16, 24, 32, 48, 64, 128, 256}) icon.addPixmap(paintIcon(size));
  return icon;
}

}  // namespace almagest::ui
