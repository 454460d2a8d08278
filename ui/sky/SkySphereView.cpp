#include "sky/SkySphereView.hpp"

// healpix_cxx (a private dependency of the engine, linked through it): pixel boundaries,
// ang2pix / pix2ang and the RING <-> NESTED index maps of the display grid.
#include <healpix_cxx/healpix_base.h>

#include <QEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QVBoxLayout>

#include <vtkActor.h>
#include <vtkPolyLine.h>
#include <vtkCamera.h>
#include <vtkCellArray.h>
#include <vtkCellData.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkIdTypeArray.h>
#include <vtkNew.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkRenderer.h>
#include <vtkUnsignedCharArray.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>

#include "almagest/sht/config.hpp"
#include "sky/SkyProjection.hpp"
#include "views/VtkView.hpp"

namespace almagest::ui {

namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kDeg = kPi / 180.0;
/// Half the viewport height in world units at zoom 1 (the unit sphere with a small margin).
constexpr double kBaseScale = 1.05;
/// Below this display nside a pixel is drawn as several polygons of a finer grid.
constexpr int kMinTessNside = 16;

Healpix_Base2 ringBase(int nside) { return Healpix_Base2(static_cast<std::int64_t>(nside), RING, SET_NSIDE); }

bool powerOfTwo(int n) { return n > 0 && (n & (n - 1)) == 0; }
int log2i(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

/// Unit vector of (theta, phi) in the scene: longitude mirrored (y -> -y), see the header.
void toWorld(double theta, double phi, double out[3]) {
  const double s = std::sin(theta);
  out[0] = s * std::cos(phi);
  out[1] = -s * std::sin(phi);
  out[2] = std::cos(theta);
}

}  // namespace

struct SkySphereView::Impl {
  vtkNew<vtkPolyData> poly;
  vtkNew<vtkUnsignedCharArray> colours;
  vtkNew<vtkPolyDataMapper> mapper;
  vtkNew<vtkActor> actor;
  vtkNew<vtkPolyData> gridPoly;
  vtkNew<vtkPolyDataMapper> gridMapper;
  vtkNew<vtkActor> gridActor;
  struct GridLine {
    bool meridian = false;
    double valueDeg = 0;
    std::vector<std::array<double, 3>> pts;  ///< unit vectors (unmirrored, map frame)
  };
  std::vector<GridLine> grid;

  sky::SkyMapPtr map;
  int column = 0;
  sky::ScaleMap scale;
  sky::ColourMap cmap = sky::ColourMap::Viridis;
  std::vector<std::uint8_t> masked;  ///< at the map's nside (empty: none)
  double maskOpacity = sky::kDefaultMaskOpacity;

  int displayNside = 0, tessNside = 0;
  std::vector<std::int64_t> cellParent;   ///< tessellation cell -> display pixel
  std::vector<std::int64_t> firstCell;    ///< display pixel -> one of its cells
  std::vector<double> displayValues;      ///< per display pixel
  std::vector<std::uint8_t> displayMasked;

