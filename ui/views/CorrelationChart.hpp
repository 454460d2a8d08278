#pragma once
// CorrelationChart: Qt Charts plots of an N-point result.
//  - 2pCF: xi(r) and r^2 xi(r) against the bin centre (log r axis for log binning), with
//    jackknife error bars when the result carries sigma (setErrors()).
//  - 3pCF: zeta of the equilateral configurations (b1 = b2 = b3) against r, and zeta against
//    the configuration (row) index on a symmetric-log axis, with the configuration key beneath
//    (the sorted side bins as a staircase). "All triangles" opens on the index plot.
//  - 4pCF: total, disconnected and connected parts, and the odd channel, against the index.
// A combo box switches between the plots the current result offers. Rows whose random count is
// zero carry no estimate (the engine reports 0 there) and are left out of the plot; the caption
// says how many were left out.
//
// Bounded drawing: the chart keeps every plotted point (points()) but draws at most
// kMaxDrawnPoints of them, as the min/max envelope per x bucket (a 16-bin 4pCF has 165,660
// configurations; drawing them all as markers froze the GUI for minutes). Markers appear only
// below kMaxMarkers points. Selected rows (setSelectedRows) are drawn as rings on top; a click
// on the curve emits rowClicked with the nearest plotted row.
//
// Other results can be overlaid (addOverlay: data against mocks, CPU against GPU) with a legend.
#include <QJsonObject>
#include <QList>
#include <QPointF>
#include <QWidget>

#include <vector>

#include "almagest/npcf/result.hpp"

class QAbstractAxis;
class QChart;
class QChartView;
class QComboBox;
class QLabel;

namespace almagest::ui {

class CorrelationChart : public QWidget {
  Q_OBJECT
public:
  enum class Mode { Xi, R2Xi, ZetaEquilateral, ZetaIndex, ZetaConnIndex, ZetaOddIndex, ZetaDiscIndex };
  Q_ENUM(Mode)

  static constexpr int kMaxDrawnPoints = 4000;
  static constexpr int kMaxMarkers = 600;

  explicit CorrelationChart(QWidget* parent = nullptr);
  ~CorrelationChart() override;

  /// Copies what the plots need from `result` and shows its first plot (overlays are removed).
  void setResult(const almagest::npcf::NpcfResult& result, const QString& label = {});
  /// Per-row jackknife sigma of the estimator (same length as the rows; empty removes them).
  void setErrors(const std::vector<double>& sigma);
  /// Draws another result of the same statistic and configuration count over the current one.
  /// False (nothing added) when the rows do not match.
  bool addOverlay(const almagest::npcf::NpcfResult& result, const QString& label);
  int overlayCount() const noexcept { return static_cast<int>(overlays_.size()); }
  void clear();
  bool hasResult() const noexcept { return order_ != 0; }

  QList<Mode> availableModes() const;
  Mode mode() const noexcept { return mode_; }
  /// Switches the plot; ignored if the current result does not offer `m`.
  void setMode(Mode m);

  /// Points in the plotted curve, and the points themselves (x, y), unscaled (r or row index).
  int pointCount() const;
  QList<QPointF> points() const;
  /// Result row of each plotted point.
  QList<int> pointRows() const { return plottedRows_; }
  /// Points handed to Qt Charts for the main curve (<= kMaxDrawnPoints), markers drawn.
  int drawnPointCount() const noexcept { return drawn_; }
  int drawnMarkerCount() const noexcept { return markers_; }
  /// Rows of the current plot left out because they have no random tuples.
  int skippedRows() const noexcept { return skipped_; }
  /// True when the y axis is symmetric-log (index plots with a wide dynamic range).
  bool symlogY() const noexcept { return symlog_ > 0; }
  /// Linear threshold of the symmetric-log axis (0: linear axis).
  double symlogThreshold() const noexcept { return symlog_; }
  /// Axis coordinate of value y on the current y axis (identity on a linear axis).
  double axisY(double y) const;
  QChart* chart() const;
  QChartView* chartView() const noexcept { return view_; }
  /// The plot's title as plain text, whole (the chart shows it broken into two lines as rich
  /// text, or elided, when it is wider than the chart): what exports put in their metadata.
  QString plotTitle() const { return title_; }
  /// The configuration key under index plots (hidden otherwise).
  QChartView* keyView() const noexcept { return keyView_; }
  QAbstractAxis* xAxis() const;

  /// Rows highlighted in the chart (result row numbers).
  void setSelectedRows(const QList<int>& rows);
  QList<int> selectedRows() const { return selected_; }
  /// Nearest plotted row to x on the current plot (-1 when nothing is plotted).
  int rowNear(double x) const;

  /// Mode and selection, for workspaces.
  QJsonObject save_state() const;
  void restore_state(const QJsonObject& state);

  static QString modeName(Mode m);

signals:
  void modeChanged(almagest::ui::CorrelationChart::Mode mode);
  /// The user clicked the curve near a result row.
  void rowClicked(int row);

protected:
  void resizeEvent(QResizeEvent* e) override;

private:
  struct Row {
    double r = 0;         ///< bin centre (2pCF / equilateral), Mpc/h
    int b[6] = {0, 0, 0, 0, 0, 0};  ///< bins of the row
    double est = 0;       ///< estimator
    double disc = 0;      ///< zeta_disc (4pCF)
    double conn = 0;      ///< zeta_conn (4pCF)
    double odd = 0;       ///< zeta_odd (parity 4pCF)
    double rr = 0;        ///< random sum: no estimate when 0
  };
  struct Overlay {
    QString label;
    std::vector<Row> rows;
  };
  static std::vector<Row> copyRows(const almagest::npcf::NpcfResult& result);
  bool valueOf(const Row& row, std::size_t i, double& x, double& y) const;
  void rebuild();
  /// Removes every series and axis of `c`, and the graphics of the removed axes at once.
  static void removeAxesAndSeries(QChart* c);
  void fitTitle();
  void fitCaption();
  void rebuildKey();
  void fitTicks();
  void drawSelection();

  QComboBox* modeBox_ = nullptr;
  QLabel* caption_ = nullptr;
  QChartView* view_ = nullptr;
  QChartView* keyView_ = nullptr;
  Mode mode_ = Mode::Xi;
  int order_ = 0;  ///< 0: no result
  int edgesPerRow_ = 1;
  int nbins_ = 0;
  bool logR_ = false;
  bool hasConn_ = false;
  bool hasOdd_ = false;
  bool allTriangles_ = false;
  QString label_;
  QString title_;        ///< the plot's title before fitTitle() breaks or elides it
  QString captionText_;  ///< the caption before fitCaption() elides it
  std::vector<Row> rows_;
  std::vector<double> sigma_;
  std::vector<Overlay> overlays_;
  QList<QPointF> plotted_;
  QList<int> plottedRows_;
  QList<int> selected_;
  int skipped_ = 0;
  int drawn_ = 0;
  int markers_ = 0;
  double symlog_ = 0;
  double xmin_ = 0, xmax_ = 1;
  bool keyDirty_ = true;  ///< the key is built once per result (its x range is the row index)
};

}  // namespace almagest::ui
