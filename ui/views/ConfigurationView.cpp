#include "views/ConfigurationView.hpp"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QJsonArray>
#include <QLabel>
#include <QVBoxLayout>

#include <vtkActor.h>
#include <vtkCamera.h>
#include <vtkDiskSource.h>
#include <vtkLineSource.h>
#include <vtkNew.h>
#include <vtkPolyDataMapper.h>
#include <vtkProperty.h>
#include <vtkRenderer.h>
#include <vtkSmartPointer.h>
#include <vtkSphereSource.h>
#include <vtkTubeFilter.h>

#include <cmath>

#include "views/VtkView.hpp"

namespace almagest::ui {

struct ConfigurationView::Impl {
  std::vector<vtkSmartPointer<vtkActor>> actors;
};

ConfigurationView::ConfigurationView(QWidget* parent) : QWidget(parent), d_(std::make_unique<Impl>()) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(6, 2, 6, 2);
  caption_ = new QLabel(this);
  caption_->setTextFormat(Qt::PlainText);
  caption_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  mirror_ = new QCheckBox(tr("Mirror"), this);
  mirror_->setToolTip(tr("Draw the mirror image (x → −x handedness): the signed volume changes sign"));
  bar->addWidget(caption_, 1);
  bar->addWidget(mirror_);
  layout->addLayout(bar);
  view_ = new VtkView(this);
  view_->setMinimumSize(240, 200);
  layout->addWidget(view_, 1);
  view_->renderer()->SetBackground(0.05, 0.06, 0.10);
  connect(mirror_, &QCheckBox::toggled, this, [this] { redraw(); });
  clear();
}

ConfigurationView::~ConfigurationView() {
  for (auto& a : d_->actors) view_->renderer()->RemoveActor(a);
}

std::array<double, 3> ConfigurationView::binColour(int b, int n) { return bin_colour(b, n); }

void ConfigurationView::setResult(const almagest::npcf::NpcfResult& r) {
  order_ = r.order;
  epr_ = std::clamp(r.edges_per_row, 1, 6);
  bins_ = r.bins;
  binning_ = r.config.bins;
  parity_ = r.statistic == almagest::npcf::Statistic::FourPointParity;
  mirror_->setEnabled(order_ == 4);
  row_ = -1;
  redraw();
}

void ConfigurationView::clear() {
  order_ = 0;
  bins_.clear();
  row_ = -1;
  mirror_->setEnabled(false);
  redraw();
}

void ConfigurationView::showRows(const QList<int>& rows) {
  const int n = epr_ > 0 ? static_cast<int>(bins_.size()) / epr_ : 0;
  row_ = !rows.isEmpty() && rows.front() >= 0 && rows.front() < n && order_ >= 3 ? rows.front() : -1;
  redraw();
}

void ConfigurationView::setMirrored(bool on) { mirror_->setChecked(on); }
bool ConfigurationView::mirrored() const { return mirror_->isChecked(); }
QString ConfigurationView::caption() const { return caption_->text(); }

