#include "npcf/NpcfViews.hpp"

#include <QScrollArea>

#include <QDockWidget>
#include <QMainWindow>

#include "npcf/ConfigurationExplorer.hpp"
#include "npcf/ParityPanel.hpp"
#include "views/ConfigurationView.hpp"
#include "views/CorrelationChart.hpp"

namespace almagest::ui {

NpcfViews::NpcfViews(QMainWindow* window, CorrelationChart* chart) : QObject(window), chart_(chart) {
  setObjectName(QStringLiteral("NpcfViews"));
  auto dock = [window](const QString& title, const QString& name, QWidget* w) {
    auto* d = new QDockWidget(title, window);
    d->setObjectName(name);
    // In a scroll area: the views' own minimum widths (filter rows, side-by-side charts) would
    // otherwise force the window wider than a 1280 x 800 screen.
    auto* scroll = new QScrollArea;
    scroll->setWidget(w);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    d->setWidget(scroll);
    d->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetFloatable | QDockWidget::DockWidgetClosable);
    window->addDockWidget(Qt::RightDockWidgetArea, d);
    return d;
  };
  explorer_ = new ConfigurationExplorer;
  configuration_ = new ConfigurationView;
  parity_ = new ParityPanel;
  explorerDock_ = dock(tr("Configurations"), QStringLiteral("ConfigurationsDock"), explorer_);
  QDockWidget* shape = dock(tr("Configuration 3D"), QStringLiteral("ConfigurationViewDock"), configuration_);
  QDockWidget* parity = dock(tr("Parity null test"), QStringLiteral("ParityDock"), parity_);
  // One tab group: stacked, their minimum heights and widths added up to more than a 1280 x 800
  // screen holds (the window must open inside the screen).
  window->tabifyDockWidget(explorerDock_, shape);
  window->tabifyDockWidget(explorerDock_, parity);
  explorerDock_->raise();

  connect(explorer_, &ConfigurationExplorer::rowsSelected, this, [this](const QList<int>& rows) {
    if (chart_) chart_->setSelectedRows(rows);
    configuration_->showRows(rows);
  });
  if (chart_)
    connect(chart_, &CorrelationChart::rowClicked, this, [this](int row) {
      explorer_->selectRows({row});
      chart_->setSelectedRows({row});
      configuration_->showRows({row});
    });
}

void NpcfViews::setResult(const almagest::npcf::NpcfResult& result) {
  explorer_->setResult(result);
  configuration_->setResult(result);
}

void NpcfViews::clear() {
  explorer_->clear();
  configuration_->clear();
}

QJsonObject NpcfViews::save_state() const {
  QJsonObject o;
  o[QStringLiteral("explorer")] = explorer_->save_state();
  o[QStringLiteral("configuration")] = configuration_->save_state();
  o[QStringLiteral("parity")] = parity_->save_state();
  if (chart_) o[QStringLiteral("chart")] = chart_->save_state();
  return o;
}

void NpcfViews::restore_state(const QJsonObject& s) {
  if (chart_) chart_->restore_state(s.value(QStringLiteral("chart")).toObject());
  explorer_->restore_state(s.value(QStringLiteral("explorer")).toObject());
  configuration_->restore_state(s.value(QStringLiteral("configuration")).toObject());
  parity_->restore_state(s.value(QStringLiteral("parity")).toObject());
}

}  // namespace almagest::ui
