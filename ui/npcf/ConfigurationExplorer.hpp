#pragma once
// ConfigurationExplorer: the sortable, filterable table of a result's configurations
// (ConfigurationModel under a ConfigurationFilter) with its filter bar: side range (Mpc/h),
// shape (equilateral, isosceles, squeezed), realisable only. Selecting rows emits
// rowsSelected(result rows); selectRows() selects from outside (a chart click) without echo.
#include <QJsonObject>
#include <QList>
#include <QWidget>

#include "almagest/npcf/result.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QTableView;

namespace almagest::ui {

class ConfigurationFilter;
class ConfigurationModel;

class ConfigurationExplorer : public QWidget {
  Q_OBJECT
public:
  explicit ConfigurationExplorer(QWidget* parent = nullptr);

  void setResult(const almagest::npcf::NpcfResult& result);
  void setSigma(const std::vector<double>& sigma);
  void clear();

  ConfigurationModel* model() const noexcept { return model_; }
  ConfigurationFilter* filter() const noexcept { return filter_; }
  QTableView* table() const noexcept { return table_; }
  QDoubleSpinBox* sideMinBox() const noexcept { return sideMin_; }
  QDoubleSpinBox* sideMaxBox() const noexcept { return sideMax_; }
  QComboBox* shapeBox() const noexcept { return shape_; }
  QCheckBox* realisableBox() const noexcept { return realisable_; }

  /// Result rows currently selected (in result order).
  QList<int> selectedRows() const;
  /// Selects these result rows (those the filter shows) and scrolls to the first; no signal.
  void selectRows(const QList<int>& rows);

  /// Filters, sort and selection, for workspaces.
  QJsonObject save_state() const;
  void restore_state(const QJsonObject& state);

signals:
  void rowsSelected(const QList<int>& rows);

private:
  void applyFilters();
  void updateCount();

  ConfigurationModel* model_ = nullptr;
  ConfigurationFilter* filter_ = nullptr;
  QTableView* table_ = nullptr;
  QDoubleSpinBox* sideMin_ = nullptr;
  QDoubleSpinBox* sideMax_ = nullptr;
  QComboBox* shape_ = nullptr;
  QCheckBox* realisable_ = nullptr;
  QLabel* count_ = nullptr;
  bool quiet_ = false;
};

}  // namespace almagest::ui
