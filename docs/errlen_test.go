package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// maxErrorLen bounds the text an error's format string or message spells
// out (errors.New, fmt.Errorf, hint.New): an error says what went wrong
// shortly, and the advice goes on a line of its own (package hint).
const maxErrorLen = 120

// longErrors are the files still allowed errors over maxErrorLen, each
// with why. An entry with none left fails the test, so that it is removed.
var longErrors = map[string]string{
	// The errors below reach an agent or an approver as one message of the
	// protocol (a response's message, a decision's result, an MCP tool
	// error, the audit log), which has no place for a hint yet.
	"daemon/plan.go":             "a refusal the agent reads in its response",
	"daemon/twoperson.go":        "a decision's result the approver's console shows",
	"internal/mcpserver/args.go": "the MCP tool's errors, which the agent's model reads as one text",
}

// TestErrorsShort: no error message or format string outside tests spells
// out more than maxErrorLen characters, except in the files longErrors
// names: longer advice is a hint (package hint), printed on its own line.
func TestErrorsShort(t *testing.T) {
	fset := token.NewFileSet()
	left := map[string]bool{}
	for _, src := range goSources(t) {
		path, rel := src.path, src.rel
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 || !isErrorCall(call.Fun) {
				return true
			}
			msg := literal(call.Args[0])
			if len(msg) <= maxErrorLen {
				return true
			}
			if _, ok := longErrors[rel]; ok {
				left[rel] = true
				return true
			}
			t.Errorf("%s: an error of %d characters, over %d: say what went wrong shortly, and give the advice as a hint (hint.Wrap): %.80q...",
				fset.Position(call.Pos()), len(msg), maxErrorLen, msg)
			return true
		})
	}
	for f, why := range longErrors {
		if !left[f] {
			t.Errorf("%s has no error over %d characters left: remove it from longErrors (%s)", f, maxErrorLen, why)
		}
	}
}

// isErrorCall reports whether fun is errors.New, fmt.Errorf or hint.New.
func isErrorCall(fun ast.Expr) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	switch x.Name + "." + sel.Sel.Name {
	case "errors.New", "fmt.Errorf", "hint.New":
		return true
	}
	return false
}

// literal returns the text e spells out: a string literal, or literals
// joined with +; the parts that are not literals count as nothing.
func literal(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, _ := strconv.Unquote(e.Value)
			return s
		}
	case *ast.BinaryExpr:
		return literal(e.X) + literal(e.Y)
	case *ast.ParenExpr:
		return literal(e.X)
	}
	return ""
}
