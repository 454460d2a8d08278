#include "stackview/ScoreCubeView.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSpinBox>
#include <QVBoxLayout>

#include <vtkActor.h>
#include <vtkCamera.h>
#include <vtkCellArray.h>
#include <vtkColorTransferFunction.h>
#include <vtkCubeAxesActor.h>
#include <vtkFloatArray.h>
#include <vtkFlyingEdges3D.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkIdList.h>
#include <vtkImageData.h>
#include <vtkImageProperty.h>
#include <vtkImageSlice.h>
#include <vtkImageSliceMapper.h>
#include <vtkLookupTable.h>
#include <vtkNew.h>
#include <vtkPiecewiseFunction.h>
#include <vtkPointData.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkPolyDataConnectivityFilter.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkRenderer.h>
#include <vtkScalarBarActor.h>
#include <vtkSmartPointer.h>
#include <vtkSmartVolumeMapper.h>
#include <vtkTextProperty.h>
#include <vtkVolume.h>
#include <vtkVolumeProperty.h>

#include <algorithm>
#include <cmath>

#include "stackview/StackImages.hpp"
#include "views/VtkView.hpp"

namespace almagest::ui::stackview {

namespace stk = almagest::stack;

struct ScoreCubeView::Impl {
  vtkSmartPointer<vtkImageData> data, padded;
  vtkSmartPointer<vtkFlyingEdges3D> iso;
  vtkSmartPointer<vtkActor> isoActor, markers;
  vtkSmartPointer<vtkVolume> volume;
  vtkSmartPointer<vtkImageSliceMapper> sliceMapper;
  vtkSmartPointer<vtkImageSlice> slice;
  vtkSmartPointer<vtkCubeAxesActor> axes;
  vtkSmartPointer<vtkScalarBarActor> bar;
  vtkSmartPointer<vtkLookupTable> lut;
  vtkSmartPointer<vtkRenderer> overlay;  ///< layer 1: the candidate markers, drawn over the surfaces
  float zMax = 1;
};

ScoreCubeView::ScoreCubeView(QWidget* parent) : QWidget(parent), d_(std::make_unique<Impl>()) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(6, 2, 6, 2);
  modeBox_ = new QComboBox(this);
  modeBox_->setObjectName(QStringLiteral("cubeMode"));
  modeBox_->addItems({tr("Volume"), tr("Slice")});
  modeBox_->setToolTip(tr("Volume rendering of Z(x, y, v) or one axis slice"));
  axisBox_ = new QComboBox(this);
  axisBox_->setObjectName(QStringLiteral("cubeSliceAxis"));
  axisBox_->addItems({tr("x–y at velocity"), tr("x–v at row y"), tr("y–v at column x")});
  axisBox_->setToolTip(tr("Which slice: x-y at one velocity plane, x-v at one row y, y-v at one column x"));
  sliceSpin_ = new QSpinBox(this);
  sliceSpin_->setObjectName(QStringLiteral("cubeSliceIndex"));
  sliceSpin_->setToolTip(tr("Index of the slice along its normal axis (velocity plane, row or column of the region)"));
  isoCheck_ = new QCheckBox(tr("Isosurface at threshold"), this);
  isoCheck_->setObjectName(QStringLiteral("cubeIso"));
  isoCheck_->setChecked(true);
  isoCheck_->setToolTip(tr("Surface Z = detection threshold: every candidate lies inside one"));
  caption_ = new QLabel(this);
  caption_->setTextFormat(Qt::PlainText);
  caption_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  bar->addWidget(modeBox_);
  bar->addWidget(axisBox_);
  bar->addWidget(sliceSpin_);
  bar->addWidget(isoCheck_);
  bar->addStretch(1);
  layout->addLayout(bar);
  caption_->setContentsMargins(6, 0, 6, 0);
  layout->addWidget(caption_);
  view_ = new VtkView(this);
  view_->setObjectName(QStringLiteral("cubeVtkView"));
  view_->setMinimumSize(320, 240);
  view_->setToolTip(tr("Score cube: x, y origin pixels, v the velocity plane (white spheres: candidates). "
                       "Drag rotates, wheel zooms"));
  layout->addWidget(view_, 1);
  view_->renderer()->SetBackground(0.06, 0.07, 0.10);
  // Candidates sit inside their isosurface: their markers go on a layer above, same camera.
  d_->overlay = vtkSmartPointer<vtkRenderer>::New();
  d_->overlay->SetLayer(1);
  d_->overlay->InteractiveOff();
  d_->overlay->SetActiveCamera(view_->renderer()->GetActiveCamera());
  view_->renderWindow()->SetNumberOfLayers(2);
  view_->renderWindow()->AddRenderer(d_->overlay);
  connect(modeBox_, &QComboBox::currentIndexChanged, this, [this](int i) { setMode(i == 0 ? Mode::Volume : Mode::Slice); });
  connect(axisBox_, &QComboBox::currentIndexChanged, this,
          [this](int i) { setSlice(static_cast<SliceAxis>(i), sliceSpin_->value()); });
  connect(sliceSpin_, &QSpinBox::valueChanged, this, [this](int v) { setSlice(axis_, v); });
  connect(isoCheck_, &QCheckBox::toggled, this, &ScoreCubeView::setIsosurfaceVisible);
  clear();
}