void ConfigurationView::redraw() {
  vtkRenderer* ren = view_->renderer();
  for (auto& a : d_->actors) ren->RemoveActor(a);
  d_->actors.clear();
  geometry_ = {};
  edgeBins_.clear();
  if (row_ < 0) {
    caption_->setText(order_ >= 3 ? tr("Select a configuration in the table") : tr("No 3- or 4-point result"));
    view_->requestRender();
    return;
  }
  const std::size_t base = static_cast<std::size_t>(row_) * static_cast<std::size_t>(epr_);
  if (order_ == 3) {
    std::array<double, 3> s;
    for (int e = 0; e < 3; ++e) s[e] = binning_.centre(bins_[base + e]);
    geometry_ = triangle_geometry(s);
    std::array<int, 3> b{bins_[base], bins_[base + 1], bins_[base + 2]};
    std::sort(b.begin(), b.end());
    edgeBins_ = {b[0], b[1], b[2]};
  } else {
    std::array<double, 6> s;
    for (int e = 0; e < 6; ++e) {
      s[e] = binning_.centre(bins_[base + e]);
      edgeBins_.push_back(bins_[base + e]);
    }
    geometry_ = tetrahedron_geometry(s, mirror_->isChecked());
  }
  const double scale = *std::max_element(geometry_.lengths.begin(), geometry_.lengths.end());
  auto add = [&](vtkAlgorithmOutput* port, const std::array<double, 3>& rgb, double opacity) {
    vtkNew<vtkPolyDataMapper> m;
    m->SetInputConnection(port);
    m->ScalarVisibilityOff();
    auto a = vtkSmartPointer<vtkActor>::New();
    a->SetMapper(m);
    a->GetProperty()->SetColor(rgb[0], rgb[1], rgb[2]);
    a->GetProperty()->SetOpacity(opacity);
    ren->AddActor(a);
    d_->actors.push_back(a);
  };
  const int nb = std::max(1, binning_.nbins);
  // Annuli of the hub's spokes' bins, in the plane of the first face (z = 0), behind the edges.
  std::vector<int> spokes;
  for (std::size_t e = 0; e < geometry_.edges.size(); ++e)
    if (geometry_.edges[e][0] == 0 && std::find(spokes.begin(), spokes.end(), edgeBins_[e]) == spokes.end()) spokes.push_back(edgeBins_[e]);
  for (int b : spokes) {
    vtkNew<vtkDiskSource> disk;
    disk->SetInnerRadius(binning_.edge(b));
    disk->SetOuterRadius(binning_.edge(b + 1));
    disk->SetCircumferentialResolution(96);
    add(disk->GetOutputPort(), binColour(b, nb), 0.18);
  }
  for (std::size_t e = 0; e < geometry_.edges.size(); ++e) {
    const auto& p = geometry_.vertices[geometry_.edges[e][0]];
    const auto& q = geometry_.vertices[geometry_.edges[e][1]];
    vtkNew<vtkLineSource> line;
    line->SetPoint1(p[0], p[1], p[2]);
    line->SetPoint2(q[0], q[1], q[2]);
    vtkNew<vtkTubeFilter> tube;
    tube->SetInputConnection(line->GetOutputPort());
    tube->SetRadius(0.012 * scale);
    tube->SetNumberOfSides(12);
    add(tube->GetOutputPort(), binColour(edgeBins_[e], nb), 1.0);
  }
  for (std::size_t v = 0; v < geometry_.vertices.size(); ++v) {
    vtkNew<vtkSphereSource> sphere;
    const auto& p = geometry_.vertices[v];
    sphere->SetCenter(p[0], p[1], p[2]);
    sphere->SetRadius((v == 0 ? 0.04 : 0.03) * scale);
    sphere->SetThetaResolution(20);
    sphere->SetPhiResolution(20);
    add(sphere->GetOutputPort(), v == 0 ? std::array<double, 3>{1.0, 0.45, 0.2} : std::array<double, 3>{0.95, 0.95, 0.95}, 1.0);
  }
  QString text = tr("Row %1: sides").arg(row_);
  for (double l : geometry_.lengths) text += QStringLiteral(" ") + QString::number(l, 'g', 4);
  text += tr(" Mpc/h");
  if (order_ == 4) {
    text += tr("; V = %1 (Mpc/h)³, %2").arg(geometry_.signed_volume, 0, 'g', 4)
                .arg(geometry_.signed_volume >= 0 ? tr("right-handed") : tr("left-handed"));
    if (parity_) text += tr(" (the odd channel counts V > 0 minus V < 0)");
  }
  if (!geometry_.realisable) text += tr(" — not realisable on bin centres (drawn flat)");
  caption_->setText(text);
  view_->resetCamera();
}

QJsonObject ConfigurationView::save_state() const {
  QJsonObject o;
  o[QStringLiteral("row")] = row_;
  o[QStringLiteral("mirror")] = mirror_->isChecked();
  vtkCamera* cam = view_->renderer()->GetActiveCamera();
  double p[3], f[3], u[3];
  cam->GetPosition(p);
  cam->GetFocalPoint(f);
  cam->GetViewUp(u);
  o[QStringLiteral("camera")] = QJsonArray{p[0], p[1], p[2], f[0], f[1], f[2], u[0], u[1], u[2]};
  return o;
}

void ConfigurationView::restore_state(const QJsonObject& s) {
  {
    const QSignalBlocker block(mirror_);
    mirror_->setChecked(s.value(QStringLiteral("mirror")).toBool());
  }
  showRows({s.value(QStringLiteral("row")).toInt(-1)});
  const QJsonArray c = s.value(QStringLiteral("camera")).toArray();
  if (c.size() == 9) {
    vtkCamera* cam = view_->renderer()->GetActiveCamera();
    cam->SetPosition(c[0].toDouble(), c[1].toDouble(), c[2].toDouble());
    cam->SetFocalPoint(c[3].toDouble(), c[4].toDouble(), c[5].toDouble());
    cam->SetViewUp(c[6].toDouble(), c[7].toDouble(), c[8].toDouble());
    view_->renderer()->ResetCameraClippingRange();
    view_->requestRender();
  }
}

}  // namespace almagest::ui
