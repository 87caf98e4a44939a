package pme_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// specAPI is what package pme exports: what a reader of SOP-PME-1
// Sections 11.1–11.4 expects (the DEK, modules, FileCryptoMetaData, the
// trailer, the footer as a reader sees it, the format's limits and
// errors). The writer's machinery (sealing plaintext Parquet, editing a
// footer) is internal/seal's; a name added here is a decision about the
// spec's API, not a convenience.
var specAPI = []string{
	// The DEK and modules (11.2, 11.3).
	"DEK", "DEK.Bytes", "DEK.Equal", "DEK.Format", "DEK.GoString", "DEK.IsZero", "DEK.Len",
	"DEK.MarshalJSON", "DEK.MarshalText", "DEK.Open", "DEK.OpenModules", "DEK.Seal", "DEK.Sealed",
	"DEK.String", "DEKFromBytes", "NewDEK", "DEKSize", "MaxModules",
	"LenSize", "NonceSize", "TagSize", "Overhead", "MaxPlaintext", "SplitModule",
	// FileCryptoMetaData and the trailer (11.4, 11.5).
	"CryptoMetaData", "ParseFileCryptoMetaData", "AppendFileCryptoMetaData", "KeyMetadataSize",
	"Tail", "ParseFooterRegion", "ParseTrailer", "AppendTrailer", "TrailerSize",
	// The footer as a reader sees it.
	"Footer", "Footer.Append", "Footer.ColumnChunks", "Footer.Fields", "Footer.KeyValues",
	"Footer.Len", "Footer.StripForReading", "OpenFooter", "ParseFooter",
	"Field", "KeyValue", "Span", "Span.End", "ArrowSchemaKey",
	// Limits.
	"DefaultMaxFooterRegion", "MaxFooterRegion", "MaxElements", "MaxKeyValues", "MaxPathBytes",
	"MaxSchemaDepth", "MaxPageSize", "MaxRowGroups", "MaxPadValue",
	// Errors.
	"ErrAuth", "ErrFormat", "ErrKeySize", "ErrModule", "ErrNoKey", "ErrNoMarshal", "ErrNonceLimit",
	"ErrPlaintextFooter", "ErrTooLarge", "ErrUnsupported",
}

// exported returns the exported names of the package in dir (which has no
// build-tagged files), methods as Type.Method, tests left out.
func exported(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []string
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			out = append(out, declared(d)...)
		}
	}
	slices.Sort(out)
	return out
}

// declared returns the exported names d declares.
func declared(d ast.Decl) []string {
	var out []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			return nil
		}
		if d.Recv == nil {
			return []string{d.Name.Name}
		}
		typ := d.Recv.List[0].Type
		if s, ok := typ.(*ast.StarExpr); ok {
			typ = s.X
		}
		if id, ok := typ.(*ast.Ident); ok && id.IsExported() {
			out = append(out, id.Name+"."+d.Name.Name)
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					out = append(out, s.Name.Name)
				}
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						out = append(out, n.Name)
					}
				}
			}
		}
	}
	return out
}

// TestSpecAPI: pme exports specAPI, no more and no less.
func TestSpecAPI(t *testing.T) {
	t.Parallel()
	got := exported(t, ".")
	want := slices.Sorted(slices.Values(specAPI))
	for _, n := range got {
		if _, found := slices.BinarySearch(want, n); !found {
			t.Errorf("pme exports %s, which is not the spec's API (specAPI)", n)
		}
	}
	for _, n := range want {
		if _, found := slices.BinarySearch(got, n); !found {
			t.Errorf("pme does not export %s", n)
		}
	}
	if len(got) < 40 {
		t.Fatalf("found %d exported names: %v", len(got), got)
	}
}
