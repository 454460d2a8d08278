#pragma once
// CataloguePanel: the controls of the catalogue view (PointCloudScene) in the N-point window's
// "Catalogue" dock:
//  - colour by sample (data gold, randoms blue) or by weight;
//  - a clipping box (x, y, z ranges, initialised to the points' bounds);
//  - the neighbour graph of one point: type its engine index (data first, then randoms) in the
//    Point box, or double-click a point in the 3D view (PointCloudScene::pickPoint). Its
//    neighbours within (rmin, rmax) are drawn as spokes coloured by radial bin (NeighbourGraph,
//    brute force over the catalogues); with a 3pCF/4pCF result, the triangles or tetrahedra
//    through it of one configuration (the Configuration box, or the row selected in the
//    configuration table) are drawn in orange.
// The binning is the shown result's, else the job form's (setBinningSource).
#include <QJsonObject>
#include <QString>
#include <QWidget>

#include <functional>
#include <memory>
#include <optional>

#include "almagest/npcf/config.hpp"
#include "almagest/npcf/result.hpp"
#include "jobs/NpcfJob.hpp"
#include "npcf/NeighbourGraph.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QSpinBox;

namespace almagest::ui {

class PointCloudScene;
class VtkView;

class CataloguePanel : public QWidget {
  Q_OBJECT
public:
  /// Neighbours beyond which the triangles (tetrahedra) through a point are not enumerated.
  static constexpr std::size_t kMaxTriangleNeighbours = 20000;
  static constexpr std::size_t kMaxTetraNeighbours = 1500;

  /// `scene` and `view` must outlive the panel.
  CataloguePanel(PointCloudScene* scene, VtkView* view, QWidget* parent = nullptr);
  ~CataloguePanel() override;

  /// The catalogues the scene shows (either may be null); clears the neighbour graph and sets
  /// the clip box ranges to the points' bounds.
  void setCatalogues(CataloguePtr data, CataloguePtr randoms);
  /// The configurations of the shown result (null: none); its binning is used from then on.
  void setResult(const almagest::npcf::NpcfResult* result);
  /// Where the binning comes from without a result (the job form): nullopt with `why` filled
  /// when the form's binning is not valid.
  void setBinningSource(std::function<std::optional<almagest::npcf::Binning>(QString* why)> source);

  /// Draws the neighbour graph of point `index` (-1 clears). False, with statusText() saying
  /// why, when there is no catalogue, the index is out of range or there is no binning.
  bool showNeighbours(long long index);
  /// Configuration row of the result whose triangles/tetrahedra are drawn (-1: none).
  void setConfiguration(int row);
  int configuration() const;
  long long point() const;

  const NeighbourGraph* graph() const noexcept { return graph_ ? &*graph_ : nullptr; }
  QString statusText() const;

  QSpinBox* pointBox() const noexcept { return point_; }
  QSpinBox* configurationBox() const noexcept { return config_; }
  QComboBox* colourBox() const noexcept { return colour_; }
  QGroupBox* clipGroup() const noexcept { return clip_; }
  /// xmin, xmax, ymin, ymax, zmin, zmax.
  QDoubleSpinBox* clipEdit(int k) const noexcept { return clipEdits_[k]; }

  /// Colouring, clip box, point and configuration (workspaces).
  QJsonObject save_state() const;
  void restore_state(const QJsonObject& state);

protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

private:
  void redraw();
  void applyClip();
  std::optional<almagest::npcf::Binning> binning(QString* why) const;

  PointCloudScene* scene_ = nullptr;
  VtkView* view_ = nullptr;
  CataloguePtr data_, randoms_;
  const almagest::npcf::NpcfResult* result_ = nullptr;
  std::function<std::optional<almagest::npcf::Binning>(QString*)> binningSource_;
  std::optional<NeighbourGraph> graph_;
  QString status_;
  bool updating_ = false;
  int pendingConfig_ = -1;  ///< a restored configuration row, applied when the result is set

  QComboBox* colour_ = nullptr;
  QGroupBox* clip_ = nullptr;
  QDoubleSpinBox* clipEdits_[6] = {};
  QSpinBox* point_ = nullptr;
  QSpinBox* config_ = nullptr;
  QLabel* configLabel_ = nullptr;
  QLabel* statusLabel_ = nullptr;
};

}  // namespace almagest::ui
