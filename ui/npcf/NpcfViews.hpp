#pragma once
// NpcfViews: the N-point window's result views beside the chart, as docks of a QMainWindow:
// the configuration explorer, the configuration drawn to scale, and the parity null test, wired
// together (table selection -> chart rings and the 3D configuration; a chart click -> the
// table). A window creates one with its chart and calls setResult() when a job succeeds.
#include <QJsonObject>
#include <QObject>

#include "almagest/npcf/result.hpp"

class QDockWidget;
class QMainWindow;

namespace almagest::ui {

class ConfigurationExplorer;
class ConfigurationView;
class CorrelationChart;
class ParityPanel;

class NpcfViews : public QObject {
  Q_OBJECT
public:
  /// Adds the docks to `window` (tabbed on the right, below any existing ones).
  NpcfViews(QMainWindow* window, CorrelationChart* chart);

  void setResult(const almagest::npcf::NpcfResult& result);
  void clear();

  ConfigurationExplorer* explorer() const noexcept { return explorer_; }
  ConfigurationView* configurationView() const noexcept { return configuration_; }
  ParityPanel* parityPanel() const noexcept { return parity_; }
  QDockWidget* explorerDock() const noexcept { return explorerDock_; }

  QJsonObject save_state() const;
  void restore_state(const QJsonObject& state);

private:
  CorrelationChart* chart_ = nullptr;
  ConfigurationExplorer* explorer_ = nullptr;
  ConfigurationView* configuration_ = nullptr;
  ParityPanel* parity_ = nullptr;
  QDockWidget* explorerDock_ = nullptr;
};

}  // namespace almagest::ui
