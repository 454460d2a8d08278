#include "views/PointCloudScene.hpp"

#include <QLocale>

#include <vtkActor.h>
#include <vtkCamera.h>
#include <vtkCellArray.h>
#include <vtkCellData.h>
#include <vtkCubeAxesActor.h>
#include <vtkFloatArray.h>
#include <vtkIdList.h>
#include <vtkNew.h>
#include <vtkCallbackCommand.h>
#include <vtkCommand.h>
#include <vtkGenericOpenGLRenderWindow.h>
#include <vtkInteractorObserver.h>
#include <vtkLookupTable.h>
#include <vtkOutlineSource.h>
#include <vtkPlanes.h>
#include <vtkPointData.h>
#include <vtkPointPicker.h>
#include <vtkPoints.h>
#include <vtkRenderWindowInteractor.h>
#include <vtkUnsignedCharArray.h>
#include <vtkPolyData.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkRenderer.h>
#include <vtkTextActor.h>
#include <vtkTextProperty.h>

#include <QJsonArray>

#include <algorithm>
#include <chrono>
#include <limits>

#include "npcf/ConfigurationGeometry.hpp"
#include "npcf/NeighbourGraph.hpp"
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
  static constexpr int kLevels = PointCloudScene::kLodLevels;
  vtkNew<vtkPolyData> poly;
  vtkNew<vtkPolyDataMapper> mapper;
  vtkNew<vtkActor> actor;
  // Level-of-detail subsamples, finest first (PointCloudScene::kLodPoints[l] points at most),
  // drawn as flat points of the same colour (no sphere shading) while the camera moves.
  vtkNew<vtkPolyData> lodPoly[kLevels];
  vtkNew<vtkPolyDataMapper> lodMapper[kLevels];
  vtkNew<vtkActor> lodActor[kLevels];
  vtkNew<vtkProperty> lodProperty;
  std::size_t lodShown[kLevels] = {};
  double lodShare = 1.0;  // of kLodPoints: randoms (uniform, a backdrop) get a third of the data's
  std::size_t shown = 0;
  std::size_t total = 0;
  std::size_t stride = 1;
  double wmin = 1, wmax = 1;

  Cloud() {
    mapper->SetInputData(poly);
    mapper->ScalarVisibilityOff();
    actor->SetMapper(mapper);
    lodProperty->SetLighting(false);
    for (int l = 0; l < kLevels; ++l) {
      lodMapper[l]->SetInputData(lodPoly[l]);
      lodMapper[l]->ScalarVisibilityOff();
      lodActor[l]->SetMapper(lodMapper[l]);
      lodActor[l]->SetProperty(lodProperty);
      lodActor[l]->SetVisibility(false);
      lodActor[l]->PickableOff();
    }
  }

  // The LOD property follows the full one: colour, and a point size a little smaller than the
  // full one's (flat squares cover more than shaded spheres).
  void syncLodProperty() {
    vtkProperty* p = actor->GetProperty();
    lodProperty->SetColor(p->GetColor());
    lodProperty->SetPointSize(std::max(1.0f, std::min(3.0f, p->GetPointSize() - 1.0f)));
    lodProperty->SetOpacity(p->GetOpacity());
  }

  static void fill(vtkPolyData* poly, const almagest::io::Catalogue* cat, std::size_t stride, std::size_t& n) {
    vtkNew<vtkPoints> pts;
    pts->SetDataTypeToFloat();
    vtkNew<vtkCellArray> verts;
    vtkNew<vtkFloatArray> w;
    w->SetName("weight");
    const std::size_t total = cat ? cat->size() : 0;
    n = total > 0 ? (total + stride - 1) / stride : 0;
    pts->SetNumberOfPoints(static_cast<vtkIdType>(n));
    w->SetNumberOfValues(static_cast<vtkIdType>(n));
    vtkIdType id = 0;
    for (std::size_t i = 0; i < total; i += stride, ++id) {
      pts->SetPoint(id, cat->x[i], cat->y[i], cat->z[i]);
      w->SetValue(id, static_cast<float>(i < cat->w.size() ? cat->w[i] : 1.0));
    }
    verts->AllocateExact(static_cast<vtkIdType>(n), static_cast<vtkIdType>(n));
    for (vtkIdType i = 0; i < static_cast<vtkIdType>(n); ++i) verts->InsertNextCell(1, &i);
    poly->SetPoints(pts);
    poly->SetVerts(verts);
    poly->GetPointData()->SetScalars(w);
    poly->Modified();
  }

  // Copies every k-th point so that at most `maxPoints` are drawn (one vertex cell per point),
  // and every k_l-th for each level of detail.
  void set(const almagest::io::Catalogue* cat, std::size_t maxPoints) {
    total = cat ? cat->size() : 0;
    stride = total > 0 ? (total + maxPoints - 1) / maxPoints : 1;
    fill(poly, cat, stride, shown);
    for (int l = 0; l < kLevels; ++l) {
      const std::size_t cap = std::max<std::size_t>(1000, static_cast<std::size_t>(PointCloudScene::kLodPoints[l] * lodShare));
      const std::size_t lodStride = total > 0 ? std::max(stride, (total + cap - 1) / cap) : 1;
      fill(lodPoly[l], lodStride > stride ? cat : nullptr, lodStride, lodShown[l]);
    }
    wmin = 1;
    wmax = 1;
    if (cat && !cat->w.empty()) {
      const auto [lo, hi] = std::minmax_element(cat->w.begin(), cat->w.end());
      wmin = *lo;
      wmax = *hi;
    }
    actor->SetVisibility(shown > 0);
  }

  bool hasLod() const { return lodShown[0] > 0; }
  /// Points drawn now at `level` (the full cloud where the level has no subsample).
  std::size_t drawnAt(int level) const { return lodShown[level] > 0 ? lodShown[level] : shown; }
  void setLod(bool on, int level, bool visible) {
    const bool lod = on && lodShown[level] > 0;
    actor->SetVisibility(visible && shown > 0 && !lod);
    for (int l = 0; l < kLevels; ++l) lodActor[l]->SetVisibility(visible && shown > 0 && lod && l == level);
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
  bool lod = false;
  bool adaptive = true;
  int lodLevel = 1;  // adapted to the frame time while interacting (see the renderer observer)
  vtkNew<vtkCallbackCommand> frameObserver;
  std::chrono::steady_clock::time_point frameStart;
  ColourBy colourBy = ColourBy::Sample;
  bool clipped = false;
  std::array<double, 6> clipBox{0, 0, 0, 0, 0, 0};
  vtkNew<vtkPlanes> clipPlanes;
  vtkNew<vtkLookupTable> weightLut;
  // Neighbour graph: spokes, tuple edges, the hub.
  vtkNew<vtkPolyData> spokes, tupleLines, hubPoly;
  vtkNew<vtkPolyDataMapper> spokeMapper, tupleMapper, hubMapper;
  vtkNew<vtkActor> spokeActor, tupleActor, hubActor;
  std::size_t nSpokes = 0, nTupleEdges = 0;
  long long hub = -1;
  vtkNew<vtkCallbackCommand> interactionObserver;
  vtkInteractorObserver* observedStyle = nullptr;

  void applyLod() {
    data.syncLodProperty();
    randoms.syncLodProperty();
    data.setLod(lod, lodLevel, true);
    randoms.setLod(lod, lodLevel, randomsVisible);
  }

  // After each frame rendered while the camera moves: a frame slower than the budget selects a
  // coarser level for the next one, a fast one a finer level (as vtkLODActor does).
  void adaptLod(double seconds) {
    if (!lod || !adaptive) return;
    int next = lodLevel;
    if (seconds > PointCloudScene::kFrameBudget && lodLevel + 1 < PointCloudScene::kLodLevels) ++next;
    else if (seconds < PointCloudScene::kFrameBudget / 3 && lodLevel > 0) --next;
    if (next != lodLevel) {
      lodLevel = next;
      applyLod();
    }
  }

  void applyColours() {
    const bool byWeight = colourBy == ColourBy::Weight;
    double lo = std::min(data.wmin, randoms.shown ? randoms.wmin : data.wmin);
    double hi = std::max(data.wmax, randoms.shown ? randoms.wmax : data.wmax);
    if (!(hi > lo)) hi = lo + 1;
    weightLut->SetTableRange(lo, hi);
    for (Cloud* c : {&data, &randoms})
      for (int l = -1; l < Cloud::kLevels; ++l) {
        vtkPolyDataMapper* m = l < 0 ? c->mapper.Get() : c->lodMapper[l].Get();
        m->SetScalarVisibility(byWeight);
        m->SetLookupTable(weightLut);
        m->SetScalarRange(lo, hi);
        m->SetScalarModeToUsePointData();
        m->SetClippingPlanes(clipped ? clipPlanes.Get() : nullptr);
      }
  }

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
  d_->randoms.lodShare = 1.0 / 3.0;
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

  d_->weightLut->SetHueRange(0.66, 0.0);  // blue (low weight) to red (high)
  d_->weightLut->Build();
  d_->spokeMapper->SetInputData(d_->spokes);
  d_->spokeMapper->SetScalarModeToUseCellData();
  d_->spokeActor->SetMapper(d_->spokeMapper);
  d_->spokeActor->GetProperty()->SetLineWidth(2.0f);
  d_->spokeActor->GetProperty()->SetLighting(false);
  d_->tupleMapper->SetInputData(d_->tupleLines);
  d_->tupleMapper->ScalarVisibilityOff();
  d_->tupleActor->SetMapper(d_->tupleMapper);
  d_->tupleActor->GetProperty()->SetColor(1.0, 0.55, 0.15);
  d_->tupleActor->GetProperty()->SetLineWidth(1.5f);
  d_->tupleActor->GetProperty()->SetLighting(false);
  d_->hubMapper->SetInputData(d_->hubPoly);
  d_->hubMapper->ScalarVisibilityOff();
  d_->hubActor->SetMapper(d_->hubMapper);
  d_->hubActor->GetProperty()->SetColor(1.0, 1.0, 1.0);
  d_->hubActor->GetProperty()->SetPointSize(12.0f);
  d_->hubActor->GetProperty()->SetRenderPointsAsSpheres(true);
  for (vtkActor* a : {d_->spokeActor.Get(), d_->tupleActor.Get(), d_->hubActor.Get()}) {
    a->SetVisibility(false);
    a->PickableOff();
    ren->AddActor(a);
  }
  // Level of detail while the trackball style moves the camera.
  d_->interactionObserver->SetClientData(this);
  d_->interactionObserver->SetCallback([](vtkObject*, unsigned long event, void* client, void*) {
    auto* scene = static_cast<PointCloudScene*>(client);
    if (event == vtkCommand::StartInteractionEvent) scene->beginInteraction();
    else scene->endInteraction();
  });
  if (vtkRenderWindowInteractor* iren = view->renderWindow()->GetInteractor())
    if (vtkInteractorObserver* style = iren->GetInteractorStyle()) {
      style->AddObserver(vtkCommand::StartInteractionEvent, d_->interactionObserver);
      style->AddObserver(vtkCommand::EndInteractionEvent, d_->interactionObserver);
      d_->observedStyle = style;
    }
  for (int l = 0; l < kLodLevels; ++l) {
    ren->AddActor(d_->randoms.lodActor[l]);
    ren->AddActor(d_->data.lodActor[l]);
  }
  // The wall time of every frame rendered while interacting (until the software rasteriser has
  // finished it: WaitForCompletion), for the adaptive level of detail.
  d_->frameObserver->SetClientData(d_.get());
  d_->frameObserver->SetCallback([](vtkObject*, unsigned long event, void* client, void*) {
    auto* d = static_cast<Impl*>(client);
    if (!d->lod) return;
    if (event == vtkCommand::StartEvent) {
      d->frameStart = std::chrono::steady_clock::now();
      return;
    }
    d->view->renderWindow()->WaitForCompletion();
    d->adaptLod(std::chrono::duration<double>(std::chrono::steady_clock::now() - d->frameStart).count());
  });
  ren->AddObserver(vtkCommand::StartEvent, d_->frameObserver);
  ren->AddObserver(vtkCommand::EndEvent, d_->frameObserver);
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
  if (d_->observedStyle) d_->observedStyle->RemoveObserver(d_->interactionObserver);
  ren->RemoveObserver(d_->frameObserver);
  for (vtkActor* a : {d_->spokeActor.Get(), d_->tupleActor.Get(), d_->hubActor.Get()}) ren->RemoveActor(a);
  for (int l = 0; l < kLodLevels; ++l) {
    ren->RemoveActor(d_->randoms.lodActor[l]);
    ren->RemoveActor(d_->data.lodActor[l]);
  }
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
  d_->applyLod();
  d_->applyColours();
  setNeighbourGraph(nullptr, 1);  // the graph belongs to the previous points
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
  d_->applyLod();
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

void PointCloudScene::beginInteraction() {
  if (d_->lod) return;
  d_->lod = true;
  d_->applyLod();
}

void PointCloudScene::endInteraction() {
  if (!d_->lod) return;
  d_->lod = false;
  d_->applyLod();
  d_->view->requestRender();
}

bool PointCloudScene::lodActive() const noexcept { return d_->lod && (d_->data.hasLod() || d_->randoms.hasLod()); }

int PointCloudScene::lodLevel() const noexcept { return d_->lodLevel; }

void PointCloudScene::setLodLevel(int level, bool adaptive) {
  d_->lodLevel = std::clamp(level, 0, kLodLevels - 1);
  d_->adaptive = adaptive;
  d_->applyLod();
  d_->view->requestRender();
}

std::size_t PointCloudScene::drawnPoints() const noexcept {
  if (!lodActive()) return d_->data.shown + (d_->randomsVisible ? d_->randoms.shown : 0);
  return d_->data.drawnAt(d_->lodLevel) + (d_->randomsVisible ? d_->randoms.drawnAt(d_->lodLevel) : 0);
}

void PointCloudScene::setColourBy(ColourBy c) {
  d_->colourBy = c;
  d_->applyColours();
  d_->view->requestRender();
}

PointCloudScene::ColourBy PointCloudScene::colourBy() const noexcept { return d_->colourBy; }

void PointCloudScene::setClipBox(const std::array<double, 6>& box) {
  d_->clipped = true;
  d_->clipBox = box;
  double b[6];
  std::copy(box.begin(), box.end(), b);
  d_->clipPlanes->SetBounds(b);
  d_->applyColours();
  d_->view->requestRender();
}

void PointCloudScene::clearClipBox() {
  d_->clipped = false;
  d_->applyColours();
  d_->view->requestRender();
}

bool PointCloudScene::hasClipBox() const noexcept { return d_->clipped; }

void PointCloudScene::setNeighbourGraph(const NeighbourGraph* g, int nbins) {
  vtkNew<vtkPoints> pts;
  vtkNew<vtkCellArray> spokeCells, tupleCells, hubCells;
  vtkNew<vtkUnsignedCharArray> colours;
  colours->SetNumberOfComponents(3);
  d_->nSpokes = d_->nTupleEdges = 0;
  d_->hub = -1;
  if (g) {
    d_->hub = static_cast<long long>(g->hub);
    pts->InsertNextPoint(g->centre[0], g->centre[1], g->centre[2]);
    for (const auto& p : g->position) pts->InsertNextPoint(p[0], p[1], p[2]);
    const vtkIdType hub = 0;
    hubCells->InsertNextCell(1, &hub);
    for (std::size_t k = 0; k < g->position.size(); ++k) {
      const vtkIdType ids[2] = {0, static_cast<vtkIdType>(k + 1)};
      spokeCells->InsertNextCell(2, ids);
      const auto c = bin_colour(g->bin[k], std::max(1, nbins));
      colours->InsertNextTuple3(255 * c[0], 255 * c[1], 255 * c[2]);
    }
    // Tuple edges among the neighbours (the spokes to them are drawn already).
    for (const auto& t : g->tuples) {
      const int n = t[2] < 0 ? 2 : 3;
      for (int a = 0; a < n; ++a)
        for (int b = a + 1; b < n; ++b) {
          const vtkIdType ids[2] = {t[a] + 1, t[b] + 1};
          tupleCells->InsertNextCell(2, ids);
        }
    }
    d_->nSpokes = g->position.size();
    d_->nTupleEdges = static_cast<std::size_t>(tupleCells->GetNumberOfCells());
  }
  d_->spokes->SetPoints(pts);
  d_->spokes->SetLines(spokeCells);
  d_->spokes->GetCellData()->SetScalars(colours);
  d_->tupleLines->SetPoints(pts);
  d_->tupleLines->SetLines(tupleCells);
  d_->hubPoly->SetPoints(pts);
  d_->hubPoly->SetVerts(hubCells);
  for (vtkPolyData* p : {d_->spokes.Get(), d_->tupleLines.Get(), d_->hubPoly.Get()}) p->Modified();
  d_->spokeActor->SetVisibility(d_->nSpokes > 0);
  d_->tupleActor->SetVisibility(d_->nTupleEdges > 0);
  d_->hubActor->SetVisibility(g != nullptr);
  d_->view->requestRender();
}

std::size_t PointCloudScene::neighbourEdges() const noexcept { return d_->nSpokes; }

std::vector<PointCloudScene::Spoke> PointCloudScene::drawnSpokes() const {
  std::vector<Spoke> out;
  vtkPolyData* p = d_->spokes;
  vtkCellArray* lines = p->GetLines();
  auto* colours = vtkUnsignedCharArray::SafeDownCast(p->GetCellData()->GetScalars());
  if (!lines || !colours || !p->GetPoints()) return out;
  vtkNew<vtkIdList> ids;
  lines->InitTraversal();
  for (vtkIdType c = 0; lines->GetNextCell(ids); ++c) {
    if (ids->GetNumberOfIds() != 2) continue;
    Spoke s;
    p->GetPoints()->GetPoint(ids->GetId(1), s.end.data());
    for (int k = 0; k < 3; ++k) s.rgb[k] = static_cast<int>(colours->GetComponent(c, k));
    out.push_back(s);
  }
  return out;
}

long long PointCloudScene::neighbourHub() const noexcept { return d_->hub; }

std::array<double, 6> PointCloudScene::pointBounds() const {
  double b[6] = {std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(),
                 std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest(),
                 std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest()};
  d_->data.bounds(b);
  d_->randoms.bounds(b);
  if (b[0] > b[1]) return {0, 0, 0, 0, 0, 0};
  return {b[0], b[1], b[2], b[3], b[4], b[5]};
}
std::size_t PointCloudScene::tupleEdges() const noexcept { return d_->nTupleEdges; }

long long PointCloudScene::pickPoint(int x, int y) const {
  vtkNew<vtkPointPicker> picker;
  picker->SetTolerance(0.01);
  picker->PickFromListOn();
  picker->AddPickList(d_->data.actor);
  picker->AddPickList(d_->randoms.actor);
  const double dpr = d_->view->devicePixelRatioF();
  const int h = static_cast<int>(d_->view->height() * dpr);
  if (!picker->Pick(x * dpr, h - 1 - y * dpr, 0, d_->view->renderer())) return -1;
  const vtkIdType id = picker->GetPointId();
  if (id < 0) return -1;
  if (picker->GetActor() == d_->data.actor.Get()) return static_cast<long long>(id) * static_cast<long long>(d_->data.stride);
  if (picker->GetActor() == d_->randoms.actor.Get())
    return static_cast<long long>(d_->data.total) + static_cast<long long>(id) * static_cast<long long>(d_->randoms.stride);
  return -1;
}

QJsonObject PointCloudScene::save_state() const {
  QJsonObject o;
  o[QStringLiteral("colour_by")] = d_->colourBy == ColourBy::Weight ? QStringLiteral("weight") : QStringLiteral("sample");
  o[QStringLiteral("randoms_visible")] = d_->randomsVisible;
  if (d_->clipped) o[QStringLiteral("clip_box")] = QJsonArray{d_->clipBox[0], d_->clipBox[1], d_->clipBox[2], d_->clipBox[3], d_->clipBox[4], d_->clipBox[5]};
  if (d_->hub >= 0) o[QStringLiteral("neighbour_hub")] = static_cast<double>(d_->hub);
  vtkCamera* cam = d_->view->renderer()->GetActiveCamera();
  double p[3], f[3], u[3];
  cam->GetPosition(p);
  cam->GetFocalPoint(f);
  cam->GetViewUp(u);
  o[QStringLiteral("camera")] = QJsonArray{p[0], p[1], p[2], f[0], f[1], f[2], u[0], u[1], u[2]};
  return o;
}

void PointCloudScene::restore_state(const QJsonObject& s) {
  setColourBy(s.value(QStringLiteral("colour_by")).toString() == QLatin1String("weight") ? ColourBy::Weight : ColourBy::Sample);
  setRandomsVisible(s.value(QStringLiteral("randoms_visible")).toBool(true));
  const QJsonArray box = s.value(QStringLiteral("clip_box")).toArray();
  if (box.size() == 6) setClipBox({box[0].toDouble(), box[1].toDouble(), box[2].toDouble(), box[3].toDouble(), box[4].toDouble(), box[5].toDouble()});
  else clearClipBox();
  const QJsonArray c = s.value(QStringLiteral("camera")).toArray();
  if (c.size() == 9) {
    vtkCamera* cam = d_->view->renderer()->GetActiveCamera();
    cam->SetPosition(c[0].toDouble(), c[1].toDouble(), c[2].toDouble());
    cam->SetFocalPoint(c[3].toDouble(), c[4].toDouble(), c[5].toDouble());
    cam->SetViewUp(c[6].toDouble(), c[7].toDouble(), c[8].toDouble());
    d_->view->renderer()->ResetCameraClippingRange();
    d_->view->requestRender();
  }
}


}  // namespace almagest::ui
