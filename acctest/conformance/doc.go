// Package conformance holds the tests that keep the two front ends and the
// layers honest:
//
//   - TestConformance runs one table of scenarios (create, in-place change,
//     refused destructive change, replacement, import, drift, unknown inputs,
//     residency rejection with zero writes, audit warnings) against the
//     Terraform provider through the real Terraform CLI and against the
//     Pulumi provider through the real Pulumi engine, both on the emulator
//     of package acctest. It needs TF_ACC=1.
//   - TestLayering enforces the import rule of ARCHITECTURE.md: front ends
//     never import internal/cloud, and the core's layers import only those
//     below them. It needs nothing and runs in every `go test`.
//
// The package has no code of its own outside its tests.
package conformance