  const std::vector<double>* values() const {
    if (!map || column < 0 || column >= static_cast<int>(map->columns.size())) return nullptr;
    return &map->columns[static_cast<std::size_t>(column)];
  }
};

SkySphereView::SkySphereView(QWidget* parent) : QWidget(parent), d_(std::make_unique<Impl>()) {
  view_ = new VtkView(this);
  view_->setObjectName(QStringLiteral("skySphereVtk"));
  view_->setToolTip(tr("The map on a sphere, seen as the sky from inside (longitude increasing to the left). "
                       "Drag to rotate, wheel to zoom; the status bar reads the pixel under the mouse."));
  view_->installEventFilter(this);
  caption_ = new QLabel(this);
  caption_->setObjectName(QStringLiteral("skySphereCaption"));
  caption_->setWordWrap(true);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(view_, 1);
  layout->addWidget(caption_);

  d_->colours->SetNumberOfComponents(3);
  d_->colours->SetName("colour");
  d_->poly->GetCellData()->SetScalars(d_->colours);
  d_->mapper->SetInputData(d_->poly);
  d_->mapper->SetScalarModeToUseCellData();
  d_->mapper->SetColorModeToDirectScalars();
  d_->mapper->ScalarVisibilityOn();
  d_->actor->SetMapper(d_->mapper);
  // Flat, unlit colours: a pixel is drawn in exactly the colour the 2D view gives it.
  d_->actor->GetProperty()->LightingOff();
  d_->actor->VisibilityOff();
  d_->gridMapper->SetInputData(d_->gridPoly);
  d_->gridMapper->ScalarVisibilityOff();
  d_->gridActor->SetMapper(d_->gridMapper);
  d_->gridActor->GetProperty()->LightingOff();
  d_->gridActor->GetProperty()->SetColor(0.08, 0.08, 0.08);
  d_->gridActor->GetProperty()->SetLineWidth(1.0);
  d_->gridActor->VisibilityOff();
  vtkRenderer* r = view_->renderer();
  r->AddActor(d_->actor);
  r->AddActor(d_->gridActor);
  r->SetBackground(0.13, 0.13, 0.15);
  lookAt(0.0, 0.0, 1.0);
  clear();
}

SkySphereView::~SkySphereView() = default;

int SkySphereView::displayNsideFor(int nside) {
  if (nside <= kMaxDisplayNside) return std::max(nside, 1);
  for (int d = kMaxDisplayNside; d > 1; --d)
    if (nside % d == 0) return d;
  return 1;
}

int SkySphereView::displayNside() const noexcept { return d_->displayNside; }

std::int64_t SkySphereView::cellCount() const { return d_->map ? static_cast<std::int64_t>(d_->cellParent.size()) : 0; }

void SkySphereView::clear() {
  d_->map.reset();
  d_->masked.clear();
  d_->displayValues.clear();
  d_->displayMasked.clear();
  d_->actor->VisibilityOff();
  caption_->setText(tr("No map. Open one (File > Open map… or Open demo map) to see it on the sphere."));
  view_->requestRender();
}

void SkySphereView::setMap(sky::SkyMapPtr map, int column, const sky::ScaleMap& scale, sky::ColourMap cmap,
                           std::vector<std::uint8_t> masked, double maskOpacity) {
  if (!map || column < 0 || column >= static_cast<int>(map->columns.size())) {
    clear();
    return;
  }
  if (masked.size() != static_cast<std::size_t>(map->npix())) masked.clear();
  const bool valuesChanged = map != d_->map || column != d_->column || masked != d_->masked;
  d_->map = std::move(map);
  d_->column = column;
  d_->scale = scale;
  d_->cmap = cmap;
  d_->masked = std::move(masked);
  d_->maskOpacity = maskOpacity;
  const int nside = d_->map->nside;
  const int nd = displayNsideFor(nside);
  if (nd != d_->displayNside || d_->cellParent.empty()) rebuildGeometry(nd);
  if (valuesChanged || d_->displayValues.empty()) {
    // The display pixels' values: the map's own (nd = nside), or the mean of the seen map pixels
    // inside each display pixel, masked when at least half of them are.
    const std::vector<double>& v = *d_->values();
    const std::int64_t ndpix = 12LL * nd * nd;
    if (nd == nside) {
      d_->displayValues = v;
      d_->displayMasked = d_->masked;
    } else {
      std::vector<double> sum(std::size_t(ndpix), 0.0);
      std::vector<std::int32_t> seen(std::size_t(ndpix), 0), inside(std::size_t(ndpix), 0), nmask(std::size_t(ndpix), 0);
      const Healpix_Base2 hi = ringBase(nside), lo = ringBase(nd);
      const bool nestable = powerOfTwo(nside) && powerOfTwo(nd);
      const int shift = nestable ? 2 * (log2i(nside) - log2i(nd)) : 0;
      for (std::int64_t p = 0; p < d_->map->npix(); ++p) {
        const std::int64_t q = nestable ? lo.nest2ring(hi.ring2nest(p) >> shift) : lo.ang2pix(hi.pix2ang(p));
        const std::size_t k = std::size_t(q);
        ++inside[k];
        const double x = v[std::size_t(p)];
        if (!sky::isUnseen(x)) {
          sum[k] += x;
          ++seen[k];
        }
        if (!d_->masked.empty() && d_->masked[std::size_t(p)]) ++nmask[k];
      }
      d_->displayValues.assign(std::size_t(ndpix), sht::kUnseen);
      for (std::size_t k = 0; k < std::size_t(ndpix); ++k)
        if (seen[k] > 0) d_->displayValues[k] = sum[k] / seen[k];
      d_->displayMasked.clear();
      if (!d_->masked.empty()) {
        d_->displayMasked.resize(std::size_t(ndpix));
        for (std::size_t k = 0; k < std::size_t(ndpix); ++k) d_->displayMasked[k] = 2 * nmask[k] >= inside[k] ? 1 : 0;
      }
    }
  }
  recolour();
  d_->actor->VisibilityOn();
  const std::int64_t masks = std::count(d_->masked.begin(), d_->masked.end(), std::uint8_t(1));
  QString text = nd == nside
                     ? tr("nside %1 drawn pixel for pixel (%2 pixels).").arg(nside).arg(12LL * nside * nside)
                     : tr("nside %1 drawn at nside %2: each drawn pixel is the mean of the %3 map pixels inside it.")
                           .arg(nside)
                           .arg(nd)
                           .arg(static_cast<long long>(nside / nd) * (nside / nd));
  if (!d_->masked.empty()) text += tr(" Mask: %1 masked pixels drawn blended with magenta.").arg(masks);
  text += tr(" Drag to rotate, wheel to zoom.");
  caption_->setText(text);
  view_->requestRender();
}

void SkySphereView::setGraticule(bool on, sky::Frame frame, const std::string& coordsys, double stepDeg) {
  d_->grid.clear();
  if (on) {
    if (!sky::frameSupported(frame, coordsys)) frame = sky::Frame::Native;
    stepDeg = std::clamp(stepDeg, 1.0, 90.0);
    auto add = [&](bool meridian, double value) {
      Impl::GridLine line;
      line.meridian = meridian;
      line.valueDeg = value;
      const int n = meridian ? 180 : 360;  // 1 degree samples
      for (int k = 0; k <= n; ++k) {
        const double lat = std::clamp(meridian ? -90.0 + 180.0 * k / n : value, -89.999, 89.999);
        const double lon = meridian ? value : 360.0 * k / n;
        double theta = (90.0 - lat) * kDeg, phi = lon * kDeg;
        sky::frameToMap(frame, coordsys, theta, phi);
        const double st = std::sin(theta);
        line.pts.push_back({st * std::cos(phi), st * std::sin(phi), std::cos(theta)});
      }
      d_->grid.push_back(std::move(line));
    };
    for (double lon = 0; lon < 360.0 - 1e-9; lon += stepDeg) add(true, lon);
    for (double lat = -90.0 + stepDeg; lat < 90.0 - 1e-9; lat += stepDeg) add(false, lat);
  }
  // Just above the pixels (1.003), longitude mirrored as the map.
  vtkNew<vtkPoints> points;
  vtkNew<vtkCellArray> lines;
  for (const auto& line : d_->grid) {
    vtkNew<vtkPolyLine> pl;
    for (const auto& p : line.pts) {
      const vtkIdType id = points->InsertNextPoint(1.003 * p[0], -1.003 * p[1], 1.003 * p[2]);
      pl->GetPointIds()->InsertNextId(id);
    }
    lines->InsertNextCell(pl);
  }
  d_->gridPoly->SetPoints(points);
  d_->gridPoly->SetLines(lines);
  d_->gridActor->SetVisibility(!d_->grid.empty());
  view_->requestRender();
}

int SkySphereView::graticuleLineCount() const { return static_cast<int>(d_->grid.size()); }

double SkySphereView::graticuleDistance(double theta, double phi, bool meridian, double valueDeg) const {
  const double st = std::sin(theta);
  const double v[3] = {st * std::cos(phi), st * std::sin(phi), std::cos(theta)};
  double best = 1e9;
  for (const auto& line : d_->grid) {
    if (line.meridian != meridian || std::abs(line.valueDeg - valueDeg) > 1e-9) continue;
    for (const auto& p : line.pts)
      best = std::min(best, std::acos(std::clamp(p[0] * v[0] + p[1] * v[1] + p[2] * v[2], -1.0, 1.0)));
  }
  return best;
}

void SkySphereView::rebuildGeometry(int nd) {
  // The tessellation: HEALPix pixels of nside nt = nd x k (k >= 1 so that nt >= 16); each lies
  // inside one display pixel (the grids nest for an integer factor), found from its centre.
  const int k = nd >= kMinTessNside ? 1 : (kMinTessNside + nd - 1) / nd;
  const int nt = nd * k;
  const Healpix_Base2 tess = ringBase(nt), disp = ringBase(nd);
  const std::int64_t ncell = 12LL * nt * nt, ndpix = 12LL * nd * nd;
  d_->displayNside = nd;
  d_->tessNside = nt;
  d_->cellParent.assign(std::size_t(ncell), 0);
  d_->firstCell.assign(std::size_t(ndpix), -1);
  vtkNew<vtkPoints> points;
  points->SetDataTypeToFloat();
  points->SetNumberOfPoints(4 * ncell);
  vtkNew<vtkIdTypeArray> conn;
  conn->SetNumberOfValues(4 * ncell);
  std::vector<vec3> corners;
  for (std::int64_t c = 0; c < ncell; ++c) {
    const std::int64_t parent = k == 1 ? c : disp.ang2pix(tess.pix2ang(c));
    d_->cellParent[std::size_t(c)] = parent;
    if (d_->firstCell[std::size_t(parent)] < 0) d_->firstCell[std::size_t(parent)] = c;
    tess.boundaries(c, 1, corners);  // N, W, S, E corners
    for (int i = 0; i < 4; ++i) {
      const vec3& v = corners[std::size_t(i)];
      points->SetPoint(4 * c + i, v.x, -v.y, v.z);  // longitude mirrored (see toWorld)
      conn->SetValue(4 * c + i, 4 * c + i);
    }
  }
  vtkNew<vtkCellArray> polys;
  polys->SetData(4, conn);
  d_->poly->SetPoints(points);
  d_->poly->SetPolys(polys);
  d_->colours->SetNumberOfTuples(ncell);
  d_->poly->GetCellData()->SetScalars(d_->colours);
}

void SkySphereView::recolour() {
  const std::size_t ndpix = d_->displayValues.size();
  std::vector<QRgb> per(ndpix);
  const bool haveMask = d_->displayMasked.size() == ndpix;
  for (std::size_t q = 0; q < ndpix; ++q)
    per[q] = sky::pixelColour(d_->displayValues[q], d_->scale, d_->cmap, haveMask && d_->displayMasked[q], d_->maskOpacity);
  unsigned char* out = d_->colours->GetPointer(0);
  for (std::size_t c = 0; c < d_->cellParent.size(); ++c) {
    const QRgb rgb = per[std::size_t(d_->cellParent[c])];
    out[3 * c] = static_cast<unsigned char>(qRed(rgb));
    out[3 * c + 1] = static_cast<unsigned char>(qGreen(rgb));
    out[3 * c + 2] = static_cast<unsigned char>(qBlue(rgb));
  }
  d_->colours->Modified();
  d_->poly->Modified();
}

std::int64_t SkySphereView::displayPixelOf(std::int64_t mapPixel) const {
  if (!d_->map || mapPixel < 0 || mapPixel >= d_->map->npix()) return -1;
  const int nside = d_->map->nside, nd = d_->displayNside;
  if (nd == nside) return mapPixel;
  return ringBase(nd).ang2pix(ringBase(nside).pix2ang(mapPixel));
}

double SkySphereView::displayValue(std::int64_t q) const {
  return q >= 0 && std::size_t(q) < d_->displayValues.size() ? d_->displayValues[std::size_t(q)] : sht::kUnseen;
}

bool SkySphereView::displayMasked(std::int64_t q) const {
  return q >= 0 && std::size_t(q) < d_->displayMasked.size() && d_->displayMasked[std::size_t(q)];
}

QRgb SkySphereView::cellColour(std::int64_t q) const {
  if (q < 0 || std::size_t(q) >= d_->firstCell.size() || d_->firstCell[std::size_t(q)] < 0) return 0;
  const unsigned char* c = d_->colours->GetPointer(3 * d_->firstCell[std::size_t(q)]);
  return qRgb(c[0], c[1], c[2]);
}

void SkySphereView::lookAt(double lonDeg, double latDeg, double zoom) {
  const double l = lonDeg * kDeg, b = latDeg * kDeg;
  double c[3];
  toWorld(kPi / 2 - b, l, c);
  // North at the centre: the tangent towards the pole along the centre's meridian (mirrored).
  const double up[3] = {-std::sin(b) * std::cos(l), std::sin(b) * std::sin(l), std::cos(b)};
  vtkCamera* cam = view_->renderer()->GetActiveCamera();
  cam->SetFocalPoint(0, 0, 0);
  cam->SetPosition(5 * c[0], 5 * c[1], 5 * c[2]);
  cam->SetViewUp(up[0], up[1], up[2]);
  cam->ParallelProjectionOn();
  cam->SetParallelScale(kBaseScale / std::max(zoom, 1e-3));
  view_->renderer()->ResetCameraClippingRange(-1.5, 1.5, -1.5, 1.5, -1.5, 1.5);
  view_->requestRender();
}

void SkySphereView::rotateBy(double azimuthDeg, double elevationDeg) {
  vtkCamera* cam = view_->renderer()->GetActiveCamera();
  cam->Azimuth(azimuthDeg);
  cam->Elevation(elevationDeg);
  cam->OrthogonalizeViewUp();
  view_->renderer()->ResetCameraClippingRange(-1.5, 1.5, -1.5, 1.5, -1.5, 1.5);
  view_->requestRender();
}

double SkySphereView::zoom() const { return kBaseScale / view_->renderer()->GetActiveCamera()->GetParallelScale(); }

bool SkySphereView::screenPosition(double theta, double phi, QPointF* pos) const {
  double p[3];
  toWorld(theta, phi, p);
  vtkCamera* cam = view_->renderer()->GetActiveCamera();
  const double* dop = cam->GetDirectionOfProjection();
  if (p[0] * dop[0] + p[1] * dop[1] + p[2] * dop[2] >= 0) return false;  // the far side
  vtkRenderer* r = view_->renderer();
  r->SetWorldPoint(p[0], p[1], p[2], 1.0);
  r->WorldToDisplay();
  double dp[3];
  r->GetDisplayPoint(dp);
  const double dpr = view_->devicePixelRatioF();
  const int h = view_->renderWindow()->GetSize()[1];
  if (pos) *pos = QPointF(dp[0] / dpr, (h - dp[1]) / dpr);
  return true;
}

bool SkySphereView::directionAt(const QPointF& pos, double* theta, double* phi) const {
  const double dpr = view_->devicePixelRatioF();
  const int h = view_->renderWindow()->GetSize()[1];
  vtkRenderer* r = view_->renderer();
  r->SetDisplayPoint(pos.x() * dpr, h - pos.y() * dpr, 0.0);
  r->DisplayToWorld();
  double w[4];
  r->GetWorldPoint(w);
  if (w[3] == 0.0) return false;
  const double o[3] = {w[0] / w[3], w[1] / w[3], w[2] / w[3]};
  const double* d = r->GetActiveCamera()->GetDirectionOfProjection();  // unit
  // The ray o + t d meets the unit sphere first at t = -b - sqrt(b^2 - c).
  const double b = o[0] * d[0] + o[1] * d[1] + o[2] * d[2];
  const double c = o[0] * o[0] + o[1] * o[1] + o[2] * o[2] - 1.0;
  const double disc = b * b - c;
  if (disc < 0) return false;
  const double t = -b - std::sqrt(disc);
  const double x = o[0] + t * d[0], y = -(o[1] + t * d[1]), z = o[2] + t * d[2];  // unmirrored
  const double th = std::acos(std::clamp(z / std::sqrt(x * x + y * y + z * z), -1.0, 1.0));
  double ph = std::atan2(y, x);
  if (ph < 0) ph += 2 * kPi;
  if (theta) *theta = th;
  if (phi) *phi = ph;
  return true;
}

bool SkySphereView::probe(const QPointF& pos, SkyMapView::Probe* out) const {
  const std::vector<double>* v = d_->values();
  if (!v || !d_->actor->GetVisibility()) return false;
  double th = 0, ph = 0;
  if (!directionAt(pos, &th, &ph)) return false;
  SkyMapView::Probe p;
  p.theta = th;
  p.phi = ph;
  p.pixel = sky::ang2pixRing(d_->map->nside, th, ph);
  p.value = (*v)[std::size_t(p.pixel)];
  if (out) *out = p;
  return true;
}

bool SkySphereView::eventFilter(QObject* watched, QEvent* event) {
  if (watched == view_) {
    if (event->type() == QEvent::MouseMove) {
      SkyMapView::Probe p;
      const auto* me = static_cast<QMouseEvent*>(event);
      emit hovered(probe(me->position(), &p) ? SkyMapView::describe(d_->map.get(), p) : QString());
    } else if (event->type() == QEvent::Leave) {
      emit hovered(QString());
    }
  }
  return QWidget::eventFilter(watched, event);
}

}  // namespace almagest::ui
