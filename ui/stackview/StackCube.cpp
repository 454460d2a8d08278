// StackWindow: the score cube of the last search (a job computing Z(x, y, v) for a velocity
// subset and an origin region with the engine's score_cube, shown in a VTK view in the "Score
// cube" dock). The dock and its OpenGL view are made only when first shown, so the window works
// (and its tests run) where no OpenGL context can be made. Split from StackWindow.cpp.
#include <QComboBox>
#include <QDockWidget>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTimer>
#include <QVBoxLayout>

#include <cmath>

#include "almagest/core/error.hpp"
#include "panels/LogPanel.hpp"
#include "stackview/CandidateCurves.hpp"
#include "stackview/ScoreCubeView.hpp"
#include "stackview/StackWindow.hpp"

namespace almagest::ui {

namespace stk = almagest::stack;
using namespace stackview;

stk::ScoreCubeRequest StackWindow::cubeRequest(CubeVelocities which, int regionRadius) const {
  if (!output_ || !output_->plan || !output_->psiphi) throw ConfigError("score cube", "run a search first");
  const stk::SearchResult& r = output_->result;
  stk::ScoreCubeRequest q;
  const bool needSelection = which != CubeVelocities::All || regionRadius > 0;
  if (needSelection && (selected_ < 0 || std::size_t(selected_) >= r.candidates.size()))
    throw ConfigError("score cube", "select a candidate first (the cube is centred on it)");
  const stk::Candidate* c = selected_ >= 0 && std::size_t(selected_) < r.candidates.size()
                                ? &r.candidates[std::size_t(selected_)]
                                : nullptr;
  const stk::TrajectoryBank& bank = output_->config.bank;
  if (which != CubeVelocities::All) {
    if (bank.kind != stk::BankKind::Cartesian)
      throw ConfigError("score cube", "a row or column of velocities needs a Cartesian (vx, vy) grid");
    const int i = c->v % bank.nvx, j = c->v / bank.nvx;
    q.velocities = which == CubeVelocities::SelectedRow ? stk::bank_row(bank, j) : stk::bank_column(bank, i);
  }
  if (regionRadius > 0) {
    q.x0 = std::max(0, c->x - regionRadius);
    q.y0 = std::max(0, c->y - regionRadius);
    q.nx = std::min(r.width, c->x + regionRadius + 1) - q.x0;
    q.ny = std::min(r.height, c->y + regionRadius + 1) - q.y0;
  }
  return q;
}

bool StackWindow::computeScoreCube() {
  // The dock's choice (the row through the selected candidate by default: a 3D picture with v
  // along one velocity axis); without a selection the whole bank and image.
  int which = cubeVelocities_ ? cubeVelocities_->currentIndex() : 1;
  if (selected_ < 0) which = 0;
  const int radius = cubeRadius_ && selected_ >= 0 ? cubeRadius_->value() : 0;
  stk::ScoreCubeRequest q;
  try {
    q = cubeRequest(static_cast<CubeVelocities>(which), radius);
  } catch (const almagest::ConfigError& e) {
    reportError(tr("Score cube"), QString::fromUtf8(e.what()));
    return false;
  }
  return computeScoreCube(q);
}

bool StackWindow::computeScoreCube(const stk::ScoreCubeRequest& request) {
  if (busyGuard(tr("computing the score cube"))) return false;
  if (!output_ || !output_->plan || !output_->psiphi) {
    reportError(tr("No result"), tr("Run a search first."));
    return false;
  }
  const stk::SearchResult& r = output_->result;
  const auto problems = stk::validate(request, r.width, r.height, r.n_vel);
  if (!problems.empty()) {
    QStringList m;
    for (const auto& p : problems) m << QString::fromStdString(p);
    reportError(tr("Score cube"), m.join(QStringLiteral("; ")));
    return false;
  }
  const std::size_t nv = request.velocities.empty() ? r.n_vel : request.velocities.size();
  log_->info(tr("Score cube: %1 velocities over %2 × %3 origins from (%4, %5)")
                 .arg(qulonglong(nv))
                 .arg(request.nx > 0 ? request.nx : r.width - request.x0)
                 .arg(request.ny > 0 ? request.ny : r.height - request.y0)
                 .arg(request.x0)
                 .arg(request.y0));
  SearchOutputPtr out = output_;
  return startJob(JobKind::Cube, tr("score cube"), [out, request](const almagest::JobContext& ctx) -> std::any {
    return std::shared_ptr<const stk::ScoreCube>(
        std::make_shared<stk::ScoreCube>(stk::score_cube(*out->psiphi, *out->plan, request, ctx)));
  });
}

std::vector<std::array<int, 3>> StackWindow::candidatesInCube(const stk::ScoreCube& cube, std::vector<int>* indices) const {
  std::vector<std::array<int, 3>> out;
  if (indices) indices->clear();
  const auto& cs = candidates();
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const stk::Candidate& c = cs[i];
    const int iv = cube.plane_of(c.v);
    const int ix = c.x - cube.x0, iy = c.y - cube.y0;
    if (iv < 0 || ix < 0 || iy < 0 || ix >= cube.nx || iy >= cube.ny) continue;
    out.push_back({ix, iy, iv});
    if (indices) indices->push_back(static_cast<int>(i));
  }
  return out;
}

