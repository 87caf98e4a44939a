package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// installHint is how to install the command: from a clone, since the
// module replaces the library with the clone's (go install …@latest cannot
// work until the library is published).
const installHint = "go install -C cmd/sop-pme . (from a clone of the repository)"

// app is one run of the command: its streams and what its flags say.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// stderrTTY and stdinTTY say whether stderr and stdin are terminals:
	// progress bars are drawn only on a terminal, and rm asks for
	// confirmation only on one.
	stderrTTY, stdinTTY, stdoutTTY bool
	quiet                          bool
}

func newApp() *app {
	return &app{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		stderrTTY: term.IsTerminal(int(os.Stderr.Fd())),
		stdinTTY:  term.IsTerminal(int(os.Stdin.Fd())),
		stdoutTTY: term.IsTerminal(int(os.Stdout.Fd())),
	}
}

// root builds the command tree.
func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "sop-pme",
		Short: "Bring tables into SOP-PME-1 objects, get them out, see what storage sees",
		Long: `sop-pme writes tables into SOP-PME-1 objects (encrypted Parquet, padded to a
Padmé size, named by the BLAKE3 hash of their bytes, their storage_id) in a
store, a directory or an S3 bucket (--store s3://bucket/prefix?endpoint=URL&
region=REGION, credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or
the AWS configuration), and reads them back only through byte ranges verified against
that storage_id.

An ID, wherever a command takes one, is a storage_id (64 hex digits) or a
unique prefix of one, of at least 8 hex digits. A TABLE, where a command
takes one (import --table, ls, schema, export, verify, rm, table, and a view
in sql), is a table's name: objects in sequence under one schema, kept in a
catalog encrypted in the keyring. Under --json, an error is one JSON object
on stderr, {"error": "...", "code": N}.

Install: ` + installHint,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(a.stderr)
			cmd.Help()
			return usagef("no command given")
		},
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetIn(a.stdin)
	root.PersistentFlags().BoolVarP(&a.quiet, "quiet", "q", false, "no progress bar, no summary line")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if c == root {
			return usagef("%v (see sop-pme -h)", err)
		}
		return usagef("%s: %v (see %s -h)", subPath(c), err, c.CommandPath())
	})
	root.AddCommand(a.importCmd(), a.exportCmd(), a.lsCmd(), a.schemaCmd(), a.inspectCmd(),
		a.verifyCmd(), a.checkCmd(), a.rmCmd(), a.tableCmd(), a.keysCmd(), a.demoCmd(), a.migrateCmd(), a.sqlCmd(),
		a.serveCmd(), a.fetchCmd(), a.versionCmd())
	// --version prints what sop-pme version prints.
	var version strings.Builder
	readBuildInfo().write(&version)
	root.Version = version.String()
	root.SetVersionTemplate("{{.Version}}")
	tmpl := root.UsageTemplate() + "\n" + exitCodesSummary + "\n"
	root.SetUsageTemplate(tmpl)
	for _, c := range root.Commands() {
		c.SilenceErrors, c.SilenceUsage = true, true
	}
	return root
}

// run runs the command line args and returns the exit code, having printed
// any error as one line on stderr.
//
// Under --json, the error is a JSON object on one line instead:
// {"error": "the line", "code": the exit code}.
func (a *app) run(ctx context.Context, args []string) int {
	defer runAtExit()
	root := a.root()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ce *cmdError
	var se *subjectError
	var ue *usageError
	if !errors.As(err, &ce) && !errors.As(err, &se) && !errors.As(err, &ue) && !isRunError(err) {
		// cobra's own errors: an unknown command, a wrong number of
		// arguments.
		err = usagef("%s (see sop-pme -h)", err)
	}
	code, msg := exitCode(unwrapRun(err))
	if wantsJSON(cmd, args) {
		msg = redactSecrets(msg)
		line, jerr := jsonLine(jsonError{Error: msg, Code: code})
		if jerr == nil {
			fmt.Fprintln(a.stderr, line)
			return code
		}
	}
	msg = redactSecrets(msg)
	fmt.Fprintln(a.stderr, "sop-pme: "+msg)
	return code
}

// jsonError is an error under --json: its one line, without the
// "sop-pme: " prefix, and the exit code.
type jsonError struct {
	Error string `json:"error"`
	Code  int    `json:"code"`
}

// wantsJSON reports whether the command line asks for JSON: --json parsed
// as true, or, when the command line did not parse, --json among its
// arguments (before any "--").
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		if f := cmd.Flags().Lookup("json"); f != nil && f.Changed {
			return f.Value.String() == "true"
		}
	}
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "--json=true", "--json=1":
			return true
		}
	}
	return false
}

// runError marks the errors a command's RunE returned, as opposed to
// cobra's errors about the command line.
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

func isRunError(err error) bool {
	var re *runError
	return errors.As(err, &re)
}

func unwrapRun(err error) error {
	var re *runError
	if errors.As(err, &re) {
		return re.err
	}
	return err
}

// runE wraps a command's function so that its errors are told apart from
// cobra's.
func runE(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := fn(cmd, args); err != nil {
			return &runError{err}
		}
		return nil
	}
}

// subPath is a command's path without the root's name ("keys rotate"):
// an error line has the prefix "sop-pme: " once.
func subPath(c *cobra.Command) string {
	if !c.HasParent() {
		return c.Name()
	}
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
}

// exactArgs returns a cobra argument check that n arguments, what, are
// given, which reports a usage error otherwise.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %s (see %s -h)", subPath(cmd), what, cmd.CommandPath())
		}
		return nil
	}
}

// printJSON writes v as indented JSON on w.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// jsonLine returns v as JSON on one line.
func jsonLine(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
