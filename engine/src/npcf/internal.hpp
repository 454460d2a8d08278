#pragma once
// Declarations shared between the npcf implementation files (not public API).
#include "almagest/npcf/result.hpp"
#include "almagest/npcf/points.hpp"

namespace almagest::npcf::detail {

/// 4pCF part of finalize(): zeta, zeta_disc (from r.xi_internal), zeta_conn, realisable flags,
/// zeta_odd. Implemented in fourpoint_finalize.cpp.
void finalize_4pcf(NpcfResult& r, const PointSet& p);

}  // namespace almagest::npcf::detail
