package main

import (
	"path"
	"regexp"
	"strings"
)

// Pulumi's TypeScript and Python code generators (pkg/v3 up to the release
// that carries pulumi/pulumi#21835) compute a module's way back to the
// package root as path.Dir(filepath.Rel(mod, "")). Go 1.26's filepath.Rel
// cleans its result ("config" -> ".." where Go 1.25 gave "../."), so every
// file in a nested module (config/, types/) imports the root's utilities and
// types one level too shallow: "./utilities" where "../utilities" is meant,
// "from . import _utilities" where "from .. import _utilities" is meant.
//
// fixImports repairs that after generation, by resolution rather than by
// pattern: a relative import that does not resolve among the generated files
// but resolves one level up is rewritten to go one level up. Imports that
// resolve are left alone, so the output is the same whichever Go release
// built the generator.

var (
	tsImport = regexp.MustCompile(`((?:from|require\()\s*")(\.{1,2}(?:/\.\.)*/[^"]+)(")`)
	pyImport = regexp.MustCompile(`(?m)^([ \t]*from )(\.+)([A-Za-z_][A-Za-z0-9_.]*)?( import )(.+)$`)
)

// fixImports rewrites the broken relative imports of the generated files of
// one language ("nodejs" or "python") in place, and returns how many it
// rewrote.
func fixImports(lang string, files map[string][]byte) int {
	n := 0
	for name, data := range files {
		var out string
		var k int
		switch {
		case lang == "nodejs" && strings.HasSuffix(name, ".ts"):
			out, k = fixTS(name, string(data), files)
		case lang == "python" && (strings.HasSuffix(name, ".py") || strings.HasSuffix(name, ".pyi")):
			out, k = fixPy(name, string(data), files)
		default:
			continue
		}
		if k > 0 {
			files[name] = []byte(out)
			n += k
		}
	}
	return n
}

// fixTS rewrites `from "./x"` and `require("./x")` specifiers of the
// TypeScript file name that resolve only one directory up.
func fixTS(name, src string, files map[string][]byte) (string, int) {
	dir := path.Dir(name)
	if dir == "." {
		return src, 0
	}
	n := 0
	out := tsImport.ReplaceAllStringFunc(src, func(m string) string {
		g := tsImport.FindStringSubmatch(m)
		spec := g[2]
		if tsResolves(path.Join(dir, spec), files) || !tsResolves(path.Join(dir, "..", spec), files) {
			return m
		}
		n++
		up := "../" + strings.TrimPrefix(spec, "./")
		return g[1] + up + g[3]
	})
	return out, n
}

func tsResolves(target string, files map[string][]byte) bool {
	if strings.HasPrefix(target, "..") {
		return false
	}
	for _, cand := range []string{target + ".ts", target + "/index.ts", target} {
		if _, ok := files[cand]; ok {
			return true
		}
	}
	return false
}

// fixPy adds a dot to `from .[mod] import name` statements of the Python
// file name whose module (or, without one, whose first imported name) exists
// only one package up.
func fixPy(name, src string, files map[string][]byte) (string, int) {
	dir := path.Dir(name)
	n := 0
	out := pyImport.ReplaceAllStringFunc(src, func(m string) string {
		g := pyImport.FindStringSubmatch(m)
		dots, mod, names := g[2], g[3], g[5]
		target := mod
		if target == "" {
			fields := strings.Fields(strings.Trim(names, "( "))
			if len(fields) == 0 {
				return m
			}
			target = strings.TrimSuffix(fields[0], ",")
		}
		base := dir
		for i := 1; i < len(dots); i++ {
			base = path.Dir(base)
		}
		if pyResolves(base, target, files) || base == "." || !pyResolves(path.Dir(base), target, files) {
			return m
		}
		n++
		return g[1] + "." + dots + mod + g[4] + names
	})
	return out, n
}

// pyResolves reports whether module target (dotted) exists in package dir
// base: as a .py file or as a package with __init__.py, and base itself is a
// package.
func pyResolves(base, target string, files map[string][]byte) bool {
	if base != "." {
		if _, ok := files[path.Join(base, "__init__.py")]; !ok {
			return false
		}
	}
	p := path.Join(base, strings.ReplaceAll(target, ".", "/"))
	for _, cand := range []string{p + ".py", p + "/__init__.py"} {
		if _, ok := files[cand]; ok {
			return true
		}
	}
	return false
}
