// Command sop-pme brings tables into SOP-PME-1 objects and gets them out
// again, lists and deletes objects, shows what untrusted storage sees of
// them, verifies them and checks their conformance, and rotates the
// key-encryption key. Run sop-pme -h for the commands, and sop-pme COMMAND
// -h for each one's flags; the exit codes are in errors.go.
//
// Each command lives in a file of its own (import.go, export.go, ...); the
// commands that read stored objects (check, schema, inspect, verify, export)
// open them with one helper, objects.go. Key custody is in keys.go: the KEK,
// or a KMS key through gocloud.dev/secrets, never lives in the store
// directory, which is the untrusted side, and the commands that only read
// never create a key, a keyring or a directory.
//
// The sql command (sqlcmd.go) runs DuckDB, a cgo dependency, only in a
// build with the duckdb tag (sql.go); without the tag (sql_off.go) the
// build is pure Go, and sql says how to get one with it. Likewise serve,
// fetch and iroh:// stores (store_iroh.go, serve.go) need the iroh tag and
// the Rust library of package blobs/iroh; without it (store_iroh_off.go)
// they say this sop-pme was built without iroh.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := newApp().run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
