// Generates the golden outputs of test/workflows/gotemplate/cases.json with
// real Go text/template + sprig (Debian: golang-go, golang-github-masterminds-sprig-dev).
// Run through ../gotemplate-golden.sh; the output is committed, so tests need no Go.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/Masterminds/sprig/v3"
)

type testCase struct {
	Name     string      `json:"name"`
	Template string      `json:"template"`
	Data     interface{} `json:"data"`
}

type golden struct {
	Name   string      `json:"name"`
	Output *string     `json:"output,omitempty"`
	Typed  interface{} `json:"typed,omitempty"`
	Error  string      `json:"error,omitempty"`
	Phase  string      `json:"phase,omitempty"`
}

func newTemplate(src string, funcs template.FuncMap) (*template.Template, error) {
	return template.New("template").Funcs(funcs).Option("missingkey=error").Parse(src)
}

func single(t *template.Template) *parse.PipeNode {
	if t.Tree == nil || t.Root == nil || len(t.Root.Nodes) != 1 {
		return nil
	}
	a, ok := t.Root.Nodes[0].(*parse.ActionNode)
	if !ok || a.Pipe == nil || len(a.Pipe.Decl) > 0 {
		return nil
	}
	return a.Pipe
}

func run(c testCase) (g golden) {
	g.Name = c.Name
	defer func() {
		if r := recover(); r != nil {
			g.Output = nil
			g.Error = fmt.Sprint(r)
			g.Phase = "exec"
		}
	}()
	t, err := newTemplate(c.Template, sprig.TxtFuncMap())
	if err != nil {
		g.Error, g.Phase = err.Error(), "parse"
		return
	}
	var b strings.Builder
	if err := t.Execute(&b, c.Data); err != nil {
		g.Error, g.Phase = err.Error(), "exec"
		return
	}
	out := b.String()
	g.Output = &out
	if pipe := single(t); pipe != nil {
		var captured interface{}
		funcs := sprig.TxtFuncMap()
		funcs["__capture"] = func(v interface{}) string { captured = v; return "" }
		ct, err := newTemplate("{{ "+pipe.String()+" | __capture }}", funcs)
		if err == nil && ct.Execute(io.Discard, c.Data) == nil {
			if captured == nil {
				g.Typed = json.RawMessage("null")
			} else {
				g.Typed = captured
			}
		}
	}
	return
}

func main() {
	var cases []testCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		panic(err)
	}
	out := make([]golden, 0, len(cases))
	for _, c := range cases {
		out = append(out, run(c))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		panic(err)
	}
}
