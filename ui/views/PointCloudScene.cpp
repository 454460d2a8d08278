#include "views/PointCloudScene.hpp"

#include <QLocale>

#include <vtkActor.h>
#include <vtkCamera.h>
#include <vtkCellArray.h>
#include <vtkCubeAxesActor.h>
#include <vtkFloatArray.h>
#include <vtkNew.h>
#include <vtkOutlineSource.h>
#include <vtkPoints.h>
#include <vtkPolyData.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkRenderer.h>
#include <vtkTextActor.h>
#include <vtkTextProperty.h>

#include <algorithm>
#include <limits>

#include "views/VtkView.hpp"

namespace almagest::ui {

namespace {

// Colours (RGB 0..1) chosen to read well on the dark gradient background.
constexpr double kDataColour[3] = {1.00, 0.76, 0.30};     // warm gold
constexpr double kRandomColour[3] = {0.36, 0.56, 0.92};   // cornflower blue
constexpr double kFrameColour[3] = {0.62, 0.67, 0.78};
constexpr double kTextColour[3] = {0.90, 0.92, 0.96};
constexpr double kBackgroundBottom[3] = {0.015, 0.020, 0.050};
constexpr double kBackgroundTop[3] = {0.090, 0.115, 0.200};

struct Cloud {
  vtkNew<vtkPolyData> poly;
  vtkNew<vtkPolyDataMapper> mapper;
  vtkNew<vtkActor> actor;
  std::size_t shown = 0;
  std::size_t total = 0;

  Cloud() {
    mapper->SetInputData(poly);
    mapper->ScalarVisibilityOff();
    actor->SetMapper(mapper);
  }

  // Copies every k-th point so that at most `maxPoints` are drawn; one vertex cell per point.
  void set(const almagest::io::Catalogue* cat, std::size_t maxPoints) {
    vtkNew<vtkPoints> pts;
    pts->SetDataTypeToFloat();
    vtkNew<vtkCellArray> verts;
    total = cat ? cat->size() : 0;
    if (total > 0) {
      const std::size_t stride = (total + maxPoints - 1) / maxPoints;
      const std::size_t n = (total + stride - 1) / stride;
      pts->SetNumberOfPoints(static_cast<vtkIdType>(n));
      vtkIdType id = 0;
      for (std::size_t i = 0; i < total; i += stride, ++id)
        pts->SetPoint(id, cat->x[i], cat->y[i], cat->z[i]);
      verts->AllocateExact(static_cast<vtkIdType>(n), static_cast<vtkIdType>(n));
      for (vtkIdType i = 0; i < static_cast<vtkIdType>(n); ++i) verts->InsertNextCell(1, &i);
      shown = n;
    } else {
      shown = 0;
    }
    poly->SetPoints(pts);
    poly->SetVerts(verts);
    poly->Modified();
    actor->SetVisibility(shown > 0);
  }

  void bounds(double b[6]) const {
    if (shown == 0) return;
    double pb[6];
    poly->GetBounds(pb);
    for (int k = 0; k < 3; ++k) {
      b[2 * k] = std::min(b[2 * k], pb[2 * k]);
      b[2 * k + 1] = std::max(b[2 * k + 1], pb[2 * k + 1]);
    }
  }
};

void styleText(vtkTextProperty* p, int size, const double colour[3], bool bold = false) {
  p->SetFontFamilyToArial();
  p->SetFontSize(size);
  p->SetColor(colour[0], colour[1], colour[2]);
  p->SetBold(bold);
  p->SetShadow(false);
}

}  // namespace

struct PointCloudScene::Impl {
  VtkView* view = nullptr;
  Cloud data, randoms;
  vtkNew<vtkOutlineSource> outline;
  vtkNew<vtkPolyDataMapper> outlineMapper;
  vtkNew<vtkActor> outlineActor;
  vtkNew<vtkCubeAxesActor> axes;
  vtkNew<vtkTextActor> title, dataCaption, randomCaption, extent, status;
  bool randomsVisible = true;

  void placeCaption(vtkTextActor* a, double y) {
    a->GetPositionCoordinate()->SetCoordinateSystemToNormalizedViewport();
    a->SetPosition(0.015, y);
    a->GetTextProperty()->SetVerticalJustificationToTop();
  }

