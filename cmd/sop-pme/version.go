package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// buildInfo is what sop-pme version says: the build as the Go toolchain
// recorded it (runtime/debug.ReadBuildInfo), and the optional parts it has.
type buildInfo struct {
	Version string `json:"version"`
	// Revision is the VCS revision the command was built from ("" when
	// the build recorded none: -buildvcs=false, or not from a checkout),
	// with its time and whether the work tree had changes.
	Revision  string `json:"revision"`
	Time      string `json:"revision_time,omitempty"`
	Modified  bool   `json:"modified"`
	Go        string `json:"go"`
	Platform  string `json:"platform"`
	Tags      string `json:"tags"`
	CGO       bool   `json:"cgo"`
	SQL       bool   `json:"sql"`
	Iroh      bool   `json:"iroh"`
	Library   string `json:"library"`
	LibraryAt string `json:"library_replaced_by,omitempty"`
}

// readBuildInfo reads the build information the binary carries.
func readBuildInfo() buildInfo {
	b := buildInfo{Version: "unknown", SQL: sqlBuilt, Iroh: irohBuilt}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.Version, b.Go = bi.Main.Version, bi.GoVersion
	var goos, goarch string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		case "-tags":
			b.Tags = s.Value
		case "CGO_ENABLED":
			b.CGO = s.Value == "1"
		case "GOOS":
			goos = s.Value
		case "GOARCH":
			goarch = s.Value
		}
	}
	b.Platform = goos + "/" + goarch
	for _, d := range bi.Deps {
		if d.Path == "github.com/sovm/sop-pme" {
			b.Library = d.Version
			if d.Replace != nil {
				b.LibraryAt = d.Replace.Path
				if v := d.Replace.Version; v != "" && v != "(devel)" {
					b.LibraryAt += "@" + v
				}
			}
		}
	}
	return b
}

// write prints the build information for people.
func (b buildInfo) write(w io.Writer) {
	fmt.Fprintf(w, "sop-pme %s\n", b.Version)
	rev := "unknown (the build recorded none: built with -buildvcs=false, or not from a git checkout)"
	if b.Revision != "" {
		rev = b.Revision
		var more []string
		if b.Time != "" {
			more = append(more, b.Time)
		}
		if b.Modified {
			more = append(more, "with uncommitted changes")
		}
		if len(more) > 0 {
			rev += " (" + strings.Join(more, ", ") + ")"
		}
	}
	fmt.Fprintf(w, "  revision  %s\n", rev)
	fmt.Fprintf(w, "  go        %s %s\n", b.Go, b.Platform)
	lib := b.Library
	if b.LibraryAt != "" {
		lib = "from " + b.LibraryAt
	}
	fmt.Fprintf(w, "  library   github.com/sovm/sop-pme %s\n", lib)
	tags := b.Tags
	if tags == "" {
		tags = "none"
	}
	fmt.Fprintf(w, "  tags      %s (cgo %s)\n", tags, map[bool]string{true: "on", false: "off"}[b.CGO])
	if b.SQL {
		fmt.Fprintln(w, "  sql       yes (DuckDB)")
	} else {
		fmt.Fprintf(w, "  sql       no (build with: %s)\n", sqlInstallHint)
	}
	if b.Iroh {
		fmt.Fprintln(w, "  iroh      yes (serve, fetch, iroh:// stores)")
	} else {
		fmt.Fprintf(w, "  iroh      no (build with: %s)\n", irohInstallHint)
	}
}

// versionCmd is sop-pme version; sop-pme --version prints the same.
func (a *app) versionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, VCS revision and Go version, and whether SQL and iroh are built in",
		Long: `Version prints what the Go toolchain recorded in the binary (runtime/debug
build information): the module version, the VCS revision it was built from
(and whether the work tree had changes), the Go version and platform, the
build tags, and whether this build has the sql command (DuckDB, -tags duckdb)
and iroh (serve, fetch, iroh:// stores; -tags iroh). sop-pme --version prints the same.`,
		Args: exactArgs(0, "no argument"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			b := readBuildInfo()
			if asJSON {
				return printJSON(a.stdout, b)
			}
			b.write(a.stdout)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the build information as JSON")
	return cmd
}
