// RUN: not %daphne-opt %S/Inputs/theta_cmp.mlir 2>&1 | FileCheck %s --check-prefix=THETA_CMP
// RUN: not %daphne-opt %S/Inputs/theta_label.mlir 2>&1 | FileCheck %s --check-prefix=THETA_LABEL
// RUN: not %daphne-opt %S/Inputs/register_view.mlir 2>&1 | FileCheck %s --check-prefix=REGISTER_VIEW
// RUN: not %daphne-opt %S/Inputs/col_project.mlir 2>&1 | FileCheck %s --check-prefix=COL_PROJECT
// RUN: not %daphne-opt %S/Inputs/col_calc.mlir 2>&1 | FileCheck %s --check-prefix=COL_CALC
// Verifiers of the relational and columnar ops (the IR is in Inputs/).

// THETA_CMP: daphne.thetaJoin: unknown comparison 'Like'
// THETA_LABEL: daphne.thetaJoin: a left join column: the frame has no column labeled 'b'
// REGISTER_VIEW: daphne.registerView: the view must be a frame
// COL_PROJECT: daphne.colProject: the positions must be a position list
// COL_CALC: daphne.colCalcSub: the columns have different lengths (3 and 2)