void StackWindow::showCube(std::shared_ptr<const stk::ScoreCube> cube) {
  cube_ = std::move(cube);
  if (!cubeView_) {
    if (cube_) emit scoreCubeReady();
    return;
  }
  if (!cube_) {
    cubeView_->clear();
    return;
  }
  cubeView_->setCube(cube_, candidatesInCube(*cube_));
  // Slices start at the selected candidate's plane, row and column when it is inside.
  if (selected_ >= 0) {
    const stk::Candidate& c = candidates()[std::size_t(selected_)];
    const int iv = cube_->plane_of(c.v);
    if (iv >= 0) cubeView_->setSlice(ScoreCubeView::SliceAxis::XY, iv);
    cubeView_->setMode(ScoreCubeView::Mode::Volume);
  }
  log_->info(tr("Score cube ready: %1 × %2 × %3 values").arg(cube_->nx).arg(cube_->ny).arg(cube_->nv()));
  emit scoreCubeReady();
}

ScoreCubeView* StackWindow::showScoreCube() {
  if (!cubeDock_) {
    auto* box = new QWidget(this);
    auto* v = new QVBoxLayout(box);
    v->setContentsMargins(2, 2, 2, 2);
    auto* bar = new QHBoxLayout;
    cubeVelocities_ = new QComboBox(box);
    cubeVelocities_->setObjectName(QStringLiteral("cubeVelocities"));
    cubeVelocities_->addItems({tr("all velocities"), tr("row: selected vy"), tr("column: selected vx")});
    cubeVelocities_->setCurrentIndex(1);
    cubeVelocities_->setToolTip(tr("Velocities kept along the cube's v axis: the whole bank, or the grid row "
                                   "(column) through the selected candidate"));
    cubeRadius_ = new QSpinBox(box);
    cubeRadius_->setObjectName(QStringLiteral("cubeRadius"));
    cubeRadius_->setRange(0, 4096);
    cubeRadius_->setValue(0);
    cubeRadius_->setSpecialValueText(tr("whole image"));
    cubeRadius_->setPrefix(tr("± "));
    cubeRadius_->setSuffix(tr(" px"));
    cubeRadius_->setToolTip(tr("Origin region: +-radius pixels around the selected candidate, or the whole image"));
    auto* compute = new QPushButton(tr("Compute"), box);
    compute->setObjectName(QStringLiteral("cubeCompute"));
    compute->setToolTip(tr("Score every origin of the region with every kept velocity (the search's own Z)"));
    connect(compute, &QPushButton::clicked, this, [this] { computeScoreCube(); });
    bar->addWidget(new QLabel(tr("Velocities"), box));
    bar->addWidget(cubeVelocities_);
    bar->addWidget(new QLabel(tr("Region"), box));
    bar->addWidget(cubeRadius_);
    bar->addWidget(compute);
    bar->addStretch(1);
    v->addLayout(bar);
    cubeView_ = new ScoreCubeView(box);
    cubeView_->setObjectName(QStringLiteral("scoreCubeView"));
    v->addWidget(cubeView_, 1);
    cubeDock_ = new QDockWidget(tr("Score cube"), this);
    cubeDock_->setObjectName(QStringLiteral("stackCubeDock"));
    cubeDock_->setWidget(box);
    addDockWidget(Qt::RightDockWidgetArea, cubeDock_);
    // Two fifths of the window once it is laid out (the dock's own hint is narrow).
    QTimer::singleShot(0, this, [this] { resizeDocks({cubeDock_}, {std::max(420, width() * 2 / 5)}, Qt::Horizontal); });
    if (cube_) cubeView_->setCube(cube_, candidatesInCube(*cube_));
  }
  cubeDock_->show();
  cubeDock_->raise();
  return cubeView_;
}

void StackWindow::showCandidateCurves() {
  detailTabs_->setCurrentWidget(curves_);
}

}  // namespace almagest::ui