ScoreCubeView::~ScoreCubeView() = default;

std::array<double, 3> ScoreCubeView::world(double ix, double iy, double iv) const noexcept {
  return {ix, iy, iv * vScale_};
}

void ScoreCubeView::clear() {
  cube_.reset();
  candidates_.clear();
  rebuild();
}

void ScoreCubeView::setCube(std::shared_ptr<const stk::ScoreCube> cube, std::vector<std::array<int, 3>> candidates) {
  cube_ = std::move(cube);
  candidates_ = std::move(candidates);
  if (cube_) {
    // Stretch v so that the cube is roughly as deep as it is wide (at least one unit per plane).
    vScale_ = std::max(1.0, 0.8 * std::max(cube_->nx, cube_->ny) / std::max(1, cube_->nv()));
  }
  updateSliceRange();
  rebuild();
}

void ScoreCubeView::updateSliceRange() {
  const QSignalBlocker b(sliceSpin_);
  int n = 1;
  if (cube_) n = axis_ == SliceAxis::XY ? cube_->nv() : axis_ == SliceAxis::XV ? cube_->ny : cube_->nx;
  sliceSpin_->setRange(0, std::max(0, n - 1));
  sliceIndex_ = std::clamp(sliceIndex_, 0, std::max(0, n - 1));
  sliceSpin_->setValue(sliceIndex_);
}

void ScoreCubeView::setMode(Mode m) {
  mode_ = m;
  const QSignalBlocker b(modeBox_);
  modeBox_->setCurrentIndex(m == Mode::Volume ? 0 : 1);
  rebuild();
}

void ScoreCubeView::setSlice(SliceAxis axis, int index) {
  axis_ = axis;
  sliceIndex_ = index;
  {
    const QSignalBlocker b(axisBox_);
    axisBox_->setCurrentIndex(static_cast<int>(axis));
  }
  updateSliceRange();
  if (mode_ != Mode::Slice) setMode(Mode::Slice);
  else rebuild();
}

void ScoreCubeView::setIsosurfaceVisible(bool on) {
  isoOn_ = on;
  const QSignalBlocker b(isoCheck_);
  isoCheck_->setChecked(on);
  rebuild();
}

