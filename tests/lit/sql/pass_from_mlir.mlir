// RUN: %daphne-opt %s -p sql | FileCheck %s
// The `sql` pass on textual IR: the query is translated by the SQL frontend (frontend/sql/), which registers
// itself on the dialect's `daphne.sql` (the compiler never imports the frontend); the view binding is erased.

func.func @main(%t: !daphne.Frame<3x[si64, f64], ["a", "b"]>) {
  %name = "daphne.constant"() <{value = "t"}> : () -> !daphne.String
  "daphne.registerView"(%name, %t) : (!daphne.String, !daphne.Frame<3x[si64, f64], ["a", "b"]>) -> ()
  %q = "daphne.constant"() <{value = "SELECT t.a FROM t WHERE t.b > 2.0;"}> : () -> !daphne.String
  %r = "daphne.sql"(%q) : (!daphne.String) -> !daphne.Frame<?x[]>
  %f = "daphne.constant"() <{value = false}> : () -> i1
  "daphne.print"(%r, %f, %f) : (!daphne.Frame<?x[]>, i1, i1) -> ()
  func.return
}

// CHECK-NOT:  daphne.registerView
// CHECK-NOT:  daphne.sql"
// CHECK:      %[[P:.*]] = "daphne.setColLabelsPrefix"(%t, %{{.*}}) {{.*}} -> !daphne.Frame<3x[si64, f64], ["t.a", "t.b"]>
// CHECK:      %[[B:.*]] = "daphne.extractCol"(%[[P]], %{{.*}})
// CHECK:      "daphne.ewGt"
// CHECK:      %[[F:.*]] = "daphne.filterRow"(%[[P]], %{{.*}})
// CHECK:      "daphne.extractCol"(%[[F]], %{{.*}})
// CHECK:      "daphne.print"
