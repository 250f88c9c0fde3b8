# tflint configuration for examples/ and modules/ (scripts/tflint.sh).
# The terraform ruleset is bundled with tflint: nothing is downloaded.
plugin "terraform" {
  enabled = true
  preset  = "recommended"
}
