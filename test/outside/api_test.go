package outside

import (
	"go/build"
	"go/importer"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agent-sudo/agent-sudo/internal/testenv"
)

const module = "github.com/agent-sudo/agent-sudo"

// topLevel is every package of the module outside internal/, cmd/, test/,
// docs/ and packaging/: whether it is public API, and why.
var topLevel = []struct {
	pkg    string
	public bool
	why    string
}{
	{"proto", true, "the agent protocol's wire format"},
	{"client", true, "the library for agents"},
	{"approval", true, "the approver channel's protocol, for approvers"},
	{"daemon", false, "agent-sudod as cmd/agent-sudod runs it: New, Run and CheckConfig take internal/config's Config, " +
		"which keeps the configuration's checks in one place for both binaries; another module runs the daemon through its binary and its configuration file"},
}

// TestPublicAPINamesNoInternalType: every exported identifier of a public
// package (a func's parameters and results, a var's or const's type, a
// type's exported fields and methods) can be named from another module:
// none needs a type of this module's internal packages. A package that is
// not public says so in its documentation ("for this module's binaries
// only"), and README's sentence on the public Go API names exactly the
// public ones.
func TestPublicAPINamesNoInternalType(t *testing.T) {
	testenv.Slow(t, "type-checks the top-level packages from source")
	if build.Default.GOROOT == "" {
		// A test binary built with -trimpath (make test) does not know
		// its GOROOT, which the source importer needs.
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			t.Fatalf("go env GOROOT: %v", err)
		}
		build.Default.GOROOT = strings.TrimSpace(string(out))
	}
	imp := importer.ForCompiler(token.NewFileSet(), "source", nil)
	var public []string
	for _, tl := range topLevel {
		if !tl.public {
			doc, err := os.ReadFile("../../" + tl.pkg + "/doc.go")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(strings.Fields(string(doc)), " "), "for this module's binaries only") {
				t.Errorf("package %s is not public API (%s), and its doc.go does not say it is for this module's binaries only", tl.pkg, tl.why)
			}
			continue
		}
		public = append(public, tl.pkg)
		pkg, err := imp.Import(module + "/" + tl.pkg)
		if err != nil {
			t.Fatalf("type-check %s: %v", tl.pkg, err)
		}
		for _, problem := range internalTypes(pkg) {
			t.Errorf("%s: %s, which another module cannot name", tl.pkg, problem)
		}
	}

	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`The public Go API is ([^.]*)\.`).FindSubmatch(readme)
	if m == nil {
		t.Fatal(`README.md has no sentence "The public Go API is ...."`)
	}
	var named []string
	for _, n := range regexp.MustCompile("`([a-z/]+)`").FindAllSubmatch(m[1], -1) {
		named = append(named, string(n[1]))
	}
	slices.Sort(named)
	slices.Sort(public)
	if !slices.Equal(named, public) {
		t.Errorf("README.md's public Go API names %v; the public packages are %v", named, public)
	}
}

// internalTypes lists what pkg exports that names a type of the module's
// internal packages.
func internalTypes(pkg *types.Package) []string {
	var problems []string
	check := func(what string, typ types.Type) {
		if n := findInternal(typ, map[types.Type]bool{}); n != "" {
			problems = append(problems, what+" uses "+n)
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		tn, ok := obj.(*types.TypeName)
		if !ok {
			check(name, obj.Type())
			continue
		}
		switch u := tn.Type().Underlying().(type) {
		case *types.Struct:
			for f := range u.Fields() {
				if f.Exported() {
					check(name+"."+f.Name(), f.Type())
				}
			}
		case *types.Interface:
			for m := range u.Methods() {
				if m.Exported() {
					check(name+"."+m.Name(), m.Type())
				}
			}
		default:
			check(name, u)
		}
		for _, recv := range []types.Type{tn.Type(), types.NewPointer(tn.Type())} {
			ms := types.NewMethodSet(recv)
			for sel := range ms.Methods() {
				if sel.Obj().Exported() {
					check(name+"."+sel.Obj().Name(), sel.Obj().Type())
				}
			}
		}
	}
	return problems
}

// findInternal returns the first named type in typ (walking into
// pointers, slices, maps, channels, signatures and the exported fields of
// struct literals) that belongs to one of the module's internal packages.
func findInternal(typ types.Type, seen map[types.Type]bool) string {
	if seen[typ] {
		return ""
	}
	seen[typ] = true
	switch t := typ.(type) {
	case *types.Named:
		if p := t.Obj().Pkg(); p != nil && strings.HasPrefix(p.Path(), module+"/internal/") {
			return p.Path() + "." + t.Obj().Name()
		}
		for a := range t.TypeArgs().Types() {
			if n := findInternal(a, seen); n != "" {
				return n
			}
		}
	case *types.Alias:
		if p := t.Obj().Pkg(); p != nil && strings.HasPrefix(p.Path(), module+"/internal/") {
			return p.Path() + "." + t.Obj().Name()
		}
		return findInternal(types.Unalias(t), seen)
	case *types.Pointer:
		return findInternal(t.Elem(), seen)
	case *types.Slice:
		return findInternal(t.Elem(), seen)
	case *types.Array:
		return findInternal(t.Elem(), seen)
	case *types.Chan:
		return findInternal(t.Elem(), seen)
	case *types.Map:
		if n := findInternal(t.Key(), seen); n != "" {
			return n
		}
		return findInternal(t.Elem(), seen)
	case *types.Signature:
		for _, tuple := range []*types.Tuple{t.Params(), t.Results()} {
			for v := range tuple.Variables() {
				if n := findInternal(v.Type(), seen); n != "" {
					return n
				}
			}
		}
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() {
				if n := findInternal(f.Type(), seen); n != "" {
					return n
				}
			}
		}
	case *types.Interface:
		for m := range t.Methods() {
			if n := findInternal(m.Type(), seen); n != "" {
				return n
			}
		}
	}
	return ""
}