  void updateCaptions() {
    const QLocale loc;
    if (data.total == 0 && randoms.total == 0) {
      title->SetInput("No catalogue loaded");
      dataCaption->SetInput("File > Open demo data, or File > Open data...");
      randomCaption->SetInput("");
      extent->SetInput("");
      return;
    }
    title->SetInput("Catalogue");
    auto caption = [&loc](const char* what, const Cloud& c) {
      QString s = QStringLiteral("%1  %2 points").arg(QLatin1String(what), loc.toString(qulonglong(c.total)));
      if (c.shown < c.total) s += QStringLiteral(" (%1 shown)").arg(loc.toString(qulonglong(c.shown)));
      return s.toStdString();
    };
    dataCaption->SetInput(data.total ? caption("data   ", data).c_str() : "");
    randomCaption->SetInput(randoms.total ? caption("randoms", randoms).c_str() : "");
  }

  void updateFrame() {
    double b[6] = {std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(),
                   std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(),
                   std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest()};
    data.bounds(b);
    if (randomsVisible) randoms.bounds(b);
    const bool any = b[0] <= b[1];
    outlineActor->SetVisibility(any);
    axes->SetVisibility(any);
    if (!any) {
      extent->SetInput("");
      return;
    }
    extent->SetInput(QStringLiteral("x %1 .. %2   y %3 .. %4   z %5 .. %6  Mpc/h")
                         .arg(b[0], 0, 'f', 1).arg(b[1], 0, 'f', 1).arg(b[2], 0, 'f', 1)
                         .arg(b[3], 0, 'f', 1).arg(b[4], 0, 'f', 1).arg(b[5], 0, 'f', 1)
                         .toStdString().c_str());
    for (int k = 0; k < 3; ++k)  // a flat catalogue still gets a visible box
      if (b[2 * k + 1] - b[2 * k] < 1e-9) {
        b[2 * k] -= 0.5;
        b[2 * k + 1] += 0.5;
      }
    outline->SetBounds(b);
    axes->SetBounds(b);
  }
};

PointCloudScene::PointCloudScene(VtkView* view) : d_(std::make_unique<Impl>()) {
  d_->view = view;
  vtkRenderer* ren = view->renderer();
  ren->GradientBackgroundOn();
  ren->SetBackground(kBackgroundBottom[0], kBackgroundBottom[1], kBackgroundBottom[2]);
  ren->SetBackground2(kBackgroundTop[0], kBackgroundTop[1], kBackgroundTop[2]);

  vtkProperty* dp = d_->data.actor->GetProperty();
  dp->SetColor(kDataColour[0], kDataColour[1], kDataColour[2]);
  dp->SetPointSize(4.0f);
  dp->SetRenderPointsAsSpheres(true);
  dp->SetAmbient(0.25);
  dp->SetDiffuse(0.8);
  dp->SetSpecular(0.3);
  dp->SetSpecularPower(20);

  vtkProperty* rp = d_->randoms.actor->GetProperty();
  rp->SetColor(kRandomColour[0], kRandomColour[1], kRandomColour[2]);
  rp->SetPointSize(1.5f);
  rp->SetLighting(false);

  d_->outlineMapper->SetInputConnection(d_->outline->GetOutputPort());
  d_->outlineActor->SetMapper(d_->outlineMapper);
  d_->outlineActor->GetProperty()->SetColor(kFrameColour[0], kFrameColour[1], kFrameColour[2]);
  d_->outlineActor->GetProperty()->SetLighting(false);
  d_->outlineActor->GetProperty()->SetOpacity(0.6);

  vtkCubeAxesActor* ax = d_->axes;
  ax->SetCamera(ren->GetActiveCamera());
  ax->SetXTitle("x");
  ax->SetYTitle("y");
  ax->SetZTitle("z");
  ax->SetFlyModeToOuterEdges();
  ax->SetScreenSize(11.0);
  ax->SetLabelOffset(12.0);
  ax->SetTitleOffset(18.0);
  for (int i = 0; i < 3; ++i) {
    styleText(ax->GetTitleTextProperty(i), 14, kTextColour, true);
    styleText(ax->GetLabelTextProperty(i), 12, kFrameColour);
  }
  ax->GetXAxesLinesProperty()->SetColor(kFrameColour[0], kFrameColour[1], kFrameColour[2]);
  ax->GetYAxesLinesProperty()->SetColor(kFrameColour[0], kFrameColour[1], kFrameColour[2]);
  ax->GetZAxesLinesProperty()->SetColor(kFrameColour[0], kFrameColour[1], kFrameColour[2]);
  ax->XAxisMinorTickVisibilityOff();
  ax->YAxisMinorTickVisibilityOff();
  ax->ZAxisMinorTickVisibilityOff();
  // Tick labels crowd each other at typical window sizes: the extent goes into the caption.
  ax->XAxisLabelVisibilityOff();
  ax->YAxisLabelVisibilityOff();
  ax->ZAxisLabelVisibilityOff();

  styleText(d_->title->GetTextProperty(), 16, kTextColour, true);
  styleText(d_->dataCaption->GetTextProperty(), 14, kDataColour);
  styleText(d_->randomCaption->GetTextProperty(), 14, kRandomColour);
  styleText(d_->status->GetTextProperty(), 13, kFrameColour);
  styleText(d_->extent->GetTextProperty(), 13, kFrameColour);
  d_->placeCaption(d_->title, 0.975);
  d_->placeCaption(d_->dataCaption, 0.925);
  d_->placeCaption(d_->randomCaption, 0.885);
  d_->extent->GetPositionCoordinate()->SetCoordinateSystemToNormalizedViewport();
  d_->extent->SetPosition(0.015, 0.02);
  d_->status->GetPositionCoordinate()->SetCoordinateSystemToNormalizedViewport();
  d_->status->SetPosition(0.985, 0.975);
  d_->status->GetTextProperty()->SetJustificationToRight();
  d_->status->GetTextProperty()->SetVerticalJustificationToTop();

  ren->AddActor(d_->randoms.actor);
  ren->AddActor(d_->data.actor);
  ren->AddActor(d_->outlineActor);
  ren->AddActor(d_->axes);
  ren->AddActor2D(d_->title);
  ren->AddActor2D(d_->dataCaption);
  ren->AddActor2D(d_->randomCaption);
  ren->AddActor2D(d_->extent);
  ren->AddActor2D(d_->status);

  d_->data.set(nullptr, kMaxShownPoints);
  d_->randoms.set(nullptr, kMaxShownPoints);
  d_->updateCaptions();
  d_->updateFrame();
  view->requestRender();
}

PointCloudScene::~PointCloudScene() {
  vtkRenderer* ren = d_->view->renderer();
  ren->RemoveActor(d_->randoms.actor);
  ren->RemoveActor(d_->data.actor);
  ren->RemoveActor(d_->outlineActor);
  ren->RemoveActor(d_->axes);
  ren->RemoveActor2D(d_->title);
  ren->RemoveActor2D(d_->dataCaption);
  ren->RemoveActor2D(d_->randomCaption);
  ren->RemoveActor2D(d_->extent);
  ren->RemoveActor2D(d_->status);
}

void PointCloudScene::setCatalogues(const almagest::io::Catalogue* data,
                                    const almagest::io::Catalogue* randoms, bool resetCam) {
  d_->data.set(data, kMaxShownPoints);
  d_->randoms.set(randoms, kMaxShownPoints);
  d_->randoms.actor->SetVisibility(d_->randomsVisible && d_->randoms.shown > 0);
  d_->updateCaptions();
  d_->updateFrame();
  if (resetCam) resetCamera();
  else d_->view->requestRender();
}

void PointCloudScene::setStatusText(const QString& text) {
  d_->status->SetInput(text.toStdString().c_str());
  d_->view->requestRender();
}

void PointCloudScene::setRandomsVisible(bool visible) {
  d_->randomsVisible = visible;
  d_->randoms.actor->SetVisibility(visible && d_->randoms.shown > 0);
  d_->updateFrame();
  d_->view->requestRender();
}

void PointCloudScene::resetCamera() {
  vtkRenderer* ren = d_->view->renderer();
  vtkCamera* cam = ren->GetActiveCamera();
  // An oblique view from above a corner, z up.
  cam->SetFocalPoint(0, 0, 0);
  cam->SetPosition(1.0, -1.6, 0.9);
  cam->SetViewUp(0, 0, 1);
  double b[6];
  d_->outline->GetBounds(b);
  if (d_->outlineActor->GetVisibility()) ren->ResetCamera(b);
  else ren->ResetCamera();
  cam->Zoom(1.05);
  ren->ResetCameraClippingRange();
  d_->view->requestRender();
}

std::size_t PointCloudScene::shownData() const noexcept { return d_->data.shown; }
std::size_t PointCloudScene::shownRandoms() const noexcept { return d_->randoms.shown; }

}  // namespace almagest::ui