void ScoreCubeView::rebuild() {
  vtkRenderer* ren = view_->renderer();
  ren->RemoveAllViewProps();
  d_->overlay->RemoveAllViewProps();
  axisBox_->setEnabled(mode_ == Mode::Slice);
  sliceSpin_->setEnabled(mode_ == Mode::Slice);
  if (!cube_ || cube_->z.empty()) {
    markersShown_ = 0;
    d_->data = nullptr;
    d_->padded = nullptr;
    d_->iso = nullptr;
    caption_->setText(tr("No score cube: select a candidate and press Compute"));
    view_->requestRender();
    emit changed();
    return;
  }
  const stk::ScoreCube& c = *cube_;
  const float thr = static_cast<float>(c.threshold_z);
  float zMin = c.z.front(), zMax = c.z.front();
  for (float v : c.z) zMin = std::min(zMin, v), zMax = std::max(zMax, v);
  d_->zMax = std::max(zMax, thr);

  if (!d_->data) {
    d_->data = vtkSmartPointer<vtkImageData>::New();
    d_->padded = vtkSmartPointer<vtkImageData>::New();
  }
  // The cube as image data ([nv][ny][nx] is VTK's x-fastest order).
  d_->data->SetDimensions(c.nx, c.ny, c.nv());
  d_->data->SetSpacing(1.0, 1.0, vScale_);
  d_->data->SetOrigin(0.0, 0.0, 0.0);
  vtkNew<vtkFloatArray> z;
  z->SetName("Z");
  z->SetNumberOfValues(vtkIdType(c.z.size()));
  std::copy(c.z.begin(), c.z.end(), z->GetPointer(0));
  d_->data->GetPointData()->SetScalars(z);
  // Padded by one layer below the threshold on every side: the isosurface closes at the faces.
  const int px = c.nx + 2, py = c.ny + 2, pv = c.nv() + 2;
  d_->padded->SetDimensions(px, py, pv);
  d_->padded->SetSpacing(1.0, 1.0, vScale_);
  d_->padded->SetOrigin(-1.0, -1.0, -vScale_);
  vtkNew<vtkFloatArray> zp;
  zp->SetName("Z");
  zp->SetNumberOfValues(vtkIdType(px) * py * pv);
  const float pad = std::min(zMin, thr) - 1.0f;
  float* out = zp->GetPointer(0);
  std::fill(out, out + std::size_t(px) * py * pv, pad);
  for (int iv = 0; iv < c.nv(); ++iv)
    for (int iy = 0; iy < c.ny; ++iy)
      std::copy_n(c.z.data() + c.index(0, iy, iv), c.nx,
                  out + (std::size_t(iv + 1) * py + std::size_t(iy + 1)) * px + 1);
  d_->padded->GetPointData()->SetScalars(zp);

  // Colour map: viridis over 0..max(Z, threshold).
  d_->lut = vtkSmartPointer<vtkLookupTable>::New();
  d_->lut->SetNumberOfTableValues(256);
  d_->lut->SetTableRange(0.0, d_->zMax);
  for (int i = 0; i < 256; ++i) {
    const QRgb q = viridis(i / 255.0);
    d_->lut->SetTableValue(i, qRed(q) / 255.0, qGreen(q) / 255.0, qBlue(q) / 255.0, 1.0);
  }
  d_->lut->SetBelowRangeColor(0.15, 0.15, 0.2, 1.0);
  d_->lut->UseBelowRangeColorOn();
  d_->lut->Build();

  if (mode_ == Mode::Volume) {
    vtkNew<vtkSmartVolumeMapper> mapper;
    mapper->SetInputData(d_->data);
    vtkNew<vtkColorTransferFunction> colour;
    for (int i = 0; i <= 8; ++i) {
      const double t = i / 8.0;
      const QRgb q = viridis(t);
      colour->AddRGBPoint(t * d_->zMax, qRed(q) / 255.0, qGreen(q) / 255.0, qBlue(q) / 255.0);
    }
    vtkNew<vtkPiecewiseFunction> opacity;  // noise transparent, the threshold and above opaque
    opacity->AddPoint(std::min<double>(zMin, 0.0), 0.0);
    opacity->AddPoint(0.4 * thr, 0.0);
    opacity->AddPoint(thr, 0.12);
    opacity->AddPoint(std::max<double>(d_->zMax, thr + 1e-3), 0.6);
    vtkNew<vtkVolumeProperty> prop;
    prop->SetColor(colour);
    prop->SetScalarOpacity(opacity);
    prop->SetInterpolationTypeToLinear();
    prop->ShadeOff();
    d_->volume = vtkSmartPointer<vtkVolume>::New();
    d_->volume->SetMapper(mapper);
    d_->volume->SetProperty(prop);
    ren->AddVolume(d_->volume);
  } else {
    d_->sliceMapper = vtkSmartPointer<vtkImageSliceMapper>::New();
    d_->sliceMapper->SetInputData(d_->data);
    d_->sliceMapper->SetOrientation(axis_ == SliceAxis::XY ? 2 : axis_ == SliceAxis::XV ? 1 : 0);
    d_->sliceMapper->SetSliceNumber(sliceIndex_);
    d_->slice = vtkSmartPointer<vtkImageSlice>::New();
    d_->slice->SetMapper(d_->sliceMapper);
    d_->slice->GetProperty()->SetLookupTable(d_->lut);
    d_->slice->GetProperty()->UseLookupTableScalarRangeOn();
    d_->slice->GetProperty()->SetInterpolationTypeToNearest();
    ren->AddViewProp(d_->slice);
  }

  d_->iso = vtkSmartPointer<vtkFlyingEdges3D>::New();
  d_->iso->SetInputData(d_->padded);
  d_->iso->SetValue(0, thr);
  d_->iso->ComputeNormalsOn();
  d_->iso->Update();
  if (isoOn_) {
    vtkNew<vtkPolyDataMapper> m;
    m->SetInputConnection(d_->iso->GetOutputPort());
    m->ScalarVisibilityOff();
    d_->isoActor = vtkSmartPointer<vtkActor>::New();
    d_->isoActor->SetMapper(m);
    d_->isoActor->GetProperty()->SetColor(1.0, 0.55, 0.1);
    // Opaque over the volume (the ray caster blends on top of translucent geometry and would hide
    // it); translucent over a slice, which it cuts.
    d_->isoActor->GetProperty()->SetOpacity(mode_ == Mode::Volume ? 1.0 : 0.35);
    ren->AddActor(d_->isoActor);
  }

  markersShown_ = 0;
  if (!candidates_.empty()) {
    vtkNew<vtkPoints> pts;
    vtkNew<vtkCellArray> verts;
    for (const auto& p : candidates_) {
      // A slice shows the candidates on it (its plane, row or column), the volume all of them.
      const int along = axis_ == SliceAxis::XY ? p[2] : axis_ == SliceAxis::XV ? p[1] : p[0];
      if (mode_ == Mode::Slice && along != sliceIndex_) continue;
      const auto w = world(p[0], p[1], p[2]);
      const vtkIdType id = pts->InsertNextPoint(w[0], w[1], w[2]);
      verts->InsertNextCell(1, &id);
    }
    markersShown_ = static_cast<int>(pts->GetNumberOfPoints());
    if (markersShown_ > 0) {
      vtkNew<vtkPolyData> poly;
      poly->SetPoints(pts);
      poly->SetVerts(verts);
      vtkNew<vtkPolyDataMapper> m;
      m->SetInputData(poly);
      d_->markers = vtkSmartPointer<vtkActor>::New();
      d_->markers->SetMapper(m);
      d_->markers->GetProperty()->SetColor(1.0, 1.0, 1.0);
      d_->markers->GetProperty()->SetPointSize(14);
      d_->markers->GetProperty()->RenderPointsAsSpheresOn();
      d_->overlay->AddActor(d_->markers);  // over the surfaces: candidates sit inside them
    }
  }

  d_->axes = vtkSmartPointer<vtkCubeAxesActor>::New();
  d_->axes->SetBounds(0, c.nx - 1, 0, c.ny - 1, 0, (c.nv() - 1) * vScale_);
  d_->axes->SetCamera(ren->GetActiveCamera());
  d_->axes->SetXTitle("x - x0 [px]");
  d_->axes->SetYTitle("y - y0 [px]");
  d_->axes->SetZTitle("v plane");
  d_->axes->SetZAxisRange(0, c.nv() - 1);
  d_->axes->SetFlyModeToClosestTriad();
  d_->axes->XAxisMinorTickVisibilityOff();
  d_->axes->YAxisMinorTickVisibilityOff();
  d_->axes->ZAxisMinorTickVisibilityOff();
  for (int i = 0; i < 3; ++i) {
    d_->axes->GetTitleTextProperty(i)->SetColor(0.85, 0.85, 0.85);
    d_->axes->GetLabelTextProperty(i)->SetColor(0.75, 0.75, 0.75);
  }
  ren->AddActor(d_->axes);

  d_->bar = vtkSmartPointer<vtkScalarBarActor>::New();
  d_->bar->SetLookupTable(d_->lut);
  d_->bar->SetTitle("Z");
  d_->bar->SetNumberOfLabels(5);
  d_->bar->SetWidth(0.08);
  d_->bar->SetHeight(0.6);
  d_->bar->SetPosition(0.9, 0.2);
  ren->AddActor2D(d_->bar);

  vtkCamera* cam = ren->GetActiveCamera();
  cam->SetFocalPoint(0, 0, 0);
  cam->SetViewUp(0, 1, 0);
  if (mode_ == Mode::Slice && axis_ == SliceAxis::XY) cam->SetPosition(0, 0, 1);
  else if (mode_ == Mode::Slice && axis_ == SliceAxis::XV) {
    cam->SetPosition(0, -1, 0);
    cam->SetViewUp(0, 0, 1);
  } else if (mode_ == Mode::Slice) {
    cam->SetPosition(1, 0, 0);
    cam->SetViewUp(0, 0, 1);
  } else {
    cam->SetPosition(0.9, -1.3, 1.1);
    cam->SetViewUp(0, 0, 1);
  }
  ren->ResetCamera();
  cam->Zoom(mode_ == Mode::Volume ? 0.8 : 0.95);
  ren->ResetCameraClippingRange();

  const QString where = mode_ == Mode::Volume ? tr("volume")
                        : axis_ == SliceAxis::XY
                            ? tr("x–y at v plane %1 (v = %2, %3 px/d)")
                                  .arg(sliceIndex_)
                                  .arg(sliceIndex_ < int(c.vx.size()) ? c.vx[std::size_t(sliceIndex_)] : 0.0, 0, 'f', 3)
                                  .arg(sliceIndex_ < int(c.vy.size()) ? c.vy[std::size_t(sliceIndex_)] : 0.0, 0, 'f', 3)
                        : axis_ == SliceAxis::XV ? tr("x–v at y = %1").arg(c.y0 + sliceIndex_)
                                                 : tr("y–v at x = %1").arg(c.x0 + sliceIndex_);
  caption_->setText(tr("%1 × %2 px from (%3, %4) × %5 velocities · max Z %6 · threshold %7 · %8")
                        .arg(c.nx)
                        .arg(c.ny)
                        .arg(c.x0)
                        .arg(c.y0)
                        .arg(c.nv())
                        .arg(zMax, 0, 'f', 2)
                        .arg(c.threshold_z, 0, 'f', 2)
                        .arg(where));
  view_->requestRender();
  emit changed();
}

