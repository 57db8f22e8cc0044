package events

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// Every event of the catalogue has a CamelCase reason that keeps one type, a template whose
// verbs Record fills without a formatting error, and a doc comment.
func TestCatalogue(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "events.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	reasonType := map[string]string{}
	verb := regexp.MustCompile(`%[-+# 0]*[0-9]*[a-zA-Z]`)
	camel := regexp.MustCompile(`^[A-Z][A-Za-z]+$`)
	n := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			call, ok := vs.Values[0].(*ast.CallExpr)
			if !ok {
				continue
			}
			name := vs.Names[0].Name
			typ := map[string]string{"normal": corev1.EventTypeNormal, "warning": corev1.EventTypeWarning}[call.Fun.(*ast.Ident).Name]
			reason, _ := strconv.Unquote(call.Args[0].(*ast.BasicLit).Value)
			msg, _ := strconv.Unquote(call.Args[1].(*ast.BasicLit).Value)
			n++
			if vs.Doc == nil || !strings.HasPrefix(vs.Doc.Text(), name+":") {
				t.Errorf("%s has no doc comment starting with its name", name)
			}
			if !camel.MatchString(reason) {
				t.Errorf("%s: reason %q is not CamelCase", name, reason)
			}
			if prev, ok := reasonType[reason]; ok && prev != typ {
				t.Errorf("reason %s is both %s and %s", reason, prev, typ)
			}
			reasonType[reason] = typ
			var args []any
			for _, v := range verb.FindAllString(msg, -1) {
				if strings.HasSuffix(v, "d") {
					args = append(args, 1)
				} else {
					args = append(args, "x")
				}
			}
			rec := record.NewFakeRecorder(1)
			Event{typ, reason, msg}.Record(rec, &corev1.Pod{}, args...)
			if got := <-rec.Events; strings.Contains(got, "%!") || !strings.HasPrefix(got, typ+" "+reason+" ") {
				t.Errorf("%s: recorded %q", name, got)
			}
		}
	}
	if n < 40 {
		t.Fatalf("found %d events in events.go; the parser missed some", n)
	}
}
