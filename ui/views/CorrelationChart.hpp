#pragma once
// CorrelationChart: Qt Charts plots of an N-point result.
//  - 2pCF: xi(r) and r^2 xi(r) against the bin centre (log r axis for log binning).
//  - 3pCF: zeta of the equilateral configurations (b1 = b2 = b3) against r, and zeta against
//    the configuration (row) index.
//  - 4pCF: zeta and zeta_conn against the configuration index.
// A combo box switches between the plots the current result offers. Rows whose random count is
// zero carry no estimate (the engine reports 0 there) and are left out of the plot; the caption
// says how many were left out.
#include <QList>
#include <QPointF>
#include <QWidget>

#include <vector>

#include "almagest/npcf/result.hpp"

class QChart;
class QChartView;
class QComboBox;
class QLabel;

namespace almagest::ui {

class CorrelationChart : public QWidget {
  Q_OBJECT
public:
  enum class Mode { Xi, R2Xi, ZetaEquilateral, ZetaIndex, ZetaConnIndex, ZetaOddIndex };
  Q_ENUM(Mode)

  explicit CorrelationChart(QWidget* parent = nullptr);
  ~CorrelationChart() override;

  /// Copies what the plots need from `result` and shows its first plot.
  void setResult(const almagest::npcf::NpcfResult& result);
  void clear();

  QList<Mode> availableModes() const;
  Mode mode() const noexcept { return mode_; }
  /// Switches the plot; ignored if the current result does not offer `m`.
  void setMode(Mode m);

  /// Points in the plotted curve, and the points themselves (x, y).
  int pointCount() const;
  QList<QPointF> points() const;
  /// Rows of the current plot left out because they have no random tuples.
  int skippedRows() const noexcept { return skipped_; }
  QChart* chart() const;
  QChartView* chartView() const noexcept { return view_; }

  static QString modeName(Mode m);

signals:
  void modeChanged(almagest::ui::CorrelationChart::Mode mode);

private:
  struct Row {
    double r = 0;         ///< bin centre (2pCF / equilateral), Mpc/h
    int b[3] = {0, 0, 0}; ///< bins of the row (first edges)
    double est = 0;       ///< estimator
    double conn = 0;      ///< zeta_conn (4pCF)
    double odd = 0;       ///< zeta_odd (parity 4pCF)
    double rr = 0;        ///< random sum: no estimate when 0
  };
  void rebuild();

  QComboBox* modeBox_ = nullptr;
  QLabel* caption_ = nullptr;
  QChartView* view_ = nullptr;
  Mode mode_ = Mode::Xi;
  int order_ = 0;  ///< 0: no result
  bool logR_ = false;
  bool hasConn_ = false;
  bool hasOdd_ = false;
  std::vector<Row> rows_;
  QList<QPointF> plotted_;
  int skipped_ = 0;
};

}  // namespace almagest::ui