long long ScoreCubeView::isosurfacePoints() const {
  return d_->iso && d_->iso->GetOutput() ? static_cast<long long>(d_->iso->GetOutput()->GetNumberOfPoints()) : 0;
}

std::array<double, 6> ScoreCubeView::isosurfacePieceBounds(const std::array<double, 3>& p) const {
  std::array<double, 6> b{0, 0, 0, 0, 0, 0};
  if (isosurfacePoints() == 0) return b;
  vtkNew<vtkPolyDataConnectivityFilter> conn;
  conn->SetInputConnection(d_->iso->GetOutputPort());
  conn->SetExtractionModeToClosestPointRegion();
  conn->SetClosestPoint(p[0], p[1], p[2]);
  conn->Update();
  vtkPolyData* out = conn->GetOutput();
  // Bounds of the points the piece's cells use (whatever the filter keeps of the others).
  bool first = true;
  vtkNew<vtkIdList> ids;
  for (vtkIdType ci = 0; ci < out->GetNumberOfCells(); ++ci) {
    out->GetCellPoints(ci, ids);
    for (vtkIdType k = 0; k < ids->GetNumberOfIds(); ++k) {
      double q[3];
      out->GetPoint(ids->GetId(k), q);
      for (int a = 0; a < 3; ++a) {
        if (first || q[a] < b[2 * a]) b[2 * a] = q[a];
        if (first || q[a] > b[2 * a + 1]) b[2 * a + 1] = q[a];
      }
      first = false;
    }
  }
  return b;
}

std::vector<float> ScoreCubeView::sliceValues(int* cols, int* rows) const {
  *cols = *rows = 0;
  if (!cube_ || mode_ != Mode::Slice) return {};
  const stk::ScoreCube& c = *cube_;
  std::vector<float> out;
  if (axis_ == SliceAxis::XY) {
    *cols = c.nx, *rows = c.ny;
    for (int iy = 0; iy < c.ny; ++iy)
      for (int ix = 0; ix < c.nx; ++ix) out.push_back(c.at(ix, iy, sliceIndex_));
  } else if (axis_ == SliceAxis::XV) {
    *cols = c.nx, *rows = c.nv();
    for (int iv = 0; iv < c.nv(); ++iv)
      for (int ix = 0; ix < c.nx; ++ix) out.push_back(c.at(ix, sliceIndex_, iv));
  } else {
    *cols = c.ny, *rows = c.nv();
    for (int iv = 0; iv < c.nv(); ++iv)
      for (int iy = 0; iy < c.ny; ++iy) out.push_back(c.at(sliceIndex_, iy, iv));
  }
  return out;
}

}  // namespace almagest::ui::stackview
