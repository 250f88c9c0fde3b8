//go:build !((linux || darwin || freebsd) && (amd64 || arm64)) || nodynamic

package bench

import "errors"

var errNoDlopen = errors.New("run-time library loading is not built into this binary (nodynamic build or unsupported platform)")

func dlopenFirst([]string) (uintptr, string, error) { return 0, "", errNoDlopen }

func bindSymbols(uintptr, string, map[string]any) error { return errNoDlopen }

func hasSymbol(uintptr, string) bool { return false }

func dlclose(uintptr) {}

const dynamicLoading = false

func symbolAddr(uintptr, string) uintptr { return 0 }

func mappedPath(uintptr) string { return "" }
