package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestNoraceList: the Makefile's NORACE_TESTS and NORACE_PKGS name exactly
// the tests that shrink or skip themselves under -race (a call to
// testenv.SkipUnderRace or hostileSize anywhere in the test's body), and
// their packages, so that each runs at full size in make norace and none
// is forgotten there. A new such test is found here; add it to the list.
func TestNoraceList(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	testsRe := regexp.MustCompile(`(?m)^NORACE_TESTS\s*:=\s*\^\(([^)]*)\)\$\$$`)
	pkgsRe := regexp.MustCompile(`(?m)^NORACE_PKGS\s*:=\s*(.*)$`)
	mt, mp := testsRe.FindSubmatch(mk), pkgsRe.FindSubmatch(mk)
	if mt == nil || mp == nil {
		t.Fatal("the Makefile has no NORACE_TESTS := ^(A|B)$$ or NORACE_PKGS := line")
	}
	listed := strings.Split(string(mt[1]), "|")
	slices.Sort(listed)
	listedPkgs := strings.Fields(string(mp[1]))
	slices.Sort(listedPkgs)

	var found, pkgs []string
	fset := token.NewFileSet()
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil || !strings.HasPrefix(fn.Name.Name, "Test") || !shrinksUnderRace(fn.Body) {
				continue
			}
			found = append(found, fn.Name.Name)
			if pkg := "./" + filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, "../"))); !slices.Contains(pkgs, pkg) {
				pkgs = append(pkgs, pkg)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(found)
	slices.Sort(pkgs)
	if len(found) == 0 {
		t.Fatal("found no test that shrinks under -race: the search is broken")
	}
	if !slices.Equal(found, listed) {
		t.Errorf("NORACE_TESTS lists %q; the tests that skip or shrink under -race are %q", listed, found)
	}
	if !slices.Equal(pkgs, listedPkgs) {
		t.Errorf("NORACE_PKGS lists %q; those tests are in %q", listedPkgs, pkgs)
	}
}

// shrinksUnderRace reports whether body calls testenv.SkipUnderRace or
// hostileSize.
func shrinksUnderRace(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return !found
		}
		switch f := call.Fun.(type) {
		case *ast.SelectorExpr:
			if x, ok := f.X.(*ast.Ident); ok && x.Name == "testenv" && f.Sel.Name == "SkipUnderRace" {
				found = true
			}
		case *ast.Ident:
			if f.Name == "hostileSize" {
				found = true
			}
		}
		return !found
	})
	return found
}
