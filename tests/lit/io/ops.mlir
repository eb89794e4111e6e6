// RUN: cd %S && %daphne-opt %s -p specialize | FileCheck %s
// RUN: %daphne-opt %s | %daphne-opt | FileCheck %s --check-prefix=ROUNDTRIP
// The io ops print generically like DAPHNE's (`daphne.read`, `daphne.write`) and parse back; `specialize` (type
// inference) completes a read of a constant file name from its .meta.

"builtin.module"() ({
  "func.func"() <{sym_name = "main", function_type = () -> ()}> ({
    %0 = "daphne.constant"() <{value = "Inputs/m.csv"}> : () -> !daphne.String
    %1 = "daphne.read"(%0) : (!daphne.String) -> !daphne.Matrix<?x?x!daphne.Unknown>
    %2 = "daphne.constant"() <{value = "Inputs/f.csv"}> : () -> !daphne.String
    %3 = "daphne.read"(%2) : (!daphne.String) -> !daphne.Frame<?x[!daphne.Unknown]>
    %4 = "daphne.constant"() <{value = "out.dbdf"}> : () -> !daphne.String
    "daphne.write"(%1, %4) : (!daphne.Matrix<?x?x!daphne.Unknown>, !daphne.String) -> ()
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()

// CHECK:      "daphne.read"(%{{.*}}) : (!daphne.String) -> !daphne.Matrix<2x3xsi64>
// CHECK:      "daphne.read"(%{{.*}}) : (!daphne.String) -> !daphne.Frame<2x[ui32, !daphne.String], ["id", "name"]>
// CHECK:      "daphne.write"(%{{.*}}, %{{.*}}) : (!daphne.Matrix<2x3xsi64>, !daphne.String) -> ()

// ROUNDTRIP:  "daphne.read"(%{{.*}}) : (!daphne.String) -> !daphne.Matrix<?x?x!daphne.Unknown>
// ROUNDTRIP:  "daphne.read"(%{{.*}}) : (!daphne.String) -> !daphne.Frame<?x[!daphne.Unknown]>
// ROUNDTRIP:  "daphne.write"(%{{.*}}, %{{.*}}) : (!daphne.Matrix<?x?x!daphne.Unknown>, !daphne.String) -> ()
