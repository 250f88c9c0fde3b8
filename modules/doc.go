// Package modules holds the acceptance tests of the Terraform modules in
// this folder: their examples are applied against the AWS emulator of
// package acctest through the real Terraform CLI (TF_ACC=1). Each module's
// `terraform validate` and tflint run in scripts/examples-check.sh and
// scripts/tflint.sh.
//
// The package has no code of its own outside its tests.
package modules
